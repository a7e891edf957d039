/* remember.c — see remember.h. */
#include "store/remember.h"
#include "base/byteorder.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "entity/entity_table.h"
#include "etf/entity_id.h"
#include "etf/phash2.h"
#include "etf/term.h"
#include "etf/term_validate.h"
#include "store/store_files.h"

static const char header[8] = {'S', 'N', 'R', 'E', 'M', 'E', 'M', '1'};

/* Records whose id is longer than this are refused on load: no entity id
 * the node accepts comes near it, so such a length means a damaged file. */
#define MAX_ID_LEN (64u * 1024u * 1024u)

struct remember {
	const struct logger *log;
	uint32_t nshards;
	struct entity_table *sets; /* one per shard; entities with no state */
	char *path;                /* NULL: memory only */
	FILE *file;                /* the log, open for appending */
	bool write_failed;         /* logged once */
	int lock_fd;               /* holds flock on the log while open; -1: none */
	uint64_t live_bytes;       /* what a compacted log would hold */
	uint64_t log_bytes;        /* what the log holds */
};

/* The log is compacted again when it holds this many times what a compacted
 * one would, plus a floor: entities that start and stop (idle passivation)
 * would otherwise grow it without bound. */
#define COMPACT_RATIO 4
#define COMPACT_FLOOR (1u << 20)

/* ---- the log ---- */

static int write_record(FILE *f, char op, uint32_t shard, const char *id, size_t len)
{
	unsigned char head[9];
	head[0] = (unsigned char)op;
	be32_write(head + 1, shard);
	be32_write(head + 5, (uint32_t)len);
	if (fwrite(head, 1, sizeof head, f) != sizeof head || fwrite(id, 1, len, f) != len)
		return -EIO;
	return 0;
}

static void append(struct remember *r, char op, uint32_t shard, const char *id, size_t len)
{
	if (r->file == NULL || r->write_failed)
		return;
	r->log_bytes += 9 + len;
	if (write_record(r->file, op, shard, id, len) != 0) {
		r->write_failed = true;
		log_error(r->log, "remembered entities: cannot write %s: %s; carrying on in memory", r->path,
			  strerror(errno));
	}
}

/* ---- the sets ---- */

static int set_add(struct remember *r, uint32_t shard, const char *id, size_t len)
{
	struct entity_table *t = &r->sets[shard];
	uint32_t hash = entity_table_hash(id, len);
	if (entity_table_find(t, id, len, hash) != NULL)
		return 0;
	if (entity_table_insert(t, id, len, hash, 0) == NULL)
		return -ENOMEM;
	r->live_bytes += 9 + len;
	return 1;
}

static int set_remove(struct remember *r, uint32_t shard, const char *id, size_t len)
{
	struct entity_table *t = &r->sets[shard];
	struct entity *e = entity_table_find(t, id, len, entity_table_hash(id, len));
	if (e == NULL)
		return 0;
	entity_table_remove(t, e);
	r->live_bytes -= 9 + len;
	return 1;
}

/* Whether a record's id bytes are one whole entity id in canonical form,
 * as every id the store is given is: the check a peer's id gets. */
static bool record_id_ok(const char *id, size_t len)
{
	size_t end = 0;
	if (term_validate(id, len, &end) || end != len)
		return false;
	ei_x_buff canon;
	if (ei_x_new(&canon) < 0)
		return true; /* no memory to check with: phash2 still walks it bounded */
	bool ok = entity_id_canonical(id, len, &canon) == 0 && (size_t)canon.index == len &&
		  memcmp(canon.buff, id, len) == 0;
	ei_x_free(&canon);
	return ok;
}

/* Applies the records of buf[0..len). Returns 0, or -ENOMEM. A damaged or
 * truncated record ends the load with a warning. */
static int load_records(struct remember *r, const unsigned char *buf, size_t len)
{
	size_t i = sizeof header;
	while (i < len) {
		if (len - i < 9) {
			log_warn(r->log, "remembered entities: %s ends in a truncated record; dropped", r->path);
			break;
		}
		char op = (char)buf[i];
		uint32_t shard = be32_read(buf + i + 1), id_len = be32_read(buf + i + 5);
		if ((op != '+' && op != '-') || id_len > MAX_ID_LEN) {
			log_warn(r->log, "remembered entities: %s is damaged at byte %zu; the rest is dropped", r->path, i);
			break;
		}
		if (len - i - 9 < id_len) {
			log_warn(r->log, "remembered entities: %s ends in a truncated record; dropped", r->path);
			break;
		}
		const char *id = (const char *)buf + i + 9;
		/* The shard is recomputed: if number_of_shards changed since, the id
		 * now lives in another shard, and starting it in the recorded one
		 * would give it a second instance. An id that is not exactly one
		 * canonical term, as a peer's id is checked (term_validate, then
		 * entity_id_canonical), is damage: the record is dropped (at
		 * compaction). */
		uint32_t now_in;
		(void)shard;
		if (record_id_ok(id, id_len) && phash2_range(id, id_len, r->nshards, &now_in) == 0) {
			int rc = op == '+' ? set_add(r, now_in, id, id_len) : set_remove(r, now_in, id, id_len);
			if (rc < 0)
				return rc;
		} else {
			log_warn(r->log, "remembered entities: %s has a record at byte %zu that is no entity id; dropped",
				 r->path, i);
		}
		i += 9 + id_len;
	}
	return 0;
}

/* Reads the whole file at r->path. Returns 0 (a missing file is empty),
 * or -errno. */
static int load(struct remember *r)
{
	FILE *f = fopen(r->path, "rb");
	if (f == NULL)
		return errno == ENOENT ? 0 : -errno;
	unsigned char *buf = NULL;
	size_t len = 0, cap = 0;
	int rc = 0;
	for (;;) {
		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 65536;
			unsigned char *p = realloc(buf, ncap);
			if (p == NULL) {
				rc = -ENOMEM;
				break;
			}
			buf = p;
			cap = ncap;
		}
		size_t got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0) {
			if (ferror(f))
				rc = -EIO;
			break;
		}
	}
	fclose(f);
	if (rc == 0 && len > 0) {
		if (len < sizeof header || memcmp(buf, header, sizeof header) != 0)
			log_warn(r->log, "remembered entities: %s is not a log of this format; starting empty", r->path);
		else
			rc = load_records(r, buf, len);
	}
	free(buf);
	return rc;
}

struct writer {
	FILE *f;
	uint32_t shard;
	int rc;
};

static void write_entity(struct entity *e, void *arg)
{
	struct writer *w = arg;
	if (w->rc == 0)
		w->rc = write_record(w->f, '+', w->shard, entity_id(e), e->id_len);
}

/* fsync of the directory holding `path`, so a rename in it is durable.
 * Best effort: a failure only weakens durability, which is logged nowhere
 * else either. */
static void sync_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 1;
	char *dir = malloc(len + 1);
	if (dir == NULL)
		return;
	memcpy(dir, slash ? path : ".", len);
	dir[len] = '\0';
	int fd = open(len ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
}

/* Writes the sets to a new file and puts it in place of the log, then
 * opens the log for appending. Returns 0 or -errno. */
static int compact(struct remember *r)
{
	size_t tmp_len = strlen(r->path) + 5;
	char *tmp = malloc(tmp_len);
	if (tmp == NULL)
		return -ENOMEM;
	snprintf(tmp, tmp_len, "%s.tmp", r->path);
	FILE *f = fopen(tmp, "wb");
	int rc = f == NULL ? -errno : 0;
	if (rc == 0 && fwrite(header, 1, sizeof header, f) != sizeof header)
		rc = -EIO;
	for (uint32_t s = 0; rc == 0 && s < r->nshards; s++) {
		struct writer w = {f, s, 0};
		entity_table_each(&r->sets[s], write_entity, &w);
		rc = w.rc;
	}
	/* On disk before it replaces the log, or a crash after the rename
	 * could leave an empty log where a full one was. */
	if (rc == 0 && (fflush(f) != 0 || fsync(fileno(f)) != 0))
		rc = -errno;
	if (f != NULL && fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, r->path) != 0)
		rc = -errno;
	if (rc == 0)
		sync_dir(r->path);
	if (rc != 0)
		remove(tmp);
	free(tmp);
	if (rc == 0 && (r->file = fopen(r->path, "ab")) == NULL)
		rc = -errno;
	r->log_bytes = sizeof header + r->live_bytes;
	return rc;
}

/* ---- the store ---- */

/* Two nodes appending to and compacting one log would lose each other's
 * records: the first to open it holds a lock (on a file beside it, which
 * compaction does not replace). Returns 0, -EWOULDBLOCK, or -errno. */
static int lock_log(struct remember *r)
{
	size_t len = strlen(r->path) + sizeof ".lock";
	char *path = malloc(len);
	if (path == NULL)
		return -ENOMEM;
	snprintf(path, len, "%s.lock", r->path);
	int fd = store_lock_file(path);
	free(path);
	if (fd < 0)
		return fd;
	r->lock_fd = fd;
	return 0;
}

struct remember *remember_open(const char *dir, const char *type, uint32_t nshards, const struct logger *log,
			       int *err)
{
	struct remember *r = calloc(1, sizeof *r);
	if (r == NULL || (r->sets = calloc(nshards ? nshards : 1, sizeof *r->sets)) == NULL) {
		free(r);
		*err = -ENOMEM;
		return NULL;
	}
	r->log = log;
	r->nshards = nshards;
	r->lock_fd = -1;
	*err = 0;
	if (dir == NULL)
		return r;
	size_t path_len = strlen(dir) + strlen(type) + sizeof "/.entities";
	if ((r->path = malloc(path_len)) == NULL) {
		remember_free(r);
		*err = -ENOMEM;
		return NULL;
	}
	snprintf(r->path, path_len, "%s/%s.entities", dir, type);
	if ((*err = store_make_dirs(dir)) != 0) {
		log_error(log, "remembered entities: cannot create %s: %s", dir, strerror(-*err));
	} else if ((*err = lock_log(r)) != 0) {
		log_error(log, "remembered entities: %s is in use by another node (each needs its own data_dir)",
			  r->path);
	} else if ((*err = load(r)) != 0) {
		log_error(log, "remembered entities: cannot read %s: %s", r->path, strerror(-*err));
	} else if ((*err = compact(r)) != 0) {
		log_error(log, "remembered entities: cannot write %s: %s", r->path, strerror(-*err));
	}
	if (*err != 0) {
		remember_free(r);
		return NULL;
	}
	return r;
}

void remember_free(struct remember *r)
{
	if (r == NULL)
		return;
	if (r->file != NULL && fclose(r->file) != 0 && !r->write_failed)
		log_error(r->log, "remembered entities: cannot write %s: %s", r->path, strerror(errno));
	if (r->lock_fd >= 0)
		close(r->lock_fd); /* and with it the lock */
	for (uint32_t s = 0; r->sets != NULL && s < r->nshards; s++)
		entity_table_clear(&r->sets[s], NULL, NULL);
	free(r->sets);
	free(r->path);
	free(r);
}

int remember_add(struct remember *r, uint32_t shard, const char *id, size_t len)
{
	uint32_t home;
	if (shard >= r->nshards || phash2_range(id, len, r->nshards, &home) != 0 || home != shard)
		return -EINVAL;
	int rc = set_add(r, shard, id, len);
	if (rc == 1)
		append(r, '+', shard, id, len);
	return rc;
}

int remember_remove(struct remember *r, uint32_t shard, const char *id, size_t len)
{
	if (shard >= r->nshards)
		return -EINVAL;
	int rc = set_remove(r, shard, id, len);
	if (rc == 1)
		append(r, '-', shard, id, len);
	return rc;
}

bool remember_contains(const struct remember *r, uint32_t shard, const char *id, size_t len)
{
	return shard < r->nshards && entity_table_find(&r->sets[shard], id, len, entity_table_hash(id, len)) != NULL;
}

struct each_ctx {
	void (*fn)(void *arg, const char *id, size_t len);
	void *arg;
};

static void each_entity(struct entity *e, void *arg)
{
	struct each_ctx *c = arg;
	c->fn(c->arg, entity_id(e), e->id_len);
}

void remember_each(const struct remember *r, uint32_t shard, void (*fn)(void *arg, const char *id, size_t len),
		   void *arg)
{
	if (shard >= r->nshards)
		return;
	struct each_ctx c = {fn, arg};
	entity_table_each(&r->sets[shard], each_entity, &c);
}

size_t remember_count(const struct remember *r, uint32_t shard)
{
	return shard < r->nshards ? r->sets[shard].count : 0;
}

void remember_flush(struct remember *r)
{
	if (r == NULL || r->file == NULL || r->write_failed)
		return;
	if (fflush(r->file) != 0) {
		r->write_failed = true;
		log_error(r->log, "remembered entities: cannot write %s: %s; carrying on in memory", r->path,
			  strerror(errno));
		return;
	}
	if (r->log_bytes > COMPACT_RATIO * r->live_bytes + COMPACT_FLOOR) {
		fclose(r->file);
		r->file = NULL;
		int rc = compact(r);
		if (rc != 0) {
			r->write_failed = true;
			log_error(r->log, "remembered entities: cannot compact %s: %s; carrying on in memory", r->path,
				  strerror(-rc));
		}
	}
}
