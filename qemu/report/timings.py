"""make check's timing table: how long each step took in the run, from
qemu/timed's lines (RUN_DIR/times.tsv: the steps on the host) and the
job's (RUN_DIR/results/times.tsv: each test in the guest, by the guest's
clock), written to RUN_DIR/timings.md for make readme."""

import os
import re
import subprocess
import time

import tables

# What each step of qemu/timed is, in the table's words.
STEPS = {
    "deps": "host packages (apt-get)",
    "kernel-source": "kernel source: unpack, apply the series",
    "kernel": "kernel build",
    "rootfs": "root file system (mmdebstrap)",
    "systemd": "systemd with the series",
    "image": "root disk image",
    "progs": "guest programs",
    "kselftests": "the series' and the tree's cgroup kselftests",
    "containers": "container workloads",
    "guest": "guest run: boot, tests, results back",
    "lint": "static checks (checkpatch --strict, shellcheck)",
    "host-stall": "the verdict's soft lockup reading",
    "prometheus": "Prometheus rules and collector on the host",
    "kubernetes": "the NRI plugin's value parser and the admission policy on the host",
    "systemd-unit-tests": "systemd unit tests on the host",
}


def minutes(seconds):
    seconds = round(seconds)
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 \
        else f"{seconds} s"


def render(run_dir):
    """The table's lines, or [] if the run has no times.tsv (a run of
    make check from before the table, or by hand)."""
    path = os.path.join(run_dir, "times.tsv")
    if not os.path.exists(path):
        return []
    start, rows = None, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            field = line.rstrip("\n").split("\t")
            if field[0] == "start":
                start = int(field[1])
                continue
            step, seconds, rc, miss, hit = field
            cache = f"{miss} misses, {hit} hits" if int(miss) + int(hit) \
                else ""
            rows.append([STEPS.get(step, step), minutes(float(seconds)),
                         cache + ("" if rc == "0" else f" (exit {rc})")])
            if step == "guest":
                rows += guest_rows(run_dir)
    if start is not None:
        rows.append(["**the whole make check**",
                     f"**{minutes(time.time() - start)}**", ""])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True,
                            check=False).stdout.strip() or "no git"
    lines = [f"`make check` of {commit}, "
             f"{time.strftime('%Y-%m-%d', time.gmtime())}:", ""]
    lines += tables.markdown(["step", "time", "compiler cache"], rows)
    with open(os.path.join(run_dir, "timings.md"), "w",
              encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return lines


def guest_rows(run_dir):
    """The guest's boot to its job, and each test, by the guest's clock."""
    rows = []
    serial = os.path.join(run_dir, "serial.log")
    if os.path.exists(serial):
        with open(serial, encoding="utf-8", errors="replace") as f:
            m = re.search(r"^job: start .*uptime=([0-9.]+)s", f.read(), re.M)
        if m:
            rows.append(["&nbsp;&nbsp;boot to the job",
                         minutes(float(m.group(1))), ""])
    tests = os.path.join(run_dir, "results", "times.tsv")
    if os.path.exists(tests):
        with open(tests, encoding="utf-8") as f:
            for line in f:
                test, begin, end = line.split()
                rows.append([f"&nbsp;&nbsp;`{test}`",
                             minutes(float(end) - float(begin)), ""])
    return rows
