/*
 * coordinator_replicas.h — the coordinator's replica sets (state_replicas;
 * docs/architecture.md, "Replicated state"): one per shard, kept in step
 * with the shard's home, told to every region (replica_msg.h, replica_set)
 * before the home is, filled up to state_replicas on the regions that take
 * copies, and rebuilt by a coordinator that takes over from what the
 * regions report (replicas_held). The choices are replica_sets.h's; this
 * keeps them and says them. Called by coordinator.c only.
 *
 * Regions are the coordinator's indexes; coordinator.c passes a view of
 * them with each call.
 */
#ifndef SN_COORDINATOR_REPLICAS_H
#define SN_COORDINATOR_REPLICAS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ei.h>

#include "base/log.h"
#include "distribution/dist_node.h"
#include "replication/replica_msg.h"
#include "replication/replica_sets.h"

/* The coordinator's regions as the sets need them. Borrowed per call. */
struct coordinator_view {
	struct dist_node *node;
	const struct logger *log;
	const char *type_name;
	const erlang_pid *self;  /* the coordinator: the sets' sender */
	const char *region_name; /* the regions' registered name */
	size_t nregions;
	const erlang_pid *(*region_pid)(void *arg, size_t k);
	bool (*takes)(void *arg, size_t k); /* region k may be given copies */
	bool (*reported)(void *arg, size_t k); /* region k sent its replicas_held */
	void *arg;
};

struct coordinator_replicas {
	uint32_t want;            /* state_replicas; 0: none kept */
	uint32_t nshards;
	struct replica_set *sets; /* nshards of them (owned) */
	bool *dirty;              /* per shard: changed since last told */
	uint64_t next_epoch;      /* the last epoch given; only grows */
	/* Until every region has reported, the sets are not known: what the
	 * regions report is collected, and nothing is told. */
	bool ready;
	struct replica_report *reports;
	size_t nreports, cap;
	/* What the tick says (coordinator_replicas.c, say_shortages): how
	 * many ticks in a row shards have been short of replicas, or waiting
	 * for a member of their last set, and whether that was said. */
	uint32_t short_ticks, waiting_ticks;
	bool said_short, said_waiting, said_few_members;
};

/* want 0: nothing kept, every call below does nothing. Returns 0 or
 * -ENOMEM. */
int coordinator_replicas_init(struct coordinator_replicas *cr, uint32_t nshards, uint32_t want);
void coordinator_replicas_free(struct coordinator_replicas *cr);

/* Whether sets are kept at all. */
static inline bool coordinator_replicas_on(const struct coordinator_replicas *cr) { return cr->want > 0; }

/* The coordinator became active or stopped being: every set and report
 * is forgotten (the epochs keep growing). */
void coordinator_replicas_reset(struct coordinator_replicas *cr);

/* Region k reported the copies it keeps (a replicas_held list). Before
 * the sets are known, kept for the rebuild. After, a copy of a shard that
 * waits for one like it makes k the shard's home (home[] updated; listed in
 * promoted[], room for nshards, *npromoted of them), told. */
void coordinator_replicas_on_report(struct coordinator_replicas *cr, const struct coordinator_view *v, int32_t k,
				    const struct replica_msg *m, int32_t *home, uint32_t *promoted, size_t *npromoted);

/* Every region has reported: the sets are rebuilt from the reports and
 * reconciled with `home` (per shard, the region hosting it, from the
 * regions' hosting reports: that region is the home). A shard no region
 * hosts whose set promotes a complete replica gets it as its home
 * (home[] updated; its index in promoted[], *npromoted of them; room for
 * nshards); one with no complete copy waits. Then filled and told. Once. */
void coordinator_replicas_rebuild(struct coordinator_replicas *cr, const struct coordinator_view *v, int32_t *home,
				  uint32_t *promoted, size_t *npromoted);

/* The shard's home is now region `home` (allocated, moved, reported):
 * its set follows (the home leaves its replicas if it was one), takes a
 * new epoch, is filled and told. Nothing before ready. */
void coordinator_replicas_home_set(struct coordinator_replicas *cr, const struct coordinator_view *v, uint32_t shard,
				   int32_t home);

/* Region k is about to be removed (its indexes above shift down after):
 * every set loses it; a shard it homed gets a complete replica as home
 * (home[s] set; listed in promoted[], room for nshards) or waits (home[s]
 * -1). Nothing is told yet: coordinator_replicas_region_removed after
 * the shift does. */
void coordinator_replicas_region_lost(struct coordinator_replicas *cr, int32_t k, int32_t *home, uint32_t *promoted,
				      size_t *npromoted);

/* Region k was removed and the ones above it moved down: the sets follow,
 * are filled and told. */
void coordinator_replicas_region_removed(struct coordinator_replicas *cr, const struct coordinator_view *v, int32_t k);

/* Whether the shard waits for a member of its last set: it must not be
 * allocated afresh. */
bool coordinator_replicas_waiting(const struct coordinator_replicas *cr, uint32_t shard);

/* replica_filled from the shard's home: region k holds every record. */
void coordinator_replicas_on_filled(struct coordinator_replicas *cr, const struct coordinator_view *v, uint32_t shard,
				    int32_t k);

/* The rebalance tick: replicas still missing (regions joined, or none
 * could take them before) are added, and the changed sets told; the count
 * of shards short of replicas is logged if it changed since last said. */
void coordinator_replicas_tick(struct coordinator_replicas *cr, const struct coordinator_view *v);

/* A planned move of `shard` to region `to`: the shard to move instead —
 * one with the same home, not moving, of which `to` is a complete replica
 * (its records are there already) — or `shard` itself when `to` is one of
 * its complete replicas, or no such shard exists. */
uint32_t coordinator_replicas_prefer(const struct coordinator_replicas *cr, uint32_t shard, int32_t to,
				     const int32_t *home, const int32_t *moving_to);

/* For the metrics: *missing, the replicas the shards that have a home
 * lack (state_replicas less their complete ones: being filled, or fewer
 * regions than copies wanted); *waiting, the shards that wait for a member
 * of their last set. Both 0 before the sets are known. */
void coordinator_replicas_count(const struct coordinator_replicas *cr, uint32_t *missing, uint32_t *waiting);

#endif
