/*
 * replica_copy.c — a replicated store's sets and its replica side
 * (replicated_internal.h; docs/architecture.md, "Replicated state").
 *
 * Sets. The coordinator tells every region each shard's set: its home,
 * its replicas and an epoch that only grows. A region named home takes
 * the replicas as its peers (replica_home.c), and a claim of the shard
 * that waited for that is done; a region that was the home of an older
 * set is fenced; a region named replica expects the home's writes.
 *
 * A replica's side. The home's writes and fill chunks are written to this
 * node's store as the region's own writes are (the writer thread commits
 * them in its next group), and acknowledged once committed: a home's
 * writes with one `replicated` for the last of them committed, whatever
 * their shards; a fill chunk with its own, to the home the shard's set
 * names then (home_gen: one owed to an earlier home is dropped).
 * Fencing: a write or chunk of an older epoch than the newest set this
 * region knows of the shard is refused (replica_refused), so a
 * home the coordinator replaced — paused, cut off — cannot change a copy
 * its successor relies on; one of a newer epoch is taken (the set saying
 * so may still be on its way). While a fill is under way, a chunk's record
 * of an id written live since chunk 0 is older than that write and is not
 * applied.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/byteorder.h"
#include "etf/term.h"
#include "entity/shard_state.h"
#include "replication/replicated_internal.h"

/* An acknowledgement sent once the store has committed up to `need`. */
struct replica_ack_due {
	struct replica_ack_due *next;
	uint64_t need;
	uint64_t value; /* replicated: the home's last write; fill_ack: the chunk */
	enum replica_msg_kind kind;
	uint32_t shard;    /* fill_ack */
	uint32_t home_gen; /* fill_ack */
	int32_t home;      /* replicated: the home's region (replicated_region_of) */
};

/* A region's part in a shard's newest set (as replicas_held says it), as
 * its store keeps it: a record of the epoch (8 bytes, big-endian) and the
 * part (1 byte, enum replica_role_held). */
#define PART_RECORD_BYTES 9

static enum replica_role_held part_of(const struct shard_replicas *p)
{
	switch (p->role) {
	case SHARD_REPLICA_HOME: return REPLICA_HELD_HOME;
	case SHARD_REPLICA_COPY: return p->complete && !p->filling ? REPLICA_HELD_COMPLETE : REPLICA_HELD_FILLING;
	default: return REPLICA_HELD_NONE;
	}
}

/* Writes the shard's part to the store if it changed: in order with the
 * writes, so after a crash the record says as much as the records do.
 * Without memory for it, the record stays as it was — older, which a
 * coordinator rebuilding the sets trusts less, never more. */
static void save_part(struct replicated_store *rs, uint32_t shard)
{
	struct shard_replicas *p = rs->shards[shard];
	enum replica_role_held part = part_of(p);
	p->restored = false; /* what this region knows now replaces what it read back */
	if (p->epoch == p->saved_epoch && part == p->saved_part)
		return;
	char rec[PART_RECORD_BYTES];
	be64_write(rec, p->epoch);
	rec[8] = (char)part;
	uint64_t seq;
	if (state_store_shard_meta_write(rs->local_type, shard, rec, sizeof rec, &seq) == 0) {
		p->saved_epoch = p->epoch;
		p->saved_part = (uint8_t)part;
	}
}

static void stop_filling(struct shard_replicas *p)
{
	p->filling = false;
	byte_set_clear(&p->written);
}

/* The home of the newest set heard of is `home` (unknown, -1, without
 * memory to name it: then nothing it sends is taken). */
static void set_home(struct replicated_store *rs, struct shard_replicas *p, const erlang_pid *home)
{
	int32_t k = replicated_region_of(rs, home);
	if (k != p->home) {
		p->home = k;
		p->home_gen++;
	}
}

/* This region was the shard's home and is not any more: a shard it
 * serves stops being served here (fenced), and a claim that waited for a
 * set naming it home is over (claimed, after the fence: it waited in
 * vain). */
static void lose_home(struct replicated_store *rs, uint32_t shard)
{
	struct shard_replicas *p = rs->shards[shard];
	bool was_home = p->role == SHARD_REPLICA_HOME;
	if (was_home)
		replica_home_drop(rs, shard);
	if ((was_home || p->claim_waiting) && rs->env.serves(rs->env.arg, shard))
		replicated_owe(rs, shard, SHARD_OWES_FENCE);
	if (p->claim_waiting) {
		p->claim_waiting = false;
		replicated_owe(rs, shard, SHARD_OWES_CLAIMED);
	}
}

/* ---- sets ---- */

struct members {
	erlang_pid pids[REPLICA_SETS_MAX];
	const erlang_pid *ptrs[REPLICA_SETS_MAX];
	bool complete[REPLICA_SETS_MAX];
	size_t n;
	const erlang_pid *me;
	bool me_listed, me_complete;
};

static int add_member(void *arg, const erlang_pid *replica, bool complete)
{
	struct members *m = arg;
	if (term_pid_equal(replica, m->me)) {
		m->me_listed = true;
		m->me_complete = complete;
	}
	if (m->n == REPLICA_SETS_MAX)
		return 0;
	m->pids[m->n] = *replica;
	m->ptrs[m->n] = &m->pids[m->n];
	m->complete[m->n] = complete;
	m->n++;
	return 0;
}

void replica_copy_on_set(struct replicated_store *rs, const struct replica_msg *m)
{
	struct shard_replicas *p = replicated_shard(rs, m->shard);
	if (p == NULL || m->epoch < p->epoch)
		return; /* no memory (the next set tries again), or an older set */
	struct members mem = {.me = &rs->env.self};
	if (replica_msg_each_member(m, add_member, &mem) != 0)
		return;
	if (term_pid_equal(&m->pid, &rs->env.self)) {
		stop_filling(p);
		set_home(rs, p, &rs->env.self);
		if (replica_home_take(rs, m->shard, m->epoch, mem.ptrs, mem.complete, mem.n) != 0) {
			/* It cannot wait for replicas it cannot name: no home. */
			log_at_shard(rs->env.log, LOG_ERROR, m->shard, "region %s: shard %u: out of memory taking its "
				     "replica set", rs->env.name, m->shard);
			lose_home(rs, m->shard);
			return;
		}
		save_part(rs, m->shard);
		if (p->claim_waiting) {
			p->claim_waiting = false;
			replicated_owe(rs, m->shard, SHARD_OWES_CLAIMED);
		}
		return;
	}
	lose_home(rs, m->shard);
	p->epoch = m->epoch;
	set_home(rs, p, &m->pid); /* kept whatever this region's part: only it may write */
	if (mem.me_listed) {
		p->role = SHARD_REPLICA_COPY;
		p->complete = mem.me_complete;
	} else {
		p->role = SHARD_REPLICA_NONE;
		p->complete = false;
		stop_filling(p);
	}
	save_part(rs, m->shard);
}

/* ---- a replica's side ---- */

static void send_reply(struct replicated_store *rs, const erlang_pid *to, enum replica_msg_kind kind, uint32_t shard,
		       uint64_t value)
{
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	if (replica_msg_encode_reply(&x, kind, shard, value, &rs->env.self) == 0)
		(void)rs->env.send(rs->env.arg, to, x.buff, (size_t)x.index);
	ei_x_free(&x);
}

/* Owes an acknowledgement once what is queued now is committed: `kind`
 * with `value` — replicated to `home`, or a fill chunk's to the shard's
 * home. */
static void owe_ack(struct replicated_store *rs, enum replica_msg_kind kind, uint64_t value, int32_t home, uint32_t shard)
{
	struct replica_ack_due *a = malloc(sizeof *a);
	if (a == NULL)
		return; /* a later acknowledgement covers a write; a chunk's is lost and its fill stalls */
	*a = (struct replica_ack_due){.need = state_store_last_queued(rs->local), .value = value, .kind = kind,
				      .shard = shard};
	if (kind == RMSG_REPLICATED)
		a->home = home;
	else
		a->home_gen = rs->shards[shard]->home_gen;
	if (rs->acks_tail)
		rs->acks_tail->next = a;
	else
		rs->acks_head = a;
	rs->acks_tail = a;
	if (a->need <= rs->committed_upto)
		replica_copy_on_committed(rs, 0); /* nothing to wait for */
}

/* The home of a run of `replicated` acknowledgements and the last of
 * them: only the last is sent. */
static void send_replicated(struct replicated_store *rs, const erlang_pid *home, uint64_t seq)
{
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	if (replica_msg_encode_replicated(&x, seq, &rs->env.self) == 0)
		(void)rs->env.send(rs->env.arg, home, x.buff, (size_t)x.index);
	ei_x_free(&x);
}

void replica_copy_on_committed(struct replicated_store *rs, int status)
{
	while (rs->acks_head && rs->acks_head->need <= rs->committed_upto) {
		struct replica_ack_due *a = rs->acks_head;
		rs->acks_head = a->next;
		if (rs->acks_head == NULL)
			rs->acks_tail = NULL;
		if (status != 0) {
			/* Not here: the home's replies time out, and this copy must
			 * not be counted on. */
			log_error(rs->env.log, "region %s: a commit of a home's writes failed (%d): they are not "
				  "acknowledged", rs->env.name, status);
		} else if (a->kind == RMSG_REPLICATED) {
			/* One for a run of them to one home: the last covers all. */
			const struct replica_ack_due *next = rs->acks_head;
			if (next == NULL || next->need > rs->committed_upto || next->kind != RMSG_REPLICATED ||
			    next->home != a->home)
				send_replicated(rs, replicated_region_pid(rs, a->home), a->value);
		} else {
			const struct shard_replicas *p = rs->shards[a->shard];
			if (p != NULL && p->role == SHARD_REPLICA_COPY && p->home_gen == a->home_gen && p->home >= 0)
				send_reply(rs, replicated_region_pid(rs, p->home), a->kind, a->shard, a->value);
		}
		free(a);
	}
}

/* Whether a home's write or chunk may be applied here. One of a newer
 * epoch than any set this region knows of the shard is taken as the set
 * naming this region replica (its message may still be on the way).
 * Otherwise it must come from the home of the newest set known — of an
 * older epoch too, as that home may not have heard of its newest set yet
 * — and is applied if that set counts this region a replica, skipped if
 * not (the home stops waiting for this region once it hears). From any
 * other member it is refused: that member is a home the coordinator
 * replaced, and must stop serving the shard. A region that was the home
 * stops serving it (lose_home). */
static bool accept_writes(struct replicated_store *rs, uint32_t shard, uint64_t epoch, const erlang_pid *from,
			  struct shard_replicas *p)
{
	if (epoch > p->epoch) {
		lose_home(rs, shard);
		p->epoch = epoch;
		p->role = SHARD_REPLICA_COPY;
		p->complete = false;
		set_home(rs, p, from);
		save_part(rs, shard);
		return p->home >= 0;
	}
	if (p->home >= 0 && p->home == replicated_region_find(rs, from))
		return p->role == SHARD_REPLICA_COPY;
	log_at_shard(rs->env.log, LOG_WARN, shard, "region %s: shard %u: writes from %s of epoch %llu refused "
		     "(the newest set known here, epoch %llu, names another home)", rs->env.name, shard, from->node,
		     (unsigned long long)epoch, (unsigned long long)p->epoch);
	send_reply(rs, from, RMSG_REFUSED, shard, p->epoch);
	return false;
}

struct apply_ctx {
	struct replicated_store *rs;
	const erlang_pid *from;
	uint32_t shard;
	struct shard_replicas *p;
	ei_x_buff x;
	bool from_fill; /* records of a fill chunk: an id written live since chunk 0 is skipped */
	/* replicate: the shard of the write before, and whether it was taken
	 * (a refusal is sent once per run of one shard's writes) */
	bool have_last;
	uint32_t last_shard;
	bool last_taken;
	uint64_t last_seq;
};

/* One record into this node's store (state without its version byte,
 * NULL: deleted). */
static int apply(struct apply_ctx *c, const char *id, size_t id_len, const char *state, size_t state_len)
{
	if (c->from_fill && byte_set_contains(&c->p->written, id, id_len))
		return 0;
	if (!c->from_fill && c->p->filling && byte_set_add(&c->p->written, id, id_len) != 0)
		return -ENOMEM;
	if (state != NULL) {
		c->x.index = 0;
		if (ei_x_encode_version(&c->x) < 0 || term_x_append_raw(&c->x, state, state_len) != 0)
			return -ENOMEM;
	}
	uint64_t seq;
	int rc = state_store_write(c->rs->local_type, c->shard, id, id_len, state ? c->x.buff : NULL,
				   state ? (size_t)c->x.index : 0, &seq);
	if (rc == 0)
		c->p->copied_seq = seq;
	return rc;
}

static int apply_write(void *arg, uint32_t shard, uint64_t epoch, uint64_t seq, const char *id, size_t id_len,
		       const char *state, size_t state_len)
{
	struct apply_ctx *c = arg;
	struct replicated_store *rs = c->rs;
	c->last_seq = seq;
	if (shard >= rs->env.number_of_shards)
		return 0;
	if (!c->have_last || shard != c->last_shard) {
		c->have_last = true;
		c->last_shard = shard;
		c->p = replicated_shard(rs, shard);
		c->last_taken = c->p != NULL && accept_writes(rs, shard, epoch, c->from, c->p);
	}
	if (!c->last_taken)
		return 0;
	c->shard = shard;
	return apply(c, id, id_len, state, state_len);
}

static int apply_record(void *arg, const char *id, size_t id_len, const char *state, size_t state_len)
{
	return apply(arg, id, id_len, state, state_len);
}

/* A home's writes, whatever their shards. */
void replica_copy_on_writes(struct replicated_store *rs, const struct replica_msg *m)
{
	struct apply_ctx c = {.rs = rs, .from = &m->pid};
	if (ei_x_new(&c.x) < 0)
		return; /* unacknowledged: the home's replies wait, then time out */
	int rc = replica_msg_each_write(m, apply_write, &c);
	ei_x_free(&c.x);
	if (rc != 0) {
		/* A write not in the store: nothing from this home may be
		 * acknowledged past it, so none of this message is. */
		log_error(rs->env.log, "region %s: writes from the home on %s not all applied (%d): not "
			  "acknowledged", rs->env.name, m->pid.node, rc);
		return;
	}
	int32_t home = replicated_region_of(rs, &m->pid);
	if (c.last_seq > 0 && home >= 0)
		owe_ack(rs, RMSG_REPLICATED, c.last_seq, home, 0);
}

/* A fill chunk of one shard. */
void replica_copy_on_fill(struct replicated_store *rs, const struct replica_msg *m)
{
	struct shard_replicas *p = replicated_shard(rs, m->shard);
	if (p == NULL || !accept_writes(rs, m->shard, m->epoch, &m->pid, p))
		return;
	int rc = 0;
	if (m->seq == 0) {
		/* What this node held of the shard is out of date: the fill
		 * brings what there is. */
		uint64_t seq;
		rc = state_store_delete_shard(rs->local_type, m->shard, &seq);
		if (rc == 0)
			p->copied_seq = seq;
		stop_filling(p);
		p->filling = rc == 0;
		p->next_chunk = 1;
		p->complete = false;
		save_part(rs, m->shard); /* before any of the fill's records */
	} else if (!p->filling || m->seq != p->next_chunk) {
		rc = -EPROTO; /* a chunk out of its fill's order */
	} else {
		struct apply_ctx c = {.rs = rs, .from = &m->pid, .shard = m->shard, .p = p, .from_fill = true};
		if (ei_x_new(&c.x) < 0)
			return;
		rc = shard_state_each(m->list, m->list_len, apply_record, &c);
		ei_x_free(&c.x);
		p->next_chunk++;
		if (m->last)
			stop_filling(p);
	}
	if (rc != 0) {
		/* Not acknowledged: the fill stalls, and the replica never
		 * counts. */
		log_at_shard(rs->env.log, LOG_WARN, m->shard, "region %s: shard %u: a fill chunk from %s not applied (%d)",
			     rs->env.name, m->shard, m->pid.node, rc);
		stop_filling(p);
		return;
	}
	owe_ack(rs, RMSG_FILL_ACK, m->seq, -1, m->shard);
}

int replicated_store_encode_report(const struct replicated_store *rs, ei_x_buff *x, bool name_set_homes)
{
	uint32_t n = rs->env.number_of_shards;
	uint32_t *shards = malloc(n * sizeof *shards);
	uint64_t *epochs = malloc(n * sizeof *epochs);
	enum replica_role_held *roles = malloc(n * sizeof *roles);
	const char **set_homes = malloc(n * sizeof *set_homes);
	size_t count = 0;
	int rc = -ENOMEM;
	for (uint32_t s = 0; shards && epochs && roles && set_homes && s < n; s++) {
		const struct shard_replicas *p = rs->shards[s];
		if (p == NULL || p->epoch == 0)
			continue;
		roles[count] = p->restored ? (enum replica_role_held)p->saved_part : part_of(p);
		/* The home a set read back from the store named is not kept:
		 * such a copy names none, and counts as before. */
		set_homes[count] = !p->restored && p->home >= 0 ? replicated_region_pid(rs, p->home)->node : NULL;
		shards[count] = s;
		epochs[count] = p->epoch;
		count++;
	}
	if (shards && epochs && roles && set_homes)
		rc = replica_msg_encode_held(x, &rs->env.self, shards, epochs, roles, name_set_homes ? set_homes : NULL,
					     count);
	free(shards);
	free(epochs);
	free(roles);
	free(set_homes);
	return rc;
}

static int restore_one(void *arg, uint32_t shard, const void *meta, size_t len)
{
	struct replicated_store *rs = arg;
	if (shard >= rs->env.number_of_shards || len != PART_RECORD_BYTES ||
	    ((const unsigned char *)meta)[8] > REPLICA_HELD_NONE)
		return 0; /* not this configuration's, or damaged: as if never heard of */
	struct shard_replicas *p = replicated_shard(rs, shard);
	if (p == NULL)
		return -ENOMEM;
	p->epoch = p->saved_epoch = be64_read(meta);
	p->saved_part = ((const unsigned char *)meta)[8];
	p->restored = true;
	return 0;
}

int replica_copy_restore(struct replicated_store *rs)
{
	return state_store_shard_meta_read(rs->local_type, restore_one, rs);
}

void replica_copy_free(struct replicated_store *rs)
{
	while (rs->acks_head) {
		struct replica_ack_due *a = rs->acks_head;
		rs->acks_head = a->next;
		free(a);
	}
	rs->acks_tail = NULL;
}
