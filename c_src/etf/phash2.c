/*
 * phash2.c — see phash2.h.
 *
 * How the BEAM hashes a term for phash2 (OTP 25/26, make_hash2):
 *
 * One 32-bit accumulator H, starting at 0, is folded over the term in
 * pre-order (a tuple's arity, then its elements left to right; a list's
 * elements, then its tail). Almost every fold step is Bob Jenkins' 96-bit
 * mix (lookup2) of two 32-bit inputs X, Y with H as the third word:
 *
 *     a = K + X;  b = K + Y;  mix(a, b, H)
 *
 * where K is a per-type constant, a multiple of the golden ratio 0x9e3779b9.
 * The pre-order walk is the same order in which the external format lays the
 * term out, so the hash is computed in one forward pass over the bytes. Only
 * containers need state, kept on an explicit heap stack (struct frame).
 *
 * Per type:
 *   integer   value in [-2^27, 2^27): fold(v) with K1, and if v < 0 first
 *             fold(-v) too. Otherwise the magnitude's 32-bit words, least
 *             significant first and padded to an even count, are folded two
 *             at a time with K11 (positive) or K10 (negative). This depends
 *             on the value only: 64-bit "smalls" outside 28 bits and bignums
 *             hash alike, whatever the wire encoding.
 *   float     fold(high word, low word) of the IEEE bits with K12; -0.0 is
 *             first turned into 0.0 (OTP 25/26 compare them equal).
 *   atom      A = hashpjw of the atom's text (see atom_text_hash); if H is 0
 *             then H = A, else fold(A) with K3.
 *   []        if H is 0 then H = 3468870702, else fold(2) with K2 (2 is the
 *             BEAM's internal type code for nil).
 *   binary    H = lookup2 block hash of the bytes with initial value K13 + H
 *             (just K13 + H when empty); a bitstring's trailing 1..7 bits are
 *             then folded as (bit count, bits) with K15.
 *   tuple     fold(arity) with K9, then the elements.
 *   list      elements, then the tail. Runs of consecutive elements that are
 *             integers 0..255 ("string" bytes) are packed four to a 32-bit
 *             word, big-endian, each full or final partial word folded with K4;
 *             any other element or the tail ends the run.
 *   map       fold(size) with K16. Each key-value pair is then hashed on its
 *             own from H = 0 (key, then value); the pair hashes are XORed
 *             together, so key order does not matter (which is also why small
 *             flatmaps and large hash-array maps hash alike). H is restored to
 *             its value after the size fold, and the XOR is folded with K19.
 *
 * phash2(T) keeps the low 27 bits of H; phash2(T, Range) is H mod Range.
 */
#include "etf/phash2.h"
#include "base/byteorder.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <ei.h>

#include "etf/phash2_mix.h"
#include "etf/term.h"
#include "etf/term_tag.h"

/* ---- reading the external format ---- */

enum frame_kind { FRAME_TUPLE, FRAME_MAP, FRAME_LIST };

/* Where a list frame is: reading elements, expecting the tail, or done. */
enum list_phase { LIST_ELEMS, LIST_TAIL, LIST_DONE };

/* A run of "string" bytes in a list not yet folded into the hash. */
struct byte_run {
	uint32_t word; /* up to three pending bytes, first one most significant */
	uint32_t count;
};

/* An open container: what is still to come inside it. */
struct frame {
	uint8_t kind;  /* enum frame_kind */
	uint8_t phase; /* list: enum list_phase; map: 0 = key next, 1 = value next */
	uint32_t left; /* elements or key-value pairs still to read */
	union {
		struct {
			uint32_t outer_hash; /* H after the size fold, restored at the end */
			uint32_t pairs_xor;  /* XOR of the finished pairs' hashes */
		} map;
		struct byte_run run; /* list */
	} u;
};

/* Frames held before the first heap allocation: plenty for real EntityIds. */
#define INLINE_FRAMES 16

struct walk {
	const uint8_t *b;
	size_t len;
	size_t pos;
	uint32_t h;          /* the accumulator */
	bool root_done;      /* the outermost term has been hashed */
	struct frame *stack; /* inline_frames or a heap block */
	size_t depth;
	size_t cap;
	struct frame inline_frames[INLINE_FRAMES];
};

/* Checks that n more bytes are there and returns where they start. */
static int take(struct walk *w, size_t n, const uint8_t **p)
{
	if (w->len - w->pos < n)
		return -EPROTO;
	*p = w->b + w->pos;
	w->pos += n;
	return 0;
}

static int push_frame(struct walk *w, const struct frame *f)
{
	if (w->depth == w->cap) {
		/* cap starts at the inline frames' count; 16 only guards a zero. */
		size_t ncap = w->cap ? w->cap * 2 : 16;
		struct frame *ns;
		if (ncap > SIZE_MAX / sizeof *ns)
			return -ENOMEM;
		if (w->stack == w->inline_frames) {
			ns = malloc(ncap * sizeof *ns);
			if (ns)
				memcpy(ns, w->stack, w->depth * sizeof *ns);
		} else {
			ns = realloc(w->stack, ncap * sizeof *ns);
		}
		if (!ns)
			return -ENOMEM;
		w->stack = ns;
		w->cap = ncap;
	}
	w->stack[w->depth++] = *f;
	return 0;
}

/* An integer as sign and little-endian magnitude, high zero bytes dropped. */
struct int_value {
	bool neg;
	const uint8_t *mag;
	size_t n;
	uint8_t small[4]; /* storage for the magnitude of the fixed-size forms */
};

/* Reads the integer whose tag was just consumed. */
static int read_integer(struct walk *w, uint8_t tag, struct int_value *iv)
{
	const uint8_t *p;
	uint32_t m;
	size_t n;
	iv->neg = false;
	switch (tag) {
	case ERL_SMALL_INTEGER_EXT:
		if (take(w, 1, &p))
			return -EPROTO;
		m = p[0];
		break;
	case ERL_INTEGER_EXT: {
		if (take(w, 4, &p))
			return -EPROTO;
		uint32_t u = be32_read(p);
		iv->neg = (u >> 31) != 0;
		m = iv->neg ? 0u - u : u; /* |INT32_MIN| is 2^31, fine unsigned */
		break;
	}
	case ERL_SMALL_BIG_EXT:
	case ERL_LARGE_BIG_EXT:
		if (tag == ERL_SMALL_BIG_EXT) {
			if (take(w, 2, &p))
				return -EPROTO;
			n = p[0];
			iv->neg = p[1] != 0;
		} else {
			if (take(w, 5, &p))
				return -EPROTO;
			n = be32_read(p);
			iv->neg = p[4] != 0;
		}
		if (take(w, n, &p))
			return -EPROTO;
		while (n > 0 && p[n - 1] == 0)
			n--;
		iv->mag = p;
		iv->n = n;
		if (n == 0)
			iv->neg = false; /* a "negative zero" bignum is just 0 */
		return 0;
	default:
		return -EPROTO;
	}
	iv->small[0] = (uint8_t)m;
	iv->small[1] = (uint8_t)(m >> 8);
	iv->small[2] = (uint8_t)(m >> 16);
	iv->small[3] = (uint8_t)(m >> 24);
	n = 4;
	while (n > 0 && iv->small[n - 1] == 0)
		n--;
	iv->mag = iv->small;
	iv->n = n;
	if (n == 0)
		iv->neg = false;
	return 0;
}

/* The 32-bit word `i` (least significant first) of a magnitude. */
static uint32_t mag_word(const struct int_value *iv, size_t i)
{
	uint32_t v = 0;
	for (size_t k = 0; k < 4; k++) {
		size_t at = i * 4 + k;
		if (at < iv->n)
			v |= (uint32_t)iv->mag[at] << (8 * k);
	}
	return v;
}

static void hash_integer(struct walk *w, const struct int_value *iv)
{
	if (iv->n <= 4) {
		uint32_t m = mag_word(iv, 0);
		if (iv->neg ? m <= SMALL28_LIMIT : m < SMALL28_LIMIT) {
			/* Fits in 28 signed bits: one word, two's complement; a
			 * negative value has its magnitude mixed in first. */
			if (iv->neg) {
				fold2(&w->h, m, 0, K_SMALL);
				fold2(&w->h, 0u - m, 0, K_SMALL);
			} else {
				fold2(&w->h, m, 0, K_SMALL);
			}
			return;
		}
	}
	uint32_t k = iv->neg ? K_BIG_NEG : K_BIG_POS;
	size_t words = (iv->n + 3) / 4;
	for (size_t i = 0; i < words; i += 2)
		fold2(&w->h, mag_word(iv, i), mag_word(iv, i + 1), k);
}

/* True if the integer is 0..255, i.e. a byte of a "string" list. */
static bool int_is_byte(const struct int_value *iv, uint8_t *byte)
{
	if (iv->neg || iv->n > 1)
		return false;
	*byte = iv->n ? iv->mag[0] : 0;
	return true;
}

static void hash_double(struct walk *w, double d)
{
	uint64_t bits = 0;
	if (d != 0.0) /* -0.0 hashes as 0.0 */
		memcpy(&bits, &d, sizeof bits);
	fold2(&w->h, (uint32_t)(bits >> 32), (uint32_t)bits, K_FLOAT);
}

static void hash_atom_value(struct walk *w, uint32_t a)
{
	if (w->h == 0)
		w->h = a;
	else
		fold2(&w->h, a, 0, K_ATOM);
}

static void hash_nil(struct walk *w)
{
	if (w->h == 0)
		w->h = NIL_FIRST_HASH;
	else
		fold2(&w->h, NIL_TYPE_CODE, 0, K_NIL);
}

/* A binary of nbytes whole bytes followed by tail_bits (0..7) more bits,
 * which sit in the high bits of data[nbytes]. */
static void hash_bits(struct walk *w, const uint8_t *data, size_t nbytes, unsigned tail_bits)
{
	uint32_t init = K_BINARY + w->h;
	if (nbytes == 0 && tail_bits == 0) {
		w->h = init;
		return;
	}
	w->h = block_hash(data, nbytes, init);
	if (tail_bits)
		fold2(&w->h, tail_bits, (uint32_t)data[nbytes] >> (8 - tail_bits), K_BIT_TAIL);
}

static void run_add(struct walk *w, struct byte_run *r, uint8_t byte)
{
	r->word = (r->word << 8) + byte;
	if (++r->count == 4) {
		fold2(&w->h, r->word, 0, K_BYTES);
		r->word = 0;
		r->count = 0;
	}
}

static void run_flush(struct walk *w, struct byte_run *r)
{
	if (r->count) {
		fold2(&w->h, r->word, 0, K_BYTES);
		r->word = 0;
		r->count = 0;
	}
}

/* STRING_EXT: bytes folded into run `r` (continuing it, for a list whose
 * tail is a STRING_EXT), then the implied [] tail. */
static void hash_string_bytes(struct walk *w, struct byte_run *r, const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		run_add(w, r, s[i]);
	run_flush(w, r);
	hash_nil(w);
}

/* The enclosing container (or the root) has received one complete term. */
static void child_done(struct walk *w)
{
	if (w->depth == 0) {
		w->root_done = true;
		return;
	}
	struct frame *f = &w->stack[w->depth - 1];
	switch (f->kind) {
	case FRAME_TUPLE:
		f->left--;
		break;
	case FRAME_MAP:
		if (f->phase == 0) {
			f->phase = 1;
		} else {
			/* A pair is done: set its hash aside, start the next from 0. */
			f->u.map.pairs_xor ^= w->h;
			w->h = 0;
			f->phase = 0;
			f->left--;
		}
		break;
	case FRAME_LIST:
		if (f->phase == LIST_ELEMS)
			f->left--;
		else
			f->phase = LIST_DONE;
		break;
	}
}

static bool frame_complete(const struct frame *f)
{
	return f->kind == FRAME_LIST ? f->phase == LIST_DONE : f->left == 0;
}

/* Hashes the one term at w->pos if it is not a container; for a container,
 * hashes its header and opens a frame. A term finished here is reported to
 * its parent with child_done(). */
static int dispatch(struct walk *w)
{
	const uint8_t *p;
	uint8_t tag;
	if (take(w, 1, &p))
		return -EPROTO;
	tag = p[0];
	switch (tag) {
	case ERL_SMALL_INTEGER_EXT:
	case ERL_INTEGER_EXT:
	case ERL_SMALL_BIG_EXT:
	case ERL_LARGE_BIG_EXT: {
		struct int_value iv;
		if (read_integer(w, tag, &iv))
			return -EPROTO;
		hash_integer(w, &iv);
		break;
	}
	case NEW_FLOAT_EXT: {
		if (take(w, 8, &p))
			return -EPROTO;
		uint64_t bits = (uint64_t)be32_read(p) << 32 | be32_read(p + 4);
		double d;
		memcpy(&d, &bits, sizeof d);
		hash_double(w, d);
		break;
	}
	case ERL_FLOAT_EXT: { /* old form: 31 bytes of text, read as the BEAM reads it */
		double d;
		if (take(w, 31, &p) || term_float_text_value((const char *)p, &d))
			return -EPROTO;
		hash_double(w, d);
		break;
	}
	case ERL_ATOM_EXT:
	case ERL_ATOM_UTF8_EXT:
	case ERL_SMALL_ATOM_EXT:
	case ERL_SMALL_ATOM_UTF8_EXT: {
		size_t n;
		bool small = tag == ERL_SMALL_ATOM_EXT || tag == ERL_SMALL_ATOM_UTF8_EXT;
		if (take(w, small ? 1 : 2, &p))
			return -EPROTO;
		n = small ? p[0] : be16_read(p);
		if (take(w, n, &p))
			return -EPROTO;
		bool utf8 = tag == ERL_ATOM_UTF8_EXT || tag == ERL_SMALL_ATOM_UTF8_EXT;
		hash_atom_value(w, atom_text_hash(p, n, utf8));
		break;
	}
	case ERL_NIL_EXT:
		hash_nil(w);
		break;
	case ERL_STRING_EXT: {
		struct byte_run run = {0, 0};
		size_t n;
		if (take(w, 2, &p))
			return -EPROTO;
		n = be16_read(p);
		if (take(w, n, &p))
			return -EPROTO;
		hash_string_bytes(w, &run, p, n); /* n == 0 is just [] */
		break;
	}
	case ERL_BINARY_EXT: {
		size_t n;
		if (take(w, 4, &p))
			return -EPROTO;
		n = be32_read(p);
		if (take(w, n, &p))
			return -EPROTO;
		hash_bits(w, p, n, 0);
		break;
	}
	case ERL_BIT_BINARY_EXT: { /* Len:4, Bits:1 (used bits of the last byte), Data */
		size_t n;
		unsigned last_bits;
		if (take(w, 5, &p))
			return -EPROTO;
		n = be32_read(p);
		last_bits = p[4];
		/* No bytes and no bits is <<>>, an empty binary to the BEAM. */
		if (n == 0 ? last_bits != 0 : (last_bits < 1 || last_bits > 8))
			return -EPROTO;
		if (take(w, n, &p))
			return -EPROTO;
		if (n == 0 || last_bits == 8)
			hash_bits(w, p, n, 0);
		else
			hash_bits(w, p, n - 1, last_bits);
		break;
	}
	case ERL_SMALL_TUPLE_EXT:
	case ERL_LARGE_TUPLE_EXT: {
		uint32_t arity;
		if (tag == ERL_SMALL_TUPLE_EXT) {
			if (take(w, 1, &p))
				return -EPROTO;
			arity = p[0];
		} else {
			if (take(w, 4, &p))
				return -EPROTO;
			arity = be32_read(p);
		}
		fold2(&w->h, arity, 0, K_TUPLE);
		if (arity == 0)
			break;
		struct frame f = {.kind = FRAME_TUPLE, .left = arity};
		return push_frame(w, &f);
	}
	case ERL_MAP_EXT: {
		uint32_t size;
		if (take(w, 4, &p))
			return -EPROTO;
		size = be32_read(p);
		fold2(&w->h, size, 0, K_MAP_SIZE);
		if (size == 0)
			break;
		struct frame f = {.kind = FRAME_MAP, .phase = 0, .left = size};
		f.u.map.outer_hash = w->h;
		f.u.map.pairs_xor = 0;
		w->h = 0;
		return push_frame(w, &f);
	}
	case ERL_LIST_EXT: {
		if (take(w, 4, &p))
			return -EPROTO;
		/* No elements: the term is its tail (never written by
		 * term_to_binary, but binary_to_term reads it so), which is
		 * dispatched next in this term's place. */
		if (be32_read(p) == 0)
			return 0;
		struct frame f = {.kind = FRAME_LIST, .phase = LIST_ELEMS, .left = be32_read(p)};
		f.u.run.word = 0;
		f.u.run.count = 0;
		return push_frame(w, &f);
	}
	default:
		/* A pid, port, reference or fun names a thing of one node's
		 * life: no entity id (term_tag.h). ERL_FUN_EXT, obsolete, too. */
		return term_kind_names_a_thing(term_kind_of(tag)) || tag == ERL_FUN_EXT ? -EINVAL : -EPROTO;
	}
	child_done(w);
	return 0;
}

/* Prepares the next term of an open list. Consecutive byte elements are
 * folded into the list's run right here. A tail that is itself a list
 * (LIST_EXT or STRING_EXT: never produced by term_to_binary, but the same
 * term to the BEAM) continues this list, run and all, as the BEAM sees one
 * chain of cons cells. Returns 1 if the list consumed the next term itself,
 * 0 if the term at w->pos is to be dispatched as an ordinary term (the run
 * is flushed first: any other element or tail ends it), or an error. */
static int list_next(struct walk *w, struct frame *f)
{
	const uint8_t *p;
	for (;;) {
		if (f->phase == LIST_ELEMS && f->left == 0)
			f->phase = LIST_TAIL;
		if (w->pos >= w->len)
			return -EPROTO;
		uint8_t tag = w->b[w->pos];
		if (f->phase == LIST_ELEMS) {
			/* An element that is a list of no elements is its tail:
			 * what follows is the element (a byte goes on in the run). */
			if (tag == ERL_LIST_EXT && w->len - w->pos >= 5 && be32_read(w->b + w->pos + 1) == 0) {
				w->pos += 5;
				continue;
			}
			if (term_kind_of(tag) != TERM_KIND_INTEGER)
				break;
			size_t start = w->pos;
			struct int_value iv;
			uint8_t byte;
			w->pos++;
			if (read_integer(w, tag, &iv))
				return -EPROTO;
			if (!int_is_byte(&iv, &byte)) {
				w->pos = start;
				break;
			}
			run_add(w, &f->u.run, byte);
			f->left--;
			continue;
		}
		/* The tail. */
		if (tag == ERL_LIST_EXT) {
			if (take(w, 5, &p))
				return -EPROTO;
			f->left = be32_read(p + 1);
			f->phase = LIST_ELEMS;
			continue;
		}
		if (tag == ERL_STRING_EXT) {
			size_t n;
			if (take(w, 3, &p))
				return -EPROTO;
			n = be16_read(p + 1);
			if (take(w, n, &p))
				return -EPROTO;
			hash_string_bytes(w, &f->u.run, p, n);
			f->phase = LIST_DONE;
			return 1;
		}
		break;
	}
	run_flush(w, &f->u.run);
	return 0;
}

static int walk_term(struct walk *w)
{
	for (;;) {
		/* Close every container that has all its terms. */
		while (w->depth > 0 && frame_complete(&w->stack[w->depth - 1])) {
			struct frame *f = &w->stack[--w->depth];
			if (f->kind == FRAME_MAP) {
				uint32_t pairs = f->u.map.pairs_xor;
				w->h = f->u.map.outer_hash;
				fold2(&w->h, pairs, 0, K_MAP_PAIRS);
			}
			child_done(w);
		}
		if (w->depth == 0 && w->root_done)
			return 0;
		if (w->depth > 0 && w->stack[w->depth - 1].kind == FRAME_LIST) {
			int rc = list_next(w, &w->stack[w->depth - 1]);
			if (rc < 0)
				return rc;
			if (rc > 0)
				continue;
		}
		int rc = dispatch(w);
		if (rc)
			return rc;
	}
}

int phash2_full(const char *buf, size_t len, uint32_t *out)
{
	struct walk w;
	int rc;
	w.b = (const uint8_t *)buf;
	w.len = buf ? len : 0;
	w.pos = 0;
	w.h = 0;
	w.root_done = false;
	w.stack = w.inline_frames;
	w.depth = 0;
	w.cap = INLINE_FRAMES;
	rc = walk_term(&w);
	if (rc == 0 && w.pos != w.len)
		rc = -EPROTO; /* bytes after the term */
	if (rc == 0)
		*out = w.h;
	if (w.stack != w.inline_frames)
		free(w.stack);
	return rc;
}

int phash2_term(const char *buf, size_t len, uint32_t *out)
{
	uint32_t h;
	int rc = phash2_full(buf, len, &h);
	if (rc == 0)
		*out = h & PHASH2_DEFAULT_MASK;
	return rc;
}

int phash2_range(const char *buf, size_t len, uint64_t range, uint32_t *out)
{
	uint32_t h;
	if (range < 1 || range > (UINT64_C(1) << 32))
		return -EINVAL;
	int rc = phash2_full(buf, len, &h);
	if (rc == 0)
		*out = (uint32_t)(h % range);
	return rc;
}
