/*
 * replica_msg.h — the messages of replicated state (state_replicas;
 * docs/architecture.md, "Replicated state"; docs/protocol.md). Erlang
 * terms tagged '$shardnode', like shard_msg.h's, between the coordinator,
 * a shard's home region and its replica regions:
 *
 *   {'$shardnode', replica_set, Shard, Epoch, HomePid, [{ReplicaPid, Complete}]}
 *       coordinator -> every region: the shard's set as of Epoch (Complete:
 *       the replica holds every record and counts for acknowledgements)
 *   {'$shardnode', replicate, HomePid, [{Shard, Epoch, Seq, Id, {State} | deleted}]}
 *       home -> replica: writes of the shards it homes and the replica
 *       keeps, numbered by the home's store, in order, a turn's in one
 *   {'$shardnode', replicated, Seq, ReplicaPid}
 *       replica -> home: every write the home sent it up to Seq is
 *       committed here (or was not for it to keep: refused, or of a shard
 *       whose newest set does not count it)
 *   {'$shardnode', replica_fill, Shard, Epoch, Chunk, Last, HomePid, [{Id, State}]}
 *       home -> a replica being filled: chunk 0 (no records) starts the
 *       fill (the replica forgets what it held of the shard), the next
 *       ones carry the shard's records; Last on the final one
 *   {'$shardnode', replica_fill_ack, Shard, Chunk, ReplicaPid}
 *       replica -> home: chunk Chunk is committed here
 *   {'$shardnode', replica_refused, Shard, Epoch, ReplicaPid}
 *       replica -> a home of an older epoch than its own: not applied
 *   {'$shardnode', replica_filled, Shard, ReplicaPid}
 *       home -> coordinator: the replica holds every record now
 *   {'$shardnode', replicas_held, RegionPid, [{Shard, Epoch, home | complete | filling | none}
 *                                           | {Shard, Epoch, filling | none, SetHomeNode}]}
 *       region -> coordinator, after registering: the copies it keeps,
 *       and the newest epoch it heard of each shard it keeps none of.
 *       The four-element form (to a coordinator of protocol 2 or later,
 *       member_protocol.h) names the node of the home of the set at Epoch,
 *       as this region heard it: a coordinator whose report from that
 *       home is older than Epoch knows the set was never taken
 *       (replica_sets.h, set_home)
 *
 * States travel as terms without their version byte; ids as the
 * canonical id term.
 */
#ifndef SN_REPLICA_MSG_H
#define SN_REPLICA_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ei.h>

enum replica_msg_kind {
	RMSG_SET,
	RMSG_REPLICATE,
	RMSG_REPLICATED,
	RMSG_FILL,
	RMSG_FILL_ACK,
	RMSG_REFUSED,
	RMSG_FILLED,
	RMSG_HELD,
};

/* A decoded message; pointers point into the term decoded. */
struct replica_msg {
	enum replica_msg_kind kind;
	uint32_t shard;  /* all but replicate, replicated, held */
	uint64_t epoch;  /* set, fill, refused */
	uint64_t seq;    /* replicated: the write; fill, fill_ack: the chunk */
	bool last;       /* fill */
	erlang_pid pid;  /* the sender's region (the coordinator's set: the home) */
	const char *list; /* set, replicate, fill, held: the raw list, checked */
	size_t list_len;
};

/* Decodes a validated term (no version byte). Returns 1 with *out for one
 * of these messages (its list checked, so the walks below cannot fail on
 * its shape), 0 if the term is none of them, -EPROTO if it is one but
 * malformed. */
int replica_msg_decode(const char *term, size_t len, struct replica_msg *out);

/* The walks over a decoded message's list, in order. Each callback returns
 * 0 to go on or a negative errno, which ends the walk and is returned. */
typedef int (*replica_member_fn)(void *arg, const erlang_pid *replica, bool complete);
int replica_msg_each_member(const struct replica_msg *m, replica_member_fn fn, void *arg);
/* A write: `id` canonical; state (no version byte) NULL for a deletion. */
typedef int (*replica_write_fn)(void *arg, uint32_t shard, uint64_t epoch, uint64_t seq, const char *id,
				size_t id_len, const char *state, size_t state_len);
int replica_msg_each_write(const struct replica_msg *m, replica_write_fn fn, void *arg);
enum replica_role_held { REPLICA_HELD_HOME, REPLICA_HELD_COMPLETE, REPLICA_HELD_FILLING, REPLICA_HELD_NONE };
/* `set_home`: the node named home of the set at `epoch` (filling or none
 * only), NULL when the entry names none; valid during the call. */
typedef int (*replica_held_fn)(void *arg, uint32_t shard, uint64_t epoch, enum replica_role_held role,
			       const char *set_home);
int replica_msg_each_held(const struct replica_msg *m, replica_held_fn fn, void *arg);

/* Encoders: each writes the version byte and the message into x (a fresh
 * ei_x_buff). Return 0 or -ENOMEM. */
int replica_msg_encode_set(ei_x_buff *x, uint32_t shard, uint64_t epoch, const erlang_pid *home,
			   const erlang_pid *const *replicas, const bool *complete, size_t n);
/* A replicate message being built in `x`, its writes counted: begin, add
 * one or more, end, each given the same buffer (a fresh ei_x_buff the
 * caller owns). The builder keeps no pointer to it, so its owner may move
 * it between the calls: a region's streams, each with its batch, live in
 * an array that grows when a new region is heard of — a builder that kept
 * the address of the batch wrote its end into the freed copy, and the
 * message went out one byte short, dropped as malformed. */
struct replica_writes {
	int list_at; /* where the list's header is patched in at the end */
	uint32_t n;
};
int replica_msg_writes_begin(struct replica_writes *w, ei_x_buff *x, const erlang_pid *home);
/* One write of `shard` under its set's `epoch`: `state` with its version
 * byte (state_len >= 1), NULL for a deletion. */
int replica_msg_writes_add(struct replica_writes *w, ei_x_buff *x, uint32_t shard, uint64_t epoch, uint64_t seq,
			   const char *id, size_t id_len, const char *state, size_t state_len);
int replica_msg_writes_end(struct replica_writes *w, ei_x_buff *x);
/* replica_fill_ack (value: the chunk), replica_refused (value: the
 * epoch). */
int replica_msg_encode_reply(ei_x_buff *x, enum replica_msg_kind kind, uint32_t shard, uint64_t value,
			     const erlang_pid *from);
/* `records`: an encoded [{Id, State}] (no version byte), copied in. */
int replica_msg_encode_fill(ei_x_buff *x, uint32_t shard, uint64_t epoch, uint32_t chunk, bool last,
			    const erlang_pid *home, const char *records, size_t records_len);
int replica_msg_encode_filled(ei_x_buff *x, uint32_t shard, const erlang_pid *replica);
int replica_msg_encode_replicated(ei_x_buff *x, uint64_t seq, const erlang_pid *replica);
/* replicas_held: n entries of shards[], epochs[], roles[]; set_homes
 * (NULL: none named) gives each filling or none entry its set's home node
 * (NULL entries: not named), ignored for the other roles. */
int replica_msg_encode_held(ei_x_buff *x, const erlang_pid *region, const uint32_t *shards, const uint64_t *epochs,
			    const enum replica_role_held *roles, const char *const *set_homes, size_t n);

#endif
