/*
 * test_byteorder.c — big-endian reads and writes: known bytes, every byte
 * position carrying its own value, unaligned addresses, and the writers'
 * returned cursor.
 */
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "base/byteorder.h"
#include "unit_helpers.h"

Test(byteorder, reads_known_bytes)
{
	const unsigned char b[8] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
	cr_assert_eq(be16_read(b), 0x0123);
	cr_assert_eq(be32_read(b), 0x01234567u);
	cr_assert_eq(be64_read(b), 0x0123456789abcdefull);
	const unsigned char ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	cr_assert_eq(be16_read(ones), 0xffff, "no sign extension");
	cr_assert_eq(be32_read(ones), 0xffffffffu);
	cr_assert_eq(be64_read(ones), UINT64_MAX);
}

Test(byteorder, each_byte_lands_in_its_place)
{
	for (unsigned pos = 0; pos < 8; pos++) {
		unsigned char b[8] = {0};
		b[pos] = 0xa5;
		cr_assert_eq(be64_read(b), (uint64_t)0xa5 << (8 * (7 - pos)), "byte %u", pos);
		if (pos < 4)
			cr_assert_eq(be32_read(b), (uint32_t)0xa5 << (8 * (3 - pos)), "byte %u", pos);
		if (pos < 2)
			cr_assert_eq(be16_read(b), (uint16_t)(0xa5 << (8 * (1 - pos))), "byte %u", pos);
	}
}

Test(byteorder, writes_round_trip_at_every_alignment)
{
	for (size_t off = 0; off < 8; off++) {
		unsigned char buf[24];
		memset(buf, 0x5a, sizeof buf);
		unsigned char *p = buf + off;
		unsigned char *q = be16_write(p, 0xbeef);
		cr_assert_eq(q, p + 2);
		q = be32_write(q, 0xdeadbeefu);
		cr_assert_eq(q, p + 6);
		q = be64_write(q, 0x0102030405060708ull);
		cr_assert_eq(q, p + 14);
		const unsigned char want[14] = {0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8};
		cr_assert_arr_eq(p, want, sizeof want, "offset %zu", off);
		cr_assert_eq(be16_read(p), 0xbeef);
		cr_assert_eq(be32_read(p + 2), 0xdeadbeefu);
		cr_assert_eq(be64_read(p + 6), 0x0102030405060708ull);
		for (size_t i = 0; i < off; i++)
			cr_assert_eq(buf[i], 0x5a, "nothing written before the start");
		for (size_t i = off + 14; i < sizeof buf; i++)
			cr_assert_eq(buf[i], 0x5a, "nothing written past the end");
	}
}
