/* term.c — see term.h: the structural walk of the external term format
 * (the validator's first half, term_validate.h) and term_skip. */
#include "etf/term.h"
#include "base/byteorder.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* An atom holds at most 255 characters: 255 bytes as Latin-1, at most four
 * bytes each as UTF-8. binary_to_term refuses longer ones. */
#define ATOM_MAX_CHARS 255u
#define ATOM_MAX_BYTES (ATOM_MAX_CHARS * 4u)

/* Whether s[0..n) is UTF-8 as the BEAM takes it in an atom: well-formed
 * (no overlong form, no surrogate, nothing above U+10FFFF, no stray or
 * missing continuation byte) and at most ATOM_MAX_CHARS characters. */
static bool atom_utf8_ok(const unsigned char *s, size_t n)
{
	size_t chars = 0;
	for (size_t k = 0; k < n; chars++) {
		unsigned char c = s[k];
		size_t more;
		unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range */
		if (c < 0x80)
			more = 0;
		else if (c >= 0xC2 && c <= 0xDF)
			more = 1;
		else if (c >= 0xE0 && c <= 0xEF) {
			more = 2;
			if (c == 0xE0)
				lo = 0xA0; /* overlong below */
			else if (c == 0xED)
				hi = 0x9F; /* surrogates above */
		} else if (c >= 0xF0 && c <= 0xF4) {
			more = 3;
			if (c == 0xF0)
				lo = 0x90;
			else if (c == 0xF4)
				hi = 0x8F; /* above U+10FFFF */
		} else {
			return false;
		}
		if (n - k - 1 < more)
			return false;
		for (size_t j = 1; j <= more; j++) {
			unsigned char d = s[k + j];
			if (j == 1 ? (d < lo || d > hi) : (d < 0x80 || d > 0xBF))
				return false;
		}
		k += 1 + more;
	}
	return chars <= ATOM_MAX_CHARS;
}

/* Whether an atom's text of n bytes (Latin-1 or UTF-8 as its tag says) is
 * one binary_to_term takes. */
static inline bool atom_text_ok(const unsigned char *s, size_t n, bool utf8)
{
	if (!utf8 || term_text_is_ascii(s, n))
		return n <= ATOM_MAX_CHARS;
	return n <= ATOM_MAX_BYTES && atom_utf8_ok(s, n);
}

bool term_atom_text_ok(const unsigned char *s, size_t n, bool utf8) { return atom_text_ok(s, n, utf8); }

/* Validates an atom term in place (used inside pids, refs, ports).
 * Inline: every message has several atoms, and the call cost as much as
 * the check. */
static inline int skip_atom(const unsigned char *b, size_t len, size_t *i)
{
	if (*i >= len)
		return -EPROTO;
	unsigned char tag = b[*i];
	size_t n;
	if (tag == ERL_ATOM_EXT || tag == ERL_ATOM_UTF8_EXT) {
		if (len - *i < 3)
			return -EPROTO;
		n = be16_read(b + *i + 1);
		*i += 3;
	} else if (tag == ERL_SMALL_ATOM_EXT || tag == ERL_SMALL_ATOM_UTF8_EXT) {
		if (len - *i < 2)
			return -EPROTO;
		n = b[*i + 1];
		*i += 2;
	} else {
		return -EPROTO;
	}
	if (n > ATOM_MAX_BYTES || len - *i < n ||
	    !atom_text_ok(b + *i, n, tag == ERL_ATOM_UTF8_EXT || tag == ERL_SMALL_ATOM_UTF8_EXT))
		return -EPROTO;
	*i += n;
	return 0;
}

static bool is_digit(char ch) { return ch >= '0' && ch <= '9'; }

int term_float_text_value(const char *text, double *out)
{
	char t[TERM_FLOAT_TEXT_BYTES];
	size_t n = 0;
	while (n < TERM_FLOAT_TEXT_BYTES && text[n] != '\0')
		n++;
	if (n == TERM_FLOAT_TEXT_BYTES)
		return -EPROTO; /* no NUL inside the term (term.h) */
	memcpy(t, text, n);
	t[n] = '\0';
	char *s = t;
	if (*s == '+' || *s == '-')
		s++;
	if (!is_digit(*s))
		return -EPROTO;
	while (is_digit(*s))
		s++;
	if (*s != '.' && *s != ',')
		return -EPROTO;
	char *point = s++;
	if (!is_digit(*s))
		return -EPROTO;
	while (is_digit(*s))
		s++;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!is_digit(*s))
			return -EPROTO;
		while (is_digit(*s))
			s++;
	}
	if (*s != '\0')
		return -EPROTO;
	/* strtod's radix character is the locale's: the grammar is settled
	 * above, so whichever of '.' and ',' it takes reads the whole text. */
	char *end;
	double v = strtod(t, &end);
	if (end != s) {
		*point = *point == '.' ? ',' : '.';
		v = strtod(t, &end);
		if (end != s)
			return -EPROTO;
	}
	if (!isfinite(v))
		return -EPROTO; /* too large: binary_to_term refuses it */
	*out = v;
	return 0;
}

/* Advances *i by n fixed bytes if they are there. */
static int need(size_t len, size_t *i, size_t n)
{
	if (len - *i < n)
		return -EPROTO;
	*i += n;
	return 0;
}

/* The most bytes of a bignum binary_to_term takes, whatever their value. */
#define BIG_BYTES_MAX 4194296u

/* Validates, in place, a term that decodes to a small integer (below 2^59
 * in magnitude), as the BEAM wants an export's arity (then >= 0) and a
 * fun's OldIndex and OldUniq: any integer encoding. The BEAM also takes
 * one inside empty-list wrappers (a LIST_EXT of no elements is its tail),
 * which no writer produces and ei_decode_fun does not read: refused, so
 * that ei walks every accepted fun. */
static int skip_small_int(const unsigned char *b, size_t len, size_t *i, bool negative_ok)
{
	size_t j = *i;
	if (j >= len)
		return -EPROTO;
	const uint64_t max = (UINT64_C(1) << 59) - 1;
	uint64_t mag = 0;
	bool neg = false;
	switch (b[j]) {
	case ERL_SMALL_INTEGER_EXT:
		if (len - j < 2) return -EPROTO;
		j += 2;
		break;
	case ERL_INTEGER_EXT:
		if (len - j < 5) return -EPROTO;
		neg = (b[j + 1] & 0x80) != 0;
		j += 5;
		break;
	case ERL_SMALL_BIG_EXT:
	case ERL_LARGE_BIG_EXT: {
		bool small = b[j] == ERL_SMALL_BIG_EXT;
		size_t h = small ? 3 : 6;
		if (len - j < h) return -EPROTO;
		uint64_t n = small ? b[j + 1] : be32_read(b + j + 1);
		neg = b[j + h - 1] != 0;
		if (n > BIG_BYTES_MAX || len - j - h < n) return -EPROTO;
		const unsigned char *d = b + j + h;
		while (n > 0 && d[n - 1] == 0)
			n--;
		if (n > 8) return -EPROTO;
		for (size_t k = n; k > 0; k--)
			mag = mag << 8 | d[k - 1];
		if (mag == 0)
			neg = false;
		if (mag > max + (neg ? 1 : 0)) return -EPROTO;
		j += h + (small ? b[j + 1] : be32_read(b + j + 1));
		break;
	}
	default:
		return -EPROTO;
	}
	if (neg && !negative_ok)
		return -EPROTO;
	*i = j;
	return 0;
}


/* A pid as a fun's creator: PID_EXT or NEW_PID_EXT, whole (ei_decode_fun
 * reads the field with ei_decode_pid). */
static int skip_pid(const unsigned char *b, size_t len, size_t *i)
{
	if (*i >= len)
		return -EPROTO;
	unsigned char tag = b[(*i)++];
	if (tag == ERL_PID_EXT)
		return skip_atom(b, len, i) || need(len, i, 9) || b[*i - 1] > 3 ? -EPROTO : 0;
	if (tag == ERL_NEW_PID_EXT)
		return skip_atom(b, len, i) || need(len, i, 12) ? -EPROTO : 0;
	return -EPROTO;
}

/* The funs whose free variables the walk is inside: where each must end
 * (its Size says) and the count of terms still pending once its last free
 * variable is read. Funs nest as deep as a peer likes, so the stack grows
 * on the heap past a few levels instead of the walk recursing. */
struct fun_end {
	size_t end;
	uint64_t pending;
};
struct fun_stack {
	struct fun_end inline_ends[8];
	struct fun_end *ends; /* inline_ends, or a heap block */
	size_t n, cap;
};

static int fun_stack_push(struct fun_stack *fs, size_t end, uint64_t pending)
{
	if (fs->n == fs->cap) {
		size_t cap = fs->cap * 2;
		struct fun_end *e = malloc(cap * sizeof *e);
		if (e == NULL)
			return -ENOMEM;
		memcpy(e, fs->ends, fs->n * sizeof *e);
		if (fs->ends != fs->inline_ends)
			free(fs->ends);
		fs->ends = e;
		fs->cap = cap;
	}
	fs->ends[fs->n].end = end;
	fs->ends[fs->n++].pending = pending;
	return 0;
}

/* The structural walk of term_validate: every length against the bytes
 * left, every leaf's content as binary_to_term checks it. *maps says
 * whether a map of two or more pairs was seen (its keys are checked after
 * the walk, once everything in them is known to be whole). With len
 * SIZE_MAX the term is one already validated (term_skip): a fun is then
 * skipped by its Size. Returns 0, -EPROTO, or -ENOMEM (a fun stack). */
static int walk_terms(const char *buf, size_t len, size_t *idx, bool *maps, struct fun_stack *funs)
{
	const unsigned char *b = (const unsigned char *)buf;
	size_t i = *idx;
	/* Terms still to read. Every term takes at least one byte, so a count
	 * larger than the bytes left is a lie, caught before any work. */
	uint64_t pending = 1;
	if (i > len)
		return -EPROTO;
	while (pending > 0) {
		if (pending > len - i)
			return -EPROTO;
		pending--;
		unsigned char tag = b[i++];
		uint64_t n;
		switch (tag) {
		case ERL_SMALL_INTEGER_EXT:
			if (need(len, &i, 1)) return -EPROTO;
			break;
		case ERL_INTEGER_EXT:
			if (need(len, &i, 4)) return -EPROTO;
			break;
		case ERL_FLOAT_EXT: {
			double v;
			if (len - i < TERM_FLOAT_TEXT_BYTES || term_float_text_value(buf + i, &v)) return -EPROTO;
			i += TERM_FLOAT_TEXT_BYTES;
			break;
		}
		case NEW_FLOAT_EXT:
			/* An exponent of all ones is infinity or NaN: refused. */
			if (len - i < 8 || ((b[i] & 0x7f) == 0x7f && (b[i + 1] & 0xf0) == 0xf0)) return -EPROTO;
			i += 8;
			break;
		case ERL_ATOM_EXT:
		case ERL_ATOM_UTF8_EXT:
		case ERL_SMALL_ATOM_EXT:
		case ERL_SMALL_ATOM_UTF8_EXT:
			i--;
			if (skip_atom(b, len, &i)) return -EPROTO;
			break;
		case ERL_REFERENCE_EXT: /* Node, ID:4 (18 bits), Creation:1 (2 bits) */
			if (skip_atom(b, len, &i) || need(len, &i, 5) || b[i - 1] > 3 || be32_read(b + i - 5) >> 18)
				return -EPROTO;
			break;
		case ERL_NEW_REFERENCE_EXT: /* Len:2, Node, Creation:1, ID:4*Len */
		case ERL_NEWER_REFERENCE_EXT: /* Len:2, Node, Creation:4, ID:4*Len */
			if (len - i < 2) return -EPROTO;
			n = be16_read(b + i);
			i += 2;
			/* 1 to 5 words (the BEAM reads words it did not size for
			 * none); the old form's creation has 2 bits and its first
			 * word 18. */
			if (n < 1 || n > 5 || skip_atom(b, len, &i) ||
			    need(len, &i, (tag == ERL_NEW_REFERENCE_EXT ? 1 : 4) + 4 * n) ||
			    (tag == ERL_NEW_REFERENCE_EXT && (b[i - 4 * n - 1] > 3 || be32_read(b + i - 4 * n) >> 18)))
				return -EPROTO;
			break;
		case ERL_PORT_EXT: /* Node, ID:4, Creation:1 (2 bits) */
			if (skip_atom(b, len, &i) || need(len, &i, 5) || b[i - 1] > 3) return -EPROTO;
			break;
		case ERL_NEW_PORT_EXT: /* Node, ID:4, Creation:4 */
			if (skip_atom(b, len, &i) || need(len, &i, 8)) return -EPROTO;
			break;
		case ERL_V4_PORT_EXT: /* Node, ID:8, Creation:4 */
			if (skip_atom(b, len, &i) || need(len, &i, 12)) return -EPROTO;
			break;
		case ERL_PID_EXT: /* Node, ID:4, Serial:4, Creation:1 (2 bits) */
			if (skip_atom(b, len, &i) || need(len, &i, 9) || b[i - 1] > 3) return -EPROTO;
			break;
		case ERL_NEW_PID_EXT: /* Node, ID:4, Serial:4, Creation:4 */
			if (skip_atom(b, len, &i) || need(len, &i, 12)) return -EPROTO;
			break;
		case ERL_SMALL_TUPLE_EXT:
			if (len - i < 1) return -EPROTO;
			pending += b[i++];
			break;
		case ERL_LARGE_TUPLE_EXT:
			if (len - i < 4) return -EPROTO;
			pending += be32_read(b + i);
			i += 4;
			break;
		case ERL_MAP_EXT:
			if (len - i < 4) return -EPROTO;
			if (be32_read(b + i) >= 2)
				*maps = true;
			pending += 2 * (uint64_t)be32_read(b + i);
			i += 4;
			break;
		case ERL_NIL_EXT:
			break;
		case ERL_STRING_EXT:
			if (len - i < 2) return -EPROTO;
			n = be16_read(b + i);
			i += 2;
			if (need(len, &i, n)) return -EPROTO;
			break;
		case ERL_LIST_EXT: /* Len:4, Elements, Tail */
			if (len - i < 4) return -EPROTO;
			pending += (uint64_t)be32_read(b + i) + 1;
			i += 4;
			break;
		case ERL_BINARY_EXT:
			if (len - i < 4) return -EPROTO;
			n = be32_read(b + i);
			i += 4;
			if (need(len, &i, n)) return -EPROTO;
			break;
		case ERL_BIT_BINARY_EXT: /* Len:4, Bits:1, Data */
			if (len - i < 5) return -EPROTO;
			n = be32_read(b + i);
			/* 1 to 8 bits in the last byte; no bytes, no bits. */
			if (n == 0 ? b[i + 4] != 0 : (b[i + 4] < 1 || b[i + 4] > 8)) return -EPROTO;
			i += 5;
			if (need(len, &i, n)) return -EPROTO;
			break;
		case ERL_SMALL_BIG_EXT:
			if (len - i < 2) return -EPROTO;
			n = b[i]; /* then the sign: any byte but 0 is negative */
			i += 2;
			if (need(len, &i, n)) return -EPROTO;
			break;
		case ERL_LARGE_BIG_EXT:
			if (len - i < 5) return -EPROTO;
			n = be32_read(b + i); /* then the sign, as above */
			if (n > BIG_BYTES_MAX) return -EPROTO;
			i += 5;
			if (need(len, &i, n)) return -EPROTO;
			break;
		case ERL_NEW_FUN_EXT: {
			/* Size:4 Arity:1 Uniq:16 Index:4 NumFree:4, then Module (an
			 * atom), OldIndex and OldUniq (small integers), Pid and NumFree
			 * free variables. Size counts the fun's bytes from itself on.
			 * The BEAM ignores Size and does not look at Pid; ei trusts
			 * Size (it skips a fun by it) and decodes Pid as a pid, so both
			 * must be what every writer makes of them, or ei would read
			 * past the term: a Size that is not the fun's length and a Pid
			 * that is no pid are refused. */
			size_t size_at = i;
			if (len - i < 29) return -EPROTO;
			uint64_t size = be32_read(b + i);
			if (len == SIZE_MAX) { /* validated: Size is the length */
				i = size_at + size;
				break;
			}
			n = be32_read(b + i + 25); /* NumFree */
			if (n > 255 || size > len - size_at) return -EPROTO;
			i += 29;
			if (skip_atom(b, len, &i) || skip_small_int(b, len, &i, true) ||
			    skip_small_int(b, len, &i, true) || skip_pid(b, len, &i))
				return -EPROTO;
			if (n == 0) {
				if (i - size_at != size) return -EPROTO;
				break;
			}
			if (fun_stack_push(funs, size_at + size, pending)) return -ENOMEM;
			pending += n;
			break;
		}
		case ERL_EXPORT_EXT: /* Module and Function atoms, a small Arity >= 0 */
			if (skip_atom(b, len, &i) || skip_atom(b, len, &i) || skip_small_int(b, len, &i, false))
				return -EPROTO;
			break;
		default:
			/* ERL_FUN_EXT (obsolete), atom cache refs, unknown tags. */
			return -EPROTO;
		}
		/* A fun whose last free variable was just read ends here, and
		 * so may the funs it closes (a fun as the last free variable). */
		while (funs->n > 0 && funs->ends[funs->n - 1].pending == pending) {
			if (funs->ends[--funs->n].end != i)
				return -EPROTO;
		}
	}
	*idx = i;
	return 0;
}

int term_check_structure(const char *buf, size_t len, size_t *idx, bool *maps)
{
	struct fun_stack funs;
	funs.ends = funs.inline_ends;
	funs.n = 0;
	funs.cap = sizeof funs.inline_ends / sizeof funs.inline_ends[0];
	int rc = walk_terms(buf, len, idx, maps, &funs);
	if (funs.ends != funs.inline_ends)
		free(funs.ends);
	return rc;
}

/* The end of the validated atom at b[i]. */
static size_t atom_end(const unsigned char *b, size_t i)
{
	if (b[i] == ERL_SMALL_ATOM_UTF8_EXT || b[i] == ERL_SMALL_ATOM_EXT)
		return i + 2 + b[i + 1];
	return i + 3 + be16_read(b + i + 1);
}

/* The end of the validated leaf term at b[i] whose size its first bytes
 * tell (a pid counts: its node is an atom), or 0 (no term ends at offset
 * 0) for any other term. */
static size_t leaf_end(const unsigned char *b, size_t i)
{
	switch (b[i]) {
	case ERL_SMALL_INTEGER_EXT:
		return i + 2;
	case ERL_INTEGER_EXT:
		return i + 5;
	case ERL_NIL_EXT:
		return i + 1;
	case ERL_SMALL_ATOM_EXT:
	case ERL_SMALL_ATOM_UTF8_EXT:
	case ERL_ATOM_EXT:
	case ERL_ATOM_UTF8_EXT:
		return atom_end(b, i);
	case ERL_NEW_PID_EXT: /* Node, ID:4, Serial:4, Creation:4 */
		return atom_end(b, i + 1) + 12;
	case ERL_PID_EXT: /* Node, ID:4, Serial:4, Creation:1 */
		return atom_end(b, i + 1) + 9;
	case ERL_BINARY_EXT:
		return i + 5 + be32_read(b + i + 1);
	default:
		return 0;
	}
}

void term_skip(const char *buf, size_t *idx)
{
	/* Most terms skipped on the message path are small leaves (an atom, a
	 * small integer): their length is in their first bytes. */
	size_t end = leaf_end((const unsigned char *)buf, *idx);
	if (end != 0) {
		*idx = end;
		return;
	}
	/* Not ei_skip_term(): it recurses once per nesting level, and a peer
	 * may send a term nested a million deep, which term_validate accepts.
	 * The term is already validated, so the validator's iterative walk
	 * finds its end; SIZE_MAX stands for "no bound left to check". */
	bool maps;
	(void)term_check_structure(buf, SIZE_MAX, idx, &maps);
}

void term_step(const char *buf, size_t *idx, bool into_funs)
{
	switch ((unsigned char)buf[*idx]) {
	case ERL_SMALL_TUPLE_EXT:
		*idx += 2;
		break;
	case ERL_LARGE_TUPLE_EXT:
	case ERL_LIST_EXT:
	case ERL_MAP_EXT:
		*idx += 5;
		break;
	case ERL_EXPORT_EXT:
		*idx += 1;
		break;
	case ERL_NEW_FUN_EXT:
		if (!into_funs) {
			term_skip(buf, idx);
			break;
		}
		/* Tag, Size:4 Arity:1 Uniq:16 Index:4 NumFree:4; Module,
		 * OldIndex, OldUniq. */
		*idx += 30;
		term_skip(buf, idx);
		term_skip(buf, idx);
		term_skip(buf, idx);
		break;
	default:
		term_skip(buf, idx);
		break;
	}
}
