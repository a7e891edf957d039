/* term_print.c — see term_print.h. The rules are io_lib's (io_lib.erl:
 * write_atom/quote_atom, write_string, printable_latin1_list) and
 * float_to_list(F, [short])'s choice of notation. */
#include "etf/term_print.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ei.h>

#include "etf/term.h"

/* Deeper than this, a term prints as "...": a log line needs no more. */
#define PRINT_DEPTH_MAX 64

struct out {
	char *s;
	size_t len, cap, max;
	bool cut; /* text beyond max was dropped */
	bool oom;
};

static void put(struct out *o, const char *p, size_t n)
{
	if (o->oom || o->cut)
		return;
	if (o->len + n > o->max) {
		n = o->max - o->len;
		o->cut = true;
	}
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 64;
		while (cap < o->len + n + 1)
			cap *= 2;
		char *s = realloc(o->s, cap);
		if (s == NULL) {
			o->oom = true;
			return;
		}
		o->s = s;
		o->cap = cap;
	}
	memcpy(o->s + o->len, p, n);
	o->len += n;
	o->s[o->len] = '\0';
}

static void puts_(struct out *o, const char *p) { put(o, p, strlen(p)); }

/* A character (a code point) as UTF-8. */
static void put_char(struct out *o, uint32_t c)
{
	char b[4];
	size_t n;
	if (c < 0x80) {
		b[0] = (char)c;
		n = 1;
	} else if (c < 0x800) {
		b[0] = (char)(0xc0 | c >> 6);
		b[1] = (char)(0x80 | (c & 0x3f));
		n = 2;
	} else if (c < 0x10000) {
		b[0] = (char)(0xe0 | c >> 12);
		b[1] = (char)(0x80 | (c >> 6 & 0x3f));
		b[2] = (char)(0x80 | (c & 0x3f));
		n = 3;
	} else {
		b[0] = (char)(0xf0 | c >> 18);
		b[1] = (char)(0x80 | (c >> 12 & 0x3f));
		b[2] = (char)(0x80 | (c >> 6 & 0x3f));
		b[3] = (char)(0x80 | (c & 0x3f));
		n = 4;
	}
	put(o, b, n);
}

static void putf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct out *o, const char *fmt, ...)
{
	char b[64];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b, sizeof b, fmt, ap);
	va_end(ap);
	if (n > 0)
		put(o, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1);
}

/* ---- characters, strings, atoms ---- */

/* io_lib:printable_latin1_list's characters. */
static bool printable(uint32_t c)
{
	return (c >= 32 && c <= 126) || (c >= 160 && c <= 255) || c == '\n' || c == '\r' || c == '\t' ||
	       c == '\v' || c == '\b' || c == '\f' || c == 27;
}

/* A character inside quotes `q` (" or '), escaped as io_lib writes it. */
static void put_quoted_char(struct out *o, uint32_t c, char q)
{
	static const struct {
		uint32_t c;
		const char *esc;
	} escapes[] = {{'\n', "\\n"}, {'\r', "\\r"}, {'\t', "\\t"}, {'\v', "\\v"},
		       {'\b', "\\b"}, {'\f', "\\f"}, {27, "\\e"},   {127, "\\d"}};
	if (c == (uint32_t)q || c == '\\') {
		char b[2] = {'\\', (char)c};
		put(o, b, 2);
		return;
	}
	for (size_t k = 0; k < sizeof escapes / sizeof escapes[0]; k++) {
		if (escapes[k].c == c) {
			puts_(o, escapes[k].esc);
			return;
		}
	}
	if (c < 160 && !(c >= 32 && c <= 126))
		putf(o, "\\%c%c%c", (char)('0' + (c >> 6)), (char)('0' + (c >> 3 & 7)), (char)('0' + (c & 7)));
	else if (c > 255)
		putf(o, "\\x{%" PRIX32 "}", c);
	else
		put_char(o, c);
}

/* Decodes one UTF-8 character of s[0..n) into *c; returns its length. The
 * text is an atom's as term_get_atom gives it: valid UTF-8. */
static size_t utf8_char(const unsigned char *s, size_t n, uint32_t *c)
{
	if (s[0] < 0x80 || n < 2) {
		*c = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		*c = (uint32_t)(s[0] & 0x1f) << 6 | (s[1] & 0x3f);
		return 2;
	}
	if ((s[0] & 0xf0) == 0xe0 && n >= 3) {
		*c = (uint32_t)(s[0] & 0x0f) << 12 | (uint32_t)(s[1] & 0x3f) << 6 | (s[2] & 0x3f);
		return 3;
	}
	if (n >= 4) {
		*c = (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3f) << 12 | (uint32_t)(s[2] & 0x3f) << 6 |
		     (s[3] & 0x3f);
		return 4;
	}
	*c = s[0];
	return 1;
}

static bool lower_start(uint32_t c) { return (c >= 'a' && c <= 'z') || (c >= 223 && c <= 255 && c != 247); }

static bool name_char(uint32_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '@' ||
	       (c >= 192 && c <= 255 && c != 215 && c != 247);
}

static bool reserved_word(const unsigned char *a, size_t n)
{
	static const char *const words[] = {"after", "and",   "andalso", "band", "begin", "bnot",    "bor",
					    "bsl",   "bsr",   "bxor",    "case", "catch", "cond",    "div",
					    "end",   "fun",   "if",      "let",  "not",   "of",      "or",
					    "orelse", "receive", "rem",  "try",  "when",  "xor"};
	for (size_t k = 0; k < sizeof words / sizeof words[0]; k++)
		if (strlen(words[k]) == n && memcmp(a, words[k], n) == 0)
			return true;
	return false;
}

/* The next character of an atom's text: a byte of Latin-1, or a UTF-8
 * sequence. */
static size_t atom_char(const unsigned char *s, size_t n, bool utf8, uint32_t *c)
{
	if (!utf8) {
		*c = s[0];
		return 1;
	}
	return utf8_char(s, n, c);
}

/* An atom of n bytes of text at s (its NUL characters too), quoted when
 * io_lib:write_atom quotes it. */
static void print_atom_text(struct out *o, const unsigned char *s, size_t n, bool utf8)
{
	bool bare = n > 0 && !reserved_word(s, n);
	size_t i = 0;
	uint32_t c = 0;
	if (bare) {
		i = atom_char(s, n, utf8, &c);
		bare = lower_start(c);
	}
	while (bare && i < n) {
		i += atom_char(s + i, n - i, utf8, &c);
		bare = name_char(c);
	}
	if (!bare)
		put(o, "'", 1);
	for (i = 0; i < n;) {
		i += atom_char(s + i, n - i, utf8, &c);
		if (bare)
			put_char(o, c);
		else
			put_quoted_char(o, c, '\'');
	}
	if (!bare)
		put(o, "'", 1);
}

static void print_atom(struct out *o, const char *a)
{
	print_atom_text(o, (const unsigned char *)a, strlen(a), true);
}

/* ---- numbers ---- */

/* The magnitude little-endian in mag[0..n) (destroyed), as decimal. */
static void put_bignum(struct out *o, unsigned char *mag, size_t n, bool negative)
{
	/* Each division by 10^9 yields nine digits; at most 2.41 decimal
	 * digits per byte. */
	size_t cap = n * 3 + 10;
	char *digits = malloc(cap);
	if (digits == NULL) {
		o->oom = true;
		return;
	}
	size_t nd = 0;
	size_t top = n;
	while (top > 0 && mag[top - 1] == 0)
		top--;
	do {
		uint64_t rem = 0;
		for (size_t k = top; k-- > 0;) {
			uint64_t cur = rem << 8 | mag[k];
			mag[k] = (unsigned char)(cur / 1000000000u);
			rem = cur % 1000000000u;
		}
		while (top > 0 && mag[top - 1] == 0)
			top--;
		for (int d = 0; d < 9 && (top > 0 || rem > 0 || d == 0); d++) {
			digits[nd++] = (char)('0' + rem % 10);
			rem /= 10;
		}
	} while (top > 0);
	if (negative)
		put(o, "-", 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	for (size_t k = nd; k-- > 0;)
		put(o, &digits[k], 1);
	free(digits);
}

static void print_big(struct out *o, const char *buf, size_t *idx)
{
	const unsigned char *p = (const unsigned char *)buf + *idx;
	size_t n, head;
	if (p[0] == ERL_SMALL_BIG_EXT) {
		n = p[1];
		head = 2;
	} else {
		n = (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
		head = 5;
	}
	bool negative = p[head] != 0;
	unsigned char *mag = malloc(n ? n : 1);
	if (mag == NULL) {
		o->oom = true;
	} else {
		memcpy(mag, p + head + 1, n);
		put_bignum(o, mag, n, negative && n > 0);
		free(mag);
	}
	*idx += head + 1 + n;
}

/* float_to_list(F, [short]): the fewest significant digits that read back
 * as F, in decimal notation or scientific (d.ddde±x), whichever is
 * shorter — decimal on a tie — with at least one digit after the point. */
static void print_float(struct out *o, double f)
{
	char e[40];
	int prec = 0;
	for (; prec < 17; prec++) {
		snprintf(e, sizeof e, "%.*e", prec, f);
		if (strtod(e, NULL) == f)
			break;
	}
	/* e: [-]d[.ddd]e±xx */
	bool negative = e[0] == '-';
	const char *p = e + negative;
	char digits[24];
	size_t nd = 0;
	for (; *p != '\0' && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9' && nd < sizeof digits)
			digits[nd++] = *p;
	if (nd == 0 || *p != 'e') {
		put(o, "0.0", 3); /* no float of the BEAM's prints so (no NaN, no infinity) */
		return;
	}
	int exp10 = atoi(p + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	char sci[48], dec[400];
	size_t ns = 0, nd_ = 0;
	sci[ns++] = digits[0];
	sci[ns++] = '.';
	if (nd == 1)
		sci[ns++] = '0';
	for (size_t k = 1; k < nd; k++)
		sci[ns++] = digits[k];
	ns += (size_t)snprintf(sci + ns, sizeof sci - ns, "e%d", exp10);
	if (exp10 >= 0) {
		for (int k = 0; k <= exp10; k++)
			dec[nd_++] = (size_t)k < nd ? digits[k] : '0';
		dec[nd_++] = '.';
		if ((size_t)exp10 + 1 >= nd)
			dec[nd_++] = '0';
		for (size_t k = (size_t)exp10 + 1; k < nd; k++)
			dec[nd_++] = digits[k];
	} else {
		dec[nd_++] = '0';
		dec[nd_++] = '.';
		for (int k = 1; k < -exp10; k++)
			dec[nd_++] = '0';
		for (size_t k = 0; k < nd; k++)
			dec[nd_++] = digits[k];
	}
	if (negative)
		put(o, "-", 1);
	/* The shorter, decimal on a tie; from 2^53 on (where a float stops
	 * holding every integer) always scientific. */
	if (nd_ <= ns && fabs(f) < 9007199254740992.0)
		put(o, dec, nd_);
	else
		put(o, sci, ns);
}

/* ---- lists, binaries ---- */

/* Whether the list at buf[i] is a string as ~p shows one: proper, not
 * empty, of printable Latin-1 characters. */
static bool list_is_string(const char *buf, size_t i)
{
	int ii = (int)i, n;
	if (ei_decode_list_header(buf, &ii, &n) < 0 || n == 0)
		return false;
	for (int k = 0; k < n; k++) {
		long long c;
		if (ei_decode_longlong(buf, &ii, &c) < 0 || c < 0 || c > 255 || !printable((uint32_t)c))
			return false;
	}
	return buf[ii] == ERL_NIL_EXT;
}

static void print_term(struct out *o, const char *buf, size_t *idx, int depth);

static void print_list(struct out *o, const char *buf, size_t *idx, int depth)
{
	unsigned char tag = (unsigned char)buf[*idx];
	if (tag == ERL_STRING_EXT) {
		size_t n = (size_t)(unsigned char)buf[*idx + 1] << 8 | (unsigned char)buf[*idx + 2];
		const unsigned char *s = (const unsigned char *)buf + *idx + 3;
		bool str = true;
		for (size_t k = 0; k < n && str; k++)
			str = printable(s[k]);
		put(o, str ? "\"" : "[", 1);
		for (size_t k = 0; k < n; k++) {
			if (str) {
				put_quoted_char(o, s[k], '"');
			} else {
				if (k > 0)
					put(o, ",", 1);
				putf(o, "%u", s[k]);
			}
		}
		put(o, str ? "\"" : "]", 1);
		*idx += 3 + n;
		return;
	}
	if (list_is_string(buf, *idx)) {
		int ii = (int)*idx, n;
		(void)ei_decode_list_header(buf, &ii, &n);
		put(o, "\"", 1);
		for (int k = 0; k < n; k++) {
			long long c;
			(void)ei_decode_longlong(buf, &ii, &c);
			put_quoted_char(o, (uint32_t)c, '"');
		}
		put(o, "\"", 1);
		*idx = (size_t)ii + 1; /* the [] */
		return;
	}
	int ii = (int)*idx, n;
	(void)ei_decode_list_header(buf, &ii, &n);
	*idx = (size_t)ii;
	put(o, "[", 1);
	for (int k = 0; k < n; k++) {
		if (k > 0)
			put(o, ",", 1);
		print_term(o, buf, idx, depth + 1);
	}
	if (buf[*idx] == ERL_NIL_EXT) {
		(*idx)++;
	} else {
		put(o, "|", 1);
		print_term(o, buf, idx, depth + 1);
	}
	put(o, "]", 1);
}

static void print_binary(struct out *o, const unsigned char *b, size_t n, unsigned bits_in_last)
{
	size_t whole = bits_in_last == 8 ? n : n - 1;
	bool str = whole > 0 && bits_in_last == 8;
	for (size_t k = 0; k < whole && str; k++)
		str = printable(b[k]);
	put(o, "<<", 2);
	if (str) {
		put(o, "\"", 1);
		for (size_t k = 0; k < whole; k++)
			put_quoted_char(o, b[k], '"');
		put(o, "\"", 1);
	} else {
		for (size_t k = 0; k < whole; k++) {
			if (k > 0)
				put(o, ",", 1);
			putf(o, "%u", b[k]);
		}
		if (whole < n)
			putf(o, "%s%u:%u", whole > 0 ? "," : "", (unsigned)(b[n - 1] >> (8 - bits_in_last)), bits_in_last);
	}
	put(o, ">>", 2);
}

/* ---- the rest ---- */

static void print_term(struct out *o, const char *buf, size_t *idx, int depth)
{
	if (depth > PRINT_DEPTH_MAX || o->cut || o->oom) {
		put(o, "...", 3);
		term_skip(buf, idx);
		return;
	}
	unsigned char tag = (unsigned char)buf[*idx];
	int ii = (int)*idx;
	switch (tag) {
	case ERL_SMALL_INTEGER_EXT:
	case ERL_INTEGER_EXT: {
		long long v;
		(void)ei_decode_longlong(buf, &ii, &v);
		putf(o, "%lld", v);
		*idx = (size_t)ii;
		return;
	}
	case ERL_SMALL_BIG_EXT:
	case ERL_LARGE_BIG_EXT:
		print_big(o, buf, idx);
		return;
	case ERL_FLOAT_EXT:
	case NEW_FLOAT_EXT: {
		double f;
		(void)ei_decode_double(buf, &ii, &f);
		print_float(o, f);
		*idx = (size_t)ii;
		return;
	}
	case ERL_ATOM_EXT:
	case ERL_SMALL_ATOM_EXT:
	case ERL_ATOM_UTF8_EXT:
	case ERL_SMALL_ATOM_UTF8_EXT: {
		const unsigned char *p = (const unsigned char *)buf + *idx;
		bool small = tag == ERL_SMALL_ATOM_EXT || tag == ERL_SMALL_ATOM_UTF8_EXT;
		size_t n = small ? p[1] : (size_t)p[1] << 8 | p[2];
		size_t head = small ? 2 : 3;
		print_atom_text(o, p + head, n, tag == ERL_ATOM_UTF8_EXT || tag == ERL_SMALL_ATOM_UTF8_EXT);
		*idx += head + n;
		return;
	}
	case ERL_SMALL_TUPLE_EXT:
	case ERL_LARGE_TUPLE_EXT: {
		int n;
		(void)ei_decode_tuple_header(buf, &ii, &n);
		*idx = (size_t)ii;
		put(o, "{", 1);
		for (int k = 0; k < n; k++) {
			if (k > 0)
				put(o, ",", 1);
			print_term(o, buf, idx, depth + 1);
		}
		put(o, "}", 1);
		return;
	}
	case ERL_MAP_EXT: {
		int n;
		(void)ei_decode_map_header(buf, &ii, &n);
		*idx = (size_t)ii;
		put(o, "#{", 2);
		for (int k = 0; k < n; k++) {
			if (k > 0)
				put(o, ",", 1);
			print_term(o, buf, idx, depth + 1);
			put(o, " => ", 4);
			print_term(o, buf, idx, depth + 1);
		}
		put(o, "}", 1);
		return;
	}
	case ERL_NIL_EXT:
		put(o, "[]", 2);
		(*idx)++;
		return;
	case ERL_STRING_EXT:
	case ERL_LIST_EXT:
		print_list(o, buf, idx, depth);
		return;
	case ERL_BINARY_EXT: {
		const unsigned char *p = (const unsigned char *)buf + *idx;
		size_t n = (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
		print_binary(o, p + 5, n, 8);
		*idx += 5 + n;
		return;
	}
	case ERL_BIT_BINARY_EXT: {
		const unsigned char *p = (const unsigned char *)buf + *idx;
		size_t n = (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
		unsigned bits = p[5];
		if (n == 0 || bits == 0 || bits > 8)
			print_binary(o, p + 6, n, 8); /* validated terms have none of these */
		else
			print_binary(o, p + 6, n, bits);
		*idx += 6 + n;
		return;
	}
	case ERL_PID_EXT:
	case ERL_NEW_PID_EXT: {
		erlang_pid pid;
		if (term_get_pid(buf, idx, &pid) == 0) {
			put(o, "<", 1);
			puts_(o, pid.node);
			putf(o, ".%u.%u>", pid.num, pid.serial);
			return;
		}
		break;
	}
	case ERL_NEWER_REFERENCE_EXT:
	case ERL_NEW_REFERENCE_EXT: {
		erlang_ref ref;
		if (ei_decode_ref(buf, &ii, &ref) == 0) {
			put(o, "#Ref<", 5);
			puts_(o, ref.node);
			for (int k = ref.len; k-- > 0;)
				putf(o, ".%u", ref.n[k]);
			put(o, ">", 1);
			*idx = (size_t)ii;
			return;
		}
		break;
	}
	case ERL_PORT_EXT:
	case ERL_NEW_PORT_EXT:
	case ERL_V4_PORT_EXT: {
		erlang_port port;
		if (ei_decode_port(buf, &ii, &port) == 0) {
			put(o, "#Port<", 6);
			puts_(o, port.node);
			putf(o, ".%llu>", (unsigned long long)port.id);
			*idx = (size_t)ii;
			return;
		}
		break;
	}
	case ERL_EXPORT_EXT: {
		erlang_fun fun;
		if (ei_decode_fun(buf, &ii, &fun) == 0) {
			putf(o, "fun ");
			print_atom(o, fun.module);
			put(o, ":", 1);
			print_atom(o, fun.u.exprt.func);
			putf(o, "/%ld", fun.arity);
			free_fun(&fun);
			*idx = (size_t)ii;
			return;
		}
		break;
	}
	default:
		break;
	}
	/* A fun, or what could not be read: its kind, never its bytes. */
	put(o, tag == ERL_NEW_FUN_EXT ? "#Fun<...>" : "#Term<...>", tag == ERL_NEW_FUN_EXT ? 9 : 10);
	term_skip(buf, idx);
}

int term_print(const char *buf, size_t *idx, size_t max, char **out)
{
	*out = NULL;
	if (max < 3)
		max = 3;
	struct out o = {.max = max - 3}; /* room for the "..." of a cut */
	size_t i = *idx;
	print_term(&o, buf, &i, 0);
	if (o.cut) {
		o.cut = false;
		o.max = max;
		put(&o, "...", 3);
	}
	if (o.oom || o.s == NULL) {
		free(o.s);
		return -ENOMEM;
	}
	*idx = i;
	*out = o.s;
	return 0;
}
