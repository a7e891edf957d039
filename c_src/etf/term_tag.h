/*
 * term_tag.h — what kind of term each tag of the external term format
 * (erl_ext_dist) introduces: the one classification the validator
 * (term.c), phash2.c, entity_id.c and term_readable.c share, so that a tag
 * is an integer, a container or an identifier of one node's life in the
 * same way for all of them. Each still reads a tag's layout itself, where
 * it needs the bytes.
 */
#ifndef SN_TERM_TAG_H
#define SN_TERM_TAG_H

#include <stdbool.h>
#include <stdint.h>

enum term_kind {
	TERM_KIND_NONE, /* no term the node accepts: atom cache references,
			 * the obsolete FUN_EXT, unknown tags */
	TERM_KIND_INTEGER,   /* SMALL_INTEGER, INTEGER, SMALL_BIG, LARGE_BIG */
	TERM_KIND_FLOAT,     /* NEW_FLOAT, FLOAT (text) */
	TERM_KIND_ATOM,      /* ATOM, SMALL_ATOM, and their UTF-8 forms */
	TERM_KIND_NIL,       /* NIL */
	TERM_KIND_STRING,    /* STRING: a list of bytes */
	TERM_KIND_BINARY,    /* BINARY */
	TERM_KIND_BITSTRING, /* BIT_BINARY */
	TERM_KIND_TUPLE,     /* SMALL_TUPLE, LARGE_TUPLE */
	TERM_KIND_LIST,      /* LIST */
	TERM_KIND_MAP,       /* MAP */
	TERM_KIND_PID,       /* PID, NEW_PID */
	TERM_KIND_PORT,      /* PORT, NEW_PORT, V4_PORT */
	TERM_KIND_REF,       /* REFERENCE, NEW_REFERENCE, NEWER_REFERENCE */
	TERM_KIND_FUN,       /* NEW_FUN */
	TERM_KIND_EXPORT,    /* EXPORT */
};

/* Indexed by tag; TERM_KIND_NONE for every tag not listed above. */
extern const uint8_t term_kind_table[256];

static inline enum term_kind term_kind_of(unsigned char tag) { return (enum term_kind)term_kind_table[tag]; }

/* Whether the kind names a process, port or reference of some node, or a
 * function: a thing of one node's life, which no entity id may contain
 * (phash2 and the canonical ids answer -EINVAL). */
static inline bool term_kind_names_a_thing(enum term_kind k)
{
	return k == TERM_KIND_PID || k == TERM_KIND_PORT || k == TERM_KIND_REF || k == TERM_KIND_FUN ||
	       k == TERM_KIND_EXPORT;
}

/* Whether the kind names a process, port or reference: what a reply may
 * hold that its receiver must be able to read (term_readable.h). */
static inline bool term_kind_is_identifier(enum term_kind k)
{
	return k == TERM_KIND_PID || k == TERM_KIND_PORT || k == TERM_KIND_REF;
}

#endif
