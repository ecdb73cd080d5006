// SPDX-License-Identifier: GPL-2.0
/*
 * An OOM storm: ROUNDS rounds (100 unless ALLOC_STORM_ROUNDS says, 10 to
 * 1000) of mixed pressure in one boot, memcg OOM and global OOM in turn,
 * with every kind of change the series must survive made while the
 * pressure is on.
 *
 * Under the storm's cgroup S (beside the test's own):
 * - slots at-0, at-3, at-max: a policy that stays, a worker in
 *   SLOT/work, in memcg rounds SLOT's memory.max and a hog in SLOT/hog;
 * - slot rewritten: the same, its policy rewritten every STEP_MS;
 * - move-0 and move-max: one worker moved between them every STEP_MS;
 * - slot eph-R: created in round R at 0, 3 or max, its tasks killed
 *   while they allocate, removed at the end of the round;
 * - the durable writer (durable_writer) in writer/w at 0 on the data disk
 *   (ALLOC_TEST_DATA_DISK), for the whole storm; writer/hog in memcg
 *   rounds;
 * - in global rounds a hog in S/hog that takes the guest's free memory,
 *   started again whenever the OOM killer takes it;
 * - every tenth round the lockup reproducer (test_oom_lockup), one of its
 *   cases with a cgroup limit, in S/lockup-runner.
 *
 * A worker pins pipe buffers, a page per write(), up to WORKER_BYTES and
 * lets them go, and forks, counting what failed with ENOMEM (or ENFILE,
 * pipe2()'s word for it) and what failed otherwise.
 *
 * What must hold at the end (the kernel log's WARN, BUG, hung task and
 * soft lockup lines are the reporter's):
 * - every round ran, and every lockup run held its case;
 * - every round was under OOM: its OOM killer killed (a round goes on past
 *   its time until it has, for up to ROUND_CAP_MS), and it moved the
 *   moved worker at least once;
 * - the trace events, memory.events and /proc/vmstat agree: per cgroup,
 *   for the moved worker's pair together, for each removed cgroup (read
 *   once its tasks were gone), and in total;
 * - tasks saw what was counted: nothing at max, no more ENOMEM than
 *   alloc_retry_fail elsewhere, ENOMEM at 0, no other error;
 * - once every cgroup is removed, nr_dying_descendants is back to 0:
 *   nothing is left charged to a removed cgroup;
 * - the writer's durable files are on disk, whole; the file system was
 *   never remounted read-only and e2fsck -fn finds it clean.
 * Each round prints a progress line; the end, a table per cgroup.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_util.h"
#include "test_util.h"

#define MIB		(1L << 20)
#define PAGE		4096
#define ROUNDS		100
/* A global round refills the guest after each kill: it needs longer. */
#define ROUND_MS	3000
#define GLOBAL_ROUND_MS	6000
#define ROUND_CAP_MS	120000	/* a round without an OOM kill by then fails */
#define STEP_MS		50
#define SLOW_S		10	/* a round's call (a hog's fill too) said if longer */
#define WORKER_BYTES	(16 * MIB)
#define MEMCG_MAX	"24M"
#define MEMCG_HOG	(16 * MIB)
/* The writer's memcg rounds: its hog leaves it less than two files' room. */
#define WRITER_MAX	"48M"
#define WRITER_HOG	(48 * MIB - 384 * 1024)
#define DATA_DIR	"/run/storm-data"
/* The cgroups watched: 15, and 2 a round. */
#define MAX_IDS		(16 + 2 * 1000)

/* The lockup cases the storm runs in turn: those with a cgroup limit. */
static const char *const lockup_cases[] = {
	"test_memcg_oom_cgroup_limit_0_kills_nobody",
	"test_memcg_oom_cgroup_limit_n_ends_without_spree",
	"test_global_oom_cgroup_limit_0_holder_kills_nobody",
	"test_global_oom_cgroup_limit_1_holder_never_kills_past_the_victim",
};

/* What a worker saw, in memory shared with the storm. */
struct seen {
	long calls, enomem, other;
};

/* A cgroup the storm watches: a worker's leaf, a hog's, the writer's. */
struct watched {
	char name[32];		/* under S */
	unsigned long long id;	/* cgroup_id(), as the trace names it */
	long trace;		/* trace events with that id */
	long events;		/* memory.events.local alloc_retry_fail */
	long oom_kill;		/* memory.events.local oom_kill */
	struct seen *seen;	/* its worker's, or NULL */
	const char *policy;	/* "0", "3", "max" or "rewritten" */
};

static const char *bin_dir;
static char *storm;			/* S */
static struct watched watched[MAX_IDS];
static int nr_watched;
static struct seen *seen_pool;
static int nr_seen;
static long trace_total, trace_unknown;
static int rounds, rounds_done, lockup_runs, lockup_held;
static pid_t writer = -1;
static bool have_disk;
static int failures;			/* things that went wrong: failed() */

/* Something went wrong that a case must fail for: say it, count it. */
static void failed(const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ksft_print_msg("%s\n", msg);
	failures++;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static char *under(const char *name)
{
	return cg_name(storm, name);
}

/* Run the shell command @cmd, its output as diagnostics: its status. */
static int run_diag(const char *cmd)
{
	char line[512];
	FILE *f;

	fflush(stdout);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		ksft_print_msg("  %s", line);
	return pclose(f);
}

static unsigned long long cgroup_id(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		ksft_exit_fail_msg("stat %s: %s\n", path, strerror(errno));
	return st.st_ino;
}

static struct watched *watch(const char *name, const char *policy,
			     bool worker)
{
	struct watched *w = &watched[nr_watched++];
	char *path = under(name);

	if (nr_watched > MAX_IDS)
		ksft_exit_fail_msg("more than %d cgroups\n", MAX_IDS);
	snprintf(w->name, sizeof(w->name), "%s", name);
	w->id = cgroup_id(path);
	w->policy = policy;
	w->seen = worker ? &seen_pool[nr_seen++] : NULL;
	free(path);
	return w;
}

/* Read @w's memory.events.local: it is final once its tasks are gone. */
static void watched_read(struct watched *w)
{
	char *path = under(w->name);

	w->events = cg_event(path, "memory.events.local", "alloc_retry_fail");
	w->oom_kill = cg_event(path, "memory.events.local", "oom_kill");
	free(path);
}

/* The trace events since the last call, by cgroup: trace_pipe consumes. */
static void trace_drain(void)
{
	static char carry[1024];
	static size_t carried;
	char buf[8192], *line, *nl, *p;
	unsigned long long id;
	ssize_t r;
	int fd, i;

	fd = open(TRACE "/trace_pipe", O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		ksft_exit_fail_msg("trace_pipe: %s\n", strerror(errno));
	while ((r = read(fd, buf, sizeof(buf) - 1)) > 0) {
		buf[r] = '\0';
		for (line = buf; (nl = strchr(line, '\n')); line = nl + 1) {
			*nl = '\0';
			if (carried) {
				strncat(carry, line, sizeof(carry) - carried - 1);
				p = carry;
			} else {
				p = line;
			}
			p = strstr(p, "alloc_retry_fail: cgroup_id=");
			if (p && sscanf(p, "alloc_retry_fail: cgroup_id=%llu", &id) == 1) {
				trace_total++;
				for (i = 0; i < nr_watched && watched[i].id != id; i++)
					;
				if (i < nr_watched)
					watched[i].trace++;
				else
					trace_unknown++;
			}
			carried = 0;
			carry[0] = '\0';
		}
		carried = strlen(line);
		if (carried >= sizeof(carry))
			carried = 0;
		memcpy(carry, line, carried);
		carry[carried] = '\0';
	}
	close(fd);
}

/* A worker's loop, in @cgroup, until SIGTERM or SIGKILL. */
static void worker_main(const char *cgroup, struct seen *seen)
{
	int pipes[64][2], nr = 0, i;
	long pinned = 0;
	static char page[PAGE];
	pid_t pid;

	prctl(PR_SET_NAME, "storm-worker");
	set_oom_score_adj(0);
	if (cg_enter_current(cgroup))
		_exit(2);
	memset(page, 1, sizeof(page));
	for (;;) {
		int ret = 0;

		if (pinned >= WORKER_BYTES || nr == 64) {
			for (i = 0; i < nr; i++) {
				close(pipes[i][0]);
				close(pipes[i][1]);
			}
			nr = 0;
			pinned = 0;
			seen->calls++;
			pid = fork();
			if (pid == 0)
				_exit(0);
			if (pid > 0)
				waitpid(pid, NULL, 0);
			else
				ret = errno;
		} else if (nr == 0 || pinned >= (long)nr * MIB) {
			seen->calls++;
			if (pipe2(pipes[nr], O_NONBLOCK))
				ret = errno;
			else if (fcntl(pipes[nr][1], F_SETPIPE_SZ, MIB) < 0) {
				ret = errno;
				close(pipes[nr][0]);
				close(pipes[nr][1]);
			} else {
				nr++;
			}
		} else {
			seen->calls++;
			if (write(pipes[nr - 1][1], page, PAGE) == PAGE)
				pinned += PAGE;
			else
				ret = errno;
		}
		if (ret == ENOMEM || ret == ENFILE) {
			seen->enomem++;
			/* Let go, as a service would, and start over. */
			pinned = WORKER_BYTES;
		} else if (ret) {
			seen->other++;
			ksft_print_msg("worker in %s: %s\n", cgroup, strerror(ret));
			_exit(3);
		}
	}
}

static pid_t worker_start(struct watched *w)
{
	char *path = under(w->name);
	pid_t pid = fork();

	if (pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (pid == 0)
		worker_main(path, w->seen);
	free(path);
	return pid;
}

/*
 * Create @name under S with @policy (NULL: the default); a @parent gives
 * its children the memory controller, so that each is a memory cgroup
 * of its own, counted and traced as such.
 */
static void mkcg(const char *name, const char *policy, bool parent)
{
	char *path = under(name);

	if (cg_create(path))
		ksft_exit_fail_msg("mkdir %s: %s\n", path, strerror(errno));
	if (policy && alloc_retries_set(path, policy))
		ksft_exit_fail_msg("%s: memory.alloc_retries %s\n", path, policy);
	if (parent && cg_write(path, "cgroup.subtree_control", "+memory"))
		ksft_exit_fail_msg("%s: +memory: %s\n", path, strerror(errno));
	free(path);
}

static void set_max(const char *name, const char *max)
{
	char *path = under(name);

	if (cg_write(path, "memory.max", (char *)max))
		failed("%s: memory.max %s: %s", path, max, strerror(errno));
	free(path);
}

static void destroy(const char *name)
{
	char *path = under(name);

	if (cg_destroy(path))
		failed("rmdir %s: %s", path, strerror(errno));
	free(path);
}

/* Kill and reap @pids: each must end by SIGKILL, ours or the OOM killer's. */
static void wait_all(const pid_t *pids, int n)
{
	int i, status;

	for (i = 0; i < n; i++) {
		if (pids[i] <= 0)
			continue;
		kill(pids[i], SIGKILL);
		if (waitpid(pids[i], &status, 0) != pids[i] ||
		    !WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
			failed("task %d ended otherwise (status 0x%x)", pids[i], status);
	}
}

/* Kill every task of @name (cgroup.kill) and wait until it is empty. */
static void kill_all(const char *name)
{
	char *path = under(name);
	int i;

	cg_write(path, "cgroup.kill", "1");
	for (i = 0; i < 3000 && cg_read_strstr(path, "cgroup.events", "populated 0"); i++)
		sleep_ms(10);
	if (i == 3000) {
		failed("%s: still populated 30 s after cgroup.kill", path);
		cg_say_tasks(path);
	}
	free(path);
}

/* The slots with a worker and, in memcg rounds, a hog. */
static const char *const slot_names[] = { "at-0", "at-3", "at-max", "rewritten" };
static const char *const slot_policy[] = { "0", "3", "max", "0" };
static struct watched *slot_work[4], *movers[2], *writer_w;
/* The policies of the ephemeral slots, in turn. */
static const char *const eph_policies[] = { "0", "3", "max" };

/*
 * Start a hog of @bytes in @name unless *@pid is one still alive; a hog
 * the OOM killer took (SIGKILL) is reaped.  A hog killed while it fills
 * is tried again at the next step.
 */
static void hog_again(pid_t *pid, const char *name, size_t bytes)
{
	char *path;
	int status;
	double start, took;

	if (*pid > 0 && waitpid(*pid, &status, WNOHANG) == 0)
		return;
	if (*pid > 0 && (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL))
		failed("hog %d ended otherwise (status 0x%x)", *pid, status);
	path = under(name);
	start = now_s();
	*pid = hog_start(path, bytes);
	/* The round waits while a hog fills: say when that is long. */
	took = now_s() - start;
	if (took > SLOW_S)
		ksft_print_msg("%s: the hog %s after %.1f s\n", path,
			       *pid > 0 ? "was full" : "died filling", took);
	free(path);
}

/*
 * A call of a round's step that took more than SLOW_S: said, as the round
 * waited on it.  Started at @since (now_s()).
 */
static void say_slow(double since, const char *what)
{
	double took = now_s() - since;

	if (took > SLOW_S)
		ksft_print_msg("%s took %.1f s\n", what, took);
}

static void round_run(int r)
{
	static const char *const rewrites[] = { "0", "3", "max", "1" };
	bool memcg = r % 2;
	char eph[32], work[48], hogcg[48], hog_names[6][48], *path, *dst;
	struct watched *eph_work;
	pid_t pids[8], hogs[6], global_hog = -1, mover;
	int i, nr = 0, nr_hogs = 0, step, moves = 0;
	long kills_before, kills, fails_before, round_ms;
	double start, call;

	fails_before = vmstat("alloc_retry_fail");
	kills_before = cg_event(storm, "memory.events", "oom_kill");
	snprintf(eph, sizeof(eph), "eph-%d", r);
	mkcg(eph, eph_policies[r % 3], true);
	snprintf(work, sizeof(work), "%s/work", eph);
	mkcg(work, NULL, false);
	snprintf(hogcg, sizeof(hogcg), "%s/hog", eph);
	mkcg(hogcg, NULL, false);
	eph_work = watch(work, eph_policies[r % 3], true);
	watch(hogcg, eph_policies[r % 3], false);

	/* The pressure: per slot, or the guest's. */
	for (i = 0; i < 4; i++)
		set_max(slot_names[i], memcg ? MEMCG_MAX : "max");
	set_max(eph, memcg ? MEMCG_MAX : "max");
	set_max("writer", memcg ? WRITER_MAX : "max");
	if (memcg) {
		for (i = 0; i < 4; i++)
			snprintf(hog_names[nr_hogs++], sizeof(hog_names[0]),
				 "%s/hog", slot_names[i]);
		snprintf(hog_names[nr_hogs++], sizeof(hog_names[0]), "%s/hog", eph);
		snprintf(hog_names[nr_hogs++], sizeof(hog_names[0]), "writer/hog");
	}
	for (i = 0; i < nr_hogs; i++)
		hogs[i] = -1;
	/*
	 * By the clock (a step that refilled a hog takes longer than
	 * STEP_MS), and until the round's OOM killer has killed: a round
	 * without an OOM kill was not under OOM, whatever the clock says.
	 */
	start = now_s();
	for (step = 0;; step++) {
		round_ms = (now_s() - start) * 1000;
		call = now_s();
		kills = cg_event(storm, "memory.events", "oom_kill") - kills_before;
		say_slow(call, "reading S's memory.events");
		if (round_ms >= ROUND_CAP_MS ||
		    (round_ms >= (memcg ? ROUND_MS : GLOBAL_ROUND_MS) && kills))
			break;
		/* A hog the OOM killer took is back at once: the pressure stays. */
		for (i = 0; i < nr_hogs; i++)
			hog_again(&hogs[i], hog_names[i],
				  strcmp(hog_names[i], "writer/hog") ? MEMCG_HOG : WRITER_HOG);
		if (!memcg)
			hog_again(&global_hog, "hog", hog_bytes_for_pressure());
		/* The workers come once the hogs hold their memory. */
		if (step == 0) {
			call = now_s();
			for (i = 0; i < 4; i++)
				pids[nr++] = worker_start(slot_work[i]);
			pids[nr++] = worker_start(eph_work);
			mover = pids[nr++] = worker_start(movers[r % 2]);
			say_slow(call, "starting the workers");
		}
		path = under("rewritten");
		call = now_s();
		if (alloc_retries_set(path, rewrites[step % 4]))
			failed("%s: memory.alloc_retries %s", path, rewrites[step % 4]);
		say_slow(call, "rewriting memory.alloc_retries");
		free(path);
		dst = under(movers[(r + step + 1) % 2]->name);
		call = now_s();
		/* It may have been OOM-killed at max: then it stays dead. */
		if (!cg_enter(dst, mover))
			moves++;
		else if (errno != ESRCH)
			failed("moving %d to %s: %s", mover, dst, strerror(errno));
		say_slow(call, "moving the worker");
		free(dst);
		call = now_s();
		sleep_ms(STEP_MS);
		say_slow(call, "the step's sleep");
	}

	/* The ephemeral slot goes with its tasks still allocating. */
	call = now_s();
	kill_all(eph);
	watched_read(eph_work);
	watched_read(eph_work + 1);
	wait_all(pids, nr);
	wait_all(hogs, nr_hogs);
	wait_all(&global_hog, 1);
	say_slow(call, "ending the round's tasks");
	destroy(work);
	snprintf(hogcg, sizeof(hogcg), "%s/hog", eph);
	destroy(hogcg);
	destroy(eph);
	trace_drain();
	kills = cg_event(storm, "memory.events", "oom_kill") - kills_before;
	ksft_print_msg("round %d/%d, %s OOM, %.1f s: OOM kills %+ld, alloc_retry_fail %+ld (%ld in the trace so far), %d moves; %s at %s removed\n",
		       r + 1, rounds, memcg ? "memcg" : "global", now_s() - start,
		       kills, vmstat("alloc_retry_fail") - fails_before,
		       trace_total, moves, eph, eph_policies[r % 3]);
	if (!kills)
		failed("round %d: no OOM kill in %d s", r + 1, ROUND_CAP_MS / 1000);
	if (!moves)
		failed("round %d: the moved worker was never moved", r + 1);
}

/* The lockup reproducer, one case, in S/lockup-runner; the writer waits. */
static void lockup_run(int r)
{
	const char *c = lockup_cases[(r / 10) % ARRAY_SIZE(lockup_cases)];
	char *runner = under("lockup-runner");
	char cmd[2 * PATH_MAX + 256];
	int i, status;

	/*
	 * test_oom_lockup empties the trace: take what is there first, with
	 * the writer stopped (which it is only once back in user mode).
	 */
	if (writer > 0) {
		kill(writer, SIGSTOP);
		for (i = 0; i < 1000 && task_state(writer) != 'T'; i++)
			sleep_ms(10);
		if (i == 1000)
			failed("the writer did not stop in 10 s");
	}
	trace_drain();
	/*
	 * Its TAP as diagnostics of ours; no runs.json (on tmpfs it would
	 * keep its cgroups charged).
	 */
	snprintf(cmd, sizeof(cmd),
		 "echo $$ > %s/cgroup.procs && exec env -u ALLOC_TEST_RESULTS ALLOC_LOCKUP_REPEAT=1 %s/test_oom_lockup %s 2>&1",
		 runner, bin_dir, c);
	status = run_diag(cmd);
	lockup_runs++;
	if (status == 0)
		lockup_held++;
	else
		failed("round %d: the lockup case %s did not hold (status 0x%x)",
		       r + 1, c, status);
	trace_drain();
	if (writer > 0)
		kill(writer, SIGCONT);
	free(runner);
}

/* The writer's result comes through a pipe: a file on tmpfs it wrote
 * would stay charged to its cgroup. */
static int writer_out = -1;

static void writer_start(const char *dev)
{
	char *path, prog[PATH_MAX];
	int out[2];

	mkdir(DATA_DIR, 0755);
	if (mount(dev, DATA_DIR, "ext4", 0, NULL))
		ksft_exit_fail_msg("mount %s: %s\n", dev, strerror(errno));
	have_disk = true;
	mkdir(DATA_DIR "/files", 0755);
	snprintf(prog, sizeof(prog), "%s/durable_writer", bin_dir);
	path = under("writer/w");
	if (pipe(out))
		ksft_exit_fail_msg("pipe: %s\n", strerror(errno));
	writer = fork();
	if (writer == 0) {
		set_oom_score_adj(0);
		if (cg_enter_current(path) || dup2(out[1], STDOUT_FILENO) < 0)
			_exit(2);
		execl(prog, prog, "write", DATA_DIR "/files", "-", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	writer_out = out[0];
	free(path);
}

/* On the way out, whatever went wrong: no writer, no mounted data disk. */
static void writer_gone(void)
{
	if (writer > 0) {
		kill(writer, SIGKILL);
		waitpid(writer, NULL, 0);
		writer = -1;
	}
	umount(DATA_DIR);
}

static void setup(void)
{
	char name[32];
	int i;

	storm = cg_name(test_cgroup_root(), "storm");
	cg_destroy(storm);
	if (cg_create(storm) || cg_write(storm, "cgroup.subtree_control", "+memory"))
		ksft_exit_fail_msg("cannot create %s\n", storm);
	seen_pool = mmap(NULL, MAX_IDS * sizeof(*seen_pool),
			 PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (seen_pool == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	for (i = 0; i < 4; i++) {
		mkcg(slot_names[i], slot_policy[i], true);
		snprintf(name, sizeof(name), "%s/work", slot_names[i]);
		mkcg(name, NULL, false);
		slot_work[i] = watch(name, i == 3 ? "rewritten" : slot_policy[i], true);
		snprintf(name, sizeof(name), "%s/hog", slot_names[i]);
		mkcg(name, NULL, false);
		watch(name, slot_policy[i], false);
	}
	mkcg("move-0", "0", false);
	mkcg("move-max", "max", false);
	movers[0] = watch("move-0", "moved", true);
	movers[1] = watch("move-max", "moved", false);
	movers[1]->seen = movers[0]->seen;
	mkcg("hog", NULL, false);
	watch("hog", "max", false);
	mkcg("writer", "0", true);
	mkcg("writer/w", NULL, false);
	mkcg("writer/hog", NULL, false);
	writer_w = watch("writer/w", "0", false);
	watch("writer/hog", "0", false);
	mkcg("lockup-runner", NULL, false);
}

/* ---- the cases, on what the storm recorded ---- */

static long start_vmstat, start_events;
static const char *data_dev;

static int test_storm_rounds_ran(void)
{
	int r;

	for (r = 0; r < rounds; r++) {
		round_run(r);
		rounds_done++;
		if (r % 10 == 9)
			lockup_run(r);
	}
	ksft_print_msg("%d of %d rounds, %d of %d lockup runs held\n",
		       rounds_done, rounds, lockup_held, lockup_runs);
	return !failures && rounds_done == rounds &&
	       lockup_held == lockup_runs ? KSFT_PASS : KSFT_FAIL;
}

static int test_storm_writer_stopped_cleanly(void)
{
	char line[512], writer_result[1024] = "no result\n", path[PATH_MAX];
	const char *results;
	bool rw = false;
	FILE *f;
	int status;

	if (!have_disk) {
		ksft_print_msg("no data disk (ALLOC_TEST_DATA_DISK)\n");
		return KSFT_FAIL;
	}
	kill(writer, SIGTERM);
	waitpid(writer, &status, 0);
	writer = -1;
	trace_drain();
	f = fdopen(writer_out, "r");
	if (f) {
		if (!fgets(writer_result, sizeof(writer_result), f))
			snprintf(writer_result, sizeof(writer_result), "no result\n");
		fclose(f);
	}
	ksft_print_msg("the writer: %s", writer_result);
	results = getenv("ALLOC_TEST_RESULTS");
	snprintf(path, sizeof(path), "%s/storm-writer.json",
		 results ? results : "/run/results");
	f = fopen(path, "w");
	if (f) {
		fputs(writer_result, f);
		fclose(f);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		ksft_print_msg("the writer ended with status 0x%x\n", status);
		return KSFT_FAIL;
	}
	/* Its calls failed only for want of memory: no EIO, no ENOSPC. */
	if (!strstr(writer_result, "\"failed_not_enomem\": 0,")) {
		ksft_print_msg("the writer saw errors other than ENOMEM\n");
		return KSFT_FAIL;
	}
	/* Never remounted read-only: still rw after the storm. */
	f = fopen("/proc/mounts", "r");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, " " DATA_DIR " ext4 rw,"))
			rw = true;
	if (f)
		fclose(f);
	if (!rw)
		ksft_print_msg("%s is no longer mounted read-write\n", DATA_DIR);
	return rw ? KSFT_PASS : KSFT_FAIL;
}

static int test_storm_counts_agree(void)
{
	long s_events, vm, pair_trace = 0, pair_events = 0;
	bool ok = true;
	int i, overrun;

	for (i = 0; i < nr_watched; i++) {
		struct watched *w = &watched[i];

		if (strncmp(w->name, "eph-", 4))
			watched_read(w);
		if (w == movers[0] || w == movers[1]) {
			pair_trace += w->trace;
			pair_events += w->events;
		} else if (w->trace != w->events) {
			ksft_print_msg("%s: %ld trace events, alloc_retry_fail %ld\n",
				       w->name, w->trace, w->events);
			ok = false;
		}
	}
	if (pair_trace != pair_events) {
		ksft_print_msg("move-0 and move-max: %ld trace events, alloc_retry_fail %ld\n",
			       pair_trace, pair_events);
		ok = false;
	}
	/*
	 * An event the ring buffer dropped would look like a miscount: grep
	 * must find no CPU with an overrun (exit status 1).
	 */
	overrun = run_diag("grep -h '^overrun: [1-9]' " TRACE "/per_cpu/cpu*/stats");
	if (!WIFEXITED(overrun) || WEXITSTATUS(overrun) != 1) {
		ksft_print_msg("the trace buffer overran: events were lost\n");
		ok = false;
	}
	s_events = cg_event(storm, "memory.events", "alloc_retry_fail") - start_events;
	vm = vmstat("alloc_retry_fail") - start_vmstat;
	ksft_print_msg("in all: %ld trace events (%ld in cgroups of the lockup runs), alloc_retry_fail %ld in %s's memory.events, %ld in /proc/vmstat\n",
		       trace_total, trace_unknown, s_events, storm, vm);
	return ok && trace_total == s_events && s_events == vm ?
	       KSFT_PASS : KSFT_FAIL;
}

static int test_storm_tasks_saw_what_was_counted(void)
{
	long enomem_at_0 = 0;
	bool ok = true;
	int i;

	for (i = 0; i < nr_watched; i++) {
		struct watched *w = &watched[i];
		long events = w->events;

		if (!w->seen || w == movers[1])
			continue;
		if (w == movers[0])
			events += movers[1]->events;
		if (w->seen->other) {
			ksft_print_msg("%s: %ld calls failed otherwise\n", w->name, w->seen->other);
			ok = false;
		}
		if (!strcmp(w->policy, "max") && (w->seen->enomem || events)) {
			ksft_print_msg("%s at max: %ld ENOMEM seen, alloc_retry_fail %ld\n",
				       w->name, w->seen->enomem, events);
			ok = false;
		}
		if (w->seen->enomem > events) {
			ksft_print_msg("%s: %ld ENOMEM seen, alloc_retry_fail %ld\n",
				       w->name, w->seen->enomem, events);
			ok = false;
		}
		if (!strcmp(w->policy, "0"))
			enomem_at_0 += w->seen->enomem;
	}
	if (!enomem_at_0 || slot_work[0]->events <= 0) {
		ksft_print_msg("no ENOMEM at 0 (at-0/work: %ld): no pressure reached it\n",
			       slot_work[0]->events);
		ok = false;
	}
	if (have_disk && writer_w->events <= 0) {
		ksft_print_msg("the writer at 0 never met its limit\n");
		ok = false;
	}
	return ok ? KSFT_PASS : KSFT_FAIL;
}

static void summary(void)
{
	int i, p;

	ksft_print_msg("%-20s %-9s %10s %10s %10s %10s %8s\n", "cgroup", "policy",
		       "calls", "ENOMEM", "retry_fail", "trace", "oom_kill");
	for (i = 0; i < nr_watched; i++) {
		struct watched *w = &watched[i];

		/* The removed ones, by policy, below. */
		if (!strncmp(w->name, "eph-", 4))
			continue;
		ksft_print_msg("%-20s %-9s %10ld %10ld %10ld %10ld %8ld\n",
			       w->name, w->policy,
			       w->seen && w != movers[1] ? w->seen->calls : 0,
			       w->seen && w != movers[1] ? w->seen->enomem : 0,
			       w->events, w->trace, w->oom_kill);
	}
	for (p = 0; p < 3; p++) {
		long calls = 0, enomem = 0, ev = 0, tr = 0, kills = 0;

		for (i = 0; i < nr_watched; i++) {
			struct watched *w = &watched[i];

			if (strncmp(w->name, "eph-", 4) ||
			    strcmp(w->policy, eph_policies[p]))
				continue;
			calls += w->seen ? w->seen->calls : 0;
			enomem += w->seen ? w->seen->enomem : 0;
			ev += w->events;
			tr += w->trace;
			kills += w->oom_kill;
		}
		ksft_print_msg("%-20s %-9s %10ld %10ld %10ld %10ld %8ld\n",
			       "eph-* (removed)", eph_policies[p], calls,
			       enomem, ev, tr, kills);
	}
}

static int test_storm_no_dying_cgroups(void)
{
	long dying = -1, charged = -1;
	int i, failures_before = failures;

	summary();
	for (i = 0; i < 4; i++) {
		char name[32];

		snprintf(name, sizeof(name), "%s/work", slot_names[i]);
		destroy(name);
		snprintf(name, sizeof(name), "%s/hog", slot_names[i]);
		destroy(name);
		destroy(slot_names[i]);
	}
	destroy("move-0");
	destroy("move-max");
	destroy("hog");
	destroy("lockup-runner");
	/* The lockup reproducer's system service stand-in. */
	destroy("neighbour");
	/* The data disk's page cache is charged to writer/w. */
	if (have_disk && umount(DATA_DIR))
		failed("umount %s: %s", DATA_DIR, strerror(errno));
	destroy("writer/w");
	destroy("writer/hog");
	destroy("writer");
	for (i = 0; i < 60; i++) {
		write_file_errno("/proc/sys/vm/drop_caches", "3", 1);
		dying = cg_read_key_long(storm, "cgroup.stat", "nr_dying_descendants ");
		charged = cg_read_long(storm, "memory.current");
		if (!dying)
			break;
		sleep(1);
	}
	/*
	 * A removed cgroup's memory cgroup lives on, dying, for as long as
	 * any page is charged to it: none may be left.  What S still has
	 * charged is then objects reparented to it, shown for the record.
	 */
	ksft_print_msg("%s: nr_dying_descendants %ld, memory.current %ld\n",
		       storm, dying, charged);
	if (charged) {
		char cmd[PATH_MAX + 64];

		snprintf(cmd, sizeof(cmd),
			 "grep -E '^(anon|file|kernel|shmem|percpu|slab|sock) ' %s/memory.stat",
			 storm);
		run_diag(cmd);
	}
	return !dying && failures == failures_before ? KSFT_PASS : KSFT_FAIL;
}

static int test_storm_data_on_disk_intact(void)
{
	char cmd[PATH_MAX + 64];
	bool ok = true;

	if (!have_disk)
		return KSFT_FAIL;
	if (mount(data_dev, DATA_DIR, "ext4", MS_RDONLY, NULL)) {
		ksft_print_msg("mount %s: %s\n", data_dev, strerror(errno));
		return KSFT_FAIL;
	}
	ksft_print_msg("on disk, before the reboot:\n");
	snprintf(cmd, sizeof(cmd), "%s/durable_writer verify %s/files 2>&1",
		 bin_dir, DATA_DIR);
	if (run_diag(cmd)) {
		ksft_print_msg("durable_writer verify failed\n");
		ok = false;
	}
	if (umount(DATA_DIR))
		ok = false;
	snprintf(cmd, sizeof(cmd), "e2fsck -fn %s 2>&1", data_dev);
	if (run_diag(cmd)) {
		ksft_print_msg("e2fsck -fn %s: not clean\n", data_dev);
		ok = false;
	}
	return ok ? KSFT_PASS : KSFT_FAIL;
}

int main(int argc, char **argv)
{
	static const struct test_case tests[] = {
		TEST_CASE(test_storm_rounds_ran),
		TEST_CASE(test_storm_writer_stopped_cleanly),
		TEST_CASE(test_storm_counts_agree),
		TEST_CASE(test_storm_tasks_saw_what_was_counted),
		TEST_CASE(test_storm_no_dying_cgroups),
		TEST_CASE(test_storm_data_on_disk_intact),
	};
	const char *env = getenv("ALLOC_STORM_ROUNDS");
	static char dir[PATH_MAX];
	char *end;

	rounds = env ? strtol(env, &end, 10) : ROUNDS;
	if (env && (*end || rounds < 10 || rounds > 1000))
		ksft_exit_fail_msg("ALLOC_STORM_ROUNDS: not a count from 10 to 1000: \"%s\"\n", env);
	snprintf(dir, sizeof(dir), "%s", argv[0]);
	bin_dir = dirname(dir);
	set_oom_score_adj(-1000);
	/* Mounts tracefs if it is not; the event is on from the command line. */
	trace_start();
	setup();
	atexit(writer_gone);
	/*
	 * Every page the storm maps, charged to the storm's own cgroup: a
	 * page cache or shared page a child touched first would stay charged
	 * to the child's cgroup, dying, for as long as the storm maps it.
	 */
	memset(seen_pool, 0, MAX_IDS * sizeof(*seen_pool));
	if (mlockall(MCL_CURRENT))
		ksft_exit_fail_msg("mlockall: %s\n", strerror(errno));
	start_vmstat = vmstat("alloc_retry_fail");
	start_events = cg_event(storm, "memory.events", "alloc_retry_fail");
	data_dev = getenv("ALLOC_TEST_DATA_DISK");
	if (data_dev)
		writer_start(data_dev);
	/* Each case works on what the ones before it left: all, in order. */
	run_tests(tests, ARRAY_SIZE(tests), 1, argv);
}
