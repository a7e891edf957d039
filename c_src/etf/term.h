/*
 * term.h — bounds-checked walking of the external term format, and small
 * helpers over ei for the terms the node reads and writes.
 *
 * ei's decoders trust their input: ei_skip_term() or ei_decode_*() on a
 * truncated or lying term read past the buffer. So every term that arrives
 * from a peer is first checked whole by term_validate() (term_validate.h),
 * which never reads outside [buf, buf+len). After that, ei's decoders are
 * safe on it.
 *
 * Offsets are byte indexes into a buffer that does NOT start with the version
 * byte 131 (callers strip it), matching ei's `index` convention.
 */
#ifndef SN_TERM_H
#define SN_TERM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <ei.h>

/* Largest atom text in bytes (255 characters of up to 4 UTF-8 bytes), plus NUL. */
#define TERM_ATOM_BUF (MAXATOMLEN_UTF8)

/* The first byte of every encoded term on the wire. */
#define TERM_VERSION_MAGIC 131

/* The structural half of term_validate (term_validate.h): that buf[*idx ..]
 * holds one complete term within len bytes, every length against the bytes
 * left and every leaf as binary_to_term checks it, everything that
 * term_validate checks but the one check about terms rather than bytes
 * (a map's keys distinct). Advances *idx past the term; *maps is set if a
 * map of two or more pairs was seen (left as it was otherwise). Returns 0,
 * -EPROTO, or -ENOMEM (funs nested more than 8 deep); *idx is unchanged on
 * error. Iterative: nesting depth costs no stack. */
int term_check_structure(const char *buf, size_t len, size_t *idx, bool *maps);

/* The value of a FLOAT_EXT's text field (its 31 bytes after the tag), as
 * binary_to_term reads it: the text runs to its first NUL and is
 * [+-]d+[.,]d+([eE][+-]d+)? (a comma may stand for the point); its value
 * must be finite (one that rounds to 0 is 0). The NUL must lie within the
 * 31 bytes: the BEAM reads on past them to find one, into whatever follows
 * the term, so its verdict on a text without one depends on bytes that are
 * not the term's (and every writer, the BEAM and ei alike, pads the text
 * with NULs). Returns 0 with *out, or -EPROTO. Independent of the C
 * locale's radix character. Reads text[0..31) and nothing else. */
#define TERM_FLOAT_TEXT_BYTES 31
int term_float_text_value(const char *text, double *out);

/* True if none of s[0..n) has its high bit set, a word at a time: node
 * names (in every pid sent, in most atoms checked) are ASCII, and byte by
 * byte this check cost more than the rest of a control tuple. */
static inline bool term_text_is_ascii(const void *s, size_t n)
{
	const unsigned char *b = s;
	uint64_t high = 0, w;
	size_t k = 0;
	for (; n - k >= sizeof w; k += sizeof w) {
		memcpy(&w, b + k, sizeof w);
		high |= w;
	}
	for (; k < n; k++)
		high |= b[k];
	return (high & 0x8080808080808080u) == 0;
}

/* Whether s[0..n) is an atom's text binary_to_term takes: as Latin-1
 * (utf8 false) at most 255 bytes; as UTF-8 well-formed (no overlong form,
 * no surrogate, nothing above U+10FFFF) and at most 255 characters. The
 * validator's rule, for every reader that rewrites an atom
 * (entity_id_scalar.c). */
bool term_atom_text_ok(const unsigned char *s, size_t n, bool utf8);

/* True if the term at buf[idx], which must lie within buf[0..len), is an
 * atom whose text, as UTF-8, is name[0..name_len). Latin-1 atoms (ATOM_EXT,
 * SMALL_ATOM_EXT) are compared as their UTF-8 conversion, so every encoding
 * of an atom compares alike; UTF-8 atoms compare their bytes as sent. As
 * the C string comparison that came before, the atom's text counts up to
 * its first NUL byte, and text longer than TERM_ATOM_BUF - 1 bytes as UTF-8
 * matches nothing. `name` holds no NUL. Reads nothing outside buf[0..len):
 * a term cut short is simply not equal. */
bool term_atom_equals(const char *buf, size_t len, size_t idx, const char *name, size_t name_len);

/* True if the (validated) term at buf[idx] is the atom `name` (a C string):
 * term_atom_equals without a bound, as a validated term needs none. Inline,
 * so that the length of a literal name is known when compiling: the
 * encoding a BEAM sends atoms in, SMALL_ATOM_UTF8_EXT, is then compared in
 * place, whatever its length (every message a region reads asks this of
 * its head or its body, so an atom of another length, the usual case,
 * must not cost a call). Other encodings are left to term_atom_equals. */
static inline bool term_is_atom(const char *buf, size_t idx, const char *name)
{
	size_t name_len = strlen(name);
	const unsigned char *b = (const unsigned char *)buf + idx;
	/* term_atom_equals's rule for UTF-8 text (at most 255 bytes here, under
	 * its bound): equal when the text starts with the name and ends there
	 * or at a NUL. The length is read before the text, and the byte after
	 * the name only when the text goes on, so no byte past the atom is. */
	if (b[0] == ERL_SMALL_ATOM_UTF8_EXT) {
		size_t n = b[1];
		return n >= name_len && memcmp(b + 2, name, name_len) == 0 && (n == name_len || b[2 + name_len] == 0);
	}
	return term_atom_equals(buf, SIZE_MAX, idx, name, name_len);
}

/* Decodes a (validated) atom at buf[*idx] into out (TERM_ATOM_BUF bytes) as
 * UTF-8, NUL-terminated, and advances *idx. Returns 0, or -EPROTO (*idx
 * unchanged) if it is not an atom or its UTF-8 text is longer than
 * TERM_ATOM_BUF - 1 bytes (Latin-1 text can be: up to 1020 bytes, each
 * of which may take two). */
int term_get_atom(const char *buf, size_t *idx, char *out);

/* The same into out[0..out_size): text longer than out_size - 1 bytes as
 * UTF-8 is refused (-EPROTO, *idx unchanged), so a name decoded into a
 * smaller buffer (a node name's, say) fits it by construction. out_size
 * is at least 1 and at most TERM_ATOM_BUF. */
int term_get_atom_sized(const char *buf, size_t *idx, char *out, size_t out_size);

/* Decodes a (validated) PID_EXT or NEW_PID_EXT at buf[*idx] into *out, as
 * ei_decode_pid does (node name as NUL-terminated UTF-8; a PID_EXT's
 * creation is its low 2 bits), and advances *idx. Returns 0, or -EPROTO
 * (*idx unchanged, *out partly written) if it is not a pid or its node name
 * is refused by term_get_atom. */
int term_get_pid(const char *buf, size_t *idx, erlang_pid *out);

/* True if a and b are the same process (node, number, serial, creation). */
bool term_pid_equal(const erlang_pid *a, const erlang_pid *b);

/* Copies a pid: its numbers and its node name up to and including the NUL,
 * not the whole node buffer (an erlang_pid is over 1 KB, its name mostly
 * about 20 bytes). dst->node past the NUL is left as it was. */
void term_pid_copy(erlang_pid *dst, const erlang_pid *src);

/* Writes into *dst the pid of node node[0..node_len) (no NUL needed;
 * node_len < sizeof dst->node) with these numbers: what a record that
 * keeps a pid small (its numbers, its node's name elsewhere) gives back
 * as an erlang_pid. dst->node past the name's NUL is left as it was. */
void term_pid_set(erlang_pid *dst, const char *node, size_t node_len, uint32_t num, uint32_t serial,
		  uint32_t creation);

/* Reads a (validated) tuple header at buf[*idx]; returns its arity, or -1
 * (*idx unchanged) if not a tuple. A LARGE_TUPLE_EXT arity of 2^31 or more
 * would come back negative with *idx advanced, as from ei; none passes
 * validation while packets are capped below 2^31 bytes (config.c's
 * max_message_bytes), as the validator wants a byte per element. */
long term_get_tuple(const char *buf, size_t *idx);

/* Skips one validated term: leaves by their header, anything else by the
 * validator's iterative walk (no recursion, whatever the nesting). */
void term_skip(const char *buf, size_t *idx);

/* One step of a walk over every subterm of a validated term, in order: at
 * buf[*idx], past a tuple's, list's or map's header (its elements come
 * next), past an export's tag (its atoms and arity come next, as leaves),
 * past a fun's fixed fields, module and old index and uniq when into_funs
 * (its Pid and free variables come next; else the fun whole), and past
 * any other term whole. Stepping from a term's start to its end visits
 * each of its subterms once. */
void term_step(const char *buf, size_t *idx, bool into_funs);

/* Reads a (validated) small non-negative integer (< 2^31) into *out and
 * advances *idx. Returns 0, or -EPROTO (*idx and *out unchanged). */
int term_get_long(const char *buf, size_t *idx, long *out);

/* Appends raw, already-encoded term bytes to x. Returns 0 or -ENOMEM. */
int term_x_append_raw(ei_x_buff *x, const char *bytes, size_t n);

/* Encodes {ok, [Atom, ...]} etc. are built with ei_x_* directly; these wrap
 * the two error replies every request handler needs:
 *   {error, Reason}  where Reason is an atom
 *   {error, {Tag, RawTerm}} where RawTerm is echoed byte for byte. */
/* For a reply built in x from index `start` by encoders whose results were
 * OR-ed into `rc` (ei's -1 and this file's -errno are negative, so any
 * failure leaves rc < 0 and x holding no whole term): keeps x when
 * rc >= 0, else truncates it to `start` and encodes {error, enomem}
 * there. Returns 0, or -ENOMEM when even that does not fit (x->index is
 * then `start`: send nothing). A term that is not whole must never be
 * sent: the BEAM drops the connection on it. */
int term_x_whole_or_enomem(ei_x_buff *x, int start, int rc);
int term_x_error_atom(ei_x_buff *x, const char *reason);
int term_x_error_tagged_raw(ei_x_buff *x, const char *tag, const char *raw, size_t raw_len);

#endif
