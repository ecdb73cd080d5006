#!/bin/bash
# The main process of test_systemd_property's transient service: the
# container-pressure scenario without a container, the fail-fast service
# and a hog in one cgroup.  This shell is in that full cgroup, at 0, too,
# where a fork or an open() can fail: it only starts the two and waits.
# The test, outside, starts the service's clock once the hog is full
# (writes WORK_DIR/start, which it made empty) and stops the hog when the
# service's SECONDS have run.  Then this
# shell copies the cgroup's memory.events, retried until the memory is
# back.
#   unit-failfast-with-hog BIN_DIR WORK_DIR SECONDS
set -u

bin=$1 work=$2 seconds=$3
"$bin/failfast" --seconds "$seconds" --result "$work/result.json" \
	--start-file "$work/start" &
failfast=$!
"$bin/hog" --result "$work/hog.json" &
hog=$!
wait "$failfast"
status=$?
wait "$hog"
cg=/sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)
for _ in $(seq 10); do
	cp "$cg/memory.events" "$work/events" && exit "$status"
	sleep 0.5
done
exit 1
