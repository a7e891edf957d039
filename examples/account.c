/*
 * account.c — an example entity type built as a shared object (priv/account.so).
 *
 *   {deposit, N}  -> the new balance
 *   {withdraw, N} -> the new balance, or {error, insufficient_funds}
 *   balance       -> the balance
 *
 * Its state, the balance, travels with its shard and survives in a store
 * (entity API v2: encode_state and decode_state, and handle says when a
 * message changed it).
 *
 * Start a node hosting it with `priv/shardnode --name a@127.0.0.1 --types account`.
 */
#include <errno.h>
#include <string.h>

#include "entity.h"

struct account {
	long long balance;
};

static enum entity_after account_handle(void *state, const char *msg, size_t len, ei_x_buff *reply)
{
	struct account *a = state;
	char op[MAXATOMLEN_UTF8];
	int i = 0, arity;
	long long amount;
	if (ei_decode_atom(msg, &i, op) == 0 && strcmp(op, "balance") == 0) {
		ei_x_encode_longlong(reply, a->balance);
		return ENTITY_CONTINUE;
	}
	i = 0;
	if (ei_decode_tuple_header(msg, &i, &arity) == 0 && arity == 2 && ei_decode_atom(msg, &i, op) == 0 &&
	    ei_decode_longlong(msg, &i, &amount) == 0 && amount >= 0 && (size_t)i == len) {
		if (strcmp(op, "deposit") == 0) {
			a->balance += amount;
			ei_x_encode_longlong(reply, a->balance);
			return ENTITY_CONTINUE | ENTITY_CHANGED;
		}
		if (strcmp(op, "withdraw") == 0) {
			if (amount > a->balance) {
				ei_x_encode_tuple_header(reply, 2);
				ei_x_encode_atom(reply, "error");
				ei_x_encode_atom(reply, "insufficient_funds");
				return ENTITY_CONTINUE;
			}
			a->balance -= amount;
			ei_x_encode_longlong(reply, a->balance);
			return ENTITY_CONTINUE | ENTITY_CHANGED;
		}
	}
	/* entity_reply_unknown lives in the node; a plugin encodes the error itself. */
	ei_x_encode_tuple_header(reply, 2);
	ei_x_encode_atom(reply, "error");
	ei_x_encode_tuple_header(reply, 2);
	ei_x_encode_atom(reply, "unknown_message");
	ei_x_append_buf(reply, msg, (int)len);
	return ENTITY_CONTINUE;
}

/* The state as a term: the balance, an integer. */
static int account_encode_state(const void *state, ei_x_buff *out)
{
	const struct account *a = state;
	return ei_x_encode_longlong(out, a->balance) < 0 ? -ENOMEM : 0;
}

static int account_decode_state(void *state, const char *term, size_t len)
{
	struct account *a = state;
	int i = 0;
	long long balance;
	if (ei_decode_longlong(term, &i, &balance) < 0 || (size_t)i != len || balance < 0)
		return -EPROTO;
	a->balance = balance;
	return 0;
}

static const struct entity_type account_type = {
	.api_version = ENTITY_API_VERSION,
	.name = "account",
	.state_size = sizeof(struct account),
	.handle = account_handle,
	.encode_state = account_encode_state,
	.decode_state = account_decode_state,
};

const struct entity_type *shardnode_entity_type(void);
const struct entity_type *shardnode_entity_type(void) { return &account_type; }
