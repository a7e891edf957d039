/*
 * membership_rules.h — the decisions membership (membership.h) takes on
 * its member list, as pure functions: how a gossiped entry merges with
 * ours, what a seed does with a join, who leads, and whom the leader
 * admits with which up-number. No I/O, no clock (times are inputs), no
 * sends, no allocation: membership.c describes its list as member_facts,
 * asks, and carries the answers out (logs, gossip, heartbeats), so the
 * rules can be tested on any interleaving without a cluster.
 *
 * Incarnations: a member's up-number names its incarnation and its age
 * (the lowest is the oldest; up-numbers never repeat). A node that rejoins
 * after a down, or restarts while still listed, is listed joining (up-
 * number 0) with a version above any its old incarnation reached, and
 * admitted with a new, higher up-number. Within an incarnation a down is
 * final, whatever version the member gossips: a node cut off and downed
 * must not come back still hosting shards that moved. Otherwise the higher
 * up-number, then the higher version, then the later status wins, so
 * merges converge.
 */
#ifndef SN_MEMBERSHIP_RULES_H
#define SN_MEMBERSHIP_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster/quorum.h"

/* In the order a member moves through them; a merge never moves backwards
 * within an incarnation. */
enum member_status { MEMBER_JOINING, MEMBER_UP, MEMBER_LEAVING, MEMBER_EXITING, MEMBER_DOWN, MEMBER_REMOVED };

/* Members that vote in keep-majority, give quorum leases and may lead: up
 * or leaving (a leaving member still holds shards until they are moved). */
bool membership_rules_votes(enum member_status status);

/* One member as the rules see it. `node` is only compared, never kept. */
struct member_facts {
	const char *node;
	uint32_t up_number;        /* 0 while joining */
	enum member_status status;
	uint32_t version;
	/* Not gossiped: what this node has seen of the member. */
	bool unreachable;          /* silent for failure_timeout_ms */
	uint64_t last_heard;       /* loop ms of its last heartbeat, ack or gossip */
	uint64_t joining_since;    /* loop ms when we learned it was joining */
	uint64_t lease_until;      /* the quorum lease it gives us (quorum.h) */
	/* This node's own entry only: its up-number before it was started
	 * again (members_file.h), 0 if none. An entry of ours that carries an
	 * up-number at or below it is of that old incarnation. */
	uint32_t old_up_number;
};

/* ---- merging gossip ---- */

enum member_merge_verdict {
	MEMBER_MERGE_KEEP,            /* ours stands */
	MEMBER_MERGE_TAKE,            /* theirs replaces ours, or is added */
	MEMBER_MERGE_NEW_INCARNATION, /* theirs replaces ours: a later incarnation of a downed node */
};

/* What merging one gossiped entry does, beyond the verdict. Every flag is
 * false when the verdict is MEMBER_MERGE_KEEP. */
struct member_merge {
	enum member_merge_verdict verdict;
	/* What this node saw of the member (unreachable, last heard, lease,
	 * when it learned of a down, release) is of an earlier incarnation:
	 * forget it. True for a new incarnation, and for a joining entry that
	 * replaces one that was not joining (a restart listed again). */
	bool forget_seen;
	/* The member starts joining now: the leader waits for acks of
	 * heartbeats sent from now on before admitting it. */
	bool joining_now;
	/* The entry taken is down or removed: note when we learned of it (a
	 * downed member keeps its shards for a while from then, membership.h). */
	bool note_down;
	/* A member new to us and not down: send it a heartbeat at once, so
	 * its quorum lease comes soon. */
	bool greet;
	/* Only with MEMBER_MERGE_KEEP of our own entry: the other member
	 * lists this incarnation of ours joining at a version at or above
	 * ours, though we are a member (we formed the cluster from a lower
	 * version than a seed gave our join). Raise our version above it and
	 * gossip, so that our entry wins everywhere. */
	bool refute;
};

/* Merges the gossiped entry `in` (node, up_number, status, version are
 * read) into ours, `have` (NULL: the node is not listed; the same fields
 * are read). `is_self`: the entry is this node's own, which nobody else
 * may move back from leaving or beyond (only we leave, and only a down
 * from the others overrides it) nor list joining while it is a member
 * (`refute` then says whether to raise our version above theirs), and
 * whose downs of an earlier incarnation
 * do not concern us while we await admission; nor does an entry that
 * lists an earlier incarnation of ours as a member (an up-number at or
 * below have->old_up_number), which a member that has not yet heard of our
 * restart gossips: taking it, a node started again would believe itself
 * admitted under its old identity. Both entries are only read.
 * Cannot fail. */
struct member_merge membership_rules_merge(const struct member_facts *in, const struct member_facts *have,
					   bool is_self);

/* ---- joins ---- */

enum member_join {
	MEMBER_JOIN_TELL_AGAIN, /* already joining, or up and heard: it missed our gossip; send it again */
	MEMBER_JOIN_LIST,       /* list it as joining, a new incarnation, at the version given */
};

/* What a seed does with a join from the node whose entry is `have` (NULL:
 * not listed; status, unreachable and version are read). An up member we
 * cannot hear that asks to join has restarted: it is listed again. For
 * MEMBER_JOIN_LIST, *version gets the joining entry's version: 2 above
 * ours, so above a `removed` (a down's version + 1) that others may hold
 * of the old incarnation, and the joining entry replaces it when merged.
 * Cannot fail. */
enum member_join membership_rules_join(const struct member_facts *have, uint32_t *version);

/* The version of our own entry when we form a cluster, ours being `own`:
 * above any at which another joining node lists us. A node started again
 * says nothing but joins until it is listed (membership_internal.h), so
 * the others list it from its join, at 2 (membership_rules_join: not
 * listed before) or at most own + 2 (from an entry of ours they had), and
 * never hear back. Formed at a lower version, our up entry loses to their
 * joining one when our admissions reach them: each takes its own
 * admission, keeps us joining, and counts itself the oldest member until
 * we refute — a second coordinator for a moment, and replica sets told
 * that the others never take. Cannot fail. */
uint32_t membership_rules_formed_version(uint32_t own);

/* ---- the leader and admission ---- */

/* Whether a is older than b: the lower up-number, then the lower node
 * name. The order of the leader and of the grantors. Pure. */
bool membership_rules_older(const struct member_facts *a, const struct member_facts *b);

/* The index in members of the leader: the oldest voting member (lowest
 * up-number, ties to the lowest node name), or -1 if none of the n votes.
 * Only reads members. */
int membership_rules_leader(const struct member_facts *members, size_t n);

/* The up-number the next member admitted gets: one above every up-number
 * listed and above `top_seen`, the highest this node has seen (also of
 * entries since reset for a rejoin), so up-numbers never repeat. */
uint32_t membership_rules_next_up_number(const struct member_facts *members, size_t n, uint32_t top_seen);

/* The inputs of admission besides the list. */
struct membership_admission {
	size_t self;                 /* index of this node in members */
	uint32_t top_up_number;      /* see membership_rules_next_up_number */
	uint64_t now_ms;             /* the loop's clock: against last_heard */
	uint64_t clock_ms;           /* the clock read now: against lease_until */
	uint32_t failure_timeout_ms;
};

/* Whom this node admits now. Nobody unless members[a->self] is the leader
 * (membership_rules_leader). The leader admits each joining member but
 * itself, in the order they joined, once both:
 *  - the voting members that acked a heartbeat sent at or after its
 *    joining_since (lease_until >= joining_since + failure_timeout_ms, and
 *    clock_ms < the lease) win a split (quorum_until): a member cut off
 *    from the majority admits nobody, or a side of a split could grow
 *    itself a majority and both sides would run entities. A joiner
 *    admitted earlier in the same pass votes already, with the lease it
 *    has given;
 *  - it was heard within failure_timeout_ms of now_ms: a joiner that died
 *    after asking would become a voter nobody hears, and hold up
 *    allocation until it is downed.
 * Admitted members get consecutive up-numbers from
 * membership_rules_next_up_number in the order they joined (joining_since,
 * then the node name): members started one after another are as old as
 * their order, whichever pass admits them. up (n entries,
 * caller-owned) gets each member's new up-number, 0 for those not
 * admitted; scratch (2 n entries, caller-owned) is working space. members
 * is only read. Returns how many were admitted. */
size_t membership_rules_admit(const struct member_facts *members, size_t n, const struct membership_admission *a,
			      struct quorum_member *scratch, uint32_t *up);

/* ---- gossip ---- */

/* Whether a member may answer a gossiped member list with its own
 * (push-pull), which it does when the list, digested as it came
 * (in_digest; 0: unreadable, says nothing), also differs from its own
 * once merged — the sender lacks, or holds older, something it has; the
 * caller compares, after this says yes, since its own digest costs a pass
 * over the list. Yes when the digest says something, the sender compares
 * digests (sender_digests: protocol 2 or later — an older one gets our
 * list every tick anyway), and we did not answer it within the last
 * interval_ms (answered_at_ms, 0: never): two lists that cannot agree
 * cost at most one answer an interval each way, never a storm. A change
 * one member missed then reaches it in one round trip with whoever
 * gossips to it, rather than when its own heartbeat reaches a member that
 * has it. */
bool membership_rules_may_answer_gossip(uint64_t in_digest, bool sender_digests, uint64_t now_ms,
					uint64_t answered_at_ms, uint32_t interval_ms);

/* ---- a downed member's lease ---- */

/* Whether the quorum lease this node gave a member it knows is down has
 * run out. The member draws a lease from each heartbeat we ack: its send
 * time plus failure_timeout_ms (quorum.h). Our last ack went at
 * last_acked_ms (the loop's ms; 0: never), after the heartbeat it answers
 * was sent, so that lease ran out by last_acked_ms + failure_timeout_ms
 * on any clock; margin_ms covers the clocks' drift and the loop's turn.
 * Knowing of the down, we ack no more: once true, it stays true. */
bool membership_rules_lease_lapsed(uint64_t last_acked_ms, uint64_t now_ms, uint32_t failure_timeout_ms,
				   uint32_t margin_ms);

/* Whether members[downed], down, holds no quorum lease any more, so its
 * shards may go elsewhere at once rather than failure_timeout_ms and two
 * heartbeats after we learned of the down: every other member that is not
 * down itself (joining and exiting ones too: whoever acks heartbeats) has
 * said its lease lapsed (lapsed[k]; ours, members[self], is ours to
 * judge). Members down themselves are not waited for: a down is decided
 * by the side that wins keep-majority, so they cannot lend it a quorum.
 * Only reads. */
bool membership_rules_downed_lease_over(const struct member_facts *members, size_t n, size_t downed,
					const bool *lapsed);

#endif
