#!/bin/bash
# The main process of test_systemd_property's transient service: the
# container-pressure scenario without a container, the fail-fast service
# and a hog in one cgroup.  This shell is in that full cgroup, at 0, too:
# it stops the hog first, then copies the cgroup's memory.events, retried
# until the memory is back.
#   unit-failfast-with-hog BIN_DIR WORK_DIR
set -u

bin=$1 work=$2
"$bin/hog" --result "$work/hog.json" &
hog=$!
"$bin/failfast" --seconds 15 --result "$work/result.json"
status=$?
kill "$hog"
wait "$hog"
cg=/sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)
for _ in $(seq 10); do
	cp "$cg/memory.events" "$work/events" && exit "$status"
	sleep 0.5
done
exit 1
