// SPDX-License-Identifier: GPL-2.0
/*
 * Ordinary OOMs, with no lock in the way: what a retry limit of N does
 * where the lockup it is for is not.  N counts kills; a wait for a victim
 * to exit is not one.
 *
 * Memcg OOM: a hog (oom_score_adj 1000) fills three quarters of a cgroup's
 * memory.max, then a probe in a child cgroup pins half of it in pipe
 * buffers, one page per write().  Those writes are the allocations that
 * reach the OOM stage.  At "max" the OOM killer kills the hog and every
 * write succeeds, as today.  At 1 the same: one kill, invoked by the
 * probe's write, which waits for the hog to exit and then succeeds; and
 * the kill comes no sooner or later than at "max" (the limit does not move
 * the OOM point).  At 0 the write fails with ENOMEM and nobody is killed.
 *
 * Dirty page cache: a writer fills a cgroup with dirty pages of a file on
 * ext4, which reclaim must wait to write back.  Where "max" needed no OOM
 * kill, a limit of 0 or 1 fails none of the writer's write()s.
 *
 * A victim stuck elsewhere, under global OOM: a task blocked for good
 * inside a system call (a write() to a frozen filesystem stands for a dead
 * NFS server) is OOM-killed in a cgroup of its own, and the OOM reaper
 * gives up on it with its shared memory still in place.  A limited
 * allocation fails past such a victim only in the subtree of the cgroup
 * whose memory.alloc_retries set its limit.  So with the victim outside a
 * workload at 1, a probe in the workload meets a global OOM: the hog is
 * killed, once, and every call succeeds, whoever's allocation got to the
 * OOM killer first.  With the victim moved into the workload, the probe's
 * allocations never have the killer kill: they fail with ENOMEM where it
 * would kill past the victim, unless another task (no limit) killed the
 * hog first.
 *
 * Every case runs REPEAT times (the environment's ALLOC_OOM_REPEAT, if
 * set) and every run must hold its properties.  Every run is a line of
 * $ALLOC_TEST_RESULTS/ordinary-oom/runs.jsonl; make demo renders them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup_util.h"
#include "test_util.h"

#define MIB		(1L << 20)
#define REPEAT		5
/* The hog leaves a quarter free, the probe asks for half. */
#define MEMCG_MAX	(64 * MIB)
#define PROBE		"ordinary-probe"
/*
 * A writer's cgroup, and what it writes, buffered: three times as much,
 * within the guest root's free space.
 */
#define DIRTY_MAX	(48 * MIB)
#define DIRTY_BYTES	(144 * MIB)
#define DIRTY_FILE	"/var/tmp/ordinary-oom-dirty"
#define MARK		"ordinary-oom: the probe starts"
/*
 * The stuck victim's filesystem, frozen while it write()s there, and the
 * shared memory it maps, which the OOM reaper cannot free.
 */
#define STUCK_IMAGE	"/var/tmp/ordinary-oom-stuck.img"
#define STUCK_IMAGE_BYTES (32 * MIB)
#define STUCK_MNT	"/run/ordinary-oom-stuck"
#define STUCK_BYTES	(32 * MIB)
#define STUCK_COMM	"stuck-victim"
#define GLOBAL_PROBE	"retry-probe"

static char *parent;
static pid_t main_pid;
/* The stuck victim, and its filesystem's root while frozen. */
static pid_t stuck_pid = -1;
static int stuck_mnt_fd = -1;

/* One memcg OOM run, as its assertions and its message read it. */
struct oom_run {
	struct probe_result res;
	bool hog_killed;
	long kills;		/* memory.events oom_kill of the parent */
	long fails;		/* memory.events alloc_retry_fail of the probe's */
	int invoked;		/* OOM-killer invocations by the probe */
	double first_kill_s;	/* from the probe's start, -1: no kill */
};

/* Append one run, a JSON object of @fmt's keys, to runs.jsonl. */
static void __attribute__((format(printf, 1, 2)))
run_record(const char *fmt, ...)
{
	const char *dir = getenv("ALLOC_TEST_RESULTS");
	char path[PATH_MAX];
	va_list ap;
	FILE *js;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/ordinary-oom", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/ordinary-oom/runs.jsonl", dir);
	js = fopen(path, "a");
	if (!js)
		ksft_exit_fail_msg("cannot write %s: %s\n", path,
				   strerror(errno));
	va_start(ap, fmt);
	vfprintf(js, fmt, ap);
	va_end(ap);
	fputc('\n', js);
	fclose(js);
}

/* One memcg OOM run as a line of runs.jsonl. */
static void oom_run_record(const char *limit, const struct oom_run *r,
			   bool held)
{
	run_record("{\"case\": \"memcg-oom\", \"limit\": \"%s\", \"held\": %s, \"calls\": %ld, \"enomem\": %ld, \"other_errors\": %ld, \"mib\": %ld, \"mib_asked\": %ld, \"kills\": %ld, \"hog_killed\": %s, \"invoked_by_probe\": %d, \"first_kill_s\": %.3f, \"alloc_retry_fail\": %ld}",
		   limit, held ? "true" : "false", r->res.calls, r->res.enomem,
		   r->res.other_errors, r->res.bytes / MIB, MEMCG_MAX / 2 / MIB,
		   r->kills, r->hog_killed ? "true" : "false", r->invoked,
		   r->first_kill_s, r->fails);
}

static int repeat(void)
{
	const char *env = getenv("ALLOC_OOM_REPEAT");
	char *end;
	long n;

	if (!env)
		return REPEAT;
	n = strtol(env, &end, 10);
	/* A median against the range of the runs at "max": three at least. */
	if (*env == '\0' || *end != '\0' || n < 3 || n > 1000)
		ksft_exit_fail_msg("ALLOC_OOM_REPEAT: not a count from 3 to 1000: \"%s\"\n",
				   env);
	return n;
}

/* A fresh cgroup @name under @under with memory.alloc_retries @limit. */
static char *limited_cgroup(const char *under, const char *name,
			    const char *limit)
{
	char *cg = cg_name(under, name);

	cg_destroy(cg);
	if (cg_create(cg) || alloc_retries_set(cg, limit))
		ksft_exit_fail_msg("cannot set up %s\n", cg);
	return cg;
}

/* The timestamp of a /dev/kmsg record ("prio,seq,usec,flags;text"), s. */
static double kmsg_record_s(const char *rec)
{
	const char *p = strchr(rec, ',');

	p = p ? strchr(p + 1, ',') : NULL;
	return p ? strtod(p + 1, NULL) / 1e6 : -1;
}

struct first_kill {
	double mark_s, kill_s;
};

static void find_first_kill(const char *rec, void *arg)
{
	struct first_kill *fk = arg;

	if (strstr(rec, MARK))
		fk->mark_s = kmsg_record_s(rec);
	else if (fk->mark_s >= 0 && fk->kill_s < 0 &&
		 strstr(rec, "Killed process"))
		fk->kill_s = kmsg_record_s(rec);
}

/*
 * One memcg OOM run with the probe in @cg.  Who invoked the OOM killer is
 * read from its report, which it prints for at most 10 kills in 5 s: a run
 * that killed is followed by a second's pause, so that the next one's is
 * printed too.  "Killed process" lines, which time the kill, are not
 * ratelimited.
 */
static int oom_run(const char *cg, struct oom_run *r)
{
	char *hog_cg = cg_name(parent, "hog");
	struct first_kill fk = { -1, -1 };
	int kmsg = kmsg_mark(), kmsg_invoked = kmsg_mark();
	struct probe probe;
	pid_t hog = -1;
	long kills;
	int tries;

	memset(r, 0, sizeof(*r));
	if (probe_start(&probe, PROBE, cg, 0, MEMCG_MAX / 2, 1000000)) {
		ksft_print_msg("the probe did not start\n");
		return -1;
	}
	/* A hog that overshoots is OOM-killed while filling: try again. */
	for (tries = 0; tries < 3 && hog <= 0; tries++)
		hog = hog_start(hog_cg, MEMCG_MAX * 3 / 4 -
				cg_read_long(parent, "memory.current"));
	kills = cg_event(parent, "memory.events", "oom_kill");
	write_file_errno("/dev/kmsg", MARK, strlen(MARK));
	if (probe_finish(&probe, &r->res) || hog <= 0) {
		ksft_print_msg("%s\n", hog <= 0 ? "the hog never got its memory" :
			       "the probe did not exit cleanly");
		if (hog > 0)
			hog_stop(hog, hog_cg);
		free(hog_cg);
		return -1;
	}
	r->hog_killed = hog_stop(hog, hog_cg);
	free(hog_cg);
	r->kills = cg_event(parent, "memory.events", "oom_kill") - kills;
	r->fails = cg_event(cg, "memory.events", "alloc_retry_fail");
	r->invoked = kmsg_count(kmsg_invoked, PROBE " invoked oom-killer",
				NULL);
	kmsg_for_each(kmsg, find_first_kill, &fk);
	r->first_kill_s = fk.kill_s >= 0 ? fk.kill_s - fk.mark_s : -1;
	if (r->kills)
		sleep(1);
	ksft_print_msg("probe: %ld calls, %ld ENOMEM, %ld other errors, %ld of %ld MiB; %ld killed (hog: %s, %d invoked by the probe), first kill %.3f s after the probe started; alloc_retry_fail %ld\n",
		       r->res.calls, r->res.enomem, r->res.other_errors,
		       r->res.bytes / MIB, MEMCG_MAX / 2 / MIB, r->kills,
		       r->hog_killed ? "killed" : "alive", r->invoked,
		       r->first_kill_s, r->fails);
	return 0;
}

/* One run with the probe in a fresh cgroup at memory.alloc_retries @limit. */
static int oom_run_at(const char *limit, struct oom_run *r)
{
	char *cg = limited_cgroup(parent, "probe", limit);
	int ret = oom_run(cg, r);

	cg_destroy(cg);
	free(cg);
	return ret;
}

/* At "max" and at 1: one kill, invoked by the probe, whose calls succeed. */
static bool killed_once_and_succeeded(const struct oom_run *r)
{
	return r->hog_killed && r->kills == 1 && r->invoked == 1 &&
	       !r->res.enomem && !r->res.other_errors &&
	       r->res.bytes == MEMCG_MAX / 2 && !r->fails &&
	       r->first_kill_s >= 0;
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * At 1 and at "max", run after run in turn, so that both meet the same
 * guest: each run kills once and the probe's calls succeed, and the median
 * time to the kill at 1 lies within the range of the times at "max",
 * widened by a quarter either way.
 */
static int test_memcg_oom_limit_1_kills_once_as_max_does(void)
{
	int i, n = repeat(), held = 0;
	double at1[1000], atmax[1000], median;
	struct oom_run r;

	for (i = 0; i < 2 * n; i++) {
		bool limited = i % 2;

		if (oom_run_at(limited ? "1" : "max", &r))
			return KSFT_FAIL;
		ksft_print_msg("at %s, run %d of %d: %s\n",
			       limited ? "1" : "max", i / 2 + 1, n,
			       killed_once_and_succeeded(&r) ?
			       "killed once, the calls succeeded" : "failed");
		held += killed_once_and_succeeded(&r);
		oom_run_record(limited ? "1" : "max", &r,
			       killed_once_and_succeeded(&r));
		(limited ? at1 : atmax)[i / 2] = r.first_kill_s;
	}
	qsort(at1, n, sizeof(*at1), compare_double);
	qsort(atmax, n, sizeof(*atmax), compare_double);
	median = at1[n / 2];
	ksft_print_msg("first kill after the probe started: at 1 %.3f..%.3f s (median %.3f), at max %.3f..%.3f s (median %.3f); %d of %d runs held\n",
		       at1[0], at1[n - 1], median, atmax[0], atmax[n - 1],
		       atmax[n / 2], held, 2 * n);
	return held == 2 * n && median >= atmax[0] * 0.75 &&
	       median <= atmax[n - 1] * 1.25 ? KSFT_PASS : KSFT_FAIL;
}

/* At 0 the probe's write fails with ENOMEM, and nobody is killed. */
static int test_memcg_oom_limit_0_fails_and_kills_nobody(void)
{
	int i, n = repeat(), held = 0;
	struct oom_run r;

	for (i = 0; i < n; i++) {
		bool ok;

		if (oom_run_at("0", &r))
			return KSFT_FAIL;
		ok = r.res.enomem > 0 && !r.res.other_errors && r.fails > 0 &&
		     !r.kills && !r.invoked && !r.hog_killed;
		ksft_print_msg("at 0, run %d of %d: %s\n", i + 1, n,
			       ok ? "ENOMEM, nobody killed" : "failed");
		oom_run_record("0", &r, ok);
		held += ok;
	}
	return held == n ? KSFT_PASS : KSFT_FAIL;
}

/*
 * A child in @cg writing DIRTY_BYTES to DIRTY_FILE in 1 MiB write()s,
 * buffered: its exit status is 0, or 1 if a write() failed with ENOMEM
 * (it stops there), 2 on another failure.
 */
static int dirty_writer(const char *cg)
{
	static char buf[MIB];
	int status, fd;
	long done;
	pid_t pid;

	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_NAME, "ordinary-writer");
		if (cg_enter_current(cg))
			_exit(2);
		fd = open(DIRTY_FILE, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0)
			_exit(2);
		memset(buf, 'd', sizeof(buf));
		for (done = 0; done < DIRTY_BYTES; done += sizeof(buf))
			if (write(fd, buf, sizeof(buf)) != sizeof(buf))
				_exit(errno == ENOMEM ? 1 : 2);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 2;
	unlink(DIRTY_FILE);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}

/*
 * Dirty page cache: the writer's cgroup at "max" first, which must need no
 * OOM kill for the case to say anything, then at 0 and at 1: no write()
 * fails, and the limit fails no allocation.
 */
static int test_dirty_page_cache_no_enomem(void)
{
	static const char *const limits[] = { "max", "0", "1" };
	int i, l, n = repeat(), held = 0;
	char max[32];
	char *cg;

	snprintf(max, sizeof(max), "%ld", DIRTY_MAX);
	for (i = 0; i < n; i++) {
		for (l = 0; l < 3; l++) {
			long kills, fails;
			int status;
			bool ok;

			cg = limited_cgroup(test_cgroup_root(),
					    "ordinary-writer", limits[l]);
			if (cg_write(cg, "memory.max", max)) {
				cg_destroy(cg);
				free(cg);
				return KSFT_FAIL;
			}
			status = dirty_writer(cg);
			kills = cg_event(cg, "memory.events", "oom_kill");
			fails = cg_event(cg, "memory.events",
					 "alloc_retry_fail");
			cg_destroy(cg);
			free(cg);
			ok = !status && !kills && !fails;
			ksft_print_msg("dirty page cache at %s, run %d of %d: %s, %ld OOM kills, alloc_retry_fail %ld\n",
				       limits[l], i + 1, n,
				       status == 0 ? "every write() succeeded" :
				       status == 1 ? "a write() failed with ENOMEM" :
				       "the writer failed", kills, fails);
			run_record("{\"case\": \"dirty-page-cache\", \"limit\": \"%s\", \"held\": %s, \"write_enomem\": %s, \"writer_failed\": %s, \"kills\": %ld, \"alloc_retry_fail\": %ld}",
				   limits[l], ok ? "true" : "false",
				   status == 1 ? "true" : "false",
				   status == 2 ? "true" : "false", kills, fails);
			held += ok;
		}
	}
	return held == 3 * n ? KSFT_PASS : KSFT_FAIL;
}

/* The stuck victim's child: map, fill, say ready, write() when told. */
static void stuck_victim_main(int ready, int go)
{
	char *mem, c;
	int memfd, fd;

	prctl(PR_SET_NAME, STUCK_COMM);
	memfd = memfd_create("unreapable", 0);
	if (memfd < 0 || ftruncate(memfd, STUCK_BYTES))
		_exit(1);
	mem = mmap(NULL, STUCK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
		   memfd, 0);
	if (mem == MAP_FAILED)
		_exit(1);
	memset(mem, 's', STUCK_BYTES);
	fd = open(STUCK_MNT "/file", O_WRONLY | O_CREAT, 0600);
	if (fd < 0 || write(ready, "r", 1) != 1 || read(go, &c, 1) != 1)
		_exit(1);
	/* The filesystem is frozen now: in D until the thaw. */
	_exit(write(fd, "x", 1) == 1 ? 0 : 1);
}

static void stuck_fs_remove(void)
{
	if (umount(STUCK_MNT) && errno != EINVAL && errno != ENOENT)
		ksft_print_msg("umount %s: %s\n", STUCK_MNT, strerror(errno));
	unlink(STUCK_IMAGE);
	rmdir(STUCK_MNT);
}

/*
 * Start the stuck victim in @cg (oom_score_adj 1000), freeze its
 * filesystem under its write(), and OOM-kill it there by lowering @cg's
 * memory.max below what it holds: that write returns once the OOM killer
 * finds nobody left to wait for, the reaper being done with the victim.
 * 0 once the victim is killed and still in D, or -1.  A new victim for
 * each run: one in D for longer would be a hung task.
 */
static int stuck_victim_start(const char *cg)
{
	char seen[512], needle[64], c;
	int ready[2], go[2], kmsg, i, ret = -1;
	bool blocked = false;

	if (pipe(ready) || pipe(go))
		ksft_exit_fail_msg("pipe: %s\n", strerror(errno));
	stuck_pid = fork();
	if (stuck_pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (stuck_pid == 0) {
		close(ready[0]);
		close(go[1]);
		set_oom_score_adj(1000);
		if (cg_enter_current(cg))
			_exit(1);
		stuck_victim_main(ready[1], go[0]);
	}
	/* A child that fails before it is ready ends the read with EOF */
	close(ready[1]);
	close(go[0]);
	if (read(ready[0], &c, 1) != 1) {
		ksft_print_msg("the stuck victim did not start\n");
		goto out;
	}
	stuck_mnt_fd = open(STUCK_MNT, O_RDONLY | O_DIRECTORY);
	if (stuck_mnt_fd < 0 || ioctl(stuck_mnt_fd, FIFREEZE, 0)) {
		ksft_print_msg("cannot freeze %s: %s\n", STUCK_MNT,
			       strerror(errno));
		goto out;
	}
	if (write(go[1], "g", 1) != 1)
		goto out;
	for (i = 0; i < 100 && !blocked; i++) {
		usleep(100000);
		blocked = task_in_syscall(stuck_pid, SYS_write, 'D',
					  "ksys_write", "percpu_rwsem_wait",
					  seen, sizeof(seen));
	}
	if (!blocked) {
		ksft_print_msg("the stuck victim is not blocked in its write(): %s\n",
			       seen);
		goto out;
	}
	kmsg = kmsg_mark();
	if (cg_write(cg, "memory.max", "8M"))
		goto out;
	snprintf(needle, sizeof(needle), "Killed process %d (" STUCK_COMM ")",
		 stuck_pid);
	if (kmsg_count(kmsg, needle, NULL) != 1 ||
	    task_state(stuck_pid) != 'D') {
		ksft_print_msg("the stuck victim was not OOM-killed in D (state %c)\n",
			       task_state(stuck_pid) ?: '?');
		goto out;
	}
	/*
	 * Killed and reaped, it stays a victim.  Its cgroup must not stay
	 * over memory.max: the loop device charges the reads it makes for
	 * the victim's write() after the thaw to that cgroup, and a read
	 * that fails there is an ext4 error.
	 */
	if (cg_write(cg, "memory.max", "max"))
		goto out;
	ret = 0;
out:
	close(ready[0]);
	close(go[1]);
	return ret;
}

/* Thaw: the victim's write() goes on and it exits. */
static void stuck_victim_stop(void)
{
	if (stuck_mnt_fd >= 0) {
		if (ioctl(stuck_mnt_fd, FITHAW, 0))
			ksft_print_msg("cannot thaw %s: %s\n", STUCK_MNT,
				       strerror(errno));
		close(stuck_mnt_fd);
		stuck_mnt_fd = -1;
	}
	if (stuck_pid > 0) {
		kill(stuck_pid, SIGKILL);
		waitpid(stuck_pid, NULL, 0);
		stuck_pid = -1;
	}
}

/* One global OOM run, as its assertions and its message read it. */
struct global_run {
	struct probe_result res;
	bool hog_killed;
	long kills;		/* oom_kill of the workload's memory.events */
	long fails;		/* its alloc_retry_fail */
	int invoked;		/* OOM-killer invocations by the probe */
	char victim_state;	/* the stuck victim's, after the run */
};

/*
 * A global OOM with a stuck victim in @victim_cg: the probe (oom_score_adj
 * -1000) in @workload/probe pins a quarter of memory while a hog in
 * @workload/hog holds the rest.
 */
static int global_run(const char *workload, const char *victim_cg,
		      struct global_run *r)
{
	char *hog_cg = cg_name(workload, "hog");
	char *probe_cg = cg_name(workload, "probe");
	int kmsg_invoked, ret = -1;
	long kills, fails;

	memset(r, 0, sizeof(*r));
	if (cg_create(victim_cg) || cg_create(probe_cg))
		ksft_exit_fail_msg("cannot create %s and %s\n", victim_cg,
				   probe_cg);
	if (stuck_victim_start(victim_cg))
		goto out;
	/* After the victim's own kill, which is in the workload's if inside */
	kills = cg_event(workload, "memory.events", "oom_kill");
	fails = cg_event(workload, "memory.events", "alloc_retry_fail");
	kmsg_invoked = kmsg_mark();
	ret = pressure_round(hog_cg, probe_cg, &r->res, &r->hog_killed);
	r->kills = cg_event(workload, "memory.events", "oom_kill") - kills;
	r->fails = cg_event(workload, "memory.events", "alloc_retry_fail") -
		   fails;
	r->invoked = kmsg_count(kmsg_invoked,
				GLOBAL_PROBE " invoked oom-killer", NULL);
	r->victim_state = task_state(stuck_pid);
out:
	/* Before the thaw, as in stuck_victim_start(), on every path */
	cg_write(victim_cg, "memory.max", "max");
	stuck_victim_stop();
	cg_destroy(victim_cg);
	cg_destroy(probe_cg);
	free(probe_cg);
	free(hog_cg);
	if (ret)
		return ret;
	/* The OOM report's ratelimit: 10 in 5 s. */
	sleep(1);
	ksft_print_msg("probe: %ld calls, %ld ENOMEM, %ld other errors, %ld of %zu MiB; %ld killed in the workload (hog: %s, %d invoked by the probe); alloc_retry_fail %ld; the stuck victim %s\n",
		       r->res.calls, r->res.enomem, r->res.other_errors,
		       r->res.bytes / MIB, probe_bytes() / MIB, r->kills,
		       r->hog_killed ? "killed" : "alive", r->invoked,
		       r->fails, r->victim_state == 'D' ?
		       "still in D" : "gone or running");
	return 0;
}

static void global_run_record(const char *where, const struct global_run *r,
			      bool held)
{
	run_record("{\"case\": \"global-stuck-victim\", \"limit\": \"1\", \"victim\": \"%s\", \"held\": %s, \"calls\": %ld, \"enomem\": %ld, \"other_errors\": %ld, \"kills\": %ld, \"hog_killed\": %s, \"invoked_by_probe\": %d, \"alloc_retry_fail\": %ld, \"victim_stuck\": %s}",
		   where, held ? "true" : "false", r->res.calls, r->res.enomem,
		   r->res.other_errors, r->kills,
		   r->hog_killed ? "true" : "false", r->invoked, r->fails,
		   r->victim_state == 'D' ? "true" : "false");
}

/*
 * Outside the workload: the victim fails nothing, the hog is killed once,
 * the victim is still stuck.
 */
static bool outside_held(const struct global_run *r)
{
	return !r->res.enomem && !r->res.other_errors &&
	       r->res.bytes >= (long)probe_bytes() && r->hog_killed &&
	       r->kills == 1 && !r->fails && r->victim_state == 'D';
}

/*
 * Inside it: the global OOM came (the probe met ENOMEM, or another task
 * had the hog killed first), the probe never has the killer kill, and any
 * ENOMEM it saw was the limit's.
 */
static bool inside_held(const struct global_run *r)
{
	return (r->res.enomem || r->hog_killed) && !r->invoked &&
	       !r->res.other_errors && (!r->res.enomem || r->fails > 0) &&
	       r->victim_state == 'D';
}

/*
 * A workload at memory.alloc_retries=1, the sysctl at -1: runs with the
 * stuck victim outside it, then runs with the victim inside it.
 */
static int test_global_oom_stuck_victim_fails_only_its_subtree(void)
{
	char *workload, *victim_cg[2];
	int i, w, n = repeat(), held = 0, enomem_inside = 0;
	struct global_run r;

	workload = memcg_parent(test_cgroup_root(), "ordinary-global", 0);
	if (alloc_retries_set(workload, "1"))
		ksft_exit_fail_msg("cannot set up %s\n", workload);
	victim_cg[0] = cg_name(test_cgroup_root(), "ordinary-stuck");
	victim_cg[1] = cg_name(workload, "stuck");
	if (!ext4_image_mount(STUCK_IMAGE, STUCK_IMAGE_BYTES, 0, STUCK_MNT))
		goto out;
	for (w = 0; w < 2; w++) {
		for (i = 0; i < n; i++) {
			bool ok;

			if (global_run(workload, victim_cg[w], &r))
				goto out;
			ok = w ? inside_held(&r) : outside_held(&r);
			ksft_print_msg("victim %s the workload, run %d of %d: %s\n",
				       w ? "inside" : "outside", i + 1, n,
				       ok ? "held" : "failed");
			global_run_record(w ? "inside" : "outside", &r, ok);
			held += ok;
			enomem_inside += w && r.res.enomem;
		}
	}
	ksft_print_msg("%d of %d runs held; with the victim inside, the probe met ENOMEM in %d of %d\n",
		       held, 2 * n, enomem_inside, n);
out:
	stuck_fs_remove();
	cg_destroy(workload);
	free(workload);
	free(victim_cg[0]);
	free(victim_cg[1]);
	return held == 2 * n ? KSFT_PASS : KSFT_FAIL;
}

static const struct test_case tests[] = {
	TEST_CASE(test_memcg_oom_limit_1_kills_once_as_max_does),
	TEST_CASE(test_memcg_oom_limit_0_fails_and_kills_nobody),
	TEST_CASE(test_dirty_page_cache_no_enomem),
	TEST_CASE(test_global_oom_stuck_victim_fails_only_its_subtree),
};

/* Not in a child that exits through kselftest: only the test's own. */
static void teardown(void)
{
	if (getpid() != main_pid)
		return;
	stuck_victim_stop();
	cg_destroy(parent);
	free(parent);
}

int main(int argc, char **argv)
{
	main_pid = getpid();
	parent = memcg_parent(test_cgroup_root(), "ordinary-oom", MEMCG_MAX);
	atexit(teardown);
	/*
	 * Who invoked a kill is read from the OOM report, 10 in 5 s: start
	 * in a window of its own, not in the one a test before ran out.
	 */
	sleep(6);
	run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
