/* dist_node_conns.c — the node's table of connections and the hooks a
 * connection calls its owner with: arbitration of a second connection to
 * one peer, a connection up, a connection closed (dist_node_internal.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "distribution/dist_node_internal.h"

struct dist_conn *dist_node_find_conn(struct dist_node *n, const char *peer, const struct dist_conn *except)
{
	struct dist_conn *best = NULL;
	/* Newest first: of the connections still setting up, the oldest is
	 * the one found. */
	for (uint32_t i = n->nconns; i-- > 0;) {
		struct dist_conn *c = n->conns[i];
		if (c == except || dist_conn_is_closed(c) || strcmp(dist_conn_peer(c), peer) != 0)
			continue;
		if (dist_conn_is_up(c))
			return c;
		best = c;
	}
	return best;
}

/* The peer's monitors and links on our procs die with it (its side
 * delivers noconnection by itself), and the nodedown listeners hear it. */
static void tell_down(struct dist_node *n, const char *peer)
{
	proc_table_forget_node(&n->procs, peer);
	for (size_t k = 0; k < n->nlisteners; k++)
		if (n->listeners[k].down != NULL)
			n->listeners[k].down(n->listeners[k].arg, peer);
}

/* Closes the connections to `peer` that are up (`up`) or still setting
 * up (!up), from the back as dist_node_each_conn does: a closed one
 * leaves behind the cursor, and one a nodedown listener opens meanwhile
 * (appended, and not up) is left alone. Returns how many it closed. */
static int close_conns(struct dist_node *n, const char *peer, const char *why, bool up)
{
	int closed = 0;
	for (uint32_t i = n->nconns; i-- > 0;) {
		if (i >= n->nconns)
			continue;
		struct dist_conn *c = n->conns[i];
		if (dist_conn_is_closed(c) || dist_conn_is_up(c) != up || strcmp(dist_conn_peer(c), peer) != 0)
			continue;
		dist_conn_close(c, why);
		closed++;
	}
	return closed;
}

int dist_node_disconnect(struct dist_node *n, const char *peer, const char *why)
{
	/* The attempts still setting up first, so that the up connection
	 * closes last and its closing is the nodedown (one closed while
	 * another to the peer lives tells nobody). */
	int setting_up = close_conns(n, peer, why, false);
	int up = close_conns(n, peer, why, true);
	if (up == 0)
		tell_down(n, peer); /* none was up: the nodedown is said all the same */
	return setting_up + up;
}

int dist_node_link_conn(struct dist_node *n, struct dist_conn *c)
{
	if (n->nconns + n->ndead + 1 > n->conns_cap) {
		uint32_t cap = n->conns_cap ? n->conns_cap * 2 : 16;
		struct dist_conn **grown = realloc(n->conns, cap * sizeof *grown);
		if (grown == NULL)
			return -ENOMEM;
		/* The closed ones stay at the back. */
		memmove(grown + cap - n->ndead, grown + n->conns_cap - n->ndead, n->ndead * sizeof *grown);
		n->conns = grown;
		n->conns_cap = cap;
	}
	n->conns[n->nconns++] = c;
	return 0;
}

void dist_node_each_conn(struct dist_node *n, void (*fn)(struct dist_conn *c, void *arg), void *arg)
{
	/* From the back: the one fn closes leaves behind the cursor. One that
	 * closes another (older) may have a connection seen twice; each fn is
	 * harmless twice (a flush, a tick). */
	for (uint32_t i = n->nconns; i-- > 0;)
		if (i < n->nconns)
			fn(n->conns[i], arg);
}

/* Moves c from the live connections to the closed ones. */
static void unlink_conn(struct dist_node *n, struct dist_conn *c)
{
	for (uint32_t i = 0; i < n->nconns; i++) {
		if (n->conns[i] != c)
			continue;
		memmove(&n->conns[i], &n->conns[i + 1], (n->nconns - i - 1) * sizeof *n->conns);
		n->nconns--;
		n->ndead++;
		n->conns[n->conns_cap - n->ndead] = c;
		/* its traffic stays in the node's totals */
		struct dist_conn_traffic t;
		dist_conn_get_traffic(c, &t);
		n->stats.bytes_in += t.bytes_in;
		n->stats.bytes_out += t.bytes_out;
		n->stats.packets_in += t.packets_in;
		n->stats.packets_out += t.packets_out;
		return;
	}
}

enum conn_arbitration dist_node_hook_arbitrate(void *owner, struct dist_conn *in)
{
	struct dist_node *n = owner;
	const char *peer = dist_conn_peer(in);
	if (strcmp(peer, n->name) == 0)
		return CONN_ARB_REFUSE;
	struct dist_conn *other = dist_node_find_conn(n, peer, in);
	if (other == NULL)
		return CONN_ARB_OK;
	if (dist_conn_is_up(other))
		return CONN_ARB_ALIVE;
	if (!dist_conn_initiated(other)) {
		/* Two half-open accepts from one peer: the older is stale. */
		dist_conn_close(other, "replaced by a newer connection attempt");
		return CONN_ARB_OK;
	}
	/* Simultaneous connect, decided as net_kernel does: the greater
	 * node name keeps its own attempt. */
	if (strcmp(n->name, peer) > 0)
		return CONN_ARB_NOK;
	dist_conn_adopt_pending(in, other);
	dist_conn_close(other, "simultaneous connect: peer's attempt wins");
	return CONN_ARB_OK_SIMULTANEOUS;
}

void dist_node_hook_replace(void *owner, struct dist_conn *in)
{
	struct dist_node *n = owner;
	struct dist_conn *old = dist_node_find_conn(n, dist_conn_peer(in), in);
	if (old != NULL)
		dist_conn_close(old, "peer reconnected");
}

/* dist_node_each_conn's visitor for a connection `arg` that came up: one
 * to the same peer that lost the race hands it its packets and closes. */
static void adopt_from_loser(struct dist_conn *o, void *arg)
{
	struct dist_conn *c = arg;
	if (o != c && dist_conn_lost_race(o) && strcmp(dist_conn_peer(o), dist_conn_peer(c)) == 0) {
		dist_conn_adopt_pending(c, o);
		dist_conn_close(o, "peer's connection is up");
	}
}

/* Tells every reach listener how reaching `peer` went (dist_node.h). */
static void tell_reach(struct dist_node *n, const char *peer, bool up)
{
	for (size_t k = 0; k < n->nlisteners; k++)
		if (n->listeners[k].reach != NULL)
			n->listeners[k].reach(n->listeners[k].arg, peer, up);
}

void dist_node_hook_up(void *owner, struct dist_conn *c)
{
	struct dist_node *n = owner;
	const char *peer = dist_conn_peer(c);
	struct peer_failing was;
	peer_backoff_reached(&n->unreachable, peer, &was);
	(void)node_set_add(&n->ever_up, peer); /* out of memory: its loss is said at info */
	if (was.failures > 0)
		log_info(n->settings.log, "%s answers again, after %u failed connection attempts; "
			 "%llu messages to it were dropped meanwhile", peer, was.failures,
			 (unsigned long long)was.dropped);
	/* Packets that waited on a connection that lost a race go out now. */
	dist_node_each_conn(n, adopt_from_loser, c);
	/* Last: what waited for the connection outside the node goes after
	 * what waited inside it. (c's memory, and so `peer`, stays valid if
	 * a listener closes it: closed connections are freed before the loop
	 * sleeps.) */
	tell_reach(n, peer, true);
}

/* A peer never reached that still fails this long after its first
 * failure is warned of: longer than nodes started together take to
 * come up. */
#define PEER_NEVER_UP_WARN_MS 5000

/* An attempt of ours that never came up: the peer is gone or not there
 * yet. Said once, when it starts failing; the next attempts back off. */
static void attempt_failed(struct dist_node *n, struct dist_conn *c, const char *why)
{
	const char *peer = dist_conn_peer(c);
	uint64_t dropped = dist_conn_pending_packets(c);
	uint32_t failures = peer_backoff_failed(&n->unreachable, peer, evloop_now_ms(n->settings.loop));
	peer_backoff_dropped(&n->unreachable, peer, dropped);
	/* A warning for a peer that was up and went. One never reached since
	 * this node started (a seed or member starting at the same time) is
	 * news at first, and a warning once it keeps failing. */
	bool was_up = node_set_contains(&n->ever_up, peer);
	enum log_level level = was_up ? LOG_WARN : LOG_INFO;
	if (!was_up && failures > 1 &&
	    peer_backoff_warn_due(&n->unreachable, peer, evloop_now_ms(n->settings.loop), PEER_NEVER_UP_WARN_MS))
		log_warn(n->settings.log, "cannot reach %s (%s) since this node started, after %u attempts; still "
			 "trying with back-off", peer, why, failures);
	else if (failures <= 1 && dropped > 0)
		log_at(n->settings.log, level, "cannot reach %s (%s): %llu messages to it dropped; trying again with "
		       "back-off, and saying nothing more until it answers", peer, why, (unsigned long long)dropped);
	else if (failures <= 1)
		log_at(n->settings.log, level, "cannot reach %s (%s); trying again with back-off, and saying nothing "
		       "more until it answers", peer, why);
	else
		log_debug(n->settings.log, "cannot reach %s (%s), attempt %u: %llu messages to it dropped", peer, why,
			  failures, (unsigned long long)dropped);
}

void dist_node_hook_closed(void *owner, struct dist_conn *c, const char *why)
{
	struct dist_node *n = owner;
	/* Not when another connection to the peer lives on: our attempt lost
	 * a simultaneous connect, and what it held went to the winner. */
	const char *peer = dist_conn_peer(c);
	bool failed = dist_conn_initiated(c) && !dist_conn_was_up(c) && peer[0] != '\0' &&
		      dist_node_find_conn(n, peer, c) == NULL;
	if (failed)
		attempt_failed(n, c, why);
	unlink_conn(n, c);
	if (peer[0] != '\0' && dist_node_find_conn(n, peer, c) == NULL) {
		if (dist_conn_was_up(c))
			tell_down(n, peer);
		else
			proc_table_forget_node(&n->procs, peer);
	}
	/* After the back-off is recorded: a listener that sends again at once
	 * is told -EHOSTUNREACH, not given a new attempt per message. */
	if (failed)
		tell_reach(n, peer, false);
}

void dist_node_free_dead(struct dist_node *n)
{
	for (; n->ndead > 0; n->ndead--)
		dist_conn_destroy(n->conns[n->conns_cap - n->ndead]);
}

