/*
 * shard_msg.h — the messages between regions and coordinators
 * (docs/protocol.md). They are Erlang terms tagged '$shardnode', sent with
 * the ordinary distribution, so the same code serves one node and many, and
 * an Erlang shell can read them in a trace:
 *
 *   {'$shardnode', register, RegionPid}              region -> coordinator
 *   {'$shardnode', hosting, RegionPid, [ShardId]}    region -> coordinator, right
 *                                                    after register: what it hosts
 *   {'$shardnode', hosting, RegionPid, [ShardId], [Epoch]}
 *                                                    the same with the epoch of each
 *                                                    claim (protocol 2; to a
 *                                                    coordinator that speaks it)
 *   {'$shardnode', register_proxy, RegionPid}        proxy-only region -> coordinator:
 *                                                    it routes but never hosts
 *   {'$shardnode', registered, CoordinatorPid}       coordinator -> region
 *   {'$shardnode', register_again, CoordinatorPid}   active coordinator -> a region
 *                                                    it does not know that asked it
 *                                                    for a home: register and report
 *   {'$shardnode', get_shard_home, ShardId, RegionPid} region -> coordinator
 *   {'$shardnode', shard_home, ShardId, HomeRegionPid} coordinator -> regions
 *   {'$shardnode', shard_home, ShardId, HomeRegionPid, Epoch}
 *                                                    coordinator -> the home itself,
 *                                                    if its hosting report had epochs:
 *                                                    the claim's epoch (coordinator.h)
 *   {'$shardnode', shard_waits, ShardId, CoordinatorPid} coordinator -> a region
 *                                                    that asked: no member of the
 *                                                    shard's last replica set with
 *                                                    a copy is here; it waits
 *   {'$shardnode', region_leaving, RegionPid}        region -> coordinator: hand my
 *                                                    shards off (graceful_shutdown, or
 *                                                    the host of its type is down)
 *   {'$shardnode', region_back, RegionPid}           region -> coordinator: the host
 *                                                    is back, I take shards again
 *   {'$shardnode', region_stopped, RegionPid}        region -> coordinator
 *   {'$shardnode', begin_handoff, ShardId, FromRegionPid} coordinator -> every
 *                                                    region but the shard's home
 *   {'$shardnode', handoff_ack, ShardId, RegionPid}  region -> the shard's home
 *   {'$shardnode', handoff, ShardId, AcksToWaitFor, ToRegionPid}
 *                                                    coordinator -> the home: the
 *                                                    shard goes to ToRegionPid
 *   {'$shardnode', shard_state, ShardId, Seq, Last, FromRegionPid, [{Id, State}]}
 *                                                    the old home -> the new home:
 *                                                    chunk Seq (0, 1, ...) of the
 *                                                    shard's entity states; Last is
 *                                                    true on the final one
 *   {'$shardnode', shard_state_ack, ShardId, Seq, RegionPid}
 *                                                    the new home -> the old home:
 *                                                    chunk Seq is restored
 *   {'$shardnode', shard_stopped, ShardId, RegionPid} the home -> coordinator
 *   {'$shardnode', get_stats, RequestId, RegionPid}  region -> region of another member
 *   {'$shardnode', stats, RequestId, Node, #{ShardId => EntityCount}}  the answer
 *   {'$shardnode', tell, SenderPid | undefined, EntityId, Msg}
 *                                                    region -> home region
 *
 * A call for an entity whose shard lives elsewhere is forwarded as the
 * original '$gen_call', so the home region answers the caller directly.
 */
#ifndef SN_SHARD_MSG_H
#define SN_SHARD_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ei.h>

enum shard_msg_kind {
	SMSG_REGISTER,
	SMSG_REGISTERED,
	SMSG_GET_SHARD_HOME,
	SMSG_SHARD_HOME,
	SMSG_REGION_STOPPED,
	SMSG_TELL,
	SMSG_HOSTING,
	SMSG_BEGIN_HANDOFF,
	SMSG_HANDOFF_ACK,
	SMSG_HANDOFF,
	SMSG_SHARD_STOPPED,
	SMSG_REGISTER_PROXY,
	SMSG_GET_STATS,
	SMSG_STATS,
	SMSG_REGION_LEAVING,
	SMSG_REGISTER_AGAIN,
	SMSG_SHARD_STATE,
	SMSG_SHARD_STATE_ACK,
	SMSG_REGION_BACK,
	SMSG_SHARD_WAITS,
};

struct shard_msg {
	enum shard_msg_kind kind;
	erlang_pid pid;     /* the pid element (register, registered, get_shard_home,
			     * shard_home, region_stopped, tell's sender, handoff's
			     * destination, shard_state's sender) */
	bool has_pid;       /* false for a tell without sender */
	uint32_t shard;     /* get_shard_home, shard_home */
	const char *id;     /* tell: raw EntityId and Msg, inside the decoded term;
			     * stats: raw Node atom and #{ShardId => Count} map */
	size_t id_len;
	const char *msg;    /* tell: Msg; stats: the map; shard_state: the chunk */
	size_t msg_len;
	const char *shards; /* hosting: the raw [ShardId] list, inside the term
			     * (shard_msg_hosting_read reads it) */
	const char *epochs; /* hosting: the raw [Epoch] list, as long as shards'
			     * (count), inside the term; NULL without one */
	uint64_t epoch;     /* shard_home: the claim's epoch, if has_epoch */
	bool has_epoch;
	uint32_t count;     /* handoff: acks to wait for; shard_state and
			     * shard_state_ack: the chunk's sequence number;
			     * hosting: how many shards */
	bool last;          /* shard_state: the final chunk */
};

/* Decodes a validated term (no version byte). Returns 1 and fills *out for a
 * '$shardnode' message, 0 if the term is not one, -EPROTO if it is tagged
 * '$shardnode' but malformed. */
int shard_msg_decode(const char *term, size_t len, struct shard_msg *out);

/* A decoded hosting message's shards and epochs (0 each without an epoch
 * list), `sm->count` of each, into the caller's arrays. */
void shard_msg_hosting_read(const struct shard_msg *sm, uint64_t *shards, uint64_t *epochs);

/* Encoders: each writes the version byte and the message into x (a fresh
 * ei_x_buff from ei_x_new). Return 0 or -ENOMEM. */
int shard_msg_encode_pid(ei_x_buff *x, enum shard_msg_kind kind, const erlang_pid *pid);
int shard_msg_encode_shard(ei_x_buff *x, enum shard_msg_kind kind, uint32_t shard, const erlang_pid *pid);
/* {'$shardnode', stats, RequestId, Node, Map}: `map` is an encoded map (no
 * version byte). */
int shard_msg_encode_stats(ei_x_buff *x, uint32_t request, const char *node, const char *map, size_t map_len);
int shard_msg_encode_handoff(ei_x_buff *x, uint32_t shard, uint32_t acks, const erlang_pid *to);
/* shard_state: `chunk` is an encoded [{Id, State}] (no version byte,
 * shard_state_export's output), copied in. */
int shard_msg_encode_state_chunk(ei_x_buff *x, uint32_t shard, uint32_t seq, bool last, const erlang_pid *from,
				 const char *chunk, size_t chunk_len);
int shard_msg_encode_state_ack(ei_x_buff *x, uint32_t shard, uint32_t seq, const erlang_pid *region);
/* hosting: with `epochs` (epochs[k] is shards[k]'s), the five-element form,
 * only to a coordinator on a member of protocol 2 or later
 * (member_protocol.h); NULL: the four-element form every release reads. */
int shard_msg_encode_hosting(ei_x_buff *x, const erlang_pid *region, const uint32_t *shards, const uint64_t *epochs,
			     size_t n);
/* shard_home with the claim's epoch: only to a region whose hosting
 * report had epochs. */
int shard_msg_encode_home_epoch(ei_x_buff *x, uint32_t shard, const erlang_pid *home, uint64_t epoch);
int shard_msg_encode_tell(ei_x_buff *x, const erlang_pid *sender, const char *id, size_t id_len,
			  const char *msg, size_t msg_len);

#endif
