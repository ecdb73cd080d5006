# shellcheck shell=bash
# What run-scenarios and run-daemons share: a cgroup's memory.events,
# memory.max values, the guest's root as a container's root, and the
# record of who invoked each OOM kill.  Sourced, from the directory that
# holds oom-kills too.

# CGROUP's memory.events count KEY.
event() {
	awk -v k="$2" '$1 == k { print $2 }' "$1/memory.events"
}

# Parse a memory.max of the catalogue ("64M", "-") into JSON.
json_bytes() {
	if [ "$1" = - ]; then
		echo null
	else
		numfmt --from=iec "$1"
	fi
}

# The guest's root file system, without the mounts on it, as the root of
# containers that run the guest's own programs: a bind mount, read-only
# (nothing under it is a runner's to write), because crun cannot
# pivot_root into "/" itself (EBUSY).
guest_root=/run/containers/guest-root

guest_root_mount() {
	mountpoint -q "$guest_root" && return
	mkdir -p "$guest_root"
	mount --bind / "$guest_root"
	mount -o remount,bind,ro "$guest_root"
	mount --make-private "$guest_root"
}

guest_root_umount() {
	! mountpoint -q "$guest_root" || umount "$guest_root"
}

tracing=/sys/kernel/tracing
# Does the kernel trace each OOM kill with the invoker's stack (make
# demo)?  "1*": enabled, with the trigger.
tracing_kills() {
	case $(cat "$tracing/events/oom/mark_victim/enable" 2>/dev/null) in
	1*) return 0 ;;
	esac
	return 1
}

# From here on, kills are the caller's to record.
kills_start() {
	! tracing_kills || : > "$tracing/trace"
}

# DIR/kills.json: who invoked each OOM kill since kills_start (oom-kills),
# or DIR/kills-incomplete.json if the trace buffer lost events; prints a
# summary line.
kills_record() {
	local dir=$1
	tracing_kills || return 0
	if ! "$(dirname "${BASH_SOURCE[0]}")/oom-kills" > "$dir/kills.json"; then
		mv "$dir/kills.json" "$dir/kills-incomplete.json"
		echo "the kills' record is incomplete"
	fi
	jq -r 'group_by(.via) | map("\(length) by \(.[0].via)")
		| if length == 0 then "no OOM kill" else join(", ") end' \
		"$dir/kills"*.json
}
