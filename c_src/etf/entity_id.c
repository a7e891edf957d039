/* entity_id.c — see entity_id.h.
 *
 * One pass over the input writes every term in canonical form straight into
 * the output buffer, in input order, with an explicit stack of open
 * containers. Lists are written as LIST_EXT with a placeholder length and,
 * once their end is known, patched or compacted into STRING_EXT in place.
 *
 * Map pairs are the one thing that cannot be written in final order: the
 * order depends on the canonical bytes of the keys, which exist only once the
 * keys are written. Moving the bytes of a sorted map would cost the size of
 * the map at every level of nesting (quadratic in the worst case), so pairs
 * stay where they were written and each map of two or more pairs gets a
 * record listing its pairs in canonical order. Reading "the canonical bytes"
 * of a region then means walking it through those records (struct walk): the
 * key comparisons of an enclosing map do that, and so does one final pass
 * that lays the whole output out in order, needed only when some map's order
 * differs from its input order.
 *
 * This file walks containers; every scalar term is rewritten by
 * entity_id_scalar.c, through the same struct id_io.
 */
#include "etf/entity_id.h"
#include "etf/entity_id_scalar.h"
#include "etf/term_tag.h"
#include "base/byteorder.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- state ---- */

/* One key/value pair of a map, as offsets into the output buffer. */
struct pair {
	size_t off;     /* first byte of the key */
	size_t key_len; /* bytes of the key */
	size_t len;     /* bytes of key and value */
};

/* A map of two or more pairs. Its pairs lie in [hdr + 5, end) in input
 * order; `pairs` lists them in canonical order (NULL while the map is still
 * open). Records are created when a map opens, so they are ordered by hdr. */
struct maprec {
	size_t hdr; /* offset of the MAP_EXT tag */
	size_t end;
	struct pair *pairs;
	uint32_t npairs;
};

enum kind { K_TUPLE, K_LIST, K_MAP };

/* An open container. */
struct frame {
	enum kind kind;
	bool hdr;       /* list: the LIST_EXT header is written */
	bool tail;      /* list: the next term read is the tail */
	bool all_small; /* list: every element so far is a SMALL_INTEGER_EXT */
	bool have_key;  /* map: a key is written, its value comes next */
	size_t start;   /* output offset of the container's first byte */
	uint64_t left;  /* tuple: elements; list: elements of this segment; map: pairs */
	uint64_t count; /* list: elements written */
	struct pair *pairs; /* map: pairs written, input order */
	uint32_t npairs;
	size_t rec;     /* map: index into ctx.recs, or SIZE_MAX */
	size_t key_off; /* map: the key waiting for its value */
	size_t key_len;
};

/* A walk through the canonical bytes of an output region. */
struct walk_level {
	size_t rec;  /* the record being walked */
	uint32_t k;  /* current pair, canonical order */
	size_t end;  /* end of that pair */
};

struct walk {
	size_t p, end;
	struct walk_level *st;
	size_t depth, cap;
};

struct ctx {
	struct id_io io;    /* input cursor and output; scalars are read through it */
	struct frame *st;
	size_t depth, cap;
	struct maprec *recs;
	size_t nrecs, recs_cap;
	bool reorder;       /* some map's canonical order is not its input order */
	struct walk wa, wb; /* reused by key comparisons */
	int err;            /* a failure inside a comparison */
};

static unsigned char *obuf(struct ctx *c) { return (unsigned char *)c->io.out->buff; }
static size_t opos(const struct ctx *c) { return (size_t)c->io.out->index; }


/* Grows a heap array to hold at least `need` items. */
static int grow(void **arr, size_t *cap, size_t need, size_t item)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 16;
	while (n < need) {
		if (n > SIZE_MAX / 2 / item)
			return -ENOMEM;
		n *= 2;
	}
	void *p = realloc(*arr, n * item);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = n;
	return 0;
}

/* ---- walking canonical bytes ---- */

static void walk_init(struct walk *w, size_t from, size_t to)
{
	w->p = from;
	w->end = to;
	w->depth = 0;
}

/* The first record with hdr >= p. */
static size_t rec_at_or_after(const struct ctx *c, size_t p)
{
	size_t lo = 0, hi = c->nrecs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->recs[mid].hdr < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Sets [*chunk, *chunk + *n) to the next run of canonical bytes. Returns 1,
 * 0 at the end of the region, or -ENOMEM. Every record inside the region
 * belongs to a complete map. */
static int walk_next(struct ctx *c, struct walk *w, size_t *chunk, size_t *n)
{
	for (;;) {
		size_t lim = w->depth ? w->st[w->depth - 1].end : w->end;
		if (w->p == lim) {
			if (!w->depth)
				return 0;
			struct walk_level *l = &w->st[w->depth - 1];
			const struct maprec *m = &c->recs[l->rec];
			if (++l->k < m->npairs) {
				w->p = m->pairs[l->k].off;
				l->end = w->p + m->pairs[l->k].len;
			} else {
				w->p = m->end;
				w->depth--;
			}
			continue;
		}
		size_t r = rec_at_or_after(c, w->p);
		if (r < c->nrecs && c->recs[r].hdr < lim) {
			const struct maprec *m = &c->recs[r];
			if (w->p < m->hdr) {
				*chunk = w->p;
				*n = m->hdr - w->p;
				w->p = m->hdr;
				return 1;
			}
			if (grow((void **)&w->st, &w->cap, w->depth + 1, sizeof *w->st))
				return -ENOMEM;
			*chunk = m->hdr;
			*n = 5;
			w->st[w->depth++] = (struct walk_level){r, 0, m->pairs[0].off + m->pairs[0].len};
			w->p = m->pairs[0].off;
			return 1;
		}
		*chunk = w->p;
		*n = lim - w->p;
		w->p = lim;
		return 1;
	}
}

/* Compares the canonical bytes of two keys: memcmp order, a proper prefix
 * first. On failure sets c->err and returns 0. */
static int cmp_keys(struct ctx *c, const struct pair *a, const struct pair *b)
{
	struct walk *wa = &c->wa, *wb = &c->wb;
	walk_init(wa, a->off, a->off + a->key_len);
	walk_init(wb, b->off, b->off + b->key_len);
	size_t pa = 0, na = 0, pb = 0, nb = 0;
	for (;;) {
		int ra = 1, rb = 1;
		if (!na)
			ra = walk_next(c, wa, &pa, &na);
		if (!nb)
			rb = walk_next(c, wb, &pb, &nb);
		if (ra < 0 || rb < 0) {
			c->err = -ENOMEM;
			return 0;
		}
		if (ra == 0 || rb == 0)
			return (ra == 0 && rb == 0) ? 0 : ra == 0 ? -1 : 1;
		size_t m = na < nb ? na : nb;
		int d = memcmp(obuf(c) + pa, obuf(c) + pb, m);
		if (d)
			return d < 0 ? -1 : 1;
		pa += m;
		na -= m;
		pb += m;
		nb -= m;
	}
}

/* ---- containers ---- */

static int push(struct ctx *c, struct frame f)
{
	if (grow((void **)&c->st, &c->cap, c->depth + 1, sizeof *c->st))
		return -ENOMEM;
	c->st[c->depth++] = f;
	return 0;
}

static struct frame new_frame(enum kind kind, size_t start, uint64_t left)
{
	struct frame f;
	memset(&f, 0, sizeof f);
	f.kind = kind;
	f.start = start;
	f.left = left;
	f.rec = SIZE_MAX;
	return f;
}

/* Reads a LIST_EXT header: its element count, checked against the input. */
static int read_list_header(struct ctx *c, uint64_t *n)
{
	if (id_io_avail(&c->io) < 5)
		return -EPROTO;
	*n = be32_read(c->io.in + c->io.i + 1);
	c->io.i += 5;
	if (*n > id_io_avail(&c->io)) /* each element takes a byte, and the tail one more */
		return -EPROTO;
	return 0;
}

static int list_header(struct ctx *c, struct frame *f)
{
	if (f->hdr)
		return 0;
	static const unsigned char h[5] = {ERL_LIST_EXT, 0, 0, 0, 0};
	f->hdr = true;
	return id_io_put(&c->io, h, sizeof h);
}

/* A STRING_EXT as the tail of an open list: its bytes are more elements. */
static int list_string_tail(struct ctx *c, struct frame *f)
{
	if (id_io_avail(&c->io) < 3)
		return -EPROTO;
	size_t n = be16_read(c->io.in + c->io.i + 1);
	if (id_io_avail(&c->io) - 3 < n)
		return -EPROTO;
	const unsigned char *s = c->io.in + c->io.i + 3;
	c->io.i += 3 + n;
	if (n == 0)
		return 0;
	int rc = list_header(c, f);
	unsigned char pairs[512];
	for (size_t k = 0; !rc && k < n;) {
		size_t m = 0;
		for (; k < n && m < sizeof pairs; k++) {
			pairs[m++] = ERL_SMALL_INTEGER_EXT;
			pairs[m++] = s[k];
		}
		rc = id_io_put(&c->io, pairs, m);
	}
	f->count += n;
	return rc;
}

/* Closes a list whose last tail has been read: NIL (proper) or the term
 * written last (improper). */
static int finish_list(struct ctx *c, struct frame *f, bool proper)
{
	if (f->count == 0) {
		/* No elements: the list is its tail, already in place. */
		if (!proper)
			return 0;
		unsigned char nil = ERL_NIL_EXT;
		return id_io_put(&c->io, &nil, 1);
	}
	if (f->count > UINT32_MAX)
		return -EPROTO;
	unsigned char *b = obuf(c) + f->start;
	if (proper && f->all_small && f->count <= 65535) {
		/* LIST_EXT n, (97 x)*, NIL  ->  STRING_EXT n, x* */
		size_t n = (size_t)f->count;
		b[0] = ERL_STRING_EXT;
		be16_write(b + 1, (uint16_t)n);
		for (size_t k = 0; k < n; k++)
			b[3 + k] = b[5 + 2 * k + 1];
		c->io.out->index = (int)(f->start + 3 + n);
		return 0;
	}
	be32_write(b + 1, (uint32_t)f->count);
	if (!proper)
		return 0;
	unsigned char nil = ERL_NIL_EXT;
	return id_io_put(&c->io, &nil, 1);
}

/* Sorts idx[0..n) by the keys of pairs (bottom-up merge sort). */
static int sort_pairs(struct ctx *c, const struct pair *pairs, uint32_t *idx, uint32_t n)
{
	uint32_t *tmp = malloc((size_t)n * sizeof *tmp);
	if (!tmp)
		return -ENOMEM;
	uint32_t *src = idx, *dst = tmp;
	for (size_t width = 1; width < n; width *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * width) {
			size_t mid = lo + width < n ? lo + width : n;
			size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
			size_t a = lo, b = mid, o = lo;
			while (a < mid && b < hi) {
				if (cmp_keys(c, &pairs[src[a]], &pairs[src[b]]) <= 0)
					dst[o++] = src[a++];
				else
					dst[o++] = src[b++];
			}
			while (a < mid)
				dst[o++] = src[a++];
			while (b < hi)
				dst[o++] = src[b++];
		}
		uint32_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != idx)
		memcpy(idx, src, (size_t)n * sizeof *idx);
	free(tmp);
	return c->err;
}

/* Closes a map whose pairs are all written: orders them, refuses duplicate
 * keys, and files the order in the map's record. */
static int finish_map(struct ctx *c, struct frame *f)
{
	uint32_t n = f->npairs;
	if (n < 2) {
		free(f->pairs);
		f->pairs = NULL;
		return 0;
	}
	uint32_t *idx = malloc((size_t)n * sizeof *idx);
	struct pair *sorted = malloc((size_t)n * sizeof *sorted);
	int rc = -ENOMEM;
	if (!idx || !sorted)
		goto out;
	for (uint32_t k = 0; k < n; k++)
		idx[k] = k;
	if ((rc = sort_pairs(c, f->pairs, idx, n)))
		goto out;
	bool same = true;
	for (uint32_t k = 0; k < n; k++) {
		sorted[k] = f->pairs[idx[k]];
		if (idx[k] != k)
			same = false;
		if (k && cmp_keys(c, &sorted[k - 1], &sorted[k]) == 0) {
			rc = c->err ? c->err : -EPROTO; /* duplicate key */
			goto out;
		}
	}
	struct maprec *m = &c->recs[f->rec];
	m->end = opos(c);
	m->pairs = sorted;
	m->npairs = n;
	sorted = NULL;
	if (!same)
		c->reorder = true;
	rc = 0;
out:
	free(idx);
	free(sorted);
	free(f->pairs);
	f->pairs = NULL;
	return rc;
}

/* A term starting at output offset `done` is complete: tells the containers.
 * Returns 1 when the outermost term is complete, 0 to read on, or an error. */
static int complete(struct ctx *c, size_t done)
{
	int rc;
	while (c->depth) {
		struct frame *f = &c->st[c->depth - 1];
		switch (f->kind) {
		case K_TUPLE:
			if (--f->left)
				return 0;
			break;
		case K_LIST:
			if (!f->tail) {
				f->count++;
				if (obuf(c)[done] != ERL_SMALL_INTEGER_EXT)
					f->all_small = false;
				if (--f->left == 0)
					f->tail = true;
				return 0;
			}
			if ((rc = finish_list(c, f, false)))
				return rc;
			break;
		case K_MAP:
			if (!f->have_key) {
				f->have_key = true;
				f->key_off = done;
				f->key_len = opos(c) - done;
				return 0;
			}
			f->have_key = false;
			f->pairs[f->npairs++] = (struct pair){f->key_off, f->key_len, opos(c) - f->key_off};
			if (--f->left)
				return 0;
			if ((rc = finish_map(c, f)))
				return rc;
			break;
		}
		done = f->start;
		c->depth--;
	}
	return 1;
}

/* Reads the term at the cursor. A scalar is written and *opened is false; a
 * container's header is written (or, for a list, deferred) and its frame
 * pushed, *opened true. */
static int read_term(struct ctx *c, bool *opened)
{
	const unsigned char *b = c->io.in + c->io.i;
	unsigned char tag = b[0];
	size_t start = opos(c);
	uint64_t n;
	int rc;
	*opened = false;
	switch (tag) {
	case ERL_SMALL_TUPLE_EXT:
	case ERL_LARGE_TUPLE_EXT: {
		size_t h = tag == ERL_SMALL_TUPLE_EXT ? 2 : 5;
		if (id_io_avail(&c->io) < h)
			return -EPROTO;
		n = h == 2 ? b[1] : be32_read(b + 1);
		c->io.i += h;
		if (n > id_io_avail(&c->io))
			return -EPROTO;
		unsigned char hd[5];
		if (n <= 255) {
			hd[0] = ERL_SMALL_TUPLE_EXT;
			hd[1] = (unsigned char)n;
			rc = id_io_put(&c->io, hd, 2);
		} else {
			hd[0] = ERL_LARGE_TUPLE_EXT;
			be32_write(hd + 1, (uint32_t)n);
			rc = id_io_put(&c->io, hd, 5);
		}
		if (rc || n == 0)
			return rc;
		*opened = true;
		return push(c, new_frame(K_TUPLE, start, n));
	}
	case ERL_MAP_EXT: {
		if (id_io_avail(&c->io) < 5)
			return -EPROTO;
		n = be32_read(b + 1);
		c->io.i += 5;
		if (2 * n > id_io_avail(&c->io))
			return -EPROTO;
		if ((rc = id_io_put(&c->io, b, 5)) || n == 0)
			return rc;
		struct frame f = new_frame(K_MAP, start, n);
		f.pairs = malloc((size_t)n * sizeof *f.pairs);
		if (!f.pairs)
			return -ENOMEM;
		if (n >= 2) {
			if (grow((void **)&c->recs, &c->recs_cap, c->nrecs + 1, sizeof *c->recs)) {
				free(f.pairs);
				return -ENOMEM;
			}
			c->recs[c->nrecs] = (struct maprec){start, 0, NULL, 0};
			f.rec = c->nrecs++;
		}
		if ((rc = push(c, f))) {
			free(f.pairs);
			return rc;
		}
		*opened = true;
		return 0;
	}
	case ERL_LIST_EXT: {
		if ((rc = read_list_header(c, &n)))
			return rc;
		struct frame f = new_frame(K_LIST, start, n);
		f.tail = n == 0;
		f.all_small = true;
		*opened = true;
		return push(c, f);
	}
	default:
		/* A pid, port, reference or fun names a thing of one node's
		 * life: no entity id (term_tag.h). ERL_FUN_EXT, obsolete, too. */
		if (term_kind_names_a_thing(term_kind_of(tag)) || tag == ERL_FUN_EXT)
			return -EINVAL;
		return id_read_scalar(&c->io, tag);
	}
}

static int run(struct ctx *c)
{
	for (;;) {
		if (c->io.i >= c->io.len)
			return -EPROTO;
		struct frame *f = c->depth ? &c->st[c->depth - 1] : NULL;
		unsigned char tag = c->io.in[c->io.i];
		int rc;
		if (f && f->kind == K_LIST && f->tail) {
			/* A tail that is itself a list continues this one. */
			if (tag == ERL_LIST_EXT) {
				uint64_t n;
				if ((rc = read_list_header(c, &n)))
					return rc;
				f->left = n;
				f->tail = n == 0;
				continue;
			}
			if (tag == ERL_NIL_EXT || tag == ERL_STRING_EXT) {
				if (tag == ERL_NIL_EXT)
					c->io.i++;
				else if ((rc = list_string_tail(c, f)))
					return rc;
				if ((rc = finish_list(c, f, true)))
					return rc;
				size_t done = f->start;
				c->depth--;
				rc = complete(c, done);
				if (rc)
					return rc < 0 ? rc : 0;
				continue;
			}
			/* Any other tail: an improper list, closed in complete(). */
		} else if (f && f->kind == K_LIST) {
			if ((rc = list_header(c, f)))
				return rc;
		}
		size_t done = opos(c);
		bool opened;
		if ((rc = read_term(c, &opened)))
			return rc;
		if (opened)
			continue;
		rc = complete(c, done);
		if (rc)
			return rc < 0 ? rc : 0;
	}
}

/* Rewrites the output from `base` on with every map's pairs in canonical
 * order. */
static int layout(struct ctx *c, size_t base)
{
	size_t total = opos(c) - base;
	unsigned char *tmp = malloc(total ? total : 1);
	if (!tmp)
		return -ENOMEM;
	struct walk *w = &c->wa;
	walk_init(w, base, opos(c));
	size_t o = 0, p, n;
	int rc;
	while ((rc = walk_next(c, w, &p, &n)) > 0) {
		memcpy(tmp + o, obuf(c) + p, n);
		o += n;
	}
	if (rc == 0)
		memcpy(obuf(c) + base, tmp, total);
	free(tmp);
	return rc;
}

int entity_id_canonical(const char *term, size_t len, ei_x_buff *out)
{
	struct ctx c;
	memset(&c, 0, sizeof c);
	c.io.in = (const unsigned char *)term;
	c.io.len = len;
	c.io.out = out;
	int base = out->index;

	/* Most ids are one scalar (an integer, an atom, a binary), which one
	 * read_term writes whole: run()'s first step, taken here, so that such
	 * an id sets up no container stack and frees nothing. */
	bool opened = false;
	int rc = len == 0 ? -EPROTO : read_term(&c, &opened);
	if (rc == 0 && opened)
		rc = run(&c);
	if (rc == 0 && c.io.i != len)
		rc = -EPROTO; /* bytes after the term */
	if (rc == 0 && c.reorder)
		rc = layout(&c, (size_t)base);

	if (c.st != NULL || c.recs != NULL || c.wa.st != NULL || c.wb.st != NULL) {
		/* depth and nrecs count entries of st and recs, so each is 0
		 * while its array is NULL; the tests say so to the analyzer. */
		for (size_t k = 0; c.st != NULL && k < c.depth; k++)
			free(c.st[k].pairs);
		for (size_t k = 0; c.recs != NULL && k < c.nrecs; k++)
			free(c.recs[k].pairs);
		free(c.st);
		free(c.recs);
		free(c.wa.st);
		free(c.wb.st);
	}
	if (rc)
		out->index = base;
	return rc;
}
