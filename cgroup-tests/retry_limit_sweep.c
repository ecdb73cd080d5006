// SPDX-License-Identifier: GPL-2.0
/*
 * The sweep of the sites a retry limit of 0 fails (make sweep): on a
 * kernel with CONFIG_FAIL_ALLOC_RETRY, for each operation a container
 * makes and for n = 1, 2, ..., fail the n-th allocation of the calling
 * task that the limit applies to (/proc/thread-self/fail-nth, which
 * fail_alloc_retry honours), as the limit would once memory ran out,
 * until the operation completes without an n-th.  Each run is a child in
 * a cgroup at memory.alloc_retries=0.
 *
 * Every run ends one way: "ok" (the operation did all it says), an errno
 * of the call that failed, "short" (a read or write that came back
 * short, its data intact), or a bad end: a signal, a hang (RUN_TIMEOUT_S),
 * a kernel warning, data lost or wrong, a privilege kept.  Which site the
 * n-th allocation was is read from the fault-injection report in the
 * kernel log: the first frame of its call trace outside the allocators.
 *
 * A TAP test per operation, which fails on a bad end; every run is a row
 * of $ALLOC_TEST_RESULTS/sweep/runs.json, which qemu/report/sweep.py
 * renders as the table of Documentation/retry-limit-sweep.md.
 *
 *   retry_limit_sweep [TEST...]
 *   retry_limit_sweep setuid-drop FD   (the setuid program of the exec
 *                                       case: see setuid_drop())
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/netlink.h>
#include <limits.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup_util.h"
#include "kselftest.h"
#include "test_util.h"

#define FAIL_NTH	"/proc/thread-self/fail-nth"
/* A sweep that has not ended by then is reported as such. */
#define MAX_N		400
#define RUN_TIMEOUT_S	20
#define DATA_BYTES	(64 << 10)
/* A user to drop to, and the setuid-root copy of this program. */
#define USER		4343
#define SETUID_DIR	"/run/retry-limit-sweep"
#define SETUID_PROG	SETUID_DIR "/setuid-drop"
#define EXT4_DIR	"/var/tmp"

/* What a run's child reports: how the operation ended. */
struct report {
	char end[48];		/* "ok", "short", an errno name, or a bad end */
	bool bad;		/* data lost, a privilege kept, ... */
};

/* One run, as runs.json keeps it. */
struct run {
	int n;
	bool injected;		/* the n-th allocation was reached and failed */
	char site[64];		/* where: the first frame outside allocators */
	char end[48];
	bool bad;
	char warning[96];	/* the first kernel warning line, if any */
	bool loader_segfault;	/* the kernel saw a fault in ld.so's code */
};

/* In a memfd, which the setuid program of the exec case maps too. */
static struct report *rep;
static int rep_fd;
static char *cgroup;
static FILE *runs_json;
static bool first_op = true;
static pid_t main_pid;

static void report_end(const char *end, bool bad)
{
	snprintf(rep->end, sizeof(rep->end), "%s", end);
	rep->bad = bad;
}

/* The end of a call that returned @ret (-1: failed with errno). */
static bool failed(long ret, const char *call)
{
	char end[48];

	if (ret >= 0)
		return false;
	snprintf(end, sizeof(end), "%s: %s", call, strerrorname_np(errno));
	report_end(end, false);
	return true;
}

/*
 * Set the calling thread's fail-nth.  The file is opened once per thread,
 * while its fail-nth is 0: the open allocates, the write does not, so that
 * setting and clearing it count no allocation of their own.
 */
static void fail_nth_set(int n)
{
	static __thread pid_t owner;
	static __thread int fd = -1;
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%d", n);

	if (owner != gettid()) {
		/* A fork's copy of the fd is its parent's task's file. */
		if (fd >= 0)
			close(fd);
		fd = open(FAIL_NTH, O_WRONLY);
		owner = gettid();
	}
	if (fd < 0 || pwrite(fd, buf, len, 0) != len)
		_exit(2);
}

/* Compare what came back with what went in; "short" if a prefix. */
static void check_data(const char *sent, const char *got, long len,
		       long want)
{
	if (len < 0 || len > want || memcmp(sent, got, len))
		report_end("data lost or wrong", true);
	else
		report_end(len == want ? "ok" : "short", false);
}

static char sent[DATA_BYTES], got[DATA_BYTES];

/* The operations: each sets up, calls fail_nth_set(n), operates. */

static void op_fork(int n)
{
	int status;
	pid_t pid;

	fail_nth_set(n);
	pid = fork();
	if (pid == 0)
		_exit(0);
	if (failed(pid, "fork"))
		return;
	fail_nth_set(0);
	if (waitpid(pid, &status, 0) != pid || status)
		report_end("child lost", true);
	else
		report_end("ok", false);
}

static void *thread_exits(void *arg)
{
	pthread_exit(arg);
}

static void op_thread(int n)
{
	pthread_t thread;
	void *ret;
	int err;

	/* pthread_exit() loads libgcc_s once: not the kernel's part. */
	if (pthread_create(&thread, NULL, thread_exits, NULL) ||
	    pthread_join(thread, NULL))
		_exit(2);
	fail_nth_set(n);
	err = pthread_create(&thread, NULL, thread_exits, sent);
	fail_nth_set(0);
	if (err) {
		errno = err;
		failed(-1, "pthread_create");
		return;
	}
	if (pthread_join(thread, &ret) || ret != sent)
		report_end("thread lost", true);
	else
		report_end("ok", false);
}

/* The owner of the robust mutexes: takes them, exits when told to. */
struct robust {
	pthread_mutex_t mutex;
	int n;
	int locked[2], exit_now[2];
};

static void *robust_owner(void *arg)
{
	struct robust *rb = arg;
	char c;

	if (pthread_mutex_lock(&rb->mutex) ||
	    write(rb->locked[1], "l", 1) != 1 ||
	    read(rb->exit_now[0], &c, 1) != 1)
		_exit(2);
	/* The exit, robust-list walk and all, is this thread's own. */
	fail_nth_set(rb->n);
	syscall(SYS_exit, 0);
	return NULL;
}

static void robust_exit(int n, bool pi)
{
	pthread_mutexattr_t attr;
	struct timespec until;
	struct robust rb = { .n = n };
	pthread_t thread;
	char c;
	int ret;

	if (pthread_mutexattr_init(&attr) ||
	    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST) ||
	    (pi && pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT)) ||
	    pthread_mutex_init(&rb.mutex, &attr) || pipe(rb.locked) ||
	    pipe(rb.exit_now) ||
	    pthread_create(&thread, NULL, robust_owner, &rb) ||
	    read(rb.locked[0], &c, 1) != 1 || write(rb.exit_now[1], "x", 1) != 1)
		_exit(2);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	ret = pthread_mutex_timedlock(&rb.mutex, &until);
	if (ret == EOWNERDEAD)
		report_end("ok", false);
	else
		report_end(ret == ETIMEDOUT ? "owner death lost" :
			   strerrorname_np(ret), true);
}

static void op_robust_mutex_owner_exits(int n)
{
	robust_exit(n, false);
}

static void op_robust_pi_mutex_owner_exits(int n)
{
	robust_exit(n, true);
}

/* A PI mutex another thread holds: FUTEX_LOCK_PI times out. */
static void *pi_holder(void *arg)
{
	struct robust *rb = arg;
	char c;

	if (pthread_mutex_lock(&rb->mutex) ||
	    write(rb->locked[1], "l", 1) != 1 ||
	    read(rb->exit_now[0], &c, 1) != 1 ||
	    pthread_mutex_unlock(&rb->mutex))
		_exit(2);
	return NULL;
}

static void op_pi_futex_contended(int n)
{
	pthread_mutexattr_t attr;
	struct timespec until;
	struct robust rb;
	pthread_t thread;
	char c;
	int ret;

	if (pthread_mutexattr_init(&attr) ||
	    pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT) ||
	    pthread_mutex_init(&rb.mutex, &attr) || pipe(rb.locked) ||
	    pipe(rb.exit_now) ||
	    pthread_create(&thread, NULL, pi_holder, &rb) ||
	    read(rb.locked[0], &c, 1) != 1)
		_exit(2);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec = 0;
	until.tv_sec += 1;
	fail_nth_set(n);
	ret = pthread_mutex_timedlock(&rb.mutex, &until);
	fail_nth_set(0);
	if (write(rb.exit_now[1], "x", 1) != 1 || pthread_join(thread, NULL))
		_exit(2);
	if (ret == ETIMEDOUT)
		report_end("ok", false);
	else
		report_end(strerrorname_np(ret), true);
}

/*
 * The setuid program: as root (euid 0, real uid USER) it lowers its euid
 * to USER, as a program does around untrusted work, raises it again and
 * drops it for good.  Writes its end into the memfd @fd: "ok" only if
 * every step left the uids it asked for, a privilege kept otherwise.
 */
static int setuid_drop(const char *fd_arg)
{
	struct report *r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE,
				MAP_SHARED, atoi(fd_arg), 0);
	uid_t ruid = getuid(), e, s, rr;

	/* Nothing to report into: a clean failure, said by the status. */
	if (r == MAP_FAILED)
		return errno == ENOMEM ? 3 : 2;
	rep = r;
	if (seteuid(ruid) && geteuid() == 0) {
		failed(-1, "seteuid");
		rep->bad = true;
		return 0;
	}
	if (seteuid(0) || setresuid(ruid, ruid, ruid)) {
		failed(-1, "setresuid");
		rep->bad = getresuid(&rr, &e, &s) || !e || !s;
		return 0;
	}
	if (getresuid(&rr, &e, &s) || rr != ruid || e != ruid || s != ruid)
		report_end("privilege kept", true);
	else
		report_end("ok", false);
	return 0;
}

/* This program, setuid root, where USER can run it. */
static void setuid_prog_install(void)
{
	char self[PATH_MAX];
	const char *const cp[] = { "cp", self, SETUID_PROG, NULL };
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (len <= 0)
		ksft_exit_fail_msg("/proc/self/exe: %s\n", strerror(errno));
	self[len] = '\0';
	mkdir(SETUID_DIR, 0755);
	umount(SETUID_DIR);
	if (mount("retry-limit-sweep", SETUID_DIR, "tmpfs", MS_NODEV,
		  "mode=0755") || run_program(cp, false) ||
	    chmod(SETUID_PROG, 04755))
		ksft_exit_fail_msg("cannot install %s\n", SETUID_PROG);
}

/*
 * A process of USER execs the setuid program with fail-nth n, which the
 * exec keeps: the n-th point may be in execve(), in the new program's
 * loader (exit 127, "error while loading shared libraries", or its
 * SIGSEGV: see run_once()) or in the program's credential changes.
 */
static void op_exec_setuid(int n)
{
	int status;
	char arg[16];
	pid_t pid;

	report_end("no report", true);
	pid = fork();
	if (pid == 0) {
		if (become_user(USER))
			_exit(2);
		snprintf(arg, sizeof(arg), "%d", rep_fd);
		fail_nth_set(n);
		execl(SETUID_PROG, "retry_limit_sweep", "setuid-drop", arg, NULL);
		failed(-1, "execve");
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		_exit(2);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		report_end("the loader: ENOMEM (exit 127)", false);
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
		report_end("the program: mmap: ENOMEM", false);
	else if (WIFSIGNALED(status))
		report_end(sigabbrev_np(WTERMSIG(status)) ?: "signal", true);
	else if (!WIFEXITED(status) || WEXITSTATUS(status))
		report_end("the program failed", true);
}

static void op_setuid_family(int n)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct none[2] = { 0 };
	static const gid_t groups[] = { USER };
	uid_t r, e, s;

	fail_nth_set(n);
	if (failed(setgroups(1, groups), "setgroups") ||
	    failed(setresgid(USER, USER, 0), "setresgid") ||
	    failed(setresuid(USER, USER, 0), "setresuid") ||
	    failed(syscall(SYS_capset, &hdr, none), "capset"))
		return;
	fail_nth_set(0);
	if (getresuid(&r, &e, &s) || r != USER || e != USER || s != 0)
		report_end("uids not as set", true);
	else
		report_end("ok", false);
}

static void op_pipe(int n)
{
	long len;
	int fds[2];

	fail_nth_set(n);
	if (failed(pipe2(fds, O_NONBLOCK), "pipe2"))
		return;
	len = write(fds[1], sent, DATA_BYTES);
	if (failed(len, "write"))
		return;
	check_data(sent, got, read(fds[0], got, DATA_BYTES), len);
	if (!rep->bad && len < DATA_BYTES)
		report_end("short", false);
}

static void op_unix_socketpair(int n)
{
	long len, in = 0, r;
	int fds[2];

	fail_nth_set(n);
	if (failed(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), "socketpair"))
		return;
	len = send(fds[0], sent, DATA_BYTES / 4, MSG_DONTWAIT);
	if (failed(len, "send"))
		return;
	while (in < len && (r = recv(fds[1], got + in, len - in, 0)) > 0)
		in += r;
	check_data(sent, got, in, len);
	if (!rep->bad && len < DATA_BYTES / 4)
		report_end("short", false);
}

static void op_tcp_loopback(int n)
{
	struct sockaddr_in addr = { .sin_family = AF_INET,
				    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(addr);
	int l, c, a;
	long len, in = 0, r;

	fail_nth_set(n);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (failed(l, "socket") ||
	    failed(bind(l, (void *)&addr, sizeof(addr)), "bind") ||
	    failed(getsockname(l, (void *)&addr, &alen), "getsockname") ||
	    failed(listen(l, 1), "listen"))
		return;
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (failed(c, "socket") ||
	    failed(connect(c, (void *)&addr, sizeof(addr)), "connect"))
		return;
	a = accept(l, NULL, NULL);
	if (failed(a, "accept"))
		return;
	len = send(c, sent, DATA_BYTES / 4, 0);
	if (failed(len, "send"))
		return;
	while (in < len && (r = recv(a, got + in, len - in, 0)) > 0)
		in += r;
	check_data(sent, got, in, len);
}

static void op_mmap_mprotect(int n)
{
	long page = getpagesize();
	char *mem, *grown;

	fail_nth_set(n);
	mem = mmap(NULL, 64 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		failed(-1, "mmap");
		return;
	}
	if (failed(mprotect(mem + 8 * page, 8 * page, PROT_READ), "mprotect") ||
	    failed(munmap(mem + 32 * page, page), "munmap"))
		return;
	grown = mremap(mem + 48 * page, 16 * page, 32 * page, MREMAP_MAYMOVE);
	if (grown == MAP_FAILED) {
		failed(-1, "mremap");
		return;
	}
	fail_nth_set(0);
	/* What is still mapped reads and writes as it should. */
	mem[0] = 1;
	grown[31 * page] = 1;
	report_end(mem[8 * page] == 0 ? "ok" : "data lost or wrong",
		   mem[8 * page] != 0);
}

/* write() and fallocate() on a new file in @dir; read back, compare. */
static void write_fallocate(int n, const char *dir)
{
	char path[64];
	struct stat st;
	long len;
	int fd;

	snprintf(path, sizeof(path), "%s/sweep-%d", dir, getpid());
	fail_nth_set(n);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (failed(fd, "open"))
		return;
	len = write(fd, sent, DATA_BYTES);
	if (failed(len, "write") ||
	    failed(fallocate(fd, 0, DATA_BYTES, DATA_BYTES), "fallocate") ||
	    failed(fsync(fd), "fsync"))
		goto out;
	fail_nth_set(0);
	if (fstat(fd, &st) || st.st_size != 2 * DATA_BYTES) {
		report_end("size lost", true);
		goto out;
	}
	check_data(sent, got, pread(fd, got, len, 0), len);
	if (!rep->bad && len < DATA_BYTES)
		report_end("short", false);
out:
	fail_nth_set(0);
	unlink(path);
}

static void op_write_fallocate_tmpfs(int n)
{
	write_fallocate(n, "/dev/shm");
}

static void op_write_fallocate_ext4(int n)
{
	struct statvfs vfs;

	write_fallocate(n, EXT4_DIR);
	if (statvfs(EXT4_DIR, &vfs) || (vfs.f_flag & ST_RDONLY))
		report_end("file system read-only", true);
}

/* write() to tmpfs from a shared mapping nobody has touched. */
static void op_write_from_unpopulated_mapping(int n)
{
	int src = memfd_create("source", 0), fd = memfd_create("dest", 0);
	char *mem;
	long len;

	if (src < 0 || fd < 0 || ftruncate(src, DATA_BYTES))
		_exit(2);
	mem = mmap(NULL, DATA_BYTES, PROT_READ, MAP_SHARED, src, 0);
	if (mem == MAP_FAILED)
		_exit(2);
	fail_nth_set(n);
	len = write(fd, mem, DATA_BYTES);
	if (failed(len, "write"))
		return;
	fail_nth_set(0);
	memset(sent, 0, DATA_BYTES);
	check_data(sent, got, pread(fd, got, len, 0), len);
	if (!rep->bad && len < DATA_BYTES)
		report_end("short", false);
}

static volatile sig_atomic_t handled;

static void on_usr1(int sig)
{
	handled = 1;
}

static void op_signal_on_new_stack(int n)
{
	struct sigaction sa = { .sa_handler = on_usr1,
				.sa_flags = SA_ONSTACK };
	stack_t ss = { .ss_size = 64 << 10 };

	ss.ss_sp = mmap(NULL, ss.ss_size, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ss.ss_sp == MAP_FAILED || sigaltstack(&ss, NULL) ||
	    sigaction(SIGUSR1, &sa, NULL))
		_exit(2);
	fail_nth_set(n);
	kill(getpid(), SIGUSR1);
	fail_nth_set(0);
	report_end(handled ? "ok" : "signal lost", !handled);
}

/* One write through io_uring, from its setup to its completion. */
static void op_io_uring_write(int n)
{
	struct io_uring_params p = { 0 };
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	unsigned int *tail, *array;
	char *sq, *cq;
	int ring, fd = memfd_create("uring", 0);
	long ret;

	if (fd < 0)
		_exit(2);
	fail_nth_set(n);
	ring = syscall(__NR_io_uring_setup, 4, &p);
	if (ring < 0 && errno == ENOSYS) {
		report_end("no io_uring in this kernel", true);
		return;
	}
	if (failed(ring, "io_uring_setup"))
		return;
	sq = mmap(NULL, p.sq_off.array + p.sq_entries * sizeof(unsigned int),
		  PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring,
		  IORING_OFF_SQ_RING);
	cq = mmap(NULL, p.cq_off.cqes + p.cq_entries * sizeof(*cqe),
		  PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring,
		  IORING_OFF_CQ_RING);
	sqe = mmap(NULL, p.sq_entries * sizeof(*sqe), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqe == MAP_FAILED) {
		failed(-1, "mmap of the ring");
		return;
	}
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_WRITE;
	sqe->fd = fd;
	sqe->addr = (unsigned long)sent;
	sqe->len = DATA_BYTES;
	array = (unsigned int *)(sq + p.sq_off.array);
	tail = (unsigned int *)(sq + p.sq_off.tail);
	array[0] = 0;
	__atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
	ret = syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS,
		      NULL, 0);
	if (failed(ret, "io_uring_enter"))
		return;
	fail_nth_set(0);
	cqe = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
	if (ret != 1 ||
	    *(unsigned int *)(cq + p.cq_off.tail) ==
	    *(unsigned int *)(cq + p.cq_off.head)) {
		report_end("completion lost", true);
		return;
	}
	if (cqe->res < 0) {
		errno = -cqe->res;
		failed(-1, "the write's completion");
		return;
	}
	check_data(sent, got, pread(fd, got, cqe->res, 0), cqe->res);
	if (!rep->bad && cqe->res < DATA_BYTES)
		report_end("short", false);
}

/*
 * Audit on, in panic mode (auditctl -e 1 -f 2), or back off (-e 0 -f 1):
 * 0 or -1.  A record lost in panic mode panics the machine.
 */
static int audit_set(bool panic_mode)
{
	struct {
		struct nlmsghdr nlh;
		struct audit_status status;
	} req = {
		.nlh = {
			.nlmsg_len = sizeof(req),
			.nlmsg_type = AUDIT_SET,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK,
		},
		.status = {
			.mask = AUDIT_STATUS_ENABLED | AUDIT_STATUS_FAILURE,
			.enabled = panic_mode,
			.failure = panic_mode ? AUDIT_FAIL_PANIC : AUDIT_FAIL_PRINTK,
		},
	};
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct {
		struct nlmsghdr nlh;
		struct nlmsgerr err;
	} ack;
	int fd = socket(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT), ret = -1;

	if (fd < 0)
		return -1;
	if (sendto(fd, &req, sizeof(req), 0, (void *)&kernel,
		   sizeof(kernel)) == sizeof(req) &&
	    recv(fd, &ack, sizeof(ack), 0) >= (ssize_t)sizeof(ack.nlh) &&
	    ack.nlh.nlmsg_type == NLMSG_ERROR && !ack.err.error)
		ret = 0;
	close(fd);
	return ret;
}

/*
 * fork() with audit on in panic mode: every fork allocates the child's
 * audit context, and a failure there is a lost record, a panic.  The
 * series exempts audit's allocations in panic mode: none may be failed.
 */
static void op_fork_in_audit_panic_mode(int n)
{
	if (audit_set(true))
		_exit(2);
	op_fork(n);
	if (audit_set(false))
		report_end("audit left in panic mode", true);
}

/* The allocators' frames, and the fault injection's own. */
static const char *const inner[] = {
	"dump_stack", "should_fail", "fail_dump", "should_fail_alloc_retry",
	"prepare_alloc_pages", "__alloc_pages", "alloc_pages", "__alloc_frozen",
	"alloc_frozen", "folio_alloc", "__folio_alloc", "vma_alloc_folio",
	"alloc_pages_mpol", "__alloc_pages_mpol", "slab_pre_alloc_hook",
	"kmem_cache_alloc", "__kmem_cache_alloc", "kmalloc", "__kmalloc",
	"kzalloc", "kvmalloc", "__kvmalloc", "slab_alloc", "new_slab",
	"allocate_slab", "___slab_alloc", "__slab_alloc", "kmalloc_trace",
	"__vmalloc", "vmalloc", "__get_free_pages", "get_zeroed_page",
	"filemap_alloc_folio", "kmalloc_large", "__kmalloc_large",
	"alloc_slab_page", "alloc_pages_bulk", "__alloc_pages_bulk",
	"kmem_cache_alloc_bulk", "mas_alloc_nodes", "mas_node_count",
	"mas_preallocate", "mt_alloc", "NULL",
};

struct scan {
	struct run *run;
	bool in_trace;
};

static bool is_inner(const char *frame)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(inner); i++)
		if (!strncmp(frame, inner[i], strlen(inner[i])))
			return true;
	return false;
}

/* A record of /dev/kmsg: "prio,seq,ts,flags;text". */
static void scan_record(const char *rec, void *arg)
{
	static const char *const warnings[] = {
		"WARNING:", "BUG:", "Oops", "VM_FAULT_OOM leaked",
		"EXT4-fs error", "segfault at", "general protection",
		"possible circular locking", "INFO: task", "soft lockup",
	};
	struct scan *sc = arg;
	const char *text = strchr(rec, ';');
	size_t i;

	if (!text)
		return;
	text++;
	if (strstr(text, "FAULT_INJECTION: forcing a failure")) {
		sc->run->injected = true;
		sc->in_trace = true;
		return;
	}
	/*
	 * A fault of user-mode code is reported as "segfault at ... in
	 * <mapping>"; the SIGSEGV that execve() sends past its point of no
	 * return is not, so it stays a bad end.
	 */
	if (strstr(text, SEGFAULT_AT) && strstr(text, IN_LOADER)) {
		sc->run->loader_segfault = true;
		return;
	}
	for (i = 0; i < ARRAY_SIZE(warnings); i++)
		if (strstr(text, warnings[i]) && !sc->run->warning[0])
			snprintf(sc->run->warning, sizeof(sc->run->warning),
				 "%.*s", (int)strcspn(text, "\n"), text);
	/*
	 * " name+0x1/0x2" frames, until the first outside the allocators;
	 * " ? name+..." is a stale one, not on the call chain.
	 */
	if (sc->in_trace && text[0] == ' ' && strchr(text, '+') &&
	    !sc->run->site[0]) {
		text += strspn(text, " ");
		if (text[0] != '?' && !is_inner(text))
			snprintf(sc->run->site, sizeof(sc->run->site), "%.*s",
				 (int)strcspn(text, "+"), text);
	}
}

/* One run: @op with n in a child in the cgroup; false on a bad end. */
static bool run_once(void (*op)(int), int n, struct run *run)
{
	struct pollfd pfd;
	struct scan sc = { .run = run };
	int kmsg = kmsg_mark(), status;
	pid_t pid;

	memset(run, 0, sizeof(*run));
	run->n = n;
	memset(rep, 0, sizeof(*rep));
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (cg_enter_current(cgroup))
			_exit(2);
		touch_own_pages();
		op(n);
		fail_nth_set(0);
		_exit(0);
	}
	pfd.fd = syscall(SYS_pidfd_open, pid, 0);
	pfd.events = POLLIN;
	if (pfd.fd < 0)
		ksft_exit_fail_msg("pidfd_open: %s\n", strerror(errno));
	if (poll(&pfd, 1, RUN_TIMEOUT_S * 1000) != 1) {
		snprintf(run->end, sizeof(run->end), "hang");
		run->bad = true;
		kill(pid, SIGKILL);
	}
	close(pfd.fd);
	waitpid(pid, &status, 0);
	kmsg_for_each(kmsg, scan_record, &sc);
	if (run->bad)
		;
	else if (WIFSIGNALED(status)) {
		snprintf(run->end, sizeof(run->end), "%s",
			 sigabbrev_np(WTERMSIG(status)) ?: "signal");
		run->bad = true;
	} else if (WEXITSTATUS(status)) {
		snprintf(run->end, sizeof(run->end), "set-up failed (%d)",
			 WEXITSTATUS(status));
		run->bad = true;
	} else {
		snprintf(run->end, sizeof(run->end), "%s",
			 rep->end[0] ? rep->end : "no report");
		run->bad = rep->bad || !rep->end[0];
	}
	/*
	 * The new program's dynamic loader dereferencing the mmap() that
	 * failed: user space's handling of an ENOMEM, which the table shows
	 * and which is not the kernel's bad end.
	 */
	if (!strcmp(run->end, "SEGV") && run->loader_segfault) {
		snprintf(run->end, sizeof(run->end), "SEGV in %s", LOADER);
		run->bad = false;
	}
	if (run->warning[0])
		run->bad = true;
	return !run->bad;
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if ((unsigned char)*s < ' ' || *s == '"' || *s == '\\')
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/* Sweep @op: runs until one reached no n-th allocation. */
static int sweep(const char *name, void (*op)(int))
{
	int n, points = 0, bad = 0;
	struct run run;

	for (n = 1; n <= MAX_N; n++) {
		if (!run_once(op, n, &run)) {
			bad++;
			ksft_print_msg("%s, n=%d: %s at %s%s%s\n", name, n,
				       run.end, run.site[0] ? run.site : "?",
				       run.warning[0] ? "; kernel: " : "",
				       run.warning);
		}
		if (runs_json) {
			fprintf(runs_json, "%s\n  {\"op\": ", first_op ? "" : ",");
			first_op = false;
			json_string(runs_json, name);
			fprintf(runs_json, ", \"n\": %d, \"injected\": %s, \"site\": ",
				n, run.injected ? "true" : "false");
			json_string(runs_json, run.site);
			fprintf(runs_json, ", \"end\": ");
			json_string(runs_json, run.end);
			fprintf(runs_json, ", \"bad\": %s, \"warning\": ",
				run.bad ? "true" : "false");
			json_string(runs_json, run.warning);
			fprintf(runs_json, "}");
			fflush(runs_json);
		}
		if (!run.injected)
			break;
		points++;
	}
	ksft_print_msg("%s: %d limited allocations failed one by one, %d bad ends%s\n",
		       name, points, bad, n > MAX_N ? ", sweep cut short" : "");
	return bad || n > MAX_N ? KSFT_FAIL : KSFT_PASS;
}

/* The end of runs.json, however the tests end. */
static void runs_close(void)
{
	if (runs_json && getpid() == main_pid) {
		fprintf(runs_json, "\n]\n");
		fclose(runs_json);
	}
}

/* The sweep of fork() in audit's panic mode; audit off again after it. */
static int test_fork_in_audit_panic_mode(void)
{
	int ret = sweep("fork_in_audit_panic_mode", op_fork_in_audit_panic_mode);

	if (audit_set(false)) {
		ksft_print_msg("cannot turn audit off\n");
		ret = KSFT_FAIL;
	}
	return ret;
}

#define SWEEP(op) \
static int test_##op(void) \
{ \
	return sweep(#op, op_##op); \
}
SWEEP(fork)
SWEEP(thread)
SWEEP(pi_futex_contended)
SWEEP(robust_mutex_owner_exits)
SWEEP(robust_pi_mutex_owner_exits)
SWEEP(exec_setuid)
SWEEP(setuid_family)
SWEEP(pipe)
SWEEP(unix_socketpair)
SWEEP(tcp_loopback)
SWEEP(mmap_mprotect)
SWEEP(write_fallocate_tmpfs)
SWEEP(write_fallocate_ext4)
SWEEP(write_from_unpopulated_mapping)
SWEEP(signal_on_new_stack)
SWEEP(io_uring_write)

int main(int argc, char **argv)
{
	static const struct test_case tests[] = {
		TEST_CASE(test_fork),
		TEST_CASE(test_fork_in_audit_panic_mode),
		TEST_CASE(test_thread),
		TEST_CASE(test_pi_futex_contended),
		TEST_CASE(test_robust_mutex_owner_exits),
		TEST_CASE(test_robust_pi_mutex_owner_exits),
		TEST_CASE(test_exec_setuid),
		TEST_CASE(test_setuid_family),
		TEST_CASE(test_pipe),
		TEST_CASE(test_unix_socketpair),
		TEST_CASE(test_tcp_loopback),
		TEST_CASE(test_mmap_mprotect),
		TEST_CASE(test_write_fallocate_tmpfs),
		TEST_CASE(test_write_fallocate_ext4),
		TEST_CASE(test_write_from_unpopulated_mapping),
		TEST_CASE(test_signal_on_new_stack),
		TEST_CASE(test_io_uring_write),
	};
	const char *dir = getenv("ALLOC_TEST_RESULTS");
	char path[4096];
	size_t i;

	if (argc == 3 && !strcmp(argv[1], "setuid-drop"))
		return setuid_drop(argv[2]);
	if (access(FAIL_NTH, W_OK))
		ksft_exit_fail_msg("%s: %s (a kernel with CONFIG_FAIL_ALLOC_RETRY?)\n",
				   FAIL_NTH, strerror(errno));
	rep_fd = memfd_create("sweep-report", 0);
	if (rep_fd < 0 || ftruncate(rep_fd, sizeof(*rep)))
		ksft_exit_fail_msg("memfd: %s\n", strerror(errno));
	rep = mmap(NULL, sizeof(*rep), PROT_READ | PROT_WRITE, MAP_SHARED,
		   rep_fd, 0);
	if (rep == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	for (i = 0; i < sizeof(sent); i++)
		sent[i] = 'a' + i % 26;
	cgroup = cg_name(test_cgroup_root(), "retry-limit-sweep");
	cg_destroy(cgroup);
	if (cg_create(cgroup) || alloc_retries_set(cgroup, "0"))
		ksft_exit_fail_msg("cannot set up %s\n", cgroup);
	setuid_prog_install();
	/* Every segfault record: see run_once(); for the rest of the boot. */
	printk_ratelimit_set(0);
	if (dir) {
		snprintf(path, sizeof(path), "%s/sweep", dir);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/sweep/runs.json", dir);
		runs_json = fopen(path, "w");
		if (!runs_json)
			ksft_exit_fail_msg("%s: %s\n", path, strerror(errno));
		fprintf(runs_json, "[");
		main_pid = getpid();
		atexit(runs_close);
	}
	run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
