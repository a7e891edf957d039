/*
 * reachability.h — the cluster-wide view of who cannot hear whom, as Akka
 * gossips it: one record per observer, the members it finds unreachable,
 * under a version only that observer raises. Pure data and its wire form,
 * no I/O: membership_health.c fills it from its own failure detector and
 * from the members' `reachability` messages, and downing.h decides on it.
 *
 *   {'$shardnode', reachability, From, [{Observer, Version, [Subject]}]}
 *
 * A member sends its whole table to every other member when its own
 * record changes; each heartbeat interval, to a member of protocol 2 or
 * later, only the table's digest (in the heartbeat, membership_health.c),
 * and the whole table to a member whose digest differs — so an
 * observation still travels around a cut link within a tick or two, and
 * a quiet cluster does not send N records to N members each tick. A
 * member of v0.1.0 gets the whole table each interval, as before. Merging
 * keeps, per observer, the record with the higher version. An observer
 * versions its record with the wall clock in milliseconds (or its last
 * version plus one, if that is higher), so a node that restarts still
 * outranks what the cluster holds of its earlier incarnation.
 */
#ifndef SN_REACHABILITY_H
#define SN_REACHABILITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ei.h>

#define REACH_NAME_MAX 256

struct reach_record {
	char observer[REACH_NAME_MAX];
	uint64_t version;
	char (*subjects)[REACH_NAME_MAX]; /* owned */
	size_t nsubjects;
};

/* How often a member was named lately: once each time a record newly
 * listed it as subject, or newly listed a subject under it as observer. */
struct reach_named {
	char node[REACH_NAME_MAX];
	uint32_t times;
};

/* Zero-initialised is empty and valid. */
struct reachability {
	struct reach_record *records; /* owned */
	size_t n, cap;
	/* The view's recent history (reachability_times_named): a record
	 * shows only now, and a lossy member's records come and go with many
	 * members while a cut link's stay with one. Owned. */
	struct reach_named *named;
	size_t nnamed, named_cap;
	/* reachability_digest's answer, kept until a record changes; 0: none
	 * kept. Each member took it each tick, encoding every record. */
	uint64_t digest;
};

/* Frees every record; the table is empty and reusable afterwards. */
void reachability_free(struct reachability *r);

/* Takes `observer`'s record (subjects copied) if `version` is higher than
 * the one held, or if none is held, and counts each subject it newly
 * lists, and its observer, as named (reachability_times_named; without
 * memory for a new name the count is skipped: it is a hint). Returns 1 if the set of subjects
 * changed, 0 if not (an older or equal version, or the same set under a
 * newer version, which is kept), -ENOMEM (the table is as it was) or
 * -EINVAL (a name of REACH_NAME_MAX bytes or more). */
int reachability_update(struct reachability *r, const char *observer, uint64_t version,
			const char *const *subjects, size_t n);

/* How often `node` was named in a new record since the counts were last
 * halved, plus half of what it had then, and so on; 0 for a name never
 * named. A member that is observer or subject of records that appear and
 * clear with several members (a lossy one) gathers more than either end
 * of a lasting cut link. Only reads r. */
uint32_t reachability_times_named(const struct reachability *r, const char *node);

/* Halves every count and forgets the names it brings to 0, so that the
 * history fades: call it once per half-life. */
void reachability_halve_named(struct reachability *r);

/* The record of `observer`, or NULL. Valid until the table changes. */
const struct reach_record *reachability_find(const struct reachability *r, const char *observer);

/* True if `observer`'s record lists `subject`. */
bool reachability_has(const struct reachability *r, const char *observer, const char *subject);

/* True if `observer` has a record and it lists exactly `subjects` (n
 * distinct names, in any order): reachability_update would then only
 * raise its version. Only reads r. */
bool reachability_lists_exactly(const struct reachability *r, const char *observer, const char *const *subjects,
				size_t n);

/* The version an observer gives its record when its set changes: the wall
 * clock in ms, or last + 1 when the clock is not ahead of last. */
uint64_t reachability_next_version(uint64_t last, uint64_t wall_clock_ms);

/* Encodes [{Observer, Version, [Subject]}] into x. Returns 0 or -ENOMEM. */
int reachability_encode(const struct reachability *r, ei_x_buff *x);

/* The same with `observer`'s record alone ([] if it has none): what
 * changed when an observer changed its own record, which a receiver
 * merges as it merges a whole table. Returns 0 or -ENOMEM. */
int reachability_encode_one(const struct reachability *r, const char *observer, ei_x_buff *x);

/* A digest of the table, the same for the same records in any order:
 * 0 for an empty table or without memory (the tables may then differ),
 * never 0 otherwise. Changes nothing but the digest r keeps. */
uint64_t reachability_digest(struct reachability *r);

/* Merges an encoded [{Observer, Version, [Subject]}] from t at *i (a
 * validated term) into r, as reachability_update does each record, and
 * moves *i past it. Returns how many records changed r, or -EPROTO (a
 * malformed list: the records before the bad one are merged) or -ENOMEM. */
int reachability_merge_encoded(struct reachability *r, const char *t, size_t *i);

#endif
