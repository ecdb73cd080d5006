"""The host's verdict on a guest run: TAP results, the runner's status and
the kernel log, a PASS/FAIL line each, then "N passed, N failed"."""

import bisect
import json
import os
import re

# Kernel log lines that fail a run wherever they appear.
BAD_LINE = re.compile(
    r"WARNING:|BUG:|Oops|general protection fault|Kernel panic|"
    r"INFO: task .* blocked for more than|soft lockup|hard LOCKUP|"
    r"VM_FAULT_OOM leaked|UBSAN:|list_add corruption|list_del corruption|"
    r"ODEBUG:|detected (expedited )?stall|"
    r"EXT4-fs error|Remounting filesystem read-only|Aborting journal|"
    # Any kmemleak line but its start: a leak, or kmemleak turning
    # itself off (it cannot allocate its own object under OOM or
    # failslab), after which its scan finds nothing.
    # (The kernel's lines, not the job's "job: kmemleak: scanning".)
    r"(?:^|\] )kmemleak: (?!Kernel memory leak detector initialized|"
    r"Automatic memory scanning thread)")
# Lines of dmesg shown after the first bad line: a report's registers
# and call trace, and with softlockup_all_cpu_backtrace (qemu/run) the
# other CPU's.
REPORT_LINES = 80
SOFT_LOCKUP = re.compile(r"^\[ *([0-9]+\.[0-9]+)\] watchdog: BUG: soft lockup "
                         r"- CPU#([0-9]+) stuck for ([0-9]+)s!")
# A CPU the host stopped for F seconds is reported stuck for at most F + 4
# (the watchdog checks every 4 s: watchdog_thresh 10 * 2 / 5; its seconds
# are 2^30 ns, a little longer), and the host's samples (qemu/host-sampler)
# are a second apart: a host stall explains a report of S seconds only if
# it lasted S - 6 s or more.
HOST_SLACK = 6
RESULT = re.compile(r"^(not )?ok [0-9]")
TIMESTAMP = re.compile(r"^\[[ 0-9.]*\] ")


def logged_at(line):
    """A kernel log line's time stamp, in seconds; lines without one last."""
    m = re.match(r"^\[ *([0-9]+\.[0-9]+)\] ", line)
    return float(m.group(1)) if m else float("inf")


def host_record(run_dir):
    """qemu/host-sampler's samples of the run, and the host's time of the
    guest's clock's zero: the earliest that any time-stamped console line
    could have been printed, given when it had reached the host."""
    path = os.path.join(run_dir, "host.log")
    if not os.path.exists(path):
        return [], None
    samples = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                samples.append(json.loads(line))
            except ValueError:
                pass  # the last line, cut short when qemu/run stopped it
    sizes = [sample["serial"] for sample in samples]
    zero, end = None, 0
    with open(os.path.join(run_dir, "serial.log"), "rb") as f:
        for raw in f:
            end += len(raw)
            i = bisect.bisect_left(sizes, end)
            stamp = logged_at(raw.decode("utf-8", "replace"))
            if i < len(samples) and stamp != float("inf"):
                arrived = samples[i]["t"] - stamp
                zero = arrived if zero is None else min(zero, arrived)
    return samples, zero


def symbols(run_dir):
    """Where the guest's kernel text lay in the run, as a function from
    an address to "function+0xoff": qemu/run's copy of the kernel's
    System.map, moved by the KASLR offset that the job's first line
    gives (text=).  Without them, every address stands for itself."""
    path = os.path.join(run_dir, "System.map")
    serial = os.path.join(run_dir, "serial.log")
    base = None
    if os.path.exists(serial):
        with open(serial, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = re.search(r"^job: start .* text=([0-9a-f]+)", line)
                if m:
                    base = int(m.group(1), 16)
                    break
    if base is None or not os.path.exists(path):
        return lambda addr: addr
    names, starts, text, etext = [], [], base, 1 << 64
    with open(path, encoding="utf-8") as f:
        for line in f:
            addr, kind, name = line.split()[:3]
            if name == "_text":
                text = int(addr, 16)
            elif name == "_etext":
                etext = int(addr, 16)
            if kind in "tT":
                starts.append(int(addr, 16))
                names.append(name)
    order = sorted(range(len(starts)), key=starts.__getitem__)
    starts = [starts[i] for i in order]
    names = [names[i] for i in order]
    offset = base - text

    def name(addr):
        """None for an address outside the kernel's text: a sampled
        stack holds data pointers too."""
        a = int(addr, 16) - offset
        i = bisect.bisect_right(starts, a) - 1
        return f"{names[i]}+{a - starts[i]:#x}" if 0 <= i and a < etext \
            else None
    return name


def vcpu_samples(run_dir, samples, cpu):
    """What qemu/host-sampler's monitor samples say of guest CPU @cpu over
    @samples: where it was, each function with its count, and the
    functions its sampled stacks held most often."""
    name = symbols(run_dir)
    where, stack = {}, {}
    for sample in samples:
        vcpu = sample.get("vcpus", {}).get(str(cpu))
        if not vcpu:
            continue
        rip, cpl, hlt = vcpu[:3]
        at = "idle" if hlt else "user" if cpl else \
            (name(rip) or rip).split("+")[0]
        where[at] = where.get(at, 0) + 1
        for addr in (vcpu[5] if len(vcpu) > 5 else []):
            func = name(addr)
            if func:
                func = func.split("+")[0]
                stack[func] = stack.get(func, 0) + 1
    if not where:
        return "no monitor samples of it"
    top = sorted(stack.items(), key=lambda kv: -kv[1])[:12]
    return (f"{sum(where.values())} monitor samples of guest CPU {cpu}: " +
            ", ".join(f"{k} {v}" for k, v in
                      sorted(where.items(), key=lambda kv: -kv[1])) +
            "; on its sampled stacks: " +
            (", ".join(f"{k} {v}" for k, v in top) or "nothing"))


def tcg_counts(samples):
    """TCG's counters (qemu/host-sampler's "jit") at the first of
    @samples, and how much each grew by the last; None without two."""
    jit = [sample["jit"] for sample in samples
           if sample.get("jit") and None not in sample["jit"]]
    if len(jit) < 2:
        return None
    return jit[0], [b - a for a, b in zip(jit[0], jit[-1])]


def host_stall(run_dir, line):
    """Whether the host stopped the CPU that the soft lockup report @line
    names for about as long as the report says (all but HOST_SLACK), and
    the host's record of it.  A CPU stuck in a loop of the guest's kernel
    keeps its vCPU thread on a host CPU.  A vCPU thread off the host's
    CPUs (starved, or asleep on QEMU's big lock or on the host's I/O), or
    a host that stopped altogether, stopped the guest's CPU itself."""
    samples, zero = host_record(run_dir)
    if not samples or zero is None:
        return False, "no host record (host.log) to weigh it against"
    m = SOFT_LOCKUP.search(line)
    at, cpu, stuck = float(m.group(1)), m.group(2), int(m.group(3))
    times = [sample["t"] for sample in samples]
    first = max(bisect.bisect_right(times, zero + at - stuck) - 1, 0)
    last = min(bisect.bisect_left(times, zero + at), len(samples) - 1)
    # Single-threaded TCG (after the int3 race) runs every vCPU on one
    # thread: its time is all CPUs', which can only fail the run.
    names = (f"CPU {cpu}/TCG", "ALL CPUs/TCG")
    vcpu = next((tid for tid, thread in samples[first]["threads"].items()
                 if thread[0] in names), None)
    if last <= first or vcpu is None or \
            vcpu not in samples[last]["threads"]:
        return False, ("the host's record does not cover it (no thread of "
                       f"CPU {cpu} at both ends of its window)")
    span = times[last] - times[first]
    on_cpu, waiting, user, system = (
        b - a for a, b in zip(samples[first]["threads"][vcpu][2:6],
                              samples[last]["threads"][vcpu][2:6]))
    states = "".join(sorted({sample["threads"].get(vcpu, "??")[1]
                             for sample in samples[first:last + 1]}))
    # A sleep of a second that took longer, not spent waiting for a CPU:
    # the host as a whole did not run.  (A vCPU thread that was running
    # when it stopped may be charged the gap as time on a CPU.)
    frozen = max(sample["slept"] - 1 - sample["delay"]
                 for sample in samples[first + 1:last + 1])
    # The host CPU the vCPU thread was on, gone (its own host stopped
    # it): a gap is counted by the sample after it, and the report comes
    # as the CPU resumes, so the window runs two samples past it.
    gone = 0.0
    for sample in samples[first + 1:last + 3]:
        thread = sample["threads"].get(vcpu)
        if thread and len(thread) > 6 and "gone" in sample:
            gone += sample["gone"].get(str(thread[6]), 0.0)
    stopped = max(span - on_cpu, frozen, gone)
    # TCG's own work in the window: a write to guest memory that code was
    # translated from invalidates those translations, one by one.
    jit = tcg_counts(samples[first:last + 1])
    tcg = (f"TCG invalidated {jit[1][2]} translated blocks and flushed "
           f"them all {jit[1][1]} times in it; " if jit else "")
    return stopped >= stuck - HOST_SLACK, (
        f"over those {span:.0f} s the host had CPU {cpu}'s vCPU thread on "
        f"a CPU {on_cpu:.1f} s ({user:.1f} s user, {system:.1f} s system; "
        f"runnable but waiting {waiting:.1f} s; states {states}); the host "
        f"CPUs it was on were gone {gone:.1f} s, the host stopped "
        f"altogether for {max(frozen, 0):.1f} s at most; {tcg}"
        f"{vcpu_samples(run_dir, samples[first:last + 1], cpu)}")


class Verdict:
    def __init__(self):
        self.passed = self.failed = 0

    def ok(self, text, detail=()):
        self.passed += 1
        print(f"PASS {text}")
        for line in detail:
            print(f"    {line}")

    def fail(self, text, detail=()):
        self.failed += 1
        print(f"FAIL {text}")
        for line in detail:
            print(f"    {line}")

    def tap(self, suite, path):
        """One TAP stream: every ok/not ok line counts, a skip fails, and
        the plan must be met (a short stream: a test did not finish)."""
        if not os.path.exists(path) or not os.path.getsize(path):
            self.fail(f"{suite}: no results")
            return
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [line.rstrip("\r\n") for line in f]
        n = 0
        for line in lines:
            m = RESULT.match(line)
            if not m:
                continue
            n += 1
            text = line.removeprefix("not ").removeprefix("ok ")
            if m.group(1):
                self.fail(f"{suite}: {text}")
            elif re.search(r"# *skip", text, re.I):
                self.fail(f"{suite}: {text} (skipped: did not run)")
            else:
                self.ok(f"{suite}: {text}")
        plans = [re.match(r"^1\.\.([0-9]+)(.*)", line) for line in lines]
        plan = next((p for p in plans if p), None)
        if plan and plan.group(1) == "0":
            # kselftest's skip of a whole program: "1..0 # SKIP reason".
            reason = re.sub(r"^ *# *skip *", "", plan.group(2), flags=re.I)
            self.fail(f"{suite}: skipped: {reason}")
        elif not plan or int(plan.group(1)) != n:
            want = plan.group(1) if plan else "none"
            self.fail(f"{suite}: {n} results for a plan of {want} "
                      "(a test did not finish)")

    def run_status(self, run_dir):
        try:
            with open(os.path.join(run_dir, "run.status"),
                      encoding="utf-8") as f:
                status = f.read().strip()
        except FileNotFoundError:
            status = "qemu/run did not report"
        if status == "ok":
            self.ok("guest: booted, ran its job and handed back results")
        else:
            self.fail(f"guest: {status}")
        return status == "ok"

    def kernel_log(self, run_dir):
        """The guest's dmesg files and its serial console."""
        results = os.path.join(run_dir, "results")
        paths = [os.path.join(results, n) for n in
                 sorted(os.listdir(results)) if n.startswith("dmesg")] \
            if os.path.isdir(results) else []
        paths.append(os.path.join(run_dir, "serial.log"))
        hits = set()
        for path in paths:
            if not os.path.exists(path):
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                hits.update(line.rstrip("\r\n") for line in f
                            if BAD_LINE.search(line))
        dmesg = os.path.join(results, "dmesg.txt")
        if not os.path.exists(dmesg) or not os.path.getsize(dmesg):
            self.fail("kernel log: the guest's dmesg is missing")
            return
        if not self.from_boot(dmesg):
            # The lines below the console's loglevel are only in dmesg.
            self.fail(f"kernel log: {dmesg} does not begin with the boot: "
                      "the log buffer wrapped (qemu/run's log_buf_len)")
            return
        # A soft lockup report of a CPU that the host's record shows the
        # host stopped is not the kernel's (qemu/host-sampler): said, with
        # that record, and so is the record for every other one.
        stalls = {line: host_stall(run_dir, line) for line in hits
                  if SOFT_LOCKUP.search(line)}
        weighed = [f"{line}: {record}"
                   for line, (_, record) in sorted(stalls.items())]
        bad = hits - {line for line, (caused, _) in stalls.items() if caused}
        clean = ("no WARN, BUG, oops, hung task, soft lockup, RCU stall, "
                 "VM_FAULT_OOM leaked, ext4 error or kmemleak line; dmesg "
                 "holds the whole boot")
        if not hits:
            self.ok(f"kernel log: {clean}")
        elif not bad:
            self.ok(f"kernel log: {clean}, but for {len(hits)} soft lockup "
                    "reports of CPUs the host stopped:", weighed)
        else:
            first = min(bad, key=logged_at)
            self.fail(f"kernel log: {len(bad)} bad lines:",
                      sorted(bad)[:20] + weighed +
                      self.report_of(run_dir, first))

    @staticmethod
    def report_of(run_dir, bad):
        """What the job was doing when the kernel printed @bad, and the
        report that follows it in dmesg (its registers and stack): all a
        run on a CI machine leaves to go on."""
        during, report = "(not on the console: a line below its level)", []
        serial = os.path.join(run_dir, "serial.log")
        if os.path.exists(serial):
            last = "(no job line before it)"
            with open(serial, encoding="utf-8", errors="replace") as f:
                for line in f:
                    line = line.rstrip("\r\n")
                    if line == bad:
                        during = last
                        break
                    if "job: " in line:
                        last = line
        dmesg = os.path.join(run_dir, "results", "dmesg.txt")
        if os.path.exists(dmesg):
            with open(dmesg, encoding="utf-8", errors="replace") as f:
                lines = [line.rstrip("\r\n") for line in f]
            if bad in lines:
                start = lines.index(bad)
                report = lines[start + 1:start + 1 + REPORT_LINES]
        return [f"the first of them came after: {during}",
                f"and {len(report)} lines of dmesg follow it:"] + \
            [f"  {line}" for line in report]

    @staticmethod
    def from_boot(dmesg):
        """Whether dmesg's first line is the kernel's first."""
        with open(dmesg, encoding="utf-8", errors="replace") as f:
            return "Linux version" in f.readline()

    def kunit(self, run_dir, suite):
        """A KUnit suite's KTAP subtest in the boot log, without the
        timestamps and the subtest's indentation."""
        out = os.path.join(run_dir, f"kunit-{suite}.tap")
        lines, inside = [], False
        boot = os.path.join(run_dir, "results", "dmesg-boot.txt")
        if os.path.exists(boot):
            with open(boot, encoding="utf-8", errors="replace") as f:
                for line in f:
                    line = TIMESTAMP.sub("", line.rstrip("\r\n"))
                    if line == f"    # Subtest: {suite}":
                        inside = True
                    if inside and line.startswith("    "):
                        lines.append(line[4:])
                    if inside and re.match(
                            rf"^(not )?ok [0-9]+ {re.escape(suite)}$", line):
                        break
        with open(out, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
        self.tap(f"kunit {suite}", out)

    def debug_kernel(self, run_dir):
        """A debug kernel's own findings, which the job collects at its
        end: kmemleak's after its scans, and lockdep still on (a report
        turns it off for the rest of the boot)."""
        results = os.path.join(run_dir, "results")
        leaks = os.path.join(results, "kmemleak.txt")
        if not os.path.exists(leaks):
            self.fail("kmemleak: no scan (kmemleak turned itself off, or "
                      "this is not the debug kernel)")
        else:
            with open(leaks, encoding="utf-8", errors="replace") as f:
                objects = [line.strip() for line in f
                           if line.startswith("unreferenced object")]
            if objects:
                self.fail(f"kmemleak: {len(objects)} unreferenced objects "
                          f"({leaks}):", objects[:10])
            else:
                self.ok("kmemleak: no unreferenced object after the tests")
        stats = os.path.join(results, "lockdep_stats.txt")
        on = None
        if os.path.exists(stats):
            with open(stats, encoding="utf-8") as f:
                on = next((line.split()[-1] for line in f
                           if line.strip().startswith("debug_locks:")), None)
        if on == "1":
            self.ok("lockdep: still on at the end of the job")
        else:
            self.fail("lockdep: off at the end of the job (a report earlier "
                      "turned it off)" if on == "0" else
                      "lockdep: no /proc/lockdep_stats (is this the debug "
                      "kernel?)")

    def close(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 0 if self.failed == 0 else 1
