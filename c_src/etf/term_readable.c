/* term_readable.c — see term_readable.h. */
#include "etf/term_readable.h"

#include <string.h>

#include <ei.h>

#include "base/byteorder.h"
#include "etf/term.h"
#include "etf/term_tag.h"

/* The largest numbers a BEAM (OTP 25) hands out for its own pids, the
 * first word of its references, and its ports; binary_to_term/1 refuses
 * larger ones naming the node that reads them. */
#define OWN_PID_NUMBER_MAX 0x7fffu
#define OWN_PID_SERIAL_MAX 0x1fffu
#define OWN_REF_WORDS_MAX 3u
#define OWN_REF_FIRST_WORD_MAX 0x3ffffu
#define OWN_PORT_NUMBER_MAX 0xfffffffu

/* The end of the validated atom at b[i]. */
static size_t atom_end(const unsigned char *b, size_t i)
{
	if (b[i] == ERL_SMALL_ATOM_UTF8_EXT || b[i] == ERL_SMALL_ATOM_EXT)
		return i + 2 + b[i + 1];
	return i + 3 + be16_read(b + i + 1);
}

/* Whether the identifier at b[at] (a pid, reference or port, validated)
 * names node/creation with numbers that node never hands out. The name is
 * compared last: most identifiers' numbers are in range. */
static bool unreadable_identifier(const unsigned char *b, size_t len, size_t at, const char *node,
				  size_t node_len, uint32_t creation)
{
	unsigned char tag = b[at];
	size_t words = 0, name = at + 1;
	if (tag == ERL_NEW_REFERENCE_EXT || tag == ERL_NEWER_REFERENCE_EXT) {
		words = be16_read(b + at + 1);
		name = at + 3;
	}
	size_t p = atom_end(b, name); /* the numbers after the node's name */
	uint32_t cre;
	bool bad;
	switch (tag) {
	case ERL_PID_EXT:
	case ERL_NEW_PID_EXT:
		cre = tag == ERL_PID_EXT ? b[p + 8] : be32_read(b + p + 8);
		bad = be32_read(b + p) > OWN_PID_NUMBER_MAX || be32_read(b + p + 4) > OWN_PID_SERIAL_MAX;
		break;
	case ERL_REFERENCE_EXT: /* ID:4, Creation:1 */
		cre = b[p + 4];
		bad = be32_read(b + p) > OWN_REF_FIRST_WORD_MAX;
		break;
	case ERL_NEW_REFERENCE_EXT: /* Creation:1, ID:4*Len */
	case ERL_NEWER_REFERENCE_EXT: { /* Creation:4, ID:4*Len */
		size_t cre_len = tag == ERL_NEW_REFERENCE_EXT ? 1 : 4;
		cre = cre_len == 1 ? b[p] : be32_read(b + p);
		bad = words > OWN_REF_WORDS_MAX || be32_read(b + p + cre_len) > OWN_REF_FIRST_WORD_MAX;
		break;
	}
	case ERL_PORT_EXT: /* ID:4, Creation:1 */
		cre = b[p + 4];
		bad = be32_read(b + p) > OWN_PORT_NUMBER_MAX;
		break;
	case ERL_NEW_PORT_EXT: /* ID:4, Creation:4 */
		cre = be32_read(b + p + 4);
		bad = be32_read(b + p) > OWN_PORT_NUMBER_MAX;
		break;
	default: /* ERL_V4_PORT_EXT: ID:8, Creation:4 */
		cre = be32_read(b + p + 8);
		bad = be32_read(b + p) != 0 || be32_read(b + p + 4) > OWN_PORT_NUMBER_MAX;
		break;
	}
	return bad && cre == creation && term_atom_equals((const char *)b, len, name, node, node_len);
}

/* The fewest bytes an identifier naming a node takes: a NEW_REFERENCE_EXT
 * of no words (tag 1, length 2, creation 1) around the shortest atom
 * (SMALL_ATOM_UTF8_EXT: 2 bytes of head and a name of 1). */
#define SHORTEST_IDENTIFIER 7

bool term_readable_by(const char *term, size_t len, const char *node, uint32_t creation)
{
	/* Most replies are a small integer or an atom like `ok`, too short to
	 * name any node: the node's name is not even read. */
	if (len < SHORTEST_IDENTIFIER)
		return true;
	size_t node_len = strlen(node);
	/* An ASCII name is the same bytes in every atom encoding: a term
	 * whose bytes do not hold it names no identifier of that node. */
	if (node_len == 0 || (term_text_is_ascii(node, node_len) && memmem(term, len, node, node_len) == NULL))
		return true;
	const unsigned char *b = (const unsigned char *)term;
	size_t i = 0;
	/* Every subterm in order, into funs (their Pid and free variables). */
	while (i < len) {
		if (term_kind_is_identifier(term_kind_of(b[i])) && unreadable_identifier(b, len, i, node, node_len, creation))
			return false;
		term_step(term, &i, true);
	}
	return true;
}
