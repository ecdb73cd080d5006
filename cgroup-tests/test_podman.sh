#!/bin/bash
# podman (Debian's 4.3.1, with crun 1.8.1) and --cgroup-conf, with the
# cgroupfs and the systemd cgroup manager, and the project's precreate
# hook (contrib/podman/) installed as Documentation/containers.md says:
#
# - `podman run --cgroup-conf=memory.alloc_retries=2 --memory=32m` gives
#   the container's cgroup the policy; inside the container the usual
#   tools see it (memory.alloc_retries.effective, memory.events with
#   alloc_retry_fail), and under systemd it survives daemon-reload;
# - at 0, under a hog that fills the container's memory, the fail-fast
#   workload sees ENOMEM and memory.events counts alloc_retry_fail;
# - the hook passes a container without the key, and decides as the
#   kernel parses (values fed to it directly);
# - a bad value (-3, abc) fails, starts no process, and leaves no
#   container, no cgroup, no scope and no crun state.  Without the hook
#   crun fails with EINVAL and, with cgroupfs, leaves the container's
#   cgroup behind (recorded in leftovers.tsv), which the project's
#   cleanup script removes.
# The containers' root (--rootfs) is a directory with the guest's /usr
# mounted read-only, so that podman exec has cat, and the static
# workloads at /workloads; podman's storage is vfs (storage.conf), as the
# guest kernel has no overlayfs.
# shellcheck source=cgroup-tests/tap.sh
. "$(dirname "$0")/tap.sh"

contrib=${ALLOC_TEST_CONTRIB:-/job/contrib}
workloads=${ALLOC_TEST_CONTAINERS:-/job/containers}/rootfs/bin
root=/run/podman-root
out=${ALLOC_TEST_RESULTS:-/run/results}/test_podman
hook=/usr/local/libexec/alloc-retries/alloc-retries-precreate
hooks_dir=/etc/containers/oci/hooks.d
bad_values=(-3 abc)

# pm MANAGER ARG...: podman with the cgroup manager.
pm() {
	local manager=$1
	shift
	podman --cgroup-manager="$manager" "$@"
}

# pm_run MANAGER OPTION... -- COMMAND...: podman run with the root of the
# containers (made once: merged /usr's links, the mount points).
pm_run() {
	local manager=$1 opts=()
	shift
	while [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	if [ ! -d "$root" ]; then
		mkdir -p "$root"/{usr,proc,sys,dev,run,tmp,etc,workloads,results}
		for d in bin sbin lib lib64; do
			ln -s "usr/$d" "$root/$d"
		done
	fi
	pm "$manager" run --network none --volume /usr:/usr:ro \
		--volume "$workloads:/workloads:ro" "${opts[@]}" \
		--rootfs "$root" "$@"
}

# start MANAGER NAME POLICY [OPTION...]: a container that waits, detached.
start() {
	local manager=$1 name=$2 policy=$3
	shift 3
	run pm_run "$manager" --detach --name "$name" \
		--cgroup-conf="memory.alloc_retries=$policy" --memory=32m "$@" \
		-- /workloads/pause
}

# cexec NAME COMMAND...: COMMAND's output in container NAME.
cexec() {
	local name=$1
	shift
	podman exec "$name" "$@"
}

remove() {
	run podman rm --force --time 0 "$@" || true
}

# install_hook: as Documentation/containers.md says (and vfs storage).
install_hook() {
	install -D -m 755 "$contrib/podman/alloc-retries-precreate" "$hook"
	install -D -m 644 "$contrib/podman/99-alloc-retries.json" \
		"$hooks_dir/99-alloc-retries.json"
	install -D -m 644 "$contrib/podman/50-alloc-retries.conf" \
		/etc/containers/containers.conf.d/50-alloc-retries.conf
	install -D -m 755 "$contrib/podman/alloc-retries-podman-cleanup" \
		/usr/local/sbin/alloc-retries-podman-cleanup
	[ -e /etc/containers/storage.conf ] ||
		printf '[storage]\ndriver = "%s"\nrunroot = "%s"\ngraphroot = "%s"\n' \
			vfs /run/containers/storage /var/lib/containers/storage \
			> /etc/containers/storage.conf
}

# policy_lands MANAGER
policy_lands() {
	local manager=$1 name=pm-$1-2
	# shellcheck disable=SC2064 # the name now
	trap "remove $name" EXIT
	install_hook
	start "$manager" "$name" 2
	assert_eq "$(cexec "$name" cat /sys/fs/cgroup/memory.alloc_retries)" 2 \
		"$name: memory.alloc_retries"
	assert_eq "$(cexec "$name" cat /sys/fs/cgroup/memory.alloc_retries.effective)" 2 \
		"$name: memory.alloc_retries.effective"
	assert_eq "$(cexec "$name" cat /sys/fs/cgroup/memory.events |
		awk '$1 == "alloc_retry_fail" { print $2 }')" 0 "$name: alloc_retry_fail"
	if [ "$manager" = systemd ]; then
		run systemctl daemon-reload
		assert_eq "$(cexec "$name" cat /sys/fs/cgroup/memory.alloc_retries)" 2 \
			"$name: memory.alloc_retries after daemon-reload"
	fi
}

cgroupfs_policy_lands() { policy_lands cgroupfs; }

# Every other container passes the hook too.
container_without_the_key_runs() {
	install_hook
	mkdir -p "$out"
	run pm_run cgroupfs --rm --volume "$out:/results" -- /bin/touch /results/plain.ran
	run test -e "$out/plain.ran"
}

# The hook decides as the kernel parses, and says which check failed.
hook_decides_as_the_kernel() {
	local v want rc
	while read -r v want; do
		rc=0
		jq -n --arg v "$v" '{linux: {resources: {unified:
			{"memory.alloc_retries": $v}}}}' | "$contrib/podman/alloc-retries-precreate" \
			> /dev/null 2>&1 || rc=$?
		assert_eq "$rc" "$want" "the hook on \"$v\""
	done <<-VALUES
	max 0
	0 0
	2147483647 0
	0x1f 0
	017 0
	2147483648 1
	-1 1
	+1 1
	abc 1
	08 1
	1e3 1
	VALUES
	# Whole configs: a NUL (JSON's \u0000), the key spelled with an
	# escape, and the 64-byte bound (65 spaces and a 0, 63 and a 0).
	while read -r want config; do
		rc=0
		printf '%s' "$config" | "$contrib/podman/alloc-retries-precreate" \
			> /dev/null 2>&1 || rc=$?
		assert_eq "$rc" "$want" "the hook on $config"
	done <<-'CONFIGS'
	1 {"linux":{"resources":{"unified":{"memory.alloc_retries":"0\u0000junk"}}}}
	1 {"linux":{"resources":{"unified":{"memory.alloc_retries":"0\u0000"}}}}
	1 {"linux":{"resources":{"unified":{"memory.alloc\u005fretries":"abc"}}}}
	1 {"linux":{"resources":{"unified":{"memory.alloc_retries":"                                                                 0"}}}}
	0 {"linux":{"resources":{"unified":{"memory.alloc_retries":"                                                               0"}}}}
	CONFIGS
}
systemd_policy_lands() { policy_lands systemd; }

# A precreate hook sorted before ours rewrites a good value into a bad
# one: ours, last (99-), sees what the runtime would get, and refuses it
# leaving nothing.
a_hook_before_cannot_slip_a_value_past() {
	local name=pm-rewritten before
	# Not local: the EXIT trap runs after the function has returned.
	rewrite=/usr/local/libexec/alloc-retries-test-rewrite
	trap 'rm -f "$hooks_dir/60-rewrite.json" "$rewrite"' EXIT
	install_hook
	mkdir -p "$out"
	printf '#!/bin/sh\nexec jq -c %s\n' \
		"'.linux.resources.unified[\"memory.alloc_retries\"] = \"abc\"'" \
		> "$rewrite"
	chmod 755 "$rewrite"
	jq -n --arg path "$rewrite" '{version: "1.0.0", hook: {path: $path},
		when: {always: true}, stages: ["precreate"]}' \
		> "$hooks_dir/60-rewrite.json"
	before=$(snapshot)
	start_must_fail cgroupfs "$name" 0 "$out/$name.log" || return 1
	assert_grep ']: exit status 1' "$out/$name.log"
	assert_eq "$(changes "$before")" "" "$name: what changed"
}

# At 0 with its memory full, the fail-fast workload's system calls fail.
# As in run-scenarios: the workload is the container's process, waiting
# for its start file; the hog is started inside and fills the memory;
# then the workload's clock starts.  The container's cgroup goes with
# it: its parent keeps the (hierarchical) memory.events.
failfast_at_0_sees_enomem() {
	local name=pm-failfast-0 dir=$out/pm-failfast-0 parent=alloc-podman
	# shellcheck disable=SC2064 # the name now
	trap "remove $name" EXIT
	install_hook
	rm -rf "$dir"
	mkdir -p "$dir"
	: > "$dir/start"
	run pm_run cgroupfs --detach --name "$name" \
		--cgroup-conf=memory.alloc_retries=0 --memory=32m \
		--cgroup-parent="/$parent" --volume "$dir:/results" \
		--ulimit memlock=-1:-1 \
		-- /workloads/failfast --seconds 10 \
		--start-file /results/start --result /results/result.json
	run pm cgroupfs exec --detach "$name" /workloads/hog --result /results/hog.json
	wait_for 120 jq -e .memory_full "$dir/hog.json" > /dev/null 2>&1 ||
		diag "$name: the hog was not full after 2 minutes"
	echo go > "$dir/start"
	run pm cgroupfs wait "$name"
	cp "/sys/fs/cgroup/$parent/memory.events" "$dir/memory.events"
	run cat "$dir/memory.events"
	assert_jq "$dir/result.json" '.enomem > 0 and .outcome == "completed"'
	awk '$1 == "alloc_retry_fail" && $2 > 0 { ok = 1 } END { exit !ok }' \
		"$dir/memory.events" || { diag "$name: alloc_retry_fail is 0"; return 1; }
}

# snapshot: podman's cgroups and scopes, crun's states and podman's
# containers.
snapshot() {
	find /sys/fs/cgroup/libpod_parent /sys/fs/cgroup/machine.slice \
		-type d 2>/dev/null | sort || true
	systemctl list-units --all --plain --no-legend 'libpod*' | awk '{ print "unit " $1 }'
	find /run/crun -mindepth 1 -maxdepth 1 2>/dev/null | sort || true
	podman ps --all --format 'container {{.Names}}'
}

# changes BEFORE: what snapshot shows that BEFORE did not, and the other
# way round.
changes() {
	diff <(echo "$1") <(snapshot) | grep '^[<>]' || true
}

# start_must_fail MANAGER NAME VALUE LOG: podman run with VALUE fails,
# its output (in LOG) is printed, and the container's process did not run.
start_must_fail() {
	local manager=$1 name=$2 v=$3 log=$4
	if pm_run "$manager" --rm --name "$name" --volume "$out:/results" \
		--cgroup-conf="memory.alloc_retries=$v" \
		-- /bin/touch "/results/$name.ran" > "$log" 2>&1; then
		diag "$name: podman run did not fail"
		return 1
	fi
	run cat "$log"
	[ ! -e "$out/$name.ran" ] || { diag "$name: the process ran"; return 1; }
}

# bad_values MANAGER: with the hook, a bad value starts nothing and
# leaves nothing; without it, what is left is recorded.
bad_values() {
	local manager=$1 v name before left tool
	tool="$(version_of podman) + $(version_of crun)"
	mkdir -p "$out"
	for v in "${bad_values[@]}"; do
		name=pm-$manager-bad${v//[^a-z0-9]/}
		install_hook
		before=$(snapshot)
		start_must_fail "$manager" "$name" "$v" "$out/$name.log" || return 1
		# podman shows the hook's arguments, which say the rule, and
		# its exit status, 1 for a bad value.
		assert_grep 'memory.alloc_retries must be "max" or 0..2147483647' "$out/$name.log"
		assert_grep ']: exit status 1' "$out/$name.log"
		assert_eq "$(changes "$before")" "" "$name: what changed"
		record_leftovers "$out/leftovers.tsv" "$tool, with the hook" \
			"$manager" "$v" nothing

		# Without the hook: crun's own error, and what it leaves.
		rm "$hooks_dir/99-alloc-retries.json"
		start_must_fail "$manager" "$name" "$v" "$out/$name.nohook.log" || return 1
		# shellcheck disable=SC2016 # crun's quotes
		assert_grep 'writing file `memory.alloc_retries`: Invalid argument' \
			"$out/$name.nohook.log"
		left=$(changes "$before" | sed 's|^> ||; s|^< |gone: |;
			s|^/sys/fs/cgroup/||; s|libpod-[0-9a-f]\{64\}|libpod-<id>|' | paste -sd ' ')
		record_leftovers "$out/leftovers.tsv" "$tool, no hook" \
			"$manager" "$v" "${left:-nothing}"
		diag "$name: without the hook, left: ${left:-nothing}"
		remove "$name"
		run alloc-retries-podman-cleanup
		assert_eq "$(changes "$before")" "" "$name: left after the cleanup"
	done
}

cgroupfs_bad_values_start_nothing() { bad_values cgroupfs; }
systemd_bad_values_start_nothing() { bad_values systemd; }

rm -rf "$out"
tap_run hook_decides_as_the_kernel container_without_the_key_runs \
	cgroupfs_policy_lands systemd_policy_lands failfast_at_0_sees_enomem \
	cgroupfs_bad_values_start_nothing systemd_bad_values_start_nothing \
	a_hook_before_cannot_slip_a_value_past
