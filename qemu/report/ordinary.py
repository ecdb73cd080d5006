"""Ordinary OOMs, with no lock in the way (test_ordinary_oom's
runs.jsonl), as two Markdown tables: the memcg OOM of a hog and a probe
whose write()s allocate, one row per limit (how many runs killed once
and let every call succeed, failed the probe's calls without a kill, and
how long after the probe started the first kill came); a cgroup full
of dirty page cache, one row per limit (write()s failed, OOM kills); and
a global OOM with a victim the OOM reaper is done with but that cannot
exit, outside or inside the limited workload, one row per place.
"""
import json
import statistics

import tables


def seconds(times):
    """Median and range of the times to the first kill, or "-"."""
    times = [t for t in times if t >= 0]
    if not times:
        return "-"
    return (f"{statistics.median(times):.3f} s "
            f"({min(times):.3f} to {max(times):.3f})")


def oom_row(limit, runs):
    n = len(runs)
    return [
        limit, str(n),
        f'{sum(r["held"] for r in runs)} of {n}',
        f'{sum(r["kills"] == 1 and not r["enomem"] for r in runs)} of {n}',
        f'{sum(r["enomem"] > 0 and r["kills"] == 0 for r in runs)} of {n}',
        str(sum(r["kills"] for r in runs)),
        str(sum(r["invoked_by_probe"] for r in runs)),
        seconds([r["first_kill_s"] for r in runs]),
    ]


OOM_HEADER = ["limit", "runs", "held", "killed once, every call succeeded",
              "ENOMEM, nobody killed", "kills", "invoked by the probe",
              "first kill after the probe started: median (range)"]


def dirty_row(limit, runs):
    n = len(runs)
    return [
        limit, str(n), f'{sum(r["held"] for r in runs)} of {n}',
        f'{sum(r["write_enomem"] for r in runs)} of {n}',
        str(sum(r["kills"] for r in runs)),
        str(sum(r["alloc_retry_fail"] for r in runs)),
    ]


DIRTY_HEADER = ["limit", "runs", "held", "runs with a write() ENOMEM",
                "OOM kills", "alloc_retry_fail"]


def stuck_row(where, runs):
    n = len(runs)
    return [
        where, str(n), f'{sum(r["held"] for r in runs)} of {n}',
        f'{sum(r["enomem"] == 0 and r["other_errors"] == 0 for r in runs)} of {n}',
        f'{sum(r["enomem"] > 0 for r in runs)} of {n}',
        str(sum(r["kills"] for r in runs)),
        str(sum(r["invoked_by_probe"] for r in runs)),
        str(sum(r["alloc_retry_fail"] for r in runs)),
        f'{sum(r["victim_stuck"] for r in runs)} of {n}',
    ]


STUCK_HEADER = ["stuck victim", "runs", "held", "every call succeeded",
                "runs with ENOMEM", "kills in the workload",
                "invoked by the probe", "alloc_retry_fail",
                "victim still stuck after"]


def by_limit(runs, case):
    limits = {}
    for r in runs:
        if r["case"] == case:
            limits.setdefault(r["limit"], []).append(r)
    return [limits[k] for k in ("max", "1", "0") if k in limits]


def render(runs_jsonl, out_md):
    with open(runs_jsonl, encoding="utf-8") as f:
        runs = [json.loads(line) for line in f if line.strip()]
    lines = ["Memcg OOM: a hog fills three quarters of the cgroup, a probe "
             "pins half of it in pipe buffers:", ""]
    lines += tables.markdown(OOM_HEADER, [
        oom_row(r[0]["limit"], r) for r in by_limit(runs, "memcg-oom")])
    lines += ["", "Dirty page cache: a writer writes three times its "
              "cgroup's memory.max to a file on ext4:", ""]
    lines += tables.markdown(DIRTY_HEADER, [
        dirty_row(r[0]["limit"], r)
        for r in by_limit(runs, "dirty-page-cache")])
    stuck = {}
    for r in runs:
        if r["case"] == "global-stuck-victim":
            stuck.setdefault(r["victim"], []).append(r)
    if stuck:
        lines += ["", "Global OOM, the probe's workload at 1: a victim the "
                  "OOM reaper is done with, blocked in a write() to a "
                  "frozen filesystem, outside the workload or inside it:",
                  ""]
        lines += tables.markdown(STUCK_HEADER, [
            stuck_row(k, stuck[k]) for k in ("outside", "inside")
            if k in stuck])
    with open(out_md, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return lines
