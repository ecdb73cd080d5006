#!/bin/bash
# The storm's data disk after a clean reboot (make storm's second boot):
# e2fsck -fn finds it clean before it is mounted, and every file the
# writer made durable during the storm reads back whole (durable_writer
# verify), as it did before the reboot.
# shellcheck source=cgroup-tests/tap.sh
. "$(dirname "$0")/tap.sh"

disk=${ALLOC_TEST_DATA_DISK:-}
mnt=/run/storm-data
if [ -z "$disk" ]; then
	echo "Bail out! no data disk (ALLOC_TEST_DATA_DISK)"
	exit 1
fi

fsck_clean_before_mount() {
	run e2fsck -fn "$disk"
}

durable_files_whole_after_reboot() {
	mkdir -p "$mnt"
	mount -o ro "$disk" "$mnt"
	trap 'umount "$mnt"' EXIT
	run "$(dirname "$0")/durable_writer" verify "$mnt/files"
}

tap_run fsck_clean_before_mount durable_files_whole_after_reboot
