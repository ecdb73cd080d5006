// SPDX-License-Identifier: GPL-2.0
/*
 * Sites a retry limit must not fail, in a cgroup at 0 kept at its
 * memory.max (filler_start()):
 *
 * - a wait on a process-shared futex in a page never touched before, which
 *   get_futex_key() faults in: it times out, as without a limit, instead
 *   of failing with ENOMEM (glibc would abort);
 * - execve() past its point of no return: every exec, started at 64 to
 *   512 KiB below memory.max, either runs the program or fails before
 *   that point; none ends in SIGSEGV.
 *
 * Not here: the robust-list walk of a thread that exits holding a robust
 * mutex.  Under memcg OOM, 6.12 itself fails a dying task's charge after
 * one pass that bypasses the OOM killer (try_charge_memcg()), with or
 * without a limit, so the next locker can find the mutex without
 * FUTEX_OWNER_DIED; the exit's exemption matters under global OOM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup_util.h"
#include "kselftest.h"
#include "test_util.h"

#define MEMORY_MAX	"24M"
/* Runs of the futex case, and execs of the exec case. */
#define FUTEX_RUNS	16
#define EXECS		24

static char *site_cgroup(struct filler *filler)
{
	char *cgroup = cg_name(test_cgroup_root(), "alloc-sites");

	if (cg_create(cgroup) || cg_write(cgroup, "memory.max", MEMORY_MAX) ||
	    alloc_retries_set(cgroup, "0") || filler_start(filler, cgroup, 0)) {
		ksft_print_msg("cannot set up %s\n", cgroup);
		cg_destroy(cgroup);
		free(cgroup);
		return NULL;
	}
	return cgroup;
}

static void site_cgroup_done(char *cgroup, struct filler *filler)
{
	filler_stop(filler);
	cg_destroy(cgroup);
	free(cgroup);
}

/*
 * In a child in @cgroup, once @filler has filled it: FUTEX_WAIT (shared)
 * for 50 ms on a word of a page of shared anonymous memory nobody has
 * touched.  Exit status 0 if it timed out, 1 if not; *@kills is set to the
 * fillers the OOM killer killed meanwhile.
 */
static int shared_futex_child(const char *cgroup, struct filler *filler,
			      long *kills)
{
	struct timespec timeout = { 0, 50 * 1000 * 1000 };
	unsigned int *word;
	long ret;

	/* Mapped outside the cgroup, whose limit would fail the mmap() */
	word = mmap(NULL, getpagesize(), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	touch_own_pages();
	if (word == MAP_FAILED || cg_enter_current(cgroup) ||
	    !filler_wait_full(filler, 20))
		return 2;
	*kills = filler->stats->kills;
	ret = syscall(SYS_futex, word, FUTEX_WAIT, 0, &timeout, NULL, 0);
	*kills = filler->stats->kills - *kills;
	if (ret == -1 && errno == ETIMEDOUT)
		return 0;
	printf("# FUTEX_WAIT on a new page: %ld, %s\n", ret, strerror(errno));
	fflush(stdout);
	return 1;
}

/*
 * Every wait times out, as without a limit; and the limit was met: in
 * some run the fault made the OOM killer kill a filler (not in every
 * run: the page may come from memory freed just before).
 */
static int test_shared_futex_wait_on_new_page(void)
{
	int ret = KSFT_PASS, status, run;
	struct filler filler;
	long *kills, met = 0;
	char *cgroup;

	kills = mmap(NULL, sizeof(*kills), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (kills == MAP_FAILED)
		return KSFT_FAIL;
	cgroup = site_cgroup(&filler);
	if (!cgroup)
		return KSFT_FAIL;
	for (run = 0; run < FUTEX_RUNS; run++) {
		pid_t pid;

		*kills = 0;
		fflush(stdout);
		pid = fork();
		if (pid == 0)
			_exit(shared_futex_child(cgroup, &filler, kills));
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status)) {
			ksft_print_msg("run %d: status %#x\n", run, status);
			ret = KSFT_FAIL;
		}
		met += *kills > 0;
	}
	ksft_print_msg("%d runs, %ld of them met the limit\n", FUTEX_RUNS, met);
	if (!met) {
		ksft_print_msg("no wait met the limit\n");
		ret = KSFT_FAIL;
	}
	site_cgroup_done(cgroup, &filler);
	munmap(kills, sizeof(*kills));
	return ret;
}

/*
 * EXECS execs of /bin/true from @cgroup, each started with a headroom of
 * 64 to 512 KiB below memory.max (filler_release()), so that the limit is
 * met at different points of the exec: each ran (status 0), failed in
 * execve() (ENOMEM or E2BIG, before its point of no return), or failed in
 * the new program's own start (the dynamic loader's 127), or was chosen by
 * the OOM killer (SIGKILL); any other end, a SIGSEGV first, fails the
 * test.  And some ran, and the limit was met: some exec failed with
 * ENOMEM, or made the OOM killer kill the filler.
 */
static int test_exec_past_no_return(void)
{
	long ran = 0, failed = 0, loader = 0, killed = 0, kills;
	int ret = KSFT_PASS, status, i;
	struct filler filler;
	char *cgroup;

	cgroup = site_cgroup(&filler);
	if (!cgroup)
		return KSFT_FAIL;
	kills = filler.stats->kills;
	for (i = 0; i < EXECS && ret == KSFT_PASS; i++) {
		pid_t pid;

		filler_refill(&filler);
		if (!filler_wait_full(&filler, 20) ||
		    !filler_release(&filler, (i % 8 + 1) * 32L << 10)) {
			ksft_print_msg("exec %d: the filler did not fill and release\n",
				       i);
			ret = KSFT_FAIL;
			break;
		}
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			if (cg_enter_current(cgroup))
				_exit(2);
			execl("/bin/true", "true", NULL);
			_exit(errno == ENOMEM || errno == E2BIG ? 3 : 2);
		}
		if (waitpid(pid, &status, 0) != pid) {
			ret = KSFT_FAIL;
			break;
		}
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			ran++;
		} else if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
			failed++;
		} else if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
			loader++;
		} else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
			killed++;
		} else {
			ksft_print_msg("exec %d: status %#x\n", i, status);
			ret = KSFT_FAIL;
		}
	}
	kills = filler.stats->kills - kills;
	ksft_print_msg("%d execs: %ld ran, %ld failed in execve(), %ld in the loader, %ld OOM-killed; filler killed %ld times\n",
		       EXECS, ran, failed, loader, killed, kills);
	if (!ran || (!failed && !kills)) {
		ksft_print_msg("no exec ran, or none met the limit\n");
		ret = KSFT_FAIL;
	}
	site_cgroup_done(cgroup, &filler);
	return ret;
}

static const struct test_case tests[] = {
	TEST_CASE(test_shared_futex_wait_on_new_page),
	TEST_CASE(test_exec_past_no_return),
};

int main(int argc, char **argv)
{
	run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
