/* state_lmdb.c — see state_lmdb.h. */
#include "store/state_lmdb.h"

#include <errno.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/byteorder.h"
#include "base/node_limits.h"
#include "store/state_lmdb_records.h"
#include "store/store_files.h"

/* The map is reserved address space, not memory or disk: the file grows
 * with what it holds. 64 GiB of entity states is far beyond one node. */
#define MAP_SIZE ((size_t)64 << 30)

/* Named databases the environment can hold: a type's handle stays open
 * for the environment's life, so types opened and closed in turn need more
 * than the NODE_TYPES_MAX open at once. */
/* Committed write ops kept for the loop to fill again, at most. */
#define SPENT_MAX 8192
#define DBS_MAX (4 * NODE_TYPES_MAX)

/* Commit outcomes waiting for the loop; consecutive ones with the same
 * status merge, so the ring fills only with alternating failures. */
#define RESULTS_MAX 64

struct commit_result {
	uint64_t upto;
	int status; /* 0 or -errno */
	int mdb_rc; /* LMDB's own code, for the log */
};

struct state_lmdb_type {
	struct state_store_type base; /* first: a state_store_type is one of these */
	struct state_lmdb *s;
	bool in_use;
	uint32_t index;
	uint32_t gen; /* bumped at each open: answers to a closed one are dropped */
	MDB_dbi dbi;
	MDB_dbi meta_dbi; /* the type's shards' own records (state_lmdb_shard_meta_write) */
	state_store_written_fn written;
	state_store_loaded_fn loaded;
	state_store_scanned_fn scanned;
	void *arg;
	char name[TYPE_NAME_BUF];
};

struct state_lmdb {
	struct state_store base; /* first: a state_store is one of these */
	MDB_env *env;
	struct evloop *loop;
	const struct logger *log;
	int lock_fd, event_fd;
	bool threads_started;
	pthread_t writer, reader;
	uint64_t last_queued; /* written by the loop under mu; the writer reads it under mu */
	struct write_ops ops;  /* the loop's alone: ops to fill again */
	struct state_lmdb_type types[NODE_TYPES_MAX];

	/* Shared with the threads, under mu. */
	pthread_mutex_t mu;
	pthread_cond_t writes_cv, loads_cv, results_cv;
	bool stopping;
	uint64_t taken; /* writes the writer has taken: the last one's number */
	struct write_op *writes, **writes_tail;
	/* Committed ops the writer hands back (at most SPENT_MAX), for the
	 * loop to fill again: they move to `ops` as a write is queued. */
	struct write_ops spent;
	struct load_op *loads, **loads_tail;
	struct load_op *answers, **answers_tail;
	struct commit_result results[RESULTS_MAX];
	unsigned results_head, results_count;
};

static void wake_loop(struct state_lmdb *s)
{
	uint64_t one = 1;
	/* Can only fail with the counter at its maximum: the loop is woken
	 * already. */
	ssize_t w = write(s->event_fd, &one, sizeof one);
	(void)w;
}

/* ---- the writer thread ---- */

/* Reports a commit to the loop. Called with mu held. */
static void push_result(struct state_lmdb *s, uint64_t upto, int mdb_rc)
{
	int status = state_lmdb_errno(mdb_rc);
	for (;;) {
		if (s->results_count > 0) {
			struct commit_result *last =
				&s->results[(s->results_head + s->results_count - 1) % RESULTS_MAX];
			if (last->status == status) {
				last->upto = upto;
				break;
			}
		}
		if (s->results_count < RESULTS_MAX) {
			s->results[(s->results_head + s->results_count) % RESULTS_MAX] =
				(struct commit_result){.upto = upto, .status = status, .mdb_rc = mdb_rc};
			s->results_count++;
			break;
		}
		if (s->stopping)
			return; /* nobody will read it: every type is closed */
		pthread_cond_wait(&s->results_cv, &s->mu);
	}
	wake_loop(s);
}

_Static_assert(offsetof(struct write_op, next) == 0, "a queue's tail points at an op's first field");

static void *writer_main(void *arg)
{
	struct state_lmdb *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (s->writes == NULL && !s->stopping)
			pthread_cond_wait(&s->writes_cv, &s->mu);
		if (s->writes == NULL)
			break; /* stopping, and everything is written */
		/* The batch is everything queued: its last number is the last
		 * queued, its last op the one the tail points into (`next` is
		 * an op's first field). Nothing to walk for either. */
		struct write_op *batch = s->writes;
		struct write_op *last = (struct write_op *)(void *)s->writes_tail;
		uint64_t n = s->last_queued - s->taken;
		s->writes = NULL;
		s->writes_tail = &s->writes;
		pthread_mutex_unlock(&s->mu);

		int rc = state_lmdb_commit_batch(s->env, batch);

		pthread_mutex_lock(&s->mu);
		s->taken += n;
		push_result(s, s->taken, rc);
		/* Back to the loop to be filled again; what it has no room for is freed. */
		struct write_ops rest = {.free = state_lmdb_write_ops_keep(&s->spent, batch, last, n, SPENT_MAX)};
		pthread_mutex_unlock(&s->mu);
		state_lmdb_write_ops_clear(&rest);
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* ---- the reader thread ---- */

static void *reader_main(void *arg)
{
	struct state_lmdb *s = arg;
	MDB_txn *txn = NULL;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (s->loads == NULL && !s->stopping)
			pthread_cond_wait(&s->loads_cv, &s->mu);
		if (s->stopping)
			break; /* loads still queued are dropped in state_lmdb_free */
		struct load_op *batch = s->loads;
		s->loads = NULL;
		s->loads_tail = &s->loads;
		pthread_mutex_unlock(&s->mu);

		/* One read transaction answers the whole batch; it is renewed,
		 * not recreated, between batches. */
		int rc = txn ? mdb_txn_renew(txn) : mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);
		struct load_op *answers = NULL, **tail = &answers;
		while (batch) {
			struct load_op *l = batch;
			batch = l->next;
			l->next = NULL;
			if (rc != 0) {
				l->found = state_lmdb_errno(rc);
			} else {
				l = state_lmdb_answer(txn, l);
			}
			*tail = l;
			tail = &l->next;
		}
		if (rc == 0)
			mdb_txn_reset(txn);
		else if (txn != NULL) {
			mdb_txn_abort(txn);
			txn = NULL;
		}

		pthread_mutex_lock(&s->mu);
		*s->answers_tail = answers;
		s->answers_tail = tail;
		wake_loop(s);
	}
	pthread_mutex_unlock(&s->mu);
	if (txn)
		mdb_txn_abort(txn);
	return NULL;
}

/* ---- the loop's side ---- */

static void report_commit(struct state_lmdb *s, const struct commit_result *c)
{
	state_store_metrics_committed(&s->base, c->upto, c->status, evloop_clock_ns());
	if (c->status != 0)
		log_error(s->log, "state store: a commit failed: %s", mdb_strerror(c->mdb_rc));
	for (uint32_t i = 0; i < NODE_TYPES_MAX; i++) {
		struct state_lmdb_type *t = &s->types[i];
		if (t->in_use)
			t->written(t->arg, c->upto, c->status);
	}
}

static void report_load(struct state_lmdb *s, const struct load_op *a)
{
	struct state_lmdb_type *t = &s->types[a->type_index];
	if (!t->in_use || t->gen != a->type_gen)
		return; /* its type was closed */
	if (a->kind == READ_SCAN) {
		if (a->skipped > 0)
			log_warn(s->log, "state store: shard %u: %u damaged records are not moved with it", a->shard,
				 a->skipped);
		if (a->found < 0)
			t->scanned(t->arg, a->token, a->found, NULL, 0, false, NULL, 0);
		else
			t->scanned(t->arg, a->token, 0, a->data, a->val_len, a->more, a->data + a->val_len,
				   a->key_len);
	} else if (a->found == 1)
		t->loaded(t->arg, a->token, 1, a->data + a->key_len, a->val_len);
	else
		t->loaded(t->arg, a->token, a->found, NULL, 0);
}

static void on_event(struct evloop *loop, int fd, uint32_t events, void *arg)
{
	(void)loop;
	(void)events;
	struct state_lmdb *s = arg;
	uint64_t n;
	ssize_t r = read(fd, &n, sizeof n);
	(void)r; /* EAGAIN: another wake-up took it; the queues say what is new */

	struct commit_result results[RESULTS_MAX];
	pthread_mutex_lock(&s->mu);
	unsigned count = s->results_count;
	for (unsigned i = 0; i < count; i++)
		results[i] = s->results[(s->results_head + i) % RESULTS_MAX];
	s->results_head = (s->results_head + count) % RESULTS_MAX;
	s->results_count = 0;
	struct load_op *answers = s->answers;
	s->answers = NULL;
	s->answers_tail = &s->answers;
	pthread_cond_signal(&s->results_cv);
	pthread_mutex_unlock(&s->mu);

	/* Commits first: a region issues a load only after the writes before
	 * it are reported committed, and never needs the opposite order. */
	for (unsigned i = 0; i < count; i++)
		report_commit(s, &results[i]);
	while (answers) {
		struct load_op *a = answers;
		answers = a->next;
		report_load(s, a);
		free(a);
	}
}

/* Frees what the store owns; the threads must have stopped (or never
 * started). */
static void destroy(struct state_lmdb *s)
{
	while (s->writes) {
		struct write_op *w = s->writes;
		s->writes = w->next;
		free(w);
	}
	state_lmdb_write_ops_clear(&s->ops);
	state_lmdb_write_ops_clear(&s->spent);
	struct load_op *lists[2] = {s->loads, s->answers};
	for (int i = 0; i < 2; i++) {
		while (lists[i]) {
			struct load_op *l = lists[i];
			lists[i] = l->next;
			free(l);
		}
	}
	if (s->event_fd >= 0) {
		evloop_unwatch(s->loop, s->event_fd);
		close(s->event_fd);
	}
	if (s->env)
		mdb_env_close(s->env);
	if (s->lock_fd >= 0)
		close(s->lock_fd); /* and with it the lock */
	pthread_cond_destroy(&s->results_cv);
	pthread_cond_destroy(&s->loads_cv);
	pthread_cond_destroy(&s->writes_cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* Opens the environment in `path` (which exists and is locked). */
static int open_env(struct state_lmdb *s, const char *path)
{
	int rc = mdb_env_create(&s->env);
	if (rc == 0)
		rc = mdb_env_set_maxdbs(s->env, DBS_MAX);
	if (rc == 0)
		rc = mdb_env_set_mapsize(s->env, MAP_SIZE);
	/* MDB_NOTLS: read transactions belong to the transaction, not the
	 * thread, so the reader's renewed transaction is safe whatever thread
	 * runs it. Durability is the default: every commit is synced. */
	if (rc == 0)
		rc = mdb_env_open(s->env, path, MDB_NOTLS, 0666);
	if (rc == 0) {
		int dead;
		/* Readers a killed earlier process left in the lock file would
		 * hold old pages forever; we hold the store alone, so they are
		 * all dead. */
		rc = mdb_reader_check(s->env, &dead);
	}
	if (rc != 0)
		log_error(s->log, "state store %s: %s", path, mdb_strerror(rc));
	return state_lmdb_errno(rc);
}

static const struct state_store_ops lmdb_ops;

struct state_lmdb *state_lmdb_open(const char *dir, struct evloop *loop, const struct logger *log, int *err)
{
	struct state_lmdb *s = calloc(1, sizeof *s);
	if (s == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	s->loop = loop;
	s->log = log;
	s->lock_fd = -1;
	s->event_fd = -1;
	s->writes_tail = &s->writes;
	s->loads_tail = &s->loads;
	s->answers_tail = &s->answers;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->writes_cv, NULL);
	pthread_cond_init(&s->loads_cv, NULL);
	pthread_cond_init(&s->results_cv, NULL);
	s->base.ops = &lmdb_ops;
	for (uint32_t i = 0; i < NODE_TYPES_MAX; i++)
		s->types[i] = (struct state_lmdb_type){.base = {.store = &s->base}, .s = s, .index = i};

	size_t len = strlen(dir) + sizeof "/state.lmdb/owner.lock";
	char *path = malloc(len);
	int rc = path ? 0 : -ENOMEM;
	if (rc == 0) {
		snprintf(path, len, "%s/state.lmdb", dir);
		rc = store_make_dirs(path);
		if (rc != 0)
			log_error(log, "state store: cannot create %s: %s", path, strerror(-rc));
	}
	if (rc == 0) {
		/* LMDB lets processes share an environment; a second node on the
		 * same data_dir would host the same entities, so we refuse it. */
		snprintf(path, len, "%s/state.lmdb/owner.lock", dir);
		s->lock_fd = store_lock_file(path);
		if (s->lock_fd < 0) {
			rc = s->lock_fd;
			log_error(log, "state store: %s: %s", path,
				  rc == -EWOULDBLOCK ? "another node holds it" : strerror(-rc));
		}
	}
	if (rc == 0) {
		snprintf(path, len, "%s/state.lmdb", dir);
		rc = open_env(s, path);
	}
	free(path);
	if (rc == 0) {
		s->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		rc = s->event_fd < 0 ? -errno : evloop_watch(loop, s->event_fd, EPOLLIN, on_event, s);
	}
	if (rc == 0) {
		rc = -pthread_create(&s->writer, NULL, writer_main, s);
		if (rc == 0) {
			rc = -pthread_create(&s->reader, NULL, reader_main, s);
			if (rc != 0) {
				pthread_mutex_lock(&s->mu);
				s->stopping = true;
				pthread_cond_signal(&s->writes_cv);
				pthread_mutex_unlock(&s->mu);
				pthread_join(s->writer, NULL);
			}
		}
		s->threads_started = rc == 0;
	}
	if (rc != 0) {
		destroy(s);
		*err = rc;
		return NULL;
	}
	*err = 0;
	return s;
}

void state_lmdb_free(struct state_lmdb *s)
{
	if (s == NULL)
		return;
	if (s->threads_started) {
		pthread_mutex_lock(&s->mu);
		s->stopping = true;
		pthread_cond_signal(&s->writes_cv);
		pthread_cond_signal(&s->loads_cv);
		pthread_cond_signal(&s->results_cv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->writer, NULL); /* it commits what is queued first */
		pthread_join(s->reader, NULL);
	}
	destroy(s);
}

/* Opens the type's database: in a read transaction when it exists, which
 * waits for no commit; else in a write transaction of its own, once, when
 * the type is first stored (the writer thread's commits wait meanwhile,
 * not the other way round: the environment's write lock is free then but
 * for one of the writer's batches, which is short). */
struct state_lmdb_type *state_lmdb_type_open(struct state_lmdb *s, const char *type, state_store_written_fn written,
					     state_store_loaded_fn loaded, state_store_scanned_fn scanned, void *arg,
					     int *err)
{
	size_t name_len = strlen(type);
	if (name_len >= TYPE_NAME_BUF) {
		*err = -EINVAL;
		return NULL;
	}
	struct state_lmdb_type *free_slot = NULL;
	for (uint32_t i = 0; i < NODE_TYPES_MAX; i++) {
		struct state_lmdb_type *t = &s->types[i];
		if (t->in_use && strcmp(t->name, type) == 0) {
			*err = -EINVAL;
			return NULL;
		}
		/* A type opened before keeps its slot (its handle is kept by
		 * LMDB for the environment's life). */
		if (!t->in_use && (free_slot == NULL || strcmp(t->name, type) == 0))
			free_slot = t;
	}
	if (free_slot == NULL) {
		*err = -EINVAL;
		return NULL;
	}
	struct state_lmdb_type *t = free_slot;
	if (strcmp(t->name, type) != 0) {
		MDB_dbi dbi;
		int rc = state_lmdb_open_dbi(s->env, type, &dbi);
		if (rc != 0) {
			log_error(s->log, "state store: cannot open the database of %s: %s", type, mdb_strerror(rc));
			*err = state_lmdb_errno(rc);
			return NULL;
		}
		/* No type name has a ':' (config_valid_type_name). */
		char meta_name[TYPE_NAME_BUF + 32];
		snprintf(meta_name, sizeof meta_name, "shards:%s", type);
		MDB_dbi meta_dbi;
		rc = state_lmdb_open_dbi(s->env, meta_name, &meta_dbi);
		if (rc != 0) {
			log_error(s->log, "state store: cannot open the shard records of %s: %s", type, mdb_strerror(rc));
			*err = state_lmdb_errno(rc);
			return NULL;
		}
		t->dbi = dbi;
		t->meta_dbi = meta_dbi;
		memcpy(t->name, type, name_len + 1);
	}
	t->in_use = true;
	t->gen++;
	t->written = written;
	t->loaded = loaded;
	t->scanned = scanned;
	t->arg = arg;
	*err = 0;
	return t;
}

void state_lmdb_type_close(struct state_lmdb_type *t)
{
	if (t == NULL)
		return;
	t->in_use = false;
	t->written = NULL;
	t->loaded = NULL;
	t->scanned = NULL;
	t->arg = NULL;
}

/* Queues `w` for the writer thread; *seq gets its number. The ops the
 * writer handed back come along when the loop has none left. */
static void queue_write(struct state_lmdb *s, struct write_op *w, uint64_t *seq)
{
	pthread_mutex_lock(&s->mu);
	bool was_empty = s->writes == NULL;
	*s->writes_tail = w;
	s->writes_tail = &w->next;
	*seq = ++s->last_queued;
	state_lmdb_write_ops_take(&s->ops, &s->spent);
	if (was_empty)
		pthread_cond_signal(&s->writes_cv);
	pthread_mutex_unlock(&s->mu);
	/* on the loop's thread: the metrics are the loop's */
	state_store_metrics_queued(&s->base, *seq, evloop_now_ns(s->loop));
}

int state_lmdb_write(struct state_lmdb_type *t, uint32_t shard, const char *id, size_t id_len, const char *state,
		     size_t state_len, uint64_t *seq)
{
	if (state != NULL && state_len < 1)
		return -EINVAL;
	struct write_op *w = state ? state_lmdb_record_put(&t->s->ops, t->dbi, shard, id, id_len, state, state_len)
				   : state_lmdb_record_delete(&t->s->ops, t->dbi, shard, id, id_len);
	if (w == NULL)
		return -ENOMEM;
	queue_write(t->s, w, seq);
	return 0;
}

uint64_t state_lmdb_cancel_queued(struct state_lmdb_type *t)
{
	struct state_lmdb *s = t->s;
	uint64_t waiting = 0; /* not taken by the writer: the last numbers */
	pthread_mutex_lock(&s->mu);
	for (struct write_op *w = s->writes; w != NULL; w = w->next, waiting++)
		if (w->dbi == t->dbi)
			w->kind = WRITE_CANCELLED;
	uint64_t taken = s->last_queued - waiting;
	pthread_mutex_unlock(&s->mu);
	return taken;
}

int state_lmdb_shard_meta_write(struct state_lmdb_type *t, uint32_t shard, const void *meta, size_t len,
				uint64_t *seq)
{
	struct write_op *w = state_lmdb_record_shard_meta(&t->s->ops, t->meta_dbi, shard, meta, len);
	if (w == NULL)
		return -ENOMEM;
	queue_write(t->s, w, seq);
	return 0;
}

int state_lmdb_shard_meta_read(struct state_lmdb_type *t, state_store_meta_fn fn, void *arg)
{
	return state_lmdb_read_shard_meta(t->s->env, t->meta_dbi, fn, arg);
}

int state_lmdb_delete_shard(struct state_lmdb_type *t, uint32_t shard, uint64_t *seq)
{
	struct write_op *w = state_lmdb_record_delete_shard(&t->s->ops, t->dbi, shard);
	if (w == NULL)
		return -ENOMEM;
	queue_write(t->s, w, seq);
	return 0;
}

/* Queues `l` for the reader thread. */
static void queue_read(struct state_lmdb *s, struct load_op *l)
{
	pthread_mutex_lock(&s->mu);
	bool was_empty = s->loads == NULL;
	*s->loads_tail = l;
	s->loads_tail = &l->next;
	if (was_empty)
		pthread_cond_signal(&s->loads_cv);
	pthread_mutex_unlock(&s->mu);
}

/* Queues a load or scan built for type `t`. */
static int queue_read_for(struct state_lmdb_type *t, struct load_op *l, uint64_t token)
{
	if (l == NULL)
		return -ENOMEM;
	l->token = token;
	l->type_index = t->index;
	l->type_gen = t->gen;
	queue_read(t->s, l);
	return 0;
}

int state_lmdb_load(struct state_lmdb_type *t, uint32_t shard, const char *id, size_t id_len, uint64_t token)
{
	return queue_read_for(t, state_lmdb_record_load(t->dbi, shard, id, id_len), token);
}

int state_lmdb_scan(struct state_lmdb_type *t, uint32_t shard, const char *after_key, size_t after_len,
		    size_t max_bytes, uint64_t token)
{
	if (after_len > STATE_LMDB_KEY_MAX)
		return -EINVAL;
	return queue_read_for(t, state_lmdb_record_scan(t->dbi, shard, after_key, after_len, max_bytes), token);
}

uint64_t state_lmdb_last_queued(const struct state_lmdb *s)
{
	return s->last_queued;
}

/* ---- as a state_store ---- */

/* The handles are this file's own: a state_store_type of this store is
 * the first member of a state_lmdb_type, and the store of a state_lmdb. */
static struct state_lmdb_type *lmdb_type(struct state_store_type *t)
{
	return (struct state_lmdb_type *)(void *)t;
}

static void op_free(struct state_store *s)
{
	state_lmdb_free((struct state_lmdb *)(void *)s);
}

static struct state_store_type *op_type_open(struct state_store *s, const char *type,
					     const struct state_store_callbacks *cb, int *err)
{
	struct state_lmdb_type *t = state_lmdb_type_open((struct state_lmdb *)(void *)s, type, cb->written, cb->loaded,
							 cb->scanned, cb->arg, err);
	return t ? &t->base : NULL;
}

static void op_type_close(struct state_store_type *t)
{
	state_lmdb_type_close(lmdb_type(t));
}

static int op_write(struct state_store_type *t, uint32_t shard, const char *id, size_t id_len, const char *state,
		    size_t state_len, uint64_t *seq)
{
	return state_lmdb_write(lmdb_type(t), shard, id, id_len, state, state_len, seq);
}

static int op_delete_shard(struct state_store_type *t, uint32_t shard, uint64_t *seq)
{
	return state_lmdb_delete_shard(lmdb_type(t), shard, seq);
}

static int op_load(struct state_store_type *t, uint32_t shard, const char *id, size_t id_len, uint64_t token)
{
	return state_lmdb_load(lmdb_type(t), shard, id, id_len, token);
}

static int op_scan(struct state_store_type *t, uint32_t shard, const char *after_key, size_t after_len,
		   size_t max_bytes, uint64_t token)
{
	return state_lmdb_scan(lmdb_type(t), shard, after_key, after_len, max_bytes, token);
}

static int op_shard_meta_write(struct state_store_type *t, uint32_t shard, const void *meta, size_t len,
			       uint64_t *seq)
{
	return state_lmdb_shard_meta_write(lmdb_type(t), shard, meta, len, seq);
}

static int op_shard_meta_read(struct state_store_type *t, state_store_meta_fn fn, void *arg)
{
	return state_lmdb_shard_meta_read(lmdb_type(t), fn, arg);
}

static uint64_t op_cancel_queued(struct state_store_type *t)
{
	return state_lmdb_cancel_queued(lmdb_type(t));
}

static uint64_t op_last_queued(const struct state_store *s)
{
	return state_lmdb_last_queued((const struct state_lmdb *)(const void *)s);
}

static const struct state_store_ops lmdb_ops = {
	.free = op_free,
	.type_open = op_type_open,
	.type_close = op_type_close,
	.write = op_write,
	.delete_shard = op_delete_shard,
	.load = op_load,
	.scan = op_scan,
	.cancel_queued = op_cancel_queued,
	.last_queued = op_last_queued,
	.shard_meta_write = op_shard_meta_write,
	.shard_meta_read = op_shard_meta_read,
};

struct state_store *state_lmdb_store(struct state_lmdb *s)
{
	return &s->base;
}
