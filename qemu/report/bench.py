"""make bench: every boot's bench.json (bench/bench.c) as one
table.  For each loop and configuration: the median over the stock boots
and over the patched boots (each boot gives the median of its runs), the
ratio patched/stock, the boot-to-boot spread of each kernel, (max - min) /
median over its boots, and whether the difference between the kernels
lies within the larger spread.  Then the stall of a limited and an
unlimited task under the same memcg pressure (patched kernel only).

BOOTS_DIR holds NN-stock/ and NN-patched/ directories (qemu/bench), each
with results/bench.json; OUT_DIR receives bench.md and bench.json.
"""
import json
import os
import statistics
import sys

import tables

KERNELS = ("stock", "patched")


def load(boots_dir):
    boots = []
    for name in sorted(os.listdir(boots_dir)):
        n, _, kernel = name.partition("-")
        if not n.isdigit() or kernel not in KERNELS:
            continue
        path = os.path.join(boots_dir, name, "results", "bench.json")
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if data["patched"] != (kernel == "patched"):
            sys.exit(f"report bench: {path}: the {kernel} boot ran kernel "
                     f"{data['kernel']}, which "
                     f"{'has' if data['patched'] else 'lacks'} "
                     "memory.alloc_retries")
        wall = None
        wall_path = os.path.join(boots_dir, name, "wall_s")
        if os.path.exists(wall_path):
            with open(wall_path, encoding="utf-8") as f:
                wall = int(f.read())
        boots.append({"boot": int(n), "kernel": kernel, "wall_s": wall,
                      "results": data})
    for kernel in KERNELS:
        if not any(b["kernel"] == kernel for b in boots):
            sys.exit(f"report bench: no {kernel} boot in {boots_dir}")
    return boots


def spread(values):
    """(max - min) / median over the boots, in %."""
    return 100.0 * (max(values) - min(values)) / statistics.median(values)


def metrics(boots):
    """One row per loop and configuration, in the guest's order."""
    order = [(m["metric"], m["config"], m["what"])
             for m in boots[0]["results"]["metrics"]]
    rows = []
    for metric, config, what in order:
        per = {}
        for kernel in KERNELS:
            per[kernel] = [m["median"] for b in boots
                           if b["kernel"] == kernel
                           for m in b["results"]["metrics"]
                           if m["metric"] == metric and m["config"] == config]
        med = {k: statistics.median(v) for k, v in per.items()}
        spr = {k: spread(v) for k, v in per.items()}
        ratio = med["patched"] / med["stock"]
        diff = 100.0 * abs(ratio - 1)
        rows.append({
            "metric": metric, "config": config, "what": what,
            "stock_median_ns": med["stock"],
            "patched_median_ns": med["patched"],
            "ratio": ratio,
            "stock_spread_pct": spr["stock"],
            "patched_spread_pct": spr["patched"],
            "difference_pct": diff,
            "verdict": ("within spread"
                        if diff <= max(spr.values()) else "outside spread"),
            "stock_boots_ns": per["stock"],
            "patched_boots_ns": per["patched"],
        })
    return rows


def expected(r):
    """A limited round ends in a failed call and no kill; an unlimited one
    in a call during which the hog was OOM-killed, the call succeeding."""
    if r["cgroup"] == "limited":
        return (r["errno"] in ("ENOMEM", "ENFILE")
                and not r["killed_during_call"] and r["oom_kill"] == 0)
    return r["killed_during_call"] and not r["errno"] and r["oom_kill"] >= 1


def stall(boots):
    patched = [b for b in boots if b["kernel"] == "patched"]
    sides = {}
    for side in ("limited", "unlimited"):
        rounds = [r for b in patched for r in b["results"]["stall"]
                  if r["cgroup"] == side]
        good = [r for r in rounds if expected(r)]
        per_boot = []
        for b in patched:
            ns = [r["ns"] for r in b["results"]["stall"]
                  if r["cgroup"] == side and expected(r)]
            if ns:
                per_boot.append(statistics.median(ns))
        calls = sorted({f'{r["call"]}: ' + (r["errno"] or "OOM kill")
                        for r in good})
        sides[side] = {
            "alloc_retries": rounds[0]["alloc_retries"] if rounds else "-",
            "rounds": len(rounds), "as_expected": len(good),
            "calls": calls,
            "median_ns": statistics.median(per_boot) if per_boot else None,
            "min_ns": min(r["ns"] for r in good) if good else None,
            "max_ns": max(r["ns"] for r in good) if good else None,
            "spread_pct": spread(per_boot) if per_boot else None,
            "boots_ns": per_boot,
        }
    lim, unl = sides["limited"]["median_ns"], sides["unlimited"]["median_ns"]
    ratio = lim / unl if lim is not None and unl else None
    return {"sides": sides, "ratio_limited_unlimited": ratio}


def ms(ns):
    return "-" if ns is None else f"{ns / 1e6:.3f} ms"


def pct(v):
    return "-" if v is None else f"{v:.2f}%"


def lines(boots, rows, st):
    n = {k: sum(b["kernel"] == k for b in boots) for k in KERNELS}
    release = {k: next(b["results"]["kernel"] for b in boots
                       if b["kernel"] == k) for k in KERNELS}
    out = [f"{n['stock']} stock boots ({release['stock']}) and "
           f"{n['patched']} patched boots ({release['patched']}), "
           "alternating, QEMU TCG -icount shift=0,sleep=off, 1 vCPU, "
           "512 MiB: 1 ns of guest clock = 1 instruction.  Each boot: "
           "the median of its runs; below, the median over the boots.", ""]
    out += tables.markdown(
        ["loop", "configuration", "stock ns/op", "patched ns/op",
         "patched/stock", "stock spread", "patched spread", "verdict"],
        [[r["metric"], r["config"], f'{r["stock_median_ns"]:.1f}',
          f'{r["patched_median_ns"]:.1f}', f'{r["ratio"]:.4f}',
          pct(r["stock_spread_pct"]), pct(r["patched_spread_pct"]),
          r["verdict"]] for r in rows])
    out += ["", "Loops: " + "; ".join(
        dict.fromkeys(f'{r["metric"]}: {r["what"]}' for r in rows)) + ".",
        "Configurations: defaults = the series' knobs at their defaults; "
        "retries0 = memory.alloc_retries=0 written on the patched kernel "
        "(the stock kernel has no such file: the same cgroup, nothing "
        "written); after0 = the defaults again, 2 s after a cgroup at 0 "
        "was removed that a tmpfs page keeps dying.  Every loop runs at "
        "the defaults before any limit is set in the boot.", ""]
    s = st["sides"]
    out += ["The stall under memcg pressure (patched kernel; memory.max=32M, "
            "a hog holding 30 MiB, a probe filling pipes a page per "
            "write()):", ""]
    out += tables.markdown(
        ["cgroup", "alloc_retries", "rounds as expected", "timed call",
         "stall, median", "spread"],
        [[side, v["alloc_retries"], f'{v["as_expected"]} of {v["rounds"]}',
          ", ".join(v["calls"]) or "-", ms(v["median_ns"]),
          pct(v["spread_pct"])] for side, v in s.items()]
        + [["limited/unlimited", "", "", "", "-" if st[
            "ratio_limited_unlimited"] is None else
            f'{st["ratio_limited_unlimited"]:.3f}', ""]])
    out += ["", "A round: fresh cgroups, the hog, then the probe until its "
            "call fails (alloc_retries 0) or the hog is OOM-killed during "
            "it (max).  Stall: that call, the median over the boots of each "
            "boot's median round; min / max over every round: " +
            "; ".join(f'{side} {ms(v["min_ns"])} / {ms(v["max_ns"])}'
                      for side, v in s.items()) + "."]
    return out


def render(boots_dir, out_dir):
    boots = load(boots_dir)
    rows = metrics(boots)
    st = stall(boots)
    out = lines(boots, rows, st)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "bench.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    with open(os.path.join(out_dir, "bench.json"), "w",
              encoding="utf-8") as f:
        json.dump({"metrics": rows, "stall": st, "boots": boots}, f,
                  indent=1)
        f.write("\n")
    return out
