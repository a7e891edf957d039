/* reachability.c — see reachability.h. */
#include "cluster/reachability.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/node_name.h"
#include "etf/term.h"
#include "etf/term_digest.h"
#include "etf/term_encode.h"

void reachability_free(struct reachability *r)
{
	for (size_t k = 0; k < r->n; k++)
		free(r->records[k].subjects);
	free(r->records);
	r->records = NULL;
	r->n = r->cap = 0;
	r->digest = 0;
	free(r->named);
	r->named = NULL;
	r->nnamed = r->named_cap = 0;
}

static struct reach_named *named_entry(const struct reachability *r, const char *node)
{
	for (size_t k = 0; k < r->nnamed; k++)
		if (strcmp(r->named[k].node, node) == 0)
			return &r->named[k];
	return NULL;
}

uint32_t reachability_times_named(const struct reachability *r, const char *node)
{
	const struct reach_named *e = named_entry(r, node);
	return e ? e->times : 0;
}

/* One more for `node` (shorter than REACH_NAME_MAX); skipped without memory. */
static void note_named(struct reachability *r, const char *node)
{
	struct reach_named *e = named_entry(r, node);
	if (e == NULL) {
		if (r->nnamed == r->named_cap) {
			size_t cap = r->named_cap ? r->named_cap * 2 : 8;
			struct reach_named *p = realloc(r->named, cap * sizeof *p);
			if (p == NULL)
				return;
			r->named = p;
			r->named_cap = cap;
		}
		e = &r->named[r->nnamed++];
		memset(e, 0, sizeof *e);
		memcpy(e->node, node, strlen(node) + 1);
	}
	if (e->times < UINT32_MAX)
		e->times++;
}

void reachability_halve_named(struct reachability *r)
{
	size_t kept = 0;
	for (size_t k = 0; k < r->nnamed; k++) {
		r->named[k].times /= 2;
		if (r->named[k].times > 0)
			r->named[kept++] = r->named[k];
	}
	r->nnamed = kept;
}

const struct reach_record *reachability_find(const struct reachability *r, const char *observer)
{
	for (size_t k = 0; k < r->n; k++)
		if (strcmp(r->records[k].observer, observer) == 0)
			return &r->records[k];
	return NULL;
}

static bool lists(const struct reach_record *rec, const char *subject)
{
	for (size_t s = 0; s < rec->nsubjects; s++)
		if (strcmp(rec->subjects[s], subject) == 0)
			return true;
	return false;
}

bool reachability_has(const struct reachability *r, const char *observer, const char *subject)
{
	const struct reach_record *rec = reachability_find(r, observer);
	return rec != NULL && lists(rec, subject);
}

/* The same set, in any order (subjects are distinct within a record). */
static bool same_set(const struct reach_record *rec, const char *const *subjects, size_t n)
{
	if (rec->nsubjects != n)
		return false;
	for (size_t s = 0; s < n; s++)
		if (!lists(rec, subjects[s]))
			return false;
	return true;
}

bool reachability_lists_exactly(const struct reachability *r, const char *observer, const char *const *subjects,
				size_t n)
{
	const struct reach_record *rec = reachability_find(r, observer);
	return rec != NULL && same_set(rec, subjects, n);
}

int reachability_update(struct reachability *r, const char *observer, uint64_t version,
			const char *const *subjects, size_t n)
{
	if (strlen(observer) >= REACH_NAME_MAX)
		return -EINVAL;
	for (size_t s = 0; s < n; s++)
		if (strlen(subjects[s]) >= REACH_NAME_MAX)
			return -EINVAL;
	struct reach_record *rec = (struct reach_record *)reachability_find(r, observer);
	if (rec != NULL && version <= rec->version)
		return 0;
	if (rec != NULL && same_set(rec, subjects, n)) {
		rec->version = version;
		r->digest = 0;
		return 0;
	}
	char (*copy)[REACH_NAME_MAX] = NULL;
	size_t ncopy = 0;
	if (n > 0) {
		if ((copy = calloc(n, sizeof *copy)) == NULL)
			return -ENOMEM;
		/* A subject listed twice is kept once. */
		for (size_t s = 0; s < n; s++) {
			bool dup = false;
			for (size_t d = 0; d < ncopy && !dup; d++)
				dup = strcmp(copy[d], subjects[s]) == 0;
			if (!dup)
				memcpy(copy[ncopy++], subjects[s], strlen(subjects[s]) + 1);
		}
	}
	if (rec == NULL) {
		if (r->n == r->cap) {
			size_t cap = r->cap ? r->cap * 2 : 8;
			struct reach_record *p = realloc(r->records, cap * sizeof *p);
			if (p == NULL) {
				free(copy);
				return -ENOMEM;
			}
			r->records = p;
			r->cap = cap;
		}
		rec = &r->records[r->n++];
		memset(rec, 0, sizeof *rec);
		memcpy(rec->observer, observer, strlen(observer) + 1);
	}
	for (size_t s = 0; s < ncopy; s++) {
		if (lists(rec, copy[s]))
			continue;
		note_named(r, copy[s]);
		note_named(r, observer);
	}
	free(rec->subjects);
	rec->subjects = copy;
	rec->nsubjects = ncopy;
	rec->version = version;
	r->digest = 0;
	return 1;
}

uint64_t reachability_next_version(uint64_t last, uint64_t wall_clock_ms)
{
	return wall_clock_ms > last ? wall_clock_ms : last + 1;
}

/* {Observer, Version, [Subject]}. Returns 0 or -ENOMEM. */
static int encode_record(const struct reach_record *rec, ei_x_buff *x)
{
	if (ei_x_encode_tuple_header(x, 3) < 0 || term_x_encode_atom(x, rec->observer) < 0 ||
	    term_x_encode_uint(x, rec->version) < 0)
		return -ENOMEM;
	if (rec->nsubjects && ei_x_encode_list_header(x, (long)rec->nsubjects) < 0)
		return -ENOMEM;
	for (size_t s = 0; s < rec->nsubjects; s++)
		if (term_x_encode_atom(x, rec->subjects[s]) < 0)
			return -ENOMEM;
	return ei_x_encode_empty_list(x) < 0 ? -ENOMEM : 0;
}

int reachability_encode(const struct reachability *r, ei_x_buff *x)
{
	if (r->n && ei_x_encode_list_header(x, (long)r->n) < 0)
		return -ENOMEM;
	for (size_t k = 0; k < r->n; k++)
		if (encode_record(&r->records[k], x) != 0)
			return -ENOMEM;
	return ei_x_encode_empty_list(x) < 0 ? -ENOMEM : 0;
}

int reachability_encode_one(const struct reachability *r, const char *observer, ei_x_buff *x)
{
	const struct reach_record *rec = reachability_find(r, observer);
	if (rec != NULL && (ei_x_encode_list_header(x, 1) < 0 || encode_record(rec, x) != 0))
		return -ENOMEM;
	return ei_x_encode_empty_list(x) < 0 ? -ENOMEM : 0;
}

static int encode_record_at(const void *records, size_t k, ei_x_buff *x)
{
	return encode_record(&((const struct reach_record *)records)[k], x);
}

/* A record's subjects are in the order its observer gave them, the same in
 * every copy; the records' order does not count (term_digest). */
uint64_t reachability_digest(struct reachability *r)
{
	if (r->digest == 0)
		r->digest = term_digest(r->records, r->n, encode_record_at);
	return r->digest;
}

/* Reads a proper list header at t[*i]: its length (0 for NIL). For the
 * tail of a non-empty list, read_list_end. Returns -1 if not a list. */
static int read_list(const char *t, size_t *i)
{
	int ii = (int)*i, arity;
	if (ei_decode_list_header(t, &ii, &arity) < 0)
		return -1;
	*i = (size_t)ii;
	return arity;
}

static bool read_list_end(const char *t, size_t *i, int arity)
{
	return arity == 0 || read_list(t, i) == 0;
}

/* One {Observer, Version, [Subject]}: merged, or -EPROTO / -ENOMEM. */
static int merge_one(struct reachability *r, const char *t, size_t *i)
{
	char observer[NODE_NAME_BUF];
	unsigned long long version;
	if (term_get_tuple(t, i) != 3 || term_get_atom_sized(t, i, observer, sizeof observer))
		return -EPROTO;
	int ii = (int)*i;
	if (ei_decode_ulonglong(t, &ii, &version) < 0)
		return -EPROTO;
	*i = (size_t)ii;
	int n = read_list(t, i);
	if (n < 0)
		return -EPROTO;
	char (*names)[NODE_NAME_BUF] = n ? calloc((size_t)n, sizeof *names) : NULL;
	const char **subjects = n ? calloc((size_t)n, sizeof *subjects) : NULL;
	int rc = 0;
	if (n && (names == NULL || subjects == NULL))
		rc = -ENOMEM;
	for (int s = 0; rc == 0 && s < n; s++) {
		if (term_get_atom_sized(t, i, names[s], sizeof names[s]))
			rc = -EPROTO;
		subjects[s] = names[s];
	}
	if (rc == 0 && !read_list_end(t, i, n))
		rc = -EPROTO;
	if (rc == 0) {
		rc = reachability_update(r, observer, version, subjects, (size_t)n);
		if (rc == -EINVAL)
			rc = -EPROTO; /* a name too long for a node name */
	}
	free(names);
	free(subjects);
	return rc;
}

int reachability_merge_encoded(struct reachability *r, const char *t, size_t *i)
{
	int n = read_list(t, i);
	if (n < 0)
		return -EPROTO;
	int changed = 0;
	for (int k = 0; k < n; k++) {
		int rc = merge_one(r, t, i);
		if (rc < 0)
			return rc;
		changed += rc;
	}
	return read_list_end(t, i, n) ? changed : -EPROTO;
}
