/*
 * region_deliver.h — a message reaching its entity: delivered here, forwarded to its home, or flushed from its shard's buffer (region_deliver.c). For the files of a region only
 * (region_internal.h says which may call which); other modules use
 * region.h.
 */
#ifndef SN_REGION_DELIVER_H
#define SN_REGION_DELIVER_H

#include "sharding/region_internal.h"

/* Sets r->entities (struct region_entities) for the region as it is now:
 * call it once its store is open and its host's entities started. A peek
 * ('$shardnode_state') is answered here for every kind; with a store a
 * changed state is written and the reply waits for the commit (a `delete`
 * removes the stored state). */
void region_deliver_choose(struct region *r);

/* Sends `e` on to `home`, the region hosting its shard; a call goes as the
 * original '$gen_call', so the home answers the caller itself. Only over a
 * connection to home's node that is up (dist_node_send_connected): returns
 * 0 once written to it (lost only if that connection then fails), or, with
 * nothing sent and `e` still the caller's to keep, -ENOTCONN (a connection
 * is being set up: region_on_reach hears how it ends), -EHOSTUNREACH (the
 * node did not answer a moment ago), -ESRCH (home is of the node's
 * earlier incarnation) or another -errno (out of memory, a full output
 * queue). */
int region_forward(struct region *r, const erlang_pid *home, const struct envelope *e);

/* Delivers (hosted) or forwards (SLOT_REMOTE) what waits in the slot's
 * buffer, in arrival order. A hosted slot stops early when the lease is
 * gone (region_resume comes back for the rest) or when a load must come
 * first (the store's outcome comes back to the hub). A remote one stops at
 * the first message that cannot be written to its home's node, which stays
 * at the head of the buffer: returns region_forward's error then (the
 * caller steps the slot: region_home_unwritable), else 0. */
int region_flush_slot(struct region *r, struct shard_slot *slot);

/* {'$shardnode', aged, WaitedUs, Message} (region_forward): Message, which
 * waited WaitedUs on the member that forwarded it. Returns whether m is
 * one, with *inner (pointing into m) and *age_ns set. */
bool region_unwrap_aged(const struct proc_msg *m, struct proc_msg *inner, uint64_t *age_ns);

#endif
