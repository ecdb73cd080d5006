// SPDX-License-Identifier: GPL-2.0
/*
 * make bench, in the guest: what the series costs where it should cost
 * nothing, and the stall it saves where it acts.
 *
 * Four loops, each in three configurations: "defaults" (a fresh cgroup,
 * memory.max=max, nothing of the series written), "retries0" (a cgroup
 * whose memory.alloc_retries is 0, no memory pressure; on the stock kernel
 * the file does not exist and the same cgroup is used with nothing
 * written, which the results say) and "after0" (the defaults again, 2 s
 * after a cgroup at 0 was removed that a tmpfs page keeps dying: a limit
 * that is gone must not keep costing).  Every loop runs at the defaults
 * before any limit is set in the boot, then in the other two:
 *
 *   pipe         write 64 bytes to a pipe and read them back
 *   anon_fault   first write to a page of a 32 MiB private anonymous
 *                mapping (no THP), munmap included
 *   memcg_fault  the same in a cgroup with memory.max=256M, far above use
 *   fork_exit    fork, the child _exit(0)s, waitpid
 *
 * Each runs in a child that enters the cgroup, runs the loop once to warm
 * up, then SAMPLES timed runs; a result is nanoseconds per operation of
 * CLOCK_MONOTONIC.  Under QEMU's -icount shift=0 that clock advances one
 * nanosecond per guest instruction: a result is an instruction count.
 *
 * Where memory.alloc_retries exists (the patched kernel), the stall:
 * two cgroups at memory.max=32M, memory.swap.max=0, each with a hog
 * holding 30 MiB; a probe in each fills pipes one page per write() until
 * the cgroup is full.  At memory.alloc_retries=0 the probe's call that
 * fails with ENOMEM is timed; at max, the call during which the hog was
 * OOM-killed (memory.events oom_kill went up).
 *
 *   bench [OUT_JSON]     (default $ALLOC_TEST_RESULTS/bench.json; the
 *                         cgroups go below $ALLOC_TEST_CGROUP)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE		4096
#define SAMPLES		3		/* timed runs per loop and configuration */
#define PIPE_OPS	200000		/* write+read pairs per run */
#define FAULT_BYTES	(32UL << 20)	/* mapping faulted in per repetition */
#define FAULT_REPS	4		/* repetitions per run */
#define FORK_OPS	2000		/* fork+exit per run */
#define MEMCG_LIMIT	"256M"

#define STALL_REPS	5		/* stall rounds per boot and cgroup */
#define STALL_MAX	(32UL << 20)
#define STALL_HOG	(30UL << 20)
#define STALL_CALLS	20000		/* the probe gives up after this many */

static const char *root;		/* $ALLOC_TEST_CGROUP */
static int patched;			/* memory.alloc_retries exists */

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("error: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	exit(1);
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Shared with the children that measure: allocated before they fork. */
static void *shared(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap shared: %s", strerror(errno));
	memset(p, 0, size);
	return p;
}

/* --- cgroup files ------------------------------------------------------ */

static char *cg_path(const char *name)
{
	static char buf[4][PATH_MAX];
	static int i;
	char *p = buf[i++ % 4];

	snprintf(p, PATH_MAX, "%s/%s", root, name);
	return p;
}

/* Write @val to @cg/@file: 0 or -errno. */
static int cg_write(const char *cg, const char *file, const char *val)
{
	char path[PATH_MAX];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Read @cg/@file into @buf (trailing newline dropped): 0 or -errno. */
static int cg_read(const char *cg, const char *file, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return 0;
}

static void cg_remove(const char *cg)
{
	int i;

	/* A killed task may take a moment to leave. */
	for (i = 0; i < 100 && rmdir(cg) && errno == EBUSY; i++)
		usleep(10000);
}

static void cg_fresh(const char *cg)
{
	cg_remove(cg);
	if (mkdir(cg, 0755))
		die("mkdir %s: %s", cg, strerror(errno));
}

static void cg_must_write(const char *cg, const char *file, const char *val)
{
	int ret = cg_write(cg, file, val);

	if (ret)
		die("write %s to %s/%s: %s", val, cg, file, strerror(-ret));
}

static void cg_enter(const char *cg)
{
	if (cg_write(cg, "cgroup.procs", "0"))
		die("cannot enter %s", cg);
}

/* The value of @key in a flat keyed file already read into @buf. */
static long key_value(const char *buf, const char *key)
{
	size_t n = strlen(key);
	const char *p;

	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, n) && p[n] == ' ')
			return strtol(p + n + 1, NULL, 10);
	return -1;
}

/* --- the loops ---------------------------------------------------------- */

struct loop {
	const char *name;
	const char *what;
	long ops;		/* operations per run */
	int limited_cg;		/* runs in the cgroup with memory.max=256M */
	double (*run)(void);	/* one run: ns per operation, < 0 on error */
};

static double loop_pipe(void)
{
	char buf[64];
	long long t0;
	int fds[2];
	long i;

	if (pipe(fds))
		return -1;
	memset(buf, 'b', sizeof(buf));
	t0 = now_ns();
	for (i = 0; i < PIPE_OPS; i++)
		if (write(fds[1], buf, sizeof(buf)) != sizeof(buf) ||
		    read(fds[0], buf, sizeof(buf)) != sizeof(buf))
			return -1;
	t0 = now_ns() - t0;
	close(fds[0]);
	close(fds[1]);
	return (double)t0 / PIPE_OPS;
}

static double loop_fault(void)
{
	long long t0 = now_ns();
	size_t off;
	int r;

	for (r = 0; r < FAULT_REPS; r++) {
		/* Volatile: every store must really fault its page in. */
		volatile char *p = mmap(NULL, FAULT_BYTES,
					PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return -1;
		/* 4 KiB pages: huge pages would make this 16 faults. */
		madvise((void *)p, FAULT_BYTES, MADV_NOHUGEPAGE);
		for (off = 0; off < FAULT_BYTES; off += PAGE)
			p[off] = 1;
		munmap((void *)p, FAULT_BYTES);
	}
	return (double)(now_ns() - t0) / (FAULT_REPS * (FAULT_BYTES / PAGE));
}

static double loop_fork(void)
{
	long long t0 = now_ns();
	int i, status;
	pid_t pid;

	for (i = 0; i < FORK_OPS; i++) {
		pid = fork();
		if (pid < 0)
			return -1;
		if (pid == 0)
			_exit(0);
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
			return -1;
	}
	return (double)(now_ns() - t0) / FORK_OPS;
}

static const struct loop loops[] = {
	{ "pipe", "write 64 bytes to a pipe and read them back",
	  PIPE_OPS, 0, loop_pipe },
	{ "anon_fault", "first write to a 4 KiB anonymous page, cgroup at memory.max=max (mmap 32 MiB, munmap included)",
	  FAULT_REPS * (FAULT_BYTES / PAGE), 0, loop_fault },
	{ "memcg_fault", "the same, charged to a cgroup at memory.max=" MEMCG_LIMIT,
	  FAULT_REPS * (FAULT_BYTES / PAGE), 1, loop_fault },
	{ "fork_exit", "fork, the child _exit(0)s, waitpid",
	  FORK_OPS, 0, loop_fork },
};
#define NLOOPS (sizeof(loops) / sizeof(loops[0]))

struct config {
	const char *name;
	const char *what;
	const char *retries;	/* written to memory.alloc_retries, or NULL */
	char set[64];		/* memory.alloc_retries.effective, or "absent" */
	bool after_dying;	/* after a dying cgroup that was at 0 */
};

static struct config configs[] = {
	{ "defaults", "the series' knobs at their defaults", NULL, "", false },
	{ "retries0", "memory.alloc_retries=0, no memory pressure", "0", "",
	  false },
	{ "after0", "the defaults, 2 s after a cgroup at memory.alloc_retries=0 was removed (dying: a tmpfs page still charged to it)",
	  NULL, "", true },
};
#define NCONFIGS (sizeof(configs) / sizeof(configs[0]))

struct sample_set {
	double ns[SAMPLES];
	char err[128];
};

static double result[NLOOPS][NCONFIGS][SAMPLES];

/* A fresh cgroup for loop @l in configuration @c: bench-<config>[-256m]. */
static const char *loop_cgroup(struct config *c, const struct loop *l)
{
	char name[64];
	char *cg;

	snprintf(name, sizeof(name), "bench-%s%s", c->name,
		 l->limited_cg ? "-256m" : "");
	cg = cg_path(name);
	cg_fresh(cg);
	cg_must_write(cg, "memory.max", l->limited_cg ? MEMCG_LIMIT : "max");
	if (!patched)
		snprintf(c->set, sizeof(c->set), "absent");
	else if ((c->retries &&
		  cg_write(cg, "memory.alloc_retries", c->retries)) ||
		 cg_read(cg, "memory.alloc_retries.effective", c->set,
			 sizeof(c->set)))
		die("cannot set up memory.alloc_retries in %s", cg);
	return cg;
}

/*
 * A cgroup at memory.alloc_retries=0 (nothing written on the stock
 * kernel) that charged a page of a tmpfs file, removed: the page keeps it
 * dying, as a container's page cache keeps its cgroup after the
 * container is gone.  Then 2 s, past the deferred static key's second.
 */
static void dying_cgroup(const struct loop *l)
{
	static char page[PAGE];
	char name[64], file[96];
	const char *cg;
	int status, fd;
	pid_t pid;

	snprintf(name, sizeof(name), "bench-dying-%s", l->name);
	cg = cg_path(name);
	cg_fresh(cg);
	if (patched)
		cg_must_write(cg, "memory.alloc_retries", "0");
	snprintf(file, sizeof(file), "/dev/shm/bench-dying-%s", l->name);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		cg_enter(cg);
		fd = open(file, O_CREAT | O_WRONLY | O_TRUNC, 0600);
		_exit(fd < 0 || write(fd, page, PAGE) != PAGE);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		die("cannot write %s from %s", file, cg);
	cg_remove(cg);
	sleep(2);
}

static void measure(int li, int ci)
{
	const struct loop *l = &loops[li];
	const char *cg;

	if (configs[ci].after_dying)
		dying_cgroup(l);
	cg = loop_cgroup(&configs[ci], l);
	struct sample_set *s = shared(sizeof(*s));
	int status, i;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		cg_enter(cg);
		/* Warm up: caches, the pipe, the allocator's per-CPU lists. */
		if (l->run() < 0) {
			snprintf(s->err, sizeof(s->err), "warm-up: %s",
				 strerror(errno));
			_exit(1);
		}
		for (i = 0; i < SAMPLES; i++) {
			s->ns[i] = l->run();
			if (s->ns[i] < 0) {
				snprintf(s->err, sizeof(s->err), "run %d: %s",
					 i + 1, strerror(errno));
				_exit(1);
			}
		}
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		die("%s in %s: %s", l->name, cg, s->err[0] ? s->err :
		    "the child died");
	memcpy(result[li][ci], s->ns, sizeof(s->ns));
	munmap(s, sizeof(*s));
	cg_remove(cg);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
	double s[64];

	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* --- the stall ---------------------------------------------------------- */

enum { CALL_PIPE2, CALL_WRITE };
static const char *const call_names[] = { "pipe2", "write" };

struct stall {
	long long ns;		/* the timed call */
	int call;		/* which call it was */
	int err;		/* its errno, 0 if it succeeded */
	int killed;		/* oom_kill went up during it */
	long calls;		/* system calls the probe made */
	long bytes;		/* bytes it left in pipes */
	long oom_kill;		/* oom_kill events of the round */
	char err_msg[128];	/* the probe could not run */
};

/* Fault in the stack the probe will use, before mlockall(). */
static void touch_stack(void)
{
	volatile char stack[64 << 10];
	size_t i;

	for (i = 0; i < sizeof(stack); i += PAGE)
		stack[i] = 0;
}

static long read_oom_kill(int fd)
{
	char buf[1024];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return key_value(buf, "oom_kill");
}

/*
 * The probe: fills pipes, one page per write(), until a call fails or the
 * OOM killer kills (memory.events, read through a file opened before: its
 * buffer was allocated outside the cgroup, a read allocates nothing).
 */
static void stall_probe(const char *cg, struct stall *st)
{
	static char page[PAGE];
	struct rlimit nofile = { 65536, 65536 };
	char path[PATH_MAX];
	long before, after;
	long long t0, t;
	int fds[2], wfd = -1, ev, ret, err, call;

	prctl(PR_SET_NAME, "bench-probe");
	memset(page, 'p', sizeof(page));
	touch_stack();
	snprintf(path, sizeof(path), "%s/memory.events", cg);
	ev = open(path, O_RDONLY);
	before = ev < 0 ? -1 : read_oom_kill(ev);
	setrlimit(RLIMIT_NOFILE, &nofile);
	/* Its own memory is in place: only the pipes' is charged there. */
	if (before < 0 || mlockall(MCL_CURRENT | MCL_FUTURE)) {
		snprintf(st->err_msg, sizeof(st->err_msg), "probe setup: %s",
			 strerror(errno));
		_exit(1);
	}
	cg_enter(cg);
	while (st->calls < STALL_CALLS) {
		call = wfd < 0 ? CALL_PIPE2 : CALL_WRITE;
		t0 = now_ns();
		if (call == CALL_PIPE2)
			ret = pipe2(fds, O_NONBLOCK);
		else
			ret = write(wfd, page, sizeof(page));
		t = now_ns() - t0;
		err = ret < 0 ? errno : 0;
		st->calls++;
		if (call == CALL_WRITE && err == EAGAIN) {
			/* Full; the read end keeps its pages. */
			close(wfd);
			wfd = -1;
			continue;
		}
		after = read_oom_kill(ev);
		if (after != before || err) {
			st->ns = t;
			st->call = call;
			st->err = err;
			st->killed = after != before;
			break;
		}
		if (call == CALL_PIPE2)
			wfd = fds[1];
		else
			st->bytes += ret;
	}
	_exit(0);
}

/* The hog: 30 MiB of anonymous memory in @cg, the OOM killer's choice. */
static pid_t stall_hog(const char *cg)
{
	int ready[2];
	char c;
	pid_t pid;

	if (pipe(ready))
		die("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		volatile char *p;
		size_t off;

		close(ready[0]);
		prctl(PR_SET_NAME, "bench-hog");
		cg_enter(cg);
		if (cg_write("/proc/self", "oom_score_adj", "1000"))
			_exit(2);
		p = mmap(NULL, STALL_HOG, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			_exit(3);
		madvise((void *)p, STALL_HOG, MADV_NOHUGEPAGE);
		for (off = 0; off < STALL_HOG; off += PAGE)
			p[off] = 1;
		if (write(ready[1], "r", 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1)
		die("the hog died while filling %s", cg);
	close(ready[0]);
	return pid;
}

static void stall_round(int limited, struct stall *out)
{
	const char *cg = cg_path(limited ? "bench-stall-limited" :
				 "bench-stall-unlimited");
	struct stall *st = shared(sizeof(*st));
	char buf[1024], max[32];
	int status;
	pid_t hog, probe;

	cg_fresh(cg);
	snprintf(max, sizeof(max), "%lu", STALL_MAX);
	cg_must_write(cg, "memory.max", max);
	cg_must_write(cg, "memory.swap.max", "0");
	cg_must_write(cg, "memory.alloc_retries", limited ? "0" : "max");
	hog = stall_hog(cg);
	probe = fork();
	if (probe < 0)
		die("fork: %s", strerror(errno));
	if (probe == 0)
		stall_probe(cg, st);
	if (waitpid(probe, &status, 0) != probe || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		die("the stall probe in %s: %s", cg,
		    st->err_msg[0] ? st->err_msg : "died");
	kill(hog, SIGKILL);
	waitpid(hog, &status, 0);
	if (cg_read(cg, "memory.events", buf, sizeof(buf)))
		die("read %s/memory.events", cg);
	st->oom_kill = key_value(buf, "oom_kill");
	*out = *st;
	munmap(st, sizeof(*st));
	cg_remove(cg);
}

/* --- main --------------------------------------------------------------- */

/* @s as a JSON string: the effective value spans two lines. */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++)
		if (*s == '\n')
			fputs("\\n", f);
		else if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s >= ' ')
			fputc(*s, f);
	fputc('"', f);
}

static void json_samples(FILE *f, const double *v, int n)
{
	int i;

	fprintf(f, "[");
	for (i = 0; i < n; i++)
		fprintf(f, "%s%.1f", i ? ", " : "", v[i]);
	fprintf(f, "]");
}

int main(int argc, char **argv)
{
	static struct stall stalls[2][STALL_REPS];
	char out_path[PATH_MAX], probe_cg[PATH_MAX], buf[256];
	char printk[64] = "";
	const char *results = getenv("ALLOC_TEST_RESULTS");
	long long start = now_ns();
	struct utsname u;
	unsigned int li, ci;
	int r, side;
	FILE *f;

	/*
	 * The same address-space layout in every boot: fork copies page
	 * tables, and how many depends on where the stack and heap landed.
	 */
	if (!(personality(0xffffffff) & ADDR_NO_RANDOMIZE) &&
	    personality(personality(0xffffffff) | ADDR_NO_RANDOMIZE) >= 0)
		execv("/proc/self/exe", argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	root = getenv("ALLOC_TEST_CGROUP");
	if (!root)
		die("ALLOC_TEST_CGROUP is not set");
	if (argc > 1)
		snprintf(out_path, sizeof(out_path), "%s", argv[1]);
	else
		snprintf(out_path, sizeof(out_path), "%s/bench.json",
			 results ? results : ".");
	uname(&u);

	/* Does this kernel have the series' cgroup file? */
	snprintf(probe_cg, sizeof(probe_cg), "%s", cg_path("bench-probe"));
	cg_fresh(probe_cg);
	patched = !cg_read(probe_cg, "memory.alloc_retries", buf, sizeof(buf));
	cg_remove(probe_cg);
	printf("kernel %s: memory.alloc_retries %s\n", u.release,
	       patched ? "exists (patched kernel)" :
	       "does not exist (stock kernel): configuration retries0 is the same cgroup with nothing written");

	/* Configurations outer: the defaults before any limit is set. */
	for (ci = 0; ci < NCONFIGS; ci++)
		for (li = 0; li < NLOOPS; li++) {
			measure(li, ci);
			printf("%-11s %-8s %10.1f ns per operation (median of %d runs)\n",
			       loops[li].name, configs[ci].name,
			       median(result[li][ci], SAMPLES), SAMPLES);
		}

	if (patched) {
		/*
		 * The OOM report, hundreds of lines, would go to the serial
		 * console at the speed of an emulated UART, inside the timed
		 * call: keep it in the kernel log only while the stall runs.
		 */
		int fd = open("/proc/sys/kernel/printk", O_RDWR);
		ssize_t n = fd < 0 ? -1 : read(fd, printk, sizeof(printk) - 1);

		if (n > 0) {
			printk[n] = '\0';
			if (pwrite(fd, "1", 1, 0) != 1)
				printk[0] = '\0';
		}
		for (r = 0; r < STALL_REPS; r++)
			for (side = 0; side < 2; side++) {
				struct stall *st = &stalls[side][r];

				stall_round(side == 0, st);
				printf("stall %d/%d %-9s %s %s after %ld calls: %.3f ms; oom_kill %ld\n",
				       r + 1, STALL_REPS,
				       side == 0 ? "limited" : "unlimited",
				       call_names[st->call],
				       st->killed ? "OOM-killed the hog" :
				       st->err ? strerror(st->err) : "never failed",
				       st->calls, st->ns / 1e6, st->oom_kill);
			}
		if (printk[0] && pwrite(fd, printk, strlen(printk), 0) < 0)
			printf("cannot restore kernel.printk: %s\n",
			       strerror(errno));
		if (fd >= 0)
			close(fd);
	}

	f = fopen(out_path, "w");
	if (!f)
		die("%s: %s", out_path, strerror(errno));
	fprintf(f, "{\n  \"kernel\": \"%s\",\n  \"patched\": %s,\n",
		u.release, patched ? "true" : "false");
	fprintf(f, "  \"clock\": \"CLOCK_MONOTONIC\",\n  \"samples_per_boot\": %d,\n",
		SAMPLES);
	fprintf(f, "  \"configs\": {\n");
	for (ci = 0; ci < NCONFIGS; ci++) {
		fprintf(f, "    \"%s\": {\"what\": \"%s\", \"alloc_retries_written\": %s, \"alloc_retries_effective\": ",
			configs[ci].name, configs[ci].what,
			configs[ci].retries && patched ? "true" : "false");
		json_str(f, configs[ci].set);
		fprintf(f, "}%s\n", ci + 1 < NCONFIGS ? "," : "");
	}
	fprintf(f, "  },\n  \"metrics\": [\n");
	for (li = 0; li < NLOOPS; li++)
		for (ci = 0; ci < NCONFIGS; ci++) {
			fprintf(f, "    {\"metric\": \"%s\", \"what\": \"%s\", \"config\": \"%s\", \"ops_per_run\": %ld, \"unit\": \"ns/op\", \"median\": %.1f, \"samples\": ",
				loops[li].name, loops[li].what, configs[ci].name,
				loops[li].ops, median(result[li][ci], SAMPLES));
			json_samples(f, result[li][ci], SAMPLES);
			fprintf(f, "}%s\n", li + 1 < NLOOPS || ci + 1 < NCONFIGS ?
				"," : "");
		}
	fprintf(f, "  ],\n  \"stall\": [");
	for (r = 0; patched && r < STALL_REPS; r++)
		for (side = 0; side < 2; side++) {
			const struct stall *st = &stalls[side][r];

			fprintf(f, "%s\n    {\"cgroup\": \"%s\", \"alloc_retries\": \"%s\", \"round\": %d, \"ns\": %lld, \"call\": \"%s\", \"errno\": \"%s\", \"killed_during_call\": %s, \"oom_kill\": %ld, \"calls\": %ld, \"bytes\": %ld}",
				r || side ? "," : "",
				side == 0 ? "limited" : "unlimited",
				side == 0 ? "0" : "max", r + 1, st->ns,
				call_names[st->call],
				st->err ? strerrorname_np(st->err) : "",
				st->killed ? "true" : "false", st->oom_kill,
				st->calls,
				st->bytes);
		}
	fprintf(f, "%s],\n", patched ? "\n  " : "");
	fprintf(f, "  \"stall_setup\": \"memory.max=32M, memory.swap.max=0, a hog holding 30 MiB (oom_score_adj 1000), a probe filling pipes a page per write()\",\n");
	fprintf(f, "  \"console_loglevel_during_stall\": %s,\n",
		patched ? "1" : "null");
	fprintf(f, "  \"bench_ns\": %lld\n}\n", now_ns() - start);
	if (fclose(f))
		die("%s: %s", out_path, strerror(errno));
	printf("results in %s (%.1f s of guest clock)\n", out_path,
	       (now_ns() - start) / 1e9);
	return 0;
}
