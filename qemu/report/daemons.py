"""Debian's daemons under each policy (catalogue.json's daemons), from the
daemon.json that container-images/run-daemons wrote in the guest for each
run: RESULTS_DIR/DAEMON-POLICY/daemon.json.  One table, a row per daemon
and policy: the client's throughput and errors, what the container's
memory.events counted, what the daemon's log said (allocation failures,
crash recoveries), how often its supervisor restarted it, the longest
time the probe found it not serving,
whether it served once the pressure was gone, and whether the data
written before the pressure was whole afterwards.

And the table an operator chooses a daemon's policy from
(choosing.md): a row per daemon, its figures at each policy side by side,
the OOM kills its own system calls invoked (RUN_DIR/kills.json, the only
ones a limit can turn into failures), and what it did with an ENOMEM,
read from its run at 0: its log and its clients' view.
"""

import json
import os

import attribution
import tables

COLUMNS = ["daemon", "policy", "throughput", "client errors", "timeouts",
           "oom_kill", "alloc_retry_fail", "alloc failures in its log",
           "crash recoveries", "restarts", "longest outage s", "serving after",
           "data whole", "its log's first word on it"]


def data_cell(d):
    """Whether the data was whole: checked against the server, so not
    known ("-") once it stopped serving."""
    if not d["serving_after"]:
        return "-"
    return {True: "yes", False: "no"}.get((d["data"] or {}).get("data_ok"),
                                          "-")


def cell(value):
    return "-" if value is None else str(value)


def row(d):
    load, log = d["load"] or {}, d["log"] or {}
    tput = load.get("throughput")
    return [d["daemon"], d["policy"],
            "-" if tput is None else f'{tput:.1f} {load["unit"]}',
            cell(load.get("errors")), cell(load.get("timeouts")),
            str(d["memory_events"]["oom_kill"]),
            str(d["memory_events"]["alloc_retry_fail"]),
            cell(log.get("alloc_failure_lines")),
            cell(log.get("crash_recoveries")),
            str(d["restarts"]),
            cell(d["longest_outage_s"]),
            "yes" if d["serving_after"] else "no",
            data_cell(d),
            (log.get("first_line") or "-")[:80]]


# The hog's tasks: every other invoker in a daemon's container is the
# daemon's own.
HOG = ("hog", "hog-filler")


def what_it_did(d):
    """What the daemon did with the allocations the limit failed, from its
    run's record: its log, its clients' errors, whether it kept serving."""
    load, log = d["load"] or {}, d["log"] or {}
    errors, lines = load.get("errors") or 0, log.get("alloc_failure_lines") or 0
    if not d["served"]:
        return "never served: the run failed before the pressure"
    if not d["memory_events"]["alloc_retry_fail"]:
        return "the limit failed none of its allocations"
    if not d["serving_after"]:
        return ("PANICked, and did not serve again" if log.get("panics")
                else "stopped serving")
    if d["restarts"]:
        return ("PANICked and exited; restarted by its supervisor, served again"
                if log.get("panics") else
                "exited; restarted by its supervisor, served again")
    if log.get("panics"):
        return "PANICked, then served again"
    if log.get("crash_recoveries"):
        return "restarted its processes, then served again"
    if errors and lines:
        return "failed requests, logged it and went on"
    if errors:
        return "failed requests without a log line"
    if lines:
        return "logged it and went on; no client saw an error"
    return "no sign in its log or its clients: retried or did without"


def quoted(line):
    """A log line as a Markdown table's code cell."""
    return "`" + line.replace("`", "'").replace("|", "\\|") + "`"


def own_syscall_kills(run_dir):
    """OOM kills the daemon's own system calls invoked, or None untraced."""
    path = os.path.join(run_dir, "kills.json")
    if not os.path.exists(path):
        return None
    kills = attribution.load_kills(path)
    return sum(k["invoker"] not in HOG and
               k["via"] in ("system call", "fault in a system call")
               for k in kills)


def choosing(catalogue, results_dir, report_path):
    """Print and write (@report_path, Markdown) the table to choose a
    daemon's policy from: its figures at each of the catalogue's policies
    side by side, and what it did with ENOMEM at 0."""
    spec = catalogue["daemons"]
    policies = spec["policies"]
    each = " / ".join(policies)
    columns = ["daemon", f"client errors ({each})",
               f"kills its system calls invoked ({each})",
               f"allocations the limit failed ({each})",
               f"restarts ({each})", "longest outage s (worst)", f"data whole ({each})",
               "what it did with ENOMEM (at 0)", "the log line that shows it"]
    rows = []
    for daemon in spec["list"]:
        runs = {}
        for policy in policies:
            run_dir = os.path.join(results_dir, f"{daemon}-{policy}")
            path = os.path.join(run_dir, "daemon.json")
            if os.path.exists(path):
                with open(path, encoding="utf-8") as f:
                    runs[policy] = json.load(f), own_syscall_kills(run_dir)
        if set(runs) != set(policies):
            continue
        at0 = runs.get("0", (None, None))[0]
        rows.append([
            daemon,
            " / ".join(cell((d["load"] or {}).get("errors"))
                       for d, _ in runs.values()),
            " / ".join(cell(k) for _, k in runs.values()),
            " / ".join(str(d["memory_events"]["alloc_retry_fail"])
                       for d, _ in runs.values()),
            " / ".join(str(d["restarts"]) for d, _ in runs.values()),
            cell(max((d["longest_outage_s"] or 0) for d, _ in runs.values())),
            " / ".join(data_cell(d) for d, _ in runs.values()),
            what_it_did(at0) if at0 else "-",
            quoted(at0["log"]["first_line"][:100])
            if at0 and at0["log"].get("first_line") else "-"])
    heading = (f"Which policy for which daemon: each under "
               f"memory.max={spec['memory_max']} with a hog inside, "
               f"{spec['seconds']} s of load per policy")
    with open(report_path, "w", encoding="utf-8") as f:
        f.write("\n".join([heading + ":", ""] +
                          tables.markdown(columns, rows) + [""]))
    return [heading, ""] + tables.text(columns, rows, left=(0, 7, 8)) + [""]


def render(catalogue, results_dir, report_path, verdict, policies="policies"):
    """Print and write (@report_path, Markdown) the table; judge that each
    daemon ran at each policy of the catalogue's @policies."""
    spec = catalogue["daemons"]
    rows = []
    for daemon in spec["list"]:
        for policy in spec[policies]:
            path = os.path.join(results_dir, f"{daemon}-{policy}",
                                "daemon.json")
            if not os.path.exists(path):
                verdict.fail(f"daemons: no record of {daemon} at {policy}")
                continue
            with open(path, encoding="utf-8") as f:
                rows.append(row(json.load(f)))
    verdict.ok(f"daemons: {len(rows)} of "
               f"{len(spec['list']) * len(spec[policies])} runs recorded")
    heading = (f"Debian's daemons, each under memory.max={spec['memory_max']} "
               f"with a hog inside, {spec['seconds']} s of its client's load")
    text = [heading, ""] + tables.text(COLUMNS, rows,
                                       left=(0, 1, len(COLUMNS) - 1)) + [""]
    with open(report_path, "w", encoding="utf-8") as f:
        f.write("\n".join([heading + ":", ""] +
                          tables.markdown(COLUMNS, rows) + [""]))
    return text
