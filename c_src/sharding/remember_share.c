/* remember_share.c — see remember_share.h. */
#include "sharding/remember_share.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/node_name.h"
#include "protocol/node_set.h"
#include "etf/entity_id.h"
#include "etf/shardnode_msg.h"
#include "etf/term.h"
#include "etf/term_encode.h"

/* Entries and bytes per message: keeps a message far under the default
 * max_message_bytes (64 MiB; a peer set much lower may refuse a batch),
 * and a big snapshot from holding up the loop for long. */
#define BATCH 1000
#define BATCH_BYTES (256 * 1024)

struct remember_share {
	struct remember_share_config cfg;
	char our_node[NODE_NAME_BUF];
	uint32_t impostors; /* messages naming another sender, ignored */
	ei_x_buff pending;     /* list elements {Shard, Live, Id}, no list header */
	size_t npending;
	struct evloop_timer flush_timer;
	struct node_set synced; /* members that were sent our shards' sets */
};

static int encode_entry(ei_x_buff *x, uint32_t shard, bool live, const char *id, size_t len)
{
	if (ei_x_encode_tuple_header(x, 3) < 0 || term_x_encode_uint(x, shard) < 0 ||
	    term_x_encode_atom(x, live ? "true" : "false") < 0)
		return -ENOMEM;
	return term_x_append_raw(x, id, len);
}

/* Sends the entries in `items` to `to`, or to every other member hosting
 * the type when `to` is NULL. */
static void send_entries(struct remember_share *rr, const char *to, const ei_x_buff *items, size_t n)
{
	ei_x_buff x;
	if (ei_x_new_with_version(&x) < 0)
		return;
	if (shardnode_msg_begin(&x, 4, "remembered") == 0 && term_x_encode_atom(&x, rr->our_node) == 0 &&
	    ei_x_encode_list_header(&x, (long)n) == 0 && term_x_append_raw(&x, items->buff, (size_t)items->index) == 0 &&
	    ei_x_encode_empty_list(&x) == 0) {
		if (to != NULL) {
			outlet_reg_send(&rr->cfg.out, &rr->cfg.from, rr->cfg.type_name, to, x.buff, (size_t)x.index);
		} else {
			const char *members[CLUSTER_MEMBERS_MAX];
			size_t m = rr->cfg.members_hosting(rr->cfg.members_arg, rr->cfg.type_name, members, CLUSTER_MEMBERS_MAX);
			for (size_t k = 0; k < m; k++)
				if (strcmp(members[k], rr->our_node) != 0)
					outlet_reg_send(&rr->cfg.out, &rr->cfg.from, rr->cfg.type_name, members[k], x.buff,
							(size_t)x.index);
		}
	}
	ei_x_free(&x);
}

static void flush(struct remember_share *rr)
{
	if (rr->npending > 0)
		send_entries(rr, NULL, &rr->pending, rr->npending);
	rr->pending.index = 0;
	rr->npending = 0;
	remember_flush(rr->cfg.store);
}

static void on_flush_timer(struct evloop *loop, void *arg)
{
	(void)loop;
	flush(arg);
}

static void queue(struct remember_share *rr, uint32_t shard, bool live, const char *id, size_t len)
{
	int before = rr->pending.index;
	if (encode_entry(&rr->pending, shard, live, id, len) != 0) {
		rr->pending.index = before;
		log_warn(rr->cfg.log, "remembered entities: out of memory; a change is not sent to the other members");
		return;
	}
	if (++rr->npending >= BATCH || rr->pending.index >= BATCH_BYTES)
		flush(rr);
	else if (!evloop_timer_armed(&rr->flush_timer))
		evloop_timer_start(rr->cfg.loop, &rr->flush_timer, 0);
}

void remember_share_started(void *arg, uint32_t shard, const char *id, size_t len)
{
	struct remember_share *rr = arg;
	if (remember_add(rr->cfg.store, shard, id, len) == 1)
		queue(rr, shard, true, id, len);
}

void remember_share_stopped(void *arg, uint32_t shard, const char *id, size_t len)
{
	struct remember_share *rr = arg;
	if (remember_remove(rr->cfg.store, shard, id, len) == 1)
		queue(rr, shard, false, id, len);
}

int remember_msg_apply(struct remember *store, const char *t, size_t len, const struct remember_msg_hooks *hooks,
		       char *from)
{
	static const struct remember_msg_hooks none = {0};
	if (hooks == NULL)
		hooks = &none;
	size_t i;
	long arity;
	from[0] = '\0';
	if (!shardnode_msg_head(t, &i, &arity) || arity != 4)
		return 0;
	if (!term_is_atom(t, i, "remembered"))
		return 0;
	term_skip(t, &i);
	int ii, count;
	if (term_get_atom_sized(t, &i, from, NODE_NAME_BUF)) {
		from[0] = '\0';
		return -EPROTO;
	}
	ii = (int)i;
	if (ei_decode_list_header(t, &ii, &count) < 0)
		return -EPROTO;
	i = (size_t)ii;
	ei_x_buff canon;
	if (ei_x_new(&canon) < 0)
		return -ENOMEM;
	int rc = 1;
	for (int k = 0; k < count && rc == 1; k++) {
		long shard;
		if (term_get_tuple(t, &i) != 3 || term_get_long(t, &i, &shard) || shard < 0 || shard > UINT32_MAX) {
			rc = -EPROTO;
			break;
		}
		bool live = term_is_atom(t, i, "true");
		if (!live && !term_is_atom(t, i, "false")) {
			rc = -EPROTO;
			break;
		}
		term_skip(t, &i);
		size_t id_at = i;
		term_skip(t, &i);
		canon.index = 0;
		if (i > len || entity_id_canonical(t + id_at, i - id_at, &canon) != 0) {
			rc = -EPROTO;
			break;
		}
		const char *id = canon.buff;
		size_t id_len = (size_t)canon.index;
		if (live && remember_add(store, (uint32_t)shard, id, id_len) >= 0 && hooks->live != NULL)
			hooks->live(hooks->arg, (uint32_t)shard, id, id_len);
		else if (!live && (hooks->hosts == NULL || !hooks->hosts(hooks->arg, (uint32_t)shard)))
			remember_remove(store, (uint32_t)shard, id, id_len);
		else if (!live && hooks->kept != NULL && remember_contains(store, (uint32_t)shard, id, id_len))
			hooks->kept(hooks->arg, (uint32_t)shard, id, id_len);
	}
	ei_x_free(&canon);
	return rc;
}

/* Whether a `remembered` message names `via`, the node it came from, as
 * its sender (anything else is left to remember_msg_apply). */
static bool names_its_sender(const char *t, const char *via, char *from)
{
	size_t i;
	long arity;
	if (!shardnode_msg_head(t, &i, &arity) || arity != 4 || !term_is_atom(t, i, "remembered"))
		return true;
	term_skip(t, &i);
	return node_name_decode(t, &i, from) == 0 && strcmp(from, via) == 0;
}

int remember_share_handle(struct remember_share *rr, const char *t, size_t len,
			    const struct remember_msg_hooks *hooks, const char *via)
{
	char from[NODE_NAME_BUF] = "";
	if (!names_its_sender(t, via, from)) {
		/* Anyone with the cookie could otherwise speak for a member. */
		if (rr->impostors++ < 5)
			log_warn(rr->cfg.log, "remembered entities: a message from %s naming %s as its sender "
				 "ignored", via, from[0] ? from : "no valid node name");
		return 1;
	}
	int rc = remember_msg_apply(rr->cfg.store, t, len, hooks, from);
	if (rc != 0)
		remember_flush(rr->cfg.store); /* the others' changes are logged too */
	if (rc < 0)
		log_warn(rr->cfg.log, "remembered entities: malformed message from %s; the rest of it is ignored",
			 from[0] ? from : "(unknown)");
	return rc;
}

void remember_share_announce(struct remember_share *rr, uint32_t shard, const char *id, size_t len)
{
	queue(rr, shard, true, id, len);
}

/* ---- snapshots for members that join ---- */

struct snapshot {
	struct remember_share *rr;
	const char *to;
	uint32_t shard;
	ei_x_buff items;
	size_t n;
	bool failed;
};

static void snapshot_entry(void *arg, const char *id, size_t len)
{
	struct snapshot *s = arg;
	if (s->failed)
		return;
	if (encode_entry(&s->items, s->shard, true, id, len) != 0) {
		s->failed = true;
		return;
	}
	if (++s->n == BATCH || s->items.index >= BATCH_BYTES) {
		send_entries(s->rr, s->to, &s->items, s->n);
		s->items.index = 0;
		s->n = 0;
	}
}

static void send_snapshot(struct remember_share *rr, const char *to, const uint32_t *shards, size_t n)
{
	struct snapshot s = {.rr = rr, .to = to};
	if (ei_x_new(&s.items) < 0)
		return;
	for (size_t k = 0; k < n && !s.failed; k++) {
		s.shard = shards[k];
		remember_each(rr->cfg.store, shards[k], snapshot_entry, &s);
	}
	if (!s.failed && s.n > 0)
		send_entries(rr, to, &s.items, s.n);
	if (s.failed)
		log_warn(rr->cfg.log, "remembered entities: out of memory sending the sets to %s", to);
	ei_x_free(&s.items);
}

void remember_share_sync(struct remember_share *rr, const uint32_t *shards, size_t n)
{
	const char *members[CLUSTER_MEMBERS_MAX];
	size_t m = rr->cfg.members_hosting(rr->cfg.members_arg, rr->cfg.type_name, members, CLUSTER_MEMBERS_MAX);
	struct node_set now;
	node_set_init(&now);
	flush(rr); /* changes first, so a snapshot is never older than them */
	for (size_t k = 0; k < m; k++) {
		if (strcmp(members[k], rr->our_node) == 0)
			continue;
		if (!node_set_contains(&rr->synced, members[k]))
			send_snapshot(rr, members[k], shards, n);
		if (node_set_add(&now, members[k]) < 0) {
			/* Out of memory: keep the old set, so the members sent a
			 * snapshot now get another at the next change, at worst. */
			node_set_free(&now);
			return;
		}
	}
	node_set_free(&rr->synced);
	rr->synced = now;
}

/* ---- life ---- */

struct remember_share *remember_share_new(const struct remember_share_config *cfg, int *err)
{
	struct remember_share *rr = calloc(1, sizeof *rr);
	if (rr == NULL || ei_x_new(&rr->pending) < 0) {
		free(rr);
		*err = -ENOMEM;
		return NULL;
	}
	rr->cfg = *cfg;
	snprintf(rr->our_node, sizeof rr->our_node, "%s", dist_node_name(cfg->node));
	node_set_init(&rr->synced);
	evloop_timer_init(&rr->flush_timer, on_flush_timer, rr);
	*err = 0;
	return rr;
}

void remember_share_free(struct remember_share *rr)
{
	if (rr == NULL)
		return;
	flush(rr);
	evloop_timer_stop(rr->cfg.loop, &rr->flush_timer);
	ei_x_free(&rr->pending);
	node_set_free(&rr->synced);
	free(rr);
}
