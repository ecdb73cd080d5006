// SPDX-License-Identifier: GPL-2.0
/*
 * The memory hog.  It forks a filler that takes, in anonymous memory kept
 * live, what its cgroup has left below memory.max, or, when the cgroup has
 * no limit, what the machine has left, less a margin, and then creeps on
 * by a page a millisecond.  Reclaim squeezes out the page cache
 * and the room left runs out; the next allocation to find none invokes
 * the OOM killer, which picks the filler (oom_score_adj 1000, the most
 * memory).  A workload sharing that memory allocates far faster than the
 * creep, so it is mostly the workload's own allocation that meets the OOM
 * killer.  The hog counts the kills and forks a new filler, so the
 * pressure lasts until the hog is stopped (SIGTERM or SIGINT), when it
 * writes its result file.
 *
 *   hog --result PATH
 *
 * The result file counts the fillers, those that got their memory (the
 * runner waits for the first before it starts the workloads of a host
 * pressure scenario) and those the OOM killer killed.  The margin is
 * 1 MiB under memory.max, less than what one pipe operation of a workload
 * holds, and a 64th of memory for the machine.
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

#define PAGE 4096
#define CHUNK (64 * PAGE)
#define CREEP_US 1000
#define CGROUP "/sys/fs/cgroup/"

static volatile sig_atomic_t stop;
static const char *result_path;

/* Shared by the hog and its fillers. */
static struct hog_counts {
	long fills;	/* fillers started */
	long full;	/* fillers that got their memory */
	long killed;	/* fillers the OOM killer killed */
} *counts;

static void on_stop(int sig)
{
	stop = 1;
}

/* A number from a one-line file; -1 if absent or "max". */
static long long read_number(const char *path)
{
	char buf[64] = "";
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || !strncmp(buf, "max", 3))
		return -1;
	return strtoll(buf, NULL, 10);
}

static long long meminfo(const char *key)
{
	char buf[4096], *p;
	int fd = open("/proc/meminfo", O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, key);
	return p ? strtoll(p + strlen(key) + 1, NULL, 10) * 1024 : -1;
}

/* Bytes the filler may still take before it reaches the margin. */
static long long room(long long limit, long long margin)
{
	if (limit >= 0)
		return limit - read_number(CGROUP "memory.current") - margin;
	return meminfo("MemAvailable:") - margin;
}

static void write_result(void);

static void filler(void)
{
	long long limit = read_number(CGROUP "memory.max");
	size_t size = meminfo("MemTotal:"), off = 0, i;
	long long margin = limit >= 0 ? 1 << 20 : size / 64;
	volatile char *mem;

	int fd = open("/proc/self/oom_score_adj", O_WRONLY);

	prctl(PR_SET_NAME, "hog-filler");
	/* The OOM killer's first choice, before anyone's memory. */
	if (fd < 0 || write(fd, "1000", 4) != 4)
		_exit(2);
	close(fd);
	/* Its text stays: reclaim must not find room by evicting it. */
	if (mlockall(MCL_CURRENT))
		_exit(4);
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED)
		_exit(3);
	/* Volatile stores: the compiler must not drop the memory. */
	while (off + CHUNK <= size && room(limit, margin) > CHUNK) {
		for (i = 0; i < CHUNK; i += PAGE)
			mem[off + i] = 1;
		off += CHUNK;
	}
	__atomic_add_fetch(&counts->full, 1, __ATOMIC_SEQ_CST);
	write_result();
	for (; off < size; off += PAGE) {
		mem[off] = 1;
		usleep(CREEP_US);
	}
	for (;;)
		pause();
}

static void write_result(void)
{
	char tmp[4096];
	FILE *f;

	/* The hog and a filler may both write: a file each, then rename. */
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", result_path, getpid());
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "{\n  \"workload\": \"hog\",\n  \"outcome\": \"%s\",\n"
		"  \"fills\": %ld,\n  \"full\": %ld,\n"
		"  \"fillers_oom_killed\": %ld\n}\n",
		stop ? "completed" : "running", counts->fills, counts->full,
		counts->killed);
	if (!fclose(f))
		rename(tmp, result_path);
}

int main(int argc, char **argv)
{
	struct sigaction stop_action = { .sa_handler = on_stop };
	int status;
	pid_t pid;

	if (argc != 3 || strcmp(argv[1], "--result")) {
		fprintf(stderr, "usage: hog --result PATH\n");
		return 2;
	}
	result_path = argv[2];
	counts = mmap(NULL, sizeof(*counts), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (counts == MAP_FAILED || mlockall(MCL_CURRENT | MCL_FUTURE)) {
		perror("hog: mmap, mlockall (RLIMIT_MEMLOCK too low?)");
		return 2;
	}
	/* No SA_RESTART: a stop must interrupt the wait for the filler. */
	sigaction(SIGTERM, &stop_action, NULL);
	sigaction(SIGINT, &stop_action, NULL);
	while (!stop) {
		pid = fork();
		if (pid < 0) {
			usleep(100000);
			continue;
		}
		if (pid == 0)
			filler();
		counts->fills++;
		write_result();
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			if (stop)
				kill(pid, SIGKILL);
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && !stop)
			counts->killed++;
		/* Let the workloads run a moment between two fills. */
		usleep(50000);
	}
	write_result();
	return 0;
}
