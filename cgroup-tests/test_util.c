// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/mman.h>
#include <time.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup_util.h"
#include "procfs.h"
#include "test_util.h"

#define PAGE 4096
#define PIPE_BYTES (1 << 20)

void run_tests(const struct test_case *tests, size_t n, int argc, char **argv)
{
	const struct test_case *run[n];
	size_t i, plan = 0;
	int a;

	/* Names on the command line: those cases, in that order. */
	for (a = 1; a < argc; a++) {
		for (i = 0; i < n && strcmp(tests[i].name, argv[a]); i++)
			;
		if (i == n || plan == n)
			ksft_exit_fail_msg("no case %s\n", argv[a]);
		run[plan++] = &tests[i];
	}
	for (i = 0; argc < 2 && i < n; i++)
		run[plan++] = &tests[i];
	ksft_print_header();
	ksft_set_plan(plan);
	for (i = 0; i < plan; i++) {
		if (run[i]->fn() == KSFT_PASS)
			ksft_test_result_pass("%s\n", run[i]->name);
		else
			ksft_test_result_fail("%s\n", run[i]->name);
	}
	ksft_finished();
}

/*
 * The parent of the test's own cgroup.  The job runs its tests in a leaf
 * of the cgroup delegated to it, since a cgroup with processes of its own
 * cannot give its children controllers (the no-internal-process rule):
 * the tests create their cgroups beside that leaf.
 */
const char *test_cgroup_root(void)
{
	static char root[PATH_MAX];
	char *slash;

	if (root[0])
		return root;
	if (procfs_own_cgroup(root, sizeof(root)))
		ksft_exit_fail_msg("/proc/self/cgroup: not cgroup v2\n");
	slash = strrchr(root, '/');
	if (!strcmp(root, "/sys/fs/cgroup/") || slash == root + 14)
		ksft_exit_fail_msg("the test runs in a top-level cgroup, not in a leaf of one delegated to it\n");
	*slash = '\0';
	return root;
}

int write_file_errno(const char *path, const char *val, size_t len)
{
	int fd = open(path, O_WRONLY);
	ssize_t ret;

	if (fd < 0)
		return -errno;
	ret = write(fd, val, len);
	if (ret < 0)
		ret = -errno;
	else
		ret = 0;
	close(fd);
	return ret;
}

int retry_sysctl_set(const char *val)
{
	return write_file_errno(RETRY_SYSCTL, val, strlen(val));
}

long read_long_file(const char *path)
{
	char buf[64];

	if (read_text(path, buf, sizeof(buf)) <= 0)
		ksft_exit_fail_msg("cannot read %s: %s\n", path, strerror(errno));
	return strtol(buf, NULL, 10);
}

#define PRINTK_RATELIMIT "/proc/sys/kernel/printk_ratelimit"

long printk_ratelimit_set(long seconds)
{
	long old = read_long_file(PRINTK_RATELIMIT);
	char buf[24];
	int len = snprintf(buf, sizeof(buf), "%ld", seconds);

	if (write_file_errno(PRINTK_RATELIMIT, buf, len))
		ksft_exit_fail_msg("cannot write %s\n", PRINTK_RATELIMIT);
	return old;
}

int kmsg_mark(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);

	if (fd < 0 || lseek(fd, 0, SEEK_END) < 0)
		ksft_exit_fail_msg("/dev/kmsg: %s\n", strerror(errno));
	return fd;
}

void kmsg_for_each(int fd, void (*fn)(const char *rec, void *arg), void *arg)
{
	char rec[8192];
	ssize_t len;

	for (;;) {
		len = read(fd, rec, sizeof(rec) - 1);
		if (len < 0 && errno == EPIPE)
			continue;	/* overwritten records: go on */
		if (len <= 0)
			break;
		rec[len] = '\0';
		fn(rec, arg);
	}
	close(fd);
}

struct needles {
	const char *a, *b, *c;
	int n;
};

static void count_needles(const char *line, void *arg)
{
	struct needles *nd = arg;

	if (strstr(line, nd->a) && (!nd->b || strstr(line, nd->b)) &&
	    (!nd->c || strstr(line, nd->c)))
		nd->n++;
}

int kmsg_count(int fd, const char *needle, const char *needle2)
{
	struct needles nd = { needle, needle2, NULL, 0 };

	kmsg_for_each(fd, count_needles, &nd);
	return nd.n;
}

/*
 * The runner enables oom:alloc_retry_fail on the kernel command line:
 * flipping it here would patch kernel text at run time, which
 * multi-threaded TCG races with.  Enable it only if missing.
 */
void trace_start(void)
{
	char on[4] = "";
	int fd;

	if (access(TRACE_EVENT, W_OK))
		mount("tracefs", TRACE, "tracefs", 0, NULL);
	if (read_text(TRACE_EVENT, on, sizeof(on)) <= 0 || on[0] != '1')
		write_file_errno(TRACE_EVENT, "1", 1);
	fd = open(TRACE "/trace", O_WRONLY | O_TRUNC);
	if (fd < 0)
		ksft_exit_fail_msg("cannot empty the trace buffer\n");
	close(fd);
}

int trace_for_each(void (*fn)(const char *line, void *arg), void *arg)
{
	char line[1024];
	FILE *f;

	f = fopen(TRACE "/trace", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		fn(line, arg);
	fclose(f);
	return 0;
}

int trace_count(const char *a, const char *b, const char *c)
{
	struct needles nd = { a, b, c, 0 };

	return trace_for_each(count_needles, &nd) ? -1 : nd.n;
}

long meminfo_kb(const char *key)
{
	long long bytes = procfs_meminfo(key);

	if (bytes < 0)
		ksft_exit_fail_msg("no %s in /proc/meminfo\n", key);
	return bytes / 1024;
}

size_t hog_bytes_for_pressure(void)
{
	long total = meminfo_kb("MemTotal"), avail = meminfo_kb("MemAvailable");

	/* Leave a twentieth of memory free: the probe's 25% cannot fit. */
	return (size_t)(avail - total / 20) * 1024;
}

void set_oom_score_adj(int adj)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%d", adj);
	if (write_file_errno("/proc/self/oom_score_adj", buf, strlen(buf)))
		ksft_exit_fail_msg("oom_score_adj %d: %s\n", adj, strerror(errno));
}

pid_t hog_start(const char *cgroup, size_t bytes)
{
	int ready[2];
	char c;
	pid_t pid;

	if (cg_create(cgroup) && errno != EEXIST)
		ksft_exit_fail_msg("cg_create %s: %s\n", cgroup, strerror(errno));
	if (pipe(ready))
		ksft_exit_fail_msg("pipe: %s\n", strerror(errno));
	pid = fork();
	if (pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (pid == 0) {
		volatile char *mem;
		size_t off;

		close(ready[0]);
		prctl(PR_SET_NAME, "retry-hog");
		if (cg_enter_current(cgroup))
			_exit(2);
		set_oom_score_adj(1000);
		mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (mem == MAP_FAILED)
			_exit(3);
		/* Volatile stores: the memory must really be faulted in. */
		for (off = 0; off < bytes; off += PAGE)
			mem[off] = 1;
		if (write(ready[1], "r", 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1) {
		/* Died while filling: most likely OOM-killed itself. */
		close(ready[0]);
		waitpid(pid, NULL, 0);
		return -1;
	}
	close(ready[0]);
	return pid;
}

bool hog_stop(pid_t pid, const char *cgroup)
{
	bool oom_killed;
	int status;

	kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) != pid)
		ksft_exit_fail_msg("waitpid hog: %s\n", strerror(errno));
	oom_killed = cg_read_key_long(cgroup, "memory.events", "oom_kill ") > 0;
	if (cg_destroy(cgroup))
		ksft_print_msg("cannot remove %s: %s\n", cgroup, strerror(errno));
	return oom_killed;
}

int become_user(uid_t uid)
{
	if (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
	    setresuid(uid, uid, uid))
		return -1;
	/*
	 * Dumpable again, as after an exec: the credential change made it
	 * not, and a task that is not is one a delegated user's
	 * memory.alloc_retries does not apply to.
	 */
	return prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) ? -1 : 0;
}

void touch_own_pages(void)
{
	volatile char stack[32 << 10];
	size_t i;

	for (i = 0; i < sizeof(stack); i += 1024)
		stack[i] = 0;
	errno = 0;
}

/*
 * The filler: populate anonymous memory 64 KiB at a time with
 * MADV_POPULATE_WRITE, which reports ENOMEM where a fault would invoke the
 * OOM killer, counting the failures.  Anonymous memory, so that the OOM
 * reaper frees it while the killed filler is still in the cgroup: else
 * the cgroup could be full with no task left to kill.
 */
#define FILLER_CHUNK	(64L << 10)
#define FILLER_SPACE	(1L << 30)

static void filler_run(volatile struct filler_stats *stats, char *mem)
{
	long held = 0, gen, done = 0;

	for (;;) {
		gen = __atomic_load_n(&stats->release_gen, __ATOMIC_SEQ_CST);
		if (stats->release) {
			if (done != gen) {
				long keep = held > stats->release ?
					    held - stats->release : 0;

				if (madvise(mem + keep, held - keep,
					    MADV_DONTNEED))
					_exit(4);
				held = keep;
				done = gen;
				__atomic_add_fetch(&stats->released, 1,
						   __ATOMIC_SEQ_CST);
			}
			usleep(1000);
			continue;
		}
		if (held + FILLER_CHUNK > FILLER_SPACE)
			_exit(4);
		if (!madvise(mem + held, FILLER_CHUNK, MADV_POPULATE_WRITE)) {
			held += FILLER_CHUNK;
			continue;
		}
		if (errno != ENOMEM)
			_exit(4);
		__atomic_add_fetch(&stats->enomem, 1, __ATOMIC_SEQ_CST);
		usleep(1000);
	}
}

/* A filler, forked by the keeper: returns its pid. */
static pid_t filler_spawn(const char *cgroup, uid_t uid,
			  volatile struct filler_stats *stats)
{
	pid_t pid, keeper = getpid();
	char *mem;

	pid = fork();
	if (pid)
		return pid;
	/* Set up before entering the full cgroup. */
	prctl(PR_SET_NAME, "retry-filler");
	mem = mmap(NULL, FILLER_SPACE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED ||
	    write_file_errno("/proc/self/oom_score_adj", "1000", 4))
		_exit(2);
	touch_own_pages();
	/*
	 * Moved in as root (a user may not move itself out of the test's
	 * cgroup); then the credential change, which no limit fails, and
	 * the parent-death signal, which the change would clear: the filler
	 * dies with the keeper.
	 */
	if (cg_enter_current(cgroup) || (uid && become_user(uid)) ||
	    prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != keeper)
		_exit(2);
	filler_run(stats, mem);
	_exit(4);
}

/*
 * Two fillers, each respawned when killed: while the memory of a killed
 * one is being freed, the other is there to kill.  With one, a charge that
 * saw the cgroup full could find no task left to kill once the victim had
 * left the cgroup, and fail as it would without any limit ("Out of memory
 * and no killable processes"), the tests' own tasks being unkillable.
 */
static void filler_keep(const char *cgroup, uid_t uid,
			volatile struct filler_stats *stats)
{
	pid_t fillers[2];
	int status, i;
	pid_t pid;

	prctl(PR_SET_NAME, "retry-keeper");
	for (i = 0; i < 2; i++)
		fillers[i] = filler_spawn(cgroup, uid, stats);
	for (;;) {
		stats->pid = fillers[0];
		stats->pid2 = fillers[1];
		pid = waitpid(-1, &status, 0);
		if (pid < 0 || !WIFSIGNALED(status) ||
		    WTERMSIG(status) != SIGKILL)
			_exit(3);
		__atomic_add_fetch(&stats->kills, 1, __ATOMIC_SEQ_CST);
		for (i = 0; i < 2; i++)
			if (fillers[i] == pid)
				fillers[i] = filler_spawn(cgroup, uid, stats);
	}
}

int filler_start(struct filler *f, const char *cgroup, uid_t uid, bool global)
{
	f->stats = mmap(NULL, sizeof(*f->stats), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (f->stats == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	fflush(stdout);
	f->keeper = fork();
	if (f->keeper < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (f->keeper == 0)
		filler_keep(cgroup, uid, f->stats);
	if (global ? filler_wait_oom(f, 60) : filler_wait_full(f, 60))
		return 0;
	ksft_print_msg("the filler of %s saw no ENOMEM%s in 60 s\n", cgroup,
		       global ? " and no filler was OOM-killed" : "");
	filler_stop(f);
	return -1;
}

bool filler_wait_full(struct filler *f, double seconds)
{
	long seen = __atomic_load_n(&f->stats->enomem, __ATOMIC_SEQ_CST);
	double end = now_s() + seconds;

	while (now_s() < end) {
		if (__atomic_load_n(&f->stats->enomem, __ATOMIC_SEQ_CST) >
		    seen)
			return true;
		usleep(10000);
	}
	return false;
}

bool filler_wait_oom(struct filler *f, double seconds)
{
	long enomem = __atomic_load_n(&f->stats->enomem, __ATOMIC_SEQ_CST);
	long kills = __atomic_load_n(&f->stats->kills, __ATOMIC_SEQ_CST);
	double end = now_s() + seconds;

	while (now_s() < end) {
		if (__atomic_load_n(&f->stats->enomem, __ATOMIC_SEQ_CST) >
		    enomem ||
		    __atomic_load_n(&f->stats->kills, __ATOMIC_SEQ_CST) > kills)
			return true;
		usleep(10000);
	}
	return false;
}

bool filler_release(struct filler *f, long bytes)
{
	long want = __atomic_load_n(&f->stats->released, __ATOMIC_SEQ_CST) + 2;
	double end = now_s() + 10;

	f->stats->release = bytes;
	__atomic_add_fetch(&f->stats->release_gen, 1, __ATOMIC_SEQ_CST);
	while (now_s() < end) {
		if (__atomic_load_n(&f->stats->released,
				    __ATOMIC_SEQ_CST) >= want)
			return true;
		usleep(1000);
	}
	return false;
}

void filler_refill(struct filler *f)
{
	f->stats->release = 0;
}

void filler_stop(struct filler *f)
{
	pid_t filler;

	kill(f->keeper, SIGKILL);
	waitpid(f->keeper, NULL, 0);
	/* Reparented: not ours to reap, but gone once kill() says so. */
	filler = f->stats->pid;
	kill(filler, SIGKILL);
	while (filler > 0 && !kill(filler, 0) && task_state(filler) != 'Z')
		usleep(10000);
	filler = f->stats->pid2;
	kill(filler, SIGKILL);
	while (filler > 0 && !kill(filler, 0) && task_state(filler) != 'Z')
		usleep(10000);
	munmap((void *)f->stats, sizeof(*f->stats));
}

static void count_call(struct probe_result *res, int ret)
{
	res->calls++;
	if (ret >= 0)
		return;
	/* pipe2() reports a failed inode allocation as ENFILE. */
	if (errno == ENOMEM || errno == ENFILE)
		res->enomem++;
	else if (errno != EAGAIN)
		res->other_errors++;
}

/* Fault in the stack the probe will use, before mlockall(). */
static void touch_stack(void)
{
	volatile char stack[64 << 10];
	size_t i;

	for (i = 0; i < sizeof(stack); i += PAGE)
		stack[i] = 0;
}

/*
 * A limit of 0 fails the probe's calls without an OOM kill, so no memory
 * comes back for it: once it has seen this many failures, it has seen what
 * it is there to see.
 */
#define PROBE_ENOMEM_STOP	32

static void probe_child(size_t bytes, long max_calls, struct probe_result *res)
{
	static char page[PAGE];
	struct rlimit nofile = { 65536, 65536 };
	int fds[2], ret;

	memset(page, 'p', sizeof(page));
	setrlimit(RLIMIT_NOFILE, &nofile);
	while ((size_t)res->bytes < bytes && res->calls < max_calls &&
	       res->enomem < PROBE_ENOMEM_STOP) {
		ret = pipe2(fds, O_NONBLOCK);
		count_call(res, ret);
		if (ret)
			continue;
		count_call(res, fcntl(fds[1], F_SETPIPE_SZ, PIPE_BYTES));
		/* Fill the pipe; every write needs a fresh page. */
		while ((size_t)res->bytes < bytes && res->calls < max_calls &&
		       res->enomem < PROBE_ENOMEM_STOP) {
			ret = write(fds[1], page, PAGE);
			count_call(res, ret);
			if (ret > 0)
				res->bytes += ret;
			else if (errno == EAGAIN)
				break;
		}
		/* The read end keeps the buffers alive until exit. */
		close(fds[1]);
	}
}

int probe_start(struct probe *probe, const char *comm, const char *cgroup,
		int oom_score_adj, size_t bytes, long max_calls)
{
	int ready[2], go[2];
	char c = 0;

	probe->res = mmap(NULL, sizeof(*probe->res), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (probe->res == MAP_FAILED || pipe(ready) || pipe(go))
		return -1;
	memset(probe->res, 0, sizeof(*probe->res));
	probe->pid = fork();
	if (probe->pid < 0)
		return -1;
	if (probe->pid == 0) {
		prctl(PR_SET_NAME, comm);
		set_oom_score_adj(oom_score_adj);
		/*
		 * Fault everything in now: under pressure, the probe's only
		 * allocations must be its system calls', not its faults'.
		 */
		touch_stack();
		if (mlockall(MCL_CURRENT | MCL_FUTURE))
			_exit(2);
		/* Its memory stays charged where it is: only pipes count. */
		if (cgroup && cg_enter_current(cgroup))
			_exit(4);
		if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(3);
		probe_child(bytes, max_calls, probe->res);
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	probe->go = go[1];
	if (read(ready[0], &c, 1) != 1)
		c = 0;
	close(ready[0]);
	return c == 'r' ? 0 : -1;
}

int probe_finish(struct probe *probe, struct probe_result *res)
{
	int status, ok;

	ok = write(probe->go, "g", 1) == 1;
	close(probe->go);
	if (waitpid(probe->pid, &status, 0) != probe->pid)
		ok = 0;
	*res = *probe->res;
	munmap(probe->res, sizeof(*probe->res));
	return ok && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

void probe_kill_after(struct probe *probe, unsigned int ms)
{
	if (write(probe->go, "g", 1) == 1)
		usleep(ms * 1000);
	close(probe->go);
	kill(probe->pid, SIGKILL);
	waitpid(probe->pid, NULL, 0);
	munmap(probe->res, sizeof(*probe->res));
}

size_t probe_bytes(void)
{
	return (size_t)meminfo_kb("MemTotal") * 1024 / 4;
}

/*
 * A round of pressure: the probe @comm (oom_score_adj @adj) pins
 * @probe_bytes from @probe_cgroup while a hog in @hog_cgroup holds the
 * rest of the memory of @parent (whose memory.max is @memory_max), or of
 * the machine if @parent is NULL.
 */
static int round_of(const char *comm, int adj, size_t probe_bytes,
		    const char *hog_cgroup, const char *parent,
		    long memory_max, const char *probe_cgroup,
		    struct probe_result *res, bool *hog_oom_killed)
{
	struct probe probe;
	pid_t hog = -1;
	int tries;

	if (probe_start(&probe, comm, probe_cgroup, adj, probe_bytes,
			1000000)) {
		ksft_print_msg("probe did not start\n");
		return -1;
	}
	/* A hog that overshoots is OOM-killed while filling: try again. */
	for (tries = 0; tries < 3 && hog <= 0; tries++)
		hog = hog_start(hog_cgroup, parent ?
				(size_t)(memory_max * 3 / 4 -
					 cg_read_long(parent, "memory.current")) :
				hog_bytes_for_pressure());
	if (probe_finish(&probe, res) || hog <= 0) {
		ksft_print_msg("%s\n", hog <= 0 ? "the hog never got its memory" :
			       "the probe did not exit cleanly");
		if (hog > 0)
			hog_stop(hog, hog_cgroup);
		return -1;
	}
	*hog_oom_killed = hog_stop(hog, hog_cgroup);
	return 0;
}

int pressure_round(const char *hog_cgroup, const char *probe_cgroup,
		   struct probe_result *res, bool *hog_oom_killed)
{
	/* Never the OOM victim: it must live to see the ENOMEM. */
	return round_of("retry-probe", -1000, probe_bytes(), hog_cgroup, NULL,
			0, probe_cgroup, res, hog_oom_killed);
}

int memcg_pressure_round(const char *parent, long memory_max,
			 const char *probe_cgroup, struct probe_result *res,
			 bool *hog_oom_killed)
{
	char *hog_cgroup = cg_name(parent, "hog");
	int ret;

	/* oom_score_adj 0: the OOM killer may choose it, but must not. */
	ret = round_of("retry-memcg", 0, memory_max / 2, hog_cgroup, parent,
		       memory_max, probe_cgroup, res, hog_oom_killed);
	free(hog_cgroup);
	return ret;
}

void probe_report(const struct probe_result *res, bool hog_oom_killed)
{
	ksft_print_msg("probe: %ld calls, %ld ENOMEM, %ld other errors, %ld MiB pinned; hog OOM-killed: %s\n",
		       res->calls, res->enomem, res->other_errors,
		       res->bytes >> 20, hog_oom_killed ? "yes" : "no");
}

char *memcg_parent(const char *under, const char *name, long memory_max)
{
	char *cg = cg_name(under, name), max[32];

	snprintf(max, sizeof(max), "%ld", memory_max);
	cg_destroy(cg);
	if (cg_create(cg) ||
	    (memory_max && cg_write(cg, "memory.max", max)) ||
	    cg_write(cg, "cgroup.subtree_control", "+memory"))
		ksft_exit_fail_msg("cannot set up %s\n", cg);
	return cg;
}

int alloc_retries_set(const char *cgroup, const char *val)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/memory.alloc_retries", cgroup);
	return write_file_errno(path, val, strlen(val));
}

const char *cg_kernel_path(const char *cgroup)
{
	static const char mount[] = "/sys/fs/cgroup";

	if (strncmp(cgroup, mount, strlen(mount)))
		ksft_exit_fail_msg("%s is not under %s\n", cgroup, mount);
	return cgroup + strlen(mount);
}

long cg_event(const char *cgroup, const char *file, const char *key)
{
	char name[64];

	snprintf(name, sizeof(name), "%s ", key);
	return cg_read_key_long(cgroup, file, name);
}

long vmstat(const char *key)
{
	char buf[16384], *p;
	size_t len = strlen(key);

	if (read_text("/proc/vmstat", buf, sizeof(buf)) <= 0)
		ksft_exit_fail_msg("cannot read /proc/vmstat\n");
	for (p = buf; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, len) && p[len] == ' ')
			return strtol(p + len + 1, NULL, 10);
	ksft_exit_fail_msg("no %s in /proc/vmstat\n", key);
}

/* /proc/@pid/@item into @buf, without its newline; "" if unreadable. */
static void proc_item(pid_t pid, const char *item, char *buf, size_t size)
{
	ssize_t len = proc_read_text(pid, false, item, buf, size);

	if (len <= 0)
		len = 0;
	buf[len] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

char task_state(pid_t pid)
{
	char buf[512], *p;

	proc_item(pid, "stat", buf, sizeof(buf));
	/* After the command, which may hold spaces and parentheses. */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* The first @n lines of @s, joined by spaces. */
static void first_lines(char *s, int n)
{
	for (; *s; s++) {
		if (*s != '\n')
			continue;
		if (--n == 0) {
			*s = '\0';
			return;
		}
		*s = ' ';
	}
}

void cg_say_tasks(const char *cgroup)
{
	char procs[4096], comm[64], sched[128], stack[4096], *line, *save, *sub;
	unsigned long long ran_ns, waited_ns;
	struct dirent *d;
	DIR *dir;
	pid_t pid;

	/* Threads: a process whose leader exited may hold a stuck thread. */
	if (cg_read(cgroup, "cgroup.threads", procs, sizeof(procs)))
		procs[0] = '\0';
	for (line = strtok_r(procs, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		pid = atoi(line);
		proc_item(pid, "comm", comm, sizeof(comm));
		if (proc_read_text(pid, false, "stack", stack, sizeof(stack)) <= 0)
			stack[0] = '\0';
		/* Past the scheduler's frames, to the caller's. */
		first_lines(stack, 8);
		/* A task runnable for long that waited as long was starved. */
		proc_item(pid, "schedstat", sched, sizeof(sched));
		if (sscanf(sched, "%llu %llu", &ran_ns, &waited_ns) != 2) {
			ran_ns = 0;
			waited_ns = 0;
		}
		ksft_print_msg("  %s: %d (%s), state %c, on a CPU %.1f s, runnable and waiting %.1f s: %s\n",
			       cgroup, pid, comm, task_state(pid) ?: '?',
			       ran_ns / 1e9, waited_ns / 1e9, stack);
	}
	dir = opendir(cgroup);
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		if (d->d_type != DT_DIR || !strcmp(d->d_name, ".") ||
		    !strcmp(d->d_name, ".."))
			continue;
		sub = cg_name(cgroup, d->d_name);
		cg_say_tasks(sub);
		free(sub);
	}
	closedir(dir);
}

bool task_in_syscall(pid_t pid, long nr, char state, const char *in,
		     const char *top, char *seen, size_t size)
{
	char buf[4096], *p;

	proc_item(pid, "syscall", buf, sizeof(buf));
	snprintf(seen, size, "syscall \"%.40s\"", buf);
	if (strtol(buf, &p, 10) != nr || p == buf)
		return false;
	if (state) {
		snprintf(seen, size, "state %c", task_state(pid) ?: '?');
		if (task_state(pid) != state)
			return false;
	}
	if (proc_read_text(pid, false, "stack", buf, sizeof(buf)) <= 0)
		buf[0] = '\0';
	for (p = buf; *p; p++)
		if (*p == '\n')
			*p = '|';
	snprintf(seen, size, "stack %.400s", buf);
	/* The top frame: "[<0>] name+0x.../0x..." */
	p = strstr(buf, "] ");
	return strstr(buf, in) && p && strstr(p, top) == p + 2;
}

bool ext4_image_mount(const char *image, long bytes, int inodes,
		      const char *mnt)
{
	const char *const mount_argv[] = { "mount", "-o", "loop", image, mnt,
					   NULL };
	const char *mkfs[] = { "mkfs.ext4", "-q", "-F", NULL, NULL, NULL,
			       NULL };
	char inodes_arg[16];
	int fd, n = 3;

	if (inodes) {
		snprintf(inodes_arg, sizeof(inodes_arg), "%d", inodes);
		mkfs[n++] = "-N";
		mkfs[n++] = inodes_arg;
	}
	mkfs[n] = image;
	mkdir(mnt, 0755);
	fd = open(image, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, bytes)) {
		ksft_print_msg("%s: %s\n", image, strerror(errno));
		if (fd >= 0)
			close(fd);
		return false;
	}
	close(fd);
	return !run_program(mkfs, false) && !run_program(mount_argv, false);
}

int run_program(const char *const argv[], bool quiet)
{
	int status, null;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		null = quiet ? open("/dev/null", O_WRONLY) : -1;
		if (null >= 0) {
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}
