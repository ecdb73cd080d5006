// SPDX-License-Identifier: GPL-2.0
/*
 * A metadata-heavy ext4 workload in a cgroup at memory.alloc_retries 0,
 * under memcg OOM and under global OOM: Ts'o's objection of 2015, that a
 * small allocation failing inside a filesystem can abort its journal and
 * remount it read-only for everyone.
 *
 * The filesystem is a fresh ext4 image on a loop device, so that whatever
 * happens to it cannot take the guest's root with it.  The writer creates
 * a file, writes a checksummed block, fsyncs it, renames it into place,
 * unlinks an older one and now and then makes and removes a directory,
 * for WRITE_SECONDS (longer if no hog was OOM-killed yet).  Meanwhile a
 * hog beside it under a shared memory.max
 * (memcg OOM) or outside it (global OOM) fills memory to just short of
 * the limit and then creeps on a page at a time until the OOM killer
 * takes it, and is started again: the limit is reached over and over, with
 * nothing left to reclaim but the writer's own memory.  The writer's
 * system calls may fail with ENOMEM; the filesystem must not notice:
 * - no "EXT4-fs error", journal abort or read-only remount in the log;
 * - the mount is still read-write;
 * - every file in place reads back with its checksum;
 * - e2fsck -fn finds the unmounted image clean.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_util.h"
#include "test_util.h"

#define IMAGE		"/var/tmp/alloc-retries-ext4.img"
#define MNT		"/run/alloc-retries-ext4"
#define IMAGE_BYTES	(64L << 20)
#define WRITE_SECONDS	20
/*
 * ... or longer, until the OOM killer has taken a hog, up to this.  Under
 * global OOM the first kill came about 15 s into the case on the
 * production kernel; on the debug kernel (make check-debug), whose reclaim
 * of the page cache the hog thrashes is slower, after about 60 s, about
 * 90 s, and once after 300 s, when the page cache the earlier tests left
 * had been thrashed out to 31 pages: hence the caches are dropped before
 * the global case.  The cap costs a run that gets its kill nothing.
 */
#define WRITE_SECONDS_MAX	300
#define MEMCG_MAX	(48L << 20)
#define BLOCK		4096
/* Names the writer cycles through: at most this many files in place. */
#define SLOTS		64

/* The writer's system calls, by what they do, and their failures. */
enum op { OP_CREATE, OP_WRITE, OP_FSYNC, OP_RENAME, OP_UNLINK, OP_MKDIR,
	  OP_RMDIR, OPS };
static const char * const op_names[OPS] = {
	"create", "write", "fsync", "rename", "unlink", "mkdir", "rmdir",
};

struct tally {
	long calls[OPS];
	long enomem[OPS];	/* ENOMEM (or ENOSPC/ENFILE from an inode) */
	long other[OPS];	/* anything else: must stay 0 */
	int last_other;		/* errno of the last of those */
	long files_placed;	/* fsync'd and renamed into place */
	int hogs_killed;	/* by the OOM killer, so far */
};

static const char *root;
static struct tally *tally;

/* A hog's pace once it has filled its share: 4 pages per this many us. */
#define CREEP_US	500

/*
 * Fill @bytes, then creep on a page at a time until killed.  The volatile
 * stores keep the memory live: the compiler may not drop them.
 */
static void creep(size_t bytes)
{
	volatile char *mem;
	size_t off, len = bytes * 4;

	prctl(PR_SET_NAME, "ext4-hog");
	set_oom_score_adj(1000);
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED)
		_exit(3);
	for (off = 0; off < len; off += 4096) {
		mem[off] = 1;
		if (off > bytes && !(off & (4 * 4096 - 1)))
			usleep(CREEP_US);
	}
	pause();
	_exit(0);
}

/*
 * Keep a creeping hog alive in @cgroup: start it again whenever the OOM
 * killer takes it, until SIGTERM.  Exits with the number of hogs killed,
 * at most 255.
 */
static pid_t hogs_start(const char *cgroup, size_t bytes)
{
	pid_t pid = fork(), hog;
	int status, killed = 0;
	sigset_t set;

	if (pid)
		return pid;
	if (cg_create(cgroup) && errno != EEXIST)
		_exit(255);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	for (;;) {
		hog = fork();
		if (hog == 0) {
			sigprocmask(SIG_UNBLOCK, &set, NULL);
			if (cg_enter_current(cgroup))
				_exit(2);
			creep(bytes);
		}
		while (waitpid(hog, &status, WNOHANG) == 0) {
			struct timespec ts = { 0, 20000000 };

			if (sigtimedwait(&set, NULL, &ts) == SIGTERM) {
				kill(hog, SIGKILL);
				waitpid(hog, NULL, 0);
				_exit(killed > 254 ? 254 : killed);
			}
		}
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			tally->hogs_killed = ++killed;
		else
			_exit(255);
	}
}

/* Stop the hogs; how many the OOM killer took, -1 if they failed. */
static int hogs_stop(pid_t pid)
{
	int status;

	kill(pid, SIGTERM);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) == 255)
		return -1;
	return WEXITSTATUS(status);
}

static bool count(enum op op, int ret)
{
	tally->calls[op]++;
	if (ret >= 0)
		return true;
	if (errno == ENOMEM || errno == ENFILE)
		tally->enomem[op]++;
	else {
		tally->other[op]++;
		tally->last_other = errno;
	}
	return false;
}

/* A block that says which file it is and checks itself. */
static void block_fill(char *buf, long seq)
{
	unsigned long sum = 0;
	int i;

	memset(buf, 0, BLOCK);
	snprintf(buf, 32, "seq %ld", seq);
	for (i = 32; i < BLOCK - 8; i++)
		buf[i] = (char)(seq * 31 + i);
	for (i = 0; i < BLOCK - 8; i++)
		sum = sum * 131 + (unsigned char)buf[i];
	memcpy(buf + BLOCK - 8, &sum, sizeof(sum));
}

static bool block_ok(const char *buf)
{
	unsigned long sum = 0, want;
	long seq;
	int i;

	if (sscanf(buf, "seq %ld", &seq) != 1)
		return false;
	for (i = 0; i < BLOCK - 8; i++)
		sum = sum * 131 + (unsigned char)buf[i];
	memcpy(&want, buf + BLOCK - 8, sizeof(want));
	return sum == want;
}

/* One file: create, write, fsync, rename into place; then housekeeping. */
static void write_one(long seq)
{
	char buf[BLOCK], tmp[PATH_MAX], dst[PATH_MAX], dir[PATH_MAX];
	int fd;

	snprintf(tmp, sizeof(tmp), MNT "/tmp.%ld", seq);
	snprintf(dst, sizeof(dst), MNT "/f.%ld", seq % SLOTS);
	fd = open(tmp, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (!count(OP_CREATE, fd))
		return;
	block_fill(buf, seq);
	if (count(OP_WRITE, write(fd, buf, BLOCK) == BLOCK ? 0 : -1) &&
	    count(OP_FSYNC, fsync(fd)) && count(OP_RENAME, rename(tmp, dst)))
		tally->files_placed++;
	close(fd);
	/* A failed step leaves the temporary file: remove it. */
	if (access(tmp, F_OK) == 0)
		count(OP_UNLINK, unlink(tmp));
	snprintf(dst, sizeof(dst), MNT "/f.%ld", (seq + SLOTS / 2) % SLOTS);
	if (access(dst, F_OK) == 0)
		count(OP_UNLINK, unlink(dst));
	if (seq % 8 == 0) {
		snprintf(dir, sizeof(dir), MNT "/d.%ld", seq);
		if (count(OP_MKDIR, mkdir(dir, 0755)))
			count(OP_RMDIR, rmdir(dir));
	}
}

/*
 * Write for WRITE_SECONDS, and on until the pressure has been there (a hog
 * OOM-killed): under global OOM reclaim can slow the hog's creep a lot.
 */
static int writer_main(const char *cgroup, void *arg)
{
	time_t start = time(NULL), now;
	long seq;

	prctl(PR_SET_NAME, "ext4-writer");
	set_oom_score_adj(-1000);
	for (seq = 0;; seq++) {
		now = time(NULL);
		if (now >= start + WRITE_SECONDS_MAX ||
		    (now >= start + WRITE_SECONDS && tally->hogs_killed))
			break;
		write_one(seq);
	}
	return 0;
}

/* Every file in place is whole and checks out; -1 if one does not. */
static long verify_files(void)
{
	char path[PATH_MAX], buf[BLOCK];
	long good = 0;
	int i, fd;

	for (i = 0; i < SLOTS; i++) {
		snprintf(path, sizeof(path), MNT "/f.%d", i);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		if (read(fd, buf, BLOCK) != BLOCK || !block_ok(buf)) {
			ksft_print_msg("%s is torn\n", path);
			close(fd);
			return -1;
		}
		close(fd);
		good++;
	}
	return good;
}

/* A fresh image, mounted on MNT with a journal, data=ordered. */
static bool fs_create(void)
{
	return ext4_image_mount(IMAGE, IMAGE_BYTES, 4096, MNT);
}

/* Is MNT mounted read-write? */
static bool fs_rw(void)
{
	struct statvfs st;

	return !statvfs(MNT, &st) && !(st.f_flag & ST_RDONLY);
}

/* Unmount and check the image: e2fsck -fn's exit status. */
static int fs_check(void)
{
	int ret;

	if (umount(MNT))
		ksft_print_msg("umount: %s\n", strerror(errno));
	ret = run_program((const char *const[]){ "e2fsck", "-fn", IMAGE, NULL },
			  true);
	unlink(IMAGE);
	return ret;
}

static void tally_report(const char *what)
{
	char line[512];
	size_t used = 0;
	int op;

	for (op = 0; op < OPS; op++)
		used += snprintf(line + used, sizeof(line) - used,
				 "%s%s %ld/%ld/%ld", op ? ", " : "",
				 op_names[op], tally->calls[op],
				 tally->enomem[op], tally->other[op]);
	ksft_print_msg("%s: calls/ENOMEM/other by op: %s; %ld files fsync'd and renamed into place\n",
		       what, line, tally->files_placed);
}

/*
 * Run the writer in @cgroup at 0 while a hog in @hog_cgroup takes
 * @hog_bytes, then check the filesystem.
 */
static int run_writer(const char *what, const char *cgroup,
		      const char *hog_cgroup, size_t hog_bytes)
{
	long enomem = 0, other = 0, good;
	int kmsg, errors, status, fsck, op, killed;
	pid_t writer, hogs;

	memset(tally, 0, sizeof(*tally));
	if (!fs_create())
		ksft_exit_fail_msg("cannot create and mount %s\n", IMAGE);
	kmsg = kmsg_mark();
	hogs = hogs_start(hog_cgroup, hog_bytes);
	writer = cg_run_nowait(cgroup, writer_main, NULL);
	if (writer < 0 || waitpid(writer, &status, 0) != writer)
		ksft_exit_fail_msg("the writer did not run\n");
	/*
	 * The kills the hog cgroup counted: a hog the OOM killer took just
	 * as the writer ended may not have been reaped by its keeper yet.
	 */
	killed = hogs_stop(hogs) < 0 ? -1 :
		 (int)cg_read_key_long(hog_cgroup, "memory.events", "oom_kill ");
	errors = kmsg_count(kmsg, "EXT4-fs", NULL);
	good = verify_files();
	for (op = 0; op < OPS; op++) {
		enomem += tally->enomem[op];
		other += tally->other[op];
	}
	tally_report(what);
	ksft_print_msg("%s: writer %s; EXT4-fs lines %d; read-write %s; %ld files verified; hogs OOM-killed %d\n",
		       what, WIFEXITED(status) ? "exited" : "was killed",
		       errors, fs_rw() ? "yes" : "no", good, killed);
	if (other)
		ksft_print_msg("%s: last other error: %s\n", what,
			       strerror(tally->last_other));
	fsck = fs_check();
	ksft_print_msg("%s: e2fsck -fn exit status %d; %ld ENOMEM\n", what,
		       fsck, enomem);
	/* The pressure was there: the OOM killer took hogs all along. */
	return WIFEXITED(status) && !WEXITSTATUS(status) && killed > 0 &&
	       !errors && !other && good > 0 && !fsck ? KSFT_PASS : KSFT_FAIL;
}

static int test_memcg_oom_limit0_ext4_intact(void)
{
	char *parent = memcg_parent(root, "ext4-memcg", MEMCG_MAX), *writer, *hog;
	int ret;

	writer = cg_name(parent, "writer");
	hog = cg_name(parent, "hog");
	if (cg_create(writer) || alloc_retries_set(writer, "0"))
		ksft_exit_fail_msg("cannot set up %s\n", writer);
	ret = run_writer("memcg OOM", writer, hog, MEMCG_MAX * 3 / 4);
	cg_destroy(writer);
	cg_destroy(hog);
	cg_destroy(parent);
	free(writer);
	free(hog);
	free(parent);
	return ret;
}

static int test_global_oom_limit0_ext4_intact(void)
{
	char *writer = cg_name(root, "ext4-global");
	char *hog = cg_name(root, "ext4-global-hog");
	int ret;

	cg_destroy(writer);
	if (cg_create(writer) || alloc_retries_set(writer, "0"))
		ksft_exit_fail_msg("cannot set up %s\n", writer);
	/*
	 * Without the page cache the earlier tests left, which reclaim would
	 * thrash for minutes on the debug kernel before the OOM killer came:
	 * the hog's share is then the guest's free memory.
	 */
	sync();
	if (write_file_errno("/proc/sys/vm/drop_caches", "3", 1))
		ksft_exit_fail_msg("drop_caches: %s\n", strerror(errno));
	ret = run_writer("global OOM", writer, hog, hog_bytes_for_pressure());
	cg_destroy(writer);
	cg_destroy(hog);
	free(writer);
	free(hog);
	return ret;
}

static const struct test_case tests[] = {
	TEST_CASE(test_memcg_oom_limit0_ext4_intact),
	TEST_CASE(test_global_oom_limit0_ext4_intact),
};

int main(int argc, char **argv)
{
	root = test_cgroup_root();
	tally = mmap(NULL, sizeof(*tally), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (tally == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	run_tests(tests, ARRAY_SIZE(tests), argc, argv);
}
