// SPDX-License-Identifier: GPL-2.0
/*
 * The memory hog.  It keeps FILLERS children that between them take, in
 * anonymous memory kept live, what its cgroup has left below memory.max,
 * or, when the cgroup has no limit, what the machine has left, less a
 * margin: each takes at most a FILLERS-th of the limit (or of memory), and
 * the one that reaches the margin creeps on by a page a millisecond.
 * Reclaim squeezes out what page cache is left and the room runs out; the
 * next allocation to find none invokes the OOM killer, which picks a
 * filler (oom_score_adj 1000, the most memory).  A workload sharing that
 * memory allocates far faster than the creep, so it is mostly the
 * workload's own allocation that meets the OOM killer.  The hog replaces
 * the killed filler, which only has its own slice to take back, so the
 * next OOM comes soon even under TCG; the pressure lasts until the hog is
 * stopped (SIGTERM or SIGINT).
 *
 *   hog --result PATH
 *
 * The result file counts the fillers started, those that reached the
 * margin and those the OOM killer killed, and says whether the memory is
 * full: a filler at the margin or one OOM-killed says so (on the debug
 * kernel fillers racing for a small memory.max were OOM-killed for
 * minutes and none got to the margin).  The runner waits for it before it
 * starts the workloads' clocks.  The margin is 1 MiB under memory.max,
 * less than what one pipe operation of a workload holds, and a 64th of
 * memory for the machine.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "procfs.h"
#include "result.h"

#define PAGE 4096
#define CHUNK (64 * PAGE)
/* A page a millisecond under memory.max, every ten for the machine. */
#define CREEP_US 1000
#define CREEP_HOST_US 10000
#define FILLERS 8

static volatile sig_atomic_t stop;
static const char *result_path;
/* The hog's cgroup directory: the mount's root in a container's cgroup
 * namespace, the unit's cgroup under systemd-run. */
static char cgroup[8192];

/* Shared by the hog and its fillers. */
static struct hog_counts {
	long fills;	/* fillers started */
	long full;	/* fillers that reached the margin */
	long killed;	/* fillers the OOM killer killed */
} *counts;

static void on_stop(int sig)
{
	stop = 1;
}

static long long cgroup_number(const char *file)
{
	char path[8400];

	snprintf(path, sizeof(path), "%s/%s", cgroup, file);
	return procfs_number(path);
}

/* Bytes the fillers may still take before they reach the margin. */
static long long room(long long limit, long long margin)
{
	if (limit >= 0)
		return limit - cgroup_number("memory.current") - margin;
	return procfs_meminfo("MemAvailable") - margin;
}

static int hog_json(FILE *f, const void *arg)
{
	return fprintf(f, "{\n  \"workload\": \"hog\",\n  \"outcome\": \"%s\",\n"
		       "  \"fills\": %ld,\n  \"full\": %ld,\n"
		       "  \"fillers_oom_killed\": %ld,\n"
		       "  \"memory_full\": %s\n}\n",
		       stop ? "completed" : "running", counts->fills,
		       counts->full, counts->killed,
		       counts->full || counts->killed ? "true" : "false");
}

/* The hog and its fillers write it; the report does without a lost one. */
static void write_result(void)
{
	result_write(result_path, hog_json, NULL);
}

static void filler(void)
{
	long long limit = cgroup_number("memory.max");
	size_t total = procfs_meminfo("MemTotal"), off = 0, i;
	size_t slice = (limit >= 0 ? (size_t)limit : total) / FILLERS;
	long long margin = limit >= 0 ? 1 << 20 : total / 128;
	unsigned int creep = limit >= 0 ? CREEP_US : CREEP_HOST_US;
	int fd = open("/proc/self/oom_score_adj", O_WRONLY);
	volatile char *mem;

	prctl(PR_SET_NAME, "hog-filler");
	/* The OOM killer's first choice, before anyone's memory. */
	if (fd < 0 || write(fd, "1000", 4) != 4)
		_exit(2);
	close(fd);
	/* Its text stays: reclaim must not find room by evicting it. */
	if (mlockall(MCL_CURRENT))
		_exit(4);
	mem = mmap(NULL, total, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED)
		_exit(3);
	/* Volatile stores: the compiler must not drop the memory. */
	while (off + CHUNK <= slice && room(limit, margin) > CHUNK) {
		for (i = 0; i < CHUNK; i += PAGE)
			mem[off + i] = 1;
		off += CHUNK;
	}
	if (off + CHUNK <= slice) {
		/* Reached the margin: this filler creeps. */
		__atomic_add_fetch(&counts->full, 1, __ATOMIC_SEQ_CST);
		write_result();
		for (; off < total; off += PAGE) {
			mem[off] = 1;
			usleep(creep);
		}
	}
	for (;;)
		pause();
}

static pid_t start_filler(void)
{
	pid_t pid = fork();

	if (pid == 0)
		filler();
	if (pid > 0) {
		__atomic_add_fetch(&counts->fills, 1, __ATOMIC_SEQ_CST);
		write_result();
	}
	return pid;
}

int main(int argc, char **argv)
{
	struct sigaction stop_action = { .sa_handler = on_stop };
	pid_t fillers[FILLERS] = { 0 }, pid;
	int status, i;

	if (argc != 3 || strcmp(argv[1], "--result")) {
		fprintf(stderr, "usage: hog --result PATH\n");
		return 2;
	}
	result_path = argv[2];
	if (procfs_own_cgroup(cgroup, sizeof(cgroup))) {
		fprintf(stderr, "hog: no cgroup v2 line in /proc/self/cgroup\n");
		return 2;
	}
	counts = mmap(NULL, sizeof(*counts), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (counts == MAP_FAILED || mlockall(MCL_CURRENT | MCL_FUTURE)) {
		perror("hog: mmap, mlockall (RLIMIT_MEMLOCK too low?)");
		return 2;
	}
	/* No SA_RESTART: a stop must interrupt the wait for a filler. */
	sigaction(SIGTERM, &stop_action, NULL);
	sigaction(SIGINT, &stop_action, NULL);
	while (!stop) {
		for (i = 0; i < FILLERS; i++)
			if (fillers[i] <= 0)
				fillers[i] = start_filler();
		pid = waitpid(-1, &status, 0);
		if (pid < 0) {
			if (errno != EINTR)
				usleep(100000);	/* fork failed: no child */
			continue;
		}
		for (i = 0; i < FILLERS; i++)
			if (fillers[i] == pid)
				fillers[i] = 0;
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			counts->killed++;
	}
	for (i = 0; i < FILLERS; i++)
		if (fillers[i] > 0)
			kill(fillers[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	write_result();
	return 0;
}
