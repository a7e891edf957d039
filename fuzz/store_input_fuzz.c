/*
 * store_input_fuzz.c — libFuzzer target for the parsers that read what the
 * node finds on disk or in a local service's reply (`make fuzz`): the first
 * input byte picks one, the rest is its input.
 *   0  a remembered-entities log: the bytes are the file; remember_open
 *      loads it (and compacts it). Checked: every id kept is one canonical
 *      entity id in the shard phash2 gives it, and opening the compacted
 *      log again gives the same sets.
 *   1  LMDB state records: the bytes are records put straight into a real
 *      LMDB file (as damage would leave them), [key length, key, value
 *      length, value]...; a record may instead name a long id whose hashed
 *      key the store itself makes. Each key is then loaded, and each shard
 *      scanned in small chunks. Checked: a scan's chunk is always one valid
 *      term (a list of {Id, State}), whatever the records hold.
 *   2  a config file's text (config_apply_text).
 *   3  epmd's replies (ALIVE2_RESP and PORT2_RESP), every prefix.
 * Files live in one directory under /dev/shm made at start and removed at
 * exit. Nothing here may read outside its input (ASan) or hit undefined
 * behaviour (UBSan); a failed check aborts.
 */
#include <errno.h>
#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ei.h>

#include "app/config.h"
#include "base/byteorder.h"
#include "protocol/epmd.h"
#include "etf/entity_id.h"
#include "etf/phash2.h"
#include "etf/term.h"
#include "etf/term_validate.h"
#include "store/remember.h"
#include "store/state_lmdb.h"
#include "store/state_lmdb_records.h"

#include "fuzz_checks.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The harness's files: made once per process (libFuzzer's own model). */
static char work_dir[64];
static MDB_env *lmdb_env;
static MDB_dbi lmdb_dbi;
enum { MAX_KEYS = 32 };
static char key_store[MAX_KEYS * STATE_LMDB_KEY_MAX]; /* the keys put, for one input */


static void remove_work_dir(void)
{
	char path[128];
	const char *names[] = {"t.entities", "t.entities.lock", "t.entities.tmp", "data.mdb", "lock.mdb"};
	if (lmdb_env != NULL)
		mdb_env_close(lmdb_env);
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", work_dir, names[i]);
		(void)unlink(path);
	}
	(void)rmdir(work_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(work_dir, sizeof work_dir, "/dev/shm/sn-store-fuzz-XXXXXX");
	if (mkdtemp(work_dir) == NULL) {
		snprintf(work_dir, sizeof work_dir, "/tmp/sn-store-fuzz-XXXXXX");
		check(mkdtemp(work_dir) != NULL);
	}
	atexit(remove_work_dir);
	MDB_txn *txn;
	check(mdb_env_create(&lmdb_env) == 0 && mdb_env_set_mapsize(lmdb_env, 64u << 20) == 0 &&
	      mdb_env_open(lmdb_env, work_dir, MDB_NOSYNC, 0600) == 0 &&
	      mdb_txn_begin(lmdb_env, NULL, 0, &txn) == 0 && mdb_dbi_open(txn, NULL, 0, &lmdb_dbi) == 0 &&
	      mdb_txn_commit(txn) == 0);
	return 0;
}

/* ---- 0: the remembered-entities log ---- */

static void remembered_log(const uint8_t *in, size_t len)
{
	if (len < 1)
		return;
	uint32_t nshards = 1 + in[0] % 8;
	char path[128];
	snprintf(path, sizeof path, "%s/t.entities", work_dir);
	FILE *f = fopen(path, "wb");
	check(f != NULL);
	check(fwrite(in + 1, 1, len - 1, f) == len - 1 && fclose(f) == 0);
	int err;
	struct remember *r = remember_open(work_dir, "t", nshards, NULL, &err);
	check(r != NULL);
	size_t counts[8];
	for (uint32_t s = 0; s < nshards; s++)
		counts[s] = fuzz_check_remembered_shard(r, s, nshards);
	remember_free(r);
	/* The log as compacted reads back as the same sets. */
	r = remember_open(work_dir, "t", nshards, NULL, &err);
	check(r != NULL);
	for (uint32_t s = 0; s < nshards; s++)
		check(remember_count(r, s) == counts[s]);
	remember_free(r);
}

/* ---- 1: LMDB state records ---- */

/* Puts the input's records into the (emptied) database. Returns the
 * number put. Keys LMDB refuses (empty, too long) are skipped. */
static size_t put_records(const uint8_t *in, size_t len, MDB_val *keys, size_t max_keys, char *keys_at)
{
	MDB_txn *txn;
	check(mdb_txn_begin(lmdb_env, NULL, 0, &txn) == 0);
	check(mdb_drop(txn, lmdb_dbi, 0) == 0);
	size_t n = 0, at = 0;
	while (at + 2 <= len && n < max_keys) {
		uint8_t kind = in[at], klen = in[at + 1];
		at += 2;
		char key[STATE_LMDB_KEY_MAX];
		size_t key_len;
		if (kind & 1) {
			/* A long id: the key the store makes for it (its hash). */
			char id[600];
			memset(id, 'x', sizeof id);
			id[0] = (char)(kind >> 1);
			struct write_op *w = state_lmdb_record_put(NULL, lmdb_dbi, kind >> 4, id, sizeof id, "\x83", 1);
			check(w != NULL);
			key_len = w->key_len;
			memcpy(key, w->data, key_len);
			free(w);
		} else {
			if (klen > len - at)
				break;
			key_len = klen < 4 ? 4 : klen;
			memset(key, 0, 4);
			memcpy(key + (klen < 4 ? 4 - klen : 0), in + at, klen);
			at += klen;
		}
		if (at + 2 > len)
			break;
		size_t vlen = be16_read(in + at) % 1024;
		at += 2;
		if (vlen > len - at)
			vlen = len - at;
		MDB_val k = {.mv_size = key_len, .mv_data = key}, v = {.mv_size = vlen, .mv_data = (void *)(in + at)};
		at += vlen;
		if (mdb_put(txn, lmdb_dbi, &k, &v, 0) == 0) {
			memcpy(keys_at + n * STATE_LMDB_KEY_MAX, key, key_len);
			keys[n] = (MDB_val){.mv_size = key_len, .mv_data = keys_at + n * STATE_LMDB_KEY_MAX};
			n++;
		}
	}
	check(mdb_txn_commit(txn) == 0);
	return n;
}

static void check_chunk(const struct load_op *a)
{
	check(a->found == 0);
	size_t end = 0;
	check(term_validate(a->data, a->val_len, &end) == 0 && end == a->val_len);
	/* A list of {Id, State}. */
	int i = 0, arity, n;
	if ((unsigned char)a->data[0] == 106)
		return;
	check(ei_decode_list_header(a->data, &i, &n) == 0);
	for (int e = 0; e < n; e++) {
		check(ei_decode_tuple_header(a->data, &i, &arity) == 0 && arity == 2);
		check(ei_skip_term(a->data, &i) == 0 && ei_skip_term(a->data, &i) == 0);
	}
}

static void lmdb_records(const uint8_t *in, size_t len)
{
	MDB_val keys[MAX_KEYS];
	size_t n = put_records(in, len, keys, MAX_KEYS, key_store);
	MDB_txn *txn;
	check(mdb_txn_begin(lmdb_env, NULL, MDB_RDONLY, &txn) == 0);
	for (size_t i = 0; i < n; i++) {
		uint32_t shard = be32_read(keys[i].mv_data);
		/* The load the store makes for this key's id. */
		struct load_op *l = state_lmdb_record_load(lmdb_dbi, shard, (const char *)keys[i].mv_data + 4,
							   keys[i].mv_size - 4);
		check(l != NULL);
		l = state_lmdb_answer(txn, l);
		/* Found or not; what it holds is checked by the region, as the
		 * network's bytes are (region_store.c). */
		check(l->found == 1 || l->found == 0);
		free(l);
		/* The shard scanned in chunks of about 64 bytes, to its end. */
		char after[STATE_LMDB_KEY_MAX];
		size_t after_len = 0;
		for (int round = 0; round < 64; round++) {
			l = state_lmdb_record_scan(lmdb_dbi, shard, after, after_len, 64);
			check(l != NULL);
			l = state_lmdb_answer(txn, l);
			check_chunk(l);
			bool more = l->more;
			after_len = l->key_len;
			check(after_len <= sizeof after);
			memcpy(after, l->data + l->val_len, after_len);
			free(l);
			if (!more)
				break;
		}
	}
	mdb_txn_abort(txn);
}

/* ---- 2: config text, 3: epmd replies ---- */

static void config_text(const uint8_t *in, size_t len)
{
	char *text = malloc(len ? len : 1); /* exact size for ASan */
	check(text != NULL);
	memcpy(text, in, len);
	struct sn_config *cfg = malloc(sizeof *cfg);
	check(cfg != NULL);
	config_defaults(cfg);
	char err[CONFIG_ERR_BUF];
	int rc = config_apply_text(cfg, text, len, "fuzz.config", err);
	check(rc == 0 || (rc == -EINVAL && memchr(err, '\0', sizeof err) != NULL));
	free(cfg);
	free(text);
}

static void epmd_replies(const uint8_t *in, size_t len)
{
	for (size_t n = 0; n <= len; n++) {
		uint8_t *cut = malloc(n ? n : 1);
		check(cut != NULL);
		memcpy(cut, in, n);
		uint8_t result;
		uint32_t creation;
		uint16_t port, version;
		int a = epmd_decode_alive2_resp(cut, n, &result, &creation);
		int p = epmd_decode_port2_resp(cut, n, &result, &port, &version);
		check((a == 1 || a == 0 || a == -EPROTO) && (p == 1 || p == 0 || p == -EPROTO));
		free(cut);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	/* An exact-size copy: ASan sees any read past the input. */
	uint8_t *in = malloc(size - 1 ? size - 1 : 1);
	if (in == NULL)
		return 0;
	memcpy(in, data + 1, size - 1);
	switch (data[0] % 4) {
	case 0:
		remembered_log(in, size - 1);
		break;
	case 1:
		lmdb_records(in, size - 1);
		break;
	case 2:
		config_text(in, size - 1);
		break;
	default:
		epmd_replies(in, size - 1);
		break;
	}
	free(in);
	return 0;
}
