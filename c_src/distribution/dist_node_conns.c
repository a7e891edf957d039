/* dist_node_conns.c — the node's table of connections and the hooks a
 * connection calls its owner with: arbitration of a second connection to
 * one peer, a connection up, a connection closed (dist_node_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "distribution/dist_node_internal.h"

struct dist_conn *dist_node_find_conn(struct dist_node *n, const char *peer, const struct dist_conn *except)
{
	struct dist_conn *best = NULL;
	for (struct dist_conn *c = n->conns; c; c = c->next) {
		if (c == except || c->state == CONN_CLOSED || strcmp(c->peer, peer) != 0)
			continue;
		if (c->state == CONN_UP)
			return c;
		best = c;
	}
	return best;
}

void dist_node_link_conn(struct dist_node *n, struct dist_conn *c)
{
	c->next = n->conns;
	n->conns = c;
	n->nconns++;
}

static void unlink_conn(struct dist_node *n, struct dist_conn *c)
{
	for (struct dist_conn **pc = &n->conns; *pc; pc = &(*pc)->next) {
		if (*pc == c) {
			*pc = c->next;
			n->nconns--;
			/* its traffic stays in the node's totals */
			n->stats.bytes_in += c->bytes_in;
			n->stats.bytes_out += c->bytes_out;
			n->stats.packets_in += c->packets_in;
			n->stats.packets_out += c->packets_out;
			return;
		}
	}
}

enum conn_arbitration dist_node_hook_arbitrate(void *owner, struct dist_conn *in)
{
	struct dist_node *n = owner;
	if (strcmp(in->peer, n->name) == 0)
		return CONN_ARB_REFUSE;
	struct dist_conn *other = dist_node_find_conn(n, in->peer, in);
	if (other == NULL)
		return CONN_ARB_OK;
	if (other->state == CONN_UP)
		return CONN_ARB_ALIVE;
	if (!other->initiator) {
		/* Two half-open accepts from one peer: the older is stale. */
		dist_conn_close(other, "replaced by a newer connection attempt");
		return CONN_ARB_OK;
	}
	/* Simultaneous connect, decided as net_kernel does: the greater
	 * node name keeps its own attempt. */
	if (strcmp(n->name, in->peer) > 0)
		return CONN_ARB_NOK;
	dist_conn_adopt_pending(in, other);
	dist_conn_close(other, "simultaneous connect: peer's attempt wins");
	return CONN_ARB_OK_SIMULTANEOUS;
}

void dist_node_hook_replace(void *owner, struct dist_conn *in)
{
	struct dist_node *n = owner;
	struct dist_conn *old = dist_node_find_conn(n, in->peer, in);
	if (old != NULL)
		dist_conn_close(old, "peer reconnected");
}

void dist_node_hook_up(void *owner, struct dist_conn *c)
{
	struct dist_node *n = owner;
	struct peer_failing was;
	peer_backoff_reached(&n->unreachable, c->peer, &was);
	if (was.failures > 0)
		log_info(n->settings.log, "%s answers again, after %u failed connection attempts; "
			 "%llu messages to it were dropped meanwhile", c->peer, was.failures,
			 (unsigned long long)was.dropped);
	/* Packets that waited on a connection that lost a race go out now. */
	for (struct dist_conn *o = n->conns; o; o = o->next) {
		if (o != c && o->state == CONN_NOK_WAIT && strcmp(o->peer, c->peer) == 0) {
			dist_conn_adopt_pending(c, o);
			dist_conn_close(o, "peer's connection is up");
		}
	}
}

/* An attempt of ours that never came up: the peer is gone or not there
 * yet. Said once, when it starts failing; the next attempts back off. */
static void attempt_failed(struct dist_node *n, struct dist_conn *c, const char *why)
{
	uint32_t failures = peer_backoff_failed(&n->unreachable, c->peer, evloop_now_ms(n->settings.loop));
	peer_backoff_dropped(&n->unreachable, c->peer, c->pending_packets);
	if (failures <= 1 && c->pending_packets > 0)
		log_warn(n->settings.log, "cannot reach %s (%s): %llu messages to it dropped; trying again with "
			 "back-off, and saying nothing more until it answers", c->peer, why,
			 (unsigned long long)c->pending_packets);
	else if (failures <= 1)
		log_warn(n->settings.log, "cannot reach %s (%s); trying again with back-off, and saying nothing "
			 "more until it answers", c->peer, why);
	else
		log_debug(n->settings.log, "cannot reach %s (%s), attempt %u: %llu messages to it dropped", c->peer, why,
			  failures, (unsigned long long)c->pending_packets);
}

void dist_node_hook_closed(void *owner, struct dist_conn *c, const char *why)
{
	struct dist_node *n = owner;
	/* Not when another connection to the peer lives on: our attempt lost
	 * a simultaneous connect, and what it held went to the winner. */
	if (c->initiator && !c->was_up && c->peer[0] != '\0' && dist_node_find_conn(n, c->peer, c) == NULL)
		attempt_failed(n, c, why);
	unlink_conn(n, c);
	c->next = n->dead;
	n->dead = c;
	if (c->peer[0] != '\0' && dist_node_find_conn(n, c->peer, c) == NULL) {
		/* The peer's monitors and links on our procs die with the
		 * connection; its side delivers noconnection by itself. */
		proc_table_forget_node(&n->procs, c->peer);
		if (c->was_up)
			for (size_t k = 0; k < n->nnodedown; k++)
				n->nodedown[k].fn(n->nodedown[k].arg, c->peer);
	}
}

void dist_node_free_dead(struct dist_node *n)
{
	while (n->dead) {
		struct dist_conn *c = n->dead;
		n->dead = c->next;
		dist_conn_free(c);
		free(c);
	}
}

