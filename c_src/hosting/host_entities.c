/*
 * host_entities.c — a region's entities run as processes on the host:
 * their messages (host_entities.h). Each live entity's record in its
 * shard (hosted_entity.h) holds the state it last completed with, its
 * process, and its mailbox: one message at the process, the others queued
 * in order behind it (remote_mailbox.h). A message goes to the host's
 * dispatcher with the state to start from when the entity has no process,
 * else straight to the process; its completion comes back here, the
 * changed state is kept (ops.keep: written with a store) and the reply
 * leaves through ops.answer, after the write's commit; then the next
 * queued message goes. `passivate` and `delete` wait their turn and are
 * done here, so they come after everything sent before them.
 *
 * The region counts the entities with a message at their process
 * (ops.in_flight): a hand-off waits for those to complete.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/byteorder.h"
#include "etf/entity_id.h"
#include "etf/phash2.h"
#include "etf/term.h"
#include "etf/term_encode.h"
#include "etf/term_print.h"
#include "hosting/host_entities_internal.h"
#include "hosting/host_msg.h"

static struct entity *find_entity(struct shard *s, const char *id, size_t id_len)
{
	return entity_table_find(&s->entities, id, id_len, entity_table_hash(id, id_len));
}

static void answer_atom(struct host_entities *h, uint32_t shard, struct remote_mailbox_item *it, const char *atom,
			bool error)
{
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	int rc = error ? term_x_error_atom(&x, atom) : term_x_encode_atom(&x, atom);
	if (term_x_whole_or_enomem(&x, 0, rc) == 0)
		h->cfg.ops.answer(h->cfg.ops.arg, shard, it, &x);
	ei_x_free(&x);
}

/* Answered and released: the message is done with. */
static void finish(struct host_entities *h, uint32_t shard, struct remote_mailbox_item *it, const char *atom,
		   bool error)
{
	answer_atom(h, shard, it, atom, error);
	h->cfg.ops.release(h->cfg.ops.arg, it);
}

void host_entities_forget_process_only(struct hosted_entity *he)
{
	if (he->has_pid) {
		he->retired = he->pid;
		he->has_retired = true;
	}
	he->has_pid = false;
}

/* This turn's batch for the host, or NULL: it takes none (each message
 * goes on its own). */
static ei_x_buff *batch_begin(struct host_entities *h)
{
	const struct region_host *host = h->cfg.host;
	return host->batch_begin != NULL ? host->batch_begin(host->arg) : NULL;
}

static void send_stop(struct host_entities *h, struct hosted_entity *he, const char *reason)
{
	if (!he->has_pid)
		return;
	erlang_pid to;
	hosted_pid_expand(&he->pid, host_entities_node(h), &to);
	ei_x_buff *b = batch_begin(h);
	if (b != NULL) {
		/* In the batch, after the messages sent to it before. */
		h->cfg.host->batch_end(h->cfg.host->arg, host_msg_encode_item_stop(b, &to, reason) == 0);
	} else {
		ei_x_buff x;
		if (ei_x_new(&x) == 0) {
			if (host_msg_encode_stop(&x, reason) == 0)
				(void)h->cfg.ops.send(h->cfg.ops.arg, &to, x.buff, (size_t)x.index);
			ei_x_free(&x);
		}
	}
	host_entities_forget_process_only(he);
}

/* The process ended (it stopped, crashed, or was told to): its successor
 * starts from the state last completed — with a store that is the stored
 * one; without, a stop forgets it, as a C entity's passivation does. */
static void forget_process(struct host_entities *h, struct hosted_entity *he, bool keep_state)
{
	host_entities_forget_process_only(he);
	if (!keep_state && !h->cfg.ops.stored(h->cfg.ops.arg))
		(void)hosted_entity_set_state(he, NULL, 0);
}

/* A batch's item for the entity's process: its pid from the head made
 * once. pid_len 0: the host's name is no atom ei can write, so no pid of
 * it can be encoded (-ENOMEM, as the encoders say of a message not
 * whole). */
static int encode_item_entity(struct host_entities *h, ei_x_buff *b, const struct hosted_pid *pid,
			      const struct remote_mailbox_item *it)
{
	if (h->pid_len == 0)
		return -ENOMEM;
	be32_write(h->pid_bytes + h->pid_len - 12, pid->num);
	be32_write(h->pid_bytes + h->pid_len - 8, pid->serial);
	be32_write(h->pid_bytes + h->pid_len - 4, pid->creation);
	return host_msg_encode_item_entity(b, h->pid_bytes, h->pid_len, it->seq, it->msg, it->msg_len);
}

/* Sends message `it` (in flight now) to the entity's process, or to the
 * dispatcher to start one. Returns 0, or -EHOSTUNREACH (no host to send
 * to) or -ENOMEM: it is then still in flight, for the caller to fail. */
static int send_in_flight(struct host_entities *h, const char *id, size_t id_len, struct hosted_entity *he,
			  struct remote_mailbox_item *it)
{
	erlang_pid to;
	if (!he->has_pid && !h->cfg.host->dispatcher(h->cfg.host->arg, &to))
		return -EHOSTUNREACH;
	it->sent_ns = evloop_now_ns(h->cfg.loop);
	ei_x_buff *b = batch_begin(h);
	if (b != NULL) {
		/* With the turn's others, to the dispatcher, which hands it on. */
		int rc = he->has_pid ? encode_item_entity(h, b, &he->pid, it)
				     : host_msg_encode_item_start(b, &h->cfg.region, h->cfg.type, id, id_len,
								  he->state, he->state_len, it->seq, it->msg,
								  it->msg_len);
		h->cfg.host->batch_end(h->cfg.host->arg, rc == 0);
		return rc;
	}
	if (he->has_pid)
		hosted_pid_expand(&he->pid, host_entities_node(h), &to);
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return -ENOMEM;
	int rc = he->has_pid ? host_msg_encode_entity(&x, it->seq, it->msg, it->msg_len)
			     : host_msg_encode_start(&x, &h->cfg.region, h->cfg.type, id, id_len, he->state,
						     he->state_len, it->seq, it->msg, it->msg_len);
	if (rc == 0)
		rc = h->cfg.ops.send(h->cfg.ops.arg, &to, x.buff, (size_t)x.index) == 0 ? 0 : -EHOSTUNREACH;
	ei_x_free(&x);
	return rc;
}

/* `passivate` or `delete` reached the front of the entity's mailbox: done
 * here. Returns true if the entity left the shard (nothing was queued
 * behind: `ent` is gone). */
static bool do_local(struct host_entities *h, struct shard *s, struct entity *ent, struct remote_mailbox_item *it,
		     bool delete)
{
	struct hosted_entity *he = host_entities_record(ent);
	const char *result = "ok";
	bool error = false;
	if (delete && h->cfg.ops.keep(h->cfg.ops.arg, s->id, it->id, it->id_len, NULL, 0) != 0) {
		result = "store_unavailable";
		error = true;
	}
	struct remote_mailbox_item *next = NULL;
	(void)remote_mailbox_complete(&he->mb, it->seq, &next);
	finish(h, s->id, it, result, error);
	if (next == NULL) {
		/* Nothing behind it: the entity stops for good (the observer
		 * hears it; its process is told). */
		h->cfg.ops.in_flight(h->cfg.ops.arg, s->id, HOST_FLIGHT_BACK);
		host_entities_set_stop_reason(h, delete ? "delete" : NULL);
		shard_stop_entity(s, entity_id(ent), ent->id_len);
		host_entities_set_stop_reason(h, NULL);
		return true;
	}
	/* Messages wait behind it: a new incarnation takes them. */
	send_stop(h, he, delete ? "delete" : "passivate");
	forget_process(h, he, false);
	if (delete)
		(void)hosted_entity_set_state(he, NULL, 0);
	return false;
}

/* Sends what is in flight for the entity now, doing `passivate` and
 * `delete` here as they come, until a message is at the process or the
 * mailbox is empty. A message that cannot be sent is answered
 * {error, host_unavailable} and the next one tried. */
static void pump(struct host_entities *h, struct shard *s, struct entity *ent)
{
	for (;;) {
		struct hosted_entity *he = host_entities_record(ent);
		struct remote_mailbox_item *it = he->mb.in_flight;
		if (it == NULL)
			return;
		if (it->kind == HOSTED_PASSIVATE || it->kind == HOSTED_DELETE) {
			if (do_local(h, s, ent, it, it->kind == HOSTED_DELETE))
				return;
			continue;
		}
		int rc = send_in_flight(h, entity_id(ent), ent->id_len, he, it);
		if (rc == 0)
			return;
		struct remote_mailbox_item *next = NULL;
		(void)remote_mailbox_complete(&he->mb, it->seq, &next);
		finish(h, s->id, it, rc == -ENOMEM ? "enomem" : "host_unavailable", true);
		if (next == NULL)
			h->cfg.ops.in_flight(h->cfg.ops.arg, s->id, HOST_FLIGHT_BACK);
	}
}

void host_entities_deliver(struct host_entities *h, struct shard *s, struct remote_mailbox_item *it)
{
	struct entity *ent = find_entity(s, it->id, it->id_len);
	if (ent != NULL && it->kind == HOSTED_WAKE &&
	    (host_entities_record(ent)->has_pid || host_entities_record(ent)->mb.in_flight != NULL)) {
		h->cfg.ops.release(h->cfg.ops.arg, it); /* its process runs, or is being started */
		return;
	}
	if (ent == NULL) {
		/* Not live: passivate has nothing to stop, delete only the
		 * stored state; anything else starts the entity (its stored
		 * state, if any, was loaded first). */
		if (it->kind == HOSTED_PASSIVATE || it->kind == HOSTED_DELETE) {
			bool failed = it->kind == HOSTED_DELETE &&
				      h->cfg.ops.keep(h->cfg.ops.arg, s->id, it->id, it->id_len, NULL, 0) != 0;
			finish(h, s->id, it, failed ? "store_unavailable" : "ok", failed);
			return;
		}
		if (shard_start_entity(s, it->id, it->id_len, (uint32_t)evloop_now_ms(h->cfg.loop)) != 0 ||
		    (ent = find_entity(s, it->id, it->id_len)) == NULL) {
			finish(h, s->id, it, "enomem", true);
			return;
		}
	}
	struct hosted_entity *he = host_entities_record(ent);
	he->ops = &h->entity_ops;
	/* The most recent now; the limit may passivate another (an idle one:
	 * host_entities_idle). */
	shard_touch_entity(s, ent, (uint32_t)evloop_now_ms(h->cfg.loop));
	if (remote_mailbox_offer(&he->mb, it)) {
		h->cfg.ops.in_flight(h->cfg.ops.arg, s->id, HOST_FLIGHT_SENT);
		pump(h, s, ent);
	}
}

/* ---- what the host sends ---- */

/* Where the entity a completion or crash report names is looked for: its
 * id's canonical bytes (at `off` in the buffer they were written to), its
 * shard and its table hash. */
struct located {
	size_t off, len;
	uint32_t shard, hash;
};

/* Appends the canonical form of the id of report `hm` to `ids` and fills
 * *at. Returns false (`ids` as it was) when the id is none: the report
 * names no entity. */
static bool locate(const struct host_entities *h, const struct host_msg *hm, ei_x_buff *ids, struct located *at)
{
	int base = ids->index;
	if (entity_id_canonical(hm->id, hm->id_len, ids) != 0 ||
	    phash2_range(ids->buff + base, (size_t)(ids->index - base), h->cfg.number_of_shards, &at->shard) != 0) {
		ids->index = base;
		return false;
	}
	at->off = (size_t)base;
	at->len = (size_t)(ids->index - base);
	at->hash = entity_table_hash(ids->buff + base, at->len);
	return true;
}

/* The shard of *at if it is hosted here, else NULL. */
static struct shard *shard_of(struct host_entities *h, const struct located *at)
{
	struct shard *s = h->cfg.ops.shard_at(h->cfg.ops.arg, at->shard);
	return s != NULL && h->cfg.ops.serves(h->cfg.ops.arg, at->shard) ? s : NULL;
}

/* The entity *at names, in a shard hosted here (*s); NULL if there is
 * none (the shard moved on, the entity stopped). */
static struct entity *find_located(struct host_entities *h, const ei_x_buff *ids, const struct located *at,
				   struct shard **s)
{
	*s = shard_of(h, at);
	return *s != NULL ? entity_table_find(&(*s)->entities, ids->buff + at->off, at->len, at->hash) : NULL;
}

/* Whether `pid` is not the entity's process now (another, or the one it
 * ended, or one not on the host): what it sends is late. Before the first
 * completion any process of the host but the ended one is taken: the
 * dispatcher starts it. */
static bool from_another_process(const struct host_entities *h, const struct hosted_entity *he,
				 const erlang_pid *pid)
{
	const char *host = host_entities_node(h);
	if (he->has_pid)
		return !hosted_pid_is(&he->pid, pid, host);
	return strcmp(pid->node, host) != 0 || (he->has_retired && hosted_pid_is(&he->retired, pid, host));
}

/* The changed state, kept (with a store, written: the reply waits for its
 * commit). Returns 0, or -ENOMEM / the store's error: the change is not
 * kept, so the process that has it must end. */
static int keep_state(struct host_entities *h, uint32_t shard, const char *id, size_t id_len,
		      struct hosted_entity *he, const struct host_msg *hm)
{
	if (hm->state == NULL)
		return 0;
	int rc = h->cfg.ops.keep(h->cfg.ops.arg, shard, id, id_len, hm->state, hm->state_len);
	if (rc == 0)
		rc = hosted_entity_set_state(he, hm->state, hm->state_len);
	return rc;
}

/* A completion: the state kept, the reply sent, the next message on. */
static void on_done(struct host_entities *h, uint32_t shard, struct shard *s, struct entity *ent,
		    const struct host_msg *hm)
{
	struct hosted_entity *he = host_entities_record(ent);
	if (from_another_process(h, he, &hm->pid))
		return; /* from a process this entity no longer has */
	if (hm->seq == 0) {
		/* Its own doing (handle_info): a changed state, or a stop. */
		if (he->has_pid && keep_state(h, shard, entity_id(ent), ent->id_len, he, hm) != 0)
			send_stop(h, he, "store_unavailable");
		if (hm->stop) {
			forget_process(h, he, false);
			/* A message sent to it meanwhile was never handled: the
			 * next incarnation takes it. */
			if (he->mb.in_flight != NULL)
				pump(h, s, ent);
			else
				shard_stop_entity(s, entity_id(ent), ent->id_len);
		}
		return;
	}
	struct remote_mailbox_item *next = NULL;
	struct remote_mailbox_item *it = remote_mailbox_complete(&he->mb, hm->seq, &next);
	if (it == NULL)
		return; /* late, or made up */
	if (!he->has_pid) {
		hosted_pid_keep(&he->pid, &hm->pid);
		he->has_pid = true;
	}
	ent->last_active = (uint32_t)evloop_now_ms(h->cfg.loop);
	if (h->cfg.metrics) {
		uint64_t now = evloop_now_ns(h->cfg.loop);
		histogram_observe(&h->process_latency, now > it->sent_ns ? now - it->sent_ns : 0);
	}
	ei_x_buff spare, *reply = scratch_get(&h->reply_buf, &spare);
	if (reply != NULL) {
		int rc = keep_state(h, shard, it->id, it->id_len, he, hm);
		if (rc != 0) {
			/* The change cannot be kept: the process that has it ends,
			 * and the next message starts from the last kept state. */
			send_stop(h, he, "store_unavailable");
			(void)term_x_whole_or_enomem(
				reply, 0, term_x_error_atom(reply, rc == -ENOMEM ? "enomem" : "store_unavailable"));
		} else {
			(void)term_x_whole_or_enomem(reply, 0, term_x_append_raw(reply, hm->reply, hm->reply_len));
		}
		h->cfg.ops.answer(h->cfg.ops.arg, shard, it, reply);
		scratch_put(&h->reply_buf, reply);
	}
	h->cfg.ops.release(h->cfg.ops.arg, it);
	if (hm->stop)
		forget_process(h, he, false);
	if (next != NULL) {
		pump(h, s, ent);
		return;
	}
	h->cfg.ops.in_flight(h->cfg.ops.arg, shard, HOST_FLIGHT_BACK);
	if (hm->stop)
		shard_stop_entity(s, entity_id(ent), ent->id_len); /* the process is gone already */
}

/* The one record of the crash (the host writes none): the id and reason
 * as the BEAM prints them, an exception's stack in the reason. */
static void log_crash(struct host_entities *h, const struct host_msg *hm)
{
	char *id = NULL, *why = NULL;
	size_t i = 0, j = 0;
	(void)term_print(hm->id, &i, 200, &id);
	(void)term_print(hm->reply, &j, 1000, &why);
	log_warn(h->cfg.log, "entity %s of %s crashed: %s", id ? id : "?", h->cfg.name, why ? why : "?");
	free(id);
	free(why);
}

struct remote_mailbox_item *host_entities_crashed(struct host_entities *h, uint32_t shard, struct hosted_entity *he,
					      const char *reason, size_t reason_len, bool *had)
{
	forget_process(h, he, true);
	struct remote_mailbox_item *next = NULL;
	struct remote_mailbox_item *it = remote_mailbox_fail(&he->mb, &next);
	*had = it != NULL;
	if (it == NULL)
		return NULL; /* it ended between messages: the next one restarts it */
	ei_x_buff x;
	if (ei_x_new(&x) == 0) {
		int rc = term_x_error_tagged_raw(&x, "entity_crashed", reason, reason_len);
		if (term_x_whole_or_enomem(&x, 0, rc) == 0)
			h->cfg.ops.answer(h->cfg.ops.arg, shard, it, &x);
		ei_x_free(&x);
	}
	h->cfg.ops.release(h->cfg.ops.arg, it);
	return next;
}

/* The entity's process ended abnormally: the message it had is answered
 * {error, {entity_crashed, Reason}}, the next one starts it again from the
 * state last completed. */
static void on_crashed(struct host_entities *h, uint32_t shard, struct shard *s, struct entity *ent,
		       const struct host_msg *hm)
{
	struct hosted_entity *he = host_entities_record(ent);
	if (hm->has_pid && from_another_process(h, he, &hm->pid))
		return; /* an older process's */
	if (!hm->has_pid && he->has_pid)
		return; /* a start that failed, but this entity's process runs */
	log_crash(h, hm);
	bool had = false;
	struct remote_mailbox_item *next = host_entities_crashed(h, shard, he, hm->reply, hm->reply_len, &had);
	if (!had)
		return;
	if (next != NULL)
		pump(h, s, ent);
	else
		h->cfg.ops.in_flight(h->cfg.ops.arg, shard, HOST_FLIGHT_BACK);
}

void host_entities_end_waited(struct host_entities *h, uint32_t shard)
{
	if (h->ending_since[shard] == 0)
		return;
	h->ending_since[shard] = 0;
	h->cfg.ops.ended(h->cfg.ops.arg, shard);
}

/* Whether report `hm` (decoded with result rc) names an entity: a
 * completion or a crash report. */
static bool names_entity(const struct host_msg *hm, int rc)
{
	return rc == 1 && (hm->kind == HOST_MSG_DONE || hm->kind == HOST_MSG_CRASHED);
}

/* One message of the host's (a batch's, or sent on its own); `at` where
 * its entity is looked for when names_entity (NULL: its id is none).
 * Its entity's shard to *shard, UINT32_MAX when it names none here. */
static void handle_one(struct host_entities *h, const struct host_msg *hm, int rc, const ei_x_buff *ids,
		       const struct located *at, uint32_t *shard)
{
	*shard = UINT32_MAX;
	if (rc == 1 && hm->kind == HOST_MSG_ENDED) {
		if (hm->seq < h->cfg.number_of_shards)
			host_entities_end_waited(h, (uint32_t)hm->seq);
		return;
	}
	if (!names_entity(hm, rc)) {
		log_debug(h->cfg.log, "region %s: a malformed message from the host dropped", h->cfg.name);
		return;
	}
	struct shard *sh = NULL;
	struct entity *ent = at != NULL && ids != NULL ? find_located(h, ids, at, &sh) : NULL;
	if (ent == NULL)
		return; /* the shard or the entity is gone: late */
	if (hm->kind == HOST_MSG_DONE)
		on_done(h, at->shard, sh, ent, hm);
	else
		on_crashed(h, at->shard, sh, ent, hm);
	*shard = at->shard;
}

/* A batch's reports are taken AHEAD_CHUNK at a time: all of a chunk are
 * read, then memory is asked for what each will touch, a step for all at
 * a time (its entity's table slot; the entity, found through that slot;
 * the message at its process), then they are handled in order. Each
 * look-up would otherwise wait for its cache misses, three or so, in turn
 * (a batch of a loop turn holds a few reports, not hundreds); this way a
 * chunk's misses of a step overlap. Only hints: what handling a report
 * changes (an entity stopped, a table grown) costs a wasted hint, never a
 * wrong result, as each report is looked up again when handled. */
#define AHEAD_CHUNK 16

struct ahead {
	struct host_msg hm;
	int rc;
	bool located;
	struct located at;
};

/* The bytes of a hosted entity's block the handling of its completion
 * reads: the table's header, the record, the id after it. */
#define HOSTED_ENTITY_BYTES (sizeof(struct entity) + sizeof(struct hosted_entity) + 16)

/* Step `step` (0, 1, 2) of the hints for report *a (its entity's slot,
 * the entity, the message at its process); nothing for a report that
 * names no entity or one of a shard not hosted here. */
static void hint(struct host_entities *h, const ei_x_buff *ids, const struct ahead *a, int step)
{
	if (!a->located)
		return;
	struct shard *s = shard_of(h, &a->at);
	if (s == NULL)
		return;
	if (step == 0) {
		entity_table_prefetch_slot(&s->entities, a->at.hash);
	} else if (step == 1) {
		entity_table_prefetch_entity(&s->entities, a->at.hash, HOSTED_ENTITY_BYTES);
	} else {
		struct entity *ent = entity_table_find(&s->entities, ids->buff + a->at.off, a->at.len, a->at.hash);
		const struct remote_mailbox_item *it = ent != NULL ? host_entities_record(ent)->mb.in_flight : NULL;
		if (it != NULL) {
			/* The item, its id, and the end of its message, where the
			 * region's record keeps what the reply goes to (its
			 * sender's node name, region_internal.h's struct pending). */
			__builtin_prefetch(it);
			__builtin_prefetch(it->id);
			__builtin_prefetch(it->msg + it->msg_len);
		}
	}
}

static void handle_batch(struct host_entities *h, const struct host_msg *batch, ei_x_buff *ids,
			 void (*settled)(void *arg, uint32_t shard), void *arg)
{
	struct host_msg_batch b;
	struct ahead chunk[AHEAD_CHUNK];
	bool more = true;
	host_msg_batch_begin(&b, batch->items, batch->items_len);
	while (more) {
		size_t n = 0;
		while (n < AHEAD_CHUNK && (more = host_msg_batch_decode_next(&b, &chunk[n].hm, &chunk[n].rc))) {
			struct ahead *a = &chunk[n++];
			a->located = ids != NULL && names_entity(&a->hm, a->rc) && locate(h, &a->hm, ids, &a->at);
		}
		for (int step = 0; step < 3; step++)
			for (size_t k = 0; k < n; k++)
				hint(h, ids, &chunk[k], step);
		for (size_t k = 0; k < n; k++) {
			uint32_t shard;
			handle_one(h, &chunk[k].hm, chunk[k].rc, ids, chunk[k].located ? &chunk[k].at : NULL, &shard);
			if (shard != UINT32_MAX)
				settled(arg, shard);
		}
	}
}

bool host_entities_handle(struct host_entities *h, const char *term, size_t len,
			  void (*settled)(void *arg, uint32_t shard), void *arg)
{
	struct host_msg hm;
	int rc = host_msg_decode(term, len, &hm);
	if (rc == 0)
		return false;
	/* NULL when out of memory: no report's entity is found then, as if
	 * late; the others (a shard's processes ended) are still taken. */
	ei_x_buff spare, *ids = scratch_get(&h->canon_buf, &spare);
	if (rc == 1 && hm.kind == HOST_MSG_BATCH) {
		handle_batch(h, &hm, ids, settled, arg);
	} else {
		struct located at;
		bool located = ids != NULL && names_entity(&hm, rc) && locate(h, &hm, ids, &at);
		uint32_t shard;
		handle_one(h, &hm, rc, ids, located ? &at : NULL, &shard);
		if (shard != UINT32_MAX)
			settled(arg, shard);
	}
	if (ids != NULL)
		scratch_put(&h->canon_buf, ids);
	return true;
}

/* ---- a shard that leaves ---- */

/* Appends the drained mailbox `it` (remote_mailbox_drain's list) to t. */
static void take_drained(struct take_back *t, struct remote_mailbox_item *it)
{
	while (it != NULL) {
		struct remote_mailbox_item *following = it->next;
		it->next = NULL;
		if (t->tail)
			t->tail->next = it;
		else
			t->head = it;
		t->tail = it;
		t->n++;
		it = following;
	}
}

void host_entities_take_entity_back(struct entity *ent, void *take_back)
{
	take_drained(take_back, remote_mailbox_drain(&host_entities_record(ent)->mb));
}

void host_entities_take_back(struct host_entities *h, uint32_t shard)
{
	struct shard *s = h->cfg.ops.shard_at(h->cfg.ops.arg, shard);
	if (s == NULL)
		return;
	struct take_back t = {0};
	entity_table_each(&s->entities, host_entities_take_entity_back, &t);
	h->cfg.ops.in_flight(h->cfg.ops.arg, shard, HOST_FLIGHT_ALL_BACK);
	if (t.n > 0)
		h->cfg.ops.give_back(h->cfg.ops.arg, shard, t.head, t.n);
}

void host_entities_set_stop_reason(struct host_entities *h, const char *reason) { h->stop_reason = reason; }

bool host_entities_idle(const struct entity *e)
{
	const struct hosted_entity *he = (const struct hosted_entity *)(const void *)e->data;
	return !remote_mailbox_busy(&he->mb) && he->mb.head == NULL;
}

const struct histogram *host_entities_process_latency(const struct host_entities *h) { return &h->process_latency; }

/* hosted_entity_ops.stopped: the entity leaves its shard. Its process is
 * told to end; messages still in its mailbox (an idle sweep that came
 * while one was out, a shard that stops) go back to the front of the
 * shard's buffer to start a new incarnation, or, once the region stopped,
 * are refused as the buffer's are (ops.give_back). */
static void entity_stopped(void *arg, struct hosted_entity *he)
{
	struct host_entities *h = arg;
	const char *reason = h->cfg.ops.stopped(h->cfg.ops.arg) ? "shutdown"
			     : h->stop_reason                   ? h->stop_reason
								: "passivate";
	send_stop(h, he, reason);
	bool busy = remote_mailbox_busy(&he->mb);
	struct remote_mailbox_item *it = remote_mailbox_drain(&he->mb);
	if (it == NULL)
		return;
	uint32_t shard = it->shard;
	if (busy)
		h->cfg.ops.in_flight(h->cfg.ops.arg, shard, HOST_FLIGHT_BACK);
	struct take_back t = {0};
	take_drained(&t, it);
	h->cfg.ops.give_back(h->cfg.ops.arg, shard, t.head, t.n);
}

/* ---- life ---- */

struct host_entities *host_entities_new(const struct host_entities_config *cfg, int *err)
{
	struct host_entities *h = calloc(1, sizeof *h);
	if (h == NULL || (h->ending_since = calloc(cfg->number_of_shards ? cfg->number_of_shards : 1,
						   sizeof *h->ending_since)) == NULL) {
		free(h);
		*err = -ENOMEM;
		return NULL;
	}
	h->cfg = *cfg;
	/* pid_bytes has room for the longest atom a node name can be. */
	erlang_pid any;
	hosted_pid_expand(&(struct hosted_pid){0}, host_entities_node(h), &any);
	int n = 0;
	if (ei_encode_pid(h->pid_bytes, &n, &any) == 0)
		h->pid_len = (size_t)n;
	scratch_init(&h->canon_buf);
	scratch_init(&h->reply_buf);
	h->entity_ops = (struct hosted_entity_ops){.stopped = entity_stopped, .arg = h};
	return h;
}

void host_entities_free(struct host_entities *h)
{
	if (h == NULL)
		return;
	scratch_free(&h->canon_buf);
	scratch_free(&h->reply_buf);
	free(h->ending_since);
	free(h);
}
