#!/usr/bin/env python3
"""A table row of what qemu/repro-clear-page's boot showed, from the
guest's console and the host's record (qemu/host-sampler):
   qemu/report/clearpage.py RUN_DIR LABEL

Each run of the lockup case ends with a "run K of N" line and the next
one's set-up with "in fallocate()"; between them the victim and the
bystanders fault their memory in.  The set-up that zeroed the most pages
that held translated code (Documentation/reliability.md; the most blocks
invalidated) is the one the row is about: how long it took, how many of each vCPU's samples were in
clear_page() and how many of those on the page of the sample before (a
page that took over a second), and how many translated blocks TCG had
made by then and invalidated in it."""

import bisect
import json
import os
import re
import sys

import tables
import verdict


def arrivals(run_dir):
    """The host's samples, and the console's lines with the host time
    each had arrived by."""
    samples, _ = verdict.host_record(run_dir)
    sizes = [s["serial"] for s in samples]
    out, end = [], 0
    with open(os.path.join(run_dir, "serial.log"), "rb") as f:
        for raw in f:
            end += len(raw)
            i = min(bisect.bisect_left(sizes, end), len(samples) - 1)
            out.append((samples[i]["t"],
                        raw.decode("utf-8", "replace").rstrip("\r\n")))
    return samples, out


def weight(samples, name, first, last):
    """How much of a set-up went into pages that held code: the blocks
    TCG invalidated in it, or where the record has no TCG counters, the
    vCPU samples in clear_page()."""
    window = [s for s in samples if first < s["t"] < last]
    jit = verdict.tcg_counts(window)
    if jit:
        return jit[1][2]
    return sum((name(v[0]) or "").startswith("clear_page")
               for s in window for v in s.get("vcpus", {}).values()
               if v[1] == 0)


def row(run_dir, label):
    samples, lines = arrivals(run_dir)
    name = verdict.symbols(run_dir)
    held = re.compile(r"global 0: ([0-9]+) of ([0-9]+) runs held")
    runs = lockups = 0
    held_of = "no result"
    windows, start = [], None
    for t, line in lines:
        if "soft lockup" in line:
            lockups += 1
        m = held.search(line)
        if m:
            held_of = f"{m.group(1)} of {m.group(2)}"
        if re.search(r", run [0-9]+ of [0-9]+:", line) or \
                "warm-up done" in line:
            runs += "warm-up" not in line
            start = t
        elif "in fallocate(), the holder sleeps" in line and start:
            windows.append((t - start, start, t))
            start = None
    if not windows:
        return [label, held_of, str(lockups), "no set-up seen", "", "", "",
                ""]
    length, first, last = max(windows, key=lambda w: weight(samples, name,
                                                            w[1], w[2]))
    window = [s for s in samples if first < s["t"] < last]
    in_clear, same = [], []
    for cpu in ("0", "1"):
        n = k = 0
        page = None
        for s in window:
            v = s.get("vcpus", {}).get(cpu)
            if not v or v[1] != 0 or \
                    not (name(v[0]) or "").startswith("clear_page"):
                page = None
                continue
            n += 1
            k += int(v[3], 16) >> 12 == page
            page = int(v[3], 16) >> 12
        in_clear.append(f"{n} of {len(window)}")
        same.append(str(k))
    jit = verdict.tcg_counts(window)
    made = f"{jit[0][0]:,}" if jit else "?"
    gone = f"{jit[1][2]:,}" if jit else "?"
    return [label, held_of, str(lockups), f"{length:.0f} s",
            ", ".join(in_clear), ", ".join(same), made, gone]


HEADER = ["kernel", "runs held", "soft lockups", "the set-up",
          "vCPU 0, 1 samples in clear_page()", "of them on the page a "
          "second before", "blocks translated by then",
          "blocks invalidated in it"]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    r = row(sys.argv[1], sys.argv[2])
    print("\n".join(tables.markdown(HEADER, [r])))
    with open(os.path.join(sys.argv[1], "row.json"), "w",
              encoding="utf-8") as f:
        json.dump(r, f)


if __name__ == "__main__":
    main()
