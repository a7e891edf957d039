/*
 * entity_id_scalar.h — the canonical encoding of one scalar term (an
 * integer, float, atom, binary, bitstring, NIL or STRING_EXT), for
 * entity_id.c.
 *
 * entity_id.c walks containers; every term that is not a container is
 * rewritten here, by the rules listed in entity_id.h. Both files read the
 * input and append the output through one struct id_io, so a scalar is
 * written straight into the id being built.
 */
#ifndef SN_ENTITY_ID_SCALAR_H
#define SN_ENTITY_ID_SCALAR_H

#include <stddef.h>

#include <ei.h>

/* The input term being read, its cursor, and the output being appended to.
 * Borrowed: the caller owns both buffers. out's buffer must be plain malloc
 * memory (it is grown with realloc). */
struct id_io {
	const unsigned char *in;
	size_t len; /* bytes of input */
	size_t i;   /* cursor: the next input byte to read */
	ei_x_buff *out;
};

/* Input bytes left from the cursor. */
static inline size_t id_io_avail(const struct id_io *io) { return io->len - io->i; }

/* Appends n bytes to io->out, growing its buffer geometrically (ei's own
 * ei_x_append_buf grows by a constant step: quadratic for large ids).
 * Returns 0, or -ENOMEM with the output unchanged. */
int id_io_put(struct id_io *io, const void *p, size_t n);

/* Reads the scalar term whose tag, `tag`, is at io->in[io->i], appends its
 * canonical encoding and moves the cursor past it. Returns 0; -EPROTO for a
 * malformed or truncated term, bad atom text, a non-finite float, or a tag
 * that is no term at all; -ENOMEM. On error the cursor and output are
 * unspecified (entity_id_canonical restores the output). Containers and the
 * refused terms (pids, ports, references, funs) are entity_id.c's: their
 * tags give -EPROTO here. */
int id_read_scalar(struct id_io *io, unsigned char tag);

#endif
