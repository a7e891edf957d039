/* term_map_keys.c — see term_map_keys.h. */
#include "etf/term_map_keys.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ei.h>

#include "base/byteorder.h"
#include "etf/entity_id.h"
#include "etf/term.h"

/* A key's bytes, for the byte-by-byte comparison. */
struct raw_key {
	const char *p;
	size_t n;
};

static int raw_order(const void *x, const void *y)
{
	const struct raw_key *a = x, *b = y;
	if (a->n != b->n)
		return a->n < b->n ? -1 : 1;
	return memcmp(a->p, b->p, a->n);
}

/* Keys with no canonical form (a pid, say): equal only if their bytes are
 * (a pid sent in two encodings is not caught: no BEAM writes that). */
static int raw_keys_distinct(const char *term, size_t at, uint32_t n)
{
	struct raw_key *keys = malloc(n * sizeof *keys);
	if (keys == NULL)
		return -ENOMEM;
	size_t i = at;
	for (uint32_t k = 0; k < n; k++) {
		keys[k].p = term + i;
		term_skip(term, &i);
		keys[k].n = (size_t)(term + i - keys[k].p);
		term_skip(term, &i); /* its value */
	}
	qsort(keys, n, sizeof *keys, raw_order);
	int rc = 0;
	for (uint32_t k = 1; k < n && rc == 0; k++)
		if (raw_order(&keys[k - 1], &keys[k]) == 0)
			rc = -EPROTO;
	free(keys);
	return rc;
}

/* The map whose pairs start at term[at], n of them: its keys, with [] for
 * values, form a map of their own, which entity_id_canonical refuses if
 * two keys are the same term. */
static int keys_distinct(const char *term, size_t at, uint32_t n)
{
	ei_x_buff keys, canon;
	if (ei_x_new(&keys) < 0)
		return -ENOMEM;
	char head[5] = {(char)ERL_MAP_EXT};
	be32_write(head + 1, n);
	int rc = ei_x_append_buf(&keys, head, sizeof head) < 0 ? -ENOMEM : 0;
	size_t i = at;
	static const char nil = (char)ERL_NIL_EXT;
	for (uint32_t k = 0; k < n && rc == 0; k++) {
		size_t key = i;
		term_skip(term, &i);
		if (ei_x_append_buf(&keys, term + key, (int)(i - key)) < 0 || ei_x_append_buf(&keys, &nil, 1) < 0)
			rc = -ENOMEM;
		term_skip(term, &i); /* its value */
	}
	if (rc == 0 && ei_x_new(&canon) < 0)
		rc = -ENOMEM;
	if (rc == 0) {
		rc = entity_id_canonical(keys.buff, (size_t)keys.index, &canon);
		ei_x_free(&canon);
		if (rc == -EINVAL)
			rc = raw_keys_distinct(term, at, n);
	}
	ei_x_free(&keys);
	return rc;
}

/* Map by map: for a term that holds a pid, port, reference or fun. */
static int each_map(const char *term, size_t len)
{
	const unsigned char *b = (const unsigned char *)term;
	size_t i = 0;
	/* Every subterm in order; a fun whole (its free variables are not
	 * looked into, term_map_keys.h). */
	while (i < len) {
		if (b[i] == ERL_MAP_EXT) {
			uint32_t n = be32_read(b + i + 1);
			if (n >= 2) {
				int rc = keys_distinct(term, i + 5, n);
				if (rc)
					return rc;
			}
		}
		term_step(term, &i, false);
	}
	return 0;
}

int term_map_keys_check(const char *term, size_t len)
{
	/* The canonical form of the whole term orders every map's keys and
	 * refuses a duplicate, in one linear pass, however deep the maps
	 * nest. Only a term it cannot take (a pid, say) is checked map by
	 * map, each map's keys on their own. */
	ei_x_buff canon;
	if (ei_x_new(&canon) < 0)
		return -ENOMEM;
	int rc = entity_id_canonical(term, len, &canon);
	ei_x_free(&canon);
	return rc == -EINVAL ? each_map(term, len) : rc;
}
