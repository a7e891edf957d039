/*
 * replica_home.c — a replicated store's home side (replicated_internal.h;
 * docs/architecture.md, "Replicated state").
 *
 * Writes. Each write of a shard homed here is numbered by this node's
 * store (its `seq`) and added to the stream of each of the shard's
 * replica regions: one replicate message per region per loop turn
 * (replica_home_flush, before the turn's output is written, or
 * sooner when it grows past STREAM_BATCH_BYTES), so the home's and the
 * replicas' commits run side by side and a busy turn costs a message, not
 * one per write. A replica region acknowledges the last number it has
 * committed of all this home sent it. The store reports a write written
 * (replicated_store.c) once the home has committed it and every complete
 * replica has acknowledged it: replica_home_bound says how far that is —
 * a complete replica whose region acknowledged A while the last write of
 * the shard sent to it is L > A holds back every write after A.
 *
 * Filling. A replica the coordinator adds holds nothing of the shard that
 * can be trusted. Chunk 0 of its fill goes at once (the replica forgets
 * what it held of the shard), and from then on it gets every write as the
 * others do; the shard's records follow in chunks read from the store
 * (bounded, at most FILL_WINDOW unacknowledged), once every write queued
 * before chunk 0 is committed, so each record is either in a chunk or sent
 * as a write after chunk 0 (the replica keeps the live one when both
 * come). After the last chunk's acknowledgement the coordinator hears
 * replica_filled, and counts the replica from its next set on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "etf/term.h"
#include "replication/replicated_internal.h"

/* A fill chunk ends once it holds this many bytes (a record is never
 * split); at most FILL_WINDOW of a fill are unacknowledged. */
#define FILL_CHUNK_BYTES (64 * 1024)
#define FILL_WINDOW 4
/* A stream's batch goes at once when it grows past this. */
#define STREAM_BATCH_BYTES (256 * 1024)

struct replica_stream {
	erlang_pid pid;  /* the replica region */
	uint64_t acked;  /* the last of this home's writes it has committed */
	uint64_t sent;   /* the last write added to it */
	/* Since when (the loop's clock, ms) it has had writes unacknowledged
	 * without acknowledging any; 0: it has none. */
	uint64_t behind_since;
	ei_x_buff batch; /* a replicate message being built (open) */
	struct replica_writes w;
	bool open;
};

/* A fill's scans carry this bit in their tokens (a move's do not) and the
 * fill's number, which finds its peer (a new set may reorder them). */
#define FILL_TOKEN_BIT (1ull << 63)
#define FILL_GEN_MASK 0x7fffffffu

struct replica_fill {
	uint32_t gen;          /* this fill's number, in its scans' tokens */
	uint32_t next_chunk;   /* chunks sent (0 starts the fill) */
	uint32_t acked;        /* chunks acknowledged, in order */
	bool last_sent;
	bool scan_in_flight;
	bool reported;         /* replica_filled went to the coordinator */
	uint64_t commit_needed; /* the records are read once this is committed */
	uint16_t scan_key_len; /* the last record sent: the next scan's start */
	char scan_key[STATE_STORE_KEY_MAX];
};

static struct shard_replicas *homed(const struct replicated_store *rs, uint32_t shard)
{
	struct shard_replicas *p = replicated_shard_known(rs, shard);
	return p != NULL && p->role == SHARD_REPLICA_HOME ? p : NULL;
}

static int find_peer(const struct replicated_store *rs, const struct shard_replicas *p, const erlang_pid *pid)
{
	int32_t region = replicated_region_find(rs, pid);
	for (uint8_t k = 0; region >= 0 && k < p->npeers; k++)
		if (p->peers[k].stream == region)
			return k;
	return -1;
}

/* The region of a peer, for messages and logs. */
static const erlang_pid *peer_pid(const struct replicated_store *rs, const struct replica_peer *peer)
{
	return replicated_region_pid(rs, peer->stream);
}

/* ---- streams ---- */

int32_t replicated_region_find(const struct replicated_store *rs, const erlang_pid *pid)
{
	for (uint32_t k = 0; k < rs->nstreams; k++)
		if (term_pid_equal(&rs->streams[k].pid, pid))
			return (int32_t)k;
	return -1;
}

int32_t replicated_region_of(struct replicated_store *rs, const erlang_pid *pid)
{
	int32_t k = replicated_region_find(rs, pid);
	if (k >= 0)
		return k;
	if (rs->nstreams == rs->streams_cap) {
		uint32_t cap = rs->streams_cap ? rs->streams_cap * 2 : 4;
		struct replica_stream *p = realloc(rs->streams, cap * sizeof *p);
		if (p == NULL)
			return -1;
		rs->streams = p;
		rs->streams_cap = cap;
	}
	rs->streams[rs->nstreams] = (struct replica_stream){.pid = *pid};
	return (int32_t)rs->nstreams++;
}

const erlang_pid *replicated_region_pid(const struct replicated_store *rs, int32_t k)
{
	return &rs->streams[k].pid;
}

/* Sends the stream's batch, if it has one. */
static void flush_stream(struct replicated_store *rs, struct replica_stream *st)
{
	if (!st->open)
		return;
	st->open = false;
	if (replica_msg_writes_end(&st->w, &st->batch) == 0)
		(void)rs->env.send(rs->env.arg, &st->pid, st->batch.buff, (size_t)st->batch.index);
	ei_x_free(&st->batch);
}

uint64_t replica_home_last_streamed(const struct replicated_store *rs)
{
	uint64_t last = 0;
	for (uint32_t k = 0; k < rs->nstreams; k++)
		if (rs->streams[k].sent > last)
			last = rs->streams[k].sent;
	return last;
}

void replica_home_flush(struct replicated_store *rs)
{
	for (uint32_t k = 0; k < rs->nstreams; k++)
		flush_stream(rs, &rs->streams[k]);
}

/* Adds a write to the stream's batch. Returns 0 or -ENOMEM (not added:
 * the batch so far is sent). */
static int stream_add(struct replicated_store *rs, struct replica_stream *st, uint32_t shard, uint64_t epoch, uint64_t seq,
		      const char *id, size_t id_len, const char *state, size_t state_len)
{
	if (!st->open) {
		if (ei_x_new(&st->batch) < 0)
			return -ENOMEM;
		if (replica_msg_writes_begin(&st->w, &st->batch, &rs->env.self) != 0) {
			ei_x_free(&st->batch);
			return -ENOMEM;
		}
		st->open = true;
	}
	int rc = replica_msg_writes_add(&st->w, &st->batch, shard, epoch, seq, id, id_len, state, state_len);
	if (rc == 0) {
		if (st->behind_since == 0)
			st->behind_since = evloop_now_ms(rs->env.loop);
		st->sent = seq;
	}
	if (rc != 0 || st->batch.index > STREAM_BATCH_BYTES)
		flush_stream(rs, st);
	return rc;
}

/* ---- filling ---- */

static void send_fill_chunk(struct replicated_store *rs, uint32_t shard, struct replica_peer *peer, const char *records,
			    size_t len, bool last)
{
	struct replica_fill *f = peer->fill;
	/* After the writes queued for it so far: the replica sees them in the
	 * order they were made. */
	flush_stream(rs, &rs->streams[peer->stream]);
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	if (replica_msg_encode_fill(&x, shard, rs->shards[shard]->epoch, f->next_chunk, last, &rs->env.self, records,
				    len) == 0 &&
	    rs->env.send(rs->env.arg, peer_pid(rs, peer), x.buff, (size_t)x.index) == 0) {
		f->next_chunk++;
		f->last_sent = last;
	}
	ei_x_free(&x);
}

/* Asks the store for the fill's next chunk, when its window has room and
 * the writes before chunk 0 are committed. */
static void pump(struct replicated_store *rs, uint32_t shard, uint8_t k)
{
	struct replica_peer *peer = &rs->shards[shard]->peers[k];
	struct replica_fill *f = peer->fill;
	if (f == NULL || f->last_sent || f->scan_in_flight || f->next_chunk - f->acked >= FILL_WINDOW)
		return;
	if (f->commit_needed > rs->committed_upto) {
		rs->fills_awaiting_commit = true; /* replica_home_on_committed */
		return;
	}
	uint64_t token = FILL_TOKEN_BIT | ((uint64_t)(f->gen & FILL_GEN_MASK) << 32) | shard;
	int rc = state_store_scan(rs->local_type, shard, f->scan_key, f->scan_key_len, FILL_CHUNK_BYTES, token);
	if (rc == 0) {
		f->scan_in_flight = true;
		return;
	}
	/* Without its records the replica never counts: the next set that
	 * names it incomplete starts its fill again. */
	log_at_shard(rs->env.log, LOG_WARN, shard, "region %s: shard %u: filling the replica on %s failed (%d)",
		     rs->env.name, shard, peer_pid(rs, peer)->node, rc);
	free(peer->fill);
	peer->fill = NULL;
}

static void start_fill(struct replicated_store *rs, uint32_t shard, uint8_t k)
{
	struct replica_peer *peer = &rs->shards[shard]->peers[k];
	struct replica_fill *f = calloc(1, sizeof *f);
	if (f == NULL)
		return; /* the next set tries again */
	f->gen = ++rs->fill_gen;
	peer->fill = f;
	/* Every write queued from here on is sent to it as well; the ones
	 * queued before are read from the store once committed. */
	f->commit_needed = state_store_last_queued(rs->local);
	const char nil = ERL_NIL_EXT;
	send_fill_chunk(rs, shard, peer, &nil, 1, false);
	if (f->next_chunk == 0) {
		free(f);
		peer->fill = NULL;
		return;
	}
	log_at_shard(rs->env.log, LOG_DEBUG, shard, "region %s: shard %u: filling its replica on %s", rs->env.name, shard,
		     peer_pid(rs, peer)->node);
	pump(rs, shard, k);
}

bool replica_home_is_fill_token(uint64_t token) { return (token & FILL_TOKEN_BIT) != 0; }

void replica_home_on_scanned(struct replicated_store *rs, uint64_t token, int status, const char *chunk, size_t len,
				    bool more, const char *last_key, size_t last_key_len)
{
	uint32_t shard = (uint32_t)token;
	uint32_t gen = (uint32_t)(token >> 32) & FILL_GEN_MASK;
	struct shard_replicas *p = homed(rs, shard);
	uint8_t k = 0;
	while (p != NULL && k < p->npeers && !(p->peers[k].fill != NULL && (p->peers[k].fill->gen & FILL_GEN_MASK) == gen))
		k++;
	if (p == NULL || k == p->npeers || !p->peers[k].fill->scan_in_flight)
		return; /* an answer to a fill that ended */
	struct replica_peer *peer = &p->peers[k];
	struct replica_fill *f = peer->fill;
	f->scan_in_flight = false;
	if (status != 0) {
		log_at_shard(rs->env.log, LOG_WARN, shard, "region %s: shard %u: reading records for the replica on %s "
			     "failed (%d)", rs->env.name, shard, peer_pid(rs, peer)->node, status);
		free(peer->fill);
		peer->fill = NULL;
		return;
	}
	if (last_key_len > 0 && last_key_len <= sizeof f->scan_key) {
		memcpy(f->scan_key, last_key, last_key_len);
		f->scan_key_len = (uint16_t)last_key_len;
	}
	send_fill_chunk(rs, shard, peer, chunk, len, !more);
	pump(rs, shard, k);
}

void replica_home_on_committed(struct replicated_store *rs)
{
	if (!rs->fills_awaiting_commit)
		return;
	rs->fills_awaiting_commit = false;
	for (uint32_t s = 0; s < rs->env.number_of_shards; s++) {
		struct shard_replicas *p = homed(rs, s);
		for (uint8_t k = 0; p != NULL && k < p->npeers; k++)
			if (p->peers[k].fill != NULL)
				pump(rs, s, k); /* one still waiting sets the flag again */
	}
}

/* replica_filled to the coordinator: the peer holds every record. */
static void tell_filled(struct replicated_store *rs, uint32_t shard, const struct replica_peer *peer)
{
	ei_x_buff x;
	if (ei_x_new(&x) != 0)
		return;
	if (replica_msg_encode_filled(&x, shard, peer_pid(rs, peer)) == 0)
		(void)rs->env.to_coordinator(rs->env.arg, x.buff, (size_t)x.index);
	ei_x_free(&x);
}

static void fill_acked(struct replicated_store *rs, uint32_t shard, struct replica_peer *peer, uint8_t k, uint64_t chunk)
{
	struct replica_fill *f = peer->fill;
	if (f == NULL || chunk != f->acked || f->acked >= f->next_chunk)
		return;
	f->acked++;
	if (f->last_sent && f->acked == f->next_chunk && !f->reported) {
		f->reported = true;
		log_at_shard(rs->env.log, LOG_DEBUG, shard, "region %s: shard %u: its replica on %s is filled",
			     rs->env.name, shard, peer_pid(rs, peer)->node);
		tell_filled(rs, shard, peer);
		return;
	}
	pump(rs, shard, k);
}

/* ---- the set ---- */

int replica_home_take(struct replicated_store *rs, uint32_t shard, uint64_t epoch, const erlang_pid *const *replicas,
			     const bool *complete, size_t n)
{
	struct shard_replicas *p = rs->shards[shard];
	int32_t regions[REPLICA_SETS_MAX];
	for (size_t e = 0; e < n && e < REPLICA_SETS_MAX; e++)
		if ((regions[e] = replicated_region_of(rs, replicas[e])) < 0)
			return -ENOMEM; /* a replica it could not name would not be waited for */
	struct replica_peer old[REPLICA_SETS_MAX];
	uint8_t nold = p->role == SHARD_REPLICA_HOME ? p->npeers : 0;
	memcpy(old, p->peers, sizeof old);
	p->role = SHARD_REPLICA_HOME;
	p->epoch = epoch;
	p->npeers = 0;
	for (size_t e = 0; e < n && p->npeers < REPLICA_SETS_MAX; e++) {
		struct replica_peer *peer = &p->peers[p->npeers];
		int was = -1;
		for (uint8_t k = 0; k < nold && was < 0; k++)
			if (old[k].stream == regions[e])
				was = k;
		if (was >= 0) {
			*peer = old[was];
			old[was].fill = NULL; /* taken */
		} else {
			/* Nothing of this shard sent to it yet: nothing outstanding. */
			*peer = (struct replica_peer){.stream = regions[e]};
		}
		peer->complete = complete[e];
		if (peer->complete && peer->fill != NULL) {
			free(peer->fill);
			peer->fill = NULL;
		}
		p->npeers++;
	}
	for (uint8_t k = 0; k < nold; k++)
		free(old[k].fill);
	for (uint8_t k = 0; k < p->npeers; k++) {
		struct replica_peer *peer = &p->peers[k];
		if (!peer->complete && peer->fill == NULL)
			start_fill(rs, shard, k);
		else if (!peer->complete && peer->fill->reported)
			/* Filled, but the set still counts it filling: the
			 * coordinator that heard may be gone, and a new one
			 * rebuilt the set from the reports. Said again. */
			tell_filled(rs, shard, peer);
	}
	return 0;
}

void replica_home_drop(struct replicated_store *rs, uint32_t shard)
{
	struct shard_replicas *p = homed(rs, shard);
	if (p == NULL)
		return;
	for (uint8_t k = 0; k < p->npeers; k++) {
		free(p->peers[k].fill);
		p->peers[k].fill = NULL;
	}
	p->npeers = 0;
	p->role = SHARD_REPLICA_NONE;
}

/* ---- writes and their acknowledgements ---- */

void replica_home_on_write(struct replicated_store *rs, uint32_t shard, uint64_t seq, const char *id, size_t id_len,
				  const char *state, size_t state_len)
{
	struct shard_replicas *p = homed(rs, shard);
	for (uint8_t k = 0; p != NULL && k < p->npeers; k++) {
		struct replica_peer *peer = &p->peers[k];
		/* A replica being filled gets the writes after its chunk 0. */
		if (!(peer->complete || (peer->fill != NULL && peer->fill->next_chunk > 0)))
			continue;
		/* Unsent (no memory), the write is still waited for: the reply
		 * gets {error, store_unavailable} at store_timeout_ms rather than
		 * claim a copy that does not exist. */
		peer->sent = seq;
		(void)stream_add(rs, &rs->streams[peer->stream], shard, p->epoch, seq, id, id_len, state,
				 state_len);
	}
}

uint64_t replica_home_bound(const struct replicated_store *rs)
{
	uint64_t bound = UINT64_MAX;
	for (uint32_t s = 0; s < rs->env.number_of_shards; s++) {
		const struct shard_replicas *p = homed(rs, s);
		for (uint8_t k = 0; p != NULL && k < p->npeers; k++) {
			const struct replica_peer *peer = &p->peers[k];
			if (!peer->complete || peer->sent == 0)
				continue;
			uint64_t acked = rs->streams[peer->stream].acked;
			if (acked < peer->sent && acked < bound)
				bound = acked;
		}
	}
	return bound;
}

void replica_home_on_reply(struct replicated_store *rs, const struct replica_msg *m)
{
	if (m->kind == RMSG_REPLICATED) {
		int32_t k = replicated_region_find(rs, &m->pid);
		struct replica_stream *st = k >= 0 ? &rs->streams[k] : NULL;
		if (st != NULL && m->seq > st->acked) {
			st->acked = m->seq;
			/* Progress: the clock starts again for what is left. */
			st->behind_since = st->acked >= st->sent ? 0 : evloop_now_ms(rs->env.loop);
		}
		return;
	}
	struct shard_replicas *p = homed(rs, m->shard);
	int k = p != NULL ? find_peer(rs, p, &m->pid) : -1;
	if (k >= 0 && m->kind == RMSG_FILL_ACK)
		fill_acked(rs, m->shard, &p->peers[k], (uint8_t)k, m->seq);
}

bool replica_home_on_refused(struct replicated_store *rs, const struct replica_msg *m)
{
	struct shard_replicas *p = homed(rs, m->shard);
	if (p == NULL || m->epoch <= p->epoch || find_peer(rs, p, &m->pid) < 0)
		return false;
	log_at_shard(rs->env.log, LOG_WARN, m->shard, "region %s: shard %u: its replica on %s knows a newer set (epoch "
		     "%llu, this home's %llu): it stops here", rs->env.name, m->shard, m->pid.node,
		     (unsigned long long)m->epoch, (unsigned long long)p->epoch);
	replica_home_drop(rs, m->shard);
	return true;
}

bool replica_home_lagging(const struct replicated_store *rs, uint32_t shard)
{
	const struct shard_replicas *p = homed(rs, shard);
	uint64_t now = evloop_now_ms(rs->env.loop);
	uint64_t lag = rs->env.store_timeout_ms / 5 > 100 ? rs->env.store_timeout_ms / 5 : 100;
	for (uint8_t k = 0; p != NULL && k < p->npeers; k++) {
		const struct replica_peer *peer = &p->peers[k];
		if (!peer->complete)
			continue;
		const struct replica_stream *st = &rs->streams[peer->stream];
		if (st->acked < peer->sent && st->behind_since != 0 && now - st->behind_since >= lag)
			return true;
	}
	return false;
}

bool replicated_store_peer_complete(const struct replicated_store *rs, uint32_t shard, const erlang_pid *peer)
{
	const struct shard_replicas *p = rs != NULL ? homed(rs, shard) : NULL;
	int k = p != NULL ? find_peer(rs, p, peer) : -1;
	return k >= 0 && p->peers[k].complete;
}

bool replicated_store_holds_all(const struct replicated_store *rs, uint32_t shard, const erlang_pid *home)
{
	const struct shard_replicas *p = rs != NULL ? replicated_shard_known(rs, shard) : NULL;
	return p != NULL && p->role == SHARD_REPLICA_COPY && p->complete && !p->filling && p->home >= 0 &&
	       p->home == replicated_region_find(rs, home);
}

bool replicated_store_names_other_home(const struct replicated_store *rs, uint32_t shard, const erlang_pid *pid)
{
	const struct shard_replicas *p = rs != NULL ? replicated_shard_known(rs, shard) : NULL;
	return p != NULL && p->home >= 0 && p->home != replicated_region_find(rs, pid);
}

void replica_home_free(struct replicated_store *rs)
{
	for (uint32_t k = 0; k < rs->nstreams; k++)
		if (rs->streams[k].open)
			ei_x_free(&rs->streams[k].batch);
	free(rs->streams);
	rs->streams = NULL;
	rs->nstreams = rs->streams_cap = 0;
}

void replica_home_free_shard(struct shard_replicas *p)
{
	if (p == NULL)
		return;
	for (uint8_t k = 0; k < p->npeers; k++)
		free(p->peers[k].fill);
	byte_set_clear(&p->written);
	free(p);
}
