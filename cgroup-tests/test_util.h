/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the guest tests: the retry sysctl, the kernel log,
 * and memory pressure made of a hog the OOM killer will pick and a probe
 * whose own small kernel allocations are the ones that reach the OOM stage.
 *
 * The cgroup helpers come from the kernel tree's
 * tools/testing/selftests/cgroup/cgroup_util.c.
 */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#include <stdbool.h>
#include <sys/types.h>

#define RETRY_SYSCTL "/proc/sys/vm/retry_allocation_attempts"

/* One test function per case, kselftest style: KSFT_PASS or KSFT_FAIL. */
struct test_case {
	int (*fn)(void);
	const char *name;
};
#define TEST_CASE(fn) { fn, #fn }

/*
 * Print the TAP plan, run every case (or those named in @argv, in that
 * order), report each, exit with the result.
 */
void run_tests(const struct test_case *tests, size_t n, int argc, char **argv);

/* The monotonic clock, in seconds. */
double now_s(void);

/* Where the tests create their cgroups: their own cgroup's parent. */
const char *test_cgroup_root(void);

/* Write @val to a /proc or /sys file: 0, or -errno of the failing write. */
int write_file_errno(const char *path, const char *val, size_t len);
/* Write vm.retry_allocation_attempts: 0 or -errno. */
int retry_sysctl_set(const char *val);
/* Read an integer file; exits the test program if it cannot. */
long read_long_file(const char *path);

/* Kernel log: remember where it ends, later count new lines with @needle. */
int kmsg_mark(void);
int kmsg_count(int fd, const char *needle, const char *needle2);
/* Call @fn for each record logged since kmsg_mark() gave @fd; closes @fd. */
void kmsg_for_each(int fd, void (*fn)(const char *rec, void *arg), void *arg);
/*
 * The two needles of a record x86 logs for a fault of user-mode code in
 * glibc's dynamic loader: a loader that dereferences the mmap() that
 * failed under a limit, user space meeting ENOMEM.  The SIGSEGV execve()
 * sends past its point of no return logs no such record.
 */
#define LOADER			"ld-linux-x86-64.so.2"
#define SEGFAULT_AT		"segfault at"
#define IN_LOADER		" in " LOADER "["
/*
 * Set printk_ratelimit()'s interval, in seconds (0: no limit); returns the
 * old one.  x86 logs a user-mode segfault under printk_ratelimit(), which
 * audit also uses for every record it prints when no auditd listens: a
 * burst of them (systemd's unit records, audit configuration changes)
 * silences segfault records for 5 s.
 */
long printk_ratelimit_set(long seconds);

/* The trace buffer, which holds the oom:alloc_retry_fail events. */
#define TRACE		"/sys/kernel/tracing"
#define TRACE_EVENT	TRACE "/events/oom/alloc_retry_fail/enable"
/* Empty it (and enable the event if it is off). */
void trace_start(void);
/* Lines with all of @a, @b and @c; -1 if it cannot be read. */
int trace_count(const char *a, const char *b, const char *c);
/* Call @fn for each line; -1 if it cannot be read. */
int trace_for_each(void (*fn)(const char *line, void *arg), void *arg);

/* Set this process's oom_score_adj; exits the test program if it cannot. */
void set_oom_score_adj(int adj);

/* Value of a key in /proc/meminfo, in KiB. */
long meminfo_kb(const char *key);

/*
 * A child in its own cgroup @cgroup (created if missing), oom_score_adj
 * 1000, that faults in @bytes of anonymous memory, keeps it and waits to be
 * killed.  Returns its pid once the memory is in place, or -1 if it died
 * before (OOM-killed while filling); hog_stop() removes the cgroup.
 */
pid_t hog_start(const char *cgroup, size_t bytes);
/* Kill the hog if still alive; true if it had been OOM-killed. */
bool hog_stop(pid_t pid, const char *cgroup);
/* Bytes a hog should take so that the next @probe_bytes cause an OOM. */
size_t hog_bytes_for_pressure(void);

/*
 * A cgroup kept at its memory.max: a keeper process respawns two fillers,
 * "retry-filler" (oom_score_adj 1000, running as @uid, in @cgroup), each of
 * which
 * populates anonymous memory with MADV_POPULATE_WRITE and, once that
 * fails, keeps trying, so that every page another task of the cgroup frees
 * or uncharges is taken again.  The counters are shared with the test.
 */
struct filler_stats {
	long enomem;		/* the filler's populates failed with ENOMEM */
	long kills;		/* fillers killed by SIGKILL (the OOM killer) */
	pid_t pid, pid2;	/* the two fillers now */
	long release;		/* bytes each gives back and holds off, 0: fill */
	long release_gen;	/* asked for by filler_release() ... */
	long released;		/* ... and done, counted per filler */
};
struct filler {
	pid_t keeper;
	volatile struct filler_stats *stats;
};
/*
 * Start it: 0 once a populate of the filler has failed with ENOMEM (@cgroup
 * is at its memory.max under a retry limit of 0), -1 if none did in 60 s.
 * The limit must be in place: under "max" the filler is OOM-killed.  With
 * @global, @cgroup has no memory.max and the fillers fill the guest: there
 * the OOM point is also met by another task's allocation getting there
 * first and the OOM killer killing a filler (filler_wait_oom()).
 */
int filler_start(struct filler *f, const char *cgroup, uid_t uid, bool global);
/* Wait up to @seconds for the next ENOMEM of the filler; false if none. */
bool filler_wait_full(struct filler *f, double seconds);
/*
 * Wait up to @seconds for the OOM point: the filler's next ENOMEM, or the
 * OOM killer killing a filler, whoever's allocation got there first (under
 * global OOM a limited allocation reaches the OOM stage no sooner than
 * any other); false if neither.
 */
bool filler_wait_oom(struct filler *f, double seconds);
/*
 * Have each filler give back @bytes of what it holds and stop refilling:
 * false if they did not within 10 s.  filler_refill() lets them fill again.
 */
bool filler_release(struct filler *f, long bytes);
void filler_refill(struct filler *f);
/* Kill the keeper and the filler, and wait for the filler to be gone. */
void filler_stop(struct filler *f);
/*
 * Drop root for @uid (and gid @uid, no supplementary groups), dumpable as
 * after an exec: 0 or -1.
 */
int become_user(uid_t uid);
/*
 * Write the pages a forked test process writes once it is in a full
 * cgroup (32 KiB of its stack, errno's): their copy-on-write faults, which
 * no limit fails, then happen before it moves in, and do not make the OOM
 * killer kill the filler in its place.
 */
void touch_own_pages(void);

/* What the pipe probe saw. */
struct probe_result {
	long calls;		/* syscalls made */
	long enomem;		/* of which failed with ENOMEM (or ENFILE) */
	long other_errors;	/* failed otherwise */
	long bytes;		/* bytes left in pipes, at most the target */
};

/*
 * A child named @comm that will pin @bytes in pipe buffers, one page per
 * write(): every write allocates an order-0 page, every F_SETPIPE_SZ a
 * 10 KiB kmalloc, in system call context, both charged to its cgroup.
 * It stops early after a few dozen failed calls.
 * probe_start() returns once the child has faulted in and locked all its
 * memory, so that its faults allocate nothing later, and has moved into
 * @cgroup (NULL: stays where it is) with @oom_score_adj; probe_finish()
 * lets it run to the target (or @max_calls system calls) and collects what
 * it saw.
 */
struct probe {
	pid_t pid;
	int go;
	struct probe_result *res;
};
int probe_start(struct probe *probe, const char *comm, const char *cgroup,
		int oom_score_adj, size_t bytes, long max_calls);
int probe_finish(struct probe *probe, struct probe_result *res);
/* Let the probe run for @ms, then SIGKILL and reap it. */
void probe_kill_after(struct probe *probe, unsigned int ms);

/* What the probe pins: a quarter of memory. */
size_t probe_bytes(void);

/*
 * One round of global pressure: a hog in @hog_cgroup holds what memory is
 * free, the probe "retry-probe" (in @probe_cgroup, NULL for the caller's,
 * oom_score_adj -1000) pins probe_bytes(), the hog is killed.  Fills @res
 * and says whether the OOM killer killed the hog; -1 if the round could
 * not be set up.
 */
int pressure_round(const char *hog_cgroup, const char *probe_cgroup,
		   struct probe_result *res, bool *hog_oom_killed);
/*
 * One round of memcg pressure under @parent, whose memory.max is
 * @memory_max: a hog in @parent/hog fills it to within a quarter of the
 * limit, the probe "retry-memcg" (in @probe_cgroup under @parent,
 * oom_score_adj 0) pins half of the limit, the hog is killed.  Like
 * pressure_round().
 */
int memcg_pressure_round(const char *parent, long memory_max,
			 const char *probe_cgroup, struct probe_result *res,
			 bool *hog_oom_killed);
/* One TAP diagnostic line for a round. */
void probe_report(const struct probe_result *res, bool hog_oom_killed);

/* memory.alloc_retries of @cgroup: write @val, 0 or -errno. */
int alloc_retries_set(const char *cgroup, const char *val);
/*
 * A fresh cgroup @name under @under (one an earlier run left is removed
 * first) with memory.max @memory_max (0: left at max) and the memory
 * controller on for its children; exits the test program if it cannot.
 * The caller frees the name.
 */
char *memcg_parent(const char *under, const char *name, long memory_max);
/* @cgroup's path from the hierarchy's root, as the kernel prints it. */
const char *cg_kernel_path(const char *cgroup);
/* A key of memory.events (hierarchical) or memory.events.local. */
long cg_event(const char *cgroup, const char *file, const char *key);
/* A counter of /proc/vmstat. */
long vmstat(const char *key);

/* The state letter of @pid (R, S, D, T...) in /proc/@pid/stat; 0 if gone. */
char task_state(pid_t pid);

/*
 * Each thread in @cgroup and the cgroups below it, as a TAP diagnostic:
 * tid, name, state, its time on a CPU and waiting for one (schedstat),
 * and the top of its kernel stack (root only).  For a failure that says
 * where its tasks were.
 */
void cg_say_tasks(const char *cgroup);

/*
 * Is @pid in system call @nr, in state @state (0: any), with @in anywhere
 * on its kernel stack and @top on top of it (/proc/@pid/stack, root
 * only)?  @seen says what /proc showed, for a message if it is not.
 */
bool task_in_syscall(pid_t pid, long nr, char state, const char *in,
		     const char *top, char *seen, size_t size);

/*
 * Run @argv (no shell) and wait for it: its exit status, or -1.  With
 * @quiet its output goes nowhere.
 */
int run_program(const char *const argv[], bool quiet);
/*
 * A fresh ext4 image @image of @bytes (inodes: @inodes, 0 for mkfs's
 * default), loop-mounted on @mnt (created if missing): true, or false with
 * a message.
 */
bool ext4_image_mount(const char *image, long bytes, int inodes,
		      const char *mnt);

#endif
