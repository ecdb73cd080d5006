// SPDX-License-Identifier: GPL-2.0
/*
 * The lockup "mm: Allow small allocations to fail" was written for,
 * reproduced on this kernel and run under each retry policy.
 *
 * The holder allocates page after page inside fallocate() on a memfd, with
 * the file's inode lock held.  The victim is the OOM killer's first choice
 * (oom_score_adj 1000): it maps 64 MiB of shared memory, which the OOM
 * reaper cannot free, and it is blocked on the same inode lock, in its own
 * fallocate(), before the OOM comes.  Killed, it cannot exit until the
 * holder drops the lock.  Six bystanders keep 8 MiB each and run on.  All
 * of them share one workload cgroup.  Outside it, a neighbour stands for a
 * system service: it makes small allocations in system calls all along,
 * and a limit that fails one of them has reached past the workload.
 *
 * With no limit the holder waits for the OOM killer, which waits for the
 * victim, which waits for the holder.  The OOM reaper breaks that circle
 * after OOM_REAPER_DELAY by marking the victim done without freeing its
 * memory, and the killer moves on to the bystanders and at last the holder.
 *
 * With a limit of 0 the holder's allocations never have the OOM killer
 * kill: its fallocate() fails with ENOMEM, frees its pages and drops the
 * lock, and the victim's own fallocate() goes through.  With a limit of N
 * the limit counts kills: the holder kills the victim (or finds it killed
 * by another task), waits for it to exit, and fails once the OOM reaper
 * has given up on it; it never kills past it.
 *
 * The faulting-copy holder writev()s into the locked file instead, from a
 * shared mapping of a sparse file nobody has read: every page it copies is
 * faulted in by the copy, a kernel-mode fault inside the call, under the
 * lock.  Those faults count against the call's limit: at 0 the copy
 * comes up short and the call returns what it wrote.  With a limit of N they
 * have it kill at most N times within the call, and never kill past a
 * victim that the OOM reaper is done with but that still has its memory.
 *
 * Cases: memcg OOM (memory.max on the workload) and global OOM (the guest's
 * memory), with the limit set through memory.alloc_retries or, for global
 * OOM, vm.retry_allocation_attempts; and, for comparison, memcg OOM
 * without a limit but with memory.oom.group=1, which ends the lockup by
 * killing the whole workload.  Each case runs several times (the
 * environment's ALLOC_LOCKUP_REPEAT, if set, for the cases that make demo
 * counts) and every run must hold its case's properties.  Every run is a
 * row of $ALLOC_TEST_RESULTS/lockup/runs.json; make demo renders them.
 *
 * Who invoked each OOM kill is read from the kernel log's "<comm> invoked
 * oom-killer" lines: the workload's tasks have names of their own.
 *
 * The order of events is forced, not hoped for: memory.high=0 throttles
 * the holder inside its call, lock held, while the victim queues on the
 * lock, and the OOM is let come only once /proc shows both of them there.
 * Global OOM without a limit kills system tasks, so it runs last.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_util.h"
#include "procfs.h"
#include "test_util.h"

#define MIB		(1L << 20)
#define PAGE		4096
#define VICTIM_BYTES	(64 * MIB)
#define BYSTANDERS	6
#define BYSTANDER_BYTES	(8 * MIB)
/* Room for the victim, the bystanders and some 40 MiB of the holder's. */
#define MEMCG_MAX	"160M"
/* More than the guest has: the holder's call ends only by failing. */
#define HOLDER_BYTES	(1L << 30)
/* The small N, beside 0 and max; for global OOM 1 as well. */
#define SMALL_N		"3"
/*
 * Runs of the cases whose outcome make demo counts: REPEAT in make check,
 * or ALLOC_LOCKUP_REPEAT if it is set.
 */
#define COUNTED		0
#define REPEAT		3
/* How often the neighbour fills its pipe with 16 pages. */
#define NEIGHBOUR_PERIOD_US	2000
/*
 * A run that has not ended by then has locked up: RUN_MARGIN_S short of
 * the kernel's hung-task timeout (run_timeout_s()), so that the test ends
 * a lockup before the detector reports its victim, and RUN_TIMEOUT_S
 * where there is no detector (or a timeout the margin does not fit).
 * The victim is blocked a little before the run's clock starts (the
 * marks in the log and the trace come between): the margin covers that.
 */
#define RUN_TIMEOUT_S	120
#define RUN_MARGIN_S	10
#define HUNG_TASK_TIMEOUT "/proc/sys/kernel/hung_task_timeout_secs"
#define SETUP_TIMEOUT_S	30
/* Where each is when the OOM is let come: the proof of the order. */
#define HOLDER_FRAME	"mem_cgroup_handle_over_high+"
#define VICTIM_FRAME	"shmem_fallocate+"

struct outcome;

/* A case: how its runs are set up, and what must hold of each. */
struct run {
	const char *test;	/* the TAP test case: its function */
	bool memcg;		/* memcg OOM, else global OOM */
	const char *policy;	/* "max", "0", "1" or SMALL_N */
	bool via_sysctl;	/* the limit is the sysctl's, not the cgroup's */
	/* Runs; COUNTED: REPEAT, or ALLOC_LOCKUP_REPEAT if set. */
	int repeat;
	/* What must hold of the outcome: true or false. */
	bool (*check)(const struct run *r, const struct outcome *o);
	/*
	 * The victim does not wait for the lock: it exits when killed, and
	 * every kill frees memory the holder's call goes on with.
	 */
	bool unlocked;
	/* memory.oom.group=1 on the workload: what an operator has today. */
	bool oom_group;
	/* The holder writev()s from an unpopulated mapping: faulting_copy(). */
	bool faulting_copy;
};

/* Written by the workload's tasks, read by the test. */
struct shared {
	int holder_errno;	/* of its call, 0 if it did not return -1 */
	long holder_wrote;	/* what its writev() returned */
	long holder_asked;	/* of its writev(), 0 for fallocate() */
	int holder_returned;
	double holder_end;	/* when the call returned, now_s() */
	long beats[BYSTANDERS];	/* rounds over its memory, per bystander */
	long neighbour_rounds;	/* pipe fillings by the neighbour */
	long neighbour_enomem;	/* of its writes that failed with ENOMEM */
};

struct outcome {
	bool set_up;		/* the victim was seen blocked on the lock */
	bool hung;		/* the workload had not ended by the timeout */
	int holder_status, victim_status;
	bool holder_returned;	/* from its call, not killed in it */
	int holder_errno;
	long holder_wrote, holder_asked;
	double holder_end;	/* when it returned, now_s() */
	long kills_in;		/* oom_kill of the workload's memory.events */
	long kills_out;
	char killed_out[256];	/* names of the tasks killed outside */
	int bystanders_ran_on;
	double released;	/* the OOM was let come, now_s() */
	double limit_hit;	/* memory.max first hit, now_s(); -1: never */
	double first_kill, end;	/* now_s() of those; first_kill -1: none */
	int holder_invoked;	/* OOM-killer invocations by the holder */
	char invokers[256];	/* who invoked each kill, in order */
	long oom, alloc_retry_fail;	/* workload's memory.events */
	int hits_out;		/* limit failures outside the workload */
	long neighbour_rounds, neighbour_enomem;
	char hit_out[256];	/* their tasks */
};

static const char *root;
static pid_t test_pid;
static char *workload, *neighbour;
static struct shared *sh;
/* The tasks say "ready"; "go" starts the victim, "holder_go" the holder. */
static int lock_fd, ready[2], go[2], holder_go[2];

/* Every run of every case so far, for runs.json. */
static struct outcome *outcomes;
static const struct run **outcome_case;
static size_t runs_done, runs_max;

static const char *oom_of(const struct run *r)
{
	return r->memcg ? "memcg" : "global";
}

/* "global 0 (sysctl)": how the messages name a run. */
static const char *label(const struct run *r)
{
	static char buf[64];

	snprintf(buf, sizeof(buf), "%s %s%s%s%s%s", oom_of(r), r->policy,
		 r->via_sysctl ? " (sysctl)" : "",
		 r->unlocked ? " (no lock)" : "",
		 r->oom_group ? " (memory.oom.group=1)" : "",
		 r->faulting_copy ? " (faulting copy)" : "");
	return buf;
}

/* Seconds from the first kill to @t; -1 if nothing was killed. */
static double since_first_kill(const struct outcome *o, double t)
{
	return o->first_kill < 0 ? -1 : t - o->first_kill;
}

/*
 * On the test's exit, ksft_exit_fail_msg() in a run included, kill what
 * still runs in its cgroups: the bystanders and the neighbour loop for
 * ever and hold the job's output open.  The children, which exit through
 * cg_run_nowait()'s exit(), inherit the handler and must not run it.
 */
static void kill_tasks(void)
{
	if (getpid() != test_pid)
		return;
	cg_write(workload, "cgroup.kill", "1");
	cg_write(neighbour, "cgroup.kill", "1");
}

/*
 * Tell the test this task is in place, and let go of the pipes: if another
 * task dies before it gets here, the test's read sees the end of the ready
 * pipe instead of waiting for ever; and with the start pipes' write ends
 * left to the test alone, a victim or holder waiting for go sees their end
 * if the test dies first.
 */
static void say_ready(void)
{
	close(go[1]);
	close(holder_go[1]);
	if (write(ready[1], "r", 1) != 1)
		_exit(3);
	close(ready[1]);
}

/*
 * Fault in 64 MiB of a memfd: shared memory, which the reaper skips.  Then
 * wait on the inode lock, or, if @arg says so, just wait to be killed.
 */
static int victim_main(const char *cgroup, void *arg)
{
	int fd = memfd_create("unreapable", 0);
	char *mem, c;

	prctl(PR_SET_NAME, "victim");
	set_oom_score_adj(1000);
	if (fd < 0 || ftruncate(fd, VICTIM_BYTES))
		return 2;
	mem = mmap(NULL, VICTIM_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	if (mem == MAP_FAILED)
		return 2;
	memset(mem, 1, VICTIM_BYTES);
	say_ready();
	if (read(go[0], &c, 1) != 1)
		return 3;
	if (arg)
		pause();
	/* Blocks on the inode lock the holder has. */
	fallocate(lock_fd, 0, 0, PAGE);
	/*
	 * Out at once: exit()'s handlers write pages the fork left
	 * copy-on-write, and after the faulting copy the workload is still
	 * full: such a fault, never limited, would kill.
	 */
	_exit(0);
}

/* Keep 8 MiB live and go over it again and again: "ran on" is visible. */
static int bystander_main(const char *cgroup, void *arg)
{
	long n = (long)arg, i;
	volatile char *mem = malloc(BYSTANDER_BYTES);

	prctl(PR_SET_NAME, "bystander");
	set_oom_score_adj(0);
	if (!mem)
		return 2;
	for (i = 0; i < BYSTANDER_BYTES; i += PAGE)
		mem[i] = 1;
	say_ready();
	for (;;) {
		for (i = 0; i < BYSTANDER_BYTES; i += PAGE)
			mem[i]++;
		sh->beats[n]++;
		usleep(50000);
	}
}

/*
 * Fill a pipe and empty it, again and again: each write but the first of
 * a filling allocates a fresh page (the pipe keeps one spare), in a system
 * call that can return ENOMEM.  A failed write is retried with the pages
 * in the pipe kept: freed, they would feed the holder.  oom_score_adj
 * -1000, as the OOM killer is not to take it: what it shows is whose
 * allocations a limit fails.
 */
static int neighbour_main(const char *cgroup, void *arg)
{
	char page[PAGE] = { 1 };
	int fds[2], i;

	prctl(PR_SET_NAME, "neighbour");
	set_oom_score_adj(-1000);
	if (pipe2(fds, O_NONBLOCK))
		return 2;
	say_ready();
	for (;;) {
		for (i = 0; i < 16; i++) {
			while (write(fds[1], page, PAGE) < 0 && errno == ENOMEM) {
				sh->neighbour_enomem++;
				usleep(2000);
			}
		}
		while (read(fds[0], page, PAGE) > 0)
			;
		sh->neighbour_rounds++;
		usleep(NEIGHBOUR_PERIOD_US);
	}
}

/*
 * How much the holder's fallocate() asks for.  On a kernel without the
 * series (qemu/repro-clear-page runs the global case at 0 there too,
 * with ALLOC_LOCKUP_STOCK set) no limit fails the call at the OOM point:
 * it fills memory to MemAvailable less STOCK_EDGE and returns, leaving
 * the memory where a limit of 0 leaves it, and no task is killed.
 */
#define STOCK_EDGE	(8 * MIB)

static long holder_bytes(void)
{
	long long avail;

	if (!getenv("ALLOC_LOCKUP_STOCK"))
		return HOLDER_BYTES;
	avail = procfs_meminfo("MemAvailable");
	if (avail < 0)
		ksft_exit_fail_msg("no MemAvailable in /proc/meminfo\n");
	return avail - STOCK_EDGE;
}

/* The iovecs of the faulting-copy holder's writev(): IOV_MAX at most. */
#define COPY_IOVS	64

/* Where the faulting-copy holder's source lives: the guest's ext4 root. */
#define COPY_SOURCE_DIR	"/var/tmp"

/*
 * The faulting-copy holder's source: a shared mapping of @bytes of a
 * sparse file nobody has read, so that the copy faults in every page of
 * it (a page cache page allocated in the fault; MADV_RANDOM: no readahead
 * allocates ahead of it) while the locked file's inode lock is held.  The
 * pages are clean page cache, which reclaim takes back once copied: a
 * memfd source would double what the copy holds, and under global OOM
 * leave the holder, its call returned, the largest task in a full guest
 * until it has unmapped it, the next victim of any other task's fault (2
 * runs in 6).  false if it cannot be made.
 */
static bool copy_source(long bytes, struct iovec *iov, int *fd)
{
	long each = bytes / COPY_IOVS / PAGE * PAGE;
	char *src;
	int i;

	sh->holder_asked = each * COPY_IOVS;
	*fd = open(COPY_SOURCE_DIR, O_TMPFILE | O_RDWR, 0600);
	if (*fd < 0 || ftruncate(*fd, each * COPY_IOVS))
		return false;
	src = mmap(NULL, each * COPY_IOVS, PROT_READ, MAP_SHARED, *fd, 0);
	if (src == MAP_FAILED ||
	    madvise(src, each * COPY_IOVS, MADV_RANDOM))
		return false;
	for (i = 0; i < COPY_IOVS; i++)
		iov[i] = (struct iovec){ src + i * each, each };
	return true;
}

/*
 * One small allocation after another, all under the inode lock.  It starts
 * before memory.high=0 and faults in what it will touch on its way into
 * and out of its call (the call, the clock, its stack, the shared page,
 * and their page tables, which are charged): throttled in a page fault of
 * its own first, as it was on the debug kernel, it may not get into its
 * call within SETUP_TIMEOUT_S.
 */
static int holder_main(const char *cgroup, void *arg)
{
	struct iovec iov[COPY_IOVS];
	bool copy = arg;
	int source;
	long ret;
	char c;

	prctl(PR_SET_NAME, "holder");
	set_oom_score_adj(0);
	/*
	 * Its text and data stay in memory (before the source is mapped,
	 * which it would fault in): at the OOM point reclaim takes every
	 * file page, and a holder back from its call that faults its own
	 * code back in meets the OOM killer, with its source still mapped.
	 */
	if (!fallocate(lock_fd, 0, 0, 0) || errno != EINVAL ||
	    writev(lock_fd, NULL, 0) || mlockall(MCL_CURRENT) ||
	    (copy && !copy_source(holder_bytes(), iov, &source)))
		return 2;
	now_s();
	sh->holder_returned = 0;
	say_ready();
	if (read(holder_go[0], &c, 1) != 1)
		return 3;
	ret = copy ? writev(lock_fd, iov, COPY_IOVS) :
		     fallocate(lock_fd, 0, 0, holder_bytes());
	sh->holder_errno = ret < 0 ? errno : 0;
	sh->holder_wrote = ret;
	sh->holder_end = now_s();
	sh->holder_returned = 1;
	/*
	 * Then it gives back what its call took, as a failed fallocate()
	 * does: what it wrote (once the victim has had the lock) and its
	 * source, whose mapped pages count in its RSS, which is how the OOM
	 * killer picks.  What the call did is measured; a guest it left
	 * full would have the unlimited tasks' faults kill whoever is
	 * largest, which no limit of the holder's governs.
	 */
	if (copy) {
		munmap(iov[0].iov_base, sh->holder_asked);
		close(source);
		if (ftruncate(lock_fd, 0))
			_exit(4);
	}
	/*
	 * Exit without a page the fork left copy-on-write, whose fault
	 * (never limited) would make the OOM killer kill in a full workload.
	 * The programs are linked with -z now: no lazy binding writes either.
	 */
	_exit(0);
}

/*
 * Wait until @pid is in fallocate() (@copy: writev()), in @state, with
 * @frame on top of its kernel stack; if it never is, say what /proc
 * showed.  The stack leaves out the scheduler and the locking functions:
 * a task asleep on the inode lock has shmem_fallocate+ on top.
 */
static bool wait_in_call(const char *who, pid_t pid, bool copy, char state,
			 const char *frame)
{
	double end = now_s() + SETUP_TIMEOUT_S;
	char seen[512];

	while (!task_in_syscall(pid, copy ? SYS_writev : SYS_fallocate, state,
				copy ? "shmem_file_write_iter" :
				       "shmem_fallocate",
				frame, seen, sizeof(seen))) {
		if (now_s() > end || usleep(20000)) {
			ksft_print_msg("the %s never got to %s: %s\n", who,
				       frame, seen);
			return false;
		}
	}
	return true;
}

#define PRINTK "/proc/sys/kernel/printk"

/*
 * Keep warnings (the OOM and failure reports) off the serial console, or
 * let them back on.  The faulting copy leaves the guest full when its call
 * fails, and other tasks' page faults meet the OOM killer at once: a task
 * that prints a report at 115200 baud, or is handed others' reports to
 * print, holds the inode lock and the CPU for tenths of a second, in
 * which the killer passes over the victim once it has exited and takes the
 * holder, its call not yet back (1 run in 3 with the console).  The log
 * keeps every line; only the console's pace is taken out of the case.
 */
static void console_quiet(bool quiet)
{
	static long long level;
	char buf[24];
	int len;

	if (quiet)
		level = procfs_number(PRINTK);
	/* The first of the file's four numbers: the console's level. */
	len = snprintf(buf, sizeof(buf), "%lld", quiet ? 4 : level);
	if (level <= 0 || write_file_errno(PRINTK, buf, len))
		ksft_exit_fail_msg("cannot set the console's log level\n");
}

/* The workload cgroup with memory.max and the limit of @r. */
static void workload_create(const struct run *r)
{
	cg_destroy(workload);
	if (cg_create(workload) ||
	    cg_write(workload, "memory.max", r->memcg ? MEMCG_MAX : "max") ||
	    (!getenv("ALLOC_LOCKUP_STOCK") &&
	     alloc_retries_set(workload, r->via_sysctl ? "max" : r->policy)) ||
	    (r->oom_group && cg_write(workload, "memory.oom.group", "1")))
		ksft_exit_fail_msg("cannot set up %s\n", workload);
}

struct kill_scan {
	const char *workload_path;
	char *names;
	size_t size;
	int *holder_invoked;
	char *invokers;
	size_t invokers_size;
};

/* Add @len bytes of @name to a list of task names, fit for JSON. */
static void append_name(char *names, size_t size, const char *name, int len)
{
	size_t used = strlen(names);
	char *p;

	snprintf(names + used, size - used, "%s%.*s", used ? " " : "", len,
		 name);
	for (p = names + used; *p; p++)
		if (*p == '"' || *p == '\\' || (unsigned char)*p < ' ')
			*p = '_';
}

/* An "oom-kill:...,task_memcg=/x,task=name,pid=N" record outside. */
static void scan_kill(const char *rec, void *arg)
{
	struct kill_scan *ks = arg;
	const char *memcg = strstr(rec, ",task_memcg="), *task, *end;
	const char *text = strchr(rec, ';');
	const char *invoked = strstr(rec, " invoked oom-killer");

	if (strstr(rec, "holder invoked oom-killer"))
		(*ks->holder_invoked)++;
	if (text && invoked && invoked > text)
		append_name(ks->invokers, ks->invokers_size, text + 1,
			    invoked - text - 1);
	if (!strstr(rec, "oom-kill:") || !memcg)
		return;
	memcg += strlen(",task_memcg=");
	task = strstr(memcg, ",task=");
	if (!task)
		return;
	if ((size_t)(task - memcg) == strlen(ks->workload_path) &&
	    !strncmp(memcg, ks->workload_path, task - memcg))
		return;
	task += strlen(",task=");
	end = strchr(task, ',');
	append_name(ks->names, ks->size, task,
		    end ? end - task : (int)strlen(task));
}

struct hit_scan {
	unsigned long workload_id;
	struct outcome *o;
};

/* An oom:alloc_retry_fail event of a task outside the workload. */
static void scan_hit(const char *line, void *arg)
{
	struct hit_scan *hs = arg;
	const char *id = strstr(line, "alloc_retry_fail: cgroup_id=");
	const char *comm = line + strspn(line, " ");

	if (!id || strtoul(id + strlen("alloc_retry_fail: cgroup_id="),
			   NULL, 10) == hs->workload_id)
		return;
	hs->o->hits_out++;
	append_name(hs->o->hit_out, sizeof(hs->o->hit_out), comm,
		    strcspn(comm, " "));
}

/* How long a run may take before it counts as locked up, in seconds. */
static int run_timeout_s(void)
{
	static int timeout;
	long long hung;

	if (!timeout) {
		hung = procfs_number(HUNG_TASK_TIMEOUT);
		timeout = hung > RUN_MARGIN_S && hung <= INT_MAX ?
			  hung - RUN_MARGIN_S : RUN_TIMEOUT_S;
	}
	return timeout;
}

/*
 * Wait for the holder and the victim to end, noting when the workload's
 * first OOM kill came (memory.events, which notifies its readers).  Under
 * a global limit of 0 any of this may fail with ENOMEM: it is retried.
 */
static void wait_workload(pid_t holder, pid_t victim, struct outcome *o)
{
	struct pollfd pfd[3] = {
		{ .fd = cg_open(workload, "memory.events", O_RDONLY),
		  .events = POLLPRI },
		{ .fd = syscall(SYS_pidfd_open, holder, 0), .events = POLLIN },
		{ .fd = syscall(SYS_pidfd_open, victim, 0), .events = POLLIN },
	};
	double start = now_s();
	int *status[3] = { NULL, &o->holder_status, &o->victim_status };
	pid_t pids[3] = { 0, holder, victim };
	char buf[1024], *p;
	int left = 2, i;
	ssize_t len;

	o->first_kill = -1;
	o->limit_hit = -1;
	if (pfd[0].fd < 0 || pfd[1].fd < 0 || pfd[2].fd < 0)
		ksft_exit_fail_msg("memory.events or pidfd_open: %s\n",
				   strerror(errno));
	while (left) {
		poll(pfd, 3, 100);
		len = pread(pfd[0].fd, buf, sizeof(buf) - 1, 0);
		if (len > 0)
			buf[len] = '\0';
		if (o->first_kill < 0 && len > 0) {
			p = strstr(buf, "oom_kill ");
			if (p && strtol(p + strlen("oom_kill "), NULL, 10) > 0)
				o->first_kill = now_s();
		}
		if (o->limit_hit < 0 && len > 0) {
			p = strstr(buf, "\nmax ");
			if (p && strtol(p + strlen("\nmax "), NULL, 10) > 0)
				o->limit_hit = now_s();
		}
		for (i = 1; i < 3; i++) {
			if (pfd[i].fd < 0 || !(pfd[i].revents & POLLIN))
				continue;
			if (waitpid(pids[i], status[i], 0) != pids[i])
				continue;
			close(pfd[i].fd);
			pfd[i].fd = -1;
			o->end = now_s();
			left--;
		}
		if (left && !o->hung && now_s() - start > run_timeout_s()) {
			o->hung = true;
			kill(holder, SIGKILL);
			kill(victim, SIGKILL);
		}
	}
	close(pfd[0].fd);
}

/* Which bystanders ran on after the OOM; then end them. */
static void bystanders_collect(pid_t *pids, struct outcome *o)
{
	long before[BYSTANDERS];
	int i;

	memcpy(before, sh->beats, sizeof(before));
	usleep(300000);
	for (i = 0; i < BYSTANDERS; i++)
		if (waitpid(pids[i], NULL, WNOHANG) != pids[i] &&
		    sh->beats[i] > before[i])
			o->bystanders_ran_on++;
	for (i = 0; i < BYSTANDERS; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
}

static void run_once(const struct run *r, struct outcome *o)
{
	pid_t holder, victim, bystanders[BYSTANDERS], outside;
	long kills_before, kills_after;
	struct kill_scan ks;
	struct hit_scan hs;
	struct stat st;
	int i, kmsg;
	char c;

	workload_create(r);
	if (stat(workload, &st))
		ksft_exit_fail_msg("%s: %s\n", workload, strerror(errno));
	memset(sh, 0, sizeof(*sh));
	lock_fd = memfd_create("locked-inode", 0);
	if (lock_fd < 0 || pipe(ready) || pipe(go) || pipe(holder_go))
		ksft_exit_fail_msg("memfd or pipe: %s\n", strerror(errno));

	victim = cg_run_nowait(workload, victim_main,
			       r->unlocked ? (void *)1 : NULL);
	for (i = 0; i < BYSTANDERS; i++)
		bystanders[i] = cg_run_nowait(workload, bystander_main,
					      (void *)(long)i);
	outside = cg_run_nowait(neighbour, neighbour_main, NULL);
	holder = cg_run_nowait(workload, holder_main,
			       r->faulting_copy ? (void *)1 : NULL);
	close(ready[1]);
	for (i = 0; i < BYSTANDERS + 3; i++)
		if (read(ready[0], &c, 1) != 1)
			ksft_exit_fail_msg("a task died while starting\n");

	/* Throttle the holder inside its call, then queue the victim. */
	if (cg_write(workload, "memory.high", "0"))
		ksft_exit_fail_msg("cannot write memory.high\n");
	if (write(holder_go[1], "g", 1) != 1)
		ksft_exit_fail_msg("cannot start the holder\n");
	o->set_up = wait_in_call("holder", holder, r->faulting_copy, 0,
				 HOLDER_FRAME);
	if (write(go[1], "g", 1) != 1)
		ksft_exit_fail_msg("cannot start the victim\n");
	o->set_up = o->set_up && (r->unlocked ||
		    wait_in_call("victim", victim, false, 'D', VICTIM_FRAME));
	ksft_print_msg("%s: %s\n", label(r),
		       o->set_up ? "in its call, the holder sleeps at " HOLDER_FRAME
				   " with the lock, the victim in D at " VICTIM_FRAME
				   " on it" :
				   "the holder or the victim never got to its place: the run proves nothing");

	kills_before = vmstat("oom_kill");
	kmsg = kmsg_mark();
	trace_start();
	if (!r->memcg && r->faulting_copy)
		console_quiet(true);
	if (r->via_sysctl && retry_sysctl_set(r->policy))
		ksft_exit_fail_msg("cannot set the sysctl to %s\n", r->policy);
	/* Let the OOM come. */
	o->released = now_s();
	if (cg_write(workload, "memory.high", "max"))
		ksft_exit_fail_msg("cannot write memory.high\n");
	wait_workload(holder, victim, o);
	if (!r->memcg && r->faulting_copy)
		console_quiet(false);
	o->holder_returned = sh->holder_returned;
	o->holder_errno = sh->holder_errno;
	o->holder_wrote = sh->holder_wrote;
	o->holder_asked = sh->holder_asked;
	o->holder_end = sh->holder_end;
	if (r->via_sysctl && retry_sysctl_set("-1"))
		ksft_exit_fail_msg("cannot reset the sysctl\n");
	bystanders_collect(bystanders, o);
	kill(outside, SIGKILL);
	waitpid(outside, NULL, 0);
	o->neighbour_rounds = sh->neighbour_rounds;
	o->neighbour_enomem = sh->neighbour_enomem;

	kills_after = vmstat("oom_kill");
	o->oom = cg_event(workload, "memory.events", "oom");
	o->kills_in = cg_event(workload, "memory.events", "oom_kill");
	o->alloc_retry_fail = cg_event(workload, "memory.events",
				       "alloc_retry_fail");
	o->kills_out = kills_after - kills_before - o->kills_in;
	ks = (struct kill_scan){ cg_kernel_path(workload), o->killed_out,
				 sizeof(o->killed_out), &o->holder_invoked,
				 o->invokers, sizeof(o->invokers) };
	kmsg_for_each(kmsg, scan_kill, &ks);
	hs = (struct hit_scan){ st.st_ino, o };
	if (trace_for_each(scan_hit, &hs))
		ksft_exit_fail_msg("cannot read the trace buffer\n");

	close(ready[0]);
	close(go[0]);
	close(go[1]);
	close(holder_go[0]);
	close(holder_go[1]);
	close(lock_fd);
	if (cg_destroy(workload))
		ksft_print_msg("rmdir %s: %s\n", workload, strerror(errno));
}

/* How a task that was waited for ended, as the table says it. */
static const char *ending(int status)
{
	if (WIFSIGNALED(status))
		return WTERMSIG(status) == SIGKILL ? "killed" : "signalled";
	return "exited";
}

/*
 * How long the holder's call took to fail once memory ran out: from the
 * workload's first memory.max hit under memcg OOM; under global OOM, from
 * the moment the OOM was let come, which includes filling the guest.
 */
static double holder_stall(const struct run *r, const struct outcome *o)
{
	double from = r->memcg && o->limit_hit >= 0 ? o->limit_hit :
						      o->released;

	return o->holder_returned ? o->holder_end - from : -1;
}

static void holder_said(const struct outcome *o, char *buf, size_t size)
{
	int len;

	if (o->hung)
		snprintf(buf, size, "did not end in %d s", run_timeout_s());
	else if (!o->holder_returned)
		snprintf(buf, size, "%s", ending(o->holder_status));
	else if (o->holder_asked && !o->holder_errno)
		snprintf(buf, size, "wrote %ld of %ld MiB %.2f s after the OOM came",
			 o->holder_wrote / MIB, o->holder_asked / MIB,
			 o->holder_end - o->released);
	else
		snprintf(buf, size, "%s %.2f s after the OOM came",
			 o->holder_errno ? strerrorname_np(o->holder_errno) :
					   "0", o->holder_end - o->released);
	len = strlen(buf);
	if (o->holder_returned && WIFSIGNALED(o->holder_status))
		snprintf(buf + len, size - len, ", then killed");
}

/*
 * The holder's call returned, failed: with ENOMEM; the faulting copy's
 * short, or with EFAULT if it copied nothing.
 */
static bool holder_call_failed(const struct outcome *o)
{
	if (!o->holder_returned)
		return false;
	if (o->holder_errno == ENOMEM)
		return true;
	return o->holder_asked && (o->holder_errno == EFAULT ||
				   (!o->holder_errno &&
				    o->holder_wrote < o->holder_asked));
}

/*
 * No spree: the holder's call failed and returned, every bystander ran on,
 * and at most the victim was killed in the workload.
 */
static bool no_spree(const struct outcome *o)
{
	return o->set_up && !o->hung && holder_call_failed(o) &&
	       o->bystanders_ran_on == BYSTANDERS && o->kills_in <= 1;
}

/* Every run so far, as JSON: rewritten after each run. */
static void runs_write(void)
{
	const char *dir = getenv("ALLOC_TEST_RESULTS");
	char path[PATH_MAX];
	FILE *js;
	size_t i;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/lockup", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/lockup/runs.json", dir);
	js = fopen(path, "w");
	if (!js)
		ksft_exit_fail_msg("cannot write %s: %s\n", path,
				   strerror(errno));
	fprintf(js, "[\n");
	for (i = 0; i < runs_done; i++) {
		const struct run *r = outcome_case[i];
		const struct outcome *o = &outcomes[i];
		char said[80];

		holder_said(o, said, sizeof(said));
		fprintf(js, "  {\"case\": \"%s\", \"oom\": \"%s\", \"holder_call\": \"%s\", \"victim_on_lock\": %s, \"limit\": \"%s\", \"via\": \"%s\", \"set_up\": %s, \"hung\": %s, \"no_spree\": %s, \"kills_in\": %ld, \"kills_out\": %ld, \"killed_out\": \"%s\", \"holder_invoked\": %d, \"invokers\": \"%s\", \"holder\": \"%s\", \"holder_failed\": %s, \"holder_stall_s\": %.3f, \"victim\": \"%s\", \"bystanders\": %d, \"bystanders_ran_on\": %d, \"first_kill_to_end_s\": %.3f, \"oom_events\": %ld, \"alloc_retry_fail\": %ld, \"hits_out\": %d, \"hit_out\": \"%s\", \"neighbour_rounds\": %ld, \"neighbour_enomem\": %ld}%s\n",
			r->test, oom_of(r),
			r->faulting_copy ? "writev" : "fallocate",
			r->unlocked ? "false" : "true",
			r->policy,
			r->via_sysctl ? "sysctl" :
			r->oom_group ? "oom.group" : "cgroup",
			o->set_up ? "true" : "false",
			o->hung ? "true" : "false",
			no_spree(o) ? "true" : "false", o->kills_in,
			o->kills_out, o->killed_out, o->holder_invoked,
			o->invokers, said,
			holder_call_failed(o) ? "true" : "false",
			holder_stall(r, o),
			ending(o->victim_status), BYSTANDERS,
			o->bystanders_ran_on, since_first_kill(o, o->end),
			o->oom, o->alloc_retry_fail, o->hits_out, o->hit_out,
			o->neighbour_rounds, o->neighbour_enomem,
			i + 1 < runs_done ? "," : "");
	}
	fprintf(js, "]\n");
	fclose(js);
}

/* Without a limit the lockup is there: the killing goes past the victim. */
static bool reproduces(const struct run *r, const struct outcome *o)
{
	return o->set_up && !o->hung && o->kills_in > 1;
}

/* A per-cgroup limit fails nothing outside its cgroup. */
static bool contained(const struct run *r, const struct outcome *o)
{
	return r->via_sysctl ||
	       (o->hits_out == 0 && o->neighbour_enomem == 0);
}

/* The holder's call failed, counted, having invoked <= @n. */
static bool holder_failed(const struct outcome *o, int n)
{
	return holder_call_failed(o) &&
	       o->alloc_retry_fail >= 1 && o->holder_invoked <= n;
}

/*
 * Memcg OOM at 0: nothing else allocates in the workload, so its memory
 * stays as it is.  The holder's call fails without an OOM kill; the victim
 * gets the lock, completes its own fallocate() and exits by itself; every
 * bystander runs on.
 */
static bool kills_nobody(const struct run *r, const struct outcome *o)
{
	return o->set_up && !o->hung && contained(r, o) &&
	       holder_failed(o, 0) && o->kills_in == 0 &&
	       WIFEXITED(o->victim_status) &&
	       WEXITSTATUS(o->victim_status) == 0 &&
	       o->bystanders_ran_on == BYSTANDERS;
}

/*
 * Memcg OOM at N: the holder's call fails, having had the OOM killer kill
 * at most N times, and the killing stops at the victim: at most one kill
 * in the workload, every bystander runs on.
 */
static bool ends_without_spree(const struct run *r, const struct outcome *o)
{
	int n = atoi(r->policy);

	return contained(r, o) && no_spree(o) && holder_failed(o, n) &&
	       (o->kills_in == 1) == !!WIFSIGNALED(o->victim_status);
}

/*
 * The victim does not wait for the lock: every kill frees memory, and the
 * holder's call goes on.  Its allocations may have the OOM killer kill N
 * times in the call, and then the call fails: at most N kills in the
 * workload, all of them the holder's.  A count per allocation would start
 * again with every page and kill one task after another.
 */
static bool kills_at_most_n(const struct run *r, const struct outcome *o)
{
	int n = atoi(r->policy);

	return o->set_up && !o->hung && contained(r, o) &&
	       holder_failed(o, n) && o->kills_in <= n;
}

/*
 * The sysctl at N limits every task, the neighbour's and systemd's system
 * calls too, and they contend with the holder for oom_lock; page faults
 * are never limited, and a fault may kill past the victim once the OOM
 * reaper has given up on it.  What the limit guarantees is the holder's
 * part: its call fails, having had the killer kill at most N times.
 */
static bool holder_fails_within_n(const struct run *r,
				  const struct outcome *o)
{
	return o->set_up && !o->hung && holder_failed(o, atoi(r->policy));
}

/*
 * Global OOM at N > 0: the holder kills the victim, or finds it killed by
 * another task, waits for it, and fails once the OOM reaper has given up
 * on it; but every task outside the limit (a page fault, systemd) invokes
 * the killer too, and may kill past the victim once the reaper is done
 * with it, although for half a second after the holder last waited they
 * hold off (ALLOC_RETRY_WAIT_GRACE).  What the limit guarantees is the
 * holder's part: its call fails within N kills, it kills at most the
 * victim (never past a stuck one), and nothing outside the workload
 * fails.  At 0 that is: it kills nobody.  There too page faults, never
 * limited, kill meanwhile: the victim, before the holder comes to its
 * OOM stage, and at times a bystander.
 */
static bool holder_never_kills_past_the_victim(const struct run *r,
					       const struct outcome *o)
{
	return holder_fails_within_n(r, o) && contained(r, o) &&
	       o->holder_invoked <= 1;
}

/*
 * Global OOM at 0, the faulting copy: the copy's faults count against the
 * holder's call, which comes back short without invoking the killer, and
 * the holder exits by itself.  What the call wrote stays in the guest
 * until the holder has had the lock back to truncate it, and meanwhile
 * other tasks' page faults, which no limit governs, may kill a task of the
 * workload (a bystander 0.13 s after the call returned, in 1 run of 3):
 * the kills are reported, not bounded, here.
 */
static bool copy_returns_without_killing(const struct run *r,
					 const struct outcome *o)
{
	return holder_never_kills_past_the_victim(r, o) &&
	       o->holder_invoked == 0 &&
	       WIFEXITED(o->holder_status) && !WEXITSTATUS(o->holder_status);
}

/*
 * memory.oom.group=1 without a limit, today's remedy: the first OOM kill
 * takes the whole workload, the holder with it, so its call ends and the
 * lock with it, and the lockup ends with the workload: nothing of it
 * runs on, and nothing outside it is killed.
 */
static bool kills_the_group(const struct run *r, const struct outcome *o)
{
	return o->set_up && !o->hung && o->kills_out == 0 &&
	       WIFSIGNALED(o->holder_status) && WIFSIGNALED(o->victim_status) &&
	       o->bystanders_ran_on == 0 && o->kills_in >= 2 + BYSTANDERS;
}

/* How many runs of @r. */
static int repeat_of(const struct run *r)
{
	const char *env = getenv("ALLOC_LOCKUP_REPEAT");
	char *end;
	long n;

	if (r->repeat != COUNTED)
		return r->repeat;
	if (!env)
		return REPEAT;
	n = strtol(env, &end, 10);
	if (*end || n < 1 || n > 1000)
		ksft_exit_fail_msg("ALLOC_LOCKUP_REPEAT: not a count from 1 to 1000: \"%s\"\n",
				   env);
	return n;
}

/* One run of @r: run it, report it, add it to the runs, check it. */
static bool run_one(const struct run *r, int i, int n)
{
	struct outcome *o;
	char said[80];

	if (runs_done == runs_max) {
		runs_max = runs_max ? 2 * runs_max : 64;
		outcomes = realloc(outcomes, runs_max * sizeof(*outcomes));
		outcome_case = realloc(outcome_case,
				       runs_max * sizeof(*outcome_case));
		if (!outcomes || !outcome_case)
			ksft_exit_fail_msg("out of memory\n");
	}
	o = &outcomes[runs_done];
	memset(o, 0, sizeof(*o));
	outcome_case[runs_done] = r;
	run_once(r, o);
	runs_done++;
	holder_said(o, said, sizeof(said));
	ksft_print_msg("%s, run %d of %d: %ld killed in the workload (%d by the holder), %ld outside%s%s; kills invoked by: %s; holder: %s; victim %s; %d of %d bystanders ran on; oom %ld, alloc_retry_fail %ld; %d limit hits outside%s%s; neighbour: %ld ENOMEM in %ld fillings; %s\n",
		       label(r), i + 1, n, o->kills_in, o->holder_invoked,
		       o->kills_out, o->kills_out ? ": " : "", o->killed_out,
		       o->invokers[0] ? o->invokers : "nobody", said,
		       ending(o->victim_status), o->bystanders_ran_on,
		       BYSTANDERS, o->oom, o->alloc_retry_fail, o->hits_out,
		       o->hits_out ? ": " : "", o->hit_out,
		       o->neighbour_enomem, o->neighbour_rounds,
		       no_spree(o) ? "no spree" : "a spree or no ending");
	runs_write();
	/* The kernel log names at most 10 OOM invokers per 5 s. */
	if (o->kills_in + o->kills_out > 5)
		sleep(6);
	return r->check(r, o);
}

/* A case: every one of its runs must hold. */
static int run_case(const struct run *r)
{
	int i, n = repeat_of(r), passed = 0;

	for (i = 0; i < n; i++)
		passed += run_one(r, i, n);
	ksft_print_msg("%s: %d of %d runs held\n", label(r), passed, n);
	return passed == n ? KSFT_PASS : KSFT_FAIL;
}

/*
 * The cases, in the order they run.  Each run's outcome is kept for
 * runs.json: the struct run a case passes lives as long as the program.
 */
static int test_memcg_oom_without_limit_kills_past_the_victim(void)
{
	static const struct run r = {
		.test = __func__, .memcg = true, .policy = "max",
		.repeat = 1, .check = reproduces,
	};

	return run_case(&r);
}

static int test_memcg_oom_group_kills_the_whole_workload(void)
{
	static const struct run r = {
		.test = __func__, .memcg = true, .policy = "max",
		.repeat = COUNTED, .check = kills_the_group, .oom_group = true,
	};

	return run_case(&r);
}

static int test_memcg_oom_cgroup_limit_0_kills_nobody(void)
{
	static const struct run r = {
		.test = __func__, .memcg = true, .policy = "0",
		.repeat = COUNTED, .check = kills_nobody,
	};

	return run_case(&r);
}

static int test_memcg_oom_cgroup_limit_n_ends_without_spree(void)
{
	static const struct run r = {
		.test = __func__, .memcg = true, .policy = SMALL_N,
		.repeat = COUNTED, .check = ends_without_spree,
	};

	return run_case(&r);
}

static int test_memcg_oom_cgroup_limit_n_kills_at_most_n_in_a_call(void)
{
	static const struct run r = {
		.test = __func__, .memcg = true, .policy = SMALL_N,
		.repeat = 2, .check = kills_at_most_n, .unlocked = true,
	};

	return run_case(&r);
}

static int test_memcg_oom_cgroup_limit_0_faulting_copy_kills_nobody(void)
{
	static const struct run r = {
		.test = __func__, .memcg = true, .policy = "0",
		.repeat = COUNTED, .check = kills_nobody,
		.faulting_copy = true,
	};

	return run_case(&r);
}

static int test_global_oom_cgroup_limit_0_faulting_copy_returns_without_killing(void)
{
	static const struct run r = {
		.test = __func__, .policy = "0",
		.repeat = COUNTED, .check = copy_returns_without_killing,
		.faulting_copy = true,
	};

	return run_case(&r);
}

static int test_global_oom_cgroup_limit_0_holder_kills_nobody(void)
{
	static const struct run r = {
		.test = __func__, .policy = "0",
		.repeat = COUNTED, .check = holder_never_kills_past_the_victim,
	};

	return run_case(&r);
}

static int test_global_oom_cgroup_limit_1_holder_never_kills_past_the_victim(void)
{
	static const struct run r = {
		.test = __func__, .policy = "1",
		.repeat = COUNTED, .check = holder_never_kills_past_the_victim,
	};

	return run_case(&r);
}

static int test_global_oom_cgroup_limit_n_holder_never_kills_past_the_victim(void)
{
	static const struct run r = {
		.test = __func__, .policy = SMALL_N,
		.repeat = 2, .check = holder_never_kills_past_the_victim,
	};

	return run_case(&r);
}

static int test_global_oom_sysctl_0_holder_kills_nobody(void)
{
	static const struct run r = {
		.test = __func__, .policy = "0", .via_sysctl = true,
		.repeat = 2, .check = holder_never_kills_past_the_victim,
	};

	return run_case(&r);
}

static int test_global_oom_sysctl_n_holder_fails_within_n(void)
{
	static const struct run r = {
		.test = __func__, .policy = SMALL_N, .via_sysctl = true,
		.repeat = 1, .check = holder_fails_within_n,
	};

	return run_case(&r);
}

/* Last: without a limit it OOM-kills tasks outside the workload. */
static int test_global_oom_without_limit_kills_past_the_victim(void)
{
	static const struct run r = {
		.test = __func__, .policy = "max",
		.repeat = 1, .check = reproduces,
	};

	return run_case(&r);
}

int main(int argc, char **argv)
{
	static const struct test_case tests[] = {
		TEST_CASE(test_memcg_oom_without_limit_kills_past_the_victim),
		TEST_CASE(test_memcg_oom_group_kills_the_whole_workload),
		TEST_CASE(test_memcg_oom_cgroup_limit_0_kills_nobody),
		TEST_CASE(test_memcg_oom_cgroup_limit_n_ends_without_spree),
		TEST_CASE(test_memcg_oom_cgroup_limit_n_kills_at_most_n_in_a_call),
		TEST_CASE(test_memcg_oom_cgroup_limit_0_faulting_copy_kills_nobody),
		TEST_CASE(test_global_oom_cgroup_limit_0_holder_kills_nobody),
		TEST_CASE(test_global_oom_cgroup_limit_0_faulting_copy_returns_without_killing),
		TEST_CASE(test_global_oom_cgroup_limit_1_holder_never_kills_past_the_victim),
		TEST_CASE(test_global_oom_cgroup_limit_n_holder_never_kills_past_the_victim),
		TEST_CASE(test_global_oom_sysctl_0_holder_kills_nobody),
		TEST_CASE(test_global_oom_sysctl_n_holder_fails_within_n),
		TEST_CASE(test_global_oom_without_limit_kills_past_the_victim),
	};

	root = test_cgroup_root();
	test_pid = getpid();
	atexit(kill_tasks);
	workload = cg_name(root, "lockup");
	neighbour = cg_name(root, "neighbour");
	cg_destroy(neighbour);
	if (cg_create(neighbour))
		ksft_exit_fail_msg("cannot create %s\n", neighbour);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	memset(sh, 0, sizeof(*sh));
	/*
	 * The test must outlive the killing it sets off, and not take part
	 * in it: a fault of its own, its code read back in at the OOM point,
	 * would invoke the OOM killer on a run's workload.
	 */
	set_oom_score_adj(-1000);
	if (mlockall(MCL_CURRENT))
		ksft_exit_fail_msg("mlockall: %s\n", strerror(errno));
	run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
