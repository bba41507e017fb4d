// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer harness for what pysight learns of a file a process maps: the
 * ELF reader (symbols, sections, program headers, the dynamic section,
 * notes), version detection and the offsets it loads, as process.c
 * inspects an interpreter.  A container can hand us any file named
 * python3.  The file is given in a memfd, as an open descriptor is what
 * the inspection reads.
 *
 * An input is not a whole file but patches over one of the real
 * interpreters in $PYSIGHT_FUZZ_ELF_BASES (default corpus/elf-base, from
 * tools/fuzz-seeds).  Given whole files, libFuzzer cuts each to 1 MiB
 * unless told a larger -max_len, and with one (9 MB interpreters) keeps
 * every new unit of that size in memory and on disk: 740 MB of RSS and
 * 320 MB of corpus in 30 s, at 90 runs/s.  A patch keeps what lies past
 * the first megabyte (PT_DYNAMIC, .PyRuntime, the section headers) in
 * every run, and the inputs small.
 *
 * Input layout (little endian): byte 0 picks the base; bytes 1-4 cut it
 * to that length (0: whole); then patches to the end, each an offset (4
 * bytes, modulo the length), a length (2 bytes) and its bytes.  The seeds
 * are patches of each base's own bytes where its structures lie.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elffile.h"
#include "process.h"
#include "le.h"

#define HDR_LEN		5
#define PATCH_HDR	6
#define MAX_BASES	16

static struct base {
	uint8_t *data;
	size_t len;
} bases[MAX_BASES];
static int nbases;

static void load_base(const char *dir, const char *name)
{
	struct base *b = &bases[nbases];
	char path[4096];
	long len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	if (!f)
		return;
	if (!fseek(f, 0, SEEK_END) && (len = ftell(f)) > 0 && !fseek(f, 0, SEEK_SET)) {
		b->data = malloc((size_t)len);
		if (b->data && fread(b->data, 1, (size_t)len, f) == (size_t)len) {
			b->len = (size_t)len;
			nbases++;
		} else {
			free(b->data);
		}
	}
	fclose(f);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("PYSIGHT_FUZZ_ELF_BASES");
	struct dirent **names;
	int i, n;

	(void)argc;
	(void)argv;
	if (!dir)
		dir = "corpus/elf-base";
	n = scandir(dir, &names, NULL, alphasort);
	for (i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.' && nbases < MAX_BASES)
			load_base(dir, names[i]->d_name);
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	if (!nbases) {
		fprintf(stderr, "fuzz_elf: no interpreter files in %s\n", dir);
		exit(1);
	}
	return 0;
}

static int count_function(void *ctx, const char *name, uint64_t value,
			  uint64_t size)
{
	(void)name;
	(void)value;
	(void)size;
	++*(size_t *)ctx;
	return 0;
}

/* What --native reads of any binary a process maps. */
static void native_reads(int fd)
{
	uint8_t id[20];
	char link[256];
	uint64_t vaddr;
	uint32_t crc;
	size_t n = 0;
	struct elf_file *ef;

	if (elffile__open_fd(fd, &ef))
		return;
	elffile__each_function(ef, count_function, &n);
	elffile__build_id(ef, id, sizeof(id));
	elffile__debuglink(ef, link, sizeof(link), &crc);
	elffile__has_symtab(ef);
	elffile__offset_vaddr(ef, 0x1000, &vaddr);
	elffile__close(ef);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct base *b;
	struct pyproc_info info;
	size_t len, at, n;
	char err[256];
	uint32_t cut;
	int fd;

	if (size < HDR_LEN)
		return 0;
	b = &bases[data[0] % nbases];
	cut = fuzz_le32(data + 1);
	len = cut && cut < b->len ? cut : b->len;
	fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, b->data, len) != (ssize_t)len)
		goto out;
	for (data += HDR_LEN, size -= HDR_LEN; size >= PATCH_HDR; data += n, size -= n) {
		at = fuzz_le32(data) % len;
		n = (size_t)data[4] | (size_t)data[5] << 8;
		data += PATCH_HDR;
		size -= PATCH_HDR;
		n = n < size ? n : size;
		if (pwrite(fd, data, n < len - at ? n : len - at, (off_t)at) < 0)
			goto out;
	}
	process__facts_of_fd(fd, "/fuzz/python3", &info, err, sizeof(err));
	native_reads(fd);
out:
	close(fd);
	return 0;
}
