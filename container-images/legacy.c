// SPDX-License-Identifier: GPL-2.0
/*
 * The legacy worker: the same operations as the fail-fast service, written
 * as code that never expected a small allocation to fail.  Any error is
 * fatal: it is recorded and the worker exits with status 1, the way a
 * policy that lets allocations fail under code that cannot handle it shows
 * up in production.
 */
#include "workload.h"

int main(int argc, char **argv)
{
	struct workload w;
	enum op_kind kind = 0;
	unsigned long long start;
	int ret;

	workload_init(&w, "legacy", argc, argv);
	while (workload_time_left(&w)) {
		start = now_us();
		ret = op_run(kind);
		if (ret)
			return workload_fail(&w, kind, ret);
		workload_record(&w, start);
		kind = (kind + 1) % NR_OP_KINDS;
	}
	return workload_complete(&w);
}
