/*
 * test_epmd.c — the epmd message codecs and the port setting. Expected bytes
 * are written out by hand from erts/doc erl_dist_protocol, not produced by
 * the code under test.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "protocol/epmd.h"
#include "unit_helpers.h"

/* ---- requests ---- */

Test(epmd, alive2_request_bytes)
{
	/* Len=22 | 120, Port=4370, hidden (72), TCP/IPv4 (0), High=6, Low=6,
	 * NLen=9, "shardnode", ELen=0. */
	static const uint8_t want[] = {0,   22,  120, 0x11, 0x12, 72,  0,   0,   6,   0,   6,   0,
				       9,   's', 'h', 'a',  'r',  'd', 'n', 'o', 'd', 'e', 0,   0};
	struct bytebuf b = {0};
	cr_assert_eq(epmd_encode_alive2_req(&b, 4370, "shardnode"), 0);
	sn_assert_bytes(&b, want, sizeof want);
	bytebuf_free(&b);
}

Test(epmd, alive2_request_name_lengths)
{
	struct bytebuf b = {0};
	cr_assert_eq(epmd_encode_alive2_req(&b, 1, ""), -EINVAL);
	cr_assert_eq(bytebuf_size(&b), 0, "nothing written on error");

	char name[257];
	memset(name, 'n', 256);
	name[256] = '\0';
	cr_assert_eq(epmd_encode_alive2_req(&b, 1, name), -EINVAL);
	cr_assert_eq(bytebuf_size(&b), 0);

	name[255] = '\0';
	cr_assert_eq(epmd_encode_alive2_req(&b, 0xFFFF, name), 0);
	cr_assert_eq(bytebuf_size(&b), 2 + 13 + 255);
	const uint8_t *h = bytebuf_head(&b);
	cr_assert_eq(h[0] << 8 | h[1], 13 + 255);
	cr_assert_eq(h[3], 0xFF);
	cr_assert_eq(h[4], 0xFF);
	cr_assert_eq(h[11] << 8 | h[12], 255);
	cr_assert_eq(h[13 + 255], 0);
	cr_assert_eq(h[14 + 255], 0);
	bytebuf_free(&b);
}

Test(epmd, port_please2_request_bytes)
{
	static const uint8_t want[] = {0, 5, 122, 'p', 'e', 'e', 'r'};
	struct bytebuf b = {0};
	cr_assert_eq(epmd_encode_port_please2_req(&b, "peer"), 0);
	sn_assert_bytes(&b, want, sizeof want);
	cr_assert_eq(epmd_encode_port_please2_req(&b, ""), -EINVAL);
	sn_assert_bytes(&b, want, sizeof want);
	bytebuf_free(&b);
}

/* ---- ALIVE2 replies, byte by byte ---- */

static void check_alive2_resp(const uint8_t *msg, size_t n, uint8_t want_result, uint32_t want_creation)
{
	for (size_t k = 0; k <= n; k++) {
		uint8_t *p = (uint8_t *)sn_dup_exact(msg, k);
		uint8_t result = 0xEE;
		uint32_t creation = 0xEEEEEEEE;
		int rc = epmd_decode_alive2_resp(p, k, &result, &creation);
		if (k < n) {
			cr_assert_eq(rc, 0, "%zu of %zu bytes gave %d", k, n, rc);
		} else {
			cr_assert_eq(rc, 1);
			cr_assert_eq(result, want_result);
			cr_assert_eq(creation, want_creation);
		}
		free(p);
	}
}

Test(epmd, alive2_x_resp)
{
	static const uint8_t ok[] = {118, 0, 0x12, 0x34, 0x56, 0x78};
	check_alive2_resp(ok, sizeof ok, 0, 0x12345678);
	static const uint8_t taken[] = {118, 1, 0, 0, 0, 0};
	check_alive2_resp(taken, sizeof taken, 1, 0);
}

Test(epmd, alive2_resp_with_16_bit_creation)
{
	static const uint8_t ok[] = {121, 0, 0x00, 0x03};
	check_alive2_resp(ok, sizeof ok, 0, 3);
	static const uint8_t high[] = {121, 0, 0xAB, 0xCD};
	check_alive2_resp(high, sizeof high, 0, 0xABCD);
}

Test(epmd, alive2_resp_bad_tag)
{
	const uint8_t tags[] = {0, 119, 120, 122, 255};
	for (size_t i = 0; i < sizeof tags; i++) {
		uint8_t msg[6] = {tags[i], 0, 0, 0, 0, 1};
		uint8_t result;
		uint32_t creation;
		cr_assert_eq(epmd_decode_alive2_resp(msg, 1, &result, &creation), -EPROTO, "tag %d", tags[i]);
		cr_assert_eq(epmd_decode_alive2_resp(msg, 6, &result, &creation), -EPROTO, "tag %d", tags[i]);
	}
}

/* ---- PORT2 replies, byte by byte ---- */

static void check_port2_found(const uint8_t *msg, size_t n, uint16_t want_port, uint16_t want_high)
{
	for (size_t k = 0; k <= n; k++) {
		uint8_t *p = (uint8_t *)sn_dup_exact(msg, k);
		uint8_t result = 0xEE;
		uint16_t port = 0xEEEE, high = 0xEEEE;
		int rc = epmd_decode_port2_resp(p, k, &result, &port, &high);
		if (k < n) {
			cr_assert_eq(rc, 0, "%zu of %zu bytes gave %d", k, n, rc);
		} else {
			cr_assert_eq(rc, 1);
			cr_assert_eq(result, 0);
			cr_assert_eq(port, want_port);
			cr_assert_eq(high, want_high);
		}
		free(p);
	}
}

Test(epmd, port2_resp_found)
{
	/* 119, Result=0, Port=9100, normal node (77), TCP (0), High=6, Low=5,
	 * NLen=4 "peer", ELen=0. */
	static const uint8_t found[] = {119, 0, 0x23, 0x8c, 77, 0, 0, 6, 0, 5, 0, 4, 'p', 'e', 'e', 'r', 0, 0};
	check_port2_found(found, sizeof found, 9100, 6);
}

Test(epmd, port2_resp_found_with_extra)
{
	/* The same with two bytes of Extra: the reply is whole only with them. */
	static const uint8_t found[] = {119, 0, 0xFF, 0xFE, 72, 0, 0, 6, 0, 6, 0, 1, 'x', 0, 2, 0xAA, 0xBB};
	check_port2_found(found, sizeof found, 0xFFFE, 6);
}

Test(epmd, port2_resp_not_found)
{
	static const uint8_t missing[] = {119, 1};
	uint8_t result = 0;
	uint16_t port = 0xEEEE, high = 0xEEEE;
	uint8_t *p = (uint8_t *)sn_dup_exact(missing, 1);
	cr_assert_eq(epmd_decode_port2_resp(p, 1, &result, &port, &high), 0);
	free(p);
	p = (uint8_t *)sn_dup_exact(missing, 2);
	cr_assert_eq(epmd_decode_port2_resp(p, 2, &result, &port, &high), 1);
	cr_assert_eq(result, 1);
	cr_assert_eq(port, 0xEEEE, "no port on failure");
	free(p);
	p = (uint8_t *)sn_dup_exact(missing, 0);
	cr_assert_eq(epmd_decode_port2_resp(p, 0, &result, &port, &high), 0);
	free(p);
}

Test(epmd, port2_resp_bad_tag)
{
	const uint8_t tags[] = {0, 118, 120, 121, 255};
	for (size_t i = 0; i < sizeof tags; i++) {
		uint8_t msg[2] = {tags[i], 0};
		uint8_t result;
		uint16_t port, high;
		cr_assert_eq(epmd_decode_port2_resp(msg, 1, &result, &port, &high), -EPROTO, "tag %d", tags[i]);
		cr_assert_eq(epmd_decode_port2_resp(msg, 2, &result, &port, &high), -EPROTO, "tag %d", tags[i]);
	}
}

/* ---- the port ---- */

Test(epmd, port_from_environment)
{
	cr_assert_eq(unsetenv("ERL_EPMD_PORT"), 0);
	cr_assert_eq(epmd_port(), 4369);
	cr_assert_eq(setenv("ERL_EPMD_PORT", "4400", 1), 0);
	cr_assert_eq(epmd_port(), 4400);
	const char *const bad[] = {"", "0", "65536", "-1", "43a", "abc", "4400x"};
	for (size_t i = 0; i < SN_ARRAY_LEN(bad); i++) {
		cr_assert_eq(setenv("ERL_EPMD_PORT", bad[i], 1), 0);
		cr_assert_eq(epmd_port(), 4369, "'%s' taken as a port", bad[i]);
	}
	cr_assert_eq(setenv("ERL_EPMD_PORT", "65535", 1), 0);
	cr_assert_eq(epmd_port(), 65535);
}
