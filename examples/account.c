/*
 * account.c — an example entity type built as a shared object (priv/account.so).
 *
 *   {deposit, N}  -> the new balance
 *   {withdraw, N} -> the new balance, or {error, insufficient_funds}
 *   balance       -> the balance
 *
 * Start a node hosting it with `priv/shardnode --name a@127.0.0.1 --types account`.
 */
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
			return ENTITY_CONTINUE;
		}
		if (strcmp(op, "withdraw") == 0) {
			if (amount > a->balance) {
				ei_x_encode_tuple_header(reply, 2);
				ei_x_encode_atom(reply, "error");
				ei_x_encode_atom(reply, "insufficient_funds");
			} else {
				a->balance -= amount;
				ei_x_encode_longlong(reply, a->balance);
			}
			return ENTITY_CONTINUE;
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

static const struct entity_type account_type = {
	.api_version = ENTITY_API_VERSION,
	.name = "account",
	.state_size = sizeof(struct account),
	.handle = account_handle,
};

const struct entity_type *shardnode_entity_type(void);
const struct entity_type *shardnode_entity_type(void) { return &account_type; }
