// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * .eh_frame (the LSB's "Exception Frames", DWARF 4 section 6.4 for the
 * call frame instructions) compiled into unwind rows.  Each FDE's
 * instructions run after its CIE's initial ones; a row is written at
 * every address where the rule for the CFA, rbp or the return address
 * changes, and a gap row where the FDE ends.  Only what BPF can follow
 * is kept: a CFA from rsp or rbp plus an offset, the PLT's expression,
 * rbp saved at CFA + n, the return address at CFA - 8.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "ehframe.h"

/* DWARF registers of x86-64 (the psABI's numbering) */
#define REG_RBP		6
#define REG_RSP		7
#define REG_RA		16

/* DW_EH_PE_*: a pointer's format (low nibble) and what it is from */
#define PE_ABSPTR	0x00
#define PE_ULEB128	0x01
#define PE_UDATA2	0x02
#define PE_UDATA4	0x03
#define PE_UDATA8	0x04
#define PE_SLEB128	0x09
#define PE_SDATA2	0x0a
#define PE_SDATA4	0x0b
#define PE_SDATA8	0x0c
#define PE_PCREL	0x10
#define PE_INDIRECT	0x80
#define PE_OMIT		0xff

/* how deep DW_CFA_remember_state may nest: compilers use one level */
#define STATE_STACK	8
/* a CIE's instructions longer than this are not a compiler's */
#define CIE_MAX_INSNS	1024

struct cur {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t rd_bytes(struct cur *c, size_t n)
{
	uint64_t v = 0;
	size_t i;

	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = true;
		return 0;
	}
	for (i = 0; i < n; i++)	/* little-endian */
		v |= (uint64_t)c->p[i] << (8 * i);
	c->p += n;
	return v;
}

/* A LEB128 number, sign-extended when sign is set. */
static uint64_t rd_leb(struct cur *c, bool sign)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	uint8_t b;

	do {
		if (c->bad || c->p >= c->end) {
			c->bad = true;
			return 0;
		}
		b = *c->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (sign && shift < 64 && (b & 0x40))
		v |= ~0ULL << shift;
	return v;
}

static uint64_t rd_uleb(struct cur *c)
{
	return rd_leb(c, false);
}

static int64_t rd_sleb(struct cur *c)
{
	return (int64_t)rd_leb(c, true);
}

/*
 * A pointer in encoding enc, at the cursor; sec/sec_addr place the
 * cursor for pc-relative ones.  Only the forms x86-64 .eh_frame uses:
 * absolute or pc-relative, maybe indirect (a personality routine, whose
 * value is never used).  *ok false for the others.
 */
static uint64_t rd_pointer(struct cur *c, uint8_t enc, const uint8_t *sec,
			   uint64_t sec_addr, bool *ok)
{
	uint64_t at = sec_addr + (uint64_t)(c->p - sec), v;

	switch (enc & 0x0f) {
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8:
		v = rd_bytes(c, 8);
		break;
	case PE_ULEB128:
		v = rd_uleb(c);
		break;
	case PE_SLEB128:
		v = (uint64_t)rd_sleb(c);
		break;
	case PE_UDATA2:
		v = rd_bytes(c, 2);
		break;
	case PE_SDATA2:
		v = (uint64_t)(int64_t)(int16_t)rd_bytes(c, 2);
		break;
	case PE_UDATA4:
		v = rd_bytes(c, 4);
		break;
	case PE_SDATA4:
		v = (uint64_t)(int64_t)(int32_t)rd_bytes(c, 4);
		break;
	default:
		*ok = false;
		return 0;
	}
	if (enc & PE_INDIRECT)
		*ok = false;	/* an FDE's own pointers are never */
	switch (enc & 0x70) {
	case 0:
		break;
	case PE_PCREL:
		v += at;
		break;
	default:
		*ok = false;
	}
	return v;
}

/* The rules of one location that rows keep. */
struct rules {
	uint8_t cfa;		/* enum unwind_cfa */
	uint8_t rbp;		/* enum unwind_rbp */
	int64_t cfa_off, rbp_off;
	bool ra_ok;		/* the return address at CFA - 8 */
	bool cfa_expr;		/* the CFA is an expression, no register */
};

struct cie {
	uint64_t off;		/* in the section: the key */
	uint64_t caf;		/* code alignment factor */
	int64_t daf;		/* data alignment factor */
	uint64_t ra_reg;
	uint8_t fde_enc;
	bool aug_data;		/* 'z': FDEs carry augmentation data */
	bool ok;		/* usable */
	struct rules init;	/* after its initial instructions */
	UT_hash_handle hh;
};

struct state {
	struct rules r;
	struct rules stack[STATE_STACK];
	int depth;
};

/* v times the factor f, INT64_MAX when that overflows (no row keeps an
 * offset that large: the rule is dropped) */
static int64_t factored(int64_t v, int64_t f)
{
	int64_t out;

	return __builtin_mul_overflow(v, f, &out) ? INT64_MAX : out;
}

/* A register and offset: its kind kept even for a register rows do not
 * keep, so that DW_CFA_def_cfa_offset and _register apply on it. */
static void set_cfa(struct rules *r, uint64_t reg, int64_t off)
{
	r->cfa_off = off;
	r->cfa_expr = false;
	if (reg == REG_RSP)
		r->cfa = UNW_CFA_RSP;
	else if (reg == REG_RBP)
		r->cfa = UNW_CFA_RBP;
	else
		r->cfa = UNW_CFA_NONE;
}

/*
 * The expression of a PLT entry's CFA (binutils writes it for .plt and
 * .plt.sec): rsp + 8, and 8 more once the entry has pushed its index,
 * from byte `lim` of the 16-byte entry on.
 *   DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and;
 *   DW_OP_lit<lim>; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
 */
static bool plt_expression(const uint8_t *e, uint64_t len, int64_t *lim)
{
	static const uint8_t head[] = { 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a };
	static const uint8_t tail[] = { 0x2a, 0x33, 0x24, 0x22 };

	if (len != sizeof(head) + 1 + sizeof(tail) ||
	    memcmp(e, head, sizeof(head)) ||
	    memcmp(e + sizeof(head) + 1, tail, sizeof(tail)) ||
	    e[sizeof(head)] < 0x30 || e[sizeof(head)] > 0x3f)
		return false;
	*lim = e[sizeof(head)] - 0x30;
	return true;
}

/* A register's rule, where rows keep it. */
static void set_reg(const struct cie *cie, struct rules *r, uint64_t reg,
		    bool at_cfa, int64_t off)
{
	if (reg == REG_RBP) {
		r->rbp = at_cfa && off >= INT16_MIN && off <= INT16_MAX ?
			 UNW_RBP_CFA : UNW_RBP_LOST;
		r->rbp_off = at_cfa ? off : 0;
	} else if (reg == cie->ra_reg) {
		r->ra_ok = at_cfa && off == -8;
	}
}

/* A register's rule back to the CIE's (DW_CFA_restore). */
static void restore_reg(const struct cie *cie, struct rules *r, uint64_t reg)
{
	if (reg == REG_RBP) {
		r->rbp = cie->init.rbp;
		r->rbp_off = cie->init.rbp_off;
	} else if (reg == cie->ra_reg) {
		r->ra_ok = cie->init.ra_ok;
	}
}

struct emit {
	struct ehframe_table *t;
	uint64_t loc;
	size_t fde_first;	/* the FDE's first row */
	bool failed;		/* -ENOMEM */
	bool full;		/* EHFRAME_MAX_ROWS written */
};

static void put_row(struct emit *em, uint64_t pc, const struct rules *r,
		    bool gap)
{
	struct ehframe_table *t = em->t;
	struct unwind_row *row;

	if (em->failed || em->full)
		return;
	if (t->n == EHFRAME_MAX_ROWS) {
		em->full = true;
		return;
	}
	if (t->n > em->fde_first && t->rows[t->n - 1].pc == pc) {
		t->n--;		/* the FDE's last word on pc stands */
	} else if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct unwind_row *rows = realloc(t->rows, cap * sizeof(*rows));

		if (!rows) {
			em->failed = true;
			return;
		}
		t->rows = rows;
		t->cap = cap;
	}
	row = &t->rows[t->n++];
	memset(row, 0, sizeof(*row));
	row->pc = (uint32_t)pc;
	if (gap)
		return;
	if (!r->ra_ok && r->cfa != UNW_CFA_END) {
		t->rules_dropped++;
		return;
	}
	if (r->cfa == UNW_CFA_NONE ||
	    r->cfa_off < INT32_MIN || r->cfa_off > INT32_MAX) {
		if (r->cfa == UNW_CFA_NONE)
			t->rules_dropped++;
		return;
	}
	row->cfa = r->cfa;
	row->cfa_off = (int32_t)r->cfa_off;
	row->rbp = r->rbp;
	row->rbp_off = r->rbp == UNW_RBP_CFA ? (int16_t)r->rbp_off : 0;
}

/*
 * Run the instructions [c->p, c->end) from st.  With em, rows go out as
 * the location advances (em->loc, up to end); without, it is a CIE's
 * initial program (no advance allowed).  false: stop here (an
 * instruction not understood, or cut short).
 */
static bool run(const struct cie *cie, struct cur *c, struct state *st,
		const uint8_t *sec, uint64_t sec_addr, struct emit *em,
		uint64_t end)
{
	struct rules *r = &st->r;
	uint64_t reg, delta, len;
	int64_t off;
	bool ok = true;

	while (c->p < c->end && !c->bad) {
		uint8_t op = *c->p++, low = op & 0x3f;

		delta = 0;
		switch (op >> 6) {
		case 1:		/* DW_CFA_advance_loc */
			delta = low;
			goto advance;
		case 2:		/* DW_CFA_offset */
			off = factored((int64_t)rd_uleb(c), cie->daf);
			set_reg(cie, r, low, true, off);
			continue;
		case 3:		/* DW_CFA_restore */
			if (!em)
				return false;
			restore_reg(cie, r, low);
			continue;
		}
		switch (op) {
		case 0x00:	/* DW_CFA_nop */
			continue;
		case 0x01:	/* DW_CFA_set_loc */
			if (!em)
				return false;
			delta = rd_pointer(c, cie->fde_enc, sec, sec_addr, &ok);
			if (!ok || delta < em->loc)
				return false;
			delta = (delta - em->loc) / (cie->caf ? cie->caf : 1);
			goto advance;
		case 0x02:	/* DW_CFA_advance_loc1 */
			delta = rd_bytes(c, 1);
			goto advance;
		case 0x03:	/* DW_CFA_advance_loc2 */
			delta = rd_bytes(c, 2);
			goto advance;
		case 0x04:	/* DW_CFA_advance_loc4 */
			delta = rd_bytes(c, 4);
			goto advance;
		case 0x05:	/* DW_CFA_offset_extended */
			reg = rd_uleb(c);
			off = factored((int64_t)rd_uleb(c), cie->daf);
			set_reg(cie, r, reg, true, off);
			continue;
		case 0x11:	/* DW_CFA_offset_extended_sf */
			reg = rd_uleb(c);
			off = factored(rd_sleb(c), cie->daf);
			set_reg(cie, r, reg, true, off);
			continue;
		case 0x2f:	/* DW_CFA_GNU_negative_offset_extended */
			reg = rd_uleb(c);
			off = factored(factored((int64_t)rd_uleb(c), cie->daf),
				       -1);
			set_reg(cie, r, reg, true, off);
			continue;
		case 0x06:	/* DW_CFA_restore_extended */
			reg = rd_uleb(c);
			if (!em)
				return false;
			restore_reg(cie, r, reg);
			continue;
		case 0x07:	/* DW_CFA_undefined */
			reg = rd_uleb(c);
			if (reg == cie->ra_reg)
				r->cfa = UNW_CFA_END, r->ra_ok = false;
			else if (reg == REG_RBP)
				r->rbp = UNW_RBP_LOST;
			continue;
		case 0x08:	/* DW_CFA_same_value */
			reg = rd_uleb(c);
			if (reg == REG_RBP)
				r->rbp = UNW_RBP_SAME, r->rbp_off = 0;
			else if (reg == cie->ra_reg)
				r->ra_ok = false;
			continue;
		case 0x09:	/* DW_CFA_register */
			reg = rd_uleb(c);
			rd_uleb(c);
			set_reg(cie, r, reg, false, 0);
			continue;
		case 0x0a:	/* DW_CFA_remember_state */
			if (st->depth == STATE_STACK)
				return false;
			st->stack[st->depth++] = *r;
			continue;
		case 0x0b:	/* DW_CFA_restore_state */
			if (!st->depth)
				return false;
			*r = st->stack[--st->depth];
			continue;
		case 0x0c:	/* DW_CFA_def_cfa */
			reg = rd_uleb(c);
			off = (int64_t)rd_uleb(c);
			if (r->cfa != UNW_CFA_END)
				set_cfa(r, reg, off);
			continue;
		case 0x12:	/* DW_CFA_def_cfa_sf */
			reg = rd_uleb(c);
			off = factored(rd_sleb(c), cie->daf);
			if (r->cfa != UNW_CFA_END)
				set_cfa(r, reg, off);
			continue;
		case 0x0d:	/* DW_CFA_def_cfa_register */
			reg = rd_uleb(c);
			if (r->cfa != UNW_CFA_END && !r->cfa_expr)
				set_cfa(r, reg, r->cfa_off);
			continue;
		case 0x0e:	/* DW_CFA_def_cfa_offset */
			off = (int64_t)rd_uleb(c);
			if (r->cfa != UNW_CFA_END && !r->cfa_expr)
				r->cfa_off = off;
			continue;
		case 0x13:	/* DW_CFA_def_cfa_offset_sf */
			off = factored(rd_sleb(c), cie->daf);
			if (r->cfa != UNW_CFA_END && !r->cfa_expr)
				r->cfa_off = off;
			continue;
		case 0x0f:	/* DW_CFA_def_cfa_expression */
			len = rd_uleb(c);
			if (c->bad || len > (uint64_t)(c->end - c->p))
				return false;
			if (r->cfa != UNW_CFA_END) {
				r->cfa = plt_expression(c->p, len, &off) ?
					 UNW_CFA_PLT : UNW_CFA_NONE;
				r->cfa_off = r->cfa == UNW_CFA_PLT ? off : 0;
				r->cfa_expr = true;
			}
			c->p += len;
			continue;
		case 0x10:	/* DW_CFA_expression */
		case 0x16:	/* DW_CFA_val_expression */
			reg = rd_uleb(c);
			len = rd_uleb(c);
			if (c->bad || len > (uint64_t)(c->end - c->p))
				return false;
			c->p += len;
			set_reg(cie, r, reg, false, 0);
			continue;
		case 0x14:	/* DW_CFA_val_offset */
			reg = rd_uleb(c);
			rd_uleb(c);
			set_reg(cie, r, reg, false, 0);
			continue;
		case 0x15:	/* DW_CFA_val_offset_sf */
			reg = rd_uleb(c);
			rd_sleb(c);
			set_reg(cie, r, reg, false, 0);
			continue;
		case 0x2e:	/* DW_CFA_GNU_args_size */
			rd_uleb(c);
			continue;
		default:
			return false;
		}
advance:
		if (!em || c->bad)
			return false;
		put_row(em, em->loc, r, false);
		if (delta > (end - em->loc) / (cie->caf ? cie->caf : 1))
			return true;	/* past the FDE: the rest is moot */
		em->loc += delta * cie->caf;
	}
	return !c->bad;
}

/* CIEs read per section at most, and what stands for any past that */
#define CIES_MAX	4096
static struct cie refused;

/* The CIE at off, parsed once. */
static struct cie *get_cie(struct cie **cies, const uint8_t *sec, size_t len,
			   uint64_t sec_addr, uint64_t off)
{
	struct cur c = { sec + off, sec + len, false };
	uint64_t rec_len, id;
	struct cie *cie;
	const char *aug;
	struct state st;
	uint8_t version;
	bool ok = true;

	HASH_FIND(hh, *cies, &off, sizeof(off), cie);
	if (cie)
		return cie;
	if (HASH_COUNT(*cies) >= CIES_MAX)
		return &refused;	/* hostile: a compiler writes a few */
	cie = calloc(1, sizeof(*cie));
	if (!cie)
		return NULL;
	cie->off = off;
	HASH_ADD(hh, *cies, off, sizeof(cie->off), cie);

	rec_len = rd_bytes(&c, 4);
	if (rec_len == 0xffffffff || c.bad || rec_len > (uint64_t)(c.end - c.p))
		return cie;	/* 64-bit DWARF is not x86-64 .eh_frame */
	c.end = c.p + rec_len;
	id = rd_bytes(&c, 4);
	version = (uint8_t)rd_bytes(&c, 1);
	if (c.bad || id != 0 || (version != 1 && version != 3))
		return cie;
	aug = (const char *)c.p;
	while (c.p < c.end && *c.p)
		c.p++;
	if (c.p == c.end)
		return cie;
	c.p++;
	if (aug[0] && aug[0] != 'z')
		return cie;	/* "eh" and other ancient forms */
	cie->caf = rd_uleb(&c);
	cie->daf = rd_sleb(&c);
	cie->ra_reg = version == 1 ? rd_bytes(&c, 1) : rd_uleb(&c);
	cie->fde_enc = PE_ABSPTR;
	if (aug[0] == 'z') {
		uint64_t alen = rd_uleb(&c);
		struct cur a = { c.p, c.p, false };
		const char *s;

		if (c.bad || alen > (uint64_t)(c.end - c.p))
			return cie;
		a.end = c.p + alen;
		c.p += alen;
		cie->aug_data = true;
		for (s = aug + 1; *s && ok && !a.bad; s++) {
			uint8_t enc;

			switch (*s) {
			case 'R':
				cie->fde_enc = (uint8_t)rd_bytes(&a, 1);
				break;
			case 'L':
				rd_bytes(&a, 1);
				break;
			case 'P':
				enc = (uint8_t)rd_bytes(&a, 1);
				rd_pointer(&a, enc & ~PE_INDIRECT, sec,
					   sec_addr, &ok);
				break;
			case 'S':	/* a signal frame: the pc is exact */
			case 'B':
			case 'G':
				break;
			default:
				ok = false;	/* the rest cannot be read */
			}
		}
		if (!ok || a.bad)
			return cie;
	}
	if (c.bad || !cie->caf || cie->ra_reg != REG_RA ||
	    c.end - c.p > CIE_MAX_INSNS)
		return cie;
	memset(&st, 0, sizeof(st));
	st.r.ra_ok = false;
	if (!run(cie, &c, &st, sec, sec_addr, NULL, 0))
		return cie;
	cie->init = st.r;
	cie->ok = true;
	return cie;
}

/* Rows by pc; at one pc a rule before a gap (the FDE that starts there
 * against the one that ends there).  Two rules at one pc (overlapping
 * FDEs, which no linker writes) keep either. */
static int row_cmp(const void *a, const void *b)
{
	const struct unwind_row *x = a, *y = b;

	if (x->pc != y->pc)
		return x->pc < y->pc ? -1 : 1;
	if ((x->cfa == UNW_CFA_NONE) != (y->cfa == UNW_CFA_NONE))
		return x->cfa == UNW_CFA_NONE ? 1 : -1;
	return 0;
}

static bool same_rule(const struct unwind_row *a, const struct unwind_row *b)
{
	return a->cfa == b->cfa && a->cfa_off == b->cfa_off &&
	       a->rbp == b->rbp && a->rbp_off == b->rbp_off;
}

/* Sorted, one row per pc, none that repeats the rule before it. */
static void tidy(struct ehframe_table *t)
{
	size_t i, n = 0;

	if (!t->n)
		return;
	qsort(t->rows, t->n, sizeof(*t->rows), row_cmp);
	for (i = 0; i < t->n; i++) {
		const struct unwind_row *r = &t->rows[i];

		if (i && t->rows[i - 1].pc == r->pc)
			continue;	/* the first at a pc stands */
		if (n && same_rule(&t->rows[n - 1], r))
			continue;
		t->rows[n++] = *r;
	}
	t->n = n;
}

static void free_cies(struct cie **cies)
{
	struct cie *cie, *tmp;

	HASH_ITER(hh, *cies, cie, tmp) {
		HASH_DEL(*cies, cie);
		free(cie);
	}
}

int ehframe__parse(const void *data, size_t len, uint64_t sec_addr,
		   struct ehframe_table *t)
{
	const uint8_t *sec = data;
	struct cie *cies = NULL;
	struct emit em = { .t = t };
	size_t off = 0;

	ehframe__free(t);
	if (len > EHFRAME_MAX_SIZE)
		return -EINVAL;
	while (off + 4 <= len && !em.failed) {
		struct cur c = { sec + off, sec + len, false };
		uint64_t rec_len = rd_bytes(&c, 4), id_at, id, pc, range;
		const uint8_t *rec_end;
		struct state st;
		struct cie *cie;
		bool ok = true;

		if (rec_len == 0)
			break;		/* the terminator */
		if (rec_len == 0xffffffff || rec_len > (uint64_t)(c.end - c.p)) {
			if (!off)
				return -EINVAL;
			break;
		}
		rec_end = c.p + rec_len;
		c.end = rec_end;
		id_at = (uint64_t)(c.p - sec);
		id = rd_bytes(&c, 4);
		off = (size_t)(rec_end - sec);
		if (c.bad || id == 0)
			continue;	/* a CIE: read when an FDE uses it */
		t->fdes++;
		if (id > id_at) {
			t->fdes_refused++;
			continue;
		}
		cie = get_cie(&cies, sec, len, sec_addr, id_at - id);
		if (!cie) {
			em.failed = true;
			break;
		}
		if (!cie->ok) {
			t->fdes_refused++;
			continue;
		}
		pc = rd_pointer(&c, cie->fde_enc, sec, sec_addr, &ok);
		range = rd_pointer(&c, cie->fde_enc & 0x0f, sec, sec_addr,
				   &ok);
		if (cie->aug_data) {
			uint64_t alen = rd_uleb(&c);

			if (alen > (uint64_t)(c.end - c.p))
				c.bad = true;
			else
				c.p += alen;
		}
		if (!ok || c.bad || !range || pc > UINT32_MAX ||
		    range > UINT32_MAX - pc) {
			t->fdes_refused++;
			continue;
		}
		memset(&st, 0, sizeof(st));
		st.r = cie->init;
		em.loc = pc;
		em.fde_first = t->n;
		if (!run(cie, &c, &st, sec, sec_addr, &em, pc + range) &&
		    em.loc < pc + range) {
			/* not understood from em.loc on: a gap there */
			put_row(&em, em.loc, &st.r, true);
			em.loc = pc + range;
		}
		if (em.loc < pc + range)
			put_row(&em, em.loc, &st.r, false);
		put_row(&em, pc + range, &st.r, true);
		if (em.full) {
			/* an FDE cut short would rule past its end: the rows
			 * of whole FDEs alone stand */
			t->n = em.fde_first;
			t->truncated = true;
			break;
		}
		if (range > t->largest_len) {
			t->largest_pc = (uint32_t)pc;
			t->largest_len = (uint32_t)range;
		}
	}
	free_cies(&cies);
	if (em.failed) {
		ehframe__free(t);
		return -ENOMEM;
	}
	tidy(t);
	return 0;
}

const struct unwind_row *ehframe__find(const struct ehframe_table *t,
				       uint64_t pc)
{
	size_t lo = 0, hi = t->n;

	if (!t->n || pc < t->rows[0].pc || pc > UINT32_MAX)
		return NULL;
	while (hi - lo > 1) {	/* rows[lo].pc <= pc < rows[hi].pc */
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= pc)
			lo = mid;
		else
			hi = mid;
	}
	return &t->rows[lo];
}

void ehframe__free(struct ehframe_table *t)
{
	free(t->rows);
	memset(t, 0, sizeof(*t));
}
