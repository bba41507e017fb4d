// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness for what the symboliser decodes from a target's
 * memory: code objects, str and bytes objects, then the line table they
 * lead to.  The input is a fake address space: the harness defines
 * process_vm_readv (the executable's definition wins over libc's and
 * over ASan's weak interceptor), which serves reads of the bytes after
 * the header, mapped at MEM_BASE, and faults everywhere else.
 *
 * Input layout: byte 0 picks the minor (3.8 to 3.15: 3.13 on need
 * FIXTURES, the tests' _PyRuntime copies), bytes 1-4 the code
 * object's offset in the blob, 5-8 a str's, 9-12 a bytes object's, 13-16
 * lasti (little endian); the rest is the memory.  The type objects'
 * addresses are fixed (below MEM_BASE), so an input that wants to pass a
 * type check writes them into its objects.  The memory is a heap block of
 * exactly its size: ASan catches a read one byte past the end.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "linetable.h"
#include "offsets.h"
#include "symbols.h"
#include "layout.h"

#define HDR_LEN		17
#define MEM_BASE	0x7f0000100000ULL
#define CODE_TYPE	0x7f00000c0000ULL
#define UNICODE_TYPE	0x7f00000d0000ULL
#define BYTES_TYPE	0x7f00000e0000ULL

static const uint8_t *mem;
static size_t mem_len;

ssize_t process_vm_readv(pid_t pid, const struct iovec *local,
			 unsigned long liovcnt, const struct iovec *remote,
			 unsigned long riovcnt, unsigned long flags)
{
	uint64_t addr;
	size_t len;

	(void)pid;
	(void)flags;
	if (liovcnt != 1 || riovcnt != 1 || local[0].iov_len < remote[0].iov_len) {
		errno = EINVAL;
		return -1;
	}
	addr = (uint64_t)(uintptr_t)remote[0].iov_base;
	len = remote[0].iov_len;
	if (addr < MEM_BASE || addr - MEM_BASE > mem_len ||
	    len > mem_len - (addr - MEM_BASE)) {
		errno = EFAULT;
		return -1;
	}
	memcpy(local[0].iov_base, mem + (addr - MEM_BASE), len);
	return (ssize_t)len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct py_proc proc;
	const struct pysym *sym;
	struct symcache *sc;
	uint8_t *copy, *bytes = NULL;
	uint32_t check;
	size_t blen = 0;
	char *s;
	int minor;

	if (size < HDR_LEN)
		return 0;
	minor = 8 + data[0] % 8;
	memset(&proc, 0, sizeof(proc));
	if (fuzz_layout(minor, &proc.off))
		return 0;
	proc.code_type_addr = CODE_TYPE;
	proc.unicode_type_addr = UNICODE_TYPE;
	proc.bytes_type_addr = BYTES_TYPE;
	mem_len = size - HDR_LEN;
	copy = malloc(mem_len ? mem_len : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + HDR_LEN, mem_len);
	mem = copy;

	s = symbols__read_str(1, &proc, MEM_BASE + fuzz_le32(data + 5));
	free(s);
	if (!symbols__read_bytes(1, &proc, MEM_BASE + fuzz_le32(data + 9), &bytes, &blen))
		free(bytes);
	sc = symcache__new();
	if (sc && !symbols__code_check(1, &proc, MEM_BASE + fuzz_le32(data + 1), &check)) {
		sym = symcache__lookup(sc, 1, &proc, MEM_BASE + fuzz_le32(data + 1), check);
		if (sym)
			(void)linetable__line(minor, sym->linetable, sym->linetable_len,
					      sym->firstlineno, (int)fuzz_le32(data + 13));
	}
	symcache__free(sc);
	free(copy);
	mem = NULL;
	return 0;
}
