/* state_lmdb_records.c — see state_lmdb_records.h. */
#include "store/state_lmdb_records.h"

#include <errno.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

#include "base/byteorder.h"
#include "etf/term.h"
#include "etf/term_validate.h"
#include "store/state_lmdb.h"

/* LMDB's compiled-in key limit (mdb_env_get_maxkeysize). */
#define KEY_MAX STATE_LMDB_KEY_MAX
#define HASHED_KEY_LEN (4 + 1 + SHA256_DIGEST_LENGTH)

/* The external term format's tags the records and chunks use. */
#define VERSION_MAGIC 131
#define SMALL_TUPLE_EXT 104
#define NIL_EXT 106
#define LIST_EXT 108

/* LMDB returns errno values for system errors and its own negative codes
 * for the rest. */
int state_lmdb_errno(int mdb_rc)
{
	if (mdb_rc == 0)
		return 0;
	if (mdb_rc > 0)
		return -mdb_rc;
	if (mdb_rc == MDB_MAP_FULL)
		return -ENOSPC;
	return -EIO;
}

/* The record's key: the shard and the id, or the id's hash when too long.
 * `key` has room for KEY_MAX bytes. Returns its length. */
static uint32_t make_key(char *key, uint32_t shard, const char *id, size_t id_len)
{
	be32_write(key, shard);
	if (4 + id_len <= KEY_MAX) {
		memcpy(key + 4, id, id_len);
		return (uint32_t)(4 + id_len);
	}
	key[4] = 0;
	SHA256((const unsigned char *)id, id_len, (unsigned char *)key + 5);
	return HASHED_KEY_LEN;
}

static size_t key_len_of(size_t id_len)
{
	return 4 + id_len <= KEY_MAX ? 4 + id_len : HASHED_KEY_LEN;
}

static bool key_is_hashed(const char *key, size_t key_len)
{
	return key_len == HASHED_KEY_LEN && key[4] == 0;
}

/* The bytes a hashed record's value has before the state's own: the
 * version byte, {Id, State}'s tuple head, the id. */
static size_t hashed_value_head(size_t id_len)
{
	return 3 + id_len;
}

/* Deletes every record whose key starts with `prefix` (a shard's 4
 * bytes). Returns 0 or LMDB's code. */
static int delete_shard(MDB_txn *txn, MDB_dbi dbi, const char *prefix)
{
	MDB_cursor *c;
	int rc = mdb_cursor_open(txn, dbi, &c);
	if (rc != 0)
		return rc;
	MDB_val key = {.mv_size = 4, .mv_data = (void *)prefix}, val;
	rc = mdb_cursor_get(c, &key, &val, MDB_SET_RANGE);
	while (rc == 0 && key.mv_size >= 4 && memcmp(key.mv_data, prefix, 4) == 0) {
		rc = mdb_cursor_del(c, 0);
		/* After a delete the cursor stands on the next record already,
		 * and MDB_NEXT returns that one. */
		if (rc == 0)
			rc = mdb_cursor_get(c, &key, &val, MDB_NEXT);
	}
	mdb_cursor_close(c);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Writes the batch in one transaction. Returns 0 or LMDB's code. */
int state_lmdb_commit_batch(MDB_env *env, const struct write_op *batch)
{
	MDB_txn *txn;
	int rc = mdb_txn_begin(env, NULL, 0, &txn);
	if (rc != 0)
		return rc;
	for (const struct write_op *w = batch; w != NULL && rc == 0; w = w->next) {
		MDB_val key = {.mv_size = w->key_len, .mv_data = (void *)w->data};
		if (w->kind == WRITE_CANCELLED) {
			continue;
		} else if (w->kind == WRITE_DELETE) {
			rc = mdb_del(txn, w->dbi, &key, NULL);
			if (rc == MDB_NOTFOUND)
				rc = 0;
		} else if (w->kind == WRITE_DELETE_SHARD) {
			rc = delete_shard(txn, w->dbi, w->data);
		} else {
			MDB_val val = {.mv_size = w->val_len, .mv_data = (void *)(w->data + w->key_len)};
			rc = mdb_put(txn, w->dbi, &key, &val, 0);
		}
	}
	if (rc != 0) {
		mdb_txn_abort(txn);
		return rc;
	}
	return mdb_txn_commit(txn); /* the fsync happens here */
}

/* Looks the load up in `txn`; returns its answer, which may be `l` itself. */
static struct load_op *answer_load(MDB_txn *txn, struct load_op *l)
{
	MDB_val key = {.mv_size = l->key_len, .mv_data = l->data}, val;
	int rc = mdb_get(txn, l->dbi, &key, &val);
	if (rc == MDB_NOTFOUND) {
		l->found = 0;
		return l;
	}
	if (rc != 0) {
		l->found = state_lmdb_errno(rc);
		return l;
	}
	const char *state = val.mv_data;
	size_t len = val.mv_size;
	size_t skip = 0;
	if (key_is_hashed(l->data, l->key_len)) {
		/* {Id, State}: the id must be this one (a hash collision, or a
		 * damaged record, is no state of ours), and the state follows. */
		size_t id_len = l->val_len;
		skip = hashed_value_head(id_len);
		if (len <= skip || (unsigned char)state[0] != VERSION_MAGIC ||
		    (unsigned char)state[1] != SMALL_TUPLE_EXT || state[2] != 2 ||
		    memcmp(state + 3, l->data + l->key_len, id_len) != 0) {
			l->found = 0;
			return l;
		}
	}
	struct load_op *a = malloc(sizeof *a + 1 + len - skip);
	if (a == NULL) {
		l->found = -ENOMEM;
		return l;
	}
	*a = *l;
	a->found = 1;
	a->key_len = 0;
	if (skip > 0) {
		a->data[0] = (char)VERSION_MAGIC;
		memcpy(a->data + 1, state + skip, len - skip);
		a->val_len = (uint32_t)(1 + len - skip);
	} else {
		memcpy(a->data, state, len);
		a->val_len = (uint32_t)len;
	}
	free(l);
	return a;
}

/* A growable buffer for a scan's chunk, on the reader thread. */
struct chunk_buf {
	char *p;
	size_t len, cap;
};

static int chunk_append(struct chunk_buf *b, const void *data, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (p == NULL)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
	return 0;
}

/* Whether bytes[0..len) are exactly one term the node would accept from a
 * peer (term_validate, whole). */
static bool one_term(const char *bytes, size_t len)
{
	size_t end = 0;
	return term_validate(bytes, len, &end) == 0 && end == len;
}

/* Appends one record as {Id, State} (no version byte) and counts it in *n.
 * A record that is not an id and a term with its version byte (damage on
 * disk) is left out and counted in *skipped: the chunk goes to a peer, and
 * one bad record would make the whole of it a term the peer refuses. */
static int chunk_record(struct chunk_buf *b, const MDB_val *key, const MDB_val *val, uint32_t *n,
			uint32_t *skipped)
{
	const char *v = val->mv_data;
	const char *k = key->mv_data;
	bool hashed = key_is_hashed(k, key->mv_size);
	if (val->mv_size < 2 || (unsigned char)v[0] != VERSION_MAGIC || !one_term(v + 1, val->mv_size - 1) ||
	    (hashed && ((unsigned char)v[1] != SMALL_TUPLE_EXT || v[2] != 2)) ||
	    (!hashed && !one_term(k + 4, key->mv_size - 4))) {
		(*skipped)++;
		return 0;
	}
	int rc;
	if (hashed) {
		rc = chunk_append(b, v + 1, val->mv_size - 1); /* {Id, State} already */
	} else {
		const char head[2] = {(char)SMALL_TUPLE_EXT, 2};
		rc = chunk_append(b, head, 2);
		if (rc == 0)
			rc = chunk_append(b, k + 4, key->mv_size - 4);
		if (rc == 0)
			rc = chunk_append(b, v + 1, val->mv_size - 1);
	}
	if (rc == 0)
		(*n)++;
	return rc;
}

/* Answers a scan: the shard's records after the op's key, as one chunk.
 * Returns the answer, which may be `l` itself. */
static struct load_op *answer_scan(MDB_txn *txn, struct load_op *l)
{
	char prefix[4];
	be32_write(prefix, l->shard);
	MDB_cursor *c;
	int rc = mdb_cursor_open(txn, l->dbi, &c);
	if (rc != 0) {
		l->found = state_lmdb_errno(rc);
		return l;
	}
	MDB_val key, val;
	if (l->key_len > 0)
		key = (MDB_val){.mv_size = l->key_len, .mv_data = l->data};
	else
		key = (MDB_val){.mv_size = 4, .mv_data = prefix};
	rc = mdb_cursor_get(c, &key, &val, MDB_SET_RANGE);
	if (rc == 0 && l->key_len > 0 && key.mv_size == l->key_len && memcmp(key.mv_data, l->data, l->key_len) == 0)
		rc = mdb_cursor_get(c, &key, &val, MDB_NEXT); /* sent already */
	/* LIST_EXT with its length written at the end. */
	struct chunk_buf b = {0};
	char head[5] = {(char)LIST_EXT, 0, 0, 0, 0};
	int err = chunk_append(&b, head, sizeof head);
	uint32_t n = 0, skipped = 0;
	char last[KEY_MAX];
	size_t last_len = 0;
	bool more = false;
	while (err == 0 && rc == 0 && key.mv_size >= 4 && memcmp(key.mv_data, prefix, 4) == 0) {
		if (n > 0 && b.len >= l->max_bytes) {
			more = true;
			break;
		}
		err = chunk_record(&b, &key, &val, &n, &skipped);
		if (key.mv_size <= sizeof last) {
			memcpy(last, key.mv_data, key.mv_size);
			last_len = key.mv_size;
		}
		rc = mdb_cursor_get(c, &key, &val, MDB_NEXT);
	}
	mdb_cursor_close(c);
	if (err == 0 && rc != 0 && rc != MDB_NOTFOUND)
		err = state_lmdb_errno(rc);
	if (err == 0) {
		if (n == 0) {
			b.p[0] = (char)NIL_EXT;
			b.len = 1;
		} else {
			be32_write(b.p + 1, n);
			const char nil = (char)NIL_EXT;
			err = chunk_append(&b, &nil, 1);
		}
	}
	struct load_op *a = err == 0 ? malloc(sizeof *a + b.len + last_len) : NULL;
	if (a == NULL) {
		free(b.p);
		l->found = err ? err : -ENOMEM;
		return l;
	}
	*a = *l;
	a->found = 0;
	a->more = more;
	a->skipped = skipped;
	a->val_len = (uint32_t)b.len;
	a->key_len = (uint32_t)last_len;
	memcpy(a->data, b.p, b.len); /* the chunk, then the last key */
	memcpy(a->data + b.len, last, last_len);
	free(b.p);
	free(l);
	return a;
}


struct load_op *state_lmdb_answer(MDB_txn *txn, struct load_op *l)
{
	return l->kind == READ_SCAN ? answer_scan(txn, l) : answer_load(txn, l);
}

/* ---- building operations ---- */

/* An op's data is never made smaller than this, so that the usual small
 * record finds a spare op with room for it. */
#define WRITE_ROOM_MIN 192

void state_lmdb_write_ops_clear(struct write_ops *ops)
{
	while (ops->free != NULL) {
		struct write_op *w = ops->free;
		ops->free = w->next;
		free(w);
	}
}

struct write_op *state_lmdb_write_ops_keep(struct write_ops *ops, struct write_op *first, struct write_op *last,
					   uint64_t n, uint32_t max)
{
	if (first == NULL || last == NULL || n > max - ops->n)
		return first;
	last->next = ops->free;
	ops->free = first;
	ops->n += (uint32_t)n;
	return NULL;
}

void state_lmdb_write_ops_take(struct write_ops *to, struct write_ops *from)
{
	if (to->free != NULL || from->free == NULL)
		return;
	to->free = from->free;
	*from = (struct write_ops){0};
}

static struct write_op *new_write(struct write_ops *ops, MDB_dbi dbi, enum write_kind kind, size_t key_room,
				  size_t val_len)
{
	if (val_len > UINT32_MAX - key_room)
		return NULL;
	size_t need = key_room + val_len;
	struct write_op *w = NULL;
	if (ops != NULL && ops->free != NULL) {
		w = ops->free;
		ops->free = w->next;
		if (w->room < need) {
			free(w); /* too small: a bigger one is made */
			w = NULL;
		}
	}
	if (w == NULL) {
		size_t room = need > WRITE_ROOM_MIN ? need : WRITE_ROOM_MIN;
		if ((w = malloc(sizeof *w + room)) == NULL)
			return NULL;
		w->room = (uint32_t)room;
	}
	uint32_t room = w->room;
	*w = (struct write_op){.dbi = dbi, .kind = kind, .val_len = (uint32_t)val_len, .room = room};
	return w;
}

struct write_op *state_lmdb_record_shard_meta(struct write_ops *ops, MDB_dbi dbi, uint32_t shard, const void *meta,
					      size_t len)
{
	struct write_op *w = new_write(ops, dbi, WRITE_PUT, 4, len);
	if (w == NULL)
		return NULL;
	w->key_len = 4;
	be32_write(w->data, shard);
	if (len > 0)
		memcpy(w->data + 4, meta, len);
	return w;
}

struct write_op *state_lmdb_record_put(struct write_ops *ops, MDB_dbi dbi, uint32_t shard, const char *id,
				       size_t id_len, const char *state, size_t state_len)
{
	size_t key_len = key_len_of(id_len);
	bool hashed = 4 + id_len > KEY_MAX;
	/* A hashed record's value is {Id, State}: the version byte, the
	 * tuple head and the id, then the state without its version byte. */
	size_t val_len = hashed ? hashed_value_head(id_len) + state_len - 1 : state_len;
	struct write_op *w = new_write(ops, dbi, WRITE_PUT, key_len, val_len);
	if (w == NULL)
		return NULL;
	w->key_len = make_key(w->data, shard, id, id_len);
	char *v = w->data + key_len;
	if (hashed) {
		v[0] = (char)VERSION_MAGIC;
		v[1] = (char)SMALL_TUPLE_EXT;
		v[2] = 2;
		memcpy(v + 3, id, id_len);
		memcpy(v + 3 + id_len, state + 1, state_len - 1);
	} else {
		memcpy(v, state, state_len);
	}
	return w;
}

struct write_op *state_lmdb_record_delete(struct write_ops *ops, MDB_dbi dbi, uint32_t shard, const char *id,
					  size_t id_len)
{
	struct write_op *w = new_write(ops, dbi, WRITE_DELETE, key_len_of(id_len), 0);
	if (w != NULL)
		w->key_len = make_key(w->data, shard, id, id_len);
	return w;
}

struct write_op *state_lmdb_record_delete_shard(struct write_ops *ops, MDB_dbi dbi, uint32_t shard)
{
	struct write_op *w = new_write(ops, dbi, WRITE_DELETE_SHARD, 4, 0);
	if (w != NULL) {
		w->key_len = 4;
		be32_write(w->data, shard);
	}
	return w;
}

struct load_op *state_lmdb_record_load(MDB_dbi dbi, uint32_t shard, const char *id, size_t id_len)
{
	size_t key_len = key_len_of(id_len);
	bool hashed = 4 + id_len > KEY_MAX;
	/* A hashed key's load keeps the id after the key, to check the
	 * record's {Id, State} against it. */
	struct load_op *l = malloc(sizeof *l + key_len + (hashed ? id_len : 0));
	if (l == NULL)
		return NULL;
	*l = (struct load_op){.dbi = dbi, .kind = READ_LOAD};
	l->key_len = make_key(l->data, shard, id, id_len);
	if (hashed) {
		memcpy(l->data + key_len, id, id_len);
		l->val_len = (uint32_t)id_len;
	}
	return l;
}

struct load_op *state_lmdb_record_scan(MDB_dbi dbi, uint32_t shard, const char *after_key, size_t after_len,
				       size_t max_bytes)
{
	struct load_op *l = malloc(sizeof *l + after_len);
	if (l == NULL)
		return NULL;
	*l = (struct load_op){.dbi = dbi, .kind = READ_SCAN, .shard = shard, .max_bytes = max_bytes,
			      .key_len = (uint32_t)after_len};
	if (after_len > 0)
		memcpy(l->data, after_key, after_len);
	return l;
}

int state_lmdb_open_dbi(MDB_env *env, const char *name, MDB_dbi *dbi)
{
	MDB_txn *txn;
	int rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
	if (rc != 0)
		return rc;
	rc = mdb_dbi_open(txn, name, 0, dbi);
	if (rc == 0)
		return mdb_txn_commit(txn); /* keeps the handle for every transaction */
	mdb_txn_abort(txn);
	if (rc != MDB_NOTFOUND)
		return rc;
	rc = mdb_txn_begin(env, NULL, 0, &txn);
	if (rc != 0)
		return rc;
	rc = mdb_dbi_open(txn, name, MDB_CREATE, dbi);
	if (rc != 0) {
		mdb_txn_abort(txn);
		return rc;
	}
	return mdb_txn_commit(txn);
}

int state_lmdb_read_shard_meta(MDB_env *env, MDB_dbi dbi, state_store_meta_fn fn, void *arg)
{
	/* At a type's start, before its region runs: one short read of a
	 * database of at most a record per shard. */
	MDB_txn *txn;
	int rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
	if (rc != 0)
		return state_lmdb_errno(rc);
	MDB_cursor *cur;
	rc = mdb_cursor_open(txn, dbi, &cur);
	if (rc != 0) {
		mdb_txn_abort(txn);
		return state_lmdb_errno(rc);
	}
	MDB_val key, val;
	int status = 0;
	for (rc = mdb_cursor_get(cur, &key, &val, MDB_FIRST); rc == 0 && status == 0;
	     rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT))
		if (key.mv_size == 4)
			status = fn(arg, be32_read(key.mv_data), val.mv_data, val.mv_size);
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	if (status != 0)
		return status;
	return rc == MDB_NOTFOUND ? 0 : state_lmdb_errno(rc);
}
