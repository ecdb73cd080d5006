// SPDX-License-Identifier: GPL-2.0
/*
 * vm.retry_allocation_attempts under real memory pressure.
 *
 * No swap; a hog (oom_score_adj 1000) holds nearly all free memory, then a
 * probe (oom_score_adj -1000) pins a quarter of memory in pipe buffers.
 * The probe's own order-0 page allocations are the ones that reach the
 * OOM stage.  At 0 such an allocation fails where it would have invoked
 * the OOM killer, so the probe sees ENOMEM from write() and kills nobody;
 * at -1 the OOM killer kills the hog, and the probe waits for its memory
 * and sees no error.
 *
 * Page faults keep today's semantics under any limit: a task that faults
 * in memory under the same pressure gets all of it, with no
 * "VM_FAULT_OOM leaked" line and no limit report of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup_util.h"
#include "test_util.h"

/*
 * Rounds of hog + probe.  Another task's allocation can reach the OOM
 * stage first (seen: a fault of PID 1, whose text reclaim had evicted) and
 * have the hog killed while the probe is still in reclaim, so at 0 up to
 * eight rounds are run until the probe sees ENOMEM (it did in the first or
 * second round in every run so far); at -1 every one of three rounds must
 * see none.
 */
#define LIMIT0_ROUNDS 8
#define UNLIMITED_ROUNDS 3
#define LIMIT_REPORT "vm.retry_allocation_attempts=0 reached"

static char *hog_cgroup;

static void reset_retry(void)
{
	retry_sysctl_set("-1");
}

static int test_limit0_probe_sees_enomem(void)
{
	struct probe_result res;
	long enomem = 0, reports, invoked;
	bool killed;
	int i, kmsg, kmsg_oom;

	/* warn_alloc() prints at most once per 10 s: start with a clean slate. */
	sleep(11);
	kmsg = kmsg_mark();
	kmsg_oom = kmsg_mark();
	if (retry_sysctl_set("0"))
		return KSFT_FAIL;
	for (i = 0; i < LIMIT0_ROUNDS && !enomem; i++) {
		if (pressure_round(hog_cgroup, NULL, &res, &killed))
			break;
		probe_report(&res, killed);
		if (res.other_errors)
			break;
		enomem += res.enomem;
	}
	retry_sysctl_set("-1");
	reports = kmsg_count(kmsg, LIMIT_REPORT, NULL);
	invoked = kmsg_count(kmsg_oom, "retry-probe invoked oom-killer", NULL);
	ksft_print_msg("limit 0: %ld ENOMEM in %d rounds, %ld limit reports, %ld OOM-killer invocations by the probe\n",
		       enomem, i, reports, invoked);
	return enomem > 0 && reports > 0 && !invoked && !res.other_errors ?
		KSFT_PASS : KSFT_FAIL;
}

static int test_unlimited_probe_sees_none(void)
{
	struct probe_result res;
	bool killed;
	int i, kmsg;

	kmsg = kmsg_mark();
	if (retry_sysctl_set("-1"))
		return KSFT_FAIL;
	for (i = 0; i < UNLIMITED_ROUNDS; i++) {
		if (pressure_round(hog_cgroup, NULL, &res, &killed))
			return KSFT_FAIL;
		probe_report(&res, killed);
		/* The pressure was real, and the probe got all it asked for. */
		if (!killed || res.enomem || res.other_errors ||
		    (size_t)res.bytes < probe_bytes())
			return KSFT_FAIL;
	}
	return kmsg_count(kmsg, "retry_allocation_attempts", NULL) ? KSFT_FAIL :
		KSFT_PASS;
}

/* A child faulting in a quarter of memory, from user mode or in read(). */
static int fault_in(const char *comm, bool from_kernel)
{
	size_t bytes = probe_bytes(), off;
	volatile char *mem;
	int status, fd;
	ssize_t got;
	pid_t pid;

	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_NAME, comm);
		set_oom_score_adj(-1000);
		mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (mem == MAP_FAILED)
			_exit(2);
		if (!from_kernel) {
			for (off = 0; off < bytes; off += 4096)
				mem[off] = 1;
			_exit(0);
		}
		/* copy_to_user() faults the buffer in from kernel mode. */
		fd = open("/dev/zero", O_RDONLY);
		got = read(fd, (char *)mem, bytes);
		_exit(got == (ssize_t)bytes ? 0 : got < 0 ? 10 + errno % 100 : 3);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		ksft_print_msg("%s: status %#x\n", comm, status);
		return -1;
	}
	return 0;
}

static int faults_under_limit0(const char *comm, bool from_kernel)
{
	int leaked_fd, reports_fd, ret, leaked, reports;
	bool killed;
	pid_t hog;

	hog = hog_start(hog_cgroup, hog_bytes_for_pressure());
	if (hog <= 0)
		return KSFT_FAIL;
	leaked_fd = kmsg_mark();
	reports_fd = kmsg_mark();
	retry_sysctl_set("0");
	ret = fault_in(comm, from_kernel);
	retry_sysctl_set("-1");
	killed = hog_stop(hog, hog_cgroup);
	leaked = kmsg_count(leaked_fd, "VM_FAULT_OOM leaked", NULL);
	reports = kmsg_count(reports_fd, comm, "retry_allocation_attempts");
	ksft_print_msg("%s: %s, hog OOM-killed: %s, leaked lines: %d, limit reports: %d\n",
		       comm, ret ? "failed" : "got all its memory",
		       killed ? "yes" : "no", leaked, reports);
	return !ret && killed && !leaked && !reports ? KSFT_PASS : KSFT_FAIL;
}

static int test_limit0_user_faults_exempt(void)
{
	return faults_under_limit0("retry-faulter", false);
}

static int test_limit0_uaccess_faults_exempt(void)
{
	return faults_under_limit0("retry-uaccess", true);
}

static const struct test_case tests[] = {
	TEST_CASE(test_limit0_probe_sees_enomem),
	TEST_CASE(test_unlimited_probe_sees_none),
	TEST_CASE(test_limit0_user_faults_exempt),
	TEST_CASE(test_limit0_uaccess_faults_exempt),
};

int main(int argc, char **argv)
{
	hog_cgroup = cg_name(test_cgroup_root(), "retry-hog");
	/* Whatever happened, leave the default behind. */
	atexit(reset_retry);
	run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
