/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What /proc and cgroupfs say, for the guest programs with and without
 * the kselftest harness: the tests (test_util.c) and the container hog.
 */
#ifndef PROCFS_H
#define PROCFS_H

#include <stddef.h>

/* A key of /proc/meminfo ("MemAvailable"), in bytes; -1 if absent. */
long long procfs_meminfo(const char *key);
/* The number in a one-line file; -1 if absent, unreadable or "max". */
long long procfs_number(const char *path);
/* The caller's cgroup v2 directory, /sys/fs/cgroup/...: 0, or -1. */
int procfs_own_cgroup(char *buf, size_t size);

#endif
