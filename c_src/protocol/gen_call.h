/*
 * gen_call.h — the gen_server call protocol as seen from the server side.
 *
 * gen_server:call/3 sends {'$gen_call', {Pid, Tag}, Request}. From OTP 24 the
 * Tag is [alias | Ref], an improper list; older nodes send a plain reference.
 * The reply is {Tag, Reply} sent to Pid, with Tag echoed byte for byte: we
 * never decode or re-encode it, so whatever the caller chose matches. With
 * an [alias | Ref] tag the reply goes to the alias Ref (as gen:reply/2 does:
 * Alias ! {Tag, Reply}), which the caller's runtime drops once the call is
 * over — a late reply never lands in its mailbox.
 */
#ifndef SN_GEN_CALL_H
#define SN_GEN_CALL_H

#include <stddef.h>

#include <ei.h>

struct gen_call {
	erlang_pid from;
	const char *tag;     /* raw encoded Tag, inside the message buffer */
	size_t tag_len;
	const char *request; /* raw encoded Request, inside the message buffer */
	size_t request_len;
};

/* Recognises a '$gen_call' in a validated message term (no version byte).
 * Returns 1 and fills *out (pointers into msg, valid as long as msg is);
 * 0 if the message is not a '$gen_call' at all; -EPROTO if it is a
 * '$gen_call' whose From is not {Pid, Tag}, so no reply can be sent. */
int gen_call_parse(const char *msg, size_t len, struct gen_call *out);

/* The same for a system message of sys(3), {system, {Pid, Tag}, Request}
 * (sys_msg.h): 1, 0 or -EPROTO as gen_call_parse. */
int gen_call_parse_system(const char *msg, size_t len, struct gen_call *out);

/* Recognises the head of a '$gen_call' in the first `avail` bytes of a
 * message too large to keep (its request was discarded): the 3-tuple's
 * '$gen_call' and {Pid, Tag} must lie whole within them, each checked with
 * term_validate. Returns 1 with out->from and out->tag set (request NULL,
 * request_len 0), or 0 (not a call, or cut before its tag ends). Reads
 * only msg[0..avail). */
int gen_call_parse_head(const char *msg, size_t avail, struct gen_call *out);

/* Whether a raw Tag is [alias | Ref] with Ref a reference: returns 1 and
 * points *ref at Ref's bytes inside tag (*ref_len of them), or 0 (a plain
 * reference, or anything else: the reply goes to the caller's pid). The
 * tag must be one whole validated term, tag_len its exact length — as
 * every tag is, being bytes of a message validated when it arrived
 * (dist_frame.h); it is not validated again for each reply. Reads only
 * tag[0..tag_len). */
int gen_call_tag_alias(const char *tag, size_t tag_len, const char **ref, size_t *ref_len);

/* Encodes the reply message {Tag, Reply} with the version byte into x (an
 * initialised ei_x_buff). `reply` is an encoded term without version byte.
 * Returns 0 or -ENOMEM. */
int gen_call_encode_reply(ei_x_buff *x, const struct gen_call *call, const char *reply, size_t reply_len);

/* The same from the raw Tag alone, for callers that keep the caller's pid
 * and Tag apart and would otherwise copy the pid into a struct gen_call. */
int gen_call_encode_reply_tag(ei_x_buff *x, const char *tag, size_t tag_len, const char *reply, size_t reply_len);

#endif
