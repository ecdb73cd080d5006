// SPDX-License-Identifier: GPL-2.0
/*
 * Fault injection over one of the project's system calls: for n = 1, 2,
 * ... make the n-th fault-injection point the call reaches fail
 * (/proc/thread-self/fail-nth: failslab, fail_page_alloc), until a call
 * completes without reaching an n-th point.  After every call the state
 * must be one of two: the call succeeded and did all it says, or it
 * failed with an errno and changed nothing.  (The kernel log's warnings
 * are the reporter's.)
 *
 *   fail_nth_sweep write PATH VALUE   write(2) VALUE to PATH (a cgroup or
 *                                     sysctl file): reads back VALUE, or
 *                                     what it held before
 *   fail_nth_sweep read PATH          read(2) PATH: what it reads without
 *                                     faults, or an error
 *   fail_nth_sweep mkdir PARENT       mkdir(2) PARENT/fail-nth: a child
 *                                     whose memory.alloc_retries.effective
 *                                     is PARENT's, or no child
 *   fail_nth_sweep rmdir PARENT       rmdir(2) of that child: gone, or
 *                                     there as it was
 *   fail_nth_sweep pid1 UNIT VALUE FILE
 *                                     the faults in PID 1 while systemctl
 *                                     set-property --runtime UNIT
 *                                     MemoryAllocRetries=VALUE runs: the
 *                                     unit's property and its cgroup's
 *                                     FILE both VALUE if systemctl
 *                                     succeeded, both as before if not
 *                                     (both VALUE if the fault was in
 *                                     PID 1's reply), and PID 1 still
 *                                     answers (n up to 100, then steps
 *                                     of 3%)
 *
 * Prints a line per call whose state was neither, and a summary: calls,
 * faults injected, calls that succeeded anyway, calls that failed (by
 * errno).  Exit status 1 if any state was neither.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

#define MAX_N	100000
/*
 * PID 1's fault points are not the call's alone (its other work takes
 * some), and each n costs three systemctl runs, about 3 s on the debug
 * kernel under TCG: its sweep takes every n up to PID1_DENSE_N, then
 * steps of 1/32 (3%) of n, so that it still finds the call's last fault
 * point, within a few hundred calls.  A sweep that has not ended by
 * MAX_PID1_N is reported as such.
 */
#define PID1_DENSE_N	100
#define MAX_PID1_N	100000

static long calls, injected, succeeded, failed_by[135];
static int bad;

/* @path's text without its trailing newline; "" if it cannot be read. */
static const char *slurp(const char *path)
{
	static char buf[4096];
	ssize_t n = -1;
	int fd = open(path, O_RDONLY);

	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

static void put(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);

	if (fd < 0 || write(fd, val, strlen(val)) != (ssize_t)strlen(val)) {
		fprintf(stderr, "cannot write %s to %s: %m\n", val, path);
		exit(1);
	}
	close(fd);
}

/*
 * fail-nth of task @tid (0: this thread), kept open: reading and writing
 * it allocates nothing, so the only fault points between arm() and fired()
 * are the system call's.
 */
static int nth_open(pid_t tid)
{
	char path[64];
	int fd;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/fail-nth", tid, tid);
	else
		snprintf(path, sizeof(path), "/proc/thread-self/fail-nth");
	fd = open(path, O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "%s: %m\n", path);
		exit(1);
	}
	return fd;
}

/* Fail the @n-th fault point from now on. */
static void arm(int nth, long n)
{
	char val[24];
	int len = snprintf(val, sizeof(val), "%ld", n);

	if (pwrite(nth, val, len, 0) != len) {
		perror("fail-nth");
		exit(1);
	}
}

/* Whether the armed fault was injected (fail-nth reads 0); disarms. */
static bool fired(int nth)
{
	char val[24];
	ssize_t len = pread(nth, val, sizeof(val) - 1, 0);

	if (len <= 0 || pwrite(nth, "0", 1, 0) != 1) {
		perror("fail-nth");
		exit(1);
	}
	val[len] = '\0';
	return atol(val) == 0;
}

static void tally(long n, int err, bool ok, const char *state)
{
	calls++;
	if (err)
		failed_by[err < 135 ? err : 0]++;
	else
		succeeded++;
	if (!ok) {
		bad++;
		printf("# n=%ld: %s %s, and %s\n", n, err ? "failed with" : "succeeded",
		       err ? strerrorname_np(err) : "", state);
	}
}

/* A sweep that never reached a call free of faults has not covered it. */
static void no_end(bool done)
{
	if (!done) {
		printf("# no call free of faults by n=%d\n", MAX_N);
		bad++;
	}
}

static void summary(const char *what)
{
	int e;

	printf("# %s: %ld calls, %ld faults injected, %ld succeeded, failed:",
	       what, calls, injected, succeeded);
	for (e = 0; e < 135; e++)
		if (failed_by[e])
			printf(" %s %ld", e ? strerrorname_np(e) : "other", failed_by[e]);
	printf("%s\n", bad ? "; NOT CLEAN" : "");
}

/*
 * write(2) @val to @path, or read(2) it if @val is NULL.  The file must
 * then read @val if the write succeeded, and what it read before if it
 * failed; a read must read that too, or fail.
 */
static int sweep_file(const char *path, const char *val)
{
	char before[4096], after[4096];
	const char *want;
	int fd, err, nth = nth_open(0);
	bool done = false;
	ssize_t r;
	long n;

	snprintf(before, sizeof(before), "%s", slurp(path));
	for (n = 1; n < MAX_N; n++) {
		fd = open(path, val ? O_WRONLY : O_RDONLY);
		if (fd < 0) {
			perror(path);
			return 1;
		}
		arm(nth, n);
		r = val ? write(fd, val, strlen(val)) :
			  read(fd, after, sizeof(after) - 1);
		err = r < 0 ? errno : 0;
		/* No n-th point: the call as it is without faults, the last. */
		done = !fired(nth);
		close(fd);
		injected += !done;
		if (val) {
			snprintf(after, sizeof(after), "%s", slurp(path));
		} else {
			after[r > 0 ? r : 0] = '\0';
			after[strcspn(after, "\n")] = '\0';
		}
		want = val && !err ? val : before;
		tally(n, err, !(done && err) &&
		      ((!val && err) || !strcmp(after, want)),
		      !val ? "read something else" :
		      err ? "the value changed" : "the value is not the one written");
		if (val)
			put(path, before);
		if (done)
			break;
	}
	no_end(done);
	summary(path);
	return bad ? 1 : 0;
}

static int sweep_mkdir(const char *parent, bool remove)
{
	char child[PATH_MAX], eff[PATH_MAX + 64], want[64];
	struct stat st;
	long n;
	int err, nth = nth_open(0);
	bool there, done = false;

	snprintf(child, sizeof(child), "%s/fail-nth", parent);
	snprintf(eff, sizeof(eff), "%s/memory.alloc_retries.effective", parent);
	snprintf(want, sizeof(want), "%s", slurp(eff));
	snprintf(eff, sizeof(eff), "%s/memory.alloc_retries.effective", child);
	rmdir(child);
	for (n = 1; n < MAX_N && !done; n++) {
		if (remove && mkdir(child, 0755)) {
			perror(child);
			return 1;
		}
		arm(nth, n);
		err = (remove ? rmdir(child) : mkdir(child, 0755)) ? errno : 0;
		done = !fired(nth);
		injected += !done;
		there = !stat(child, &st);
		if (remove)
			tally(n, err, err ? !done && there && !strcmp(slurp(eff), want) : !there,
			      err ? "the child changed" : "the child is still there");
		else
			tally(n, err, err ? !done && !there : there && !strcmp(slurp(eff), want),
			      err ? "a child is there" : "the child's limit is not its parent's");
		rmdir(child);
	}
	no_end(done);
	summary(remove ? "rmdir" : "mkdir");
	return bad ? 1 : 0;
}

/*
 * Run @argv, its output nowhere but the first line of its standard error,
 * which goes to @said (if not NULL): its exit status, or -1.
 */
static int run(char *const argv[], char *said, size_t size)
{
	int status, err[2] = { -1, -1 };
	ssize_t len = 0;
	pid_t pid;

	if (said)
		said[0] = '\0';
	/* Close-on-exec: nor the pipe nor this program's fds go to @argv. */
	if (said && pipe2(err, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		dup2(null, STDOUT_FILENO);
		dup2(said ? err[1] : null, STDERR_FILENO);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (said) {
		char rest[256];
		ssize_t r;

		close(err[1]);
		if (pid > 0)
			len = read(err[0], said, size - 1);
		/* The rest too: a full pipe would hold it up. */
		do
			r = read(err[0], rest, sizeof(rest));
		while (pid > 0 && len > 0 && r > 0);
		close(err[0]);
		said[len > 0 ? len : 0] = '\0';
		said[strcspn(said, "\n")] = '\0';
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct fault_stack {
	char *frames;
	size_t size;
	bool in;
};

/*
 * The functions of the injected fault's stack (fault-injection.sh sets
 * verbose=2), from the record "FAULT_INJECTION: forcing a failure." to
 * "</TASK>", without the fault injection's own and the unreliable ones.
 */
static void scan_fault(const char *rec, void *arg)
{
	struct fault_stack *fs = arg;
	const char *text = strchr(rec, ';');
	size_t used = strlen(fs->frames);
	int len;

	text = text ? text + 1 : rec;
	if (strstr(text, "FAULT_INJECTION: forcing a failure")) {
		fs->frames[0] = '\0';
		fs->in = true;
		return;
	}
	if (!fs->in)
		return;
	if (strstr(text, "</TASK>")) {
		fs->in = false;
		return;
	}
	len = strcspn(text + 1, "+");
	if (text[0] != ' ' || text[1] == '?' || !strchr(text, '+') ||
	    !strncmp(text + 1, "dump_stack", 10) ||
	    !strncmp(text + 1, "should_fail", 11) ||
	    !strncmp(text + 1, "fail_dump", 9))
		return;
	snprintf(fs->frames + used, fs->size - used, "%s%.*s",
		 used ? " " : "", len, text + 1);
}

/* Where the fault was injected since kmsg_mark() gave @kmsg; closes it. */
static void fault_frames(int kmsg, char *frames, size_t size)
{
	struct fault_stack fs = { frames, size, false };

	frames[0] = '\0';
	kmsg_for_each(kmsg, scan_fault, &fs);
	if (!frames[0])
		snprintf(frames, size, "no stack in the kernel log");
}

/* The unit's MemoryAllocRetries= as systemctl shows it, and its file's. */
static void unit_state(const char *unit, const char *file, char *prop,
		       size_t size)
{
	char cmd[256];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "systemctl show -P MemoryAllocRetries %s", unit);
	prop[0] = '\0';
	f = popen(cmd, "r");
	if (f) {
		if (!fgets(prop, size, f))
			prop[0] = '\0';
		pclose(f);
	}
	prop[strcspn(prop, "\n")] = '\0';
	strncat(prop, "/", size - strlen(prop) - 1);
	strncat(prop, slurp(file), size - strlen(prop) - 1);
}

/*
 * How many warnings and errors PID 1 has logged about @unit: a failed
 * write of its memory.alloc_retries ("Failed to set ... attribute"), or
 * of its cgroup before that ("Failed to create cgroup").
 */
static long write_warnings(const char *unit)
{
	char cmd[256], line[1024];
	long count = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "journalctl -b -q -o cat -p warning -u %s", unit);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		count += !!strstr(line, "Failed to ");
	pclose(f);
	return count;
}

/* PID 1's last words, as diagnostics. */
static void pid1_log(void)
{
	char line[1024];
	FILE *f = popen("journalctl -b -q -o short-monotonic _PID=1 -n 12", "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		printf("#   pid1: %s", line);
	pclose(f);
}

static int sweep_pid1(const char *unit, const char *val, const char *file)
{
	char prop[256], old[256], want[256], unapplied[256], arg[64];
	char said[256], frames[1024];
	char *const set[] = { "systemctl", "set-property", "--runtime",
			      (char *)unit, arg, NULL };
	long n, warned, warnings, applied_later = 0, reply_lost = 0;
	int rc, before, kmsg, nth = nth_open(1);
	bool done = false, ok;

	unit_state(unit, file, old, sizeof(old));
	snprintf(want, sizeof(want), "%s/%s", val, val);
	snprintf(unapplied, sizeof(unapplied), "%s/%s", val, strchr(old, '/') + 1);
	warned = write_warnings(unit);
	for (n = 1; n <= MAX_PID1_N && !done;
	     n += n < PID1_DENSE_N ? 1 : n / 32) {
		if (calls && calls % 50 == 0)
			printf("# n=%ld: %ld faults injected so far\n", n, injected);
		snprintf(arg, sizeof(arg), "MemoryAllocRetries=%s", val);
		kmsg = kmsg_mark();
		arm(nth, n);
		rc = run(set, said, sizeof(said));
		done = !fired(nth);
		injected += !done;
		fault_frames(kmsg, frames, sizeof(frames));
		unit_state(unit, file, prop, sizeof(prop));
		before = bad;
		ok = !(done && rc) && !strcmp(prop, rc ? old : want);
		/*
		 * A fault in sending the reply comes after the change: PID 1
		 * then answers with an error, the change made.  No method can
		 * take back what it did once its reply fails; the client's
		 * error says "not known", and reading the property tells.
		 * Clean if the unit and its file are whole at the new value
		 * and the fault was in a sendmsg() on a stream socket (the
		 * reply's: journald's and sd_notify's are datagrams).  A
		 * fault in a __GFP_NOWARN allocation (an skb's data) logs no
		 * stack: such a call stays unclean, and says so.
		 */
		if (!ok && rc && !done && !strcmp(prop, want) &&
		    strstr(frames, "unix_stream_sendmsg")) {
			printf("# n=%ld: failed (%s) and applied, the fault in PID 1's reply: %s\n",
			       n, said, frames);
			ok = true;
			reply_lost++;
		}
		/*
		 * PID 1 writes a unit's cgroup files as it commits the call
		 * or later, from its queue, and logs a write that fails
		 * rather than failing the call, as it does for every cgroup
		 * attribute: the property then holds the value and the file
		 * the old one.  That is clean if PID 1 said so, and its next
		 * apply (the same call, without faults) writes the file.
		 */
		if (!ok && !rc && !strcmp(prop, unapplied)) {
			warnings = write_warnings(unit);
			printf("# n=%ld: the file left to the next apply, %s\n", n,
			       warnings > warned ? "logged" : "NOT LOGGED");
			ok = warnings > warned && !run(set, NULL, 0);
			unit_state(unit, file, prop, sizeof(prop));
			ok = ok && !strcmp(prop, want);
			warned = warnings;
			applied_later++;
		}
		/*
		 * systemctl's exit status, not an errno: counted as EIO.  A
		 * PID 1 that no longer answers shows no property at all.
		 */
		tally(n, rc ? EIO : 0, ok,
		      rc ? "unit/file changed or PID 1 is gone" :
			   "unit/file not set or PID 1 is gone");
		if (bad > before) {
			printf("#   unit/file: %s, was %s; systemctl: %s\n", prop,
			       old, rc ? said : "ok");
			printf("#   the fault: %s\n", done ? "none" : frames);
			pid1_log();
		}
		if (!strcmp(prop, old))
			continue;
		/* Back to the old value, without faults. */
		snprintf(arg, sizeof(arg), "MemoryAllocRetries=%.*s",
			 (int)strcspn(old, "/"), old);
		if (run(set, NULL, 0)) {
			printf("# n=%ld: cannot set %s back\n", n, arg);
			bad++;
			break;
		}
	}
	if (!done) {
		printf("# no end by fault %d in PID 1\n", MAX_PID1_N);
		bad++;
	}
	printf("# %ld calls left the file to PID 1's next apply, %ld lost their reply\n",
	       applied_later, reply_lost);
	summary("systemctl set-property (faults in PID 1)");
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	/* Each line as it comes: through a pipe, a sweep that never ends says where. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(argv[1], "write"))
		return sweep_file(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "read"))
		return sweep_file(argv[2], NULL);
	if (argc == 3 && !strcmp(argv[1], "mkdir"))
		return sweep_mkdir(argv[2], false);
	if (argc == 3 && !strcmp(argv[1], "rmdir"))
		return sweep_mkdir(argv[2], true);
	if (argc == 5 && !strcmp(argv[1], "pid1"))
		return sweep_pid1(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: %s write PATH VALUE | read PATH | mkdir PARENT | rmdir PARENT | pid1 UNIT VALUE CGROUP_FILE\n",
		argv[0]);
	return 2;
}
