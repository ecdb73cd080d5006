#!/bin/bash
# Debian's daemons under memory pressure, at max and at 0: PostgreSQL
# (pgbench), nginx (wrk) and Redis (redis-benchmark), each in a crun
# container from a plain OCI bundle with a hog inside, run once per
# policy of catalogue.json's daemons.check_policies, for its check_seconds
# of load, by the project's runner (container-images/run-daemons), which
# restarts a container that exits with a failure as systemd's
# Restart=on-failure would.  Asserted on every run, never timings:
# - each daemon served, and serves again once the pressure is gone;
# - at max no daemon needed a restart, at 0 one at most (PostgreSQL's
#   postmaster exits when the checkpoint that ends its crash recovery
#   cannot write: a supervisor's restart finishes the recovery);
# - the hog's pressure reached the OOM killer, and every victim was one
#   of the hog's fillers (they run at oom_score_adj 1000: the designated
#   victims), so the daemon lost no process at either policy;
# - the data written before the pressure is whole afterwards (pgbench's
#   balances, the page nginx serves, Redis's seeded keys);
# - at max the limit failed nothing, no client saw an error (a slow
#   answer, a timeout, is not one: at max a request may wait) and no
#   daemon needed a crash recovery;
# - at 0 any client error comes with an allocation failure the limit
#   made (alloc_retry_fail), which the daemon logged;
# - nothing is left behind: no container, no cgroup.
# shellcheck source=cgroup-tests/tap.sh
. "$(dirname "$0")/tap.sh"

runner=${ALLOC_TEST_CONTAINERS:-/job/containers}
out=${ALLOC_TEST_RESULTS:-/run/results}/test_daemons
catalogue=$runner/../catalogue.json
cgroot=/sys/fs/cgroup$(dirname "$(cut -d: -f3 /proc/self/cgroup)")/daemons
seconds=$(jq -r '.daemons.check_seconds' "$catalogue")
mapfile -t runs < <(jq -r '.daemons as $d | $d.list | keys_unsorted[] as $n
	| $d.check_policies[] | "\($n):\(.)"' "$catalogue")
if [ "${#runs[@]}" = 0 ]; then
	echo "Bail out! no daemons in $catalogue"
	exit 1
fi

record() {
	echo "$out/${1%%:*}-${1#*:}/daemon.json"
}

# each_run POLICY FILTER: FILTER holds for the record of every run at
# POLICY ("" for every run).
each_run() {
	local r
	for r in "${runs[@]}"; do
		[ -z "$1" ] || [ "${r#*:}" = "$1" ] || continue
		assert_jq "$(record "$r")" "$2"
	done
}

daemons_ran() {
	run "$runner/run-daemons" -s "$seconds" "$out" "${runs[@]}"
	each_run "" '.served'
}

serving_afterwards() {
	each_run "" '.serving_after'
}

restarted_at_most_once_and_only_at_0() {
	each_run max '.restarts == 0'
	each_run 0 '.restarts <= 1'
}

only_the_hog_was_killed() {
	each_run "" '.memory_events.oom_kill > 0
		and (.victims | keys) == ["hog-filler"]
		and .victims["hog-filler"] == .memory_events.oom_kill'
}

data_whole() {
	each_run "" '.data.data_ok == true'
}

at_max_nothing_failed() {
	each_run max '.memory_events.alloc_retry_fail == 0
		and .load.errors == 0 and .log.alloc_failure_lines == 0
		and (.log.crash_recoveries // 0) == 0'
}

at_0_errors_come_from_the_limit() {
	each_run 0 '.load.errors == 0 or
		(.memory_events.alloc_retry_fail > 0
		 and .log.alloc_failure_lines > 0)'
}

nothing_left_behind() {
	assert_eq "$(crun list -q)" "" "crun list"
	assert_eq "$(find "$cgroot" -type d 2>/dev/null)" "" "cgroups left"
	assert_eq "$(findmnt -n -o TARGET /run/containers/guest-root)" "" \
		"the guest root's bind mount"
	assert_eq "$(find /var/tmp/daemons /run/daemons -mindepth 1 \
		-maxdepth 1 2>/dev/null)" "" "bundles and data left"
}

tap_run daemons_ran serving_afterwards restarted_at_most_once_and_only_at_0 \
	only_the_hog_was_killed data_whole at_max_nothing_failed \
	at_0_errors_come_from_the_limit nothing_left_behind
