/*
 * quorum.h — keep-majority arithmetic: which side of a split cluster may go
 * on. Pure functions, no I/O.
 *
 * A side may go on when it holds more than half of the members, or exactly
 * half and among them the member with the lowest node name (Akka's
 * keep-majority tie-break). The other side downs itself.
 *
 * A node may deliver to its entities only while it holds a quorum *lease*:
 * each other member's lease runs until the send time of the last heartbeat
 * that member acknowledged plus failure_timeout_ms. A member that stops
 * hearing us cannot down us before failure_timeout_ms + stable_after_ms of
 * silence, so our lease with it has run out before anybody starts our
 * entities elsewhere.
 */
#ifndef SN_QUORUM_H
#define SN_QUORUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True if `in` members out of `total`, where `has_lowest` says whether the
 * member with the lowest node name is one of them, may go on. */
bool quorum_wins(size_t in, size_t total, bool has_lowest);

/* One member as seen from this node. `lease_until` is UINT64_MAX for this
 * node itself. `node` is only compared, never kept. */
struct quorum_member {
	const char *node;
	uint64_t lease_until;
};

/* Until when (in the leases' clock) the members whose leases have not run
 * out still win: the largest t such that the members with lease_until > t
 * win. Returns UINT64_MAX when no lease is needed (this node alone wins, or
 * n == 0) and 0 when they never win. `scratch` holds n entries; the
 * function sorts into it. */
uint64_t quorum_until(const struct quorum_member *members, size_t n, struct quorum_member *scratch);

#endif
