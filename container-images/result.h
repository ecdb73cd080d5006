/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The result file every container program writes for the report:
 * JSON, replaced atomically, retried while the cgroup is full.
 */
#ifndef RESULT_H
#define RESULT_H

#include <stdio.h>

/*
 * Write @path: @body prints the JSON of @arg to a temporary file of this
 * process's own, renamed over @path.  The file's page cache is charged to
 * the writer's cgroup, which may be full: the write is retried while it
 * fails with ENOMEM, or ENOSPC (the results are on tmpfs, whose
 * new_inode() failure is ENOSPC), for up to ten seconds.  0, or -1 with
 * errno set.
 */
int result_write(const char *path, int (*body)(FILE *f, const void *arg),
		 const void *arg);

#endif
