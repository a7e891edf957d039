/*
 * downing.h — whom the cluster downs, decided once, by one member, on the
 * cluster-wide reachability view (reachability.h). Pure: no I/O, no clock.
 *
 * Every member, once the view has been stable for stable_after_ms, looks
 * at the members its side cannot hear: those it cannot hear itself and,
 * where each member watches only a few others (watch_ring.h), those it
 * does not watch that a member nobody reports cannot hear:
 *  1. Keep-majority over its own view: if the members it hears (with
 *     itself) do not win (quorum_wins), it downs itself. That is how the
 *     minority side of a partition goes, and a member with a network bad
 *     enough to lose most of the others.
 *  2. Otherwise it downs those it cannot hear that no member it hears can
 *     hear either: they are cut off from its whole side (the other side of
 *     a partition) or dead. Every member of the side comes to the same
 *     answer, so downing them twice does no harm.
 * Any other record is an indirect fault: a cut link between two members,
 * or a member with a bad network, which the others still hear. Only the
 * leader acts on those: the oldest voting member that no voting member
 * reports unreachable, so every member agrees who it is.
 *  3. The leader downs the fewest members that leave everyone else
 *     hearing everyone, one at a time: the member named in the most
 *     records left (as observer or subject) goes first, so a lossy member
 *     that cannot hear several healthy ones goes, never they. On a tie, the
 *     one that reports more goes: a member that cannot hear another, who
 *     hears it, is the one whose network drops what comes in. On a tie
 *     still (one record each way between two members) the one named more
 *     often lately goes: a lossy member's records come and go with many
 *     members, and the view may catch it when only one pair is left, a
 *     healthy member and it. On a tie still (a lasting cut link) the
 *     youngest goes (highest up-number, then the greater name): the oldest
 *     run the coordinators. The leader counts too: a leader that cannot
 *     hear a member the others hear (its own network drops what comes
 *     in) reports more than that member and downs itself
 *     (DOWNING_SELF), never the member.
 * The cases and what each costs are in docs/contract.md ("A cluster").
 */
#ifndef SN_DOWNING_H
#define SN_DOWNING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A voting member (up or leaving). */
struct downing_member {
	const char *node;
	uint32_t up_number; /* age: the lowest is the oldest */
	/* How often it was named in a new record lately
	 * (reachability_times_named); 0 without a history. */
	uint32_t times_named;
};

/* One record of the view: `observer` cannot hear `subject`. */
struct downing_edge {
	const char *observer;
	const char *subject;
};

/* The leader: the index in members of the oldest one that is no edge's
 * subject (edges naming a non-member are ignored), or -1 if every member is
 * somebody's subject (or memory ran out: nobody leads until the next
 * decision). downing_decide uses the same rule. */
int downing_leader(const struct downing_member *members, size_t n, const struct downing_edge *edges,
		   size_t nedges);

enum downing_verdict {
	DOWNING_NONE,      /* nothing to do */
	DOWNING_SELF,      /* decider's side loses keep-majority: down itself */
	DOWNING_OTHERS,    /* down the members listed in out */
};

/* The decision of `decider` (an index into members) on the view, each
 * member watched by `watchers` others on the ring of watch_ring.h (at
 * least n - 1: every member watches every other). Step 2 then asks only
 * the members of the side meant to hear a member. out has room for n
 * indexes; *nout gets how many are listed (DOWNING_OTHERS only), in the
 * order chosen: first those cut off from decider's side (step 2), then,
 * on the leader, the indirect ones (step 3). Out of memory: DOWNING_NONE,
 * and the next tick decides. */
enum downing_verdict downing_decide(const struct downing_member *members, size_t n, size_t decider, size_t watchers,
				    const struct downing_edge *edges, size_t nedges, size_t *out, size_t *nout);

#endif
