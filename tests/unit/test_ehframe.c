// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/native/ehframe.c against elfutils' libdw, the reader perf and
 * systemd-coredump unwind with: for real binaries of this host, at every
 * address where libdw's rule changes, our row must say the same as libdw
 * wherever a row keeps a rule, and must be a gap where libdw has none.
 * Then cut and flipped sections: no crash, no rule where there was none.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "ehframe.h"

struct want {
	uint8_t cfa, rbp;
	int64_t cfa_off, rbp_off;
	bool any;		/* libdw has a rule here */
};

/* The rows' form of libdw's rule at pc. */
static struct want libdw_rule(Dwarf_CFI *cfi, uint64_t pc, uint64_t *end)
{
	static const uint8_t plt[] = { DW_OP_breg7, DW_OP_breg16, DW_OP_lit15,
				       DW_OP_and, 0, DW_OP_ge, DW_OP_lit3,
				       DW_OP_shl, DW_OP_plus };
	struct want w = { 0 };
	Dwarf_Op mem[3], *ops;
	Dwarf_Addr start, stop;
	Dwarf_Frame *f;
	size_t n, i;

	*end = pc + 1;
	if (dwarf_cfi_addrframe(cfi, pc, &f))
		return w;
	w.any = true;
	if (dwarf_frame_info(f, &start, &stop, NULL) >= 0)
		*end = stop;
	if (dwarf_frame_cfa(f, &ops, &n) == 0) {
		if (n == 1 && ops[0].atom == DW_OP_bregx &&
		    (ops[0].number == 6 || ops[0].number == 7)) {
			w.cfa = ops[0].number == 7 ? UNW_CFA_RSP : UNW_CFA_RBP;
			w.cfa_off = (int64_t)ops[0].number2;
		} else if (n == sizeof(plt) && ops[0].number == 8 &&
			   ops[4].atom >= DW_OP_lit0 && ops[4].atom <= DW_OP_lit31) {
			w.cfa = UNW_CFA_PLT;
			for (i = 0; i < n; i++)
				if (i != 4 && ops[i].atom != plt[i])
					w.cfa = UNW_CFA_NONE;
			w.cfa_off = ops[4].atom - DW_OP_lit0;
		}
	}
	ops = NULL;
	n = 0;
	/* libdw.h: no operations from ops_mem is "undefined", none from
	 * NULL "same_value" */
	if (dwarf_frame_register(f, 16, mem, &ops, &n) == 0 && !n &&
	    ops == mem) {
		w.cfa = UNW_CFA_END;
	} else if (!(n == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
		     ops[1].atom == DW_OP_plus_uconst &&
		     (int64_t)ops[1].number == -8)) {
		w.cfa = UNW_CFA_NONE;
	}
	ops = NULL;
	n = 0;
	w.rbp = UNW_RBP_LOST;
	if (dwarf_frame_register(f, 6, mem, &ops, &n) == 0) {
		if (!ops && n == 0) {
			w.rbp = UNW_RBP_SAME;
		} else if (ops && ops[0].atom == DW_OP_call_frame_cfa &&
			   (n == 1 || (n == 2 && ops[1].atom == DW_OP_plus_uconst))) {
			w.rbp = UNW_RBP_CFA;
			w.rbp_off = n == 2 ? (int64_t)ops[1].number : 0;
		}
	}
	free(f);
	return w;
}

static Elf *open_elf(const char *path, int *fd)
{
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	return *fd < 0 ? NULL : elf_begin(*fd, ELF_C_READ, NULL);
}

static bool eh_frame(Elf *e, const void **data, size_t *size, uint64_t *addr)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(e, &shstrndx))
		return false;
	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d;
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".eh_frame"))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			return false;
		*data = d->d_buf;
		*size = d->d_size;
		*addr = sh.sh_addr;
		return true;
	}
	return false;
}

/* Every rule of path's .eh_frame as libdw reads it; the number of libdw
 * rows seen, 0 when the file is not here. */
static size_t compare(const char *path)
{
	struct ehframe_table t = { 0 };
	size_t rows = 0, bad = 0;
	const void *data;
	uint64_t addr, pc, end, last;
	Dwarf_CFI *cfi;
	size_t size;
	Elf *e;
	int fd;

	e = open_elf(path, &fd);
	if (!e)
		return 0;
	if (!eh_frame(e, &data, &size, &addr)) {
		CHECK(0, "%s: no .eh_frame", path);
		goto out;
	}
	CHECK(ehframe__parse(data, size, addr, &t) == 0, "%s parses", path);
	CHECK(t.n > 100 && t.fdes > 50, "%s: %zu rows of %u FDEs", path, t.n,
	      t.fdes);
	CHECK(t.fdes_refused == 0, "%s: %u FDEs refused", path,
	      t.fdes_refused);
	cfi = dwarf_getcfi_elf(e);
	if (!cfi || !t.n) {
		CHECK(0, "%s: libdw reads no CFI", path);
		goto out;
	}
	last = t.rows[t.n - 1].pc;
	for (pc = t.rows[0].pc; pc <= last; pc = end) {
		const struct unwind_row *r = ehframe__find(&t, pc);
		struct want w = libdw_rule(cfi, pc, &end);
		bool ok;

		if (end <= pc)
			end = pc + 1;
		/* libdw's row may span several of ours (we drop what BPF
		 * cannot use): the next of ours comes first then */
		if (r && r + 1 < t.rows + t.n && r[1].pc < end)
			end = r[1].pc;
		if (!w.any)	/* between FDEs: a gap to the next of ours */
			end = r && r + 1 < t.rows + t.n ? r[1].pc : last + 1;
		rows++;
		if (!r)
			ok = false;
		else if (!w.any || w.cfa == UNW_CFA_NONE)
			ok = r->cfa == UNW_CFA_NONE;
		else if (w.cfa == UNW_CFA_END)
			ok = r->cfa == UNW_CFA_END;
		else
			ok = r->cfa == w.cfa && r->cfa_off == w.cfa_off &&
			     r->rbp == w.rbp &&
			     (w.rbp != UNW_RBP_CFA || r->rbp_off == w.rbp_off);
		if (!ok && bad++ < 5)
			CHECK(0, "%s at %#lx: ours cfa %d%+d rbp %d%+d, libdw "
			      "%s cfa %d%+ld rbp %d%+ld", path,
			      (unsigned long)pc, r ? r->cfa : -1,
			      r ? r->cfa_off : 0, r ? r->rbp : -1,
			      r ? r->rbp_off : 0, w.any ? "has" : "none",
			      w.cfa, (long)w.cfa_off, w.rbp, (long)w.rbp_off);
	}
	CHECK(bad == 0, "%s: %zu of %zu rules differ", path, bad, rows);
	printf("  %s: %zu rows (%u FDEs, %u rules not kept), %zu libdw rules\n",
	       path, t.n, t.fdes, t.rules_dropped, rows);
	dwarf_cfi_end(cfi);
out:
	ehframe__free(&t);
	elf_end(e);
	close(fd);
	return rows;
}

/* Cut at every length near the start, and bytes flipped: never a crash
 * (ASan watches), and only rules inside the section's FDEs' ranges. */
static void test_hostile(const char *path)
{
	struct ehframe_table t = { 0 };
	const void *data;
	uint64_t addr;
	size_t size, len, i;
	uint8_t *copy;
	Elf *e;
	int fd;

	e = open_elf(path, &fd);
	if (!e || !eh_frame(e, &data, &size, &addr)) {
		CHECK(0, "%s: no .eh_frame", path);
		goto out;
	}
	for (len = 0; len < 512 && len <= size; len++) {
		copy = malloc(len ? len : 1);
		memcpy(copy, data, len);
		ehframe__parse(copy, len, addr, &t);
		free(copy);
	}
	CHECK(1, "cut");
	copy = malloc(size);
	srand(7);
	for (i = 0; i < 200; i++) {
		size_t j;

		memcpy(copy, data, size);
		for (j = 0; j < 16; j++)
			copy[rand() % (size < 4096 ? size : 4096)] = (uint8_t)rand();
		ehframe__parse(copy, size, addr, &t);
	}
	free(copy);
	CHECK(ehframe__parse(data, (size_t)EHFRAME_MAX_SIZE + 1, addr, &t) ==
	      -EINVAL, "too large");
	CHECK(t.n == 0, "nothing kept from a refused section");
out:
	ehframe__free(&t);
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
}

/* One FDE of 5 Mi rows (a hostile section): cut at EHFRAME_MAX_ROWS,
 * and the FDE cut short left out whole, not ruling past its end. */
static void test_too_many_rows(void)
{
	static const uint8_t cie[] = {
		0x14, 0, 0, 0, 0, 0, 0, 0,	/* length 20, CIE id 0 */
		1, 'z', 'R', 0, 1, 0x78, 16,	/* v1 "zR", caf 1, daf -8, ra 16 */
		1, 0x1b,			/* R: pcrel sdata4 */
		0x0c, 7, 8, 0x90, 1, 0, 0	/* def_cfa rsp+8, ra at cfa-8 */
	};
	size_t rows = 5u << 20, fde_len = 4 + 4 + 4 + 1 + 3 * rows;
	size_t len = sizeof(cie) + 4 + fde_len, at, i;
	struct ehframe_table t = { 0 };
	uint8_t *sec = calloc(1, len + 4);
	uint32_t v;

	if (!sec)
		return;
	memcpy(sec, cie, sizeof(cie));
	at = sizeof(cie);
	v = (uint32_t)fde_len;
	memcpy(sec + at, &v, 4);
	v = (uint32_t)(at + 4);			/* back to the CIE */
	memcpy(sec + at + 4, &v, 4);
	v = 0x1000 - (uint32_t)(at + 8);	/* pc 0x1000, pc-relative */
	memcpy(sec + at + 8, &v, 4);
	v = 0x7fffffff;				/* range */
	memcpy(sec + at + 12, &v, 4);
	sec[at + 16] = 0;			/* no augmentation data */
	for (i = 0; i < rows; i++) {		/* offset 16 or 24, advance 1 */
		sec[at + 17 + 3 * i] = 0x0e;
		sec[at + 18 + 3 * i] = (i & 1) ? 24 : 16;
		sec[at + 19 + 3 * i] = 0x41;
	}
	CHECK(ehframe__parse(sec, len + 4, 0, &t) == 0 && t.truncated &&
	      t.n == 0, "cut at the cap: %zu rows, truncated %d", t.n,
	      t.truncated);
	ehframe__free(&t);
	free(sec);
}

/* A CIE (pcrel sdata4 FDE pointers, CFA rsp+8, ra at CFA-8) and one FDE
 * for [0x1000, 0x1100) of instructions insns: the rule at 0x1000. */
static const struct unwind_row *one_fde(struct ehframe_table *t,
					const uint8_t *insns, size_t n)
{
	static const uint8_t cie[] = {
		0x14, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16,
		1, 0x1b, 0x0c, 7, 8, 0x90, 1, 0, 0
	};
	uint8_t sec[128] = { 0 };
	size_t at = sizeof(cie), len = 4 + 4 + 4 + 1 + n;
	uint32_t v;

	memcpy(sec, cie, sizeof(cie));
	v = (uint32_t)len;
	memcpy(sec + at, &v, 4);
	v = (uint32_t)(at + 4);
	memcpy(sec + at + 4, &v, 4);
	v = 0x1000 - (uint32_t)(at + 8);
	memcpy(sec + at + 8, &v, 4);
	v = 0x100;
	memcpy(sec + at + 12, &v, 4);
	memcpy(sec + at + 17, insns, n);
	if (ehframe__parse(sec, at + 4 + len + 4, 0, t))
		return NULL;
	return ehframe__find(t, 0x1000);
}

/* DW_CFA_def_cfa_offset and _register apply to a CFA in a register rows
 * do not keep (r10 in hand-written code), and not to an expression. */
static void test_cfa_register_moves(void)
{
	static const uint8_t r10[] = { 0x0c, 10, 0, 0x0e, 16, 0x0d, 7 };
	static const uint8_t expr[] = { 0x0f, 2, 0x77, 0x10, 0x0e, 16,
					0x0d, 7 };
	struct ehframe_table t = { 0 };
	const struct unwind_row *r;

	r = one_fde(&t, r10, sizeof(r10));
	CHECK(r && r->cfa == UNW_CFA_RSP && r->cfa_off == 16,
	      "r10+0, offset 16, register rsp: rsp%+d", r ? r->cfa_off : 0);
	r = one_fde(&t, expr, sizeof(expr));
	CHECK(r && r->cfa == UNW_CFA_NONE, "an expression stays one: %d",
	      r ? r->cfa : -1);
	ehframe__free(&t);
}

int main(int argc, char **argv)
{
	static const char *const bins[] = {
		"/lib/x86_64-linux-gnu/libc.so.6",
		"/lib/x86_64-linux-gnu/libstdc++.so.6",
		"/lib/x86_64-linux-gnu/libm.so.6",
		"/lib64/ld-linux-x86-64.so.2",
		"/usr/bin/python3.11",
	};
	size_t i, seen = 0;

	(void)argc;
	elf_version(EV_CURRENT);
	for (i = 0; i < sizeof(bins) / sizeof(bins[0]); i++)
		seen += compare(bins[i]) ? 1 : 0;
	seen += compare(argv[0]) ? 1 : 0;
	CHECK(seen >= 3, "only %zu of the binaries are here", seen);
	test_hostile("/lib/x86_64-linux-gnu/libc.so.6");
	test_too_many_rows();
	test_cfa_register_moves();
	return check_summary();
}
