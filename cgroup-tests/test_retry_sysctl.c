// SPDX-License-Identifier: GPL-2.0
/*
 * vm.retry_allocation_attempts: the interface.  Default -1, every value of
 * -1..INT_MAX round-trips, anything else is refused with EINVAL and leaves
 * the value as it was, and only root may write it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup_util.h"
#include "test_util.h"

static int test_default(void)
{
	return read_long_file(RETRY_SYSCTL) == -1 ? KSFT_PASS : KSFT_FAIL;
}

static int test_round_trip(void)
{
	static const char * const vals[] = {
		"0", "1", "3", "1000", "2147483647", "-1",
	};
	long want;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(vals); i++) {
		if (retry_sysctl_set(vals[i])) {
			ksft_print_msg("write %s: %s\n", vals[i], strerror(errno));
			return KSFT_FAIL;
		}
		sscanf(vals[i], "%ld", &want);
		if (read_long_file(RETRY_SYSCTL) != want) {
			ksft_print_msg("%s did not read back\n", vals[i]);
			return KSFT_FAIL;
		}
	}
	return KSFT_PASS;
}

static int test_rejected(void)
{
	static const char * const bad[] = {
		"-2", "-1000", "abc", "", "\n", " ", "2147483648",
		"99999999999999999999", "-99999999999999999999", "5x", "3abc",
		"1.5", "--1", "+", "+4", "0x", "0x1g", "max",
	};
	int ret = KSFT_PASS, err;
	size_t i;

	if (retry_sysctl_set("7"))
		return KSFT_FAIL;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		err = retry_sysctl_set(bad[i]);
		/* A zero-length write is a no-op, not an error. */
		if (!*bad[i] ? err != 0 : err != -EINVAL) {
			ksft_print_msg("write \"%s\": got %d, want %d\n",
				       bad[i], err, *bad[i] ? -EINVAL : 0);
			ret = KSFT_FAIL;
		}
		if (read_long_file(RETRY_SYSCTL) != 7) {
			ksft_print_msg("write \"%s\" changed the value\n", bad[i]);
			ret = KSFT_FAIL;
		}
	}
	retry_sysctl_set("-1");
	return ret;
}

/*
 * Where the issue lists input that the kernel's integer parser accepts,
 * the kernel's convention wins: base 0 ("0x10" is 16, "010" is 8), and a
 * second number after whitespace ends the write short, after the first.
 */
static int test_kernel_conventions(void)
{
	static const struct { const char *in; long want; } cases[] = {
		{ "0x10", 16 }, { "010", 8 }, { " 5\n", 5 },
	};
	int ret = KSFT_PASS, fd;
	ssize_t n;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		if (retry_sysctl_set(cases[i].in) ||
		    read_long_file(RETRY_SYSCTL) != cases[i].want) {
			ksft_print_msg("\"%s\" did not set %ld\n", cases[i].in,
				       cases[i].want);
			ret = KSFT_FAIL;
		}
	}
	fd = open(RETRY_SYSCTL, O_WRONLY);
	n = write(fd, "1 2", 3);
	close(fd);
	if (n != 2 || read_long_file(RETRY_SYSCTL) != 1) {
		ksft_print_msg("\"1 2\": wrote %zd, value %ld\n", n,
			       read_long_file(RETRY_SYSCTL));
		ret = KSFT_FAIL;
	}
	retry_sysctl_set("-1");
	return ret;
}

static int test_non_root_refused(void)
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid == 0) {
		if (setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(2);
		_exit(retry_sysctl_set("0") == -EACCES ? 0 : 1);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return KSFT_FAIL;
	return read_long_file(RETRY_SYSCTL) == -1 ? KSFT_PASS : KSFT_FAIL;
}

static const struct test_case tests[] = {
	TEST_CASE(test_default),
	TEST_CASE(test_round_trip),
	TEST_CASE(test_rejected),
	TEST_CASE(test_kernel_conventions),
	TEST_CASE(test_non_root_refused),
};

int main(int argc, char **argv)
{
	run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
