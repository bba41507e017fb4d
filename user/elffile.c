// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A thin, bounds-checked layer over libelf: the interpreter files we
 * read come from other processes' roots and may be anything.  They are
 * read with pread, never mapped: a file truncated while we read it
 * (a container can do that) then gives short reads and errors, where a
 * mapping would kill pysight with SIGBUS.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "elffile.h"

struct elf_file {
	int fd;
	bool own_fd;
	Elf *elf;
	GElf_Ehdr ehdr;
	uint64_t first_load;
};

int elffile__open_fd(int fd, struct elf_file **out)
{
	struct elf_file *ef;
	size_t i, nphdr;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	ef = calloc(1, sizeof(*ef));
	if (!ef)
		return -ENOMEM;
	ef->fd = fd;
	ef->elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!ef->elf || elf_kind(ef->elf) != ELF_K_ELF ||
	    !gelf_getehdr(ef->elf, &ef->ehdr) ||
	    elf_getphdrnum(ef->elf, &nphdr)) {
		elffile__close(ef);
		return -ENOEXEC;
	}
	ef->first_load = UINT64_MAX;
	for (i = 0; i < nphdr; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(ef->elf, i, &ph) && ph.p_type == PT_LOAD &&
		    ph.p_vaddr < ef->first_load)
			ef->first_load = ph.p_vaddr & ~(uint64_t)0xfff;
	}
	if (ef->first_load == UINT64_MAX)
		ef->first_load = 0;
	*out = ef;
	return 0;
}

int elffile__open(const char *path, struct elf_file **out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = elffile__open_fd(fd, out);
	if (err) {
		close(fd);
		return err;
	}
	(*out)->own_fd = true;
	return 0;
}

void elffile__close(struct elf_file *ef)
{
	if (!ef)
		return;
	if (ef->elf)
		elf_end(ef->elf);
	if (ef->own_fd)
		close(ef->fd);
	free(ef);
}

bool elffile__is_exec(const struct elf_file *ef)
{
	return ef->ehdr.e_type == ET_EXEC;
}

uint64_t elffile__first_load(const struct elf_file *ef)
{
	return ef->first_load;
}

static int find_in_table(struct elf_file *ef, Elf_Scn *scn, const char *name,
			 uint64_t *value, uint64_t *size)
{
	GElf_Shdr sh;
	Elf_Data *data;
	size_t i, n;

	if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize)
		return -ENOENT;
	data = elf_getdata(scn, NULL);
	if (!data)
		return -ENOENT;
	n = sh.sh_size / sh.sh_entsize;
	for (i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *s;

		if (!gelf_getsym(data, i, &sym) || sym.st_shndx == SHN_UNDEF)
			continue;
		s = elf_strptr(ef->elf, sh.sh_link, sym.st_name);
		if (s && !strcmp(s, name)) {
			*value = sym.st_value;
			if (size)
				*size = sym.st_size;
			return 0;
		}
	}
	return -ENOENT;
}

int elffile__symbol(struct elf_file *ef, const char *name, uint64_t *value,
		    uint64_t *size)
{
	static const Elf64_Word types[] = { SHT_DYNSYM, SHT_SYMTAB };
	size_t t;

	for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(ef->elf, scn))) {
			GElf_Shdr sh;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != types[t])
				continue;
			if (!find_in_table(ef, scn, name, value, size))
				return 0;
		}
	}
	return -ENOENT;
}

int elffile__read(struct elf_file *ef, uint64_t vaddr, void *buf, size_t len)
{
	Elf_Scn *scn = NULL;

	if (vaddr + len < vaddr)
		return -EINVAL;
	while ((scn = elf_nextscn(ef->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		uint64_t off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(sh.sh_flags & SHF_ALLOC))
			continue;
		if (vaddr < sh.sh_addr || vaddr + len > sh.sh_addr + sh.sh_size)
			continue;
		data = elf_getdata(scn, NULL);
		off = vaddr - sh.sh_addr;
		if (!data || !data->d_buf || off + len > data->d_size)
			return -ENOENT;
		memcpy(buf, (char *)data->d_buf + off, len);
		return 0;
	}
	return -ENOENT;
}

static int sym_value(struct elf_file *ef, Elf_Scn *rela_scn, size_t index,
		     uint64_t *value)
{
	GElf_Shdr sh;
	Elf_Scn *symscn;
	Elf_Data *data;
	GElf_Sym sym;

	if (!gelf_getshdr(rela_scn, &sh))
		return -ENOENT;
	symscn = elf_getscn(ef->elf, sh.sh_link);
	data = symscn ? elf_getdata(symscn, NULL) : NULL;
	if (!data || !gelf_getsym(data, (int)index, &sym) ||
	    sym.st_shndx == SHN_UNDEF)
		return -ENOENT;
	*value = sym.st_value;
	return 0;
}

static int find_rela(struct elf_file *ef, uint64_t vaddr, uint64_t *out)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(ef->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA ||
		    !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			GElf_Rela r;
			uint64_t v;

			if (!gelf_getrela(data, (int)i, &r) || r.r_offset != vaddr)
				continue;
			switch (GELF_R_TYPE(r.r_info)) {
			case R_X86_64_RELATIVE:
				*out = (uint64_t)r.r_addend;
				return 0;
			case R_X86_64_64:
			case R_X86_64_GLOB_DAT:
				if (sym_value(ef, scn, GELF_R_SYM(r.r_info), &v))
					return -ENOENT;
				*out = v + (uint64_t)r.r_addend;
				return 0;
			default:
				return -ENOTSUP;
			}
		}
	}
	return -ENOENT;
}

int elffile__read_pointer(struct elf_file *ef, uint64_t vaddr, uint64_t *out)
{
	if (ef->ehdr.e_machine != EM_X86_64)
		return -ENOTSUP;	/* other arches: relocation types differ */
	if (ef->ehdr.e_type == ET_EXEC)
		return elffile__read(ef, vaddr, out, sizeof(*out));
	return find_rela(ef, vaddr, out);
}

int elffile__code_offset(struct elf_file *ef, uint64_t vaddr, uint64_t *out)
{
	size_t i, nphdr;

	if (elf_getphdrnum(ef->elf, &nphdr))
		return -ENOEXEC;
	for (i = 0; i < nphdr; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(ef->elf, (int)i, &ph) ||
		    ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		/* the numbers are the file's: refuse any that wrap */
		if (ph.p_vaddr + ph.p_filesz < ph.p_vaddr ||
		    ph.p_offset + ph.p_filesz < ph.p_offset)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			*out = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}
