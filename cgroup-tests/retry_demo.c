// SPDX-License-Identifier: GPL-2.0
/*
 * make demo: the retry limits at work, as two tables.  For each value of
 * vm.retry_allocation_attempts, a few rounds of the global pressure the
 * tests use (a hog holding free memory, a probe pinning a quarter of
 * memory in pipe buffers with one page per write()); then, for each value
 * of memory.alloc_retries, a round of memcg pressure in one of several
 * siblings under the same memory.max.  Each row says what the probe's
 * system calls saw and what the OOM killer did.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup_util.h"
#include "test_util.h"

#define ROUNDS 2
#define DEMO_MEMCG_MAX (64 << 20)

/* Global pressure, one row per value of the sysctl. */
static void sysctl_table(void)
{
	static const char * const limits[] = { "-1", "3", "0" };
	char *hog_cgroup = cg_name(test_cgroup_root(), "demo-hog");
	struct probe_result res;
	long calls, enomem, errors, mib, kills;
	bool killed;
	size_t i;
	int r;

	printf("1. vm.retry_allocation_attempts, global pressure in a %ld MiB guest: a hog\n"
	       "holds the free memory, a probe (never the OOM victim) pins %zu MiB in\n"
	       "pipes, %d rounds per setting.\n\n",
	       meminfo_kb("MemTotal") >> 10, probe_bytes() >> 20, ROUNDS);
	printf("%-27s %9s %7s %7s %7s %10s\n", "vm.retry_allocation_attempts",
	       "syscalls", "ENOMEM", "other", "MiB", "OOM kills");
	for (i = 0; i < ARRAY_SIZE(limits); i++) {
		if (retry_sysctl_set(limits[i]))
			ksft_exit_fail_msg("cannot set %s\n", limits[i]);
		calls = enomem = errors = mib = 0;
		kills = vmstat("oom_kill");
		for (r = 0; r < ROUNDS; r++) {
			if (pressure_round(hog_cgroup, NULL, &res, &killed))
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
	       "reached the OOM stage fails with ENOMEM, and the probe carries on.\n\n");
}

/* Sibling cgroups under one memory.max, one row per memory.alloc_retries. */
static void cgroup_table(void)
{
	static const char * const limits[] = { "max", "3", "0" };
	char *parent = cg_name(test_cgroup_root(), "demo-memcg"), *cg;
	char max[32], name[16];
	struct probe_result res;
	bool killed;
	size_t i;

	snprintf(max, sizeof(max), "%d", DEMO_MEMCG_MAX);
	cg_destroy(parent);
	if (cg_create(parent) || cg_write(parent, "memory.max", max) ||
	    cg_write(parent, "cgroup.subtree_control", "+memory"))
		ksft_exit_fail_msg("cannot set up %s\n", parent);
	printf("2. memory.alloc_retries, memcg pressure: siblings under one parent with\n"
	       "memory.max %d MiB (vm.retry_allocation_attempts -1); a hog fills the\n"
	       "parent, the sibling's probe pins %d MiB in pipes.\n\n",
	       DEMO_MEMCG_MAX >> 20, DEMO_MEMCG_MAX >> 21);
	printf("%-20s %-10s %9s %7s %5s %16s %10s\n", "sibling",
	       "effective", "syscalls", "ENOMEM", "MiB", "alloc_retry_fail",
	       "hog killed");
	for (i = 0; i < ARRAY_SIZE(limits); i++) {
		char eff[256], *nl;

		snprintf(name, sizeof(name), "retries-%s", limits[i]);
		cg = cg_name(parent, name);
		if (cg_create(cg) || alloc_retries_set(cg, limits[i]))
			ksft_exit_fail_msg("cannot set up %s\n", cg);
		cg_read(cg, "memory.alloc_retries.effective", eff, sizeof(eff));
		nl = strchr(eff, '\n');
		if (nl)
			*nl = '\0';
		if (memcg_pressure_round(parent, DEMO_MEMCG_MAX, cg, &res,
					 &killed))
			ksft_exit_fail_msg("round in %s not set up\n", cg);
		printf("%-20s %-10s %9ld %7ld %5ld %16ld %10s\n", name,
		       eff + strlen("limit "), res.calls, res.enomem,
		       res.bytes >> 20,
		       cg_event(cg, "memory.events", "alloc_retry_fail"),
		       killed ? "yes" : "no");
		cg_destroy(cg);
		free(cg);
	}
	cg_destroy(parent);
	printf("\nThe same memory.max, the same OOM kill of the hog, three policies: the\n"
	       "sibling at max waits for the hog's memory as today, the one at 0 fails\n"
	       "the charge that saw the kill with ENOMEM and keeps running.\n");
}

int main(void)
{
	sysctl_table();
	cgroup_table();
	return 0;
}
