/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Reading symbols and initialised data out of an interpreter's ELF file. */
#ifndef __PYSIGHT_ELFFILE_H
#define __PYSIGHT_ELFFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_file;

int elffile__open(const char *path, struct elf_file **out);
/* Read the file fd refers to; the caller keeps fd and closes it after
 * elffile__close. */
int elffile__open_fd(int fd, struct elf_file **out);
void elffile__close(struct elf_file *ef);

/* ET_EXEC: symbol values are absolute addresses, no load bias. */
bool elffile__is_exec(const struct elf_file *ef);

/* .dynsym first, then .symtab.  -ENOENT when neither has it. */
int elffile__symbol(struct elf_file *ef, const char *name, uint64_t *value,
		    uint64_t *size);

/* fn(ctx, name, value, size) for each function symbol with a size that
 * the file defines: from .symtab, or .dynsym when it has none (a
 * stripped library), until fn returns nonzero (that value).  0, or
 * -ENOENT when there is neither. */
int elffile__each_function(struct elf_file *ef,
			   int (*fn)(void *ctx, const char *name,
				     uint64_t value, uint64_t size),
			   void *ctx);

/* Has a .symtab: all its functions named, not only the exported. */
bool elffile__has_symtab(struct elf_file *ef);

/* .gnu_debuglink: the debug file's name into buf and its CRC-32: 0, or
 * -ENOENT when there is none (or it is malformed). */
int elffile__debuglink(struct elf_file *ef, char *buf, size_t len,
		       uint32_t *crc);

/* The CRC-32 (zlib's, as .gnu_debuglink uses) of the first size bytes
 * of file fd; 0 when they cannot be read. */
uint32_t elffile__crc32(int fd, uint64_t size);

/* The GNU build-id note's bytes, up to len of them into buf: how many
 * there are, or -ENOENT. */
int elffile__build_id(struct elf_file *ef, void *buf, size_t len);

/* Copy the file-backed bytes at virtual address [vaddr, vaddr + len).
 * -ENOENT when they are not in the file (e.g. .bss). */
int elffile__read(struct elf_file *ef, uint64_t vaddr, void *buf, size_t len);

/* The file bytes of the section called name: the first len of them
 * into buf, and in *size how many it holds.  -ENOENT when there is none
 * (or no section headers). */
int elffile__section(struct elf_file *ef, const char *name, void *buf,
		     size_t len, size_t *size);

/* The section called name in place, valid until elffile__close: its
 * bytes, their number and its virtual address.  -ENOENT as above,
 * -EFBIG when it is over max bytes (libelf reads a section whole). */
int elffile__section_view(struct elf_file *ef, const char *name, size_t max,
			  const void **data, size_t *size, uint64_t *addr);

/* The pointer stored at vaddr once relocated, as an unrelocated address:
 * the file bytes for ET_EXEC, the RELA addend (or symbol) for ET_DYN. */
int elffile__read_pointer(struct elf_file *ef, uint64_t vaddr, uint64_t *out);

/* File offset of code at virtual address vaddr: only inside an
 * executable PT_LOAD segment whose numbers do not wrap (a uprobe goes
 * there).  -ENOENT otherwise. */
int elffile__code_offset(struct elf_file *ef, uint64_t vaddr, uint64_t *out);

/* The virtual address that file offset off is loaded at: in the
 * PT_LOAD that holds it, as a mapping of the file from off says where it
 * sits.  -ENOENT when no segment holds it. */
int elffile__offset_vaddr(struct elf_file *ef, uint64_t off, uint64_t *vaddr);

/* Virtual address of the first PT_LOAD segment, page aligned down. */
uint64_t elffile__first_load(const struct elf_file *ef);

#endif /* __PYSIGHT_ELFFILE_H */
