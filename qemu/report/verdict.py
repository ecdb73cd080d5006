"""The host's verdict on a guest run: TAP results, the runner's status and
the kernel log, a PASS/FAIL line each, then "N passed, N failed"."""

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
RESULT = re.compile(r"^(not )?ok [0-9]")
TIMESTAMP = re.compile(r"^\[[ 0-9.]*\] ")


def logged_at(line):
    """A kernel log line's time stamp, in seconds; lines without one last."""
    m = re.match(r"^\[ *([0-9]+\.[0-9]+)\] ", line)
    return float(m.group(1)) if m else float("inf")


class Verdict:
    def __init__(self):
        self.passed = self.failed = 0

    def ok(self, text):
        self.passed += 1
        print(f"PASS {text}")

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
        elif not self.from_boot(dmesg):
            # The lines below the console's loglevel are only in dmesg.
            self.fail(f"kernel log: {dmesg} does not begin with the boot: "
                      "the log buffer wrapped (qemu/run's log_buf_len)")
        elif not hits:
            self.ok("kernel log: no WARN, BUG, oops, hung task, soft lockup, "
                    "RCU stall, VM_FAULT_OOM leaked, ext4 error or kmemleak "
                    "line; dmesg holds the whole boot")
        else:
            first = min(hits, key=logged_at)
            self.fail(f"kernel log: {len(hits)} bad lines:",
                      sorted(hits)[:20] + self.report_of(run_dir, first))

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
