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
#include <zlib.h>
#include <libelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "elffile.h"

#define MAX_PHDRS	64

/*
 * The dynamic section's tables, as file offsets and sizes: what the
 * loader itself uses, for a file whose section headers are gone.
 */
struct dyn_tables {
	bool loaded, ok;
	uint64_t symtab, strtab, strsz, gnu_hash, hash, rela, relasz;
};

struct elf_file {
	int fd;
	bool own_fd;
	Elf *elf;		/* NULL when libelf refused the section headers */
	bool sections;		/* a symbol table section was found */
	GElf_Ehdr ehdr;
	uint64_t first_load;
	Elf64_Phdr ph[MAX_PHDRS];
	size_t nph;
	struct dyn_tables dyn;
};

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	if (off > INT64_MAX - len)
		return -EINVAL;
	n = pread(fd, buf, len, (off_t)off);
	return n >= 0 && (size_t)n == len ? 0 : -ENOENT;
}

/*
 * The ELF header and program headers, read without libelf: all a
 * stripped-of-sections interpreter keeps, and all the loader needs.
 * Little-endian ELF64 only, as pysight's hosts are.
 */
static int read_headers(struct elf_file *ef)
{
	Elf64_Ehdr eh;

	if (pread_all(ef->fd, &eh, sizeof(eh), 0) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > MAX_PHDRS ||
	    pread_all(ef->fd, ef->ph, eh.e_phnum * sizeof(Elf64_Phdr),
		      eh.e_phoff))
		return -ENOEXEC;
	ef->nph = eh.e_phnum;
	if (!ef->elf) {
		memset(&ef->ehdr, 0, sizeof(ef->ehdr));
		ef->ehdr.e_type = eh.e_type;
		ef->ehdr.e_machine = eh.e_machine;
	}
	return 0;
}

/* Program headers: libelf's, or those read_headers() took alone. */
static size_t phdr_count(const struct elf_file *ef)
{
	size_t n;

	if (!ef->elf)
		return ef->nph;
	return elf_getphdrnum(ef->elf, &n) ? 0 : n;
}

static bool phdr(const struct elf_file *ef, size_t i, GElf_Phdr *ph)
{
	if (ef->elf)
		return gelf_getphdr(ef->elf, (int)i, ph) != NULL;
	*ph = ef->ph[i];
	return true;
}

/*
 * The file offset of [vaddr, vaddr + len) in the file bytes of a PT_LOAD
 * with all of flags.  The numbers are the file's: refuse any that wrap.
 */
static int segment_offset(const struct elf_file *ef, uint64_t vaddr,
			  uint64_t len, uint32_t flags, uint64_t *off)
{
	size_t i, n = phdr_count(ef);

	if (vaddr + len < vaddr)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!phdr(ef, i, &ph) || ph.p_type != PT_LOAD ||
		    (ph.p_flags & flags) != flags ||
		    ph.p_vaddr + ph.p_filesz < ph.p_vaddr ||
		    ph.p_offset + ph.p_filesz < ph.p_offset)
			continue;
		if (vaddr >= ph.p_vaddr &&
		    vaddr + len <= ph.p_vaddr + ph.p_filesz) {
			*off = ph.p_offset + (vaddr - ph.p_vaddr);
			return 0;
		}
	}
	return -ENOENT;
}

int elffile__offset_vaddr(struct elf_file *ef, uint64_t off, uint64_t *vaddr)
{
	size_t i, n = phdr_count(ef);
	uint64_t best = 0;
	bool found = false;

	/* lld packs segments without page-aligning their file offsets, so
	 * the page off starts may hold the tail of the segment before too:
	 * the one that starts last (nearest off) is the one mapped there */
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;
		uint64_t page;

		if (!phdr(ef, i, &ph) || ph.p_type != PT_LOAD ||
		    ph.p_offset + ph.p_filesz < ph.p_offset ||
		    ph.p_vaddr + ph.p_filesz < ph.p_vaddr)
			continue;
		page = ph.p_offset & ~0xfffULL;
		if (off < page || off >= ph.p_offset + ph.p_filesz ||
		    (found && ph.p_offset < best))
			continue;
		best = ph.p_offset;
		*vaddr = ph.p_vaddr - (ph.p_offset - off);
		found = true;
	}
	return found ? 0 : -ENOENT;
}

static int read_vaddr(const struct elf_file *ef, uint64_t vaddr, void *buf,
		      size_t len)
{
	uint64_t off;
	int err = segment_offset(ef, vaddr, len, 0, &off);

	return err ? err : pread_all(ef->fd, buf, len, off);
}

static bool has_symbol_table(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && (sh.sh_type == SHT_DYNSYM ||
					       sh.sh_type == SHT_SYMTAB))
			return true;
	return false;
}

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
	if (ef->elf && (elf_kind(ef->elf) != ELF_K_ELF ||
			!gelf_getehdr(ef->elf, &ef->ehdr) ||
			elf_getphdrnum(ef->elf, &nphdr))) {
		elf_end(ef->elf);
		ef->elf = NULL;
	}
	/* without libelf (section headers past the end, say), the program
	 * headers alone still tell where the dynamic symbols are */
	if (read_headers(ef) && !ef->elf) {
		elffile__close(ef);
		return -ENOEXEC;
	}
	ef->sections = ef->elf && has_symbol_table(ef->elf);
	ef->first_load = UINT64_MAX;
	nphdr = phdr_count(ef);
	for (i = 0; i < nphdr; i++) {
		GElf_Phdr ph;

		if (phdr(ef, i, &ph) && ph.p_type == PT_LOAD &&
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

/* fn(ctx, name, sym) for each defined, named symbol of the table scn,
 * until it returns nonzero: that value, else 0. */
static int each_symbol(struct elf_file *ef, Elf_Scn *scn,
		       int (*fn)(void *ctx, const char *name,
				 const GElf_Sym *sym),
		       void *ctx)
{
	GElf_Shdr sh;
	Elf_Data *data;
	size_t i, n;
	int ret = 0;

	if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize)
		return 0;
	data = elf_getdata(scn, NULL);
	if (!data)
		return 0;
	n = sh.sh_size / sh.sh_entsize;
	for (i = 0; !ret && i < n; i++) {
		GElf_Sym sym;
		const char *s;

		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
			continue;
		s = elf_strptr(ef->elf, sh.sh_link, sym.st_name);
		if (s)
			ret = fn(ctx, s, &sym);
	}
	return ret;
}

struct named {
	const char *name;
	uint64_t *value, *size;
};

static int is_named(void *ctx, const char *name, const GElf_Sym *sym)
{
	struct named *n = ctx;

	if (strcmp(name, n->name))
		return 0;
	*n->value = sym->st_value;
	if (n->size)
		*n->size = sym->st_size;
	return 1;
}

static int find_in_table(struct elf_file *ef, Elf_Scn *scn, const char *name,
			 uint64_t *value, uint64_t *size)
{
	struct named n = { name, value, size };

	return each_symbol(ef, scn, is_named, &n) ? 0 : -ENOENT;
}

/* Bounds on what a hostile dynamic section can make us walk. */
#define MAX_DYN		1024
#define MAX_BUCKETS	(1u << 24)
#define MAX_CHAIN	(1u << 16)

/* The dynamic section's tables, as file offsets: false when the file
 * has none the loader could use. */
static bool load_dynamic(struct elf_file *ef)
{
	struct dyn_tables *t = &ef->dyn;
	uint64_t v[DT_NUM] = { 0 }, gnu_hash = 0, n = 0;
	Elf64_Dyn d;
	size_t i, k;

	if (t->loaded)
		return t->ok;
	t->loaded = true;
	for (i = 0; i < ef->nph; i++)
		if (ef->ph[i].p_type == PT_DYNAMIC)
			break;
	if (i == ef->nph)
		return false;
	n = ef->ph[i].p_filesz / sizeof(d);
	for (k = 0; k < n && k < MAX_DYN; k++) {
		if (pread_all(ef->fd, &d, sizeof(d),
			      ef->ph[i].p_offset + k * sizeof(d)) ||
		    d.d_tag == DT_NULL)
			break;
		if (d.d_tag >= 0 && d.d_tag < DT_NUM)
			v[d.d_tag] = d.d_un.d_val;
		else if (d.d_tag == DT_GNU_HASH)
			gnu_hash = d.d_un.d_ptr;
	}
	/* the tables' addresses are virtual: where do their bytes lie? */
	if (!v[DT_SYMTAB] || !v[DT_STRTAB] || !v[DT_STRSZ] ||
	    (v[DT_SYMENT] && v[DT_SYMENT] != sizeof(Elf64_Sym)) ||
	    segment_offset(ef, v[DT_SYMTAB], sizeof(Elf64_Sym), 0, &t->symtab) ||
	    segment_offset(ef, v[DT_STRTAB], v[DT_STRSZ], 0, &t->strtab))
		return false;
	t->strsz = v[DT_STRSZ];
	if (gnu_hash && segment_offset(ef, gnu_hash, 16, 0, &t->gnu_hash))
		t->gnu_hash = 0;
	if (v[DT_HASH] && segment_offset(ef, v[DT_HASH], 8, 0, &t->hash))
		t->hash = 0;
	if (v[DT_RELA] && v[DT_RELASZ] &&
	    (!v[DT_RELAENT] || v[DT_RELAENT] == sizeof(Elf64_Rela)) &&
	    !segment_offset(ef, v[DT_RELA], v[DT_RELASZ], 0, &t->rela))
		t->relasz = v[DT_RELASZ];
	t->ok = t->gnu_hash || t->hash;
	return t->ok;
}

/* Dynamic symbol i, when it is a definition named name. */
static bool dyn_match(struct elf_file *ef, uint64_t i, const char *name,
		      Elf64_Sym *sym)
{
	size_t len = strlen(name) + 1;
	char buf[256];

	if (len > sizeof(buf) || i > (UINT64_MAX - ef->dyn.symtab) / sizeof(*sym) ||
	    pread_all(ef->fd, sym, sizeof(*sym),
		      ef->dyn.symtab + i * sizeof(*sym)) ||
	    sym->st_shndx == SHN_UNDEF || sym->st_name >= ef->dyn.strsz ||
	    len > ef->dyn.strsz - sym->st_name ||
	    pread_all(ef->fd, buf, len, ef->dyn.strtab + sym->st_name))
		return false;
	return !memcmp(buf, name, len);
}

static uint32_t gnu_hash_of(const char *name)
{
	uint32_t h = 5381;

	while (*name)
		h = h * 33 + (unsigned char)*name++;
	return h;
}

static uint32_t sysv_hash_of(const char *name)
{
	uint32_t h = 0, g;

	while (*name) {
		h = (h << 4) + (unsigned char)*name++;
		g = h & 0xf0000000;
		h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

/* DT_GNU_HASH: the bucket of the name's hash, then its chain. */
static int gnu_lookup(struct elf_file *ef, const char *name, Elf64_Sym *sym)
{
	uint32_t hdr[4], h = gnu_hash_of(name), idx, c, step;
	uint64_t buckets, chain;

	if (pread_all(ef->fd, hdr, sizeof(hdr), ef->dyn.gnu_hash) ||
	    !hdr[0] || hdr[0] > MAX_BUCKETS || hdr[2] > MAX_BUCKETS)
		return -ENOENT;
	buckets = ef->dyn.gnu_hash + sizeof(hdr) + (uint64_t)hdr[2] * 8;
	chain = buckets + (uint64_t)hdr[0] * 4;
	if (pread_all(ef->fd, &idx, sizeof(idx), buckets + (h % hdr[0]) * 4ULL) ||
	    idx < hdr[1])
		return -ENOENT;
	for (step = 0; step < MAX_CHAIN; step++, idx++) {
		if (pread_all(ef->fd, &c, sizeof(c),
			      chain + (uint64_t)(idx - hdr[1]) * 4))
			return -ENOENT;
		if ((c | 1) == (h | 1) && dyn_match(ef, idx, name, sym))
			return 0;
		if (c & 1)
			break;
	}
	return -ENOENT;
}

/* DT_HASH: the older table, which some linkers still write alone. */
static int sysv_lookup(struct elf_file *ef, const char *name, Elf64_Sym *sym)
{
	uint32_t hdr[2], h = sysv_hash_of(name), idx, step;
	uint64_t chain;

	if (pread_all(ef->fd, hdr, sizeof(hdr), ef->dyn.hash) || !hdr[0] ||
	    hdr[0] > MAX_BUCKETS)
		return -ENOENT;
	chain = ef->dyn.hash + sizeof(hdr) + (uint64_t)hdr[0] * 4;
	if (pread_all(ef->fd, &idx, sizeof(idx),
		      ef->dyn.hash + sizeof(hdr) + (h % hdr[0]) * 4ULL))
		return -ENOENT;
	for (step = 0; idx && idx < hdr[1] && step < MAX_CHAIN; step++) {
		if (dyn_match(ef, idx, name, sym))
			return 0;
		if (pread_all(ef->fd, &idx, sizeof(idx), chain + idx * 4ULL))
			return -ENOENT;
	}
	return -ENOENT;
}

/* A file without section headers: its exported symbols, as the loader
 * finds them. */
static int dynamic_symbol(struct elf_file *ef, const char *name,
			  uint64_t *value, uint64_t *size)
{
	Elf64_Sym sym;

	if (!load_dynamic(ef))
		return -ENOENT;
	if ((!ef->dyn.gnu_hash || gnu_lookup(ef, name, &sym)) &&
	    (!ef->dyn.hash || sysv_lookup(ef, name, &sym)))
		return -ENOENT;
	*value = sym.st_value;
	if (size)
		*size = sym.st_size;
	return 0;
}

int elffile__symbol(struct elf_file *ef, const char *name, uint64_t *value,
		    uint64_t *size)
{
	if (!ef->sections)
		return dynamic_symbol(ef, name, value, size);
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

/* what --native reads of any binary, bounded: libxul's .symtab is
 * 60 MiB, a build-id note 36 bytes */
#define SYMTAB_MAX	(256ULL << 20)
#define NOTES_MAX	(64 << 10)

struct functions {
	int (*fn)(void *ctx, const char *name, uint64_t value, uint64_t size);
	void *ctx;
};

static int is_function(void *ctx, const char *name, const GElf_Sym *sym)
{
	struct functions *f = ctx;
	int type = GELF_ST_TYPE(sym->st_info);

	if (!*name || !sym->st_size ||
	    (type != STT_FUNC && type != STT_GNU_IFUNC))
		return 0;
	return f->fn(f->ctx, name, sym->st_value, sym->st_size);
}

int elffile__each_function(struct elf_file *ef,
			   int (*fn)(void *ctx, const char *name,
				     uint64_t value, uint64_t size),
			   void *ctx)
{
	static const Elf64_Word types[] = { SHT_SYMTAB, SHT_DYNSYM };
	struct functions f = { fn, ctx };
	size_t t;

	if (!ef->sections)
		return -ENOENT;
	for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		Elf_Scn *scn = NULL;
		bool found = false;
		int ret = 0;

		while (!ret && (scn = elf_nextscn(ef->elf, scn))) {
			GElf_Shdr sh;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != types[t])
				continue;
			found = true;
			if (sh.sh_entsize == sizeof(Elf64_Sym) &&
			    sh.sh_size <= SYMTAB_MAX)
				ret = each_symbol(ef, scn, is_function, &f);
		}
		if (found)
			return ret;
	}
	return -ENOENT;
}

bool elffile__has_symtab(struct elf_file *ef)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while (ef->elf && (scn = elf_nextscn(ef->elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			return true;
	return false;
}

int elffile__debuglink(struct elf_file *ef, char *buf, size_t len,
		       uint32_t *crc)
{
	const void *data;
	uint64_t addr;
	size_t size, n, at;

	if (!len || elffile__section_view(ef, ".gnu_debuglink", 4096, &data,
					  &size, &addr))
		return -ENOENT;
	n = strnlen(data, size);
	at = (n + 4) & ~(size_t)3;	/* the CRC is 4-aligned after the NUL */
	if (!n || n >= len || at + 4 > size || memchr(data, '/', n))
		return -ENOENT;
	memcpy(buf, data, n);
	buf[n] = 0;
	memcpy(crc, (const char *)data + at, 4);
	return 0;
}

uint32_t elffile__crc32(int fd, uint64_t size)
{
	unsigned char buf[65536];
	uLong crc = crc32(0L, Z_NULL, 0);
	uint64_t off = 0;
	ssize_t n = 0;

	while (off < size &&
	       (n = pread(fd, buf, size - off < sizeof(buf) ?
			  (size_t)(size - off) : sizeof(buf), (off_t)off)) > 0) {
		crc = crc32(crc, buf, (uInt)n);
		off += (uint64_t)n;
	}
	return n < 0 ? 0 : (uint32_t)crc;
}

int elffile__build_id(struct elf_file *ef, void *buf, size_t len)
{
	Elf_Scn *scn = NULL;

	if (!ef->elf)
		return -ENOENT;
	while ((scn = elf_nextscn(ef->elf, scn))) {
		size_t off = 0, name_off, desc_off;
		Elf_Data *data;
		GElf_Nhdr nh;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
		    sh.sh_size > NOTES_MAX)
			continue;
		data = elf_getdata(scn, NULL);
		while (data && (off = gelf_getnote(data, off, &nh, &name_off,
						   &desc_off)) > 0) {
			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((const char *)data->d_buf + name_off, "GNU",
				   4) || !nh.n_descsz)
				continue;
			memcpy(buf, (const char *)data->d_buf + desc_off,
			       len < nh.n_descsz ? len : nh.n_descsz);
			return (int)nh.n_descsz;
		}
	}
	return -ENOENT;
}

int elffile__read(struct elf_file *ef, uint64_t vaddr, void *buf, size_t len)
{
	Elf_Scn *scn = NULL;

	if (vaddr + len < vaddr)
		return -EINVAL;
	if (!ef->sections)
		return read_vaddr(ef, vaddr, buf, len);
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

int elffile__section_view(struct elf_file *ef, const char *name,
			  size_t max, const void **out, size_t *size,
			  uint64_t *addr)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!ef->elf || elf_getshdrstrndx(ef->elf, &shstrndx))
		return -ENOENT;
	while ((scn = elf_nextscn(ef->elf, scn))) {
		const char *sname;
		Elf_Data *data;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		sname = elf_strptr(ef->elf, shstrndx, sh.sh_name);
		if (!sname || strcmp(sname, name))
			continue;
		/* libelf reads it whole: refuse before, not after */
		if (sh.sh_size > max)
			return -EFBIG;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf)
			return -ENOENT;
		*out = data->d_buf;
		*size = data->d_size;
		*addr = sh.sh_addr;
		return 0;
	}
	return -ENOENT;
}

int elffile__section(struct elf_file *ef, const char *name, void *buf,
		     size_t len, size_t *size)
{
	const void *data;
	uint64_t addr;
	int err;

	err = elffile__section_view(ef, name, SIZE_MAX, &data, size, &addr);
	if (!err)
		memcpy(buf, data, len < *size ? len : *size);
	return err;
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

/* The relocation of the pointer at vaddr, from DT_RELA: as find_rela(),
 * for a file without section headers. */
static int dynamic_rela(struct elf_file *ef, uint64_t vaddr, uint64_t *out)
{
	Elf64_Rela r[128];
	Elf64_Sym sym;
	uint64_t done, n;
	size_t i, k;

	if (!load_dynamic(ef) || !ef->dyn.relasz)
		return -ENOENT;
	n = ef->dyn.relasz / sizeof(r[0]);
	for (done = 0; done < n; done += k) {
		k = n - done < 128 ? (size_t)(n - done) : 128;
		if (pread_all(ef->fd, r, k * sizeof(r[0]),
			      ef->dyn.rela + done * sizeof(r[0])))
			return -ENOENT;
		for (i = 0; i < k; i++) {
			if (r[i].r_offset != vaddr)
				continue;
			switch (ELF64_R_TYPE(r[i].r_info)) {
			case R_X86_64_RELATIVE:
				*out = (uint64_t)r[i].r_addend;
				return 0;
			case R_X86_64_64:
			case R_X86_64_GLOB_DAT:
				if (ELF64_R_SYM(r[i].r_info) >
					    (UINT64_MAX - ef->dyn.symtab) / sizeof(sym) ||
				    pread_all(ef->fd, &sym, sizeof(sym),
					      ef->dyn.symtab + ELF64_R_SYM(r[i].r_info) *
								       sizeof(sym)) ||
				    sym.st_shndx == SHN_UNDEF)
					return -ENOENT;
				*out = sym.st_value + (uint64_t)r[i].r_addend;
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
	if (!ef->sections)
		return dynamic_rela(ef, vaddr, out);
	return find_rela(ef, vaddr, out);
}

int elffile__code_offset(struct elf_file *ef, uint64_t vaddr, uint64_t *out)
{
	return segment_offset(ef, vaddr, 1, PF_X, out) == 0 ? 0 : -ENOENT;
}
