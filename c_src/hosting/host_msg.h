/*
 * host_msg.h — the messages between a C node and the BEAM node that hosts
 * its entities written in Erlang (docs/architecture.md, "Entities written
 * in Erlang and Elixir"; the host's side is erl_wrapper/src/
 * shardnode_entity_host.erl, _dispatcher.erl and _proc.erl):
 *
 *   {'$shardnode_host', hello, CNode, From}        C node -> host (until answered)
 *   {'$shardnode_host', welcome, Dispatcher, [Type]}  host -> From
 *   {'$shardnode_host', types, [Type]}             host -> From: the types changed
 *   {'$shardnode_host', start, Region, Type, Id, Stored | undefined, Seq, Msg}
 *                                                  region -> dispatcher
 *   {'$shardnode_host', lease, Ms}                 C node -> dispatcher
 *   {'$shardnode_entity', Seq, Msg}                region -> entity
 *   {'$shardnode_stop', Reason}                    region -> entity
 *   {'$shardnode_done', Id, Pid, Seq, Reply, unchanged | {state, New}, continue | stop}
 *                                                  entity -> region
 *   {'$shardnode_crashed', Id, Pid | undefined, Reason}  dispatcher -> region
 *   {'$shardnode_host', 'end', Region, Token, [Pid]}  region -> dispatcher:
 *                                                  end these processes (a shard leaves)
 *   {'$shardnode_stopped', Token}                  dispatcher -> region: they have ended
 *
 * Batched, once both sides said they can (a host of an older release
 * offers nothing, a C node of an older release drops the offer):
 *
 *   {'$shardnode_host', batches, Dispatcher}       host -> From, after the welcome
 *   {'$shardnode_host', batches}                   C node -> dispatcher: send
 *                                                  completions batched
 *   {'$shardnode_host', batch, [Item]}             C node -> dispatcher, one a loop
 *                                                  turn: {Pid, Seq, Msg} (for an
 *                                                  entity), {start, Region, Type, Id,
 *                                                  Stored, Seq, Msg}, {stop, Pid, Reason}
 *   {'$shardnode_batch', [Msg]}                    dispatcher -> region: its done,
 *                                                  crashed and stopped messages, in order
 *
 * Ids, states, messages and replies are carried as the terms they are:
 * the encoders take their encoded bytes (no version byte) and copy them
 * in; the decoder points into the message.
 */
#ifndef SN_HOST_MSG_H
#define SN_HOST_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ei.h>

/* The encoders append one message, version byte first, to x (an
 * initialised ei_x_buff). Each returns 0, or -ENOMEM (x then holds no
 * whole message: send nothing). */
int host_msg_encode_hello(ei_x_buff *x, const char *cnode, const erlang_pid *from);
int host_msg_encode_start(ei_x_buff *x, const erlang_pid *region, const char *type, const char *id, size_t id_len,
			  const char *stored, size_t stored_len, uint64_t seq, const char *msg, size_t msg_len);
int host_msg_encode_lease(ei_x_buff *x, uint32_t ms);
/* pids: n of them (0: an empty list). */
int host_msg_encode_end(ei_x_buff *x, const erlang_pid *region, uint32_t token, const erlang_pid *pids, size_t n);
int host_msg_encode_entity(ei_x_buff *x, uint64_t seq, const char *msg, size_t msg_len);
int host_msg_encode_stop(ei_x_buff *x, const char *reason);
int host_msg_encode_batches(ei_x_buff *x);

/* A batch for the dispatcher: host_msg_batch_open appends its head (the
 * version byte, the tuple, and a list header whose length is filled in
 * later) and returns 0 or -ENOMEM; the items follow, each appended whole
 * by one host_msg_encode_item_* (no version byte; 0 or -ENOMEM, x then
 * holding part of one: the caller cuts it back to where it began);
 * host_msg_batch_close(x, n) writes the count n (>= 1) of items and the
 * list's end. */
int host_msg_batch_open(ei_x_buff *x);
int host_msg_batch_close(ei_x_buff *x, uint32_t n);
/* The entity's pid comes encoded (pid_len bytes, as ei_encode_pid writes
 * it): the caller writes its host's pids from a head made once. */
int host_msg_encode_item_entity(ei_x_buff *x, const char *pid, size_t pid_len, uint64_t seq, const char *msg,
				size_t msg_len);
int host_msg_encode_item_start(ei_x_buff *x, const erlang_pid *region, const char *type, const char *id,
			       size_t id_len, const char *stored, size_t stored_len, uint64_t seq, const char *msg,
			       size_t msg_len);
int host_msg_encode_item_stop(ei_x_buff *x, const erlang_pid *to, const char *reason);

enum host_msg_kind {
	HOST_MSG_WELCOME,
	HOST_MSG_TYPES,
	HOST_MSG_DONE,
	HOST_MSG_CRASHED,
	HOST_MSG_ENDED,
	HOST_MSG_BATCHES, /* the host takes batches: pid is its dispatcher */
	HOST_MSG_BATCH,   /* several of the above for a region: items */
};

/* A decoded message; the pointers are into the decoded term. */
struct host_msg {
	enum host_msg_kind kind;
	/* WELCOME: the dispatcher; DONE: the entity; CRASHED: the entity,
	 * unless has_pid is false (it never started) */
	erlang_pid pid;
	bool has_pid;
	const char *types;      /* WELCOME, TYPES: the list of type atoms */
	size_t types_len;
	const char *id;         /* DONE, CRASHED: the entity's id */
	size_t id_len;
	uint64_t seq;           /* DONE: the message it completes; ENDED: the token */
	const char *reply;      /* DONE: the reply; CRASHED: the reason */
	size_t reply_len;
	const char *state;      /* DONE: the new state, or NULL (unchanged) */
	size_t state_len;
	bool stop;              /* DONE: the entity ended after this message */
	const char *items;      /* BATCH: the list of messages, to the term's end (host_msg_batch_begin) */
	size_t items_len;
	size_t used;            /* the message's length in bytes (from its first byte) */
};

/* Recognises one of the messages above sent to a C node (welcome, types,
 * batches, done, crashed, stopped, a batch of them) in a validated term (no version byte). Returns 1 with
 * *out filled, 0 if the term is none of them (not tagged so), or -EPROTO
 * if it is tagged so but not as described (a wrong arity, a sequence
 * number that is no non-negative integer, a change that is neither
 * `unchanged` nor {state, New}, a next that is neither `continue` nor
 * `stop`, types that are no list). */
int host_msg_decode(const char *t, size_t len, struct host_msg *out);

/* The messages of a BATCH in turn: host_msg_batch_begin over its items,
 * then host_msg_batch_decode_next decodes each where it starts
 * (host_msg_decode's *rc and *out; a batch inside a batch is -EPROTO) and
 * steps past it, so the batch is walked once: true while there was one,
 * false once none is left (the list's tail is never read as one). Reads
 * only the validated list. */
struct host_msg_batch {
	const char *items;
	size_t items_len;
	size_t at;   /* where the next message starts */
	size_t left; /* messages not given yet */
};
void host_msg_batch_begin(struct host_msg_batch *b, const char *items, size_t items_len);
bool host_msg_batch_decode_next(struct host_msg_batch *b, struct host_msg *out, int *rc);

#endif
