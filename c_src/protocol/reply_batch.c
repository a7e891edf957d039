/* reply_batch.c — a turn's replies to one batching caller, as one message
 * (reply_batch.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "etf/shardnode_msg.h"
#include "protocol/reply_batch.h"
#include "etf/term.h"
#include "etf/term_encode.h"

struct reply_batch_caller {
	erlang_pid to;
	ei_x_buff x;          /* {'$shardnode_replies', [ then the elements */
	size_t count_at;      /* where the list header's 4-byte length is */
	size_t header_len;    /* x.index with no element */
	uint32_t count;
};

void reply_batches_init(struct reply_batches *b, reply_batch_send_fn send, void *arg)
{
	memset(b, 0, sizeof *b);
	b->send = send;
	b->send_arg = arg;
}

void reply_batches_free(struct reply_batches *b)
{
	for (uint32_t k = 0; k < b->ncallers; k++)
		ei_x_free(&b->callers[k].x);
	free(b->callers);
	b->callers = NULL;
	b->ncallers = 0;
}

bool reply_batch_tag(const char *tag, size_t tag_len)
{
	size_t i = 0;
	/* The tuple header and the atom's two header bytes lie within the tag
	 * before anything is read at them; the atom's text is compared by
	 * term_is_atom only after its length matched, inside the tag too, as
	 * the tag is one whole validated term. */
	if (tag_len < 4 || term_get_tuple(tag, &i) != 2)
		return false;
	return term_is_atom(tag, i, SN_ATOM_BATCHED);
}

/* Starts a caller's message: version, {'$shardnode_replies', and a
 * LIST_EXT whose 4-byte length is set when the batch is sent. */
static int start_message(struct reply_batch_caller *c)
{
	if (ei_x_new_with_version(&c->x) < 0)
		return -ENOMEM;
	if (ei_x_encode_tuple_header(&c->x, 2) < 0 || term_x_encode_atom(&c->x, SN_ATOM_REPLIES) < 0 ||
	    ei_x_encode_list_header(&c->x, 1) < 0) {
		ei_x_free(&c->x);
		return -ENOMEM;
	}
	c->header_len = (size_t)c->x.index;
	c->count_at = c->header_len - 4;
	c->count = 0;
	return 0;
}

static struct reply_batch_caller *find_or_add(struct reply_batches *b, const erlang_pid *to, int *err)
{
	for (uint32_t k = 0; k < b->ncallers; k++)
		if (term_pid_equal(&b->callers[k].to, to))
			return &b->callers[k];
	if (b->ncallers == REPLY_BATCH_CALLERS_MAX) {
		*err = -ENOSPC;
		return NULL;
	}
	if (b->callers == NULL) {
		/* Every slot at once, on the first batched reply: at most 64
		 * callers, and a node that serves none of them pays nothing. */
		b->callers = calloc(REPLY_BATCH_CALLERS_MAX, sizeof *b->callers);
		if (b->callers == NULL) {
			*err = -ENOMEM;
			return NULL;
		}
	}
	struct reply_batch_caller *c = &b->callers[b->ncallers];
	if ((*err = start_message(c)) != 0)
		return NULL;
	term_pid_copy(&c->to, to);
	b->ncallers++;
	return c;
}

/* Sends c's batch if it holds a reply, and empties it. */
static void send_caller(struct reply_batches *b, struct reply_batch_caller *c)
{
	if (c->count == 0)
		return;
	unsigned char *len = (unsigned char *)c->x.buff + c->count_at;
	len[0] = (unsigned char)(c->count >> 24);
	len[1] = (unsigned char)(c->count >> 16);
	len[2] = (unsigned char)(c->count >> 8);
	len[3] = (unsigned char)c->count;
	/* The list's tail; an ei_x_buff grows as needed, and out of memory
	 * here the batch is lost as a send that failed would be. */
	if (ei_x_encode_empty_list(&c->x) == 0) {
		b->send(b->send_arg, &c->to, c->x.buff, (size_t)c->x.index);
		b->batches_sent++;
	}
	c->x.index = (int)c->header_len;
	c->count = 0;
}

int reply_batches_add(struct reply_batches *b, const erlang_pid *to, const char *tag, size_t tag_len,
		      const char *reply, size_t reply_len)
{
	int err = 0;
	struct reply_batch_caller *c = find_or_add(b, to, &err);
	if (c == NULL)
		return err;
	int at = c->x.index;
	if (ei_x_encode_tuple_header(&c->x, 2) < 0 || term_x_append_raw(&c->x, tag, tag_len) < 0 ||
	    term_x_append_raw(&c->x, reply, reply_len) < 0) {
		c->x.index = at;
		return -ENOMEM;
	}
	c->count++;
	b->replies_batched++;
	if ((size_t)c->x.index >= REPLY_BATCH_BYTES_MAX)
		send_caller(b, c);
	return 0;
}

void reply_batches_flush(struct reply_batches *b)
{
	uint32_t kept = 0;
	for (uint32_t k = 0; k < b->ncallers; k++) {
		struct reply_batch_caller *c = &b->callers[k];
		if (c->count == 0) {
			ei_x_free(&c->x); /* idle for a whole turn */
			continue;
		}
		send_caller(b, c);
		if (kept != k)
			b->callers[kept] = *c; /* the pid's node name is copied whole: rare */
		kept++;
	}
	b->ncallers = kept;
}
