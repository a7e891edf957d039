/*
 * region_handoff_state.h — entity states streamed to a shard's new home (region_handoff_state.c). For the files of a region only
 * (region_internal.h says which may call which); other modules use
 * region.h.
 */
#ifndef SN_REGION_HANDOFF_STATE_H
#define SN_REGION_HANDOFF_STATE_H

#include "sharding/region_internal.h"

/* Whether the shard has entity states to send to its new home: the type
 * keeps state, entities are live (or, with a store, may be stored), and
 * the handoff named a new home that is not this region. */
bool region_state_to_carry(const struct region *r, const struct shard_slot *slot);

/* SLOT_DO_SEND_STATE: starts streaming the slot's entity states to
 * home_region. SLOT_STATE_SENT is owed (region_step_owed) when the last
 * chunk is acknowledged, or at once if a chunk cannot be built or sent. */
void region_state_send_start(struct region *r, uint32_t shard);

/* shard_state (a chunk, at the new home: SLOT_STATE_CHUNK is owed) and
 * shard_state_ack (at the old home: the last one owes SLOT_STATE_SENT);
 * `sm->shard` < nshards. Anything out of turn is ignored, logged. */
void region_state_on_msg(struct region *r, const struct shard_msg *sm);

/* A node is gone: streams to it end (SLOT_STATE_SENT owed: the shard
 * stops without the rest). */
void region_state_on_nodedown(struct region *r, const char *node);

/* The store committed more: streams that waited for it go on, and the
 * chunks whose writes are now durable are acknowledged. */
void region_state_on_committed(struct region *r);

/* Sends the held acknowledgements whose writes are up to `upto` (the
 * region stops: UINT64_MAX, as the store commits what is queued before it
 * closes). */
void region_state_release_acks(struct region *r, uint64_t upto);

/* The store's answer to a stream's scan (state_store_scanned_fn's
 * arguments, passed on by the hub). May owe SLOT_STATE_SENT. */
void region_state_on_scanned(struct region *r, uint64_t token, int status, const char *chunk, size_t len, bool more,
			     const char *last_key, size_t last_key_len);

/* Hands the slot's incoming shard to the caller (NULL if none). */
struct shard *region_state_take_incoming(struct shard_slot *slot);

/* Frees the slot's incoming shard, if any (its entities stop). */
void region_state_drop_incoming(struct shard_slot *slot);

/* Whether the slot's incoming shard (if any) can no longer become the
 * shard here: the slot hosts or sends the shard, or names as its home a
 * region other than the one the states came from. The caller drops it. */
bool region_state_incoming_outlived(const struct shard_slot *slot);

#endif
