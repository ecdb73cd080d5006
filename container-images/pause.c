// SPDX-License-Identifier: GPL-2.0
/*
 * A container's process that waits to be killed: for the tests in which
 * the container's cgroup is under test and its workload is not.
 */
#include <unistd.h>

int main(void)
{
	for (;;)
		pause();
}
