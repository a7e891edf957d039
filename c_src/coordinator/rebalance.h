/*
 * rebalance.h — which shards a coordinator (coordinator.h) moves, and
 * where: draining regions that leave, evening out the others every
 * rebalance_interval_ms, and giving up on a move that takes too long.
 * Pure: no I/O, no clock (times are inputs), no sends. coordinator.c
 * describes its allocation as a rebalance_state, asks, and starts the
 * moves chosen in the order given (docs/protocol.md has the handoff).
 *
 * Counting: a shard counts at the region it moves to while its move is
 * under way, so moves already started are not chosen again, and a region
 * is not given more because its moves are slow. Ties go to the lowest
 * region index (the earliest registered), shards go lowest number first,
 * so every coordinator chooses the same on the same state.
 */
#ifndef SN_REBALANCE_H
#define SN_REBALANCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A coordinator's allocation, borrowed: nothing here is kept or written.
 * Every region index is below nregions. */
struct rebalance_state {
	uint32_t nshards;
	const int32_t *home;      /* per shard: its region, or -1 (no home yet) */
	const int32_t *moving_to; /* per shard: the region it moves to, or -1 */
	size_t nregions;
	const bool *takes;        /* per region: may be given shards (an owner, neither draining nor downed) */
	const bool *drains;       /* per region: its shards are to move off now (leaving, not downed);
				   * a region that drains takes none */
};

/* One move: `shard` from its home `from` to `to` (region indexes). */
struct rebalance_move {
	uint32_t shard;
	size_t from, to;
};

/* Draining: every shard homed on a draining region and not moving yet
 * goes, all at once (a leaving node waits for this, not for the rebalance
 * ticks), each to the region that takes shards with the fewest, counting
 * the moves chosen before it. If no region takes shards, nothing moves.
 * out (caller-owned) has room for s->nshards moves; *nout gets how many
 * were chosen, in the order to start them. Returns 0, or -ENOMEM with
 * *nout 0. */
int rebalance_drain(const struct rebalance_state *s, struct rebalance_move *out, size_t *nout);

/* Evening out: among the regions that take shards, moves one shard at a
 * time from the one with the most to the one with the fewest, while the
 * difference exceeds `threshold` and fewer than `room` moves were chosen
 * (room: max_simultaneous_rebalance less the moves under way). The shard
 * is the lowest-numbered one homed on the region with the most and not
 * moving; if it has none (all its count is moves under way into it or out
 * of it), the round stops. s->drains is not read. out (caller-owned) has
 * room for the smaller of `room` and s->nshards moves; *nout gets how many
 * were chosen, in order. Returns 0, or -ENOMEM with *nout 0. */
int rebalance_even_out(const struct rebalance_state *s, uint32_t threshold, uint32_t room,
		       struct rebalance_move *out, size_t *nout);

/* Whether a move started at `since` is given up at `now` (both in ms):
 * once more than timeout_ms has passed. The shard stays where it was. */
bool rebalance_overdue(uint64_t since, uint64_t now, uint32_t timeout_ms);

#endif
