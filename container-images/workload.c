// SPDX-License-Identifier: GPL-2.0
/*
 * The operations the container workloads repeat and their result file.
 *
 * Every operation allocates kernel memory in system call context, where an
 * allocation failed by memory.alloc_retries comes back as ENOMEM: pipe
 * buffers (one page per write(), __GFP_ACCOUNT), a socket pair and the
 * data sent through it, a tmpfs file (page cache, charged to the writer),
 * and fork() (task, stack, page tables).  The pipe operation holds 2 MiB
 * at its peak, so that under a hog holding its cgroup just below
 * memory.max it is the workload's own charge that finds no room and
 * invokes the OOM killer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "result.h"
#include "workload.h"

#define PAGE 4096
#define PIPE_BYTES (1 << 20)
#define PIPES 2
#define SOCKET_BYTES (64 << 10)
#define FILE_BYTES (256 << 10)
#define FILE_PATH "/tmp/workload-file"
/* More operations per second than a guest under TCG manages. */
#define MAX_OPS_PER_SECOND 5000

static char page[PAGE];
static const char *failed_call = "";
static unsigned long long start_us;

/*
 * How long each system call of the operations took, failed or not: what a
 * fail-fast service needs bounded is how long one call can keep it in the
 * kernel.  A histogram with HIST_STEPS buckets per doubling (4% wide).
 */
#define HIST_STEPS	16
#define HIST_BUCKETS	(HIST_STEPS * 40)
static unsigned long syscall_hist[HIST_BUCKETS];
static unsigned long long syscall_count, syscall_max_us;

/* The bucket of @us, and the largest duration that bucket holds. */
static int hist_bucket(unsigned long long us)
{
	unsigned long long v = us + 1;
	int msb = 63 - __builtin_clzll(v);
	int frac = msb >= 4 ? (v >> (msb - 4)) & (HIST_STEPS - 1) :
			      (v << (4 - msb)) & (HIST_STEPS - 1);

	return msb * HIST_STEPS + frac;
}

static unsigned long long hist_upper_us(int bucket)
{
	int msb = bucket / HIST_STEPS, frac = bucket % HIST_STEPS;

	return (((unsigned long long)HIST_STEPS + frac + 1) << msb) /
	       HIST_STEPS - 1;
}

static void syscall_done(unsigned long long start)
{
	unsigned long long us = now_us() - start;
	int bucket = hist_bucket(us);

	syscall_hist[bucket < HIST_BUCKETS ? bucket : HIST_BUCKETS - 1]++;
	syscall_count++;
	if (us > syscall_max_us)
		syscall_max_us = us;
}

/* Run system call @call, recording how long it took; errno is kept. */
#define TIMED(call) ({						\
	unsigned long long start_ = now_us();			\
	__typeof__(call) ret_ = (call);				\
	int errno_ = errno;					\
	syscall_done(start_);					\
	errno = errno_;						\
	ret_;							\
})

unsigned long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ULL + ts.tv_nsec / 1000;
}

static void usage(const char *name, const char *why)
{
	fprintf(stderr, "%s: %s\nusage: %s --seconds N (1..3600) --result PATH"
		" [--start-file PATH]\n", name, why, name);
	exit(2);
}

/*
 * Say "waiting" and wait for @path, which the runner created empty, to get
 * content: it writes the file once the pressure is in place, so that the
 * timed window is spent under pressure however long the containers took to
 * start (minutes on a debug kernel).  stat() of a file that exists finds
 * its dentry cached and allocates nothing, where polling for a missing name
 * would allocate a dentry each time on tmpfs (which keeps no negative
 * ones), in a cgroup that may be full.  A missing file is the runner's
 * mistake; a file still empty after START_TIMEOUT_S ends the workload.
 */
#define START_TIMEOUT_S 600
static void wait_for_start_file(struct workload *w, const char *path)
{
	const struct timespec tick = { .tv_nsec = 10 * 1000 * 1000 };
	unsigned long long deadline = now_us() + START_TIMEOUT_S * 1000000ULL;
	struct stat st;

	w->outcome = "waiting";
	workload_write_result(w);
	for (;;) {
		if (!stat(path, &st)) {
			if (st.st_size)
				break;
		} else if (errno == ENOENT) {
			fprintf(stderr, "%s: %s: %s\n", w->name, path,
				strerror(errno));
			exit(2);
		}
		if (now_us() > deadline) {
			w->outcome = "error";
			snprintf(w->error, sizeof(w->error),
				 "%s still empty after %d s", path,
				 START_TIMEOUT_S);
			workload_write_result(w);
			exit(1);
		}
		nanosleep(&tick, NULL);
	}
	w->outcome = "running";
}

void workload_init(struct workload *w, const char *name, int argc,
		   char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "result", required_argument, NULL, 'r' },
		{ "start-file", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 }
	};
	const char *start_file = NULL;
	char *end;
	long v;
	int c;

	memset(w, 0, sizeof(*w));
	w->name = name;
	w->outcome = "running";
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || v < 1 || v > 3600)
				usage(name, "--seconds must be 1..3600");
			w->seconds = v;
			break;
		case 'r':
			w->result_path = optarg;
			break;
		case 'f':
			start_file = optarg;
			break;
		default:
			usage(name, "unknown option");
		}
	}
	if (optind != argc || !w->seconds || !w->result_path)
		usage(name, "--seconds and --result are required");

	memset(page, 'w', sizeof(page));
	/* Faulted in now: later, under pressure, only system calls allocate. */
	w->max_samples = (long)w->seconds * MAX_OPS_PER_SECOND;
	w->samples = calloc(w->max_samples, sizeof(*w->samples));
	if (!w->samples)
		usage(name, "no memory for the samples");
	memset(w->samples, 0, w->max_samples * sizeof(*w->samples));
	/*
	 * Locked, text included: reclaim cannot make room by evicting the
	 * pages the workload runs on, so a full cgroup means an OOM at once
	 * instead of thrashing.  The bundles raise RLIMIT_MEMLOCK for it.
	 */
	if (mlockall(MCL_CURRENT | MCL_FUTURE))
		usage(name, "mlockall failed (RLIMIT_MEMLOCK too low?)");
	if (start_file)
		wait_for_start_file(w, start_file);
	start_us = now_us();
	workload_write_result(w);
}

unsigned int workload_elapsed_ms(const struct workload *w)
{
	return (now_us() - start_us) / 1000;
}

bool workload_time_left(const struct workload *w)
{
	return workload_elapsed_ms(w) < w->seconds * 1000U &&
	       w->nr_samples < w->max_samples;
}

static int fail(const char *call)
{
	failed_call = call;
	return -errno;
}

/* Fill @PIPES pipes of 1 MiB, a page per write(), then free them. */
static int op_pipe(void)
{
	int fds[PIPES][2], n, i, ret = 0;
	size_t done;

	for (n = 0; n < PIPES; n++) {
		if (TIMED(pipe2(fds[n], O_NONBLOCK))) {
			ret = fail("pipe2");
			break;
		}
		if (TIMED(fcntl(fds[n][1], F_SETPIPE_SZ, PIPE_BYTES)) < 0) {
			ret = fail("fcntl(F_SETPIPE_SZ)");
			n++;
			break;
		}
		for (done = 0; done < PIPE_BYTES; done += PAGE)
			if (TIMED(write(fds[n][1], page, PAGE)) != PAGE) {
				ret = fail("write(pipe)");
				break;
			}
		if (ret) {
			n++;
			break;
		}
	}
	for (i = 0; i < n; i++) {
		close(fds[i][0]);
		close(fds[i][1]);
	}
	return ret;
}

/* A socket pair and 64 KiB through it. */
static int op_socket(void)
{
	char buf[PAGE];
	int sv[2], ret = 0;
	size_t done;

	if (TIMED(socketpair(AF_UNIX, SOCK_STREAM, 0, sv)))
		return fail("socketpair");
	for (done = 0; done < SOCKET_BYTES && !ret; done += PAGE) {
		if (TIMED(send(sv[0], page, PAGE, 0)) != PAGE)
			ret = fail("send");
		else if (TIMED(recv(sv[1], buf, PAGE, MSG_WAITALL)) != PAGE)
			ret = fail("recv");
	}
	close(sv[0]);
	close(sv[1]);
	return ret;
}

/* 256 KiB written to a tmpfs file, then the file removed. */
static int op_file(void)
{
	int fd = TIMED(open(FILE_PATH, O_CREAT | O_TRUNC | O_WRONLY, 0600));
	int ret = 0;
	size_t done;

	if (fd < 0)
		return fail("open");
	for (done = 0; done < FILE_BYTES; done += PAGE)
		if (TIMED(write(fd, page, PAGE)) != PAGE) {
			ret = fail("write(file)");
			break;
		}
	close(fd);
	unlink(FILE_PATH);
	return ret;
}

/* A child that exits at once. */
static int op_fork(void)
{
	pid_t pid = TIMED(fork());

	if (pid < 0)
		return fail("fork");
	if (pid == 0)
		_exit(0);
	if (waitpid(pid, NULL, 0) != pid)
		return fail("waitpid");
	return 0;
}

int op_run(enum op_kind kind)
{
	switch (kind) {
	case OP_PIPE:
		return op_pipe();
	case OP_SOCKET:
		return op_socket();
	case OP_FILE:
		return op_file();
	default:
		return op_fork();
	}
}

const char *op_name(enum op_kind kind)
{
	static const char * const names[NR_OP_KINDS] = {
		[OP_PIPE] = "pipe", [OP_SOCKET] = "socket",
		[OP_FILE] = "file", [OP_FORK] = "fork",
	};

	return names[kind];
}

const char *op_failed_call(void)
{
	return failed_call;
}

void workload_record(struct workload *w, unsigned long long start)
{
	struct op_sample *s = &w->samples[w->nr_samples++];

	s->start_ms = (start - start_us) / 1000;
	s->latency_us = now_us() - start;
	w->operations++;
}

static int write_json(FILE *f, const void *arg)
{
	const struct workload *w = arg;
	bool first;
	long i;

	fprintf(f, "{\n  \"workload\": \"%s\",\n  \"seconds\": %u,\n"
		"  \"outcome\": \"%s\",\n  \"error\": \"%s\",\n"
		"  \"operations\": %ld,\n  \"enomem\": %ld,\n"
		"  \"enfile\": %ld,\n  \"enobufs\": %ld,\n"
		"  \"enospc\": %ld,\n  \"other_errors\": %ld,\n"
		"  \"syscalls\": %llu,\n  \"syscall_max_us\": %llu,\n"
		"  \"syscall_hist\": [",
		w->name, w->seconds, w->outcome, w->error, w->operations,
		w->enomem, w->enfile, w->enobufs, w->enospc, w->other_errors,
		syscall_count,
		syscall_max_us);
	/* [largest duration in us, calls] per bucket that has any */
	for (i = 0, first = true; i < HIST_BUCKETS; i++) {
		if (!syscall_hist[i])
			continue;
		fprintf(f, "%s[%llu,%lu]", first ? "" : ",", hist_upper_us(i),
			syscall_hist[i]);
		first = false;
	}
	fprintf(f, "],\n  \"samples\": [");
	/* [start in ms, latency in us] per operation */
	for (i = 0; i < w->nr_samples; i++)
		fprintf(f, "%s[%u,%u]", i ? "," : "", w->samples[i].start_ms,
			w->samples[i].latency_us);
	return fprintf(f, "]\n}\n");
}

/*
 * The result file is the harness's, not the workload's behaviour: its
 * writes retry while the cgroup is full, and a workload that cannot write
 * it exits 3, which the runner tells from the workload's own outcome.
 */
void workload_write_result(struct workload *w)
{
	if (!result_write(w->result_path, write_json, w))
		return;
	fprintf(stderr, "%s: cannot write %s: %s\n", w->name, w->result_path,
		strerror(errno));
	exit(3);
}

int workload_count_error(struct workload *w, int err)
{
	if (err == -ENOMEM)
		w->enomem++;
	else if (err == -ENFILE)
		w->enfile++;
	else if (err == -ENOBUFS)
		w->enobufs++;
	else if (err == -ENOSPC)
		w->enospc++;
	else
		w->other_errors++;
	return err;
}

int workload_fail(struct workload *w, enum op_kind kind, int err)
{
	workload_count_error(w, err);
	snprintf(w->error, sizeof(w->error), "%s %s: %s", op_name(kind),
		 op_failed_call(), strerror(-err));
	w->outcome = "error";
	workload_write_result(w);
	return 1;
}

int workload_complete(struct workload *w)
{
	w->outcome = "completed";
	workload_write_result(w);
	return 0;
}
