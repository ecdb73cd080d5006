// SPDX-License-Identifier: GPL-2.0
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"

/* A whole small file into @buf, NUL-terminated: its length, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

long long procfs_meminfo(const char *key)
{
	char buf[8192], *p;
	size_t len = strlen(key);

	if (read_small("/proc/meminfo", buf, sizeof(buf)) <= 0)
		return -1;
	for (p = buf; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, len) && p[len] == ':')
			return strtoll(p + len + 1, NULL, 10) * 1024;
	return -1;
}

long long procfs_number(const char *path)
{
	char buf[64];

	if (read_small(path, buf, sizeof(buf)) <= 0 || !strncmp(buf, "max", 3))
		return -1;
	return strtoll(buf, NULL, 10);
}

int procfs_own_cgroup(char *buf, size_t size)
{
	char line[4096];

	if (read_small("/proc/self/cgroup", line, sizeof(line)) <= 0 ||
	    strncmp(line, "0::/", 4))
		return -1;
	line[strcspn(line, "\n")] = '\0';
	if ((size_t)snprintf(buf, size, "/sys/fs/cgroup%s", line + 3) >= size)
		return -1;
	return 0;
}
