/*
 * region_buffer.h — the per-shard buffers of messages that wait (region_buffer.c). For the files of a region only
 * (region_internal.h says which may call which); other modules use
 * region.h.
 */
#ifndef SN_REGION_BUFFER_H
#define SN_REGION_BUFFER_H

#include "sharding/region_internal.h"

/* The envelope of a buffered message; its pointers are into p. */
void region_envelope_of(const struct pending *p, struct envelope *e);

/* Appends a copy of the message to the slot's buffer. False if the
 * buffers are full (buffer_size in all) or out of memory. */
bool region_buffer_append(struct region *r, struct shard_slot *slot, const struct envelope *e);

/* Takes the messages for entity `id` out of the slot's buffer, each
 * answered {error, `error`} (a tell, to its sender if known); the others
 * keep their order. */
void region_refuse_entity(struct region *r, struct shard_slot *slot, const char *id, size_t id_len,
			  const char *error);

/* Empties the slot's buffer for good: each waiting call is answered
 * {error, shutting_down}, tells are dropped. */
void region_refuse_buffered(struct region *r, struct shard_slot *slot);

#endif
