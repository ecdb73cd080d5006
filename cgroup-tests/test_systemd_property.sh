#!/bin/bash
# MemoryAllocRetries=, the systemd unit property of patches/systemd/, in the
# guest's patched systemd: unit files, systemctl set-property (runtime and
# persistent), systemctl show, daemon-reload, systemd-run -p, invalid
# values, PID 1's journal message for allocations failed at the limit, and
# a crun container under a delegated service.
#
# Units go to /run/systemd/system and are removed again; the cases drive
# systemd through systemctl and systemd-run as an operator would and check
# the cgroup files the kernel shows.
# shellcheck source=cgroup-tests/tap.sh
. "$(dirname "$0")/tap.sh"

here=$(cd "$(dirname "$0")" && pwd)
units=/run/systemd/system
system=/sys/fs/cgroup/system.slice
work=/run/alloc-retries-systemd
bin=/job/containers/rootfs/bin
bad_values=(-1 abc 99999999999)

# write_unit NAME LINE...: the unit file NAME, a line per argument.
write_unit() {
	local name=$1
	shift
	printf '%s\n' "$@" > "$units/$name"
}

# remove_units NAME...: stop and forget them.
remove_units() {
	run systemctl stop "$@" || true
	for u in "$@"; do
		rm -f "$units/$u"
	done
	run systemctl daemon-reload
}

# show_is UNIT VALUE: systemctl show's MemoryAllocRetries.
show_is() {
	assert_eq "$(systemctl show -p MemoryAllocRetries "$1")" \
		"MemoryAllocRetries=$2" "systemctl show $1"
}

service_gets_its_value() {
	trap 'remove_units art-zero.service' EXIT
	write_unit art-zero.service '[Service]' 'ExecStart=/bin/sleep 600' \
		'MemoryAllocRetries=0'
	run systemctl daemon-reload
	run systemctl start art-zero.service
	assert_file "$system/art-zero.service/memory.alloc_retries" 0
	assert_file "$system/art-zero.service/memory.alloc_retries.effective" 0
}

slice_limit_applies_to_service_at_infinity() {
	trap 'remove_units art-inf.service art.slice' EXIT
	write_unit art.slice '[Slice]' 'MemoryAllocRetries=2'
	write_unit art-inf.service '[Service]' 'Slice=art.slice' \
		'ExecStart=/bin/sleep 600' 'MemoryAllocRetries=infinity'
	run systemctl daemon-reload
	run systemctl start art-inf.service
	assert_file /sys/fs/cgroup/art.slice/memory.alloc_retries 2
	assert_file /sys/fs/cgroup/art.slice/art-inf.service/memory.alloc_retries max
	assert_file /sys/fs/cgroup/art.slice/art-inf.service/memory.alloc_retries.effective 2
}

# The live unit the next cases change.
live_start() {
	write_unit art-live.service '[Service]' 'ExecStart=/bin/sleep 600'
	run systemctl daemon-reload
	run systemctl start art-live.service
}

live_stop() {
	run systemctl stop art-live.service || true
	run systemctl revert art-live.service || true
	remove_units art-live.service
}

# live_is FILE_VALUE SHOW_VALUE: the cgroup file and systemctl show.
live_is() {
	assert_file "$system/art-live.service/memory.alloc_retries" "$1"
	show_is art-live.service "$2"
}

set_property_runtime() {
	trap live_stop EXIT
	live_start
	live_is max infinity
	run systemctl set-property --runtime art-live.service MemoryAllocRetries=5
	live_is 5 5
	run systemctl daemon-reload
	live_is 5 5
	run test -e /run/systemd/system.control/art-live.service.d/50-MemoryAllocRetries.conf
	run systemctl set-property --runtime art-live.service MemoryAllocRetries=infinity
	live_is max infinity
}

set_property_persistent() {
	local dropin=/etc/systemd/system.control/art-live.service.d/50-MemoryAllocRetries.conf
	trap live_stop EXIT
	live_start
	run systemctl set-property art-live.service MemoryAllocRetries=7
	live_is 7 7
	assert_line MemoryAllocRetries=7 "$dropin"
	run systemctl daemon-reload
	live_is 7 7
	run systemctl restart art-live.service
	live_is 7 7
	live_stop
	trap - EXIT
	# systemctl revert removes the drop-in.
	if [ -e "$dropin" ]; then
		diag "systemctl revert left $dropin"
		return 1
	fi
}

# Rolling back this setting alone: the other settings set-property wrote
# stay (systemctl revert would remove every drop-in of the unit).  Either
# set it to infinity, or remove its own drop-in and reload.
rollback_undoes_only_this() {
	local control=/etc/systemd/system.control/art-live.service.d
	trap live_stop EXIT
	live_start
	run systemctl set-property art-live.service MemoryAllocRetries=7 MemoryHigh=100M
	live_is 7 7
	assert_file "$system/art-live.service/memory.high" 104857600
	run systemctl set-property art-live.service MemoryAllocRetries=infinity
	live_is max infinity
	assert_file "$system/art-live.service/memory.high" 104857600
	run systemctl set-property art-live.service MemoryAllocRetries=7
	live_is 7 7
	run rm "$control/50-MemoryAllocRetries.conf"
	run systemctl daemon-reload
	live_is max infinity
	assert_file "$system/art-live.service/memory.high" 104857600
	run test -e "$control/50-MemoryHigh.conf"
}

# The sysctl from boot: a file in /etc/sysctl.d/ whose line starts with
# "-", which systemd-sysctl skips on a kernel without the key (a stock
# kernel booted to roll back), read here as at boot; and back.
sysctl_d_sets_it_and_a_stock_kernel_ignores_it() {
	local conf=/etc/sysctl.d/90-retry-allocation-attempts.conf
	local knob=/proc/sys/vm/retry_allocation_attempts saved
	saved=$(cat "$knob")
	printf '%s\n' '-vm.retry_allocation_attempts = 5' > "$conf"
	run /usr/lib/systemd/systemd-sysctl "$conf"
	assert_file "$knob" 5
	# What a stock kernel sees: a key it does not have.
	printf '%s\n' '-vm.retry_allocation_attempts_not_here = 5' > "$conf.stock"
	run /usr/lib/systemd/systemd-sysctl "$conf.stock"
	rm -f "$conf" "$conf.stock"
	echo "$saved" > "$knob"
	assert_file "$knob" "$saved"
}

# A unit that does not assign MemoryAllocRetries= leaves the file to
# whoever wrote it: runc under the systemd driver writes the key into the
# scope systemd made for it, and every daemon-reload or daemon-reexec
# re-applies the unit's cgroup settings.  One that assigns it owns it,
# until the assignment goes away.
unassigned_property_leaves_the_file_alone() {
	trap live_stop EXIT
	live_start
	local cg=$system/art-live.service
	echo 0 > "$cg/memory.alloc_retries"
	systemd_reapply daemon-reload "$cg"
	live_is 0 infinity
	systemd_reapply daemon-reexec "$cg"
	live_is 0 infinity
	run systemctl set-property --runtime art-live.service MemoryAllocRetries=5
	echo 0 > "$cg/memory.alloc_retries"
	systemd_reapply daemon-reload "$cg"
	live_is 5 5
	# Undoing the setting takes back what the unit wrote, once.
	run systemctl revert art-live.service
	systemd_reapply daemon-reload "$cg"
	live_is max infinity
	echo 0 > "$cg/memory.alloc_retries"
	systemd_reapply daemon-reload "$cg"
	live_is 0 infinity
}

# A transient unit's setting is its own across daemon-reexec too.
transient_unit_keeps_its_value() {
	local unit=art-transient.service
	trap 'systemctl stop art-transient.service || true' EXIT
	run systemd-run --unit "$unit" -p MemoryAllocRetries=0 /bin/sleep 600
	echo 3 > "$system/$unit/memory.alloc_retries"
	systemd_reapply daemon-reexec "$system/$unit"
	assert_file "$system/$unit/memory.alloc_retries" 0
	show_is "$unit" 0
}

invalid_values_change_nothing() {
	trap live_stop EXIT
	live_start
	run systemctl set-property --runtime art-live.service MemoryAllocRetries=3
	for v in "${bad_values[@]}"; do
		# The client refuses it with a message naming the property.
		systemctl set-property --runtime art-live.service \
			"MemoryAllocRetries=$v" > "$work.out" 2>&1 || true
		assert_grep 'Failed to parse MemoryAllocRetries value' "$work.out"
		assert_fails systemd-run --quiet -p "MemoryAllocRetries=$v" /bin/true
	done
	# PID 1 checks the range itself: a raw D-Bus call.
	assert_fails busctl call org.freedesktop.systemd1 /org/freedesktop/systemd1 \
		org.freedesktop.systemd1.Manager SetUnitProperties 'sba(sv)' \
		art-live.service true 1 MemoryAllocRetries t 99999999999
	live_is 3 3
	rm -f "$work.out"
}

# journal_grep TEXT: a line of this boot's journal has TEXT.
journal_grep() {
	# Not grep -q: journalctl would die of SIGPIPE, and pipefail would
	# fail the pipeline.
	journalctl -b -q --no-pager | grep -F -- "$1" > /dev/null
}

# journal_has TEXT: journald may lag behind PID 1.
journal_has() {
	wait_for 30 journal_grep "$1" && return 0
	diag "no journal line with \"$1\""
	return 1
}

invalid_values_in_unit_file_are_ignored() {
	trap 'remove_units art-bad.service' EXIT
	for v in "${bad_values[@]}"; do
		write_unit art-bad.service '[Service]' 'ExecStart=/bin/sleep 600' \
			"MemoryAllocRetries=$v"
		run systemctl daemon-reload
		# Loading the unit (show does) parses it: a warning with file
		# and line, and the default.
		show_is art-bad.service infinity
		journal_has "art-bad.service:3: Invalid MemoryAllocRetries= value '$v'"
	done
}

# wait_hog_full RESULT PID: until the hog writing RESULT says its memory
# is full (hog.c), while PID runs, 2 minutes of the clock at most (the
# test's assertions then say what failed; a jq can take a second there).
wait_hog_full() {
	local start=$SECONDS
	if ! wait_for 120 hog_full_or_ended "$1" "$2"; then
		diag "the hog was not full after 2 minutes"
	elif hog_full "$1"; then
		diag "the hog was full after $((SECONDS - start)) s"
	fi
}

# hog_full RESULT: the hog writing RESULT says its memory is full.
hog_full() {
	jq -e '.memory_full' "$1" > /dev/null 2>&1
}

# hog_full_or_ended RESULT PID
hog_full_or_ended() {
	hog_full "$1" || ended "$2"
}

# unit_tasks UNIT: the processes in UNIT's cgroup (say_tasks).
unit_tasks() {
	# shellcheck disable=SC2046 # a list of pids
	say_tasks $(cat "$system/$1/cgroup.procs")
}

# watchdog SECONDS: in the background, if the case still runs after
# SECONDS, every user process (say_tasks), wherever the case is stuck.
# Its pid is in $watchdog (not local: the case's EXIT trap, which runs
# after the case's function returned, kills it).  Its sleep does not
# hold the TAP pipe open.
watchdog() {
	{
		sleep "$1" > /dev/null 2>&1
		diag "still running after $1 s; every user process:"
		local p pids=()
		# A kernel thread has no exe.
		for p in /proc/[0-9]*; do
			if [ -e "$p/exe" ]; then pids+=("${p#/proc/}"); fi
		done
		say_tasks "${pids[@]}"
	} &
	watchdog=$!
}

# stop_hog UNIT: SIGTERM to the hog in UNIT, its process named "hog" (its
# fillers are "hog-filler"); it stops its fillers and exits, which must
# take less than a minute.  If it does not, what UNIT's processes are
# doing is said, the hog is killed, and the case fails.
stop_hog() {
	local pid hog='' procs=$system/$1/cgroup.procs start=$SECONDS
	[ -r "$procs" ] || { diag "$1: no cgroup, no hog to stop"; return 0; }
	while read -r pid; do
		[ "$(cat "/proc/$pid/comm" 2> /dev/null)" != hog ] || hog=$pid
	done < "$procs"
	[ -n "$hog" ] || { diag "$1: no hog (it ended before the stop)"; return 0; }
	kill -TERM "$hog" 2> /dev/null || true
	if ! wait_for 60 ended "$hog"; then
		diag "$1: the hog ($hog) did not stop within 60 s of SIGTERM:"
		unit_tasks "$1"
		kill -KILL "$hog" 2> /dev/null || true
		return 1
	fi
	diag "the hog stopped $((SECONDS - start)) s after SIGTERM"
}

# wait_service UNIT PID: the systemd-run --wait of UNIT (PID) ends within
# 2 minutes; if not, what UNIT's processes are doing is said, the unit is
# killed, and the case fails.
wait_service() {
	if ! wait_for 120 ended "$2"; then
		diag "$1: still running 2 minutes after its hog stopped:"
		unit_tasks "$1"
		run systemctl kill --signal=SIGKILL "$1" || true
		wait "$2" || true
		return 1
	fi
	wait "$2"
}

# logged_failures UNIT SINCE: what PID 1's messages for UNIT's
# allocations failed at the retry limit since SINCE (seconds since the
# epoch) add up to (N_ALLOC_RETRY_FAIL=, patches/systemd/0004).
logged_failures() {
	journalctl -b -q --no-pager -o json --since "@$2" \
		MESSAGE_ID=4d609736d5494e36b77e6824d4ea582d UNIT="$1" |
		jq -s 'map(.N_ALLOC_RETRY_FAIL | tonumber) | add // 0'
}

# failures_logged UNIT SINCE COUNT: they add up to COUNT (journald may lag
# behind PID 1).
failures_logged() {
	[ "$(logged_failures "$1" "$2")" = "$3" ]
}

systemd_run_failfast_sees_enomem() {
	local seconds=15 service since failed
	# The service stopped if the case failed before its hog was.
	trap 'kill "$watchdog" 2> /dev/null || true
		systemctl stop art-run.service 2> /dev/null || true; rm -rf "$work"' EXIT
	watchdog 420
	rm -rf "$work"
	mkdir -p "$work"
	: > "$work/start"
	since=$(date +%s)
	# The container-pressure scenario without a container: the fail-fast
	# service and a hog in one transient service under MemoryMax=.
	# OOMPolicy=continue: by default systemd stops a service whose process
	# the OOM killer killed, here a hog filler.
	run systemd-run --wait --quiet --unit art-run -p MemoryAllocRetries=0 \
		-p MemoryMax=32M -p LimitMEMLOCK=1G -p OOMPolicy=continue \
		"$here/unit-failfast-with-hog" "$bin" "$work" "$seconds" &
	service=$!
	# From out here, where nothing runs short: the service's clock starts
	# once the hog's cgroup is full (on the debug kernel filling
	# takes longer than the service runs), and the hog stops a second after
	# it has run, so that the service's last write, its result, finds room.
	wait_hog_full "$work/hog.json" "$service"
	echo go > "$work/start"
	sleep $((seconds + 1))
	stop_hog art-run.service
	wait_service art-run.service "$service"
	assert_jq "$work/result.json" '.enomem > 0 and .outcome == "completed"'
	assert_eq "$(awk '$1 == "alloc_retry_fail" { print ($2 > 0) }' "$work/events")" \
		1 "alloc_retry_fail > 0 in the service's memory.events"
	# PID 1 logged every one of them, in the unit's journal.
	failed=$(awk '$1 == "alloc_retry_fail" { print $2 }' "$work/events")
	wait_for 30 failures_logged art-run.service "$since" "$failed" || true
	assert_eq "$(logged_failures art-run.service "$since")" "$failed" \
		"allocations failed at the limit, as PID 1 logged them for art-run.service"
}

crun_under_delegated_service() {
	trap 'remove_units art-crun.service; rm -rf "$work"' EXIT
	rm -rf "$work"
	mkdir -p "$work/results"
	# The service moves itself into a leaf of its delegated cgroup, then
	# crun puts a container at "max" beside it; the container's effective
	# limit is the service's.
	jq --arg cg /system.slice/art-crun.service/container \
		--arg results "$work/results" '
		.root.path = "/job/containers/rootfs"
		| .process.args = ["/bin/failfast", "--seconds", "5",
				   "--result", "/results/result.json"]
		| (.mounts[] | select(.destination == "/results")).source = $results
		| .linux.cgroupsPath = $cg
		| .linux.resources.memory.limit = 33554432
		| .linux.resources.unified["memory.alloc_retries"] = "max"' \
		/job/containers/bundle.json > "$work/config.json"
	write_unit art-crun.service '[Service]' 'Type=oneshot' 'Delegate=yes' \
		'MemoryAllocRetries=1' 'LimitMEMLOCK=1G' \
		"ExecStart=$here/unit-crun-supervisor $work"
	run systemctl daemon-reload
	if ! run systemctl start art-crun.service; then
		run systemctl status art-crun.service --no-pager || true
		return 1
	fi
	assert_file "$work/effective" 1
	assert_jq "$work/results/result.json" '.outcome == "completed"'
}

# The series' own test in systemd's style (patches/systemd/0005), as
# systemd's test harness runs it: exit status 0, /testok, no /skipped.
systemd_testsuite_77_passes() {
	local t=/usr/lib/systemd/tests/testdata/units/testsuite-77.sh
	rm -f /testok /skipped /failed
	run "$t"
	assert_eq "$(ls /testok /skipped 2> /dev/null)" /testok \
		"what testsuite-77.sh left: /testok and no /skipped"
	rm -f /testok
}

tap_run service_gets_its_value slice_limit_applies_to_service_at_infinity \
	set_property_runtime set_property_persistent rollback_undoes_only_this \
	sysctl_d_sets_it_and_a_stock_kernel_ignores_it \
	unassigned_property_leaves_the_file_alone transient_unit_keeps_its_value \
	invalid_values_change_nothing invalid_values_in_unit_file_are_ignored \
	systemd_run_failfast_sees_enomem crun_under_delegated_service \
	systemd_testsuite_77_passes
