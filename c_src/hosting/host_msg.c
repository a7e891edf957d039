/* host_msg.c — see host_msg.h. */
#include "etf/shardnode_msg.h"
#include "hosting/host_msg.h"

#include <errno.h>
#include <string.h>

#include "base/byteorder.h"
#include "etf/term.h"
#include "etf/term_encode.h"

#define HOST_TAG SN_ATOM_HOST
#define ENTITY_TAG SN_ATOM_ENTITY
#define STOP_TAG SN_ATOM_STOP
#define DONE_TAG SN_ATOM_DONE
#define CRASHED_TAG SN_ATOM_CRASHED
#define STOPPED_TAG SN_ATOM_STOPPED
#define BATCH_TAG SN_ATOM_BATCH

/* ei's encoders return -1; the raw appends -ENOMEM: either is "no whole
 * message". */
static int whole(int rc) { return rc < 0 ? -ENOMEM : 0; }

static int head(ei_x_buff *x, int arity, const char *tag)
{
	return whole(ei_x_encode_version(x) | ei_x_encode_tuple_header(x, arity) | term_x_encode_atom(x, tag));
}

int host_msg_encode_hello(ei_x_buff *x, const char *cnode, const erlang_pid *from)
{
	return whole(head(x, 4, HOST_TAG) | term_x_encode_atom(x, "hello") | term_x_encode_atom(x, cnode) |
		     ei_x_encode_pid(x, from));
}

/* start, Region, Type, Id, Stored | undefined, Seq, Msg: the fields of a
 * start alone and of a batch's start item. */
static int start_fields(ei_x_buff *x, const erlang_pid *region, const char *type, const char *id, size_t id_len,
			const char *stored, size_t stored_len, uint64_t seq, const char *msg, size_t msg_len)
{
	int rc = term_x_encode_atom(x, "start") | ei_x_encode_pid(x, region) | term_x_encode_atom(x, type) |
		 term_x_append_raw(x, id, id_len);
	rc |= stored != NULL ? term_x_append_raw(x, stored, stored_len) : term_x_encode_atom(x, "undefined");
	return rc | term_x_encode_uint(x, seq) | term_x_append_raw(x, msg, msg_len);
}

int host_msg_encode_start(ei_x_buff *x, const erlang_pid *region, const char *type, const char *id, size_t id_len,
			  const char *stored, size_t stored_len, uint64_t seq, const char *msg, size_t msg_len)
{
	return whole(head(x, 8, HOST_TAG) |
		     start_fields(x, region, type, id, id_len, stored, stored_len, seq, msg, msg_len));
}

int host_msg_encode_end(ei_x_buff *x, const erlang_pid *region, uint32_t token, const erlang_pid *pids, size_t n)
{
	if (n > INT32_MAX)
		return -ENOMEM;
	int rc = head(x, 5, HOST_TAG) | term_x_encode_atom(x, "end") | ei_x_encode_pid(x, region) |
		 term_x_encode_uint(x, token);
	if (n > 0) /* a header of length 0 is itself the empty list */
		rc |= ei_x_encode_list_header(x, (long)n);
	for (size_t k = 0; k < n && rc == 0; k++)
		rc |= ei_x_encode_pid(x, &pids[k]);
	return whole(rc | ei_x_encode_empty_list(x));
}

int host_msg_encode_lease(ei_x_buff *x, uint32_t ms)
{
	return whole(head(x, 3, HOST_TAG) | term_x_encode_atom(x, "lease") | term_x_encode_uint(x, ms));
}

int host_msg_encode_entity(ei_x_buff *x, uint64_t seq, const char *msg, size_t msg_len)
{
	return whole(head(x, 3, ENTITY_TAG) | term_x_encode_uint(x, seq) | term_x_append_raw(x, msg, msg_len));
}

int host_msg_encode_stop(ei_x_buff *x, const char *reason)
{
	return whole(head(x, 2, STOP_TAG) | term_x_encode_atom(x, reason));
}

int host_msg_encode_batches(ei_x_buff *x)
{
	return whole(head(x, 2, HOST_TAG) | term_x_encode_atom(x, "batches"));
}

/* The list header's length, 4 bytes after its tag, is patched in by
 * host_msg_batch_close: it is the last thing the open writes. */
int host_msg_batch_open(ei_x_buff *x)
{
	static const char list_head[5] = {(char)ERL_LIST_EXT, 0, 0, 0, 0};
	int rc = head(x, 3, HOST_TAG) | term_x_encode_atom(x, "batch");
	return whole(rc | term_x_append_raw(x, list_head, sizeof list_head));
}

int host_msg_batch_close(ei_x_buff *x, uint32_t n)
{
	/* The head is the version byte, a small tuple header (2), the two
	 * atoms, then the list header: found again from the start. */
	size_t i = 1;
	(void)term_get_tuple(x->buff, &i);
	term_skip(x->buff, &i);
	term_skip(x->buff, &i);
	be32_write(x->buff + i + 1, n);
	return whole(ei_x_encode_empty_list(x));
}

int host_msg_encode_item_entity(ei_x_buff *x, const char *pid, size_t pid_len, uint64_t seq, const char *msg,
				size_t msg_len)
{
	return whole(ei_x_encode_tuple_header(x, 3) | term_x_append_raw(x, pid, pid_len) | term_x_encode_uint(x, seq) |
		     term_x_append_raw(x, msg, msg_len));
}

int host_msg_encode_item_start(ei_x_buff *x, const erlang_pid *region, const char *type, const char *id,
			       size_t id_len, const char *stored, size_t stored_len, uint64_t seq, const char *msg,
			       size_t msg_len)
{
	return whole(ei_x_encode_tuple_header(x, 7) |
		     start_fields(x, region, type, id, id_len, stored, stored_len, seq, msg, msg_len));
}

int host_msg_encode_item_stop(ei_x_buff *x, const erlang_pid *to, const char *reason)
{
	return whole(ei_x_encode_tuple_header(x, 3) | term_x_encode_atom(x, "stop") | ei_x_encode_pid(x, to) |
		     term_x_encode_atom(x, reason));
}

/* ---- decoding ---- */

/* Points *p at the term at t[*i] and moves *i past it. */
static void span(const char *t, size_t *i, const char **p, size_t *n)
{
	*p = t + *i;
	term_skip(t, i);
	*n = (size_t)(t + *i - *p);
}

static bool get_seq(const char *t, size_t *i, uint64_t *out)
{
	int ii = (int)*i;
	unsigned long long v;
	if (ei_decode_ulonglong(t, &ii, &v) < 0)
		return false;
	*out = v;
	*i = (size_t)ii;
	return true;
}

static bool get_list(const char *t, size_t *i, const char **p, size_t *n)
{
	unsigned char tag = (unsigned char)t[*i];
	if (tag != ERL_LIST_EXT && tag != ERL_NIL_EXT && tag != ERL_STRING_EXT)
		return false;
	span(t, i, p, n);
	return true;
}

/* {'$shardnode_host', welcome | types, ...} */
static int decode_host(const char *t, size_t i, long arity, struct host_msg *out)
{
	if (arity == 4 && term_is_atom(t, i, "welcome")) {
		term_skip(t, &i);
		if (term_get_pid(t, &i, &out->pid) != 0 || !get_list(t, &i, &out->types, &out->types_len))
			return -EPROTO;
		out->kind = HOST_MSG_WELCOME;
		out->has_pid = true;
		out->used = i;
		return 1;
	}
	if (arity == 3 && term_is_atom(t, i, "batches")) {
		term_skip(t, &i);
		if (term_get_pid(t, &i, &out->pid) != 0)
			return -EPROTO;
		out->kind = HOST_MSG_BATCHES;
		out->has_pid = true;
		out->used = i;
		return 1;
	}
	if (arity == 3 && term_is_atom(t, i, "types")) {
		term_skip(t, &i);
		if (!get_list(t, &i, &out->types, &out->types_len))
			return -EPROTO;
		out->kind = HOST_MSG_TYPES;
		out->used = i;
		return 1;
	}
	/* hello, start, lease: the C node's own messages, never sent to it. */
	return -EPROTO;
}

/* {'$shardnode_done', Id, Pid, Seq, Reply, Change, Next} */
static int decode_done(const char *t, size_t i, long arity, struct host_msg *out)
{
	if (arity != 7)
		return -EPROTO;
	span(t, &i, &out->id, &out->id_len);
	if (term_get_pid(t, &i, &out->pid) != 0 || !get_seq(t, &i, &out->seq))
		return -EPROTO;
	out->has_pid = true;
	span(t, &i, &out->reply, &out->reply_len);
	if (term_is_atom(t, i, "unchanged")) {
		term_skip(t, &i);
	} else {
		size_t j = i;
		if (term_get_tuple(t, &j) != 2 || !term_is_atom(t, j, "state"))
			return -EPROTO;
		term_skip(t, &j);
		span(t, &j, &out->state, &out->state_len);
		i = j;
	}
	if (term_is_atom(t, i, "stop"))
		out->stop = true;
	else if (!term_is_atom(t, i, "continue"))
		return -EPROTO;
	term_skip(t, &i);
	out->kind = HOST_MSG_DONE;
	out->used = i;
	return 1;
}

/* {'$shardnode_crashed', Id, Pid | undefined, Reason} */
static int decode_crashed(const char *t, size_t i, long arity, struct host_msg *out)
{
	if (arity != 4)
		return -EPROTO;
	span(t, &i, &out->id, &out->id_len);
	if (term_is_atom(t, i, "undefined"))
		term_skip(t, &i);
	else if (term_get_pid(t, &i, &out->pid) == 0)
		out->has_pid = true;
	else
		return -EPROTO;
	span(t, &i, &out->reply, &out->reply_len);
	out->kind = HOST_MSG_CRASHED;
	out->used = i;
	return 1;
}

/* {'$shardnode_stopped', Token} */
static int decode_stopped(const char *t, size_t i, long arity, struct host_msg *out)
{
	if (arity != 2 || !get_seq(t, &i, &out->seq) || out->seq > UINT32_MAX)
		return -EPROTO;
	out->kind = HOST_MSG_ENDED;
	out->used = i;
	return 1;
}

int host_msg_decode(const char *t, size_t len, struct host_msg *out)
{
	/* Validated: every length inside is true, and len is where the term
	 * ends. */
	size_t i = 0;
	long arity = term_get_tuple(t, &i);
	if (arity < 1)
		return 0;
	memset(out, 0, sizeof *out);
	if (term_is_atom(t, i, HOST_TAG)) {
		term_skip(t, &i);
		return arity < 2 ? -EPROTO : decode_host(t, i, arity, out);
	}
	if (term_is_atom(t, i, DONE_TAG)) {
		term_skip(t, &i);
		return decode_done(t, i, arity, out);
	}
	if (term_is_atom(t, i, CRASHED_TAG)) {
		term_skip(t, &i);
		return decode_crashed(t, i, arity, out);
	}
	if (term_is_atom(t, i, STOPPED_TAG)) {
		term_skip(t, &i);
		return decode_stopped(t, i, arity, out);
	}
	if (term_is_atom(t, i, BATCH_TAG)) {
		term_skip(t, &i);
		unsigned char tag = (unsigned char)t[i];
		if (arity != 2 || (tag != ERL_LIST_EXT && tag != ERL_NIL_EXT && tag != ERL_STRING_EXT))
			return -EPROTO;
		/* The list is the tuple's last element: it runs to the term's
		 * end, found without walking all the messages it holds (each is
		 * walked once, as it is decoded: host_msg_batch_decode_next). */
		out->items = t + i;
		out->items_len = len - i;
		out->kind = HOST_MSG_BATCH;
		out->used = len;
		return 1;
	}
	return 0;
}

void host_msg_batch_begin(struct host_msg_batch *b, const char *items, size_t items_len)
{
	/* A LIST_EXT's elements follow its 5-byte header; its tail is the
	 * last term. [] and a STRING_EXT (small integers: no message) hold
	 * none. */
	b->items = items;
	b->items_len = items_len;
	b->at = 5;
	b->left = items_len >= 5 && (unsigned char)items[0] == ERL_LIST_EXT ? be32_read(items + 1) : 0;
}

bool host_msg_batch_decode_next(struct host_msg_batch *b, struct host_msg *out, int *rc)
{
	if (b->left == 0)
		return false;
	b->left--;
	const char *msg = b->items + b->at;
	*rc = host_msg_decode(msg, b->items_len - b->at, out);
	if (*rc == 1 && out->kind == HOST_MSG_BATCH)
		*rc = -EPROTO; /* no batch inside a batch */
	if (*rc == 1)
		b->at += out->used;
	else
		term_skip(b->items, &b->at);
	return true;
}

