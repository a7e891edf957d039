/*
 * outlet.h — where a process's messages leave: the seam between what a
 * process decides to send and what carries it to the other node.
 *
 * A process that sends (a shard region) holds an outlet by value and sends
 * only through it. On a running node the outlet is the distribution's
 * (dist_node_outlet, distribution/dist_node.h): its sends are
 * dist_node_send, dist_node_send_connected, dist_node_reg_send and
 * dist_node_reply_to, with their return values. So the process's code
 * reads as far as "it leaves here" and no further: how a reply finds its
 * connection, its batch or its alias is the distribution's business, and
 * a test may stand a recorder in the carrier's place.
 *
 * Every operation takes encoded terms it only borrows for the call, and
 * returns 0 or -errno as the carrier's function it stands for says (a
 * dead letter returns nothing: it cannot fail).
 */
#ifndef SN_OUTLET_H
#define SN_OUTLET_H

#include <stddef.h>

#include <ei.h>

#include "etf/drop_log.h"

struct outlet_ops {
	/* `msg` (version byte included) to a pid; as dist_node_send. */
	int (*send)(void *carrier, const erlang_pid *to, const char *msg, size_t len);
	/* The same, only over a connection that is up now; else nothing is
	 * queued (-ENOTCONN, -EHOSTUNREACH, -ESRCH...): as
	 * dist_node_send_connected. */
	int (*send_connected)(void *carrier, const erlang_pid *to, const char *msg, size_t len);
	/* `msg` (version byte included) from `from` to the process registered
	 * as `name` on `node`; as dist_node_reg_send. */
	int (*reg_send)(void *carrier, const erlang_pid *from, const char *name, const char *node, const char *msg,
			size_t len);
	/* {Tag, Reply} from `from` to the caller `to` of a gen_server call
	 * whose encoded Tag is `tag`, `reply` without version byte; as
	 * dist_node_reply_to. */
	int (*reply_to)(void *carrier, const erlang_pid *from, const erlang_pid *to, const char *tag, size_t tag_len,
			const char *reply, size_t reply_len);
	/* A message the process drops, one it can neither route nor keep
	 * (the dead letters, as Akka's deadLetters takes what an actor could
	 * not deliver): it leaves here too, so that whatever the process
	 * does with a message ends at its outlet. `log` is the process's own
	 * count of them by `reason` (a string literal; the metrics read it);
	 * on a running node drop_log_drop, which logs the first of each
	 * reason with `what` it was and `term` (validated, no version byte;
	 * may be NULL). */
	void (*dead_letter)(void *carrier, struct drop_log *log, const char *reason, const char *what,
			    const char *term);
};

/* The operations and what they act on; both borrowed (the carrier
 * outlives every process that holds its outlet). */
struct outlet {
	const struct outlet_ops *ops;
	void *carrier;
};

static inline int outlet_send(const struct outlet *o, const erlang_pid *to, const char *msg, size_t len)
{
	return o->ops->send(o->carrier, to, msg, len);
}

static inline int outlet_send_connected(const struct outlet *o, const erlang_pid *to, const char *msg, size_t len)
{
	return o->ops->send_connected(o->carrier, to, msg, len);
}

static inline int outlet_reg_send(const struct outlet *o, const erlang_pid *from, const char *name, const char *node,
				  const char *msg, size_t len)
{
	return o->ops->reg_send(o->carrier, from, name, node, msg, len);
}

static inline int outlet_reply_to(const struct outlet *o, const erlang_pid *from, const erlang_pid *to,
				  const char *tag, size_t tag_len, const char *reply, size_t reply_len)
{
	return o->ops->reply_to(o->carrier, from, to, tag, tag_len, reply, reply_len);
}

static inline void outlet_dead_letter(const struct outlet *o, struct drop_log *log, const char *reason,
				      const char *what, const char *term)
{
	o->ops->dead_letter(o->carrier, log, reason, what, term);
}

#endif
