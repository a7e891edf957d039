/* dist_node_outlet.c — a node's outlet (dist_node.h): the four sends of
 * protocol/outlet.h as the distribution carries them, and dead letters
 * counted and logged in the sender's drop log. */
#include "distribution/dist_node.h"

static int send_any(void *carrier, const erlang_pid *to, const char *msg, size_t len)
{
	return dist_node_send(carrier, to, msg, len);
}

static int send_connected(void *carrier, const erlang_pid *to, const char *msg, size_t len)
{
	return dist_node_send_connected(carrier, to, msg, len);
}

static int reg_send(void *carrier, const erlang_pid *from, const char *name, const char *node, const char *msg,
		    size_t len)
{
	return dist_node_reg_send(carrier, from, name, node, msg, len);
}

static int reply_to(void *carrier, const erlang_pid *from, const erlang_pid *to, const char *tag, size_t tag_len,
		    const char *reply, size_t reply_len)
{
	return dist_node_reply_to(carrier, from, to, tag, tag_len, reply, reply_len);
}

static void dead_letter(void *carrier, struct drop_log *log, const char *reason, const char *what, const char *term)
{
	(void)carrier;
	drop_log_drop(log, reason, what, term);
}

static const struct outlet_ops dist_node_outlet_ops = {
	.send = send_any,
	.send_connected = send_connected,
	.reg_send = reg_send,
	.reply_to = reply_to,
	.dead_letter = dead_letter,
};

struct outlet dist_node_outlet(struct dist_node *n)
{
	return (struct outlet){.ops = &dist_node_outlet_ops, .carrier = n};
}
