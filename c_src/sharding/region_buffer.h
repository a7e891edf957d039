/*
 * region_buffer.h — the per-shard buffers of messages that wait (region_buffer.c). For the files of a region only
 * (region_internal.h says which may call which); other modules use
 * region.h.
 */
#ifndef SN_REGION_BUFFER_H
#define SN_REGION_BUFFER_H

#include "sharding/region_internal.h"

/* The envelope of a buffered message; its pointers are into p, and its
 * sender (if any) is written out to *from, which must outlive e's use. */
void region_envelope_of(const struct pending *p, struct envelope *e, erlang_pid *from);

/* A copy of the message, its shard field 0, linked to nothing; NULL when
 * out of memory. The caller frees it (free). */
struct pending *region_pending_new(const struct envelope *e);

/* Puts the list head..tail (n messages, linked by `next`, owned by the
 * buffer from now on) in front of what waits in the slot's buffer: they
 * were sent before it. Not bounded by buffer_size: they were accepted
 * already, and must not be lost. */
void region_buffer_push_front(struct region *r, struct shard_slot *slot, struct pending *head, struct pending *tail,
			      uint32_t n);

/* Appends a copy of the message to the slot's buffer. False if the
 * buffers are full (buffer_size in all) or out of memory. */
bool region_buffer_append(struct region *r, struct shard_slot *slot, const struct envelope *e);

/* Takes the messages for entity `id` out of the slot's buffer, each
 * answered {error, `error`} (a tell, to its sender if known); the others
 * keep their order. */
void region_refuse_entity(struct region *r, struct shard_slot *slot, const char *id, size_t id_len,
			  const char *error);

/* Whether the oldest message in the slot's buffer has waited limit_ns or
 * longer by now_ns (the loop's clock, evloop_now_ns). False for an empty
 * buffer. */
bool region_buffer_waited(const struct shard_slot *slot, uint64_t now_ns, uint64_t limit_ns);

/* Empties the slot's buffer: each waiting call is answered {error,
 * `error`} (shutting_down: the region stops), tells are dropped. */
void region_refuse_buffered(struct region *r, struct shard_slot *slot, const char *error);

#endif
