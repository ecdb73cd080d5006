// SPDX-License-Identifier: GPL-2.0
/*
 * Sites a retry limit must not fail, in a cgroup at 0 kept at its
 * memory.max, or at the guest's OOM point, by fillers (filler_start()):
 *
 * - a wait on a process-shared futex in a page never touched before, which
 *   get_futex_key() faults in: it times out, as without a limit, instead
 *   of failing with ENOMEM (glibc would abort);
 * - execve() past its point of no return: every exec, started at 64 to
 *   512 KiB below memory.max, either runs the program or fails before
 *   that point; none ends in SIGSEGV;
 * - a signal delivered onto an alternate stack nobody has touched: the
 *   kernel's write of the frame is a kernel-mode fault on the way back to
 *   user mode, where nothing could report a failure: the handler runs,
 *   no SIGSEGV;
 * - a read() from an eventfd into a page nobody has touched: the kernel's
 *   write of the value is a kernel-mode write fault, after the eventfd's
 *   counter was consumed: it succeeds, no EFAULT, nothing lost;
 * - a recvfrom() whose address length is in a page of a file not in
 *   memory: move_addr_to_user() reads it after the datagram was taken,
 *   a read the series exempts by name: the datagram is returned, no
 *   EFAULT;
 * - a pread() of a file on ext4 whose second half is not in memory: its
 *   page cache is allocated and charged past the limit, since the read,
 *   having copied the first half, would return short, which programs
 *   take for the end of the file: every read returns the whole range;
 * - threads that exit one at a time, each holding a robust mutex (and a
 *   robust PI mutex) in a page it shares copy-on-write with a child, at
 *   the guest's global OOM point: the kernel's robust-list walk faults a
 *   copy of the page in and marks the mutex FUTEX_OWNER_DIED in every
 *   exit, so that the next locker gets EOWNERDEAD, not a wait for ever
 *   (or glibc's abort on ESRCH, for the PI mutex); the limit fails
 *   nothing in the exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup_util.h"
#include "kselftest.h"
#include "test_util.h"

#define MEMORY_MAX	"24M"
/* The cases' cgroup, under the test's own. */
#define SITE_CGROUP	"alloc-sites"
/*
 * Runs of the futex, signal (and copy-out) and robust-mutex cases; execs
 * of the exec case.
 */
#define FUTEX_RUNS	16
#define SIGNAL_RUNS	16
#define ROBUST_RUNS	4
/* Threads of a robust-mutex run, each exiting in turn at the OOM point. */
#define ROBUST_OWNERS	8
#define EXECS		24
/* Where a page of a file not in memory is made: ext4 in the guest. */
#define FILE_PAGE_DIR	"/var/tmp"
/* A buffered read's range, in a file not in memory. */
#define READ_BYTES	(256L << 10)
/* The alternate signal stack: the frame is written at its top. */
#define ALTSTACK_BYTES	(64L << 10)

/*
 * The cgroup at 0, filled by @filler: to its memory.max @max, or, at
 * "max", to the guest's global OOM point.
 */
static char *site_cgroup(struct filler *filler, char *max)
{
	char *cgroup = cg_name(test_cgroup_root(), SITE_CGROUP);

	if (cg_create(cgroup) || cg_write(cgroup, "memory.max", max) ||
	    alloc_retries_set(cgroup, "0") || filler_start(filler, cgroup, 0, false)) {
		ksft_print_msg("cannot set up %s\n", cgroup);
		cg_destroy(cgroup);
		free(cgroup);
		return NULL;
	}
	return cgroup;
}

/* Remove the robust cases' cgroups, their tasks gone, and free @exits. */
static void robust_cgroups_remove(char *exits)
{
	char *parent = cg_name(test_cgroup_root(), SITE_CGROUP);
	char *fill = cg_name(parent, "fill");

	cg_destroy(exits);
	cg_destroy(fill);
	cg_destroy(parent);
	free(fill);
	free(parent);
	free(exits);
}

/*
 * For the robust cases: the cgroup at 0 at the guest's global OOM point,
 * its fillers in its leaf "fill" and the exiting child in its leaf "exit",
 * whose memory.events then counts the child's failures by the limit
 * alone, not the fillers'.  The leaf "exit", or NULL.
 */
static char *robust_cgroups(struct filler *filler)
{
	char *parent = cg_name(test_cgroup_root(), SITE_CGROUP);
	char *fill = cg_name(parent, "fill"), *exits = cg_name(parent, "exit");

	if (cg_create(parent) || alloc_retries_set(parent, "0") ||
	    cg_write(parent, "cgroup.subtree_control", "+memory") ||
	    cg_create(fill) || cg_create(exits) ||
	    filler_start(filler, fill, 0, true)) {
		ksft_print_msg("cannot set up %s\n", exits);
		robust_cgroups_remove(exits);
		exits = NULL;
	}
	free(fill);
	free(parent);
	return exits;
}

static void site_cgroup_done(char *cgroup, struct filler *filler)
{
	filler_stop(filler);
	cg_destroy(cgroup);
	free(cgroup);
}

/*
 * @runs runs of @child, each in a process of its own in a cgroup at 0 kept
 * at its memory.max: every run must exit 0, and the limit must have been
 * met in some run (the child's call made the OOM killer kill a filler;
 * not in every run: the page may come from memory freed just before).
 * @what says what met it.
 */
static int site_runs(int runs, int (*child)(const char *cgroup,
					    struct filler *filler, long *kills),
		     const char *what)
{
	int ret = KSFT_PASS, status, run;
	struct filler filler;
	long *kills, met = 0;
	char *cgroup;

	kills = mmap(NULL, sizeof(*kills), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (kills == MAP_FAILED)
		return KSFT_FAIL;
	cgroup = site_cgroup(&filler, MEMORY_MAX);
	if (!cgroup)
		return KSFT_FAIL;
	for (run = 0; run < runs; run++) {
		pid_t pid;

		*kills = 0;
		fflush(stdout);
		pid = fork();
		if (pid == 0)
			_exit(child(cgroup, &filler, kills));
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status)) {
			ksft_print_msg("run %d: status %#x\n", run, status);
			ret = KSFT_FAIL;
		}
		met += *kills > 0;
	}
	ksft_print_msg("%d runs, %ld of them met the limit\n", runs, met);
	if (!met) {
		ksft_print_msg("no %s met the limit\n", what);
		ret = KSFT_FAIL;
	}
	site_cgroup_done(cgroup, &filler);
	munmap(kills, sizeof(*kills));
	return ret;
}

/*
 * In a child in @cgroup, once @filler has filled it: FUTEX_WAIT (shared)
 * for 50 ms on a word of a page of shared anonymous memory nobody has
 * touched.  Exit status 0 if it timed out, 1 if not; *@kills is set to the
 * fillers the OOM killer killed meanwhile.
 */
static int shared_futex_child(const char *cgroup, struct filler *filler,
			      long *kills)
{
	struct timespec timeout = { 0, 50 * 1000 * 1000 };
	unsigned int *word;
	long ret;

	/* Mapped outside the cgroup, whose limit would fail the mmap() */
	word = mmap(NULL, getpagesize(), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	touch_own_pages();
	if (word == MAP_FAILED || cg_enter_current(cgroup) ||
	    !filler_wait_full(filler, 20))
		return 2;
	*kills = filler->stats->kills;
	ret = syscall(SYS_futex, word, FUTEX_WAIT, 0, &timeout, NULL, 0);
	*kills = filler->stats->kills - *kills;
	if (ret == -1 && errno == ETIMEDOUT)
		return 0;
	printf("# FUTEX_WAIT on a new page: %ld, %s\n", ret, strerror(errno));
	fflush(stdout);
	return 1;
}

/*
 * Every wait times out, as without a limit; and the limit was met in some
 * run.
 */
static int test_shared_futex_wait_on_new_page(void)
{
	return site_runs(FUTEX_RUNS, shared_futex_child, "wait");
}

/*
 * EXECS execs of /bin/true from @cgroup, each started with a headroom of
 * 64 to 512 KiB below memory.max (filler_release()), so that the limit is
 * met at different points of the exec: each ran (status 0), failed in
 * execve() (ENOMEM or E2BIG, before its point of no return), or failed in
 * the new program's own start (the dynamic loader's 127, or its SIGSEGV
 * with the kernel's record of a fault in the loader's code: user space
 * meeting an mmap() ENOMEM), or was chosen by the OOM killer (SIGKILL);
 * any other end, a SIGSEGV first, fails the test.  And some ran, and the
 * limit was met: some exec failed with ENOMEM, or made the OOM killer
 * kill the filler.
 */
static int test_exec_past_no_return(void)
{
	long ran = 0, failed = 0, loader = 0, loader_segv = 0, killed = 0;
	int ret = KSFT_PASS, status, kmsg, i;
	long kills, ratelimit;
	bool in_loader;
	struct filler filler;
	char *cgroup;

	cgroup = site_cgroup(&filler, MEMORY_MAX);
	if (!cgroup)
		return KSFT_FAIL;
	kills = filler.stats->kills;
	/* Every segfault record is logged: in_loader below. */
	ratelimit = printk_ratelimit_set(0);
	for (i = 0; i < EXECS && ret == KSFT_PASS; i++) {
		pid_t pid;

		filler_refill(&filler);
		if (!filler_wait_full(&filler, 20) ||
		    !filler_release(&filler, (i % 8 + 1) * 32L << 10)) {
			ksft_print_msg("exec %d: the filler did not fill and release\n",
				       i);
			ret = KSFT_FAIL;
			break;
		}
		fflush(stdout);
		kmsg = kmsg_mark();
		pid = fork();
		if (pid == 0) {
			if (cg_enter_current(cgroup))
				_exit(2);
			execl("/bin/true", "true", NULL);
			_exit(errno == ENOMEM || errno == E2BIG ? 3 : 2);
		}
		if (waitpid(pid, &status, 0) != pid) {
			close(kmsg);
			ret = KSFT_FAIL;
			break;
		}
		in_loader = kmsg_count(kmsg, SEGFAULT_AT, IN_LOADER) > 0;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			ran++;
		} else if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
			failed++;
		} else if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
			loader++;
		} else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
			killed++;
		} else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV &&
			   in_loader) {
			loader_segv++;
		} else {
			ksft_print_msg("exec %d: status %#x\n", i, status);
			ret = KSFT_FAIL;
		}
	}
	printk_ratelimit_set(ratelimit);
	kills = filler.stats->kills - kills;
	ksft_print_msg("%d execs: %ld ran, %ld failed in execve(), %ld in the loader (exit 127), %ld SIGSEGV in the loader, %ld OOM-killed; filler killed %ld times\n",
		       EXECS, ran, failed, loader, loader_segv, killed, kills);
	if (!ran || (!failed && !kills)) {
		ksft_print_msg("no exec ran, or none met the limit\n");
		ret = KSFT_FAIL;
	}
	site_cgroup_done(cgroup, &filler);
	return ret;
}

/* The count of @key in the counters file open at @fd; -1 if unread. */
static long events_count(int fd, const char *key)
{
	char buf[8192], *p;
	ssize_t len = pread(fd, buf, sizeof(buf) - 1, 0);

	if (len <= 0)
		return -1;
	buf[len] = '\0';
	p = strstr(buf, key);
	return p ? atol(p + strlen(key)) : -1;
}

static long oom_kills(int fd)
{
	return events_count(fd, "oom_kill ");
}

/*
 * @cgroup's memory.events (NULL: /proc/vmstat), opened and read once: a
 * read allocates its buffer the first time only, so that a later one in
 * the full cgroup does not fail.
 */
static int oom_kills_open(const char *cgroup)
{
	int fd = cgroup ? cg_open(cgroup, "memory.events", O_RDONLY) :
			  open("/proc/vmstat", O_RDONLY);

	if (fd >= 0 && oom_kills(fd) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static volatile sig_atomic_t handled;

static void on_usr1(int sig)
{
	handled = 1;
}

/*
 * In a child in @cgroup, once @filler has filled it: SIGUSR1 to itself,
 * handled on an alternate stack mapped but never touched.  Exit status 0
 * if the handler ran; a SIGSEGV if the frame could not be written.
 * *@kills: the OOM kills in @cgroup meanwhile (memory.events, which
 * counts a kill when it is made).
 */
static int signal_child(const char *cgroup, struct filler *filler,
			long *kills)
{
	struct sigaction sa = { .sa_handler = on_usr1,
				.sa_flags = SA_ONSTACK };
	stack_t ss = { .ss_size = ALTSTACK_BYTES };
	int events = oom_kills_open(cgroup);

	ss.ss_sp = mmap(NULL, ALTSTACK_BYTES, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	touch_own_pages();
	if (events < 0 || ss.ss_sp == MAP_FAILED || sigaltstack(&ss, NULL) ||
	    sigaction(SIGUSR1, &sa, NULL) || cg_enter_current(cgroup) ||
	    !filler_wait_full(filler, 20))
		return 2;
	*kills = oom_kills(events);
	kill(getpid(), SIGUSR1);
	*kills = oom_kills(events) - *kills;
	return handled ? 0 : 1;
}

/*
 * Every signal is handled, none is a SIGSEGV; and the limit was met: in
 * some run the frame's fault made the OOM killer kill a filler.
 */
static int test_signal_frame_on_new_stack(void)
{
	return site_runs(SIGNAL_RUNS, signal_child, "signal frame");
}

/*
 * In a child in @cgroup, once @filler has filled it: read() an eventfd
 * holding 42 into a page mapped but never touched.  Exit status 0 if it
 * read 8 bytes of 42; 1 if not (EFAULT: the value consumed and lost).
 * *@kills: the OOM kills in @cgroup meanwhile.
 */
static int copy_out_child(const char *cgroup, struct filler *filler,
			  long *kills)
{
	int events = oom_kills_open(cgroup), efd = eventfd(42, 0);
	uint64_t *page = mmap(NULL, getpagesize(), PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ssize_t len;

	touch_own_pages();
	if (events < 0 || efd < 0 || page == MAP_FAILED ||
	    cg_enter_current(cgroup) || !filler_wait_full(filler, 20))
		return 2;
	*kills = oom_kills(events);
	len = read(efd, page, sizeof(*page));
	*kills = oom_kills(events) - *kills;
	return len == sizeof(*page) && *page == 42 ? 0 : 1;
}

/*
 * Every read delivers its value, none fails with EFAULT; and the limit
 * was met: in some run the copy-out made the OOM killer kill a filler.
 */
static int test_copy_out_to_new_page(void)
{
	return site_runs(SIGNAL_RUNS, copy_out_child, "copy-out");
}

/* A set-up step of a child failed: say which. */
static int setup_failed(const char *step)
{
	printf("# %s: %s\n", step, strerror(errno));
	fflush(stdout);
	return 2;
}

/*
 * A shared, writable mapping of a page of a file on ext4 that is not in
 * memory, holding @value at its start: a read of it must bring the page
 * in, and a write after it allocates nothing more.  NULL if it could not
 * be set up, with the step said.
 */
static int *file_page_not_in_memory(int value)
{
	long page = getpagesize();
	unsigned char resident;
	int fd, *map;

	fd = open(FILE_PAGE_DIR, O_TMPFILE | O_RDWR, 0600);
	if (fd < 0 || ftruncate(fd, page) ||
	    pwrite(fd, &value, sizeof(value), 0) != sizeof(value) ||
	    fdatasync(fd) || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)) {
		setup_failed("a file page in " FILE_PAGE_DIR);
		return NULL;
	}
	map = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED || mincore(map, page, &resident)) {
		setup_failed("mapping the file page");
		return NULL;
	}
	if (resident & 1) {
		errno = EEXIST;
		setup_failed("the file page stayed in memory");
		return NULL;
	}
	return map;
}

/*
 * In a child in @cgroup, once @filler has filled it: recvfrom() a
 * datagram waiting on a socketpair, with the address length in a page of
 * a file that is not in memory: move_addr_to_user() reads it after the
 * datagram was taken.  Exit status 0 if the call returned the datagram;
 * 1 if not (EFAULT: the datagram taken and lost).  *@kills: the OOM kills
 * in @cgroup meanwhile.
 */
static int addr_len_child(const char *cgroup, struct filler *filler,
			  long *kills)
{
	int events = oom_kills_open(cgroup), sv[2];
	socklen_t *addr_len;
	struct sockaddr_un from;
	char buf[8];
	ssize_t got;

	addr_len = (socklen_t *)file_page_not_in_memory(sizeof(from));
	touch_own_pages();
	if (!addr_len)
		return 2;
	if (events < 0 || socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) ||
	    send(sv[0], "datagram", 8, 0) != 8)
		return setup_failed("memory.events, socketpair or send");
	if (cg_enter_current(cgroup) || !filler_wait_full(filler, 20))
		return setup_failed("entering the full cgroup");
	*kills = oom_kills(events);
	got = recvfrom(sv[1], buf, sizeof(buf), 0, (struct sockaddr *)&from,
		       addr_len);
	*kills = oom_kills(events) - *kills;
	if (got == 8 && !memcmp(buf, "datagram", 8))
		return 0;
	printf("# recvfrom with its address length in a file page: %zd, %s\n",
	       got, strerror(errno));
	fflush(stdout);
	return 1;
}

/*
 * Every recvfrom() returns its datagram, none fails with EFAULT after
 * taking it; and the limit was met: in some run the read of the address
 * length made the OOM killer kill a filler.
 */
static int test_recvfrom_addr_len_in_file_page(void)
{
	return site_runs(SIGNAL_RUNS, addr_len_child, "address length read");
}

/*
 * A file on ext4 of READ_BYTES whose first half is in memory and second
 * half is not, each byte its offset's low byte times 7: the descriptor,
 * or -1 with the step said.
 */
static int file_half_in_memory(void)
{
	unsigned char block[4096];
	off_t off;
	int fd;
	size_t i;

	const char *step = "a file in " FILE_PAGE_DIR;

	fd = open(FILE_PAGE_DIR, O_TMPFILE | O_RDWR, 0600);
	if (fd < 0)
		goto fail;
	step = "writing the file";
	for (off = 0; off < READ_BYTES; off += sizeof(block)) {
		for (i = 0; i < sizeof(block); i++)
			block[i] = (unsigned char)((off + i) * 7);
		if (pwrite(fd, block, sizeof(block), off) != sizeof(block))
			goto fail;
	}
	step = "dropping the file from memory";
	if (fdatasync(fd) || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) ||
	    posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM) ||
	    pread(fd, block, sizeof(block), 0) != sizeof(block))
		goto fail;
	step = "reading its first half in";
	for (off = sizeof(block); off < READ_BYTES / 2; off += sizeof(block))
		if (pread(fd, block, sizeof(block), off) != sizeof(block))
			goto fail;
	return fd;
fail:
	setup_failed(step);
	if (fd >= 0)
		close(fd);
	return -1;
}

/*
 * In a child in @cgroup, once @filler has filled it: pread() all
 * READ_BYTES of a file whose second half is not in memory, into a buffer
 * touched before: the first half is copied before the second needs page
 * cache.  Exit status 0 if it returned all of them, as written; 1 if
 * not: a short read, which a program takes for the end of the file, or
 * an error.  *@kills: the OOM kills in @cgroup meanwhile.
 */
static int buffered_read_child(const char *cgroup, struct filler *filler,
			       long *kills)
{
	int events = oom_kills_open(cgroup), fd = file_half_in_memory();
	unsigned char *buf = malloc(READ_BYTES);
	ssize_t got;
	off_t i;

	if (fd < 0)
		return 2;
	if (events < 0 || !buf)
		return setup_failed("memory.events or the buffer");
	memset(buf, 0xff, READ_BYTES);
	touch_own_pages();
	if (cg_enter_current(cgroup) || !filler_wait_full(filler, 20))
		return setup_failed("entering the full cgroup");
	*kills = oom_kills(events);
	got = pread(fd, buf, READ_BYTES, 0);
	*kills = oom_kills(events) - *kills;
	if (got != READ_BYTES) {
		printf("# pread of %ld bytes, half not in memory: %zd, %s\n",
		       READ_BYTES, got, got < 0 ? strerror(errno) : "short");
		fflush(stdout);
		return 1;
	}
	for (i = 0; i < READ_BYTES; i++)
		if (buf[i] != (unsigned char)(i * 7)) {
			printf("# byte %ld read as %u\n", (long)i, buf[i]);
			fflush(stdout);
			return 1;
		}
	return 0;
}

/*
 * Every read of a file half in memory returns the whole range: none
 * comes back short or fails; and the limit was met: in some run the
 * read's page cache made the OOM killer kill a filler.
 */
static int test_buffered_read_of_file_half_in_memory(void)
{
	return site_runs(SIGNAL_RUNS, buffered_read_child, "buffered read");
}

/* What the robust-mutex child and one of its owner threads share. */
struct robust {
	pthread_mutex_t mutex;	/* in a page of its own the child's fork shares COW */
	int locked;		/* a pipe: the owner says it holds the mutex */
	/*
	 * Eventfds, whose reads and writes allocate nothing, into a shared
	 * page, which no fork makes copy-on-write: the child says go (first
	 * to copy what the owner writes, then to exit), the owner says it
	 * has, and no message needs memory at the OOM point.
	 */
	int go, done;
	uint64_t *word;
};

/*
 * Take the mutex, say so; when told, copy the pages this thread writes
 * (its stack) that the fork shares; when told again, exit holding the
 * mutex.
 */
static void *robust_owner(void *arg)
{
	struct robust *rb = arg;

	if (pthread_mutex_lock(&rb->mutex) || write(rb->locked, "l", 1) != 1 ||
	    read(rb->go, rb->word, sizeof(*rb->word)) != sizeof(*rb->word))
		abort();
	touch_own_pages();
	if (write(rb->done, rb->word, sizeof(*rb->word)) != sizeof(*rb->word) ||
	    read(rb->go, rb->word, sizeof(*rb->word)) != sizeof(*rb->word))
		abort();
	/* Not pthread_exit(): its unwinder would load libgcc_s here. */
	syscall(SYS_exit, 0);
	return NULL;
}

/* The @i-th owner's page of @pages. */
static struct robust *robust_at(char *pages, int i)
{
	return (struct robust *)(pages + i * getpagesize());
}

/* Tell the owner thread to go on; for the first time, wait until it has. */
static bool robust_go(struct robust *rb, bool wait)
{
	*rb->word = 1;
	if (write(rb->go, rb->word, sizeof(*rb->word)) != sizeof(*rb->word))
		return false;
	return !wait ||
	       read(rb->done, rb->word, sizeof(*rb->word)) == sizeof(*rb->word);
}

/* What happened in a run's exits. */
struct exit_counts {
	long kills;		/* OOM kills while an owner exited */
	long retry_fails;	/* failures by the limit meanwhile */
	int met;		/* exits during which the OOM killer killed */
				/* (whoever invoked it: /proc/vmstat) */
	int unmarked;		/* mutexes the walk left without OWNER_DIED */
};

/*
 * In a child in @cgroup: ROBUST_OWNERS threads each take a robust mutex
 * (@pi: priority inheriting) in a private page of its own; a fork makes
 * those pages copy-on-write; then, one at a time, once @filler has filled
 * the guest to its global OOM point again, an owner exits holding its
 * mutex, and the kernel's robust-list walk must copy the page to mark it.
 * Exit status 0 if every walk marked its mutex FUTEX_OWNER_DIED, so that
 * the next locker gets EOWNERDEAD; 1 if not (the next locker would wait
 * for ever, or glibc abort on ESRCH for a PI mutex).
 */
static int robust_child(const char *cgroup, struct filler *filler, bool pi,
			struct exit_counts *counts)
{
	int events = oom_kills_open(cgroup), vmstat = oom_kills_open(NULL);
	long page = getpagesize(), kills, fails;
	pthread_t threads[ROBUST_OWNERS];
	pthread_mutexattr_t attr;
	pthread_mutex_t dummy;
	struct robust *rb;
	int locked[2], i;
	uint64_t *words;
	pid_t sharer;
	char *pages;
	char c;

	pages = mmap(NULL, ROBUST_OWNERS * page, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	words = mmap(NULL, page, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (events < 0 || vmstat < 0 || pages == MAP_FAILED ||
	    words == MAP_FAILED || pthread_mutexattr_init(&attr) ||
	    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST) ||
	    (pi && pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT)) ||
	    pthread_mutex_init(&dummy, &attr) || pipe(locked))
		return setup_failed("mmap, mutex or pipe");
	for (i = 0; i < ROBUST_OWNERS; i++) {
		rb = robust_at(pages, i);
		rb->locked = locked[1];
		rb->word = &words[i];
		if (pthread_mutex_init(&rb->mutex, &attr) ||
		    (rb->go = eventfd(0, 0)) < 0 ||
		    (rb->done = eventfd(0, 0)) < 0)
			return setup_failed("an owner's mutex or eventfds");
	}
	touch_own_pages();
	if (cg_enter_current(cgroup))
		return setup_failed("entering the cgroup");
	for (i = 0; i < ROBUST_OWNERS; i++) {
		errno = pthread_create(&threads[i], NULL, robust_owner,
				       robust_at(pages, i));
		if (errno || read(locked[0], &c, 1) != 1)
			return setup_failed("an owner thread");
	}
	sharer = fork();
	if (sharer == 0) {
		touch_own_pages();
		/* It holds no memory of its own past this child's end. */
		if (!prctl(PR_SET_PDEATHSIG, SIGKILL) &&
		    write(locked[1], "s", 1) == 1)
			pause();
		_exit(0);
	}
	if (sharer < 0 || read(locked[0], &c, 1) != 1)
		return setup_failed("the fork that shares the pages");
	/*
	 * Copy now what this thread and the owners write later (their
	 * stacks, errno, the robust-list fields of the thread blocks),
	 * while there is room: a user-mode fault, never limited, would
	 * make the OOM killer kill a filler before the walk needs it.
	 */
	touch_own_pages();
	if (pthread_mutex_lock(&dummy) || pthread_mutex_unlock(&dummy))
		return setup_failed("the dummy mutex");
	for (i = 0; i < ROBUST_OWNERS; i++)
		if (!robust_go(robust_at(pages, i), true))
			return setup_failed("an owner's copies");
	for (i = 0; i < ROBUST_OWNERS; i++) {
		rb = robust_at(pages, i);
		/*
		 * Up to the OOM point again, by the fillers, not by this
		 * task: what fills the guest is then what the OOM killer
		 * kills, and a kill frees it.  Memory this unkillable task
		 * held would be no one's to free, and a guest whose fillers
		 * had been killed would run out of tasks to kill.
		 */
		filler_refill(filler);
		errno = ETIMEDOUT;
		if (!filler_wait_oom(filler, 60)) {
			printf("# owner %d: the fillers saw %ld ENOMEM and %ld kills so far, MemFree %ld kB, MemAvailable %ld kB\n",
			       i, filler->stats->enomem, filler->stats->kills,
			       meminfo_kb("MemFree"),
			       meminfo_kb("MemAvailable"));
			return setup_failed("refilling the guest");
		}
		kills = oom_kills(vmstat);
		fails = events_count(events, "alloc_retry_fail ");
		if (!robust_go(rb, false))
			return setup_failed("telling an owner to exit");
		/* The kernel clears the thread's tid after its walk. */
		errno = pthread_join(threads[i], NULL);
		if (errno)
			return setup_failed("joining an owner");
		kills = oom_kills(vmstat) - kills;
		counts->kills += kills;
		counts->met += kills > 0;
		counts->retry_fails += events_count(events, "alloc_retry_fail ") -
				       fails;
		/* What the next locker will see: the mutex's futex word. */
		if (!(__atomic_load_n(&rb->mutex.__data.__lock,
				      __ATOMIC_SEQ_CST) & FUTEX_OWNER_DIED))
			counts->unmarked++;
	}
	kill(sharer, SIGKILL);
	return counts->unmarked ? 1 : 0;
}

/*
 * ROBUST_RUNS runs of ROBUST_OWNERS exits, each started once the guest is
 * at its OOM point again (a filler's allocation failed by the limit, or a
 * filler killed by another task's allocation, which got there first):
 * in every one each walk marked its mutex FUTEX_OWNER_DIED and the limit
 * failed nothing in the exits.  The OOM kills during the exits are
 * reported, not required: the exiting thread's one page mostly comes
 * from reclaim or from a filler that was killed or gave up (kills in 0 to
 * 38 of 64 exits per case and boot); make sweep's fail_alloc_retry shows that the limit can
 * fail none of the exit's allocations.  Not under memcg OOM: there 6.12
 * never lets a dying task invoke the OOM killer
 * (mem_cgroup_out_of_memory() returns at task_is_dying()) and fails its
 * charge after the reclaim retries, limit or none, so the walk gives up
 * in a full cgroup on the kernel without the series too.
 */
static int robust_runs(bool pi)
{
	int ret = KSFT_PASS, status, run, met = 0;
	struct exit_counts *counts;
	struct filler filler;
	char *cgroup;

	counts = mmap(NULL, sizeof(*counts), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (counts == MAP_FAILED)
		return KSFT_FAIL;
	/* The fillers are the OOM killer's choice, not this test's tasks. */
	set_oom_score_adj(-1000);
	cgroup = robust_cgroups(&filler);
	if (!cgroup)
		return KSFT_FAIL;
	for (run = 0; run < ROBUST_RUNS; run++) {
		pid_t pid;

		memset(counts, 0, sizeof(*counts));
		/* Room for the child's threads and fork; then hold still. */
		filler_refill(&filler);
		if (!filler_wait_oom(&filler, 60) ||
		    !filler_release(&filler, 4L << 20)) {
			ksft_print_msg("run %d: the filler did not fill and release\n",
				       run);
			ret = KSFT_FAIL;
			break;
		}
		fflush(stdout);
		pid = fork();
		if (pid == 0)
			_exit(robust_child(cgroup, &filler, pi, counts));
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status)) {
			ksft_print_msg("run %d: status %#x, %d mutexes not marked FUTEX_OWNER_DIED\n",
				       run, status, counts->unmarked);
			ret = KSFT_FAIL;
		} else if (counts->retry_fails) {
			ksft_print_msg("run %d: the limit failed %ld allocations in the exits\n",
				       run, counts->retry_fails);
			ret = KSFT_FAIL;
		}
		ksft_print_msg("run %d: %d of %d exits saw an OOM kill in the guest (%ld kills)\n",
			       run, counts->met, ROBUST_OWNERS, counts->kills);
		met += counts->met;
	}
	ksft_print_msg("%d runs of %d exits, %d exits saw an OOM kill in the guest\n",
		       ROBUST_RUNS, ROBUST_OWNERS, met);
	filler_stop(&filler);
	robust_cgroups_remove(cgroup);
	munmap(counts, sizeof(*counts));
	set_oom_score_adj(0);
	return ret;
}

static int test_robust_mutex_owner_exits(void)
{
	return robust_runs(false);
}

static int test_robust_pi_mutex_owner_exits(void)
{
	return robust_runs(true);
}

static const struct test_case tests[] = {
	TEST_CASE(test_shared_futex_wait_on_new_page),
	TEST_CASE(test_exec_past_no_return),
	TEST_CASE(test_signal_frame_on_new_stack),
	TEST_CASE(test_copy_out_to_new_page),
	TEST_CASE(test_recvfrom_addr_len_in_file_page),
	TEST_CASE(test_buffered_read_of_file_half_in_memory),
	TEST_CASE(test_robust_mutex_owner_exits),
	TEST_CASE(test_robust_pi_mutex_owner_exits),
};

int main(int argc, char **argv)
{
	run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
