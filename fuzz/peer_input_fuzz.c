/*
 * peer_input_fuzz.c — libFuzzer target for the parsers that see a peer's
 * bytes before any term is decoded (`make fuzz`): the first input byte
 * picks one, the rest is its input.
 *   0  the distribution stream: split into packets (dist_frame_next, an
 *      oversized length included), each parsed (dist_frame_parse) and, as
 *      the node would, its message read as a call (gen_call_parse, the
 *      alias tag), as a '$shardnode' message (shard_msg_decode) and as a
 *      message from the host of Erlang entities (host_msg_decode: every
 *      span it gives lies inside the message); every
 *      prefix of it as an oversized packet's head (dist_frame_parse_prefix,
 *      gen_call_parse_head)
 *  1  a handshake stream: framed (handshake_frame), each message decoded
 *      as each handshake message
 * Nothing here may read outside the input (ASan) or hit undefined
 * behaviour (UBSan).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/dist_frame.h"
#include "protocol/gen_call.h"
#include "protocol/handshake.h"
#include "hosting/host_msg.h"
#include "etf/shard_msg.h"

#include "fuzz_checks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A message term as the node reads it. */
static void read_message(const char *msg, size_t len)
{
	struct gen_call call;
	if (gen_call_parse(msg, len, &call) == 1) {
		const char *ref;
		size_t ref_len;
		(void)gen_call_tag_alias(call.tag, call.tag_len, &ref, &ref_len);
	}
	struct shard_msg sm;
	(void)shard_msg_decode(msg, len, &sm);
	struct host_msg hm;
	if (host_msg_decode(msg, len, &hm) == 1) {
		const struct {
			const char *p;
			size_t n;
		} spans[] = {{hm.types, hm.types_len}, {hm.id, hm.id_len}, {hm.reply, hm.reply_len},
			     {hm.state, hm.state_len}};
		for (size_t k = 0; k < sizeof spans / sizeof spans[0]; k++)
			check(spans[k].p == NULL ||
			      (spans[k].p >= msg && (size_t)(spans[k].p - msg) <= len - spans[k].n));
	}
}

static void dist_stream(const uint8_t *in, size_t len)
{
	size_t at = 0;
	while (at < len) {
		const uint8_t *body;
		size_t body_len, consumed;
		enum dist_frame_result r = dist_frame_next(in + at, len - at, 4096, &body, &body_len, &consumed);
		if (r == DIST_FRAME_NEED_MORE)
			return;
		if (r == DIST_FRAME_TOO_BIG) {
			/* The node keeps the head of such a packet: whatever is left. */
			struct dist_msg m;
			if (dist_frame_parse_prefix(in + at + 4, len - at - 4, &m) == 0 && m.payload != NULL) {
				struct gen_call call;
				(void)gen_call_parse_head(m.payload, m.payload_len, &call);
			}
			return;
		}
		if (r == DIST_FRAME_PACKET) {
			struct dist_msg m;
			if (dist_frame_parse(body, body_len, &m) == 0 && m.payload != NULL)
				read_message(m.payload, m.payload_len);
			for (size_t n = 0; n <= body_len; n++) {
				uint8_t *cut = malloc(n ? n : 1); /* exact size for ASan */
				if (cut == NULL)
					return;
				memcpy(cut, body, n);
				if (dist_frame_parse_prefix(cut, n, &m) == 0 && m.payload != NULL) {
					struct gen_call call;
					(void)gen_call_parse_head(m.payload, m.payload_len, &call);
				}
				free(cut);
			}
		}
		at += consumed;
	}
}

static void handshake_stream(const uint8_t *in, size_t len)
{
	size_t at = 0;
	while (at < len) {
		const uint8_t *msg;
		size_t msg_len, consumed;
		if (handshake_frame(in + at, len - at, &msg, &msg_len, &consumed) <= 0)
			return;
		struct handshake_name name;
		struct handshake_challenge challenge;
		char status[32];
		uint32_t their_challenge;
		uint8_t digest[HANDSHAKE_DIGEST_LEN];
		(void)handshake_decode_name(msg, msg_len, &name);
		(void)handshake_decode_status(msg, msg_len, status, sizeof status);
		(void)handshake_decode_challenge(msg, msg_len, &challenge);
		(void)handshake_decode_reply(msg, msg_len, &their_challenge, digest);
		(void)handshake_decode_ack(msg, msg_len, digest);
		at += consumed;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	/* An exact-size copy: ASan sees any read past the input. */
	uint8_t *in = malloc(size - 1 ? size - 1 : 1);
	if (in == NULL)
		return 0;
	memcpy(in, data + 1, size - 1);
	if (data[0] % 2 == 0)
		dist_stream(in, size - 1);
	else
		handshake_stream(in, size - 1);
	free(in);
	return 0;
}
