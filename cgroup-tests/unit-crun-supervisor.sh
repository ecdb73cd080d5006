#!/bin/bash
# The main process of test_systemd_property's delegated service: it moves
# itself into a leaf of the service's cgroup, runs the container of
# WORK_DIR/config.json beside it, and copies the container's effective
# limit to WORK_DIR/effective.
#   unit-crun-supervisor WORK_DIR
set -eu

work=$1
cg=/sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)
mkdir "$cg/supervisor"
echo $$ > "$cg/supervisor/cgroup.procs"
crun run --bundle "$work" art-crun &
crun=$!
until [ -e "$cg/container/memory.alloc_retries.effective" ]; do
	sleep 0.1
done
cp "$cg/container/memory.alloc_retries.effective" "$work/effective"
wait "$crun"
