#!/bin/bash
# The kernel tree's own cgroup selftests (test_core, test_memcontrol,
# test_kmem, test_kill; built by their Makefile, as upstream builds them)
# twice, as upstream runs them, their cgroups under the root:
# - defaults: every knob at its default;
# - limit-0:  vm.retry_allocation_attempts at 0, the limit of the root
#             cgroup (which has no memory.alloc_retries of its own), so
#             the tightest limit of every cgroup the programs make.
# (They cannot run under a cgroup of ours instead: they move themselves
# back into their root, which the no-internal-process rule forbids for
# any cgroup but the real root.)
# What must hold, case by case (catalogue.json, "upstream_selftests"):
# with the defaults every case passes but those that do not pass on stock
# 6.12 in this guest either (each named with the reason; a skip counts as
# not passing); at 0 every case that passes with the defaults passes.
#
# On the debug kernel (make check-debug; the one with /proc/lockdep),
# whose stock result is the same list (qemu/build/stock-kernel --debug),
# the cases the catalogue says are timed for a production kernel's speed
# ("timed_for_production": they wait by the clock for page cache the debug
# kernel may not have read in yet, and fail there on stock too) run and
# are reported, not held to it.
#
# On a kernel without the series it runs the defaults alone and asserts
# that what does not pass is exactly the catalogue's list: the list is
# measured, not typed.  Each program gets 10 minutes.
# shellcheck source=cgroup-tests/tap.sh
. "$(dirname "$0")/tap.sh"

bin=$(dirname "$0")
catalogue=${ALLOC_TEST_CONTAINERS:-/job/containers}/../catalogue.json
out=${ALLOC_TEST_RESULTS:-/run/results}/test_upstream_selftests
mkdir -p "$out"

mapfile -t programs < <(jq -r '.upstream_selftests.programs[]' "$catalogue")
if [ "${#programs[@]}" = 0 ]; then
	echo "Bail out! no upstream_selftests.programs in $catalogue"
	exit 1
fi
# expected LIST: the case names of upstream_selftests.LIST, a line each.
expected() {
	jq -r --arg l "$1" '.upstream_selftests[$l] // {} | keys[]' "$catalogue"
}

# The cases not held on this kernel, a line each.
unheld=
[ ! -e /proc/lockdep ] || unheld=$(expected timed_for_production)
# held: the sorted case names of standard input but the unheld ones.
held() {
	comm -23 - <(printf '%s\n' "$unheld" | sort)
}

# vmstat_fails: /proc/vmstat's alloc_retry_fail (0 without the series).
vmstat_fails() {
	sed -n 's/^alloc_retry_fail //p' /proc/vmstat | grep . || echo 0
}

# run LAYOUT PROGRAM: PROGRAM as upstream runs it, with the OOM score of
# an ordinary task (not the job's -1000: its OOM cases expect to be
# killable) and its output line-buffered (its children would print again
# what a full buffer held when they forked); its TAP and exit status in
# the results.
run_program() {
	local rc=0
	# From the same start each time: the page cache the tests before it
	# left would make its readers reclaim first, which its waits by the
	# clock do not allow for.
	sync
	echo 3 > /proc/sys/vm/drop_caches
	# Its own timeout, within the job's, so that the sysctl is restored.
	(echo 0 > /proc/self/oom_score_adj &&
		exec timeout --signal=KILL 600 stdbuf -oL "$bin/$2") \
		> "$out/$1-$2.tap" 2>&1 || rc=$?
	echo "$rc" > "$out/$1-$2.rc"
}

# cases TAP STATUS: the cases of the upstream TAP file whose result is
# STATUS (pass, fail or skip), a name a line.
cases() {
	case $2 in
	pass) sed -n 's/^ok [0-9]* \([a-z_0-9]*\)$/\1/p' "$1" ;;
	skip) sed -n 's/^ok [0-9]* # SKIP \([a-z_0-9]*\)$/\1/p' "$1" ;;
	fail) sed -n 's/^not ok [0-9]* \([a-z_0-9]*\)$/\1/p' "$1" ;;
	esac
}

sysctl=/proc/sys/vm/retry_allocation_attempts
layouts=(defaults)
if [ -e "$sysctl" ]; then
	layouts+=(limit-0)
	trap 'echo -1 > "$sysctl"' EXIT
fi

# all_cases_of TAP: every case the upstream TAP file reports, a line each.
all_cases_of() {
	grep -E '^(not )?ok [0-9]+ ' "$1" |
		sed 's/^\(not \)\{0,1\}ok [0-9]* \(# SKIP \)\{0,1\}//'
}

# The upstream runs, once; the other cases assert on their results.
# Every program ran to its end in every layout: it exited 0 with no case
# failed, or 1 with some (not killed, not a skip of the whole program),
# and reported the cases it reports with the defaults.
programs_ran_to_the_end() {
	local p layout f rc want fails_before
	fails_before=$(vmstat_fails)
	for p in "${programs[@]}"; do
		diag "running $p: ${layouts[*]}"
		run_program defaults "$p"
		[ -e "$sysctl" ] || continue
		echo 0 > "$sysctl"
		run_program limit-0 "$p"
		echo -1 > "$sysctl"
	done
	[ ! -e "$sysctl" ] || echo $(( $(vmstat_fails) - fails_before )) \
		> "$out/limit-0.alloc_retry_fail"
	for p in "${programs[@]}"; do
		for layout in "${layouts[@]}"; do
			f=$out/$layout-$p.tap
			rc=$(cat "$out/$layout-$p.rc")
			want=0
			[ -z "$(cases "$f" fail)" ] || want=1
			if [ "$rc" != "$want" ] || [ -z "$(all_cases_of "$f")" ] ||
			   [ "$(all_cases_of "$f")" != "$(all_cases_of "$out/defaults-$p.tap")" ]; then
				diag "$layout $p: exit status $rc, cases not those of the defaults run:"
				sed 's/^/#   /' "$f"
				return 1
			fi
		done
	done
}

# layout_cases LAYOUT STATUS: the cases of every program run in LAYOUT
# whose result is STATUS, sorted.
layout_cases() {
	local p
	for p in "${programs[@]}"; do
		cases "$out/$1-$p.tap" "$2"
	done | sort
}

# result_of LAYOUT CASE: passed, failed or skipped.
result_of() {
	local status
	for status in pass:passed fail:failed skip:skipped; do
		if [ -n "$(layout_cases "$1" "${status%%:*}" | sed -n "/^$2\$/p")" ]; then
			echo "${status#*:}"
			return
		fi
	done
	echo "not reported"
}

# words: standard input's lines on one line, for a message.
words() {
	tr '\n' ' ' | sed 's/ $//'
}

# With the defaults: what does not pass (fails or skips) is what does not
# pass on stock 6.12, no more.  On stock itself (no series), no less
# either.
defaults_pass_what_passes_on_stock() {
	local not_passing c layout
	not_passing=$( (layout_cases defaults fail; layout_cases defaults skip) | sort | held)
	diag "defaults: $(layout_cases defaults pass | wc -l) passed; failed: $(layout_cases defaults fail | words); skipped: $(layout_cases defaults skip | words)"
	for c in $unheld; do
		for layout in "${layouts[@]}"; do
			echo "$c $layout $(result_of "$layout" "$c")"
		done
	done > "$out/not-held.txt"
	[ ! -s "$out/not-held.txt" ] ||
		diag "debug kernel, not held (timed for production): $(paste -sd, "$out/not-held.txt" | sed 's/,/, /g')"
	if [ ! -e "$sysctl" ]; then
		assert_eq "$(echo "$not_passing" | words)" \
			"$(expected not_passing_on_stock | sort | held | words)" \
			"stock: the cases that do not pass"
		return
	fi
	assert_eq "$(comm -23 <(echo "$not_passing") <(expected not_passing_on_stock | sort) | words)" \
		"" "cases that pass on stock but not here"
}

# At 0: what passes with the defaults passes.  (Their OOM cases allocate
# in page faults, which the limit leaves alone; how often their system
# calls met it is said, for the record.)
limit_0_passes_what_the_defaults_pass() {
	local lost
	lost=$(comm -23 <(layout_cases defaults pass) <(layout_cases limit-0 pass) | held)
	diag "limit-0: $(layout_cases limit-0 pass | wc -l) passed, lost: $(echo "$lost" | words); alloc_retry_fail +$(cat "$out/limit-0.alloc_retry_fail")"
	assert_eq "$(echo "$lost" | words)" "" "cases that pass with the defaults but not at 0"
}

if [ -e "$sysctl" ]; then
	tap_run programs_ran_to_the_end defaults_pass_what_passes_on_stock \
		limit_0_passes_what_the_defaults_pass
else
	tap_run programs_ran_to_the_end defaults_pass_what_passes_on_stock
fi
