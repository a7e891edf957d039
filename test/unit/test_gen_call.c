/*
 * test_gen_call.c — recognising '$gen_call' messages and building replies
 * that echo the caller's tag byte for byte.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "protocol/gen_call.h"
#include "etf/term.h"
#include "etf/term_validate.h"
#include "unit_helpers.h"

#define NODE "caller@127.0.0.1"

/* Encodes the OTP 24+ tag [alias | Ref]: a one-element improper list. */
static void encode_alias_tag(ei_x_buff *x, const erlang_ref *ref)
{
	cr_assert_eq(ei_x_encode_list_header(x, 1), 0);
	cr_assert_eq(ei_x_encode_atom(x, "alias"), 0);
	cr_assert_eq(ei_x_encode_ref(x, ref), 0);
}

static void encode_request(ei_x_buff *x)
{
	cr_assert_eq(ei_x_encode_tuple_header(x, 2), 0);
	cr_assert_eq(ei_x_encode_atom(x, "get"), 0);
	cr_assert_eq(ei_x_encode_binary(x, "key", 3), 0);
}

/* Builds {'$gen_call', {Pid, Tag}, Request}; the tag and request bytes are
 * also returned on their own, to compare with what the parser finds. */
static void build_call(ei_x_buff *msg, ei_x_buff *tag, ei_x_buff *req, const erlang_pid *from,
		       bool alias)
{
	erlang_ref ref = sn_ref(NODE, 99);
	sn_x_new(tag);
	if (alias)
		encode_alias_tag(tag, &ref);
	else
		cr_assert_eq(ei_x_encode_ref(tag, &ref), 0);
	sn_x_new(req);
	encode_request(req);

	sn_x_new(msg);
	cr_assert_eq(ei_x_encode_tuple_header(msg, 3), 0);
	cr_assert_eq(ei_x_encode_atom(msg, "$gen_call"), 0);
	cr_assert_eq(ei_x_encode_tuple_header(msg, 2), 0);
	cr_assert_eq(ei_x_encode_pid(msg, from), 0);
	cr_assert_eq(ei_x_append_buf(msg, tag->buff, tag->index), 0);
	cr_assert_eq(ei_x_append_buf(msg, req->buff, req->index), 0);
}

/* Parses from an exact-size copy (the caller frees *copy). */
static int parse_copy(const ei_x_buff *x, struct gen_call *c, char **copy)
{
	*copy = sn_dup_exact(x->buff, (size_t)x->index);
	size_t end = 0;
	cr_assert_eq(term_validate(*copy, (size_t)x->index, &end), 0, "test input must be a valid term");
	return gen_call_parse(*copy, (size_t)x->index, c);
}

static void check_call(bool alias)
{
	erlang_pid from = sn_pid(NODE, 321, 4);
	ei_x_buff msg, tag, req;
	build_call(&msg, &tag, &req, &from, alias);

	struct gen_call c;
	char *p;
	cr_assert_eq(parse_copy(&msg, &c, &p), 1);
	cr_assert_str_eq(c.from.node, NODE);
	cr_assert_eq(c.from.num, 321);
	cr_assert_eq(c.from.serial, 4);
	cr_assert_eq(c.tag_len, (size_t)tag.index);
	cr_assert_eq(memcmp(c.tag, tag.buff, c.tag_len), 0);
	cr_assert_eq(c.request_len, (size_t)req.index);
	cr_assert_eq(memcmp(c.request, req.buff, c.request_len), 0);
	cr_assert(c.tag > p && c.request + c.request_len == p + msg.index, "pointers into the message");
	free(p);
	ei_x_free(&msg);
	ei_x_free(&tag);
	ei_x_free(&req);
}

Test(gen_call, alias_tag)
{
	check_call(true);
}

Test(gen_call, plain_ref_tag)
{
	check_call(false);
}

Test(gen_call, not_calls)
{
	struct gen_call c;
	char *p;
	ei_x_buff x;

	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 1), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "foo"), 0);
	cr_assert_eq(parse_copy(&x, &c, &p), 0, "{foo}");
	free(p);
	ei_x_free(&x);

	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_atom(&x, "$gen_call"), 0);
	cr_assert_eq(parse_copy(&x, &c, &p), 0, "a bare atom");
	free(p);
	ei_x_free(&x);

	/* Three elements, but a cast. */
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "$gen_cast"), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "a"), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "b"), 0);
	cr_assert_eq(parse_copy(&x, &c, &p), 0, "'$gen_cast'");
	free(p);
	ei_x_free(&x);

	/* '$gen_call' but not three elements. */
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "$gen_call"), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "b"), 0);
	cr_assert_eq(parse_copy(&x, &c, &p), 0, "a 2-tuple");
	free(p);
	ei_x_free(&x);

	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_binary(&x, "$gen_call", 9), 0);
	cr_assert_eq(parse_copy(&x, &c, &p), 0, "a binary");
	free(p);
	ei_x_free(&x);
}

Test(gen_call, calls_without_a_usable_from)
{
	struct gen_call c;
	char *p;
	ei_x_buff x;
	erlang_pid from = sn_pid(NODE, 1, 0);
	erlang_ref ref = sn_ref(NODE, 1);

	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "$gen_call"), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "notatuple"), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "x"), 0);
	cr_assert_eq(parse_copy(&x, &c, &p), -EPROTO, "From is an atom");
	free(p);
	ei_x_free(&x);

	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "$gen_call"), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "notapid"), 0);
	cr_assert_eq(ei_x_encode_ref(&x, &ref), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "x"), 0);
	cr_assert_eq(parse_copy(&x, &c, &p), -EPROTO, "From's first element is not a pid");
	free(p);
	ei_x_free(&x);

	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "$gen_call"), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3), 0);
	cr_assert_eq(ei_x_encode_pid(&x, &from), 0);
	cr_assert_eq(ei_x_encode_ref(&x, &ref), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "extra"), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "x"), 0);
	cr_assert_eq(parse_copy(&x, &c, &p), -EPROTO, "From is a 3-tuple");
	free(p);
	ei_x_free(&x);
}

Test(gen_call, bytes_after_the_call)
{
	/* The message must be exactly the call term. */
	erlang_pid from = sn_pid(NODE, 1, 0);
	ei_x_buff msg, tag, req;
	build_call(&msg, &tag, &req, &from, true);
	char *p = malloc((size_t)msg.index + 1);
	cr_assert_not_null(p);
	memcpy(p, msg.buff, (size_t)msg.index);
	p[msg.index] = 106;
	struct gen_call c;
	cr_assert_eq(gen_call_parse(p, (size_t)msg.index + 1, &c), -EPROTO);
	free(p);
	ei_x_free(&msg);
	ei_x_free(&tag);
	ei_x_free(&req);
}

Test(gen_call, deeply_nested_request)
{
	/* A caller may send any term; skipping a deep one must not recurse. */
	erlang_pid from = sn_pid(NODE, 1, 0);
	erlang_ref ref = sn_ref(NODE, 1);
	const size_t depth = 1000000;
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "$gen_call"), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2), 0);
	cr_assert_eq(ei_x_encode_pid(&x, &from), 0);
	encode_alias_tag(&x, &ref);
	int req_at = x.index;
	/* [[[...]]]: `depth` LIST_EXT headers of one element, the innermost
	 * [], then each level's [] tail. Written directly: a million ei_x
	 * calls grow the buffer a little at a time. */
	size_t n = 5 * depth + 1 + depth;
	uint8_t *deep = malloc(n);
	cr_assert_not_null(deep);
	for (size_t i = 0; i < depth; i++) {
		deep[5 * i] = ERL_LIST_EXT;
		sn_put32(deep + 5 * i + 1, 1);
	}
	memset(deep + 5 * depth, ERL_NIL_EXT, depth + 1);
	cr_assert_eq(ei_x_append_buf(&x, (const char *)deep, (int)n), 0);
	free(deep);

	struct gen_call c;
	char *p;
	cr_assert_eq(parse_copy(&x, &c, &p), 1);
	cr_assert_eq(c.request, p + req_at);
	cr_assert_eq(c.request_len, (size_t)(x.index - req_at));
	free(p);
	ei_x_free(&x);
}

Test(gen_call, reply_echoes_the_tag)
{
	const bool kinds[] = {true, false};
	for (size_t k = 0; k < 2; k++) {
		erlang_pid from = sn_pid(NODE, 9, 0);
		ei_x_buff msg, tag, req;
		build_call(&msg, &tag, &req, &from, kinds[k]);
		struct gen_call c;
		char *p;
		cr_assert_eq(parse_copy(&msg, &c, &p), 1);

		ei_x_buff reply;
		sn_x_new(&reply);
		cr_assert_eq(ei_x_encode_tuple_header(&reply, 2), 0);
		cr_assert_eq(ei_x_encode_atom(&reply, "ok"), 0);
		cr_assert_eq(ei_x_encode_long(&reply, 12345), 0);

		ei_x_buff out;
		sn_x_new(&out);
		cr_assert_eq(gen_call_encode_reply(&out, &c, reply.buff, (size_t)reply.index), 0);

		/* 131, {Tag, Reply}: the tuple header is 2 bytes (104, 2). */
		cr_assert_eq((unsigned char)out.buff[0], TERM_VERSION_MAGIC);
		cr_assert_eq((unsigned char)out.buff[1], ERL_SMALL_TUPLE_EXT);
		cr_assert_eq((unsigned char)out.buff[2], 2);
		cr_assert_eq(memcmp(out.buff + 3, tag.buff, (size_t)tag.index), 0, "tag bytes differ");
		cr_assert_eq(memcmp(out.buff + 3 + tag.index, reply.buff, (size_t)reply.index), 0);
		cr_assert_eq(out.index, 3 + tag.index + reply.index);

		/* And it reads back as {Tag, {ok, 12345}}. */
		size_t end = 0;
		cr_assert_eq(term_validate(out.buff + 1, (size_t)out.index - 1, &end), 0);
		cr_assert_eq(end, (size_t)out.index - 1);
		int i = 1, arity;
		cr_assert_eq(ei_decode_tuple_header(out.buff, &i, &arity), 0);
		cr_assert_eq(arity, 2);
		cr_assert_eq(ei_skip_term(out.buff, &i), 0);
		cr_assert_eq(ei_decode_tuple_header(out.buff, &i, &arity), 0);
		char atom[MAXATOMLEN_UTF8];
		cr_assert_eq(ei_decode_atom(out.buff, &i, atom), 0);
		cr_assert_str_eq(atom, "ok");
		long v;
		cr_assert_eq(ei_decode_long(out.buff, &i, &v), 0);
		cr_assert_eq(v, 12345);

		free(p);
		ei_x_free(&out);
		ei_x_free(&reply);
		ei_x_free(&msg);
		ei_x_free(&tag);
		ei_x_free(&req);
	}
}

Test(gen_call, from_pid_with_an_oversized_node_atom)
{
	/* A NEW_PID_EXT whose node is 1020 latin1 bytes of 0xE9: 2040 bytes as
	 * UTF-8, more than erlang_pid.node holds. binary_to_term refuses it
	 * (over 255 characters), and so does the validator, before any
	 * decoding. */
	uint8_t pid[1 + 3 + 1020 + 12];
	pid[0] = ERL_NEW_PID_EXT;
	pid[1] = ERL_ATOM_EXT;
	sn_put16(pid + 2, 1020);
	memset(pid + 4, 0xE9, 1020);
	memset(pid + 4 + 1020, 0, 12);
	ei_x_buff x;
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "$gen_call"), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2), 0);
	cr_assert_eq(ei_x_append_buf(&x, (const char *)pid, (int)sizeof pid), 0);
	erlang_ref ref = sn_ref(NODE, 1);
	cr_assert_eq(ei_x_encode_ref(&x, &ref), 0);
	cr_assert_eq(ei_x_encode_atom(&x, "req"), 0);
	char *p = sn_dup_exact(x.buff, (size_t)x.index);
	size_t end = 0;
	cr_assert_eq(term_validate(p, (size_t)x.index, &end), -EPROTO);
	free(p);
	ei_x_free(&x);
}

/* The alias of an [alias | Ref] tag is Ref's bytes; any other whole tag
 * has none. */
Test(gen_call, an_alias_tag_names_its_reference_and_nothing_else_does)
{
	erlang_ref ref = sn_ref(NODE, 7);
	ei_x_buff tag, plain, want;
	sn_x_new(&tag);
	encode_alias_tag(&tag, &ref);
	sn_x_new(&want);
	cr_assert_eq(ei_x_encode_ref(&want, &ref), 0);
	char *exact = sn_dup_exact(tag.buff, (size_t)tag.index);
	const char *got = NULL;
	size_t got_len = 0;
	cr_assert_eq(gen_call_tag_alias(exact, (size_t)tag.index, &got, &got_len), 1);
	cr_assert_eq(got_len, (size_t)want.index);
	cr_assert_eq(memcmp(got, want.buff, got_len), 0);
	cr_assert(got > exact && got + got_len == exact + tag.index, "a pointer into the tag");
	free(exact);

	sn_x_new(&plain);
	cr_assert_eq(ei_x_encode_ref(&plain, &ref), 0);
	cr_assert_eq(gen_call_tag_alias(plain.buff, (size_t)plain.index, &got, &got_len), 0, "a plain reference");
	ei_x_free(&plain);

	/* [other | Ref], [alias | 7] and [alias, Ref]: no alias. */
	ei_x_buff odd;
	sn_x_new(&odd);
	cr_assert_eq(ei_x_encode_list_header(&odd, 1), 0);
	cr_assert_eq(ei_x_encode_atom(&odd, "other"), 0);
	cr_assert_eq(ei_x_encode_ref(&odd, &ref), 0);
	cr_assert_eq(gen_call_tag_alias(odd.buff, (size_t)odd.index, &got, &got_len), 0);
	odd.index = 0;
	cr_assert_eq(ei_x_encode_list_header(&odd, 1), 0);
	cr_assert_eq(ei_x_encode_atom(&odd, "alias"), 0);
	cr_assert_eq(ei_x_encode_long(&odd, 7), 0);
	cr_assert_eq(gen_call_tag_alias(odd.buff, (size_t)odd.index, &got, &got_len), 0);
	odd.index = 0;
	cr_assert_eq(ei_x_encode_list_header(&odd, 2), 0);
	cr_assert_eq(ei_x_encode_atom(&odd, "alias"), 0);
	cr_assert_eq(ei_x_encode_ref(&odd, &ref), 0);
	cr_assert_eq(ei_x_encode_empty_list(&odd), 0);
	cr_assert_eq(gen_call_tag_alias(odd.buff, (size_t)odd.index, &got, &got_len), 0);
	ei_x_free(&odd);
	ei_x_free(&tag);
	ei_x_free(&want);
}

/* The head of a call too large to keep: every prefix that holds its
 * '$gen_call', pid and tag whole gives the caller and the tag; a shorter
 * one, or a message that is not a call, gives nothing. */
Test(gen_call, the_head_of_a_call_names_its_caller_in_every_prefix_that_holds_the_tag)
{
	erlang_pid from = sn_pid(NODE, 3, 0);
	for (int alias = 0; alias < 2; alias++) {
		ei_x_buff msg, tag, req;
		build_call(&msg, &tag, &req, &from, alias == 1);
		size_t tag_end = (size_t)(msg.index - req.index);
		for (size_t n = 0; n <= (size_t)msg.index; n++) {
			char *cut = sn_dup_exact(msg.buff, n);
			struct gen_call c;
			int rc = gen_call_parse_head(cut, n, &c);
			cr_assert_eq(rc, n >= tag_end ? 1 : 0, "%zu of %d bytes", n, msg.index);
			if (rc == 1) {
				cr_assert(term_pid_equal(&c.from, &from));
				cr_assert_eq(c.tag_len, (size_t)tag.index);
				cr_assert_eq(memcmp(c.tag, tag.buff, c.tag_len), 0);
				cr_assert_null(c.request);
			}
			free(cut);
		}
		ei_x_free(&msg);
		ei_x_free(&tag);
		ei_x_free(&req);
	}
	ei_x_buff other;
	sn_x_new(&other);
	cr_assert_eq(ei_x_encode_tuple_header(&other, 3), 0);
	cr_assert_eq(ei_x_encode_atom(&other, "$gen_cast"), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&other, 2), 0);
	cr_assert_eq(ei_x_encode_pid(&other, &from), 0);
	cr_assert_eq(ei_x_encode_long(&other, 1), 0);
	struct gen_call c;
	cr_assert_eq(gen_call_parse_head(other.buff, (size_t)other.index, &c), 0);
	ei_x_free(&other);
}
