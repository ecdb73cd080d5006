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
#include <sys/prctl.h>
#include <sys/stat.h>
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

static char *parent;
static pid_t main_pid;

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
	if (*env == '\0' || *end != '\0' || n < 1 || n > 1000)
		ksft_exit_fail_msg("ALLOC_OOM_REPEAT: not a count from 1 to 1000: \"%s\"\n",
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

static const struct test_case tests[] = {
	TEST_CASE(test_memcg_oom_limit_1_kills_once_as_max_does),
	TEST_CASE(test_memcg_oom_limit_0_fails_and_kills_nobody),
	TEST_CASE(test_dirty_page_cache_no_enomem),
};

/* Not in a child that exits through kselftest: only the test's own. */
static void teardown(void)
{
	if (getpid() != main_pid)
		return;
	cg_destroy(parent);
	free(parent);
}

int main(int argc, char **argv)
{
	char max[32];

	main_pid = getpid();
	parent = cg_name(test_cgroup_root(), "ordinary-oom");
	cg_destroy(parent);
	snprintf(max, sizeof(max), "%ld", MEMCG_MAX);
	if (cg_create(parent) || cg_write(parent, "memory.max", max) ||
	    cg_write(parent, "cgroup.subtree_control", "+memory"))
		ksft_exit_fail_msg("cannot set up %s\n", parent);
	atexit(teardown);
	run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
