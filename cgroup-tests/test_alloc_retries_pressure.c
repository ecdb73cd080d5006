// SPDX-License-Identifier: GPL-2.0
/*
 * memory.alloc_retries under real memory pressure, and how a failure is
 * reported.  The kernel's own selftest (tools/testing/selftests/cgroup/
 * test_alloc_retries.c, run as test_alloc_retries) checks the interface
 * and the enforcement of a memcg charge: ENOMEM, no OOM kill, the
 * counters, and whose limit applies under remote charging.
 *
 * memcg OOM: a sibling at 0 under a parent with a small memory.max, a hog
 * (oom_score_adj 1000) filling the parent, and a probe pinning pipe
 * buffers in the sibling.  Its charges fail where they would invoke the
 * OOM killer; the kernel log reports each failure, naming the cgroup
 * whose limit applied, and the oom:alloc_retry_fail trace event fires.
 *
 * Global OOM: the guest's memory exhausted and the sysctl at -1, so that
 * only the probe's cgroup sets a limit.  At 0 the probe sees ENOMEM, is
 * counted and reported; other tasks' allocations may still invoke the
 * killer, the probe's never do.  At "max" the probe waits for the killer
 * and gets its memory, as today.
 *
 * Races: rmdir of cgroups whose tasks were killed while allocating under
 * pressure, and writes to the files during the pressure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup_util.h"
#include "test_util.h"

/* The probe asks for half of this, the hog leaves a quarter free. */
#define MEMCG_MAX	(64 << 20)
#define GLOBAL_FAST_ROUNDS 8
#define GLOBAL_LEGACY_ROUNDS 2
#define RACE_ROUNDS	4

static const char *root;
static char *parent, *hog;
static pid_t main_pid;

/* What one side of a round saw. */
struct side {
	struct probe_result res;
	bool hog_killed;
	long fail_local, vmstat_fail;
	int reports, traces;
	int invoked;		/* OOM-killer invocations by the probe */
};

/* A fresh cgroup @name under @under with memory.alloc_retries @limit. */
static char *side_cgroup(const char *under, const char *name,
			 const char *limit)
{
	char *cg = cg_name(under, name);

	cg_destroy(cg);
	if (cg_create(cg) || alloc_retries_set(cg, limit))
		ksft_exit_fail_msg("cannot set up %s\n", cg);
	return cg;
}

/* One memcg OOM round with the probe in @cg: what the kernel reported. */
static int memcg_round(const char *cg, struct side *s)
{
	char needle[PATH_MAX + 64];
	int kmsg, kmsg_limit;

	memset(s, 0, sizeof(*s));
	kmsg = kmsg_mark();
	kmsg_limit = kmsg_mark();
	trace_start();
	if (memcg_pressure_round(parent, MEMCG_MAX, cg, &s->res,
				 &s->hog_killed))
		return -1;
	/* A report is its failure line and the line naming the cgroup. */
	snprintf(needle, sizeof(needle), "alloc_retry:limit_memcg=%s\n",
		 cg_kernel_path(cg));
	s->reports = kmsg_count(kmsg, "memory cgroup charge failure",
				"memory.alloc_retries=0 reached");
	if (kmsg_count(kmsg_limit, needle, NULL) < s->reports)
		s->reports = 0;
	s->traces = trace_count("alloc_retry_fail:", "oom=memcg",
				"source=memory.alloc_retries");
	probe_report(&s->res, s->hog_killed);
	ksft_print_msg("%d reports, %d trace events\n", s->reports,
		       s->traces);
	return 0;
}

static void memcg_setup(void)
{
	parent = memcg_parent(root, "memcg-oom", MEMCG_MAX);
	hog = cg_name(parent, "hog");
}

static int test_memcg_oom_failure_reported(void)
{
	char *cg = side_cgroup(parent, "fast", "0");
	struct side s;
	int ret;

	ret = memcg_round(cg, &s);
	cg_destroy(cg);
	free(cg);
	/* Failures to report: the probe's charges did fail. */
	return !ret && s.res.enomem > 0 && s.reports > 0 && s.traces > 0 ?
		KSFT_PASS : KSFT_FAIL;
}

/* Up to @rounds global OOM rounds with the probe in @cg. */
static int global_rounds(const char *cg, int rounds, bool stop_at_enomem,
			 struct side *s)
{
	char *hog_cg = cg_name(root, "global-hog");
	char needle[PATH_MAX + 64];
	long before = vmstat("alloc_retry_fail");
	struct probe_result res;
	int kmsg, kmsg_oom, kmsg_limit, i, ret = 0;

	memset(s, 0, sizeof(*s));
	s->res.bytes = probe_bytes();
	/* A report is its failure line and the line naming the cgroup. */
	snprintf(needle, sizeof(needle), "alloc_retry:limit_memcg=%s\n",
		 cg_kernel_path(cg));
	/* The reports are ratelimited: start with a clean slate. */
	sleep(11);
	kmsg = kmsg_mark();
	kmsg_oom = kmsg_mark();
	kmsg_limit = kmsg_mark();
	trace_start();
	s->hog_killed = true;
	for (i = 0; i < rounds; i++) {
		bool killed;

		if (pressure_round(hog_cg, cg, &res, &killed)) {
			ret = -1;
			break;
		}
		probe_report(&res, killed);
		s->hog_killed &= killed;
		s->res.calls += res.calls;
		s->res.enomem += res.enomem;
		s->res.other_errors += res.other_errors;
		if (res.bytes < s->res.bytes)
			s->res.bytes = res.bytes;
		if (stop_at_enomem && s->res.enomem)
			break;
	}
	s->fail_local = cg_event(cg, "memory.events.local", "alloc_retry_fail");
	s->vmstat_fail = vmstat("alloc_retry_fail") - before;
	s->reports = kmsg_count(kmsg, "page allocation failure",
				"memory.alloc_retries=0 reached");
	if (kmsg_count(kmsg_limit, needle, NULL) < s->reports)
		s->reports = 0;
	s->invoked = kmsg_count(kmsg_oom, "retry-probe invoked oom-killer",
				NULL);
	s->traces = trace_count("alloc_retry_fail:", "oom=global",
				"source=memory.alloc_retries");
	ksft_print_msg("%d rounds: %ld ENOMEM; alloc_retry_fail: %ld local, %ld in vmstat; %d reports, %d trace events; OOM-killer invocations by the probe %d\n",
		       i + (i < rounds), s->res.enomem, s->fail_local,
		       s->vmstat_fail, s->reports, s->traces, s->invoked);
	free(hog_cg);
	return ret;
}

static int test_global_oom_fast_cgroup_fails(void)
{
	char *cg = side_cgroup(root, "global-fast", "0");
	struct side s;
	int ret;

	ret = global_rounds(cg, GLOBAL_FAST_ROUNDS, true, &s);
	cg_destroy(cg);
	free(cg);
	/* Others may still have the hog killed; the probe never does. */
	return !ret && !s.invoked && s.res.enomem > 0 &&
	       !s.res.other_errors && s.fail_local > 0 &&
	       s.vmstat_fail >= s.fail_local && s.reports > 0 &&
	       s.traces > 0 ? KSFT_PASS : KSFT_FAIL;
}

static int test_global_oom_legacy_cgroup_waits(void)
{
	char *cg = side_cgroup(root, "global-legacy", "max");
	struct side s;
	int ret;

	ret = global_rounds(cg, GLOBAL_LEGACY_ROUNDS, false, &s);
	cg_destroy(cg);
	free(cg);
	return !ret && s.hog_killed && !s.res.enomem && !s.res.other_errors &&
	       (size_t)s.res.bytes == probe_bytes() && !s.fail_local ?
		KSFT_PASS : KSFT_FAIL;
}

/* Flip memory.alloc_retries of @a and @b until killed; exit 1 on error. */
static pid_t flipper_start(const char *a, const char *b)
{
	static const char * const vals[] = { "0", "1", "max", "2" };
	pid_t pid = fork();
	unsigned int i;

	if (pid)
		return pid;
	for (i = 0;; i++)
		if (alloc_retries_set(a, vals[i % 4]) ||
		    alloc_retries_set(b, vals[(i + 1) % 4]))
			_exit(1);
}

static int test_rmdir_and_writes_under_pressure(void)
{
	long current, dying;
	int i, status, failed = 0;
	struct probe probe;
	pid_t hog_pid, flipper;
	char *cg;

	for (i = 0; i < RACE_ROUNDS && !failed; i++) {
		cg = side_cgroup(parent, "race", i % 2 ? "0" : "max");
		flipper = flipper_start(parent, cg);
		hog_pid = hog_start(hog, MEMCG_MAX * 3 / 4 -
				    cg_read_long(parent, "memory.current"));
		/* More than fits: it is allocating when it is killed. */
		if (probe_start(&probe, "retry-race", cg, 0, MEMCG_MAX, 1000000))
			failed = 1;
		else
			probe_kill_after(&probe, 300 + 200 * i);
		/* A writer must never see an error. */
		if (waitpid(flipper, &status, WNOHANG) == flipper)
			failed = 1;
		kill(flipper, SIGKILL);
		waitpid(flipper, NULL, 0);
		if (hog_pid > 0)
			hog_stop(hog_pid, hog);
		/* Its tasks are gone: rmdir must work at once. */
		if (cg_destroy(cg)) {
			ksft_print_msg("rmdir %s: %s\n", cg, strerror(errno));
			failed = 1;
		}
		free(cg);
	}
	alloc_retries_set(parent, "max");
	/* Nothing stays charged once all of it has gone. */
	sleep(2);
	current = cg_read_long(parent, "memory.current");
	dying = cg_read_key_long(parent, "cgroup.stat", "nr_dying_descendants ");
	ksft_print_msg("%d rounds; afterwards %ld KiB charged to the parent, %ld dying cgroups\n",
		       i, current >> 10, dying);
	return !failed && current < (4 << 20) ? KSFT_PASS : KSFT_FAIL;
}

static const struct test_case tests[] = {
	TEST_CASE(test_memcg_oom_failure_reported),
	TEST_CASE(test_global_oom_fast_cgroup_fails),
	TEST_CASE(test_global_oom_legacy_cgroup_waits),
	TEST_CASE(test_rmdir_and_writes_under_pressure),
};

/* Not in a child that exits through kselftest: only the test's own. */
static void memcg_teardown(void)
{
	if (getpid() != main_pid)
		return;
	cg_destroy(parent);
	free(hog);
	free(parent);
}

int main(int argc, char **argv)
{
	root = test_cgroup_root();
	main_pid = getpid();
	memcg_setup();
	/* run_tests() exits with the result: tear down on the way out. */
	atexit(memcg_teardown);
	run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
