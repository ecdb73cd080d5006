// SPDX-License-Identifier: GPL-2.0
/*
 * Containers with mixed memory.alloc_retries policies, run by crun.
 *
 * The first case runs the container-pressure scenario, its baseline and
 * the invalid bundle with the project's runner (container-images/
 * run-scenarios); the others assert what must hold on every run, never
 * timings, on what the runner recorded (container.json: policy, effective
 * limit, memory.events, outcome) and what the workloads wrote
 * (results/result.json):
 * - under container pressure the fail-fast service at 0 sees ENOMEM, its
 *   alloc_retry_fail counter is non-zero, and it runs to the end;
 * - in the baseline, every container at max, the same service sees no
 *   ENOMEM (nor ENFILE, pipe2's word for it) and no policy failure
 *   although its hog was OOM-killed;
 * - the legacy worker at max runs to the end in both;
 * - crun refuses the bundle with "memory.alloc_retries": "-3", starts no
 *   process, and nothing is left behind: no container, no cgroup;
 * - every container's files exist and parse as JSON.
 * JSON is read with jq, which the guest has.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup_util.h"
#include "test_util.h"

static const char * const scenarios[] = {
	"container-pressure", "container-pressure-baseline",
};
static const char * const workloads[] = {
	"failfast-0", "failfast-3", "legacy-max", "legacy-0",
};
static char out[PATH_MAX];

/* OUT/SCENARIO/CONTAINER/FILE */
static const char *path_of(const char *scenario, const char *container,
			   const char *file)
{
	static char path[2 * PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s/%s/%s", out, scenario, container,
		 file);
	return path;
}

/* Does the jq filter @expr hold for @file?  Says why not if it does not. */
static bool holds(const char *scenario, const char *container,
		  const char *file, const char *expr)
{
	const char *path = path_of(scenario, container, file);
	char cmd[3 * PATH_MAX];

	snprintf(cmd, sizeof(cmd), "jq -e '%s' %s > /dev/null 2>&1", expr, path);
	if (!system(cmd))
		return true;
	ksft_print_msg("%s/%s/%s: not %s\n", scenario, container, file, expr);
	/* What it holds instead, samples left out. */
	snprintf(cmd, sizeof(cmd),
		 "jq -c 'del(.samples)' %s 2>&1 | sed 's/^/# /'", path);
	if (system(cmd))
		ksft_print_msg("(cannot show %s)\n", path);
	return false;
}

static int scenarios_ran(void)
{
	const char *results = getenv("ALLOC_TEST_RESULTS");
	const char *runner = getenv("ALLOC_TEST_CONTAINERS");
	char cmd[2 * PATH_MAX], line[1024];
	FILE *f;

	if (!results || !runner) {
		ksft_print_msg("ALLOC_TEST_RESULTS or ALLOC_TEST_CONTAINERS not set\n");
		return KSFT_FAIL;
	}
	snprintf(out, sizeof(out), "%s/test_containers", results);
	snprintf(cmd, sizeof(cmd), "%s/run-scenarios %s %s %s invalid 2>&1",
		 runner, out, scenarios[0], scenarios[1]);
	fflush(stdout);
	f = popen(cmd, "r");
	if (!f) {
		ksft_print_msg("%s: %s\n", cmd, strerror(errno));
		return KSFT_FAIL;
	}
	/* The runner's progress lines, as TAP diagnostics. */
	while (fgets(line, sizeof(line), f)) {
		printf("# %s", line);
		fflush(stdout);
	}
	if (pclose(f)) {
		ksft_print_msg("run-scenarios failed\n");
		return KSFT_FAIL;
	}
	return KSFT_PASS;
}

static int failfast_at_0_sees_enomem(void)
{
	const char *s = "container-pressure", *c = "failfast-0";

	if (holds(s, c, "container.json",
		  ".policy == \"0\" and .memory_events.alloc_retry_fail > 0 and .outcome == \"ran to the end\"") &&
	    holds(s, c, "results/result.json",
		  ".enomem > 0 and .outcome == \"completed\""))
		return KSFT_PASS;
	return KSFT_FAIL;
}

static int failfast_at_max_no_enomem(void)
{
	const char *s = "container-pressure-baseline", *c = "failfast-0";

	/* Its hog was OOM-killed: the pressure was there. */
	if (holds(s, c, "container.json",
		  ".policy == \"max\" and .memory_events.oom_kill > 0 and .memory_events.alloc_retry_fail == 0 and .outcome == \"ran to the end\"") &&
	    holds(s, c, "results/result.json",
		  ".enomem == 0 and .enfile == 0 and .outcome == \"completed\""))
		return KSFT_PASS;
	return KSFT_FAIL;
}

static int legacy_at_max_runs_to_the_end(void)
{
	int ret = KSFT_PASS;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(scenarios); i++)
		if (!holds(scenarios[i], "legacy-max", "container.json",
			   ".policy == \"max\" and .memory_events.alloc_retry_fail == 0 and .outcome == \"ran to the end\"") ||
		    !holds(scenarios[i], "legacy-max", "results/result.json",
			   ".enomem == 0 and .outcome == \"completed\""))
			ret = KSFT_FAIL;
	return ret;
}

static int effective_limit_is_the_policy(void)
{
	int ret = KSFT_PASS;
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(scenarios); i++)
		for (j = 0; j < ARRAY_SIZE(workloads); j++)
			if (!holds(scenarios[i], workloads[j], "container.json",
				   ".effective.limit == .policy"))
				ret = KSFT_FAIL;
	return ret;
}

static int result_files_parse(void)
{
	int ret = KSFT_PASS;
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(scenarios); i++)
		for (j = 0; j < ARRAY_SIZE(workloads); j++)
			if (!holds(scenarios[i], workloads[j], "container.json",
				   "has(\"outcome\") and has(\"memory_events\")") ||
			    !holds(scenarios[i], workloads[j], "results/result.json",
				   "has(\"operations\") and (.samples | length) == .operations"))
				ret = KSFT_FAIL;
	return ret;
}

static int invalid_policy_starts_nothing(void)
{
	const char *s = "invalid", *c = "failfast-x";
	char log[4096], cg[PATH_MAX];
	struct stat st;
	int ret = KSFT_PASS;

	if (!holds(s, c, "container.json",
		   ".policy == \"-3\" and .outcome == \"did not start\""))
		ret = KSFT_FAIL;
	/* crun's error names the file and the kernel's EINVAL. */
	if (read_text(path_of(s, c, "crun.log"), log, sizeof(log)) <= 0 ||
	    !strstr(log, "memory.alloc_retries") ||
	    !strstr(log, "Invalid argument")) {
		ksft_print_msg("crun.log: \"%s\"\n", log);
		ret = KSFT_FAIL;
	}
	if (!stat(path_of(s, c, "results/result.json"), &st)) {
		ksft_print_msg("the workload ran: it wrote result.json\n");
		ret = KSFT_FAIL;
	}
	snprintf(cg, sizeof(cg), "%s/containers/%s", test_cgroup_root(), s);
	if (!stat(cg, &st)) {
		ksft_print_msg("%s is left behind\n", cg);
		ret = KSFT_FAIL;
	}
	if (!system("crun state invalid-failfast-x > /dev/null 2>&1")) {
		ksft_print_msg("crun still knows container invalid-failfast-x\n");
		ret = KSFT_FAIL;
	}
	return ret;
}

static int nothing_left_behind(void)
{
	char cmd[PATH_MAX + 64];

	/* No container in crun's state, no cgroup under containers/. */
	snprintf(cmd, sizeof(cmd),
		 "[ -z \"$(crun list -q)\" ] && [ -z \"$(find %s/containers -mindepth 1 -type d)\" ]",
		 test_cgroup_root());
	if (!system(cmd))
		return KSFT_PASS;
	snprintf(cmd, sizeof(cmd),
		 "{ crun list; find %s/containers -mindepth 1 -type d; } | sed 's/^/# left: /'",
		 test_cgroup_root());
	if (system(cmd))
		ksft_print_msg("(cannot list what is left)\n");
	return KSFT_FAIL;
}

int main(void)
{
	static const struct test_case tests[] = {
		TEST_CASE(scenarios_ran),
		TEST_CASE(failfast_at_0_sees_enomem),
		TEST_CASE(failfast_at_max_no_enomem),
		TEST_CASE(legacy_at_max_runs_to_the_end),
		TEST_CASE(effective_limit_is_the_policy),
		TEST_CASE(result_files_parse),
		TEST_CASE(invalid_policy_starts_nothing),
		TEST_CASE(nothing_left_behind),
	};

	run_tests(tests, ARRAY_SIZE(tests));
}
