/*
 * test_handshake.c — the handshake codecs: framing, each message's
 * encoder and decoder, node-name rules and the MD5 digest.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "protocol/handshake.h"
#include "unit_helpers.h"

/* Frames the single message in b, checking the frame is all of b. */
static void unframe(const struct bytebuf *b, const uint8_t **msg, size_t *msg_len)
{
	size_t consumed = 0;
	cr_assert_eq(handshake_frame(bytebuf_head(b), bytebuf_size(b), msg, msg_len, &consumed), 1);
	cr_assert_eq(consumed, bytebuf_size(b));
	cr_assert_eq(*msg_len + 2, consumed);
}

/* Feeds `framed` to handshake_frame one byte more at a time, each time in an
 * exact-size copy: 0 until the last byte, then 1 with the right lengths. */
static void feed_byte_by_byte(const uint8_t *framed, size_t n)
{
	for (size_t k = 0; k <= n; k++) {
		uint8_t *p = (uint8_t *)sn_dup_exact(framed, k);
		const uint8_t *msg = NULL;
		size_t msg_len = 0, consumed = 0;
		int rc = handshake_frame(p, k, &msg, &msg_len, &consumed);
		if (k < n) {
			cr_assert_eq(rc, 0, "%zu of %zu bytes gave %d", k, n, rc);
		} else {
			cr_assert_eq(rc, 1);
			cr_assert_eq(msg, p + 2);
			cr_assert_eq(msg_len, n - 2);
			cr_assert_eq(consumed, n);
		}
		free(p);
	}
}

/* Every strict prefix of a body, and the body with one byte more, must be
 * refused by `decode` (a closure over the message kind). */
typedef int (*decode_fn)(const uint8_t *msg, size_t len);

static void check_truncations(const char *what, const uint8_t *body, size_t len, decode_fn decode)
{
	for (size_t k = 0; k < len; k++) {
		uint8_t *p = (uint8_t *)sn_dup_exact(body, k);
		cr_assert_eq(decode(p, k), -EPROTO, "%s: %zu of %zu bytes accepted", what, k, len);
		free(p);
	}
	uint8_t *longer = (uint8_t *)sn_dup_exact(body, len + 1);
	memcpy(longer, body, len);
	longer[len] = 'x';
	cr_assert_eq(decode(longer, len + 1), -EPROTO, "%s: a trailing byte accepted", what);
	free(longer);
	uint8_t *whole = (uint8_t *)sn_dup_exact(body, len);
	cr_assert_eq(decode(whole, len), 0, "%s: whole body refused", what);
	free(whole);
}

static int decode_name(const uint8_t *m, size_t n)
{
	struct handshake_name out;
	return handshake_decode_name(m, n, &out);
}

static int decode_challenge(const uint8_t *m, size_t n)
{
	struct handshake_challenge out;
	return handshake_decode_challenge(m, n, &out);
}

static int decode_reply(const uint8_t *m, size_t n)
{
	uint32_t c;
	uint8_t d[HANDSHAKE_DIGEST_LEN];
	return handshake_decode_reply(m, n, &c, d);
}

static int decode_ack(const uint8_t *m, size_t n)
{
	uint8_t d[HANDSHAKE_DIGEST_LEN];
	return handshake_decode_ack(m, n, d);
}

static const uint8_t digest_a[HANDSHAKE_DIGEST_LEN] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

/* ---- round trips ---- */

Test(handshake, send_name_round_trip)
{
	struct bytebuf b = {0};
	cr_assert_eq(handshake_encode_name(&b, DFLAG_OURS, 0xdeadbeef, "shardnode@127.0.0.1"), 0);
	const uint8_t *msg;
	size_t len;
	unframe(&b, &msg, &len);
	cr_assert_eq(len, 15 + strlen("shardnode@127.0.0.1"));
	cr_assert_eq(msg[0], 'N');

	struct handshake_name n;
	memset(&n, 0xAA, sizeof n);
	cr_assert_eq(handshake_decode_name(msg, len, &n), 0);
	cr_assert_eq(n.flags, DFLAG_OURS);
	cr_assert_eq(n.creation, 0xdeadbeef);
	cr_assert_str_eq(n.node, "shardnode@127.0.0.1");

	feed_byte_by_byte(bytebuf_head(&b), bytebuf_size(&b));
	check_truncations("send_name", msg, len, decode_name);
	bytebuf_free(&b);
}

Test(handshake, status_round_trip)
{
	const char *const statuses[] = {"ok", "ok_simultaneous", "nok", "not_allowed", "alive", "named:"};
	for (size_t i = 0; i < SN_ARRAY_LEN(statuses); i++) {
		struct bytebuf b = {0};
		cr_assert_eq(handshake_encode_status(&b, statuses[i]), 0);
		const uint8_t *msg;
		size_t len;
		unframe(&b, &msg, &len);
		cr_assert_eq(len, 1 + strlen(statuses[i]));
		char out[32];
		cr_assert_eq(handshake_decode_status(msg, len, out, sizeof out), 0);
		cr_assert_str_eq(out, statuses[i]);
		feed_byte_by_byte(bytebuf_head(&b), bytebuf_size(&b));
		bytebuf_free(&b);
	}
}

Test(handshake, status_refusals)
{
	char out[8];
	cr_assert_eq(handshake_decode_status((const uint8_t *)"s", 1, out, sizeof out), -EPROTO, "empty status");
	cr_assert_eq(handshake_decode_status((const uint8_t *)"", 0, out, sizeof out), -EPROTO);
	cr_assert_eq(handshake_decode_status((const uint8_t *)"tok", 3, out, sizeof out), -EPROTO, "wrong tag");
	cr_assert_eq(handshake_decode_status((const uint8_t *)"so\0k", 4, out, sizeof out), -EPROTO, "embedded NUL");
	/* "s" + 7 characters needs 8 bytes with the NUL: fits; 8 do not. */
	cr_assert_eq(handshake_decode_status((const uint8_t *)"s1234567", 8, out, sizeof out), 0);
	cr_assert_str_eq(out, "1234567");
	cr_assert_eq(handshake_decode_status((const uint8_t *)"s12345678", 9, out, sizeof out), -EPROTO);
}

Test(handshake, challenge_round_trip)
{
	struct bytebuf b = {0};
	cr_assert_eq(handshake_encode_challenge(&b, DFLAG_OURS | DFLAG_PUBLISHED, 0x89abcdef, 7, "peer@host"), 0);
	const uint8_t *msg;
	size_t len;
	unframe(&b, &msg, &len);
	cr_assert_eq(len, 19 + strlen("peer@host"));
	struct handshake_challenge c;
	cr_assert_eq(handshake_decode_challenge(msg, len, &c), 0);
	cr_assert_eq(c.flags, DFLAG_OURS | DFLAG_PUBLISHED);
	cr_assert_eq(c.challenge, 0x89abcdef);
	cr_assert_eq(c.creation, 7);
	cr_assert_str_eq(c.node, "peer@host");

	feed_byte_by_byte(bytebuf_head(&b), bytebuf_size(&b));
	check_truncations("challenge", msg, len, decode_challenge);
	bytebuf_free(&b);
}

Test(handshake, reply_round_trip)
{
	struct bytebuf b = {0};
	cr_assert_eq(handshake_encode_reply(&b, 0xfedcba98, digest_a), 0);
	const uint8_t *msg;
	size_t len;
	unframe(&b, &msg, &len);
	cr_assert_eq(len, 21);
	uint32_t challenge = 0;
	uint8_t d[HANDSHAKE_DIGEST_LEN] = {0};
	cr_assert_eq(handshake_decode_reply(msg, len, &challenge, d), 0);
	cr_assert_eq(challenge, 0xfedcba98);
	cr_assert_eq(memcmp(d, digest_a, HANDSHAKE_DIGEST_LEN), 0);

	feed_byte_by_byte(bytebuf_head(&b), bytebuf_size(&b));
	check_truncations("challenge_reply", msg, len, decode_reply);
	bytebuf_free(&b);
}

Test(handshake, ack_round_trip)
{
	struct bytebuf b = {0};
	cr_assert_eq(handshake_encode_ack(&b, digest_a), 0);
	const uint8_t *msg;
	size_t len;
	unframe(&b, &msg, &len);
	cr_assert_eq(len, 17);
	uint8_t d[HANDSHAKE_DIGEST_LEN] = {0};
	cr_assert_eq(handshake_decode_ack(msg, len, d), 0);
	cr_assert_eq(memcmp(d, digest_a, HANDSHAKE_DIGEST_LEN), 0);

	feed_byte_by_byte(bytebuf_head(&b), bytebuf_size(&b));
	check_truncations("challenge_ack", msg, len, decode_ack);
	bytebuf_free(&b);
}

Test(handshake, encoders_append_after_existing_bytes)
{
	/* Encoders append: two messages in one buffer frame one after the other. */
	struct bytebuf b = {0};
	cr_assert_eq(handshake_encode_status(&b, "ok"), 0);
	cr_assert_eq(handshake_encode_ack(&b, digest_a), 0);
	const uint8_t *msg;
	size_t len, consumed;
	cr_assert_eq(handshake_frame(bytebuf_head(&b), bytebuf_size(&b), &msg, &len, &consumed), 1);
	cr_assert_eq(consumed, 5);
	bytebuf_consume(&b, consumed);
	cr_assert_eq(handshake_frame(bytebuf_head(&b), bytebuf_size(&b), &msg, &len, &consumed), 1);
	cr_assert_eq(msg[0], 'a');
	cr_assert_eq(consumed, bytebuf_size(&b));
	bytebuf_free(&b);
}

/* ---- framing ---- */

Test(handshake, frame_lengths)
{
	const uint8_t *msg = NULL;
	size_t len = 0, consumed = 0;
	static const uint8_t zero[] = {0, 0, 's'};
	cr_assert_eq(handshake_frame(zero, sizeof zero, &msg, &len, &consumed), -EPROTO, "length 0");

	uint8_t big[2 + HANDSHAKE_MAX_MESSAGE + 1];
	memset(big, 'x', sizeof big);
	sn_put16(big, HANDSHAKE_MAX_MESSAGE + 1);
	cr_assert_eq(handshake_frame(big, sizeof big, &msg, &len, &consumed), -EPROTO, "length above the limit");
	cr_assert_eq(handshake_frame(big, 2, &msg, &len, &consumed), -EPROTO, "refused before the body comes");
	sn_put16(big, 0xFFFF);
	cr_assert_eq(handshake_frame(big, 2, &msg, &len, &consumed), -EPROTO);

	sn_put16(big, HANDSHAKE_MAX_MESSAGE);
	cr_assert_eq(handshake_frame(big, 2 + HANDSHAKE_MAX_MESSAGE - 1, &msg, &len, &consumed), 0);
	cr_assert_eq(handshake_frame(big, 2 + HANDSHAKE_MAX_MESSAGE, &msg, &len, &consumed), 1, "the limit itself is fine");
	cr_assert_eq(len, HANDSHAKE_MAX_MESSAGE);

	cr_assert_eq(handshake_frame(big, 0, &msg, &len, &consumed), 0);
	cr_assert_eq(handshake_frame(big, 1, &msg, &len, &consumed), 0);
}

/* ---- wrong tags and sizes ---- */

Test(handshake, wrong_tags)
{
	struct bytebuf b = {0};
	cr_assert_eq(handshake_encode_name(&b, DFLAG_OURS, 1, "a@b"), 0);
	cr_assert_eq(handshake_encode_challenge(&b, DFLAG_OURS, 2, 3, "a@b"), 0);
	cr_assert_eq(handshake_encode_reply(&b, 4, digest_a), 0);
	cr_assert_eq(handshake_encode_ack(&b, digest_a), 0);
	const uint8_t *m[4];
	size_t l[4], consumed;
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(handshake_frame(bytebuf_head(&b), bytebuf_size(&b), &m[i], &l[i], &consumed), 1);
		/* The bytes stay valid: consume only moves the offset. */
		bytebuf_consume(&b, consumed);
	}
	/* Each decoder refuses the other messages (a challenge with the name's
	 * tag 'N' differs in size, so it is refused too). */
	cr_assert_eq(decode_name(m[1], l[1]), -EPROTO);
	cr_assert_eq(decode_name(m[2], l[2]), -EPROTO);
	cr_assert_eq(decode_challenge(m[0], l[0]), -EPROTO);
	cr_assert_eq(decode_challenge(m[3], l[3]), -EPROTO);
	cr_assert_eq(decode_reply(m[3], l[3]), -EPROTO);
	cr_assert_eq(decode_ack(m[2], l[2]), -EPROTO);

	uint8_t body[21];
	memcpy(body, m[2], 21);
	body[0] = 'R';
	cr_assert_eq(decode_reply(body, 21), -EPROTO);
	body[0] = 'a';
	cr_assert_eq(decode_ack(body, 17), 0);
	body[0] = 'A';
	cr_assert_eq(decode_ack(body, 17), -EPROTO);
	bytebuf_free(&b);
}

Test(handshake, name_length_field_lies)
{
	/* 'N' flags creation NameLen=10 but only 3 name bytes. */
	uint8_t body[15 + 3] = {'N'};
	sn_put16(body + 13, 10);
	memcpy(body + 15, "a@b", 3);
	cr_assert_eq(decode_name(body, sizeof body), -EPROTO);
	sn_put16(body + 13, 2);
	cr_assert_eq(decode_name(body, sizeof body), -EPROTO);
	sn_put16(body + 13, 3);
	cr_assert_eq(decode_name(body, sizeof body), 0);
}

Test(handshake, decoded_names_are_validated)
{
	const char *const bad[] = {"nohost", "a@b@c", "@host", "alive@", "a\n@b"};
	for (size_t i = 0; i < SN_ARRAY_LEN(bad); i++) {
		struct bytebuf b = {0};
		cr_assert_eq(handshake_encode_name(&b, DFLAG_OURS, 1, bad[i]), 0);
		const uint8_t *msg;
		size_t len;
		unframe(&b, &msg, &len);
		cr_assert_eq(decode_name(msg, len), -EPROTO, "name '%s' accepted", bad[i]);
		bytebuf_free(&b);

		cr_assert_eq(handshake_encode_challenge(&b, DFLAG_OURS, 1, 2, bad[i]), 0);
		unframe(&b, &msg, &len);
		cr_assert_eq(decode_challenge(msg, len), -EPROTO, "name '%s' accepted", bad[i]);
		bytebuf_free(&b);
	}
}

/* ---- node names (their rules: test_node_set.c) ---- */

Test(handshake, longest_name_round_trips)
{
	char name[NODE_NAME_BUF];
	memset(name, 'h', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	name[3] = '@';
	struct bytebuf b = {0};
	cr_assert_eq(handshake_encode_challenge(&b, DFLAG_OURS, 1, 2, name), 0);
	const uint8_t *msg;
	size_t len;
	unframe(&b, &msg, &len);
	struct handshake_challenge c;
	cr_assert_eq(handshake_decode_challenge(msg, len, &c), 0);
	cr_assert_str_eq(c.node, name);
	bytebuf_free(&b);
}

/* ---- a send_name as OTP 25 writes it ---- */

Test(handshake, otp_send_name_literal)
{
	/* Len:2 'N' Flags:8 Creation:4 NameLen:2 Name, laid out byte by byte
	 * as a published OTP 25 node `erl -name ct@127.0.0.1` sends it: flags
	 * 0x0000000d07df7fbd (the mandatory set, V4_NC, PUBLISHED, ...),
	 * creation 0x645f1122. */
	static const uint8_t wire[] = {
		0x00, 0x1b, 'N',
		0x00, 0x00, 0x00, 0x0d, 0x07, 0xdf, 0x7f, 0xbd,
		0x64, 0x5f, 0x11, 0x22,
		0x00, 0x0c,
		'c', 't', '@', '1', '2', '7', '.', '0', '.', '0', '.', '1'};
	feed_byte_by_byte(wire, sizeof wire);

	const uint8_t *msg;
	size_t len, consumed;
	cr_assert_eq(handshake_frame(wire, sizeof wire, &msg, &len, &consumed), 1);
	struct handshake_name n;
	cr_assert_eq(handshake_decode_name(msg, len, &n), 0);
	cr_assert_eq(n.flags, 0x0000000d07df7fbdULL);
	cr_assert_eq(n.creation, 0x645f1122u);
	cr_assert_str_eq(n.node, "ct@127.0.0.1");
	cr_assert_eq(n.flags & DFLAG_MANDATORY_25, DFLAG_MANDATORY_25, "an OTP 25 peer has the mandatory set");
	cr_assert(n.flags & DFLAG_PUBLISHED);
	cr_assert(n.flags & DFLAG_V4_NC);

	/* And our encoder writes the same bytes for the same fields. */
	struct bytebuf b = {0};
	cr_assert_eq(handshake_encode_name(&b, 0x0000000d07df7fbdULL, 0x645f1122u, "ct@127.0.0.1"), 0);
	sn_assert_bytes(&b, wire, sizeof wire);
	bytebuf_free(&b);
}

/* ---- digest ---- */

Test(handshake, digest_known_vector)
{
	/* erlang:md5(["shardnode", integer_to_list(3735928559)]) */
	static const uint8_t want[HANDSHAKE_DIGEST_LEN] = {48, 134, 44, 230, 181, 200, 103, 191,
						    229, 120, 249, 83, 15, 100, 14, 167};
	uint8_t d[HANDSHAKE_DIGEST_LEN];
	handshake_digest("shardnode", 3735928559u, d);
	cr_assert_eq(memcmp(d, want, HANDSHAKE_DIGEST_LEN), 0);
	cr_assert(handshake_digest_equal(d, want));

	uint8_t other[HANDSHAKE_DIGEST_LEN];
	handshake_digest("shardnode", 3735928558u, other);
	cr_assert_not(handshake_digest_equal(other, want), "another challenge, another digest");
	handshake_digest("shardnodf", 3735928559u, other);
	cr_assert_not(handshake_digest_equal(other, want), "another cookie, another digest");
}

Test(handshake, digest_equal_sees_every_byte)
{
	uint8_t a[HANDSHAKE_DIGEST_LEN], b[HANDSHAKE_DIGEST_LEN];
	memcpy(a, digest_a, sizeof a);
	memcpy(b, digest_a, sizeof b);
	cr_assert(handshake_digest_equal(a, b));
	for (size_t i = 0; i < HANDSHAKE_DIGEST_LEN; i++) {
		b[i] ^= 0x80;
		cr_assert_not(handshake_digest_equal(a, b), "difference at byte %zu missed", i);
		b[i] ^= 0x80;
	}
	cr_assert(handshake_digest_equal(a, b));
}
