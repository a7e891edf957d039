/*
 * reply_batch.h — a turn's replies to one batching caller, sent as one
 * message.
 *
 * The Erlang client (shardnode:call/4,5 and multi_call/3) puts many calls
 * into one message and tags each {'$shardnode_batched', Seq}
 * (docs/protocol.md "Batched calls"). A calling BEAM pays for every
 * distribution message it receives, so a reply to such a tag is not sent
 * at once: it joins its caller's batch of this turn, and the batch leaves
 * before the turn's output is written as one message
 *
 *     {'$shardnode_replies', [{Tag, Reply}, ...]}
 *
 * in the order the replies were made. A reply to any other tag goes out
 * alone, as before. The batches are the node's (dist_node.c owns one set):
 * replies from every region to one caller share its message.
 */
#ifndef SN_REPLY_BATCH_H
#define SN_REPLY_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ei.h>

/* Callers batched at once; a reply for one more goes out alone. */
#define REPLY_BATCH_CALLERS_MAX 64
/* A batch this large leaves at once, before more is added: the message a
 * caller decodes stays small next to its mailbox. */
#define REPLY_BATCH_BYTES_MAX (256 * 1024)

/* Sends one encoded message (with version byte) to `to`; the bytes are
 * borrowed for the call. */
typedef void (*reply_batch_send_fn)(void *arg, const erlang_pid *to, const char *msg, size_t len);

struct reply_batch_caller;

struct reply_batches {
	reply_batch_send_fn send;
	void *send_arg;
	struct reply_batch_caller *callers; /* [0, ncallers) in use */
	uint32_t ncallers;
	uint64_t replies_batched; /* for the admin and tests */
	uint64_t batches_sent;
};

/* Empty batches sending through send(arg, ...). Allocates nothing. */
void reply_batches_init(struct reply_batches *b, reply_batch_send_fn send, void *arg);

/* Frees every buffer. What has not been flushed is dropped. */
void reply_batches_free(struct reply_batches *b);

/* Whether a raw encoded gen_server Tag asks for batched replies: it is
 * {'$shardnode_batched', _}. Reads only tag[0..tag_len) of a validated
 * term. */
bool reply_batch_tag(const char *tag, size_t tag_len);

/* Adds {Tag, Reply} (raw encoded terms, no version byte, borrowed) to the
 * batch for `to` (copied). Returns 0 once added (the batch may have been
 * sent already, if it reached REPLY_BATCH_BYTES_MAX), or -ENOSPC (too many
 * callers this turn) or -ENOMEM: then nothing was kept, and the caller
 * sends the reply alone. */
int reply_batches_add(struct reply_batches *b, const erlang_pid *to, const char *tag, size_t tag_len,
		      const char *reply, size_t reply_len);

/* Sends every caller's batch that holds a reply. A caller that got none
 * since the last flush is forgotten (its buffer freed): one that is busy
 * keeps its buffer from turn to turn. */
void reply_batches_flush(struct reply_batches *b);

#endif
