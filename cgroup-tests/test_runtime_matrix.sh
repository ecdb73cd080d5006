#!/bin/bash
# One OCI bundle under both runtimes of Debian 12, crun 1.8.1 and runc
# 1.1.5, each with the cgroupfs and the systemd cgroup driver: the
# runtime x cgroup manager x policy matrix.
#
# - memory.alloc_retries from linux.resources.unified lands in the
#   container's cgroup at 0, 2 and max (runc under systemd writes it into
#   the scope, crun into the scope's container/ child: the cgroup of the
#   container's process is what is read), and runc's in the scope is
#   still there after systemctl daemon-reload and daemon-reexec, which
#   re-apply every unit's settings (patches/systemd/ 0003 leaves a file
#   no unit assigned alone);
# - a bad value (-3, abc) fails `run` with the kernel's EINVAL and starts
#   no process; what the runtime leaves behind is recorded in
#   leftovers.tsv and is what Documentation/containers.md says, and its
#   cleanup (`delete --force`, rmdir of the cgroup) leaves nothing.
# shellcheck source=cgroup-tests/tap.sh
. "$(dirname "$0")/tap.sh"

containers=${ALLOC_TEST_CONTAINERS:-/job/containers}
out=${ALLOC_TEST_RESULTS:-/run/results}/test_runtime_matrix
work=/run/runtime-matrix
# cgroupfs: beside this test's own cgroup, as run-scenarios does.
cgparent=$(dirname "$(cut -d: -f3 /proc/self/cgroup)")/runtime-matrix
policies=(0 2 max)
bad_values=(-3 abc)

# rt RUNTIME MANAGER ARG...: the runtime with the cgroup manager.
rt() {
	local runtime=$1 manager=$2
	shift 2
	case $runtime/$manager in
	crun/cgroupfs) crun --cgroup-manager=cgroupfs "$@" ;;
	crun/systemd) crun --cgroup-manager=systemd "$@" ;;
	runc/cgroupfs) runc "$@" ;;
	runc/systemd) runc --systemd-cgroup "$@" ;;
	esac
}

# cgroups_path MANAGER ID: linux.cgroupsPath for the manager.
cgroups_path() {
	if [ "$1" = systemd ]; then
		echo "system.slice:runtime-matrix:$2"
	else
		echo "$cgparent/$2"
	fi
}

# cgroup_dir MANAGER ID: the container's cgroup directory as named by
# its cgroupsPath (for systemd, the scope).
cgroup_dir() {
	if [ "$1" = systemd ]; then
		echo "/sys/fs/cgroup/system.slice/runtime-matrix-$2.scope"
	else
		echo "/sys/fs/cgroup$cgparent/$2"
	fi
}

# bundle MANAGER ID POLICY ARG...: the bundle of container ID in
# $work/ID: the project's bundle.json with the static workloads' root,
# running ARG..., its results in $work/ID/results.
bundle() {
	local manager=$1 id=$2 policy=$3 dir=$work/$2
	shift 3
	rm -rf "$dir"
	mkdir -p "$dir/results"
	jq --arg root "$containers/rootfs" --arg path "$(cgroups_path "$manager" "$id")" \
		--arg policy "$policy" --arg results "$dir/results" \
		--argjson args "$(printf '%s\n' "$@" | jq -R . | jq -s .)" \
		'.process.args = $args | .root.path = $root
		 | .linux.cgroupsPath = $path
		 | .linux.resources.unified["memory.alloc_retries"] = $policy
		 | (.mounts[] | select(.destination == "/results")).source = $results' \
		"$containers/bundle.json" > "$dir/config.json"
}

# setup: the cgroupfs containers' parent, with the memory controller.
setup() {
	local dir=/sys/fs/cgroup$cgparent
	mkdir -p "$dir" "$out"
	echo +memory > "$dir/../cgroup.subtree_control"
	echo +memory > "$dir/cgroup.subtree_control"
}

# policies_land RUNTIME MANAGER
policies_land() {
	local runtime=$1 manager=$2 id p pid cg
	setup
	for p in "${policies[@]}"; do
		id=$runtime-$manager-$p
		# shellcheck disable=SC2064 # this container's
		trap "cleanup $runtime $manager $id" EXIT
		bundle "$manager" "$id" "$p" /bin/pause
		rt "$runtime" "$manager" create --bundle "$work/$id" "$id" \
			< /dev/null > "$work/$id/create.log" 2>&1 ||
			{ run cat "$work/$id/create.log"; return 1; }
		pid=$(rt "$runtime" "$manager" state "$id" | jq -r .pid)
		cg=/sys/fs/cgroup$(cut -d: -f3 "/proc/$pid/cgroup")
		diag "$runtime/$manager $p: ${cg#/sys/fs/cgroup}"
		assert_file "$cg/memory.alloc_retries" "$p"
		assert_file "$cg/memory.alloc_retries.effective" "$p"
		if [ "$runtime/$manager" = runc/systemd ]; then
			# What patches/systemd/ 0003 is for: runc's value is in
			# the scope, whose settings systemd re-applies (crun's is
			# in a child systemd never writes).
			systemd_reapply daemon-reload "$cg"
			assert_file "$cg/memory.alloc_retries" "$p"
			systemd_reapply daemon-reexec "$cg"
			assert_file "$cg/memory.alloc_retries" "$p"
		fi
		# runc 1.1.5 removes the cgroup right after its SIGKILL and
		# can find it still busy (EBUSY): the cleanup waits for it.
		rt "$runtime" "$manager" delete --force "$id" 2>&1 |
			sed 's/^/#   /' || true
		[ ! -d "$cg" ] || diag "$runtime/$manager $p: delete left ${cg#/sys/fs/cgroup}"
		cleanup "$runtime" "$manager" "$id"
		if [ -d "$cg" ]; then
			diag "$runtime/$manager $p: $cg is left after the cleanup"
			return 1
		fi
	done
}

# leftovers RUNTIME MANAGER ID: what is left of container ID: "state",
# "cgroup" and "scope" (a loaded systemd unit), or "nothing".
leftovers() {
	local runtime=$1 manager=$2 id=$3 left=()
	rt "$runtime" "$manager" state "$id" > /dev/null 2>&1 && left+=(state)
	[ ! -d "$(cgroup_dir "$manager" "$id")" ] || left+=(cgroup)
	[ "$manager" != systemd ] ||
		[ "$(systemctl show -P LoadState "runtime-matrix-$id.scope")" = not-found ] ||
		left+=(scope)
	echo "${left[*]:-nothing}"
}

# cleanup RUNTIME MANAGER ID: the cleanup of Documentation/containers.md
# after a container that failed to start: the runtime's state, the
# cgroup (and under systemd the scope) it may leave.
cleanup() {
	local runtime=$1 manager=$2 id=$3 cg
	if rt "$runtime" "$manager" state "$id" > /dev/null 2>&1; then
		run rt "$runtime" "$manager" delete --force "$id"
	fi
	if [ "$manager" = systemd ]; then
		systemctl stop "runtime-matrix-$id.scope" 2>/dev/null || true
		systemctl reset-failed "runtime-matrix-$id.scope" 2>/dev/null || true
	fi
	for cg in "$(cgroup_dir "$manager" "$id")/container" "$(cgroup_dir "$manager" "$id")"; do
		[ -d "$cg" ] || continue
		# Its killed processes may still be exiting.
		wait_for 10 no_procs "$cg" || true
		rmdir "$cg" 2>/dev/null || true
	done
}

# no_procs CGROUP: no process in CGROUP, or no CGROUP.
no_procs() {
	[ -z "$(cat "$1/cgroup.procs" 2> /dev/null)" ]
}

# expected_leftovers RUNTIME MANAGER: what a failed start leaves, as
# measured with crun 1.8.1 and runc 1.1.5 (Documentation/containers.md).
expected_leftovers() {
	if [ "$1/$2" = crun/cgroupfs ]; then echo cgroup; else echo nothing; fi
}

# bad_values_start_nothing RUNTIME MANAGER
bad_values_start_nothing() {
	local runtime=$1 manager=$2 id v left cg
	setup
	for v in "${bad_values[@]}"; do
		id=$runtime-$manager-bad${v//[^a-z0-9]/}
		# shellcheck disable=SC2064 # this container's
		trap "cleanup $runtime $manager $id" EXIT
		# Its process would write its result file at once.
		bundle "$manager" "$id" "$v" /bin/legacy --seconds 1 \
			--result /results/result.json
		if rt "$runtime" "$manager" run --bundle "$work/$id" "$id" \
			< /dev/null > "$work/$id/run.log" 2>&1; then
			diag "$runtime/$manager $v: run did not fail"
			return 1
		fi
		run cat "$work/$id/run.log"
		assert_grep memory.alloc_retries "$work/$id/run.log"
		grep -qi 'invalid argument' "$work/$id/run.log" ||
			{ diag "$runtime/$manager $v: not EINVAL"; return 1; }
		if [ -e "$work/$id/results/result.json" ]; then
			diag "$runtime/$manager $v: the container's process ran"
			return 1
		fi
		# systemd removes an emptied scope in the background: what is
		# left is read once it has had a second.
		sleep 1
		left=$(leftovers "$runtime" "$manager" "$id")
		record_leftovers "$out/leftovers.tsv" "$(version_of "$runtime")" \
			"$manager" "$v" "$left"
		diag "$runtime/$manager $v: left behind: $left"
		# What Documentation/containers.md says each leaves.
		assert_eq "$left" "$(expected_leftovers "$runtime" "$manager")" \
			"$runtime/$manager $v: left behind"
		cleanup "$runtime" "$manager" "$id"
		assert_eq "$(leftovers "$runtime" "$manager" "$id")" nothing \
			"$runtime/$manager $v: left after the cleanup"
	done
}

crun_cgroupfs() { policies_land crun cgroupfs; bad_values_start_nothing crun cgroupfs; }
crun_systemd() { policies_land crun systemd; bad_values_start_nothing crun systemd; }
runc_cgroupfs() { policies_land runc cgroupfs; bad_values_start_nothing runc cgroupfs; }
runc_systemd() { policies_land runc systemd; bad_values_start_nothing runc systemd; }

rm -rf "$out"
tap_run crun_cgroupfs crun_systemd runc_cgroupfs runc_systemd
