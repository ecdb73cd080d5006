// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "result.h"

static int write_once(const char *tmp,
		      int (*body)(FILE *f, const void *arg), const void *arg)
{
	FILE *f = fopen(tmp, "w");

	if (!f)
		return -1;
	if (body(f, arg) < 0 || fflush(f) || ferror(f)) {
		fclose(f);
		return -1;
	}
	return fclose(f);
}

int result_write(const char *path, int (*body)(FILE *f, const void *arg),
		 const void *arg)
{
	char tmp[4096];
	int tries, err;

	/* A process may share the file with its children: a file each. */
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, getpid());
	for (tries = 0; tries < 500; tries++) {
		if (!write_once(tmp, body, arg) && !rename(tmp, path))
			return 0;
		/* tmpfs reports a failed inode allocation as ENOSPC */
		if (errno != ENOMEM && errno != ENOSPC)
			break;
		usleep(20000);
	}
	err = errno;
	unlink(tmp);
	errno = err;
	return -1;
}
