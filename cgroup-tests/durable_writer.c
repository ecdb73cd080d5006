// SPDX-License-Identifier: GPL-2.0
/*
 * Data on disk under a retry limit: a writer that makes files durable the
 * way careful programs do, and a verifier that checks that what it made
 * durable is there, whole.
 *
 *   durable_writer write DIR RESULT_JSON
 *	Until SIGTERM: write a file tmp.N (a header and a payload derived
 *	from N, checksummed), fsync it, rename it to fN, fsync DIR; keep the
 *	last KEEP files, unlinking older ones.  Any failed call is counted by
 *	call and errno, the file given up, and the loop goes on.  On SIGTERM,
 *	once the pressure is over: DIR/MANIFEST lists the files that are
 *	durable (fsync'd, renamed, the rename fsync'd, not unlinked), and
 *	RESULT_JSON (- for standard output) the counts.
 *   durable_writer verify DIR
 *	Every file MANIFEST lists reads back with its checksum, and every fN
 *	present (durable or not: an fN only ever appears after its fsync) is
 *	whole.  Prints the counts as JSON; exit status 0 when all hold.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAGIC		0x3152574c42525544ULL	/* "DURBLWR1" */
#define KEEP		64
#define MAX_PAYLOAD	(256 << 10)
#define MANIFEST	"MANIFEST"

struct header {
	uint64_t magic;
	uint64_t seq;
	uint32_t len;		/* payload bytes */
	uint32_t pad;
	uint64_t sum;		/* FNV-1a of the payload */
};

static volatile sig_atomic_t stop;
static char buf[sizeof(struct header) + MAX_PAYLOAD];

/* Failed calls, by call and errno. */
enum call { C_OPEN, C_WRITE, C_FSYNC, C_CLOSE, C_RENAME, C_FSYNC_DIR,
	    C_UNLINK, NR_CALLS };
static const char *const call_name[NR_CALLS] = {
	"open", "write", "fsync", "close", "rename", "fsync_dir", "unlink",
};
static long failed[NR_CALLS][135];
static long written, durable_total, unlinked;

static void on_term(int sig)
{
	stop = 1;
}

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (n--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h;
}

/* File @seq's contents in buf; returns its size. */
static size_t make_file(uint64_t seq)
{
	struct header *h = (struct header *)buf;
	unsigned char *payload = (unsigned char *)(h + 1);
	uint64_t x = seq * 0x9e3779b97f4a7c15ULL + 1;
	size_t i, len = 1 + (x >> 7) % MAX_PAYLOAD;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		payload[i] = x;
	}
	*h = (struct header){ .magic = MAGIC, .seq = seq, .len = len,
			      .sum = fnv1a(payload, len) };
	return sizeof(*h) + len;
}

static bool count_failure(enum call c)
{
	failed[c][errno < 135 ? errno : 0]++;
	return false;
}

static bool write_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return count_failure(C_WRITE);
		p += w;
		n -= w;
	}
	return true;
}

/*
 * Make @name durable with the @size bytes of buf, through tmp.@seq: true
 * if every call succeeded.  @renamed says whether @name may exist.
 */
static bool write_durably(int dir, const char *name, uint64_t seq,
			  size_t size, bool *renamed)
{
	char tmp[32];
	int fd;

	*renamed = false;
	snprintf(tmp, sizeof(tmp), "tmp.%08llu", (unsigned long long)seq);
	fd = openat(dir, tmp, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0)
		return count_failure(C_OPEN);
	if (!write_all(fd, buf, size) ||
	    (fsync(fd) && !count_failure(C_FSYNC))) {
		close(fd);
		unlinkat(dir, tmp, 0);
		return false;
	}
	if (close(fd)) {
		unlinkat(dir, tmp, 0);
		return count_failure(C_CLOSE);
	}
	if (renameat(dir, tmp, dir, name)) {
		count_failure(C_RENAME);
		unlinkat(dir, tmp, 0);
		return false;
	}
	*renamed = true;
	if (fsync(dir))
		return count_failure(C_FSYNC_DIR);
	return true;
}

static void result_write(const char *path, long durable_now, bool manifest)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
	long not_enomem = 0;
	int c, e;
	bool first = true;

	if (!f) {
		perror(path);
		exit(1);
	}
	for (c = 0; c < NR_CALLS; c++)
		for (e = 0; e < 135; e++)
			not_enomem += e == ENOMEM ? 0 : failed[c][e];
	fprintf(f, "{\"files_written\": %ld, \"durable\": %ld, \"unlinked\": %ld, \"durable_at_end\": %ld, \"manifest\": %s, \"failed_not_enomem\": %ld, \"failed_calls\": {",
		written, durable_total, unlinked, durable_now,
		manifest ? "true" : "false", not_enomem);
	for (c = 0; c < NR_CALLS; c++)
		for (e = 0; e < 135; e++) {
			if (!failed[c][e])
				continue;
			fprintf(f, "%s\"%s %s\": %ld", first ? "" : ", ",
				call_name[c], e ? strerrorname_np(e) : "other",
				failed[c][e]);
			first = false;
		}
	fprintf(f, "}}\n");
	if (fclose(f)) {
		perror(path);
		exit(1);
	}
}

static int do_write(const char *dirpath, const char *result)
{
	static uint64_t durable[KEEP];
	struct sigaction sa = { .sa_handler = on_term };
	int dir, n = 0, i, tries;
	uint64_t seq = 0;
	bool ok, renamed, manifest = false;
	char name[32];
	size_t size;
	FILE *m;

	sigaction(SIGTERM, &sa, NULL);
	dir = open(dirpath, O_RDONLY | O_DIRECTORY);
	if (dir < 0) {
		perror(dirpath);
		return 1;
	}
	while (!stop) {
		/* Room for the next file first: at most KEEP are promised. */
		if (n == KEEP) {
			snprintf(name, sizeof(name), "f%08llu",
				 (unsigned long long)durable[0]);
			if (unlinkat(dir, name, 0)) {
				count_failure(C_UNLINK);
				continue;
			}
			/* Unlinked: no longer promised, whether or not it lasts. */
			unlinked++;
			memmove(durable, durable + 1, --n * sizeof(*durable));
			if (fsync(dir))
				count_failure(C_FSYNC_DIR);
		}
		seq++;
		size = make_file(seq);
		snprintf(name, sizeof(name), "f%08llu", (unsigned long long)seq);
		ok = write_durably(dir, name, seq, size, &renamed);
		written += renamed;
		if (ok) {
			durable[n++] = seq;
			durable_total++;
		}
	}
	/* The pressure is over: the manifest must make it to disk. */
	for (tries = 0; tries < 10 && !manifest; tries++) {
		if (fchdir(dir) || !(m = fopen("MANIFEST.tmp", "w")))
			continue;
		for (i = 0; i < n; i++)
			fprintf(m, "%llu\n", (unsigned long long)durable[i]);
		manifest = !fflush(m) && !fsync(fileno(m));
		manifest = !fclose(m) && manifest &&
			   !rename("MANIFEST.tmp", MANIFEST) && !fsync(dir);
	}
	result_write(result, n, manifest);
	return manifest ? 0 : 1;
}

/* 0: whole; 1: not there; 2: torn or not what it should be. */
static int check_file(int dir, const char *name, uint64_t seq)
{
	struct header *h = (struct header *)buf;
	size_t got = 0;
	ssize_t r;
	int fd;

	fd = openat(dir, name, O_RDONLY);
	if (fd < 0)
		return 1;
	while ((r = read(fd, buf + got, sizeof(buf) - got)) > 0)
		got += r;
	close(fd);
	if (r < 0 || got < sizeof(*h) || h->magic != MAGIC ||
	    h->seq != seq || got != sizeof(*h) + h->len ||
	    h->sum != fnv1a((unsigned char *)(h + 1), h->len))
		return 2;
	return 0;
}

static int do_verify(const char *dirpath)
{
	long listed = 0, verified = 0, missing = 0, corrupt = 0, present = 0;
	long torn = 0, tmp = 0;
	unsigned long long seq;
	struct dirent *de;
	DIR *d;
	FILE *m;
	int dir, r;

	dir = open(dirpath, O_RDONLY | O_DIRECTORY);
	d = fdopendir(dup(dir));
	if (dir < 0 || !d || fchdir(dir)) {
		perror(dirpath);
		return 1;
	}
	m = fopen(MANIFEST, "r");
	while (m && fscanf(m, "%llu", &seq) == 1) {
		char name[32];

		snprintf(name, sizeof(name), "f%08llu", seq);
		listed++;
		r = check_file(dir, name, seq);
		verified += r == 0;
		missing += r == 1;
		corrupt += r == 2;
	}
	while ((de = readdir(d))) {
		if (!strncmp(de->d_name, "tmp.", 4))
			tmp++;
		if (sscanf(de->d_name, "f%llu", &seq) != 1)
			continue;
		present++;
		torn += check_file(dir, de->d_name, seq) != 0;
	}
	printf("{\"manifest\": %s, \"listed\": %ld, \"verified\": %ld, \"missing\": %ld, \"corrupt\": %ld, \"present\": %ld, \"torn\": %ld, \"tmp\": %ld}\n",
	       m ? "true" : "false", listed, verified, missing, corrupt,
	       present, torn, tmp);
	return m && listed && verified == listed && !torn ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "write"))
		return do_write(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "verify"))
		return do_verify(argv[2]);
	fprintf(stderr, "usage: %s write DIR RESULT_JSON | verify DIR\n",
		argv[0]);
	return 2;
}
