/*
 * remote_mailbox.h — the messages of one entity whose handle runs in
 * another process (an entity written in Erlang, docs/architecture.md
 * "Entities written in Erlang and Elixir"): one message in flight, the
 * others queued behind it in arrival order, each numbered so a completion
 * is matched to the message it completes. Pure: no I/O, no allocation.
 *
 * The items are the caller's (intrusive: embed a struct remote_mailbox_item
 * in each message); the mailbox only links them. Whoever takes an item out
 * (completed, failed, drained) owns it again.
 *
 *   empty       -offer-> in flight (send it)
 *   in flight   -offer-> queued behind
 *   in flight   -complete(seq of the one in flight)-> the next queued is in
 *               flight (send it), or empty
 *   in flight   -complete(any other seq)-> refused: a late or made-up
 *               completion changes nothing
 *   in flight   -fail-> as complete, for a crash: the one in flight comes
 *               back to be answered with the error
 */
#ifndef SN_REMOTE_MAILBOX_H
#define SN_REMOTE_MAILBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a message is to an entity hosted elsewhere: its own, or one its
 * hosting part does here (host_entities.h). */
enum hosted_msg_kind { HOSTED_MSG, HOSTED_PASSIVATE, HOSTED_DELETE, HOSTED_WAKE };

struct remote_mailbox_item {
	struct remote_mailbox_item *next;
	uint64_t seq; /* set by the mailbox when the item goes in flight */
	/* The message, as its owner (the region, which embeds the item in
	 * its queued message) fills it in before offering it: the entity's
	 * id (canonical), the message, both borrowed from the owner's copy;
	 * its shard; its kind (enum hosted_msg_kind). The mailbox reads none
	 * of it. */
	const char *id, *msg;
	uint32_t id_len, msg_len;
	uint32_t shard;
	uint8_t kind;
	uint64_t sent_ns; /* host_entities.c's: when it went to the process */
};

/* Zero-initialised is an empty mailbox whose first message is number 1. */
struct remote_mailbox {
	struct remote_mailbox_item *in_flight;
	struct remote_mailbox_item *head, *tail; /* queued behind it */
	uint64_t last_seq;                      /* the last number given */
	uint32_t queued;
};

/* Takes `item`. True: it is in flight now, numbered (item->seq): send it.
 * False: it waits behind the one in flight. */
bool remote_mailbox_offer(struct remote_mailbox *mb, struct remote_mailbox_item *item);

/* The completion of message `seq` came. Returns the completed item (the
 * caller's again), or NULL when `seq` is not the one in flight (nothing
 * changes). *next is then the next item in flight, numbered, to send, or
 * NULL. */
struct remote_mailbox_item *remote_mailbox_complete(struct remote_mailbox *mb, uint64_t seq,
						    struct remote_mailbox_item **next);

/* The entity's process ended while a message was in flight: returns that
 * message (NULL if none) to be answered with the error, and *next as
 * remote_mailbox_complete does (the next message starts the entity
 * again). */
struct remote_mailbox_item *remote_mailbox_fail(struct remote_mailbox *mb, struct remote_mailbox_item **next);

/* Takes every item out, the one in flight first, then the queued ones in
 * order, into a list linked by `next` (returned; NULL if empty). The
 * numbering goes on where it was. For a shard that stops. */
struct remote_mailbox_item *remote_mailbox_drain(struct remote_mailbox *mb);

/* Whether a message is in flight (so the shard must not hand off yet). */
static inline bool remote_mailbox_busy(const struct remote_mailbox *mb) { return mb->in_flight != NULL; }

#endif
