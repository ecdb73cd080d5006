#!/bin/bash
# Containers with mixed memory.alloc_retries policies, run by crun.
#
# The first case runs the container-pressure scenario, its baseline and
# the invalid bundle with the project's runner (container-images/
# run-scenarios); the others assert what must hold on every run, never
# timings, on what the runner recorded (container.json: policy, effective
# limit, memory.events, outcome) and what the workloads wrote
# (results/result.json):
# - under container pressure the fail-fast service at 0 sees ENOMEM, its
#   alloc_retry_fail counter is non-zero, and it runs to the end;
# - in the baseline, every container at max, the same service sees no
#   ENOMEM (nor ENFILE, pipe2's word for it) and no policy failure
#   although its hog was OOM-killed;
# - the legacy worker at max runs to the end in both;
# - a workload's ENOMEM or ENFILE comes with alloc_retry_fail;
# - crun refuses the bundle with "memory.alloc_retries": "-3", starts no
#   process, and nothing is left behind: no container, no cgroup.
# shellcheck source=cgroup-tests/tap.sh
. "$(dirname "$0")/tap.sh"

runner=${ALLOC_TEST_CONTAINERS:-/job/containers}
out=${ALLOC_TEST_RESULTS:-/run/results}/test_containers
# The runner's cgroups: beside this test's own (the job's leaf).
cgroot=/sys/fs/cgroup$(dirname "$(cut -d: -f3 /proc/self/cgroup)")/containers
scenarios=(container-pressure container-pressure-baseline)
# The workload containers of container-pressure, from the catalogue.
mapfile -t workloads < <(jq -r \
	'.scenarios["container-pressure"].containers[].name' \
	"$runner/../catalogue.json")
if [ "${#workloads[@]}" = 0 ]; then
	echo "Bail out! no containers of container-pressure in $runner/../catalogue.json"
	exit 1
fi

scenarios_ran() {
	run "$runner/run-scenarios" "$out" "${scenarios[@]}" invalid
}

failfast_at_0_sees_enomem() {
	local dir=$out/container-pressure/failfast-0
	assert_jq "$dir/container.json" '.policy == "0"
		and .memory_events.alloc_retry_fail > 0
		and .outcome == "ran to the end"'
	assert_jq "$dir/results/result.json" \
		'.enomem > 0 and .outcome == "completed"'
}

failfast_at_max_no_enomem() {
	local dir=$out/container-pressure-baseline/failfast-0
	# Its hog was OOM-killed: the pressure was there.
	assert_jq "$dir/container.json" '.policy == "max"
		and .memory_events.oom_kill > 0
		and .memory_events.alloc_retry_fail == 0
		and .outcome == "ran to the end"'
	assert_jq "$dir/results/result.json" \
		'.enomem == 0 and .enfile == 0 and .outcome == "completed"'
}

legacy_at_max_runs_to_the_end() {
	for s in "${scenarios[@]}"; do
		assert_jq "$out/$s/legacy-max/container.json" '.policy == "max"
			and .memory_events.alloc_retry_fail == 0
			and .outcome == "ran to the end"'
		assert_jq "$out/$s/legacy-max/results/result.json" \
			'.enomem == 0 and .outcome == "completed"'
	done
}

effective_limit_is_the_policy() {
	for s in "${scenarios[@]}"; do
		for c in "${workloads[@]}"; do
			assert_jq "$out/$s/$c/container.json" \
				'.effective.limit == .policy'
		done
	done
}

# Every container left a whole record: the runner's and the workload's.
result_files_are_complete() {
	for s in "${scenarios[@]}"; do
		for c in "${workloads[@]}"; do
			assert_jq "$out/$s/$c/container.json" \
				'has("outcome") and has("memory_events")
				 and has("effective")'
			assert_jq "$out/$s/$c/results/result.json" \
				'has("operations") and has("enomem") and has("enfile")
				 and (.outcome == "completed" or .outcome == "error")'
		done
	done
}

# What a workload saw and what its cgroup counted agree: an ENOMEM or
# ENFILE comes with alloc_retry_fail, whatever the policy.
errors_are_counted_as_the_limit() {
	local dir errors fails
	for s in "${scenarios[@]}"; do
		for c in "${workloads[@]}"; do
			dir=$out/$s/$c
			errors=$(jq '.enomem + .enfile' "$dir/results/result.json")
			fails=$(jq .memory_events.alloc_retry_fail "$dir/container.json")
			if [ "$errors" -gt 0 ] && [ "$fails" = 0 ]; then
				diag "$s/$c: $errors ENOMEM/ENFILE, no alloc_retry_fail"
				return 1
			fi
		done
	done
}

invalid_policy_starts_nothing() {
	local dir=$out/invalid/failfast-x
	assert_jq "$dir/container.json" \
		'.policy == "-3" and .outcome == "did not start"'
	# crun's error names the file and the kernel's EINVAL.
	assert_grep memory.alloc_retries "$dir/crun.log"
	assert_grep 'Invalid argument' "$dir/crun.log"
	if [ -e "$dir/results/result.json" ]; then
		diag "the workload ran: it wrote result.json"
		return 1
	fi
	if [ -e "$cgroot/invalid" ]; then
		diag "$cgroot/invalid is left behind"
		return 1
	fi
	assert_fails crun state invalid-failfast-x
}

nothing_left_behind() {
	assert_eq "$(crun list -q)" "" "crun list"
	assert_eq "$(find "$cgroot" -mindepth 1 -type d)" "" "cgroups left"
}

tap_run scenarios_ran failfast_at_0_sees_enomem failfast_at_max_no_enomem \
	legacy_at_max_runs_to_the_end effective_limit_is_the_policy \
	result_files_are_complete errors_are_counted_as_the_limit invalid_policy_starts_nothing \
	nothing_left_behind
