"""The stress-ng matrix of make demo (catalogue.json's stress_ng), from
what container-images/run-scenarios and stress-run wrote in the guest.

RESULTS_DIR holds stress-ng-PRESSURE-STRESSOR/CONTAINER/{container.json,
results/result.json} and stress-ng-PRESSURE-STRESSOR/kills.json.  One
table per pressure, a row per stressor and policy: what stress-ng did
(bogo ops/s, how it ended, the lines of its log that report a failure,
an allocation failure, an instance OOM-killed and restarted), what the
container's memory.events counted, and the OOM kills of the container's
tasks (their uid is the container's) by what invoked them.
"""

import json
import os

import tables
from attribution import VIAS

COLUMNS = ["stressor", "policy", "bogo ops/s", "fail lines",
           "alloc failure lines", "OOM restarts", "alloc_retry_fail",
           "oom_kill", "killed: syscall", "fault in syscall", "page fault",
           "other", "outcome"]


def load(path):
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def run_name(pressure, stressor):
    return f"stress-ng-{pressure}-{stressor}"


def outcome(record, result):
    """stress-run's word for how stress-ng ended, or, if stress-run itself
    did not get that far, the container's and its first line of output."""
    if result and result["outcome"] not in ("waiting", "running"):
        return result["outcome"]
    first = record["first_output"]
    return f'{record["outcome"]}: {first[:60]}' if first else \
        record["outcome"]


def row(stressor, record, result, kills):
    """A container's row; @kills: the run's kills.json, None without."""
    ev = record["memory_events"]
    ran = result or {}
    ops = ran.get("bogo_ops_per_s")
    row = [stressor, record["policy"],
           "-" if ops is None else f"{ops:.1f}",
           str(ran.get("fail_lines", "-")),
           str(ran.get("alloc_fail_lines", "-")),
           str(ran.get("oom_restarts", "-")),
           str(ev["alloc_retry_fail"]), str(ev["oom_kill"])]
    if kills is None:
        row += ["-"] * len(VIAS)
    else:
        mine = [k for k in kills if k["victim_uid"] == record["uid"]]
        row += [str(sum(k["via"] == via for k in mine)) for via in VIAS]
    return row + [outcome(record, result)]


def render(catalogue, results_dir, report_path, verdict):
    """Print and write (@report_path, Markdown) one table per pressure;
    judge that every run has a record of each of its containers."""
    matrix = catalogue["stress_ng"]
    text, md = [], []
    for pressure, spec in matrix["pressures"].items():
        if f"stress-ng-{pressure}" not in catalogue["demo"]["scenarios"]:
            continue
        rows = []
        for stressor in matrix["stressors"]:
            run = os.path.join(results_dir, run_name(pressure, stressor))
            kills = load(os.path.join(run, "kills.json"))
            for policy in matrix["policies"]:
                name = f"{stressor}-{policy}"
                record = load(os.path.join(run, name, "container.json"))
                if record is None:
                    verdict.fail(f"stress-ng: {run_name(pressure, stressor)}:"
                                 f" no record of {name}")
                    continue
                result = load(os.path.join(run, name, "results",
                                           "result.json"))
                rows.append(row(stressor, record, result, kills))
        verdict.ok(f"stress-ng: {pressure} pressure: {len(rows)} of "
                   f"{len(matrix['stressors']) * len(matrix['policies'])} "
                   "containers recorded")
        heading = f"stress-ng, {pressure} pressure: " + \
            spec["title"].format(max=spec["memory_max"]) + \
            f"; {matrix['seconds']} s per stressor"
        text += [heading, ""] + tables.text(
            COLUMNS, rows, left=(0, 1, len(COLUMNS) - 1)) + [""]
        md += [heading + ":", ""] + tables.markdown(COLUMNS, rows) + [""]
    with open(report_path, "w", encoding="utf-8") as f:
        f.write("\n".join(md))
    return text
