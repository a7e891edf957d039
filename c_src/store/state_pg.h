/*
 * state_pg.h — entity states in a PostgreSQL database every member
 * reaches, `state_store = postgres` (docs/contract.md, "Entity state"):
 * a state_store (state_store.h) whose records any member that takes a
 * shard reads, so a shard's move carries no states, only waits for the
 * old home's writes to be committed.
 *
 * One table, created if missing (under an advisory lock, so members
 * starting together do not race): shardnode_entity_state (type text, id
 * bytea, shard integer, state bytea, revision bigint, epoch bigint),
 * primary key (type, id); `id` is the canonical id and `state` the state
 * in external term format (binary_to_term/1 reads it), with an index on
 * (type, shard). shardnode_schema holds the schema's version (2).
 *
 * Fencing (state_store.h): shardnode_shard_owner (type, shard, epoch)
 * holds each shard's newest claim, numbered by the sequence
 * shardnode_epoch. A claim is a transaction of its own; a type's loads of
 * a shard wait for its claims. Each write transaction starts with one
 * statement per type that locks (FOR SHARE) the owner rows of the shards
 * it writes at the epochs its writes carry, and each write applies only
 * at its shard's current epoch; the shards the statement does not find
 * are reported fenced before the commit's written().
 *
 * All of it runs on the loop through one pg_conn (pg_conn.h): the writes
 * queued in a loop turn go out as one transaction (group commit: one
 * round trip for them all, at most two transactions out at a time, the next
 * gathering meanwhile); the loads of a turn go out after them, one query
 * for up to 256 ids of a type (`id = ANY($2)`: a shard whose remembered
 * entities start loads them in a few round trips). Nothing is sent
 * before the schema is in place. While the database is away, writes and
 * loads wait; the connection comes back by itself.
 */
#ifndef SN_STATE_PG_H
#define SN_STATE_PG_H

#include "base/evloop.h"
#include "base/log.h"
#include "store/state_store.h"

struct state_pg;

/* Opens a store on the database `conninfo` (a libpq connection string),
 * connecting in the background. `log` must outlive it. Returns it, or NULL
 * with *err: -EINVAL (a conninfo libpq cannot parse, logged) or -ENOMEM. */
struct state_pg *state_pg_open(const char *conninfo, struct evloop *loop, const struct logger *log, int *err);

/* The store as a state_store, for the regions. Freeing it (state_store_free)
 * closes the connection: writes not yet committed are dropped — no reply
 * was sent for any of them. Its scans answer -EOPNOTSUPP (a shared store
 * moves no states); its writes of a shard not claimed (or fenced since)
 * answer -ESTALE. */
struct state_store *state_pg_store(struct state_pg *s);

/* Gives the connection up when the server answers nothing for `ms` while
 * statements are out (pg_conn_set_answer_timeout): the node passes its
 * store_timeout_ms, after which the replies waiting have been answered
 * anyway, so a frozen or cut-off primary does not hold the node past its
 * promoted standby. 0: never. */
void state_pg_set_answer_timeout(struct state_pg *s, uint32_t ms);

#endif
