// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/sys/schedstat.c: a thread's switch-ins, read from /proc.  The
 * sweep drops a stack read when the count moved since its pass saw the
 * thread blocked, so it must move with each sleep and only then.
 */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "check.h"
#include "schedstat.h"

int main(void)
{
	pid_t pid = getpid(), tid = (pid_t)syscall(SYS_gettid);
	uint64_t a = 0, b = 0;
	int err, i;

	err = schedstat__arrivals(pid, tid, &a);
	if (err == -ENOENT) {
		/* a kernel without CONFIG_SCHED_INFO: the sweep skips it */
		printf("no schedstat here: skipped\n");
		return 0;
	}
	CHECK(!err && a > 0, "our own count: %d, %llu", err,
	      (unsigned long long)a);
	for (i = 0; i < 3; i++)
		usleep(1000);
	CHECK(!schedstat__arrivals(pid, tid, &b) && b >= a + 3,
	      "three sleeps: %llu then %llu", (unsigned long long)a,
	      (unsigned long long)b);
	CHECK(schedstat__arrivals(pid, 0x7ffffff0, &b) == -ENOENT && b == 0,
	      "no such thread");
	CHECK(schedstat__arrivals(1, tid, &b) == -ENOENT,
	      "our thread is not init's");
	return check_summary();
}
