# The one entry point.  `make check` runs the tests, `make demo` the main
# job; README.md lists every target.  Everything built lands in build/
# (git-ignored); compiler output is cached by ccache in ~/.cache/ccache.
SHELL := /bin/bash
.DELETE_ON_ERROR:
.SUFFIXES:

BUILD := $(CURDIR)/build
KSRC := $(BUILD)/linux
BZIMAGE := $(BUILD)/kernel-obj/arch/x86/boot/bzImage
BZIMAGE_DEBUG := $(BUILD)/debug/kernel-obj/arch/x86/boot/bzImage
BZIMAGE_SWEEP := $(BUILD)/sweep/kernel-obj/arch/x86/boot/bzImage
ROOTFS := $(BUILD)/guest/rootfs
IMAGE := $(BUILD)/guest/rootfs.img
PROGS := $(BUILD)/cgroup-tests
CONTAINERS := $(BUILD)/containers
# Changes only when the staged systemd build does (qemu/build/systemd).
SYSTEMD_SUM := $(BUILD)/systemd/stage.sum

# The series' own cgroup kselftests (tools/testing/selftests/cgroup in the
# kernel tree), built by their Makefile beside the guest programs.
KSELFTESTS := test_alloc_retries
# The tree's own cgroup selftests, run by cgroup-tests/test_upstream_selftests
# (catalogue.json, "upstream_selftests"); read when progs runs, after deps.
UPSTREAM_SELFTESTS = $(shell python3 -c 'import json; \
	print(*json.load(open("catalogue.json"))["upstream_selftests"]["programs"])')
KSELFTEST_DIR := $(KSRC)/tools/testing/selftests/cgroup
ALL_TESTS := $(sort $(basename $(notdir $(filter-out %/test_util.c,\
	$(wildcard cgroup-tests/test_*.c cgroup-tests/test_*.sh)))) $(KSELFTESTS))
TESTS ?= $(ALL_TESTS)
# The series' KUnit suites, run by the guest kernel at boot.
KUNIT_SUITES := alloc_retry
ACCEL ?= auto

# Bad input stops make before it changes anything.
unknown := $(filter-out $(ALL_TESTS),$(TESTS))
ifneq ($(unknown),)
$(error TESTS: unknown test "$(unknown)"; the tests are: $(ALL_TESTS))
endif
ifeq ($(strip $(TESTS)),)
$(error TESTS is empty; the tests are: $(ALL_TESTS))
endif
# Runs of each counted case of the lockup reproducer and of the ordinary
# OOMs in make demo; at least 3, because test_ordinary_oom compares the
# median time to a kill at a limit with the range of the times at max.
LOCKUP_REPEAT ?= 20
ifeq ($(shell [ "$(LOCKUP_REPEAT)" -ge 3 ] 2>/dev/null && [ "$(LOCKUP_REPEAT)" -le 1000 ] 2>/dev/null && echo ok),)
$(error LOCKUP_REPEAT must be a count from 3 to 1000 (test_ordinary_oom compares a median with a range of runs), not "$(LOCKUP_REPEAT)")
endif
export LOCKUP_REPEAT
# Rounds of make storm (and of the storm in make check-debug); at least
# ten, for a lockup run and the memcg rounds the writer meets its limit in.
STORM_ROUNDS ?= 100
ifeq ($(shell [ "$(STORM_ROUNDS)" -ge 10 ] 2>/dev/null && [ "$(STORM_ROUNDS)" -le 1000 ] 2>/dev/null && echo ok),)
$(error STORM_ROUNDS must be a count from 10 to 1000, not "$(STORM_ROUNDS)")
endif
export STORM_ROUNDS
# Boots of each kernel, stock and patched, in make bench.
BENCH_BOOTS ?= 3
ifeq ($(shell [ "$(BENCH_BOOTS)" -ge 3 ] 2>/dev/null && [ "$(BENCH_BOOTS)" -le 50 ] 2>/dev/null && echo ok),)
$(error BENCH_BOOTS must be a count from 3 to 50, not "$(BENCH_BOOTS)")
endif
export BENCH_BOOTS
ifeq ($(filter auto tcg,$(ACCEL)),)
$(error ACCEL must be "auto" (KVM if a probe boot works, else TCG) or "tcg", not "$(ACCEL)")
endif
export ACCEL
export ACCEL_CACHE := $(BUILD)/accel
# Each step's time (qemu/timed), for make check's timing table: make
# check starts the file, every step adds its line.
export TIMES := $(BUILD)/times.tsv
TIMED := qemu/timed

.PHONY: all check check-start guest-parts check-debug storm sweep demo shell deps kernel-source kernel kernel-debug kernel-sweep rootfs systemd image progs containers bisect lint fastpath bench cover-letter readme clean help FORCE

all: check

help: ## this list
	@sed -n 's/^\([a-z-]*\):.*## \(.*\)/make \1\t\2/p' Makefile

deps: ## install missing host packages (apt-get)
	@$(TIMED) deps qemu/build/install-deps

kernel-source: deps ## unpack linux-source-6.12 and apply patches/linux/
	@$(TIMED) kernel-source qemu/build/kernel-source

kernel: kernel-source ## build the patched kernel's bzImage
	@$(TIMED) kernel qemu/build/kernel

# Needs only the tree: a cold make check-debug does not build the other
# kernel.
kernel-debug: kernel-source ## the same with lockdep, KASAN, kmemleak and the other checkers (qemu/build/kernel-debug.config)
	@qemu/build/kernel debug

kernel-sweep: kernel-source ## the same with fault injection for the retry limit (qemu/build/kernel-sweep.config), for make sweep
	@qemu/build/kernel sweep

$(ROOTFS)/.done: qemu/build/rootfs qemu/build/apt-sources | deps
	@$(TIMED) rootfs qemu/build/rootfs $(ROOTFS)
	@touch $@

rootfs: $(ROOTFS)/.done ## the cached Debian bookworm tree

# Always run; it rewrites $(SYSTEMD_SUM) only when the stage changed.
$(SYSTEMD_SUM): $(ROOTFS)/.done FORCE
	@$(TIMED) systemd qemu/build/systemd $(ROOTFS)

systemd: $(SYSTEMD_SUM) ## fetch Debian's systemd source, apply patches/systemd/, build PID 1, systemctl, systemd-run

$(IMAGE): $(ROOTFS)/.done $(SYSTEMD_SUM) qemu/build/image $(shell find qemu/guest/root -type f)
	@$(TIMED) image qemu/build/image $(ROOTFS) $(BUILD)/systemd/stage $@

image: $(IMAGE) ## the guest root disk

# The guest programs build against the unpacked kernel tree's kselftest
# harness; the series' own kselftests are built by their Makefile in that
# tree.
progs: kernel-source ## the guest programs in cgroup-tests/, the series' cgroup kselftests and the tree's own
	@$(TIMED) progs $(MAKE) -s -C cgroup-tests KSRC=$(KSRC) O=$(PROGS)
	@mkdir -p $(PROGS) && $(TIMED) kselftests $(MAKE) -s -C $(KSELFTEST_DIR) OUTPUT=$(PROGS) \
		$(addprefix $(PROGS)/,$(KSELFTESTS) $(UPSTREAM_SELFTESTS))

# Each prefix of the series must build: the bisectability of the series.
bisect: deps ## build the kernel at every patch of the series, then the whole series
	@n=$$(ls patches/linux/*.patch | grep -vc /0000-cover-letter.patch); for k in $$(seq 1 $$n); do \
		echo "bisect: patches 1..$$k of $$n"; \
		SERIES_UPTO=$$k qemu/build/kernel-source && SERIES_UPTO=$$k qemu/build/kernel || exit 1; \
	done

containers: deps ## the container workloads, bundle template and scenario runner
	@$(TIMED) containers $(MAKE) -s -C container-images O=$(CONTAINERS)

lint: kernel-source ## checkpatch --strict and shellcheck, as TAP
	@qemu/checks/lint $(KSRC)

# The tables come from the last make demo and make bench.
cover-letter: kernel-source ## write patches/linux/0000-cover-letter.patch from patches/cover-letter.in and the tables of make demo and make bench
	@qemu/report/cover-letter $(KSRC) $(BUILD)/demo/report $(BUILD)/bench patches/linux/0000-cover-letter.patch

readme: ## write the tables of README.md and Documentation/containers.md from the last make demo, make bench and make check
	@qemu/report/report readme . $(BUILD)/demo $(BUILD)/bench $(BUILD)/check

fastpath: kernel ## compare the fast paths' machine code with the unpatched tree
	@qemu/checks/compare-fastpath

# boot MODE DIR TESTS [KERNEL] [DATA_DISK]: a job disk for MODE, one boot
# of KERNEL (default: BZIMAGE) with DATA_DISK as /dev/vdd if given,
# results in DIR.
define boot
	@rm -rf $(2) && mkdir -p $(2)/host
	@qemu/build/job-disk $(2)/job.img $(1) $(PROGS) $(CONTAINERS) $(3)
	@DATA_DISK=$(5) $(TIMED) guest qemu/run $(or $(4),$(BZIMAGE)) $(IMAGE) $(2)/job.img $(2) || true
endef

# storm_boots DIR KERNEL: the storm (cgroup-tests/storm.c) with its writer
# on a fresh ext4 data disk, then a clean reboot of the same disk that
# checks it; results in DIR/storm and DIR/reboot, verdicts last.
define storm_boots
	@mkdir -p $(1) && rm -f $(1)/data.img && truncate -s 1G $(1)/data.img && \
		mke2fs -q -t ext4 -L storm-data $(1)/data.img
	$(call boot,tests,$(1)/storm,storm,$(2),$(1)/data.img)
	$(call boot,tests,$(1)/reboot,storm-reboot-check,$(2),$(1)/data.img)
endef

# test_oom_lockup runs each of its cases several times: about 8 min.
check: export TEST_TIMEOUT = 1200
check: export RUN_TIMEOUT = 2400
check: check-start guest-parts ## boot the guest, run TESTS, print N passed, N failed
	@echo "check: booting the guest for: $(TESTS)"
	$(call boot,tests,$(BUILD)/check,$(TESTS))
	@echo "check: static checks (checkpatch --strict, shellcheck)"
	@$(TIMED) lint qemu/checks/lint $(KSRC) > $(BUILD)/check/host/static.tap
	@echo "check: the verdict's reading of a soft lockup against the host's record"
	@$(TIMED) host-stall qemu/checks/host-stall > $(BUILD)/check/host/host-stall.tap
	@echo "check: the Prometheus rules and collector on the host (promtool)"
	@$(TIMED) prometheus sh -c 'qemu/build/promtool $(BUILD) >&2 && qemu/checks/prometheus $(BUILD)/tools/promtool' > $(BUILD)/check/host/prometheus.tap
	@echo "check: the NRI plugin's value parser and the admission policy on the host"
	@$(TIMED) kubernetes qemu/checks/kubernetes $(BUILD) $(BUILD)/check/host > $(BUILD)/check/host/kubernetes.tap
	@echo "check: systemd unit tests on the host"
	@$(TIMED) systemd-unit-tests qemu/checks/systemd-unit-tests $(BUILD)/systemd/obj $(BUILD)/check/host > $(BUILD)/check/host/systemd.tap
	@cp $(TIMES) $(BUILD)/check/times.tsv
	@qemu/report/report check $(BUILD)/check "$(TESTS)" "$(KUNIT_SUITES)"

# What a boot of the guest needs, two at a time: the root file system
# (mostly downloads) and systemd build beside the kernel, whose last
# steps (the link, objtool) use one CPU.
guest-parts:
	@$(MAKE) --no-print-directory -j2 kernel image progs containers

# The start of make check's timing table: before any of its steps.
check-start:
	@mkdir -p $(BUILD) && printf 'start\t%s\n' "$$(date +%s)" > $(TIMES)

# The same tests and the storm on the debug kernel, which runs them
# several times slower, in a guest with as much usable memory as make
# check's (KASAN's shadow, lockdep and kmemleak keep 130 MiB more: 60291
# pages reserved against 26683).  acpi=noirq: the debug kernel's ACPI
# interpreter runs QEMU's PCI routing method (_PRT) so slowly under TCG
# that it times out, 30 s per PCI device (a boot reached the job after
# 185 s, and after 57 s without it); virtio uses MSI-X, not the routed
# interrupt.  no5lvl: with TCG's 5-level paging, an interrupt that comes
# while identify_cpu() refills the boot CPU's feature bits makes KASAN
# see every direct-map address as wild (Documentation/reliability.md).
# A hung task after 600 s, not 60: under global OOM the debug kernel is
# 10 to 15 times slower, and test_oom_lockup's global case without a
# limit, the lockup itself, keeps its victim blocked until the spree
# reaches the holder: 8 s in make check, more than 122 s here (the test
# ends a run 10 s before the timeout it reads).
check-debug: export TEST_TIMEOUT = 7200
check-debug: export RUN_TIMEOUT = 9000
check-debug: export GUEST_MEM = 672M
check-debug: export GUEST_CMDLINE_EXTRA = acpi=noirq no5lvl sysctl.kernel.hung_task_timeout_secs=600
check-debug: kernel-debug image progs containers ## make check's guest tests, fault injection (fail-nth sweeps, failslab, fail_page_alloc) and make storm on the debug kernel: any lockdep, KASAN, kmemleak or sleep-in-atomic report fails
	@echo "check-debug: booting the debug kernel for: $(TESTS) fault-injection"
	$(call boot,tests,$(BUILD)/check-debug/tests,$(TESTS) fault-injection,$(BZIMAGE_DEBUG))
	@echo "check-debug: the storm on the debug kernel ($(STORM_ROUNDS) rounds)"
	$(call storm_boots,$(BUILD)/check-debug,$(BZIMAGE_DEBUG))
	@rc=0; \
	qemu/report/report check --debug $(BUILD)/check-debug/tests "$(TESTS) fault-injection" "$(KUNIT_SUITES)" || rc=1; \
	qemu/report/report check --debug $(BUILD)/check-debug/storm storm "" || rc=1; \
	qemu/report/report check --debug $(BUILD)/check-debug/reboot storm-reboot-check "" || rc=1; \
	exit $$rc

# 100 rounds: about 15 min here.
storm: export TEST_TIMEOUT = 3600
storm: export RUN_TIMEOUT = 4200
storm: guest-parts ## STORM_ROUNDS rounds of mixed memcg and global OOM with policy rewrites, task moves, cgroups removed under load, the lockup every 10th round and a writer on a persistent ext4 disk; then a reboot that checks the disk
	$(call storm_boots,$(BUILD)/storm,$(BZIMAGE))
	@rc=0; qemu/report/report check $(BUILD)/storm/storm storm "" || rc=1; \
		qemu/report/report check $(BUILD)/storm/reboot storm-reboot-check "" || rc=1; \
		exit $$rc

# Every allocation a limit of 0 can fail in the calls a container makes,
# failed one at a time (cgroup-tests/retry_limit_sweep.c).
sweep: export TEST_TIMEOUT = 3600
sweep: export RUN_TIMEOUT = 4200
sweep: kernel-sweep image progs containers ## fail, one by one, each allocation a limit of 0 can fail in the system calls a container makes; print the table and write it into Documentation/retry-limit-sweep.md
	$(call boot,tests,$(BUILD)/sweep-run,retry_limit_sweep,$(BZIMAGE_SWEEP))
	@qemu/report/sweep $(BUILD)/sweep-run/results/sweep/runs.json Documentation/retry-limit-sweep.md
	@qemu/report/report check $(BUILD)/sweep-run retry_limit_sweep ""

# The lockup runs LOCKUP_REPEAT times per counted case: about 15 s each.
# The stress-ng matrix took 13 min (14 runs of three containers); the
# daemons get 15 min (9 runs).
demo: export RUN_TIMEOUT = $(shell echo $$(( 3600 + 4 * 20 * $(LOCKUP_REPEAT) )))
demo: guest-parts ## boot the guest, run containers with mixed policies under pressure and the lockup reproducer, print the reports
	$(call boot,demo,$(BUILD)/demo)
	@qemu/report/report demo $(BUILD)/demo

# The unpatched kernel (tag base, the patched kernel's .config) and the
# patched one booted in turn, BENCH_BOOTS times each, under
# instruction-counted TCG with one vCPU: a boot took 68 to 99 s (18 to 29 s
# to the job) on a busy 2-core host; the limit leaves room for a slower one.
bench: export RUN_TIMEOUT = 1200
bench: kernel image ## build the unpatched kernel too, boot both in turn under icount, print what the series costs and the stall it saves
	@qemu/build/stock-kernel
	@$(MAKE) -s -C bench O=$(BUILD)/bench/bin
	@qemu/bench $(BZIMAGE) $(BUILD)/stock/kernel-obj/arch/x86/boot/bzImage \
		$(IMAGE) $(BUILD)/bench/bin $(BUILD)/bench

shell: guest-parts ## boot the guest into a root shell on the console
	$(call boot,shell,$(BUILD)/shell)

clean: ## remove build/ (ccache is kept)
	rm -rf $(BUILD)
