/*
 * region_send.h — what a region sends: answers to calls and tells, its own calls' replies, its messages to the coordinator (region_send.c). For the files of a region only
 * (region_internal.h says which may call which); other modules use
 * region.h.
 */
#ifndef SN_REGION_SEND_H
#define SN_REGION_SEND_H

#include "sharding/region_internal.h"

/* Answers the message's sender with `reply` (no version byte): a call's
 * reply, or a tell's {Type, EntityId, Reply}; a tell without sender gets
 * nothing. A reply the receiving node could not read (term_readable.h)
 * goes as {error, unreadable_reply}. */
void region_answer(struct region *r, const struct envelope *e, const ei_x_buff *reply);

/* Sends a message (encoded, version byte included) from the region's
 * node to `to`: the send the region gives the parts that speak protocols
 * of their own (its replicated store, its hosted entities), `region` a
 * struct region. Returns the outlet's send result, 0 or -errno
 * (dist_node_send's on a running node). */
int region_send_encoded(void *region, const erlang_pid *to, const char *buf, size_t len);

/* Answers {error, Reason} (an atom) as region_answer does. */
void region_answer_error(struct region *r, const struct envelope *e, const char *reason);

/* Answers a gen_server call that is no entity message (the region's own
 * requests): `reply` (no version byte) is read only. */
void region_send_call_reply(struct region *r, const erlang_pid *to, const char *tag, size_t tag_len,
			    const ei_x_buff *reply);

/* Sends a shard_msg to the coordinator we are registered with: `shard` for
 * get_shard_home and shard_stopped, ignored by the others. Unregistered,
 * nothing is sent. */
void region_send_to_coordinator(struct region *r, enum shard_msg_kind kind, uint32_t shard);

#endif
