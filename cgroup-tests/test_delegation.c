// SPDX-License-Identifier: GPL-2.0
/*
 * memory.alloc_retries in a delegated subtree: a value applies only to the
 * tasks its writer could ptrace, and credential changes never fail.  A
 * delegated user (DELEGATEE) writes 0 in a child it created, which is kept
 * at its memory.max (filler_start()).  There the user's own program gets
 * ENOMEM from a write of a new page to a memfd, while a setuid-root program
 * the user runs there writes such pages without one, its allocations served
 * by the OOM killer, and lowers and raises its euid thousands of times
 * without one.  Under the same 0 written by root, the setuid program's
 * page writes fail, its euid changes still do not.
 *
 * The setuid program is this binary, copied to a tmpfs mounted without
 * nosuid and run as "alloc-setuid-helper".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup_util.h"
#include "kselftest.h"
#include "test_util.h"

#define DELEGATEE	4242
#define HELPER_DIR	"/run/alloc-setuid"
#define HELPER		HELPER_DIR "/alloc-setuid-helper"
/* Seconds the setuid program writes pages, or changes its euid, for. */
#define ROUND_SECONDS	"4"
/* Seconds a program may take to meet its first ENOMEM at the limit. */
#define ENOMEM_WITHIN	20

/*
 * Write a new page to the memfd @fd and truncate it, for @seconds or, with
 * @first, to the first ENOMEM: each round charges a page.  The rounds, and
 * those that failed with ENOMEM and otherwise, in @counts.
 */
static void page_rounds(int fd, double seconds, bool first, long counts[3])
{
	static char page[4096];
	double end = now_s() + seconds;

	counts[0] = counts[1] = counts[2] = 0;
	while (now_s() < end && !(first && counts[1])) {
		if (pwrite(fd, page, sizeof(page), 0) != sizeof(page))
			errno == ENOMEM ? counts[1]++ : counts[2]++;
		else if (ftruncate(fd, 0))
			counts[2]++;
		counts[0]++;
	}
}

/*
 * The setuid program, argv: SECONDS MODE [first].  After a byte on stdin,
 * "page": page_rounds(); "drop": seteuid(user) and seteuid(0) in turn.
 * Then one line of counts.  kept counts the drops that failed and left the
 * euid at 0: the privilege a program that does not check keeps.
 */
static int setuid_helper(int argc, char **argv)
{
	long counts[3] = { 0 }, kept = 0;
	uid_t user = getuid();
	char go, line[128];
	double end;
	int fd, n;

	if (argc < 3 || geteuid() != 0 || user == 0)
		return 2;
	/* Resident before the loop: its own faults then allocate nothing. */
	mlockall(MCL_CURRENT | MCL_FUTURE);
	fd = memfd_create("alloc-deleg-page", 0);
	if (fd < 0 || write(1, "ready\n", 6) != 6 || read(0, &go, 1) != 1)
		return 2;
	if (!strcmp(argv[2], "page")) {
		page_rounds(fd, atof(argv[1]), argc > 3, counts);
	} else {
		/*
		 * Paced: every change frees the old credentials after an RCU
		 * grace period, and a backlog of them at full speed would
		 * fill the cgroup with nothing left to kill.
		 */
		for (end = now_s() + atof(argv[1]); now_s() < end; counts[0]++) {
			if (!(counts[0] % 16))
				usleep(1000);
			if (seteuid(user)) {
				errno == ENOMEM ? counts[1]++ : counts[2]++;
				kept += geteuid() == 0;
			} else if (geteuid() != user) {
				counts[2]++;
			}
			if (seteuid(0))
				errno == ENOMEM ? counts[1]++ : counts[2]++;
		}
	}
	/* One write: stdio would allocate its buffer in the full cgroup. */
	n = snprintf(line, sizeof(line),
		     "rounds=%ld enomem=%ld other=%ld euid_kept=%ld\n",
		     counts[0], counts[1], counts[2], kept);
	return write(1, line, n) == n ? 0 : 2;
}

struct rounds {
	long rounds, enomem, other, kept, kills;
};

/* A line from @fd, read to its newline: true if one came. */
static bool read_line(int fd, char *line, size_t size)
{
	size_t len = 0;

	while (len + 1 < size && read(fd, line + len, 1) == 1)
		if (line[len++] == '\n') {
			line[len] = '\0';
			return true;
		}
	return false;
}

/*
 * Run the setuid program in @cgroup as DELEGATEE with @args (SECONDS MODE
 * [first]), once the filler has filled the cgroup again, and read its
 * counts; -1 if it did not run.
 */
static int run_setuid(const char *cgroup, struct filler *filler,
		      const char *const args[3], struct rounds *d)
{
	int in[2], out[2], status;
	char line[256];
	long kills = 0;
	pid_t pid;
	bool ran;

	if (pipe(in) || pipe(out))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		if (become_user(DELEGATEE))
			_exit(2);
		execl(HELPER, "alloc-setuid-helper", args[0], args[1], args[2],
		      NULL);
		_exit(2);
	}
	close(in[0]);
	close(out[1]);
	/*
	 * It runs and sets up outside the cgroup, whose limit would fail its
	 * exec when the delegatee's value applies; once ready, it is moved
	 * in, and starts when the cgroup is full again.
	 */
	ran = read_line(out[0], line, sizeof(line)) &&
	      !strcmp(line, "ready\n") && !cg_enter(cgroup, pid) &&
	      filler_wait_full(filler, ENOMEM_WITHIN);
	if (ran) {
		kills = filler->stats->kills;
		ran = write(in[1], "g", 1) == 1 &&
		      read_line(out[0], line, sizeof(line));
		/* The kills while it ran: its line comes after its loop. */
		kills = filler->stats->kills - kills;
	}
	close(in[1]);
	close(out[0]);
	waitpid(pid, &status, 0);
	if (!ran || !WIFEXITED(status) || WEXITSTATUS(status) ||
	    sscanf(line, "rounds=%ld enomem=%ld other=%ld euid_kept=%ld",
		   &d->rounds, &d->enomem, &d->other, &d->kept) != 4) {
		ksft_print_msg("the setuid program did not run (status %#x)\n",
			       status);
		return -1;
	}
	d->kills = kills;
	ksft_print_msg("  setuid program, %s %s: %.*s, filler killed %ld times\n",
		       args[1], args[0], (int)strcspn(line, "\n"), line,
		       d->kills);
	return 0;
}

/*
 * DELEGATEE's own program in @cgroup: page_rounds() to the first ENOMEM,
 * at most ENOMEM_WITHIN seconds; the rounds that failed with ENOMEM, or -1.
 */
static long run_own(const char *cgroup)
{
	long *counts, enomem;
	pid_t pid;

	counts = mmap(NULL, 3 * sizeof(long), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (counts == MAP_FAILED)
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		/* Its memfd made outside the cgroup, as the setuid program's */
		int fd = memfd_create("alloc-deleg-page", 0);

		touch_own_pages();
		if (fd < 0 || cg_enter_current(cgroup) ||
		    become_user(DELEGATEE))
			_exit(2);
		page_rounds(fd, ENOMEM_WITHIN, true, counts);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	ksft_print_msg("  own program: %ld rounds, %ld ENOMEM, %ld other errors\n",
		       counts[0], counts[1], counts[2]);
	enomem = counts[1];
	munmap(counts, 3 * sizeof(long));
	return enomem;
}

/* The delegation: @deleg, owned by DELEGATEE, its child @child made by it. */
static int delegate(const char *deleg, const char *child, long memory_max)
{
	static const char *const files[] = {
		"", "/cgroup.procs", "/cgroup.threads", "/cgroup.subtree_control",
	};
	char path[PATH_MAX], val[32];
	int status;
	size_t i;
	pid_t pid;

	if (cg_create(deleg))
		return -1;
	for (i = 0; i < ARRAY_SIZE(files); i++) {
		snprintf(path, sizeof(path), "%s%s", deleg, files[i]);
		if (chown(path, DELEGATEE, DELEGATEE))
			return -1;
	}
	/* What the delegatee does, with its own credentials. */
	pid = fork();
	if (pid == 0) {
		if (become_user(DELEGATEE) ||
		    cg_write(deleg, "cgroup.subtree_control", "+memory") ||
		    cg_create(child))
			_exit(1);
		snprintf(val, sizeof(val), "%ld", memory_max);
		if (cg_write(child, "memory.max", val) ||
		    alloc_retries_set(child, "0"))
			_exit(1);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return -1;
	return 0;
}

/* This binary, setuid root, where DELEGATEE can run it. */
static int install_helper(void)
{
	char buf[1 << 16];
	int in, out;
	ssize_t n;

	mkdir(HELPER_DIR, 0755);
	if (mount("alloc-setuid", HELPER_DIR, "tmpfs", MS_NODEV,
		  "mode=0755,size=64m"))
		return -1;
	in = open("/proc/self/exe", O_RDONLY);
	out = open(HELPER, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (in < 0 || out < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			return -1;
	close(in);
	close(out);
	return n ? -1 : chmod(HELPER, 04755);
}

static void remove_helper(void)
{
	umount2(HELPER_DIR, MNT_DETACH);
	rmdir(HELPER_DIR);
}

/* The setuid program's page rounds and drops; true if as @root_value says. */
static bool setuid_rounds_as_expected(const char *cgroup,
				      struct filler *filler, bool root_value)
{
	static const char *const page[] = { ROUND_SECONDS, "page", NULL };
	static const char *const page_first[] = { "20", "page", "first" };
	static const char *const drop[] = { ROUND_SECONDS, "drop", NULL };
	struct rounds d;
	bool ok = true;

	/* Its pages: limited by root's value, not by the delegatee's. */
	if (run_setuid(cgroup, filler, root_value ? page_first : page, &d))
		return false;
	if (root_value && d.enomem < 1) {
		ksft_print_msg("root's 0 did not apply to the setuid program\n");
		ok = false;
	}
	if (!root_value && (d.enomem || d.other || !d.kills)) {
		ksft_print_msg("the delegatee's 0 applied to the setuid program, or it never met the limit\n");
		ok = false;
	}
	/* Its credential changes: never failed, whoever wrote the 0. */
	if (run_setuid(cgroup, filler, drop, &d))
		return false;
	if (d.enomem || d.other || d.kept || d.rounds < 1000 || !d.kills) {
		ksft_print_msg("a credential change failed, or fewer than 1000 ran, or none met the limit\n");
		ok = false;
	}
	return ok;
}

/* @memory_max, the 0 written by the delegatee or also by root. */
static int delegated_run(long memory_max, bool root_value)
{
	char *deleg = cg_name(test_cgroup_root(), "alloc-deleg");
	char *child = cg_name(deleg, "workload");
	int ret = KSFT_FAIL;
	struct filler filler;

	ksft_print_msg("memory.max %ld MiB, 0 written by %s\n",
		       memory_max >> 20, root_value ? "root" : "the delegatee");
	if (delegate(deleg, child, memory_max) ||
	    (root_value && alloc_retries_set(child, "0")) ||
	    filler_start(&filler, child, DELEGATEE, false)) {
		ksft_print_msg("cannot set up %s\n", child);
	} else {
		if (run_own(child) < 1)
			ksft_print_msg("the delegatee's own program got no ENOMEM\n");
		else if (setuid_rounds_as_expected(child, &filler, root_value))
			ret = KSFT_PASS;
		filler_stop(&filler);
	}
	cg_destroy(child);
	cg_destroy(deleg);
	free(child);
	free(deleg);
	return ret;
}

static int test_delegatee_value_spares_setuid_program(void)
{
	static const long sizes[] = { 24L << 20, 48L << 20 };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++)
		if (delegated_run(sizes[i], false) != KSFT_PASS)
			return KSFT_FAIL;
	return KSFT_PASS;
}

static int test_root_value_applies_to_setuid_program(void)
{
	return delegated_run(24L << 20, true);
}

static const struct test_case tests[] = {
	TEST_CASE(test_delegatee_value_spares_setuid_program),
	TEST_CASE(test_root_value_applies_to_setuid_program),
};

int main(int argc, char **argv)
{
	if (!strcmp(basename(argv[0]), "alloc-setuid-helper"))
		return setuid_helper(argc, argv);
	if (install_helper())
		ksft_exit_fail_msg("cannot install %s: %s\n", HELPER,
				   strerror(errno));
	atexit(remove_helper);
	run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
