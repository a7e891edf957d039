/*
 * test_bytebuf.c — the growable byte buffer with a read cursor.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "base/bytebuf.h"
#include "unit_helpers.h"

Test(bytebuf, empty)
{
	struct bytebuf b = {0};
	cr_assert_eq(bytebuf_size(&b), 0);
	cr_assert_eq(bytebuf_append(&b, "x", 0), 0, "appending nothing");
	cr_assert_null(b.data, "appending nothing allocates nothing");
	bytebuf_free(&b);
	bytebuf_free(&b); /* twice is harmless */
	cr_assert_null(b.data);
}

Test(bytebuf, append_and_consume)
{
	struct bytebuf b = {0};
	cr_assert_eq(bytebuf_append(&b, "hello", 5), 0);
	cr_assert_eq(bytebuf_append(&b, ", world", 7), 0);
	sn_assert_bytes(&b, "hello, world", 12);

	bytebuf_consume(&b, 7);
	sn_assert_bytes(&b, "world", 5);
	cr_assert_eq(b.off, 7);

	bytebuf_consume(&b, 5);
	cr_assert_eq(bytebuf_size(&b), 0);
	cr_assert_eq(b.off, 0, "an emptied buffer starts again at 0");
	cr_assert_eq(b.len, 0);
	cr_assert_not_null(b.data, "the memory is kept for the next append");
	bytebuf_free(&b);
}

Test(bytebuf, byte_by_byte_growth)
{
	/* Appending one byte at a time through several doublings keeps every
	 * byte in order. */
	struct bytebuf b = {0};
	for (size_t i = 0; i < 5000; i++) {
		uint8_t v = (uint8_t)(i * 31);
		cr_assert_eq(bytebuf_append(&b, &v, 1), 0);
	}
	cr_assert_eq(bytebuf_size(&b), 5000);
	cr_assert_geq(b.cap, 5000);
	for (size_t i = 0; i < 5000; i++)
		cr_assert_eq(bytebuf_head(&b)[i], (uint8_t)(i * 31), "byte %zu", i);
	bytebuf_free(&b);
	cr_assert_eq(b.cap, 0);
	cr_assert_eq(b.len, 0);
}

Test(bytebuf, reserve_compacts_before_growing)
{
	struct bytebuf b = {0};
	uint8_t chunk[200];
	for (size_t i = 0; i < sizeof chunk; i++)
		chunk[i] = (uint8_t)i;
	cr_assert_eq(bytebuf_append(&b, chunk, 200), 0);
	size_t cap = b.cap;
	uint8_t *data = b.data;
	bytebuf_consume(&b, 150);

	/* 50 unread bytes + 150 more fit in the same block once moved down. */
	cr_assert_eq(bytebuf_reserve(&b, cap - 50), 0);
	cr_assert_eq(b.data, data, "no new block");
	cr_assert_eq(b.cap, cap);
	cr_assert_eq(b.off, 0);
	sn_assert_bytes(&b, chunk + 150, 50);

	/* One byte more than that needs a bigger block, bytes intact. */
	cr_assert_eq(bytebuf_reserve(&b, cap - 50 + 1), 0);
	cr_assert_gt(b.cap, cap);
	sn_assert_bytes(&b, chunk + 150, 50);
	cr_assert_geq(b.cap - b.len, cap - 50 + 1);
	bytebuf_free(&b);
}

Test(bytebuf, reserve_when_room_is_there)
{
	struct bytebuf b = {0};
	cr_assert_eq(bytebuf_append(&b, "abc", 3), 0);
	uint8_t *data = b.data;
	size_t cap = b.cap;
	cr_assert_eq(bytebuf_reserve(&b, cap - 3), 0);
	cr_assert_eq(b.data, data);
	cr_assert_eq(b.cap, cap);
	cr_assert_eq(bytebuf_reserve(&b, 0), 0);
	sn_assert_bytes(&b, "abc", 3);
	bytebuf_free(&b);
}

Test(bytebuf, impossible_reserve_leaves_the_buffer_alone)
{
	struct bytebuf b = {0};
	cr_assert_eq(bytebuf_append(&b, "keep", 4), 0);
	struct bytebuf before = b;
	cr_assert_eq(bytebuf_reserve(&b, SIZE_MAX), -ENOMEM);
	cr_assert_eq(bytebuf_reserve(&b, SIZE_MAX / 2), -ENOMEM);
	cr_assert_eq(b.data, before.data);
	cr_assert_eq(b.cap, before.cap);
	cr_assert_eq(b.len, before.len);
	cr_assert_eq(b.off, before.off);
	sn_assert_bytes(&b, "keep", 4);
	cr_assert_eq(bytebuf_append(&b, "x", SIZE_MAX), -ENOMEM);
	sn_assert_bytes(&b, "keep", 4);
	bytebuf_free(&b);
}

Test(bytebuf, shrink_idle)
{
	struct bytebuf b = {0};
	char big[4096];
	memset(big, 'b', sizeof big);
	cr_assert_eq(bytebuf_append(&b, big, sizeof big), 0);

	bytebuf_shrink_idle(&b, 256);
	cr_assert_not_null(b.data, "not idle: bytes are waiting");
	sn_assert_bytes(&b, big, sizeof big);

	bytebuf_consume(&b, sizeof big);
	bytebuf_shrink_idle(&b, 1u << 20);
	cr_assert_not_null(b.data, "idle but within keep_cap");

	bytebuf_shrink_idle(&b, 256);
	cr_assert_null(b.data, "idle and larger than keep_cap");
	cr_assert_eq(b.cap, 0);

	/* Usable again afterwards. */
	cr_assert_eq(bytebuf_append(&b, "again", 5), 0);
	sn_assert_bytes(&b, "again", 5);
	bytebuf_free(&b);
}

Test(bytebuf, interleaved_queue)
{
	/* Used as a FIFO: what goes in comes out in order, across compactions
	 * and growth. */
	struct bytebuf b = {0};
	uint32_t next_in = 0, next_out = 0;
	for (int round = 0; round < 2000; round++) {
		size_t add = (size_t)(round * 7 % 61) + 1;
		for (size_t i = 0; i < add; i++) {
			uint8_t v = (uint8_t)(next_in++ * 13);
			cr_assert_eq(bytebuf_append(&b, &v, 1), 0);
		}
		size_t take = (size_t)(round * 5 % 67);
		if (take > bytebuf_size(&b))
			take = bytebuf_size(&b);
		for (size_t i = 0; i < take; i++)
			cr_assert_eq(bytebuf_head(&b)[i], (uint8_t)((next_out + i) * 13));
		next_out += (uint32_t)take;
		bytebuf_consume(&b, take);
		cr_assert_eq(bytebuf_size(&b), next_in - next_out);
	}
	bytebuf_free(&b);
}
