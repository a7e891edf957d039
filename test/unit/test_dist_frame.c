/*
 * test_dist_frame.c — splitting the packet stream and parsing packet bodies
 * into control tuple and message.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "protocol/dist_frame.h"
#include "etf/term.h"
#include "etf/term_validate.h"
#include "unit_helpers.h"

#define NODE "peer@127.0.0.1"

/* ---- building packet bodies as a BEAM writes them ---- */

/* Starts a body: 'p', then the control tuple's version byte. */
static void body_start(ei_x_buff *x)
{
	sn_x_new(x);
	cr_assert_eq(ei_x_append_buf(x, "p", 1), 0);
	cr_assert_eq(ei_x_encode_version(x), 0);
}

/* Appends version byte and the message {hello, 42, <<"payload">>}. */
static void append_message(ei_x_buff *x)
{
	cr_assert_eq(ei_x_encode_version(x), 0);
	cr_assert_eq(ei_x_encode_tuple_header(x, 3), 0);
	cr_assert_eq(ei_x_encode_atom(x, "hello"), 0);
	cr_assert_eq(ei_x_encode_long(x, 42), 0);
	cr_assert_eq(ei_x_encode_binary(x, "payload", 7), 0);
}

/* {6, From, '', shardnode} + message: REG_SEND. */
static void reg_send(ei_x_buff *x, const erlang_pid *from)
{
	body_start(x);
	cr_assert_eq(ei_x_encode_tuple_header(x, 4), 0);
	cr_assert_eq(ei_x_encode_long(x, DOP_REG_SEND), 0);
	cr_assert_eq(ei_x_encode_pid(x, from), 0);
	cr_assert_eq(ei_x_encode_atom(x, ""), 0);
	cr_assert_eq(ei_x_encode_atom(x, "shardnode"), 0);
	append_message(x);
}

/* {2, '', To} + message: SEND. */
static void send_msg(ei_x_buff *x, const erlang_pid *to)
{
	body_start(x);
	cr_assert_eq(ei_x_encode_tuple_header(x, 3), 0);
	cr_assert_eq(ei_x_encode_long(x, DOP_SEND), 0);
	cr_assert_eq(ei_x_encode_atom(x, ""), 0);
	cr_assert_eq(ei_x_encode_pid(x, to), 0);
	append_message(x);
}

/* {19, From, shardnode, Ref}: MONITOR_P, no message. */
static void monitor_p(ei_x_buff *x, const erlang_pid *from, const erlang_ref *ref)
{
	body_start(x);
	cr_assert_eq(ei_x_encode_tuple_header(x, 4), 0);
	cr_assert_eq(ei_x_encode_long(x, DOP_MONITOR_P), 0);
	cr_assert_eq(ei_x_encode_pid(x, from), 0);
	cr_assert_eq(ei_x_encode_atom(x, "shardnode"), 0);
	cr_assert_eq(ei_x_encode_ref(x, ref), 0);
}

/* Parses body bytes from an exact-size copy. */
static int parse_copy(const void *body, size_t len, struct dist_msg *m, uint8_t **copy)
{
	*copy = (uint8_t *)sn_dup_exact(body, len);
	return dist_frame_parse(*copy, len, m);
}

/* Offset, inside the body, of the byte after the control tuple. */
static size_t control_end(const ei_x_buff *x)
{
	size_t end = 0;
	cr_assert_eq(term_validate(x->buff + 2, (size_t)x->index - 2, &end), 0);
	return 2 + end;
}

/* Every prefix of a body: -EPROTO, except a cut exactly after the control
 * tuple, which is a well-formed message-less packet. Never a crash. */
static void check_body_truncations(const ei_x_buff *x)
{
	size_t len = (size_t)x->index, ctl_end = control_end(x);
	for (size_t k = 0; k < len; k++) {
		struct dist_msg m;
		uint8_t *p;
		int rc = parse_copy(x->buff, k, &m, &p);
		if (k == ctl_end) {
			cr_assert_eq(rc, 0, "cut after the control tuple refused");
			cr_assert_null(m.payload);
		} else {
			cr_assert_eq(rc, -EPROTO, "%zu of %zu body bytes gave %d", k, len, rc);
		}
		free(p);
	}
}

/* Every prefix of the framed packet is NEED_MORE; the whole is one PACKET. */
static void check_frame_prefixes(const ei_x_buff *x)
{
	size_t blen = (size_t)x->index, total = 4 + blen;
	uint8_t *framed = malloc(total);
	cr_assert_not_null(framed);
	sn_put32(framed, (uint32_t)blen);
	memcpy(framed + 4, x->buff, blen);
	for (size_t k = 0; k <= total; k++) {
		uint8_t *p = (uint8_t *)sn_dup_exact(framed, k);
		const uint8_t *body = NULL;
		size_t body_len = 0, consumed = 0;
		enum dist_frame_result r = dist_frame_next(p, k, 1u << 20, &body, &body_len, &consumed);
		if (k < total) {
			cr_assert_eq(r, DIST_FRAME_NEED_MORE, "%zu of %zu bytes gave %d", k, total, r);
		} else {
			cr_assert_eq(r, DIST_FRAME_PACKET);
			cr_assert_eq(body, p + 4);
			cr_assert_eq(body_len, blen);
			cr_assert_eq(consumed, total);
			struct dist_msg m;
			cr_assert_eq(dist_frame_parse(body, body_len, &m), 0);
		}
		free(p);
	}
	free(framed);
}

/* ---- dist_frame_next ---- */

Test(dist_frame, tick)
{
	static const uint8_t tick[] = {0, 0, 0, 0};
	const uint8_t *body = NULL;
	size_t body_len = 99, consumed = 0;
	cr_assert_eq(dist_frame_next(tick, 4, 1000, &body, &body_len, &consumed), DIST_FRAME_TICK);
	cr_assert_eq(consumed, 4);
	for (size_t k = 0; k < 4; k++) {
		uint8_t *p = (uint8_t *)sn_dup_exact(tick, k);
		cr_assert_eq(dist_frame_next(p, k, 1000, &body, &body_len, &consumed), DIST_FRAME_NEED_MORE);
		free(p);
	}
	/* A tick followed by more bytes still only consumes itself. */
	static const uint8_t tick_then[] = {0, 0, 0, 0, 0, 0, 0, 1, 'p'};
	cr_assert_eq(dist_frame_next(tick_then, sizeof tick_then, 1000, &body, &body_len, &consumed),
		     DIST_FRAME_TICK);
	cr_assert_eq(consumed, 4);
}

Test(dist_frame, packets_back_to_back)
{
	static const uint8_t two[] = {0, 0, 0, 3, 'p', 1, 2, 0, 0, 0, 1, 'q', 0, 0};
	const uint8_t *body;
	size_t body_len, consumed;
	cr_assert_eq(dist_frame_next(two, sizeof two, 1000, &body, &body_len, &consumed), DIST_FRAME_PACKET);
	cr_assert_eq(body, two + 4);
	cr_assert_eq(body_len, 3);
	cr_assert_eq(consumed, 7);
	cr_assert_eq(dist_frame_next(two + 7, sizeof two - 7, 1000, &body, &body_len, &consumed),
		     DIST_FRAME_PACKET);
	cr_assert_eq(body, two + 11);
	cr_assert_eq(body_len, 1);
	cr_assert_eq(consumed, 5);
	cr_assert_eq(dist_frame_next(two + 12, 2, 1000, &body, &body_len, &consumed), DIST_FRAME_NEED_MORE);
}

Test(dist_frame, too_big)
{
	uint8_t hdr[4];
	const uint8_t *body;
	size_t body_len, consumed;
	sn_put32(hdr, 1001);
	cr_assert_eq(dist_frame_next(hdr, 4, 1000, &body, &body_len, &consumed), DIST_FRAME_TOO_BIG,
		     "refused on the header alone");
	sn_put32(hdr, 0xFFFFFFFF);
	cr_assert_eq(dist_frame_next(hdr, 4, 1000, &body, &body_len, &consumed), DIST_FRAME_TOO_BIG);
	sn_put32(hdr, 1000);
	cr_assert_eq(dist_frame_next(hdr, 4, 1000, &body, &body_len, &consumed), DIST_FRAME_NEED_MORE,
		     "the limit itself is allowed");
}

/* ---- dist_frame_parse on real control messages ---- */

Test(dist_frame, reg_send)
{
	erlang_pid from = sn_pid(NODE, 77, 3);
	ei_x_buff x;
	reg_send(&x, &from);

	struct dist_msg m;
	uint8_t *p;
	cr_assert_eq(parse_copy(x.buff, (size_t)x.index, &m, &p), 0);
	cr_assert_eq(m.op, DOP_REG_SEND);
	cr_assert_eq(m.nelems, 3);
	cr_assert_eq((const uint8_t *)m.ctl, p + 2);

	erlang_pid got;
	int i = (int)m.elem[0];
	cr_assert_eq(ei_decode_pid(m.ctl, &i, &got), 0);
	cr_assert_str_eq(got.node, NODE);
	cr_assert_eq(got.num, 77);
	cr_assert_eq(got.serial, 3);
	cr_assert(term_is_atom(m.ctl, m.elem[1], ""));
	cr_assert(term_is_atom(m.ctl, m.elem[2], "shardnode"));

	size_t msg_at = control_end(&x) + 1;
	cr_assert_eq((const uint8_t *)m.payload, p + msg_at);
	cr_assert_eq(m.payload_len, (size_t)x.index - msg_at);
	size_t idx = 0;
	cr_assert_eq(term_get_tuple(m.payload, &idx), 3);
	cr_assert(term_is_atom(m.payload, idx, "hello"));
	free(p);

	check_body_truncations(&x);
	check_frame_prefixes(&x);
	ei_x_free(&x);
}

Test(dist_frame, send)
{
	erlang_pid to = sn_pid("shardnode@127.0.0.1", 1, 0);
	ei_x_buff x;
	send_msg(&x, &to);

	struct dist_msg m;
	uint8_t *p;
	cr_assert_eq(parse_copy(x.buff, (size_t)x.index, &m, &p), 0);
	cr_assert_eq(m.op, DOP_SEND);
	cr_assert_eq(m.nelems, 2);
	cr_assert(term_is_atom(m.ctl, m.elem[0], ""));
	erlang_pid got;
	int i = (int)m.elem[1];
	cr_assert_eq(ei_decode_pid(m.ctl, &i, &got), 0);
	cr_assert_eq(got.num, 1);
	cr_assert_not_null(m.payload);
	cr_assert_eq((const uint8_t *)m.payload + m.payload_len, p + x.index);
	free(p);

	check_body_truncations(&x);
	check_frame_prefixes(&x);
	ei_x_free(&x);
}

Test(dist_frame, monitor_p_without_message)
{
	erlang_pid from = sn_pid(NODE, 5, 0);
	erlang_ref ref = sn_ref(NODE, 1234);
	ei_x_buff x;
	monitor_p(&x, &from, &ref);

	struct dist_msg m;
	uint8_t *p;
	cr_assert_eq(parse_copy(x.buff, (size_t)x.index, &m, &p), 0);
	cr_assert_eq(m.op, DOP_MONITOR_P);
	cr_assert_eq(m.nelems, 3);
	cr_assert(term_is_atom(m.ctl, m.elem[1], "shardnode"));
	erlang_ref got;
	int i = (int)m.elem[2];
	cr_assert_eq(ei_decode_ref(m.ctl, &i, &got), 0);
	cr_assert_eq(got.n[0], 1234);
	cr_assert_eq((size_t)i, (size_t)x.index - 2, "the reference ends the body");
	cr_assert_null(m.payload);
	cr_assert_eq(m.payload_len, 0);
	free(p);

	check_body_truncations(&x);
	check_frame_prefixes(&x);
	ei_x_free(&x);
}

Test(dist_frame, many_control_elements_are_capped)
{
	ei_x_buff x;
	body_start(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 12), 0);
	cr_assert_eq(ei_x_encode_long(&x, DOP_SPAWN_REQUEST), 0);
	for (int i = 0; i < 11; i++)
		cr_assert_eq(ei_x_encode_long(&x, 1000 + i), 0);
	struct dist_msg m;
	uint8_t *p;
	cr_assert_eq(parse_copy(x.buff, (size_t)x.index, &m, &p), 0);
	cr_assert_eq(m.nelems, DIST_MSG_MAX_ELEMS);
	for (size_t k = 0; k < DIST_MSG_MAX_ELEMS; k++) {
		size_t i = m.elem[k];
		long v;
		cr_assert_eq(term_get_long(m.ctl, &i, &v), 0);
		cr_assert_eq(v, 1000 + (long)k);
	}
	free(p);
	ei_x_free(&x);
}

Test(dist_frame, deeply_nested_control_element)
{
	/* {2, '', Deep} where Deep is a million nested 1-tuples: the parser
	 * walks every element, and must not do so with recursion. */
	const size_t depth = 1000000;
	ei_x_buff x;
	body_start(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3), 0);
	cr_assert_eq(ei_x_encode_long(&x, DOP_SEND), 0);
	cr_assert_eq(ei_x_encode_atom(&x, ""), 0);
	/* Written directly: a million ei_x calls grow the buffer a little at
	 * a time. */
	char *deep = malloc(2 * depth + 1);
	cr_assert_not_null(deep);
	for (size_t i = 0; i < depth; i++) {
		deep[2 * i] = ERL_SMALL_TUPLE_EXT;
		deep[2 * i + 1] = 1;
	}
	deep[2 * depth] = ERL_NIL_EXT;
	cr_assert_eq(ei_x_append_buf(&x, deep, (int)(2 * depth + 1)), 0);
	free(deep);
	cr_assert_eq(ei_x_encode_version(&x), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "msg"), 0);
	struct dist_msg m;
	uint8_t *p;
	cr_assert_eq(parse_copy(x.buff, (size_t)x.index, &m, &p), 0);
	cr_assert_eq(m.nelems, 2);
	cr_assert(term_is_atom(m.payload, 0, "msg"));
	free(p);
	ei_x_free(&x);
}

/* ---- refusals ---- */

Test(dist_frame, wrong_first_byte)
{
	erlang_pid from = sn_pid(NODE, 1, 0);
	ei_x_buff x;
	reg_send(&x, &from);
	const char firsts[] = {'P', 'q', 0, (char)131, 'N'};
	for (size_t i = 0; i < sizeof firsts; i++) {
		x.buff[0] = firsts[i];
		struct dist_msg m;
		uint8_t *p;
		cr_assert_eq(parse_copy(x.buff, (size_t)x.index, &m, &p), -EPROTO, "first byte %d", firsts[i]);
		free(p);
	}
	ei_x_free(&x);
}

Test(dist_frame, missing_version_bytes)
{
	erlang_pid from = sn_pid(NODE, 1, 0);
	ei_x_buff x;
	reg_send(&x, &from);
	size_t ctl_end = control_end(&x);
	struct dist_msg m;
	uint8_t *p;

	/* Without the control tuple's 131. */
	char *b = malloc((size_t)x.index - 1);
	cr_assert_not_null(b);
	b[0] = 'p';
	memcpy(b + 1, x.buff + 2, (size_t)x.index - 2);
	cr_assert_eq(parse_copy(b, (size_t)x.index - 1, &m, &p), -EPROTO);
	free(p);

	/* Without the message's 131. */
	memcpy(b, x.buff, ctl_end);
	memcpy(b + ctl_end, x.buff + ctl_end + 1, (size_t)x.index - ctl_end - 1);
	cr_assert_eq(parse_copy(b, (size_t)x.index - 1, &m, &p), -EPROTO);
	free(p);

	/* A 131 with nothing after it. */
	cr_assert_eq(parse_copy(x.buff, ctl_end + 1, &m, &p), -EPROTO);
	free(p);
	free(b);
	ei_x_free(&x);
}

Test(dist_frame, trailing_garbage)
{
	erlang_pid from = sn_pid(NODE, 1, 0);
	ei_x_buff x;
	reg_send(&x, &from);
	cr_assert_eq(ei_x_append_buf(&x, "\x61\x01", 2), 0);
	struct dist_msg m;
	uint8_t *p;
	cr_assert_eq(parse_copy(x.buff, (size_t)x.index, &m, &p), -EPROTO, "a second term after the message");
	free(p);
	cr_assert_eq(parse_copy(x.buff, (size_t)x.index - 1, &m, &p), -EPROTO, "one stray byte");
	free(p);
	ei_x_free(&x);

	/* After a message-less control tuple: a byte that is not 131. */
	erlang_ref ref = sn_ref(NODE, 1);
	monitor_p(&x, &from, &ref);
	cr_assert_eq(ei_x_append_buf(&x, "\x00", 1), 0);
	cr_assert_eq(parse_copy(x.buff, (size_t)x.index, &m, &p), -EPROTO);
	free(p);
	ei_x_free(&x);
}

Test(dist_frame, control_not_a_tuple)
{
	ei_x_buff x;
	body_start(&x);
	cr_assert_eq(ei_x_encode_atom(&x, "link"), 0);
	struct dist_msg m;
	uint8_t *p;
	cr_assert_eq(parse_copy(x.buff, (size_t)x.index, &m, &p), -EPROTO, "an atom");
	free(p);
	ei_x_free(&x);

	body_start(&x);
	cr_assert_eq(ei_x_encode_list_header(&x, 1), 0);
	cr_assert_eq(ei_x_encode_long(&x, DOP_LINK), 0);
	cr_assert_eq(ei_x_encode_empty_list(&x), 0);
	cr_assert_eq(parse_copy(x.buff, (size_t)x.index, &m, &p), -EPROTO, "a list");
	free(p);
	ei_x_free(&x);

	body_start(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 0), 0);
	cr_assert_eq(parse_copy(x.buff, (size_t)x.index, &m, &p), -EPROTO, "the empty tuple");
	free(p);
	ei_x_free(&x);
}

Test(dist_frame, op_not_a_small_integer)
{
	erlang_pid from = sn_pid(NODE, 1, 0);
	struct dist_msg m;
	uint8_t *p;
	ei_x_buff x;

	body_start(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "link"), 0);
	cr_assert_eq(ei_x_encode_pid(&x, &from), 0);
	cr_assert_eq(parse_copy(x.buff, (size_t)x.index, &m, &p), -EPROTO, "an atom op");
	free(p);
	ei_x_free(&x);

	body_start(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 1), 0);
	cr_assert_eq(ei_x_encode_double(&x, 2.0), 0);
	cr_assert_eq(parse_copy(x.buff, (size_t)x.index, &m, &p), -EPROTO, "a float op");
	free(p);
	ei_x_free(&x);

	body_start(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 1), 0);
	cr_assert_eq(ei_x_encode_long(&x, -2), 0);
	cr_assert_eq(parse_copy(x.buff, (size_t)x.index, &m, &p), -EPROTO, "a negative op");
	free(p);
	ei_x_free(&x);

	body_start(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 1), 0);
	cr_assert_eq(ei_x_encode_longlong(&x, (1LL << 32) + DOP_SEND), 0);
	cr_assert_eq(parse_copy(x.buff, (size_t)x.index, &m, &p), -EPROTO, "an op beyond 2^31");
	free(p);
	ei_x_free(&x);
}

Test(dist_frame, malformed_control_term)
{
	/* An atom cache reference in place of the control tuple, a lying
	 * tuple arity, and a body too short to hold anything. */
	static const uint8_t cache_ref[] = {'p', 131, 104, 2, 97, 6, 82, 0};
	static const uint8_t lying[] = {'p', 131, 104, 5, 97, 6};
	static const uint8_t short1[] = {'p'};
	static const uint8_t short2[] = {'p', 131};
	struct dist_msg m;
	uint8_t *p;
	cr_assert_eq(parse_copy(cache_ref, sizeof cache_ref, &m, &p), -EPROTO);
	free(p);
	cr_assert_eq(parse_copy(lying, sizeof lying, &m, &p), -EPROTO);
	free(p);
	cr_assert_eq(parse_copy(short1, sizeof short1, &m, &p), -EPROTO);
	free(p);
	cr_assert_eq(parse_copy(short2, sizeof short2, &m, &p), -EPROTO);
	free(p);
	cr_assert_eq(parse_copy("", 0, &m, &p), -EPROTO);
	free(p);
}

/* The head of a packet too large to keep: every prefix that holds the
 * control tuple whole parses, with the message's bytes so far as its
 * (unvalidated) payload; a shorter one is refused. */
Test(dist_frame, every_prefix_of_a_packet_parses_once_its_control_tuple_is_whole)
{
	erlang_pid from = sn_pid(NODE, 5, 0);
	ei_x_buff x;
	body_start(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 4), 0);
	cr_assert_eq(ei_x_encode_long(&x, DOP_REG_SEND), 0);
	cr_assert_eq(ei_x_encode_pid(&x, &from), 0);
	cr_assert_eq(ei_x_encode_atom(&x, ""), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "shardnode"), 0);
	size_t ctl_end = (size_t)x.index; /* 'p', 131 and the control tuple */
	append_message(&x);
	for (size_t n = 0; n <= (size_t)x.index; n++) {
		char *cut = sn_dup_exact(x.buff, n);
		struct dist_msg m;
		int rc = dist_frame_parse_prefix((const uint8_t *)cut, n, &m);
		if (n < ctl_end) {
			cr_assert_eq(rc, -EPROTO, "%zu bytes", n);
		} else {
			cr_assert_eq(rc, 0, "%zu bytes", n);
			cr_assert_eq(m.op, DOP_REG_SEND);
			cr_assert_eq(m.nelems, 3u);
			if (n == ctl_end) {
				cr_assert_null(m.payload);
			} else {
				cr_assert_eq(m.payload, cut + ctl_end + 1, "after the message's version byte");
				cr_assert_eq(m.payload_len, n - ctl_end - 1);
			}
		}
		free(cut);
	}
	/* A byte after the control tuple that is not a version byte. */
	x.buff[ctl_end] = 0;
	struct dist_msg m;
	cr_assert_eq(dist_frame_parse_prefix((const uint8_t *)x.buff, (size_t)x.index, &m), -EPROTO);
	ei_x_free(&x);
}
