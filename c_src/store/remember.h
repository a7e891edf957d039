/*
 * remember.h — the remembered entities of one entity type: for each shard,
 * the canonical ids of the entities that were started and not stopped for
 * good, kept in memory and, when a directory is given, in an append-only
 * log file there, so they survive a restart of the node.
 *
 * Every region of the type keeps the sets of all shards (the home of a
 * shard sends its changes to the others), so whichever region a shard
 * lands on — after a rebalance, a leave or a crash — can start its
 * entities again.
 *
 * The log, `<dir>/<type>.entities`, is a sequence of records:
 *   op (1 byte: '+' add, '-' remove), shard (4 bytes, big-endian),
 *   id length (4 bytes, big-endian), id bytes
 * after an 8-byte header "SNREMEM1". Opening reads it (a truncated last
 * record, as a crash mid-write leaves, is dropped with a warning; each id is
 * placed in the shard phash2 gives it now, whatever shard was recorded, so
 * a changed number_of_shards moves it where its messages go) and rewrites
 * it compacted. Writes are buffered and reach the kernel at
 * remember_flush and are not fsync'ed; a compaction is (the new file, then
 * its directory), before and after it replaces the log.
 */
#ifndef SN_REMEMBER_H
#define SN_REMEMBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"

struct remember;

/* Opens the store of `type` with `nshards` shards. dir NULL: memory only.
 * The directory and its parents are created if missing. Returns the store, or
 * NULL with *err: -ENOMEM, -EWOULDBLOCK (another process has this log open),
 * or -errno of a file operation (the message is logged). An unreadable record ends the load with a warning; what came
 * before it is kept. */
struct remember *remember_open(const char *dir, const char *type, uint32_t nshards, const struct logger *log,
			       int *err);

/* Flushes and closes the log (a write error is logged), releases the
 * lock, frees everything. NULL is fine. */
void remember_free(struct remember *r);

/* Adds `id` (canonical entity id bytes, entity_id.h) to the set of
 * `shard`. Returns 1 if it was not there, 0 if it was, -ENOMEM, or -EINVAL
 * (shard out of range, or not phash2(id, nshards): a peer configured with
 * another number_of_shards). A write error of the log is logged once and
 * the store carries on in memory. */
int remember_add(struct remember *r, uint32_t shard, const char *id, size_t len);

/* Removes `id` from the set of `shard`. Returns 1 if it was there, 0 if
 * not, or -EINVAL (shard out of range). */
int remember_remove(struct remember *r, uint32_t shard, const char *id, size_t len);

/* True if `id` is in the set of `shard`. */
bool remember_contains(const struct remember *r, uint32_t shard, const char *id, size_t len);

/* Calls fn for each id of `shard`, in no particular order. fn must not
 * change the store. */
void remember_each(const struct remember *r, uint32_t shard,
		   void (*fn)(void *arg, const char *id, size_t len), void *arg);

/* How many ids `shard` has (0 for a shard out of range). */
size_t remember_count(const struct remember *r, uint32_t shard);

/* Hands buffered log writes to the kernel, and compacts the log when it
 * has grown to several times what the sets need. A write error is logged
 * once; from then on the store carries on in memory only (the file keeps
 * what was written before). */
void remember_flush(struct remember *r);

#endif
