// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "fdio.h"
#include "schedstat.h"

int schedstat__arrivals(pid_t pid, pid_t tid, uint64_t *out)
{
	char path[64], buf[96];
	uint64_t ran, waited;
	ssize_t n;

	*out = 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", pid, tid);
	n = fdio__read_path(path, buf, sizeof(buf) - 1);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	if (sscanf(buf, "%" SCNu64 " %" SCNu64 " %" SCNu64, &ran, &waited,
		   out) != 3)
		return -EINVAL;
	return 0;
}
