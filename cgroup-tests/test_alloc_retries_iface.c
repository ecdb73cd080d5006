// SPDX-License-Identifier: GPL-2.0
/*
 * memory.alloc_retries: the interface, the hierarchy rule and delegation.
 *
 * The file reads "max" by default and takes "max" or 0..INT_MAX; anything
 * else is refused with EINVAL and changes nothing.  The limit that applies,
 * shown in memory.alloc_retries.effective, is the tightest of the sysctl
 * and the values of the cgroup and its ancestors, so a delegated subtree
 * can tighten its limit but never loosen it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup_util.h"
#include "test_util.h"

static const char *root;

/* A fresh cgroup @name under the test root (or under @parent). */
static char *fresh_cgroup(const char *parent, const char *name)
{
	char *cg = cg_name(parent ? parent : root, name);

	cg_destroy(cg);
	if (cg_create(cg))
		ksft_exit_fail_msg("cg_create %s: %s\n", cg, strerror(errno));
	return cg;
}

static void enable_memory(const char *cg)
{
	if (cg_write(cg, "cgroup.subtree_control", "+memory"))
		ksft_exit_fail_msg("+memory in %s: %s\n", cg, strerror(errno));
}

static bool value_is(const char *cg, const char *want)
{
	char buf[64];

	if (!cg_read_strcmp(cg, "memory.alloc_retries", want))
		return true;
	cg_read(cg, "memory.alloc_retries", buf, sizeof(buf));
	ksft_print_msg("%s/memory.alloc_retries: \"%s\", want \"%s\"", cg, buf,
		       want);
	return false;
}

/* "limit L\nsource S\n" with S the kernel path of @source_cg. */
static bool effective_from(const char *cg, const char *limit,
			   const char *source_cg)
{
	char want[PATH_MAX + 64];

	snprintf(want, sizeof(want), "limit %s\nsource %s\n", limit,
		 cg_kernel_path(source_cg));
	return alloc_retries_effective_is(cg, want);
}

static int test_default_max(void)
{
	char *cg = fresh_cgroup(NULL, "iface");
	bool ok;

	ok = value_is(cg, "max\n") &&
	     alloc_retries_effective_is(cg, "limit max\nsource none\n");
	cg_destroy(cg);
	return ok ? KSFT_PASS : KSFT_FAIL;
}

static int test_round_trip(void)
{
	static const struct {
		const char *in, *out;
	} vals[] = {
		{ "0", "0\n" }, { "1", "1\n" }, { "3\n", "3\n" },
		{ "1000", "1000\n" }, { "2147483647", "2147483647\n" },
		{ "max", "max\n" }, { " 5\n", "5\n" }, { "max\n", "max\n" },
		/* The kernel's base-0 convention, as for the sysctl. */
		{ "0x10", "16\n" }, { "010", "8\n" },
	};
	char *cg = fresh_cgroup(NULL, "iface");
	int ret = KSFT_PASS, err;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(vals); i++) {
		err = alloc_retries_set(cg, vals[i].in);
		if (err || !value_is(cg, vals[i].out)) {
			ksft_print_msg("write \"%s\": %s\n", vals[i].in,
				       strerror(-err));
			ret = KSFT_FAIL;
		}
	}
	cg_destroy(cg);
	return ret;
}

static int test_rejected(void)
{
	static const char * const bad[] = {
		/* What the sysctl refuses... */
		"-2", "-1000", "abc", "\n", " ", "2147483648",
		"99999999999999999999", "-99999999999999999999", "5x", "3abc",
		"1.5", "--1", "+", "+4", "0x", "0x1g",
		/* ... and what only a "max" file can get wrong. */
		"-1", "Max", "MAX", "max 1", "maxx", "1 2", "-0", "4294967296",
	};
	char *cg = fresh_cgroup(NULL, "iface");
	int ret = KSFT_PASS, err;
	size_t i;

	if (alloc_retries_set(cg, "7"))
		return KSFT_FAIL;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		err = alloc_retries_set(cg, bad[i]);
		if (err != -EINVAL) {
			ksft_print_msg("write \"%s\": got %d, want %d\n", bad[i],
				       err, -EINVAL);
			ret = KSFT_FAIL;
		}
		if (!value_is(cg, "7\n")) {
			ksft_print_msg("write \"%s\" changed the value\n", bad[i]);
			ret = KSFT_FAIL;
		}
	}
	/* An empty write changes nothing either, whatever it returns. */
	alloc_retries_set(cg, "");
	if (!value_is(cg, "7\n"))
		ret = KSFT_FAIL;
	cg_destroy(cg);
	return ret;
}

static int test_not_on_root_or_without_memory(void)
{
	char *parent = fresh_cgroup(NULL, "iface"), *child;
	bool ok;

	/* No memory controller in @parent's subtree: no file in @child. */
	child = fresh_cgroup(parent, "child");
	ok = access("/sys/fs/cgroup/memory.alloc_retries", F_OK) &&
	     errno == ENOENT &&
	     access("/sys/fs/cgroup/memory.alloc_retries.effective", F_OK) &&
	     errno == ENOENT &&
	     access(cg_control(child, "memory.alloc_retries"), F_OK) &&
	     errno == ENOENT;
	cg_destroy(child);
	cg_destroy(parent);
	return ok ? KSFT_PASS : KSFT_FAIL;
}

static int test_survives_task_moves(void)
{
	char *cg = fresh_cgroup(NULL, "iface"), *job = cg_name(root, "job");
	int i, ok = 1;
	pid_t pid;

	if (alloc_retries_set(cg, "3"))
		return KSFT_FAIL;
	pid = fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	for (i = 0; i < 3; i++) {
		ok &= !cg_enter(cg, pid);
		ok &= value_is(cg, "3\n");
		ok &= !cg_enter(job, pid);
		ok &= value_is(cg, "3\n");
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	cg_destroy(cg);
	return ok ? KSFT_PASS : KSFT_FAIL;
}

/* parent/child/grandchild, memory enabled down to the grandchild. */
struct tree {
	char *parent, *child, *grandchild;
};

static void tree_create(struct tree *t)
{
	t->parent = fresh_cgroup(NULL, "hier");
	enable_memory(t->parent);
	t->child = fresh_cgroup(t->parent, "child");
	enable_memory(t->child);
	t->grandchild = fresh_cgroup(t->child, "grandchild");
}

static void tree_destroy(struct tree *t)
{
	cg_destroy(t->grandchild);
	cg_destroy(t->child);
	cg_destroy(t->parent);
	retry_sysctl_set("-1");
}

static int test_parent_limits_child(void)
{
	struct tree t;
	bool ok;

	tree_create(&t);
	ok = !alloc_retries_set(t.parent, "2") &&
	     value_is(t.child, "max\n") &&
	     effective_from(t.child, "2", t.parent) &&
	     effective_from(t.grandchild, "2", t.parent);
	tree_destroy(&t);
	return ok ? KSFT_PASS : KSFT_FAIL;
}

static int test_child_tightens(void)
{
	struct tree t;
	bool ok;

	tree_create(&t);
	ok = !alloc_retries_set(t.child, "1") &&
	     effective_from(t.child, "1", t.child) &&
	     effective_from(t.grandchild, "1", t.child) &&
	     alloc_retries_effective_is(t.parent, "limit max\nsource none\n") &&
	     /* Tighter than the parent's: the child's still wins. */
	     !alloc_retries_set(t.parent, "4") &&
	     effective_from(t.child, "1", t.child) &&
	     /* Looser than the parent's: the parent's wins. */
	     !alloc_retries_set(t.child, "9") &&
	     effective_from(t.grandchild, "4", t.parent);
	tree_destroy(&t);
	return ok ? KSFT_PASS : KSFT_FAIL;
}

static int test_global_against_cgroups(void)
{
	const char *sysctl = "vm.retry_allocation_attempts";
	char want[128];
	struct tree t;
	bool ok;

	tree_create(&t);
	snprintf(want, sizeof(want), "limit 0\nsource %s\n", sysctl);
	/* The sysctl at 0 beats any cgroup... */
	ok = !alloc_retries_set(t.child, "3") && !retry_sysctl_set("0") &&
	     alloc_retries_effective_is(t.child, want) &&
	     alloc_retries_effective_is(t.parent, want);
	/* ... at -1 it sets nothing, and a looser one loses. */
	ok = ok && !retry_sysctl_set("-1") &&
	     effective_from(t.child, "3", t.child) &&
	     alloc_retries_effective_is(t.parent, "limit max\nsource none\n") &&
	     !retry_sysctl_set("10") &&
	     effective_from(t.grandchild, "3", t.child);
	snprintf(want, sizeof(want), "limit 10\nsource %s\n", sysctl);
	ok = ok && alloc_retries_effective_is(t.parent, want);
	tree_destroy(&t);
	return ok ? KSFT_PASS : KSFT_FAIL;
}

static int test_parent_change_applies_to_subtree(void)
{
	static const char * const vals[] = { "5", "1", "0", "max" };
	struct tree t;
	bool ok = true;
	size_t i;

	tree_create(&t);
	for (i = 0; i < ARRAY_SIZE(vals) && ok; i++) {
		ok = !alloc_retries_set(t.parent, vals[i]);
		if (!strcmp(vals[i], "max"))
			ok = ok && alloc_retries_effective_is(t.grandchild,
					"limit max\nsource none\n");
		else
			ok = ok && effective_from(t.child, vals[i], t.parent) &&
			     effective_from(t.grandchild, vals[i], t.parent);
	}
	tree_destroy(&t);
	return ok ? KSFT_PASS : KSFT_FAIL;
}

/*
 * Delegate @cg to TEST_UID as Documentation/admin-guide/cgroup-v2.rst
 * says: the directory and its cgroup.procs, cgroup.subtree_control and
 * cgroup.threads change owner, no other file does.
 */
static void delegate(const char *cg)
{
	static const char * const files[] = {
		"cgroup.procs", "cgroup.subtree_control", "cgroup.threads",
	};
	size_t i;

	if (chown(cg, TEST_UID, TEST_UID))
		ksft_exit_fail_msg("chown %s: %s\n", cg, strerror(errno));
	for (i = 0; i < ARRAY_SIZE(files); i++)
		if (chown(cg_control(cg, files[i]), TEST_UID, TEST_UID))
			ksft_exit_fail_msg("chown %s: %s\n", files[i],
					   strerror(errno));
}

/* As TEST_UID: what the delegatee can and cannot do in @point. */
static int delegatee(const char *parent, const char *point)
{
	char *child = cg_name(point, "svc"), *grandchild;

	if (setresgid(TEST_UID, TEST_UID, TEST_UID) ||
	    setresuid(TEST_UID, TEST_UID, TEST_UID))
		return 10;
	/* Its own children: it creates them, so it owns their files. */
	if (cg_create(child) || cg_write(child, "cgroup.subtree_control",
					 "+memory"))
		return 11;
	grandchild = cg_name(child, "task");
	if (cg_create(grandchild))
		return 12;
	if (alloc_retries_set(child, "max") || alloc_retries_set(grandchild, "max"))
		return 13;
	/* ... but raising them does not loosen the parent's limit, */
	if (!effective_from(child, "2", parent) ||
	    !effective_from(grandchild, "2", parent))
		return 14;
	/* ... tightening does, */
	if (alloc_retries_set(grandchild, "0") ||
	    !effective_from(grandchild, "0", grandchild))
		return 15;
	/* ... and the delegation point's own file is not its to write. */
	if (alloc_retries_set(point, "max") != -EACCES)
		return 16;
	if (cg_destroy(grandchild) || cg_destroy(child))
		return 17;
	return 0;
}

static int test_delegation(void)
{
	char *parent = fresh_cgroup(NULL, "deleg"), *point;
	int status, ok;
	pid_t pid;

	enable_memory(parent);
	if (alloc_retries_set(parent, "2"))
		return KSFT_FAIL;
	point = fresh_cgroup(parent, "delegated");
	enable_memory(point);
	delegate(point);
	pid = fork();
	if (pid == 0)
		_exit(delegatee(parent, point));
	ok = waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	     !WEXITSTATUS(status);
	if (!ok)
		ksft_print_msg("delegatee: status %#x\n", status);
	/* Still as the parent left it. */
	ok = ok && value_is(point, "max\n") &&
	     effective_from(point, "2", parent);
	/* What a failing delegatee left behind: rmdir needs leaves first. */
	rmdir(cg_name(point, "svc/task"));
	rmdir(cg_name(point, "svc"));
	cg_destroy(point);
	cg_destroy(parent);
	return ok ? KSFT_PASS : KSFT_FAIL;
}

static const struct test_case tests[] = {
	TEST_CASE(test_default_max),
	TEST_CASE(test_round_trip),
	TEST_CASE(test_rejected),
	TEST_CASE(test_not_on_root_or_without_memory),
	TEST_CASE(test_survives_task_moves),
	TEST_CASE(test_parent_limits_child),
	TEST_CASE(test_child_tightens),
	TEST_CASE(test_global_against_cgroups),
	TEST_CASE(test_parent_change_applies_to_subtree),
	TEST_CASE(test_delegation),
};

int main(void)
{
	root = test_cgroup_root();
	run_tests(tests, ARRAY_SIZE(tests));
}
