/*
 * host_batch.h — what a C node's regions have for the host of their
 * entities in one turn of the loop, gathered into one message for its
 * dispatcher: {'$shardnode_host', batch, [Item]} (host_msg.h). One
 * distribution message then carries every entity message of the turn,
 * and the host hands them out with local sends, where one message each
 * cost the host two distribution decodes and the C node a write each.
 *
 * The owner (host_link.c) sends the batch before the loop sleeps
 * (host_batch_take) and starts the next. Runs on the loop's thread.
 */
#ifndef SN_HOST_BATCH_H
#define SN_HOST_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ei.h>

struct host_batch {
	ei_x_buff x;   /* the message so far (x.buff NULL: none begun) */
	uint32_t n;    /* whole items in it */
	int mark;      /* where the item being appended began */
};

/* An empty batch; allocates nothing. */
void host_batch_init(struct host_batch *b);

/* Frees what b holds; b is empty again. */
void host_batch_free(struct host_batch *b);

/* The buffer to append one item to with a host_msg_encode_item_*, the
 * batch's head written first if it has none; NULL when memory runs out.
 * Every non-NULL return is followed by one host_batch_item_end. */
ei_x_buff *host_batch_item_begin(struct host_batch *b);

/* The item appended since host_batch_item_begin is whole (`ok`: counted)
 * or not (cut off again, the batch as it was). */
void host_batch_item_end(struct host_batch *b, bool ok);

/* The bytes held so far (0 when empty): the owner sends early past a size. */
size_t host_batch_size(const struct host_batch *b);

/* Closes a batch that holds items and points *buf, *len at its message
 * (version byte first), valid until the next call on b. Returns 1 (taken),
 * 0 (it holds none), or -ENOMEM: memory ran out to close it and its items
 * are lost; the owner must fail their entities' messages (host_link.c
 * drops the connection to the host, so every region answers them as at a
 * nodedown). Either way the next item begins a new batch. */
int host_batch_take(struct host_batch *b, const char **buf, size_t *len);

#endif
