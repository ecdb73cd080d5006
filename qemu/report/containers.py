"""The container scenarios' tables and plot, from what
container-images/run-scenarios wrote in the guest.

RESULTS_DIR holds SCENARIO/CONTAINER/{container.json,results/result.json}.
One table per scenario, in catalogue.json's demo order (a scenario
followed by its baseline); written to REPORT_DIR: report.txt and
report.md (the same tables, as printed and as Markdown), results.json (every container's record and the workload's raw
result, latency samples included) and latency.png (per container, the
distribution of its operations' latency under its policy and under the
baseline, on one set of axes).
"""

import json
import os
import subprocess

import tables

COLUMNS = ["container", "policy", "effective", "operations", "ENOMEM",
           "ENFILE", "alloc_retry_fail", "oom", "oom_kill", "p50 ms", "p99 ms",
           "max ms", "p99/base", "syscall p50 ms", "syscall p99 ms",
           "syscall max ms", "syscall p99/base", "outcome"]


def load(path):
    with open(path) as f:
        return json.load(f)


def percentile(sorted_values, p):
    """Nearest rank: the smallest value with p% of the values at or below."""
    if not sorted_values:
        return None
    rank = max(1, -(-len(sorted_values) * p // 100))
    return sorted_values[int(rank) - 1]


def hist_percentile(hist, p):
    """The bucket bound at or below which p% of the calls took."""
    total = sum(n for _, n in hist)
    if not total:
        return None
    rank, seen = max(1, -(-total * p // 100)), 0
    for upper, n in hist:
        seen += n
        if seen >= rank:
            return upper
    return hist[-1][0]


def ms(us):
    return "-" if us is None else f"{us / 1000:.1f}"


def p99s(record):
    """p99 of the operation latency and of the system calls, in us."""
    w = record["result"] or {}
    lat = sorted(s[1] for s in w.get("samples", []))
    return percentile(lat, 99), hist_percentile(w.get("syscall_hist", []), 99)


def ratio(value, base):
    return "-" if value is None or not base else f"{value / base:.2f}"


def containers(results_dir, scenario):
    """Each container's record, with the workload's result merged in."""
    records = []
    base = os.path.join(results_dir, scenario)
    # A directory per container; kills.json beside them.
    for name in sorted(d for d in os.listdir(base)
                       if os.path.isdir(os.path.join(base, d))):
        record = load(os.path.join(base, name, "container.json"))
        result = os.path.join(base, name, "results", "result.json")
        record["result"] = load(result) if os.path.exists(result) else None
        records.append(record)
    # The hog container last: the rows that matter come first.
    records.sort(key=lambda r: (r["workload"] == "hog", r["container"]))
    return records


def row(record, baseline):
    """A container's row; @baseline: its p99s at max in the same run."""
    ev = record["memory_events"]
    w = record["result"] or {}
    lat = sorted(s[1] for s in w.get("samples", []))
    hist = w.get("syscall_hist", [])
    op_p99, sys_p99 = p99s(record)
    base_op, base_sys = baseline or (None, None)
    hog = record["workload"] == "hog"
    if hog:
        ops = f"{w.get('fills', 0)} fills"
    else:
        ops = str(w.get("operations", "-"))
    outcome = record["outcome"]
    if w.get("error"):
        outcome += f" ({w['error']})"
    return [record["container"], record["policy"],
            record["effective"]["limit"] or "-", ops,
            "-" if hog else str(w.get("enomem", "-")),
            "-" if hog else str(w.get("enfile", "-")),
            str(ev["alloc_retry_fail"]), str(ev["oom"]), str(ev["oom_kill"]),
            ms(percentile(lat, 50)), ms(op_p99),
            ms(lat[-1] if lat else None), ratio(op_p99, base_op),
            ms(hist_percentile(hist, 50)), ms(sys_p99),
            ms(w.get("syscall_max_us")), ratio(sys_p99, base_sys), outcome]


def title(catalogue, scenario, records):
    base = scenario.removesuffix("-baseline")
    limits = {r["memory_max"] for r in records if r["memory_max"]}
    text = catalogue["scenarios"][base]["title"].format(
        max="/".join(f"{m >> 20} MiB" for m in sorted(limits)))
    if scenario != base:
        text += "; baseline: every container at max"
    return f"{scenario}: {text}"


def cdf_points(record):
    """(latency ms, fraction of operations at or below it), a point per
    operation, sorted."""
    lat = sorted(max(s[1], 1) / 1000
                 for s in (record["result"] or {}).get("samples", []))
    return [(v, (i + 1) / len(lat)) for i, v in enumerate(lat)]


def plot(report_dir, scenarios):
    """latency.png: a panel per scenario and workload container, its
    latency distribution under its policy and under the baseline."""
    data_dir = os.path.join(report_dir, "data")
    os.makedirs(data_dir, exist_ok=True)
    by_name = dict(scenarios)
    panels = []
    for scenario, records in scenarios:
        if scenario.endswith("-baseline"):
            continue
        baseline = {r["container"]: r for r in
                    by_name.get(scenario + "-baseline", [])}
        for r in records:
            if r["workload"] == "hog":
                continue
            lines = []
            for label, rec in ((f"policy {r['policy']}", r),
                               ("baseline (max)",
                                baseline.get(r["container"]))):
                points = cdf_points(rec) if rec else []
                if not points:
                    continue
                path = os.path.join(
                    data_dir, f"{rec['scenario']}-{rec['container']}.dat")
                with open(path, "w", encoding="utf-8") as f:
                    f.writelines(f"{x} {y}\n" for x, y in points)
                lines.append(f"'{path}' using 1:2 with steps lw 2 "
                             f"title '{label}'")
            panels.append((f"{scenario}: {r['container']}", lines))
    if not panels:
        return
    cols = 4
    rows = (len(panels) + cols - 1) // cols
    script = [f"set terminal pngcairo size 1600,{380 * rows} font ',9'",
              f"set output '{os.path.join(report_dir, 'latency.png')}'",
              f"set multiplot layout {rows},{cols}",
              "set logscale x", "set xlabel 'operation latency, ms'",
              "set ylabel 'fraction of operations'", "set yrange [0:1]",
              "set key bottom right", "set grid"]
    for name, lines in panels:
        script.append(f"set title '{name}'")
        script.append("plot " + ", ".join(lines) if lines else
                      "plot NaN notitle")
    script.append("unset multiplot")
    subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True,
                   check=True)


def render(catalogue, results_dir, report_dir, verdict):
    """Print the tables, write the report, and judge that every scenario
    of the demo ran every container of the catalogue."""
    order = catalogue["demo"]["scenarios"]
    os.makedirs(report_dir, exist_ok=True)
    scenarios = []
    for scenario in order:
        # The stress-ng matrix has a report of its own (stressng.py).
        if scenario.removesuffix("-baseline") not in catalogue["scenarios"]:
            continue
        path = os.path.join(results_dir, scenario)
        want = {c["name"] for c in catalogue["scenarios"][
            scenario.removesuffix("-baseline")]["containers"]}
        # A container's record is its container.json: run-scenarios makes
        # every container's directory before it starts the first one.
        got = {name for name in want if os.path.exists(
            os.path.join(path, name, "container.json"))}
        if want - got:
            verdict.fail(f"containers: {scenario}: no record of "
                         f"{', '.join(sorted(want - got))}")
            continue
        verdict.ok(f"containers: {scenario}: a record of each of its "
                   f"{len(want)} containers")
        scenarios.append((scenario, containers(results_dir, scenario)))
    text, md = [], ["# Containers with mixed memory.alloc_retries policies",
                    ""]
    # Each container's p99s in the baseline: the yardstick of its scenario.
    base = {(s.removesuffix("-baseline"), r["container"]): p99s(r)
            for s, records in scenarios if s.endswith("-baseline")
            for r in records}
    for scenario, records in scenarios:
        rows = [row(r, None if scenario.endswith("-baseline") else
                    base.get((scenario, r["container"])))
                for r in records]
        heading = title(catalogue, scenario, records)
        text += [heading, ""] + tables.text(
            COLUMNS, rows, left=(0, 1, 2, len(COLUMNS) - 1)) + [""]
        md += ["## " + heading, ""] + tables.markdown(COLUMNS, rows) + [""]
    md += ["![operation latency, under each policy and the baseline]"
           "(latency.png)", ""]
    with open(os.path.join(report_dir, "report.md"), "w",
              encoding="utf-8") as f:
        f.write("\n".join(md))
    with open(os.path.join(report_dir, "report.txt"), "w",
              encoding="utf-8") as f:
        f.write("\n".join(text))
    with open(os.path.join(report_dir, "results.json"), "w",
              encoding="utf-8") as f:
        json.dump(dict(scenarios), f)
    plot(report_dir, scenarios)
    return text
