"""Who invoked each OOM kill of make demo's container scenarios and daemon
runs, and from where: RUN_DIR/kills.json (container-images/oom-kills) for
each run under the results directories, one row per run and a total.  A retry limit can fail the allocation
of a system call (and of a uaccess fault inside one); a page fault's it
never fails: the fault handler cannot report ENOMEM.  The share of kills
invoked by system calls is what the policy can act on.
"""

import collections
import json
import os

import tables

COLUMNS = ["run", "OOM kills", "system call", "fault in a system call",
           "page fault", "other", "invoked by (kills)"]
VIAS = COLUMNS[2:6]


def load_kills(path):
    """The OOM kills of a kills.json: its oom:mark_victim events whose
    stack goes through __oom_kill_process.  The others marked a task that
    was already exiting (the OOM killer's shortcut in out_of_memory() and
    oom_kill_process()): nobody was killed, and memory.events' oom_kill
    does not count them either."""
    with open(path, encoding="utf-8") as f:
        marks = json.load(f)
    return [k for k in marks if "__oom_kill_process" in k.get("stack", [])]


def invokers(kills):
    """The invoking tasks by name, most kills first."""
    count = collections.Counter(k["invoker"] for k in kills)
    return ", ".join(f"{name} ({n})" for name, n in count.most_common(4))


def share(n, total):
    return f"{n} ({100 * n / total:.0f}%)" if total else "0"


def render(results_dirs, report_path, verdict):
    """Print and write (@report_path, Markdown) the table; judge that every
    run under @results_dirs has a complete record of its kills."""
    runs = [(top, d) for top in results_dirs if os.path.isdir(top)
            for d in sorted(os.listdir(top))
            if os.path.isdir(os.path.join(top, d))]
    rows, every = [], []
    for top, run in runs:
        path = os.path.join(top, run, "kills.json")
        if not os.path.exists(path):
            verdict.fail(f"kills: {run}: no kills.json (oom:mark_victim "
                         "not traced, or the record was incomplete)")
            continue
        kills = load_kills(path)
        every += kills
        rows.append([run, str(len(kills))] +
                    [str(sum(k["via"] == via for k in kills)) for via in VIAS]
                    + [invokers(kills) or "-"])
    verdict.ok(f"kills: who invoked each OOM kill, in {len(rows)} of "
               f"{len(runs)} runs")
    rows.append(["all", str(len(every))] +
                [share(sum(k["via"] == via for k in every), len(every))
                 for via in VIAS] + [invokers(every) or "-"])
    heading = "Who invoked the OOM kills of the container scenarios and the daemons"
    text = [heading, ""] + tables.text(COLUMNS, rows,
                                       left=(0, len(COLUMNS) - 1)) + [""]
    with open(report_path, "w", encoding="utf-8") as f:
        f.write("\n".join([heading + ":", ""] +
                          tables.markdown(COLUMNS, rows) + [""]))
    return text
