"""The lockup reproducer's runs (test_oom_lockup's runs.json) as one
Markdown row per case: how many runs ended without a spree, the kills
inside and outside the workload, who else than the holder invoked the
OOM killer for a kill, and whether that task was outside the workload,
where no limit of its governs it, or in it (a page fault, which no limit
governs), and how long the holder's failing call
stalled (from the first memory.max hit under memcg OOM, from the
moment the OOM was let come under global OOM).  The holder's call is a
fallocate(), or for the faulting copy a writev() from an unpopulated
mapping, whose call fails by coming back short.
"""
import collections
import json
import statistics

import tables


def stall(runs):
    """Median and maximum of the holder's stall, over runs where it failed."""
    times = [r["holder_stall_s"] for r in runs if r["holder_failed"]]
    if not times:
        return "-"
    return f"{statistics.median(times):.2f} / {max(times):.2f} s"


# test_oom_lockup's tasks in the workload, by the names they give
# themselves; the holder has a column of its own.
WORKLOAD_TASKS = {"victim", "bystander"}


def row(runs):
    first = runs[0]
    via = {"sysctl": "vm.retry_allocation_attempts",
           "oom.group": "memory.oom.group=1"}.get(first["via"],
                                                 "memory.alloc_retries")
    n = len(runs)
    kills_in = [r["kills_in"] for r in runs]
    by_holder = [r["holder_invoked"] for r in runs]
    outside = sum(r["kills_out"] for r in runs)
    names = sorted({name for r in runs for name in r["killed_out"].split()})
    others = collections.Counter(
        name for r in runs for name in r.get("invokers", "").split()
        if name != "holder")
    # The workload's own tasks are under its limit (but for their page
    # faults); a task outside it is under no limit of the workload's.
    groups = []
    for label, inside in (("outside", False), ("in the workload", True)):
        names = [f"{name} {count}" for name, count in sorted(others.items())
                 if (name in WORKLOAD_TASKS) == inside]
        if names:
            groups.append(f"{label}: {', '.join(names)}")
    oom = first["oom"]
    if not first["victim_on_lock"]:
        oom += ", victim not on the lock"
    if first["holder_call"] == "writev":
        oom += " (faulting copy)"
    return [
        oom, first["limit"], via, str(n),
        f'{sum(r["no_spree"] for r in runs)} of {n}',
        f'{sum(r["holder_failed"] for r in runs)} of {n}',
        f"{sum(kills_in)} (at most {max(kills_in)} in a run)",
        f"{sum(by_holder)} (at most {max(by_holder)} in a run)",
        "; ".join(groups) or "-",
        f"{outside}" + (f" ({', '.join(names)})" if names else ""),
        f'{sum(r["bystanders_ran_on"] for r in runs)} of '
        f'{sum(r["bystanders"] for r in runs)}',
        stall(runs),
        str(sum(r["hits_out"] for r in runs)),
        str(sum(r["neighbour_enomem"] for r in runs)),
    ]


HEADER = ["OOM", "limit", "set through", "runs", "ended without a spree",
          "holder's call failed", "kills in the workload",
          "invoked by the holder", "invoked by others", "kills outside", "bystanders ran on",
          "holder's stall, median / max",
          "limit hits outside", "neighbour's ENOMEM"]


def render(runs_json, out_md):
    with open(runs_json, encoding="utf-8") as f:
        runs = json.load(f)
    cases = {}
    for r in runs:
        cases.setdefault(r["case"], []).append(r)
    lines = tables.markdown(HEADER, [row(c) for c in cases.values()])
    with open(out_md, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return lines
