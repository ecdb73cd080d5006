// SPDX-License-Identifier: GPL-2.0
/*
 * The fail-fast service: a workload written for a kernel whose small
 * allocations may fail.  An operation that fails for want of memory is
 * retried after a back-off (1, 2, 4 ... 64 ms) until it succeeds or the
 * time is up; every failure is counted, and an operation's latency
 * includes its retries.  Any other error ends the service.
 *
 * For want of memory means ENOMEM, and three errnos that system calls
 * give for a failed allocation of their own (a service that retries on
 * ENOMEM alone dies of the policy all the same):
 * - ENFILE ("too many open files in system"): pipe2() and socketpair(),
 *   for their inode;
 * - ENOBUFS: send() on a socket, for the buffer of what it sends;
 * - ENOSPC: open(O_CREAT) on tmpfs, for the new file's inode.
 * The file this service writes is on tmpfs, which has no size limit
 * here: its ENOSPC is never a full disk.
 */
#include <errno.h>
#include <unistd.h>

#include "workload.h"

#define MAX_BACKOFF_US 64000

static bool is_out_of_memory(int ret)
{
	return ret == -ENOMEM || ret == -ENFILE || ret == -ENOBUFS ||
	       ret == -ENOSPC;
}

int main(int argc, char **argv)
{
	struct workload w;
	enum op_kind kind = 0;
	unsigned long long start;
	unsigned int backoff;
	int ret;

	workload_init(&w, "failfast", argc, argv);
	while (workload_time_left(&w)) {
		start = now_us();
		backoff = 1000;
		while (is_out_of_memory(ret = op_run(kind))) {
			workload_count_error(&w, ret);
			if (!workload_time_left(&w))
				break;
			usleep(backoff);
			if (backoff < MAX_BACKOFF_US)
				backoff *= 2;
		}
		if (is_out_of_memory(ret))
			break;		/* the time ran out while retrying */
		if (ret)
			return workload_fail(&w, kind, ret);
		workload_record(&w, start);
		kind = (kind + 1) % NR_OP_KINDS;
	}
	return workload_complete(&w);
}
