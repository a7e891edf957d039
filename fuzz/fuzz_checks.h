/*
 * fuzz_checks.h — what the fuzz targets (fuzz/NAME_fuzz.c) share: a check that
 * names itself when it fails, and the property every remembered-entity
 * store must keep whatever input built it. Header-only: each target is
 * one translation unit.
 */
#ifndef SN_FUZZ_CHECKS_H
#define SN_FUZZ_CHECKS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ei.h>

#include "etf/entity_id.h"
#include "etf/phash2.h"
#include "etf/term.h"
#include "etf/term_validate.h"
#include "store/remember.h"

/* A failed check names itself, then aborts (libFuzzer keeps the input). */
static inline void fuzz_check_failed(const char *file, int line, const char *what)
{
	fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
	abort();
}
#define check(ok) ((ok) ? (void)0 : fuzz_check_failed(__FILE__, __LINE__, #ok))

struct fuzz_id_check {
	uint32_t shard, nshards;
	size_t count;
};

/* remember_each's callback: the id is one canonical entity id, in the
 * shard phash2 gives it. */
static inline void fuzz_check_remembered_id(void *arg, const char *id, size_t len)
{
	struct fuzz_id_check *c = arg;
	size_t end = 0;
	check(term_validate(id, len, &end) == 0 && end == len);
	ei_x_buff canon;
	check(ei_x_new(&canon) == 0);
	check(entity_id_canonical(id, len, &canon) == 0 && (size_t)canon.index == len &&
	      memcmp(canon.buff, id, len) == 0);
	ei_x_free(&canon);
	uint32_t shard;
	check(phash2_range(id, len, c->nshards, &shard) == 0 && shard == c->shard);
	c->count++;
}

/* Checks every id `store` keeps for `shard` of `nshards`; returns how many
 * there are, which must be remember_count's. */
static inline size_t fuzz_check_remembered_shard(const struct remember *store, uint32_t shard, uint32_t nshards)
{
	struct fuzz_id_check c = {shard, nshards, 0};
	remember_each(store, shard, fuzz_check_remembered_id, &c);
	check(c.count == remember_count(store, shard));
	return c.count;
}

#endif
