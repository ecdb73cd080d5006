// SPDX-License-Identifier: GPL-2.0
/*
 * make demo: the retry limit at work.  For each value of
 * vm.retry_allocation_attempts, a few rounds of the pressure scenario the
 * tests use (a hog holding free memory, a probe pinning a quarter of
 * memory in pipe buffers with one page per write()), then one table row:
 * what the probe's system calls saw and what the OOM killer did.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup_util.h"
#include "test_util.h"

#define ROUNDS 2

static long vmstat(const char *key)
{
	char buf[16384], *p;
	size_t len = strlen(key);

	if (read_text("/proc/vmstat", buf, sizeof(buf)) <= 0)
		return -1;
	for (p = buf; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, len) && p[len] == ' ')
			return strtol(p + len + 1, NULL, 10);
	return -1;
}

int main(void)
{
	static const char * const limits[] = { "-1", "3", "0" };
	char *hog_cgroup = cg_name(test_cgroup_root(), "demo-hog");
	struct probe_result res;
	long calls, enomem, errors, mib, kills;
	bool killed;
	size_t i;
	int r;

	printf("Global pressure in a %ld MiB guest: a hog holds the free memory, a probe\n"
	       "(never the OOM victim) pins %zu MiB in pipes, %d rounds per setting.\n\n",
	       meminfo_kb("MemTotal") >> 10, probe_bytes() >> 20, ROUNDS);
	printf("%-27s %9s %7s %7s %7s %10s\n", "vm.retry_allocation_attempts",
	       "syscalls", "ENOMEM", "other", "MiB", "OOM kills");
	for (i = 0; i < ARRAY_SIZE(limits); i++) {
		if (retry_sysctl_set(limits[i]))
			ksft_exit_fail_msg("cannot set %s\n", limits[i]);
		calls = enomem = errors = mib = 0;
		kills = vmstat("oom_kill");
		for (r = 0; r < ROUNDS; r++) {
			if (pressure_round(hog_cgroup, &res, &killed))
				break;
			calls += res.calls;
			enomem += res.enomem;
			errors += res.other_errors;
			mib += res.bytes >> 20;
		}
		kills = vmstat("oom_kill") - kills;
		printf("%-28s %9ld %7ld %7ld %7ld %10ld\n", limits[i], calls,
		       enomem, errors, mib, kills);
	}
	retry_sysctl_set("-1");
	printf("\nEvery round the OOM killer kills the hog.  At -1 the probe's writes wait\n"
	       "for it and all succeed.  At 3 they may retry three times after an OOM\n"
	       "pass, enough for the victim to exit.  At 0 the write whose allocation\n"
	       "reached the OOM stage fails with ENOMEM, and the probe carries on.\n");
	return 0;
}
