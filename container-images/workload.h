/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The container workloads' common part: the operations they repeat, each
 * one a few system calls that allocate kernel memory charged to the
 * container's cgroup, and the result file they write for the report.
 *
 * Two programs are built on it and differ only in what they do with an
 * error: failfast.c backs off and retries on ENOMEM, legacy.c treats any
 * error as fatal, like code written for a kernel whose small allocations
 * never failed.
 */
#ifndef WORKLOAD_H
#define WORKLOAD_H

#include <stdbool.h>

/* One kind of operation per entry, done in turn. */
enum op_kind { OP_PIPE, OP_SOCKET, OP_FILE, OP_FORK, NR_OP_KINDS };

/* One operation: when it started and how long it took, with retries. */
struct op_sample {
	unsigned int start_ms;	/* since the workload started */
	unsigned int latency_us;
};

struct workload {
	const char *name;		/* "failfast", "legacy" */
	const char *result_path;
	unsigned int seconds;		/* how long to run */
	long operations;		/* operations completed */
	long enomem;			/* ENOMEM seen, retried or not */
	long enfile;			/* ENFILE seen: see failfast.c */
	long enobufs;			/* ENOBUFS seen: see failfast.c */
	long enospc;			/* ENOSPC seen: see failfast.c */
	long other_errors;
	/* "waiting", "running", "completed", "error" */
	const char *outcome;
	char error[160];		/* the error that ended it */
	struct op_sample *samples;
	long nr_samples, max_samples;
};

/*
 * Parse "--seconds N --result PATH [--start-file PATH]", prepare the
 * operations' buffers and write a first result file ("running"): a
 * workload killed later still leaves one.  With --start-file, first write
 * one that says "waiting" and start the clock only once that file, which
 * must exist, is not empty (at most 10 minutes, then an error).
 * Exits with a message on bad arguments.
 */
void workload_init(struct workload *w, const char *name, int argc,
		   char **argv);
/* Milliseconds since the clock started; false once the time is up. */
unsigned int workload_elapsed_ms(const struct workload *w);
bool workload_time_left(const struct workload *w);
/* Microseconds of a monotonic clock. */
unsigned long long now_us(void);

/* Do one operation of @kind: 0, or -errno of the system call that failed. */
int op_run(enum op_kind kind);
/* What the operation is called, and which system call failed last. */
const char *op_name(enum op_kind kind);
const char *op_failed_call(void);

/* Record one completed operation that started at @start_us. */
void workload_record(struct workload *w, unsigned long long start_us);
/* Write the result file (atomically; retried while the write is ENOMEM). */
void workload_write_result(struct workload *w);
/* Count a failed operation's -errno @err by kind; returns @err. */
int workload_count_error(struct workload *w, int err);
/*
 * The end of a workload: @err of operation @kind ended it (counted,
 * described, outcome "error"), or it ran its time ("completed").  Both
 * write the result file and return the program's exit status.
 */
int workload_fail(struct workload *w, enum op_kind kind, int err);
int workload_complete(struct workload *w);

#endif
