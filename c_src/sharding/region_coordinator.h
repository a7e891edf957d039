/*
 * region_coordinator.h — a region's side of the coordinator protocol: registration, shard homes, handoff, and the one way back into it (region_step_owed) (region_coordinator.c). For the files of a region only
 * (region_internal.h says which may call which); other modules use
 * region.h.
 */
#ifndef SN_REGION_COORDINATOR_H
#define SN_REGION_COORDINATOR_H

#include "sharding/region_internal.h"

/* A message for `shard` had to wait: if nobody asked for its home yet, the
 * coordinator is asked now (or once it acknowledges our registration). */
void region_need_home(struct region *r, uint32_t shard);

/* A message for `shard`'s remote home could not be written to its node
 * (rc: region_forward's error) and waits in the shard's buffer. While a
 * connection is being set up (-ENOTCONN) nothing changes: region_on_reach
 * goes on when it ends. Otherwise the home is unreachable: the slot is
 * stepped SLOT_HOME_UNREACHABLE, and the coordinator asked again. */
void region_home_unwritable(struct region *r, uint32_t shard, int rc);

/* The coordinator's messages and the handoff protocol between regions:
 * registered, register_again, shard_home, begin_handoff, handoff,
 * handoff_ack, and the state stream (shard_state, shard_state_ack), all
 * with `sm->shard` < nshards. Orders from a coordinator we are
 * not registered with are ignored. Other kinds are ignored. */
void region_on_coordinator_msg(struct region *r, const struct shard_msg *sm, const erlang_pid *from);

/* A slot whose every handoff ack is in: flushes what waits here, and once
 * nothing does, stops the shard and tells the coordinator. */
void region_hand_off_when_flushed(struct region *r, uint32_t shard);

/* The retry timer's part for the coordinator protocol: registration
 * until acknowledged, then unanswered home requests, handoff deadlines and
 * moves that never ended. */
void region_coordinator_tick(struct region *r);

/* Sends the encoded message buf[0..len) (version byte first) to the
 * coordinator the region knows of (registered or being registered with).
 * Returns the outlet's reg_send result (dist_node_reg_send's on a running
 * node). */
int region_coordinator_send(struct region *r, const char *buf, size_t len);

/* dist_node_on_nodedown's callback (arg: the region). */
void region_on_nodedown(void *arg, const char *peer);

/* dist_node_on_reach's callback (arg: the region): what waits for a
 * connection to a remote home on `peer` goes once one is up; when the
 * attempt failed, those homes are unreachable (region_home_unwritable). */
void region_on_reach(void *arg, const char *peer, bool up);

/* Steps the slot of `shard` with an event that carries nothing but the
 * clock (region_slot.h) and does what the step says, then what is owed. */
void region_step(struct region *r, uint32_t shard, enum region_slot_event_kind kind);

/* Steps every event region_handoff_state.c left owed (SLOT_OWES_*), until
 * none is: the one way back into the coordinator protocol for what the
 * handoff state finds. Whoever calls a region_state_* function that may
 * owe (on_msg, on_nodedown, on_committed, on_scanned, send_start) calls
 * this after it. Called during itself, it returns at once: the outer
 * loop takes what was added. */
void region_step_owed(struct region *r);

#endif
