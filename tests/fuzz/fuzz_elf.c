// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer harness for what pysight learns of a file a process maps: the
 * ELF reader (symbols, sections, program headers), version detection and
 * the offsets it loads, as process.c inspects an interpreter.  A
 * container can hand us any file named python3.  The input is the file,
 * in a memfd, as an open descriptor is what the inspection reads.
 */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "process.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pyproc_info info;
	char err[256];
	int fd;

	fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size)
		process__facts_of_fd(fd, "/fuzz/python3", &info, err,
				     sizeof(err));
	close(fd);
	return 0;
}
