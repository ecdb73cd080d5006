#!/bin/bash
# Fault injection over the project's own paths, on the debug kernel of
# make check-debug (CONFIG_FAULT_INJECTION, FAILSLAB, FAIL_PAGE_ALLOC).
#
# fail-nth sweeps (fail_nth_sweep): the n-th slab or page allocation of
# one system call fails, for n = 1, 2, ... until the call makes no n-th;
# after each, the call succeeded and did all it says, or it failed and
# changed nothing:
# - writing memory.alloc_retries and vm.retry_allocation_attempts;
# - reading memory.alloc_retries.effective;
# - mkdir and rmdir of a cgroup under a parent at 3;
# - the systemd D-Bus setter of MemoryAllocRetries=, the faults in PID 1.
# Then a minute of random faults (failslab and fail_page_alloc, 1% of the
# allocations that may sleep, order 0 and up, the page-fault handler
# spared) in the fail-fast service of the container workloads, at 0, 3
# and max, each with a hog under its memory.max: the machine stays up,
# every service completes its minute (it retries every failure it is
# given for want of memory, injected or not), the limit is met at 0 and
# never at max, and the trace events, memory.events and /proc/vmstat
# agree.
# shellcheck source=cgroup-tests/tap.sh
. "$(dirname "$0")/tap.sh"

bin=$(dirname "$0")
debugfs=/sys/kernel/debug
tracing=/sys/kernel/tracing
containers=${ALLOC_TEST_CONTAINERS:-/job/containers}
cgroot=/sys/fs/cgroup$(dirname "$(cut -d: -f3 /proc/self/cgroup)")
top=$cgroot/fault-injection
sysctl=/proc/sys/vm/retry_allocation_attempts
out=${ALLOC_TEST_RESULTS:-/run/results}/fault-injection
unit=fault-injection-probe.service
if [ ! -d "$debugfs/failslab" ] || [ ! -d "$debugfs/fail_page_alloc" ]; then
	echo "Bail out! no failslab or fail_page_alloc in $debugfs: not the debug kernel"
	exit 1
fi
mkdir -p "$out"

# The range of the page-fault handler, exc_page_fault(), from kallsyms:
# "START END" in hex.  Its allocations are never failed by the retry
# limit, and a fault has no ENOMEM to return: an injected failure there
# is the stock "VM_FAULT_OOM leaked" retry, not a path of the series.
fault_handler_range() {
	# kallsyms lists the kernel's text in address order: grep stops at
	# the next symbol (sorting the whole table was the step a debug-kernel
	# run sat in for minutes).
	grep -m1 -A1 ' exc_page_fault$' /proc/kallsyms |
		awk '{ printf "0x%s%s", $1, NR == 1 ? " " : "\n" }'
}

# Every slab and page allocation may be chosen, those that may sleep
# too, order 0 up, but those of the page-fault handler; no log line per
# injected fault (the sweeps count them), but in the PID 1 sweep.  The
# range also keeps fail-nth off the faults of a system call's copy from
# user memory (EFAULT, not a path of the series) and of PID 1's own
# memory.
read -r -a fault_handler < <(fault_handler_range)
if [ "${#fault_handler[@]}" != 2 ]; then
	echo "Bail out! no exc_page_fault in /proc/kallsyms"
	exit 1
fi
echo "# sparing exc_page_fault() at ${fault_handler[*]}"
for attr in failslab fail_page_alloc; do
	echo N > "$debugfs/$attr/ignore-gfp-wait"
	echo 0 > "$debugfs/$attr/verbose"
	echo "${fault_handler[0]}" > "$debugfs/$attr/reject-start"
	echo "${fault_handler[1]}" > "$debugfs/$attr/reject-end"
done
echo 0 > "$debugfs/fail_page_alloc/min-order"
echo N > "$debugfs/fail_page_alloc/ignore-gfp-highmem"
trap 'for attr in failslab fail_page_alloc; do
		echo 0 > "$debugfs/$attr/reject-start"
		echo 0 > "$debugfs/$attr/reject-end"
	done' EXIT

make_top() {
	mkdir "$top"
	echo +memory > "$top/cgroup.subtree_control"
}

sweep_memory_alloc_retries_write() {
	make_top
	trap 'rmdir "$top"' EXIT
	run "$bin/fail_nth_sweep" write "$top/memory.alloc_retries" 5
}

sweep_sysctl_write() {
	run "$bin/fail_nth_sweep" write "$sysctl" 7
	assert_file "$sysctl" -1
}

sweep_effective_read() {
	make_top
	mkdir "$top/child"
	trap 'rmdir "$top/child" "$top"' EXIT
	echo 3 > "$top/memory.alloc_retries"
	run "$bin/fail_nth_sweep" read "$top/child/memory.alloc_retries.effective"
}

sweep_cgroup_mkdir() {
	make_top
	trap 'rmdir "$top/fail-nth" 2>/dev/null || true; rmdir "$top"' EXIT
	echo 3 > "$top/memory.alloc_retries"
	run "$bin/fail_nth_sweep" mkdir "$top"
}

sweep_cgroup_rmdir() {
	make_top
	trap 'rmdir "$top/fail-nth" 2>/dev/null || true; rmdir "$top"' EXIT
	echo 3 > "$top/memory.alloc_retries"
	run "$bin/fail_nth_sweep" rmdir "$top"
}

# The sweep tells where in PID 1 each fault was from the stack the kernel
# logs with it (verbose=2), kept off the console: some 150 stacks, at the
# serial port's pace, in PID 1's time.
sweep_systemd_setter() {
	local cg attr
	run systemd-run --unit="$unit" -p MemoryAllocRetries=infinity sleep infinity
	# Not local: the EXIT trap runs once the function has returned.
	read -r console _ < /proc/sys/kernel/printk
	# The console and verbose first: a stop that fails (a PID 1 the sweep
	# broke) ends the trap under set -e.
	trap 'echo "$console" > /proc/sys/kernel/printk
		for attr in failslab fail_page_alloc; do
			echo 0 > "$debugfs/$attr/verbose"
		done
		systemctl stop "$unit"' EXIT
	echo 4 > /proc/sys/kernel/printk
	for attr in failslab fail_page_alloc; do
		echo 2 > "$debugfs/$attr/verbose"
	done
	cg=/sys/fs/cgroup$(systemctl show -P ControlGroup "$unit")
	run "$bin/fail_nth_sweep" pid1 "$unit" 4 "$cg/memory.alloc_retries"
}

# failfast POLICY: the fail-fast service and a hog in one cgroup under
# $top at POLICY with memory.max 32M, as in a container (the service's
# file on a tmpfs /tmp of its own, as the bundle's); their pids added to
# services and hogs.  The hog comes second and fills what the service
# leaves: a service exec'd into a full cgroup at 0 meets the limit before
# it runs.  The faults reach the service once it runs (its result file
# says "running"), not its execve(), whose failure is the shell's.
failfast() {
	local cg=$top/$1 result=$out/failfast-$1.json deadline
	mkdir "$cg"
	echo "$1" > "$cg/memory.alloc_retries"
	echo 32M > "$cg/memory.max"
	# shellcheck disable=SC2016 # expanded by the inner shell
	unshare -m sh -c 'mount -t tmpfs -o size=64m tmpfs /tmp
		echo $$ > "$0/cgroup.procs"
		exec "$1" --seconds 60 --result "$2"' \
		"$cg" "$containers/rootfs/bin/failfast" "$result" &
	services+=("$!")
	# 30 s by the clock: a jq takes a while on the debug kernel.
	deadline=$((SECONDS + 30))
	until grep -qs '"outcome": "running"' "$result" ||
		[ "$SECONDS" -ge "$deadline" ]; do
		sleep 0.1
	done
	assert_jq "$result" '.outcome == "running"'
	echo 1 > "/proc/${services[-1]}/make-it-fail"
	# shellcheck disable=SC2016 # expanded by the inner shell
	sh -c 'echo $$ > "$0/cgroup.procs"; exec "$1" --result "$2"' \
		"$cg" "$containers/rootfs/bin/hog" "$out/hog-$1.json" &
	hogs+=("$!")
}

workloads_under_random_faults() {
	local p i vm_before trace_lines events=0 vm at_0 status
	# Not local: the EXIT trap runs once the function has returned.
	hogs=() services=()
	make_top
	trap 'for attr in failslab fail_page_alloc; do
			echo 0 > "$debugfs/$attr/probability"
		done
		kill "${hogs[@]}" "${services[@]}" 2>/dev/null || true
		wait
		for p in 0 3 max; do
			rmdir "$top/$p" 2>/dev/null || true
		done
		rmdir "$top"' EXIT
	# Each step said as it comes: where a run that never ends got to.
	for attr in failslab fail_page_alloc; do
		echo Y > "$debugfs/$attr/task-filter"
		echo 1 > "$debugfs/$attr/interval"
		echo -1 > "$debugfs/$attr/times"
		echo 1 > "$debugfs/$attr/probability"
	done
	: > "$tracing/trace"
	vm_before=$(sed -n 's/^alloc_retry_fail //p' /proc/vmstat)
	for p in 0 3 max; do
		failfast "$p"
		diag "the service at $p runs with faults (pid ${services[-1]})"
	done
	# The services end by themselves after their 60 s, then the hogs; one
	# still there after 2 minutes is stuck, and says where.
	for i in 0 1 2; do
		status=0
		if ! wait_for 120 ended "${services[$i]}"; then
			diag "service ${services[$i]} stuck:"
			say_tasks "${services[$i]}"
			kill -KILL "${services[$i]}"
		fi
		wait "${services[$i]}" || status=$?
		# An injected failure is one the service retries: it completes.
		assert_eq "$status" 0 \
			"the service at $(echo 0 3 max | cut -d' ' -f$((i + 1)))'s exit status"
	done
	kill -TERM "${hogs[@]}"
	wait "${hogs[@]}" || true
	for attr in failslab fail_page_alloc; do
		echo 0 > "$debugfs/$attr/probability"
	done
	for p in 0 3 max; do
		# Its last word, not the "running" of its start.
		diag "failfast at $p: $(jq -c '{outcome, error, operations, enomem, enfile, enobufs, enospc}' "$out/failfast-$p.json")"
		assert_jq "$out/failfast-$p.json" '.outcome == "completed"'
		events=$((events + $(sed -n 's/^alloc_retry_fail //p' "$top/$p/memory.events")))
	done
	# The limit was met at 0, and never at max.
	at_0=$(sed -n 's/^alloc_retry_fail //p' "$top/0/memory.events")
	assert_eq "$([ "$at_0" -gt 0 ] && echo met || echo "not met")" met \
		"the limit at 0 (alloc_retry_fail $at_0)"
	assert_eq "$(sed -n 's/^alloc_retry_fail //p' "$top/max/memory.events")" 0 \
		"alloc_retry_fail at max"
	vm=$(( $(sed -n 's/^alloc_retry_fail //p' /proc/vmstat) - vm_before ))
	trace_lines=$(grep -c 'alloc_retry_fail: ' "$tracing/trace" || true)
	diag "alloc_retry_fail: $events in memory.events, $vm in /proc/vmstat, $trace_lines trace events"
	assert_eq "$vm" "$events" "/proc/vmstat against memory.events"
	assert_eq "$trace_lines" "$events" "the trace against memory.events"
}

# The faults in PID 1 last: a PID 1 they broke would break the others.
tap_run sweep_memory_alloc_retries_write sweep_sysctl_write \
	sweep_effective_read sweep_cgroup_mkdir sweep_cgroup_rmdir \
	workloads_under_random_faults sweep_systemd_setter
