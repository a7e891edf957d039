/*
 * replica_sets.h — which members keep copies of each shard of a type, and
 * what happens to those copies when a member is lost (docs/architecture.md,
 * "Replicated state"): the coordinator's choice, for state_replicas = R, of
 * R replica regions per shard besides its home, spread evenly and never two
 * on one member; the promotion of a replica that holds every record when
 * the home is lost; and the shards that must wait because no copy that
 * holds everything is left. Pure: no I/O, no clock, no sends. The
 * coordinator keeps one struct replica_set per shard, asks, and sends what
 * changed.
 *
 * Epochs: every change of a set (a replica added, one that becomes
 * complete, a home promoted, a member removed) takes the next value of the
 * caller's counter, so epochs only grow, across shards too; a new
 * coordinator starts its counter above every epoch the regions report, and
 * the highest epoch wins. A replica refuses writes of an older epoch than
 * its own.
 *
 * Ties go to the lowest region index, shards are taken lowest number
 * first, so every coordinator chooses the same on the same state.
 */
#ifndef SN_REPLICA_SETS_H
#define SN_REPLICA_SETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most replicas a shard may have (state_replicas at most). */
#define REPLICA_SETS_MAX 3

/* One shard's copies. Regions are indexes into the coordinator's regions;
 * -1 is none. Replicas fill replica[0..nreplicas). */
struct replica_set {
	int32_t home;
	int32_t replica[REPLICA_SETS_MAX];
	/* The replica holds every record of the shard: it counts for the
	 * acknowledgement of a write and may be promoted. One that does not is
	 * being filled (its records stream to it, as a move's states do). */
	bool complete[REPLICA_SETS_MAX];
	uint8_t nreplicas;
	/* The home was lost and no complete replica was left: the shard is
	 * served by nobody and started empty by nobody until a member of its
	 * last set (`home`, kept) returns. */
	bool waiting;
	/* Waiting: a copy reported from this epoch on holds every
	 * acknowledged record (replica_sets_copy_returned). */
	uint64_t wait_epoch;
	uint64_t epoch; /* 0: never set */
};

/* Empty: no home, no replicas, epoch 0. */
void replica_set_init(struct replica_set *s);

/* The regions, borrowed: every index below nregions. */
struct replica_sets_view {
	size_t nregions;
	const bool *takes; /* per region: may hold copies (an owner, neither draining nor downed) */
};

/* One replica added by replica_sets_fill: its records must be streamed to
 * it before replica_sets_completed counts it. */
struct replica_add {
	uint32_t shard;
	int32_t region;
	uint64_t epoch;
};

/* Gives every shard that has a home (and is not waiting) up to `want`
 * replicas (at most REPLICA_SETS_MAX), as many as there are regions that
 * take copies besides its home: each missing one goes to the region with
 * the fewest copies (homes and replicas counted, the ones chosen here
 * included), never the home's and never one the set has. `sets` has
 * nshards entries; out (caller-owned) has room for nshards * want adds;
 * *nout gets how many were chosen; each takes ++*next_epoch. Returns 0, or
 * -EINVAL (want above REPLICA_SETS_MAX) or -ENOMEM, with *nout 0 and
 * nothing changed. */
int replica_sets_fill(struct replica_set *sets, uint32_t nshards, const struct replica_sets_view *v, uint32_t want,
		      uint64_t *next_epoch, struct replica_add *out, size_t *nout);

/* The streaming to `region`, a replica of `s` being filled, is done: it
 * counts from now on, under a new epoch (++*next_epoch), which is
 * returned. 0: it is no replica of s being filled (removed meanwhile, or
 * complete already): nothing changed. */
uint64_t replica_sets_completed(struct replica_set *s, int32_t region, uint64_t *next_epoch);

/* What losing a region did to one shard. */
enum replica_loss {
	REPLICA_LOSS_REPLICA,  /* it was a replica: removed (fill adds another) */
	REPLICA_LOSS_PROMOTED, /* it was the home: a complete replica is home now */
	REPLICA_LOSS_WAITING,  /* it was the home and no complete replica is left */
};

struct replica_change {
	uint32_t shard;
	enum replica_loss what;
	int32_t home; /* the shard's home after the change (the lost one while waiting) */
	uint64_t epoch;
};

/* `region` is gone (downed, or stopped without handing its shards off):
 * in every set it is in, a replica is removed; a home is replaced by the
 * complete replica whose region homes the fewest shards (ties: lowest
 * index), or, without one, the shard waits for it (never started empty:
 * its filling replicas hold too little, and are removed). A waiting
 * shard's lost home stays recorded. Each changed set takes ++*next_epoch.
 * out (caller-owned) has room for nshards changes; *nout gets how many, by
 * shard. Returns 0, or -ENOMEM with *nout 0 and nothing changed. */
int replica_sets_region_lost(struct replica_set *sets, uint32_t nshards, int32_t region, uint64_t *next_epoch,
			     struct replica_change *out, size_t *nout);

/* What a region reports of one shard it keeps a copy of (after a
 * coordinator fail-over, or a restart on its data_dir): its role and the
 * epoch it last had, and whether its copy holds every record. */
struct replica_report {
	uint32_t shard;
	int32_t region;
	bool home;
	bool complete; /* always true of a home */
	/* The region keeps no copy: the newest set it heard of (`epoch`)
	 * does not name it. It tells how new the shard's last set is. */
	bool none;
	uint64_t epoch;
	/* A filling or absent copy's word on the home of the set at `epoch`:
	 * that home's region, if it reported too (-1: not named, or no report
	 * from it). A home that reported an older epoch of the shard (or none)
	 * never took that set — a coordinator active for a moment told it to
	 * only some regions — so no write was made under it, and the report
	 * does not make the shard wait for it. */
	int32_t set_home;
};

/* A new coordinator's sets from the reports (any order; a shard below
 * nshards, a region >= 0), leaving out those of a set its home never took
 * (set_home above): for each shard, the reports of the highest
 * epoch make its set — their home, and their replicas (at most
 * REPLICA_SETS_MAX, lowest regions first; `none` reports count for the
 * epoch only) — and reports of older epochs are left out (their copies
 * may miss writes). Without a home at that epoch, its complete replica in
 * the lowest region is promoted under a new epoch; without one, the shard
 * waits (never started empty) for a copy of that epoch. A shard no region
 * reported is left as it was. *next_epoch ends above every epoch reported
 * and given. Returns how many shards were rebuilt. */
size_t replica_sets_rebuild(struct replica_set *sets, uint32_t nshards, const struct replica_report *reports,
			    size_t nreports, uint64_t *next_epoch);

/* Region `home` is the set's home now (allocated, moved to, hosting it),
 * under a new epoch (++*next_epoch); if it was a replica it is one no
 * more (its copy is the home's). The shard waits no more. */
void replica_set_make_home(struct replica_set *s, int32_t home, uint64_t *next_epoch);

/* Whether `region` is a complete replica of the set. */
bool replica_set_complete_at(const struct replica_set *s, int32_t region);

/* A region that registered after the sets were built reports a copy of a
 * shard: if the shard waits and the copy is its home's or a complete
 * replica's of epoch s->wait_epoch or newer, that region becomes its home
 * under a new epoch (++*next_epoch) and true is returned. */
bool replica_sets_copy_returned(struct replica_set *s, int32_t region, const struct replica_report *report,
				uint64_t *next_epoch);

/* The coordinator removed region `gone` from its list, and the regions
 * after it moved down one index: the sets follow. `gone` itself must be in
 * no set any more (replica_sets_region_lost first), except as a waiting
 * shard's last home, which then becomes -1: the shard still waits, never
 * started empty, for a member that reports a copy of its last epoch (the
 * reports that rebuild sets are the next step, docs/architecture.md). */
void replica_sets_renumber(struct replica_set *sets, uint32_t nshards, int32_t gone);

#endif
