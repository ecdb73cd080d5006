// SPDX-License-Identifier: GPL-2.0
/*
 * MemoryAllocRetries=, the systemd unit property of patches/systemd/, in
 * the guest's patched systemd: unit files, systemctl set-property (runtime
 * and persistent), systemctl show, daemon-reload, systemd-run -p, invalid
 * values, and a crun container under a delegated service.
 *
 * Units go to /run/systemd/system and are removed again; the tests drive
 * systemd through systemctl and systemd-run as an operator would and check
 * the cgroup files the kernel shows.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup_util.h"
#include "test_util.h"

#define UNITS "/run/systemd/system"
#define SYSTEM "/sys/fs/cgroup/system.slice"
#define WORK "/run/alloc-retries-systemd"
#define BIN "/job/containers/rootfs/bin"

/* Run @fmt with /bin/sh; its output becomes TAP diagnostics.  Exit status. */
static int sh(const char *fmt, ...)
{
	char cmd[8192], line[1024];
	va_list ap;
	FILE *f;
	int status;

	va_start(ap, fmt);
	memcpy(cmd, "{ ", 2);
	vsnprintf(cmd + 2, sizeof(cmd) - 16, fmt, ap);
	va_end(ap);
	strcat(cmd, "; } 2>&1");
	fflush(stdout);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		printf("#   %s", line);
	status = pclose(f);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Does @cgroup/@file read exactly @want?  Says what it reads if not. */
static bool cg_is(const char *cgroup, const char *file, const char *want)
{
	char got[4096] = "";

	if (!cg_read_strcmp(cgroup, file, want))
		return true;
	cg_read(cgroup, file, got, sizeof(got));
	ksft_print_msg("%s/%s: \"%.*s\", want \"%.*s\"\n", cgroup, file,
		       (int)strcspn(got, "\n"), got, (int)strcspn(want, "\n"),
		       want);
	return false;
}

/* Write unit @name to /run/systemd/system with @body. */
static void write_unit(const char *name, const char *body)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), UNITS "/%s", name);
	f = fopen(path, "w");
	if (!f || fputs(body, f) < 0 || fclose(f))
		ksft_exit_fail_msg("cannot write %s\n", path);
}

static int reload(void)
{
	return sh("systemctl daemon-reload");
}

static int service_gets_its_value(void)
{
	int ret = KSFT_FAIL;

	write_unit("art-zero.service",
		   "[Service]\nExecStart=/bin/sleep 600\nMemoryAllocRetries=0\n");
	if (!reload() && !sh("systemctl start art-zero.service") &&
	    cg_is(SYSTEM "/art-zero.service", "memory.alloc_retries", "0\n") &&
	    cg_is(SYSTEM "/art-zero.service", "memory.alloc_retries.effective",
		  "0\n"))
		ret = KSFT_PASS;
	sh("systemctl stop art-zero.service; rm -f " UNITS "/art-zero.service");
	return ret;
}

static int slice_limit_applies_to_service_at_infinity(void)
{
	int ret = KSFT_FAIL;

	write_unit("art.slice", "[Slice]\nMemoryAllocRetries=2\n");
	write_unit("art-inf.service",
		   "[Service]\nSlice=art.slice\nExecStart=/bin/sleep 600\nMemoryAllocRetries=infinity\n");
	if (!reload() && !sh("systemctl start art-inf.service") &&
	    cg_is("/sys/fs/cgroup/art.slice", "memory.alloc_retries", "2\n") &&
	    cg_is("/sys/fs/cgroup/art.slice/art-inf.service",
		  "memory.alloc_retries", "max\n") &&
	    cg_is("/sys/fs/cgroup/art.slice/art-inf.service",
		  "memory.alloc_retries.effective", "2\n"))
		ret = KSFT_PASS;
	sh("systemctl stop art-inf.service art.slice; rm -f " UNITS "/art-inf.service " UNITS "/art.slice");
	return ret;
}

/* The live unit the next cases change. */
static void live_start(void)
{
	write_unit("art-live.service", "[Service]\nExecStart=/bin/sleep 600\n");
	if (reload() || sh("systemctl start art-live.service"))
		ksft_print_msg("art-live.service did not start\n");
}

static void live_stop(void)
{
	sh("systemctl stop art-live.service; systemctl revert art-live.service >/dev/null; rm -f " UNITS "/art-live.service; systemctl daemon-reload");
}

static bool live_is(const char *file_value, const char *show_value)
{
	bool ok = cg_is(SYSTEM "/art-live.service", "memory.alloc_retries",
			file_value);

	if (sh("test \"$(systemctl show -p MemoryAllocRetries art-live.service)\" = 'MemoryAllocRetries=%s'",
	       show_value)) {
		sh("systemctl show -p MemoryAllocRetries art-live.service");
		ksft_print_msg("systemctl show: want MemoryAllocRetries=%s\n",
			       show_value);
		ok = false;
	}
	return ok;
}

static int set_property_runtime(void)
{
	int ret = KSFT_FAIL;

	live_start();
	if (live_is("max\n", "infinity") &&
	    !sh("systemctl set-property --runtime art-live.service MemoryAllocRetries=5") &&
	    live_is("5\n", "5") && !reload() && live_is("5\n", "5") &&
	    !sh("test -e /run/systemd/system.control/art-live.service.d/50-MemoryAllocRetries.conf") &&
	    !sh("systemctl set-property --runtime art-live.service MemoryAllocRetries=infinity") &&
	    live_is("max\n", "infinity"))
		ret = KSFT_PASS;
	live_stop();
	return ret;
}

static int set_property_persistent(void)
{
	const char *dropin = "/etc/systemd/system.control/art-live.service.d/50-MemoryAllocRetries.conf";
	int ret = KSFT_FAIL;

	live_start();
	if (!sh("systemctl set-property art-live.service MemoryAllocRetries=7") &&
	    live_is("7\n", "7") &&
	    !sh("grep -qx 'MemoryAllocRetries=7' %s", dropin) &&
	    !reload() && live_is("7\n", "7") &&
	    !sh("systemctl restart art-live.service") && live_is("7\n", "7"))
		ret = KSFT_PASS;
	live_stop();
	if (!sh("test ! -e %s", dropin))
		return ret;
	ksft_print_msg("systemctl revert left %s\n", dropin);
	return KSFT_FAIL;
}

static int invalid_values_change_nothing(void)
{
	static const char * const bad[] = { "-1", "abc", "99999999999" };
	int ret = KSFT_PASS;
	size_t i;

	live_start();
	if (sh("systemctl set-property --runtime art-live.service MemoryAllocRetries=3"))
		ret = KSFT_FAIL;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		/* The client refuses it with a message naming the property. */
		if (sh("systemctl set-property --runtime art-live.service MemoryAllocRetries=%s 2>&1 | grep 'Failed to parse MemoryAllocRetries value'",
		       bad[i]) ||
		    !sh("systemd-run --quiet -p MemoryAllocRetries=%s /bin/true", bad[i])) {
			ksft_print_msg("%s was not refused\n", bad[i]);
			ret = KSFT_FAIL;
		}
	}
	/* PID 1 checks the range itself: a raw D-Bus call. */
	if (!sh("busctl call org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager SetUnitProperties 'sba(sv)' art-live.service true 1 MemoryAllocRetries t 99999999999")) {
		ksft_print_msg("PID 1 took 99999999999 over D-Bus\n");
		ret = KSFT_FAIL;
	}
	if (!live_is("3\n", "3"))
		ret = KSFT_FAIL;
	live_stop();

	/* In a unit file: a warning with file and line, and the default. */
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		char body[256];

		snprintf(body, sizeof(body),
			 "[Service]\nExecStart=/bin/sleep 600\nMemoryAllocRetries=%s\n",
			 bad[i]);
		write_unit("art-bad.service", body);
		/* Loading the unit (show does) parses it; journald may lag. */
		if (reload() ||
		    sh("test \"$(systemctl show -p MemoryAllocRetries art-bad.service)\" = MemoryAllocRetries=infinity") ||
		    sh("for i in 1 2 3 4 5 6 7 8 9 10; do journalctl -b -q --no-pager | grep -F \"art-bad.service:3: Invalid MemoryAllocRetries= value '%s'\" && exit 0; sleep 1; done; exit 1",
		       bad[i])) {
			ksft_print_msg("unit file value %s: no warning, or not ignored\n",
				       bad[i]);
			ret = KSFT_FAIL;
		}
	}
	sh("rm -f " UNITS "/art-bad.service; systemctl daemon-reload");
	return ret;
}

static int systemd_run_failfast_sees_enomem(void)
{
	int ret = KSFT_FAIL;

	/*
	 * The container-pressure scenario without a container: the fail-fast
	 * service and a hog in one transient service under MemoryMax=.
	 * OOMPolicy=continue: by default systemd stops a service whose
	 * process the OOM killer killed, here a hog filler.
	 */
	sh("rm -rf " WORK "; mkdir -p " WORK);
	if (!sh("systemd-run --wait --quiet --unit art-run -p MemoryAllocRetries=0 -p MemoryMax=32M -p LimitMEMLOCK=1G -p OOMPolicy=continue "
		"/bin/sh -c '" BIN "/hog --result " WORK "/hog.json & "
		BIN "/failfast --seconds 15 --result " WORK "/result.json; "
		/*
		 * The shell is in the full cgroup at 0 too: stop the hog
		 * first, and retry the write until the memory is back.
		 */
		"kill $!; wait $!; for i in 1 2 3 4 5 6 7 8 9 10; do "
		"cat /sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)/memory.events > " WORK "/events && break; sleep 0.5; done'") &&
	    !sh("jq -e '.enomem > 0 and .outcome == \"completed\"' " WORK "/result.json") &&
	    !sh("awk '$1 == \"alloc_retry_fail\" && $2 > 0 { ok = 1 } END { exit !ok }' " WORK "/events"))
		ret = KSFT_PASS;
	if (ret == KSFT_FAIL)
		sh("jq -c 'del(.samples)' " WORK "/result.json; cat " WORK "/events");
	return ret;
}

static int crun_under_delegated_service(void)
{
	int ret = KSFT_FAIL;

	/*
	 * The service moves itself into a leaf of its delegated cgroup, then
	 * crun puts a container at "max" beside it; the container's effective
	 * limit is the service's.
	 */
	sh("rm -rf " WORK "; mkdir -p " WORK "/results");
	sh("jq --arg cg \"/system.slice/art-crun.service/container\" '"
	   ".root.path = \"/job/containers/rootfs\" | .process.args = [\"/bin/failfast\", \"--seconds\", \"5\", \"--result\", \"/results/result.json\"]"
	   " | (.mounts[] | select(.destination == \"/results\")).source = \"" WORK "/results\""
	   " | .linux.cgroupsPath = $cg | .linux.resources.unified[\"memory.alloc_retries\"] = \"max\"' "
	   "/job/containers/bundles/failfast/config.json > " WORK "/config.json");
	/* A script: unit files expand "$" themselves. */
	sh("printf '%%s\\n' "
	   "'cg=/sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)' "
	   "'mkdir $cg/supervisor && echo $$ > $cg/supervisor/cgroup.procs || exit 1' "
	   "'crun run --bundle " WORK " art-crun & crun=$!' "
	   "'until [ -e $cg/container/memory.alloc_retries.effective ]; do sleep 0.1; done' "
	   "'cp $cg/container/memory.alloc_retries.effective " WORK "/effective' "
	   "'wait $crun' > " WORK "/crun.sh");
	write_unit("art-crun.service",
		   "[Service]\nType=oneshot\nDelegate=yes\nMemoryAllocRetries=1\n"
		   "LimitMEMLOCK=1G\nExecStart=/bin/sh " WORK "/crun.sh\n");
	if (!reload() && !sh("systemctl start art-crun.service") &&
	    !sh("echo 1 | cmp - " WORK "/effective") &&
	    !sh("jq -e '.outcome == \"completed\"' " WORK "/results/result.json"))
		ret = KSFT_PASS;
	if (ret == KSFT_FAIL)
		sh("cat " WORK "/effective; systemctl status art-crun.service --no-pager");
	sh("systemctl stop art-crun.service; rm -f " UNITS "/art-crun.service; systemctl daemon-reload");
	return ret;
}

int main(void)
{
	static const struct test_case tests[] = {
		TEST_CASE(service_gets_its_value),
		TEST_CASE(slice_limit_applies_to_service_at_infinity),
		TEST_CASE(set_property_runtime),
		TEST_CASE(set_property_persistent),
		TEST_CASE(invalid_values_change_nothing),
		TEST_CASE(systemd_run_failfast_sees_enomem),
		TEST_CASE(crun_under_delegated_service),
	};

	run_tests(tests, ARRAY_SIZE(tests));
}
