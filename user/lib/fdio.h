/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Whole reads and writes on a descriptor, through EINTR and short counts;
 * directories made with their parents. */
#ifndef __PYSIGHT_FDIO_H
#define __PYSIGHT_FDIO_H

#include <stddef.h>
#include <sys/types.h>

/* Up to len bytes, until EOF: the count, or -errno. */
ssize_t fdio__read(int fd, void *buf, size_t len);
/* Up to len bytes of the file at path, until EOF: the count, or -errno. */
ssize_t fdio__read_path(const char *path, void *buf, size_t len);
/* All len bytes (send(MSG_NOSIGNAL) on a socket, so a closed peer is
 * -EPIPE, not SIGPIPE): 0, or -errno. */
int fdio__write(int fd, const void *buf, size_t len);

/* mkdir -p: the missing parents 0755, path itself with mode; 0 when it
 * exists already (whatever its mode: the caller checks), or -errno. */
int fdio__mkdirs(const char *path, mode_t mode);

#endif /* __PYSIGHT_FDIO_H */
