/*
 * unit_helpers.h — small helpers shared by the unit tests.
 *
 * Every helper is static inline: the test files are linked into one binary
 * with -Wmissing-prototypes, so nothing here may become an external symbol.
 */
#ifndef SN_UNIT_HELPERS_H
#define SN_UNIT_HELPERS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "base/bytebuf.h"
#include "base/evloop.h"

#define SN_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Copies n bytes into a heap block of exactly n bytes (one byte when n is 0),
 * so AddressSanitizer reports any read at or past buf[n]. Parsers under test
 * get their input this way; a stack or static array would hide an over-read
 * in neighbouring memory. */
static inline char *sn_dup_exact(const void *src, size_t n)
{
	char *p = malloc(n ? n : 1);
	cr_assert_not_null(p);
	if (n)
		memcpy(p, src, n);
	return p;
}

static inline void sn_put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void sn_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline uint32_t sn_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void sn_x_new(ei_x_buff *x)
{
	cr_assert_eq(ei_x_new(x), 0);
}

static inline void sn_x_new_with_version(ei_x_buff *x)
{
	cr_assert_eq(ei_x_new_with_version(x), 0);
}

/* A pid on `node` with the given number and serial, creation 1. */
static inline erlang_pid sn_pid(const char *node, unsigned num, unsigned serial)
{
	erlang_pid p;
	memset(&p, 0, sizeof p);
	strncpy(p.node, node, sizeof p.node - 1);
	p.num = num;
	p.serial = serial;
	p.creation = 1;
	return p;
}

/* A three-word reference on `node`, distinguished by `id`. */
static inline erlang_ref sn_ref(const char *node, unsigned id)
{
	erlang_ref r;
	memset(&r, 0, sizeof r);
	strncpy(r.node, node, sizeof r.node - 1);
	r.len = 3;
	r.n[0] = id;
	r.n[1] = 0x1234;
	r.n[2] = 0xabcdef;
	r.creation = 1;
	return r;
}

/* Asserts that a bytebuf holds exactly `want` (n bytes). */
static inline void sn_assert_bytes(const struct bytebuf *b, const void *want, size_t n)
{
	cr_assert_eq(bytebuf_size(b), n, "size %zu, expected %zu", bytebuf_size(b), n);
	cr_assert_eq(memcmp(bytebuf_head(b), want, n), 0, "bytes differ");
}

static inline void sn_loop_deadline(struct evloop *loop, void *arg)
{
	(void)arg;
	evloop_stop(loop);
	cr_assert_fail("nothing stopped the loop within its deadline");
}

/* Runs the loop until a callback stops it; failing the test if none has
 * within deadline_ms. */
static inline void sn_run_loop(struct evloop *loop, uint64_t deadline_ms)
{
	struct evloop_timer deadline;
	evloop_timer_init(&deadline, sn_loop_deadline, NULL);
	cr_assert_eq(evloop_timer_start(loop, &deadline, deadline_ms), 0);
	cr_assert_eq(evloop_run(loop), 0);
	evloop_timer_stop(loop, &deadline);
}

#endif
