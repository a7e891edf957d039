/*
 * scratch.h — a long-lived ei_x_buff reused for one kind of outgoing term,
 * so that the per-message paths (a reply for every request, the control
 * tuple of every packet) do not allocate and free a buffer per message.
 *
 * One scratch serves one nesting level: a caller takes it with scratch_get,
 * encodes, hands the bytes on (they are copied into an output queue), and
 * gives it back with scratch_put. Nested encoders use scratches of their own
 * (the region's reply, then the node's {Tag, Reply}, then the node's control
 * tuple). Should code run while a caller up the same stack still holds a
 * scratch (a nodedown hook that sends, say), scratch_get finds it busy and
 * hands out a fresh heap buffer instead: reuse is never unsafe, only skipped.
 *
 * A buffer that grew past SCRATCH_KEEP_MAX for one big term is released when
 * given back, so one large message does not pin its memory.
 */
#ifndef SN_SCRATCH_H
#define SN_SCRATCH_H

#include <stdbool.h>

#include <ei.h>

/* The size a scratch buffer starts with: every per-message term of the
 * built-in types fits, so ei never has to grow it. */
#define SCRATCH_INITIAL 1024
/* A buffer larger than this is freed when given back. */
#define SCRATCH_KEEP_MAX (64 * 1024)

struct scratch {
	ei_x_buff x; /* buff is NULL until first use */
	bool busy;   /* taken by a caller that has not given it back */
};

/* Sets up an idle, empty scratch; allocates nothing. */
void scratch_init(struct scratch *s);

/* Returns an empty buffer (index 0, no version byte) to encode into, valid
 * until scratch_put: the scratch's own when it is free, else `spare`,
 * initialised here with ei_x_new. Returns NULL when out of memory (nothing
 * to give back then). Whatever it returns must go to scratch_put. The
 * buffer is plain malloc memory, as ei_x_* and entity_id_canonical expect. */
ei_x_buff *scratch_get(struct scratch *s, ei_x_buff *spare);

/* Gives back a buffer from scratch_get: frees a spare, keeps the scratch's
 * own (released if it grew past SCRATCH_KEEP_MAX). */
void scratch_put(struct scratch *s, ei_x_buff *x);

/* Frees the scratch's buffer; the scratch must not be taken. Idempotent. */
void scratch_free(struct scratch *s);

#endif
