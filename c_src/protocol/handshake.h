/*
 * handshake.h — the messages of the Erlang distribution handshake,
 * version 6, as pure encoders and decoders.
 *
 * During the handshake every message is framed by a 2-byte big-endian length.
 * The exchange (erts/doc erl_dist_protocol):
 *
 *   initiator A                          acceptor B
 *   send_name 'N' flags creation name  ->
 *                                      <- status 's' "ok" | "ok_simultaneous" | "nok" | "alive" ...
 *                                      <- challenge 'N' flags challenge creation name
 *   challenge_reply 'r' challenge digest ->
 *                                      <- challenge_ack 'a' digest
 *
 * digest = MD5(cookie ++ decimal text of the challenge it answers).
 * The driving state machine lives in dist_conn.c; nothing here does I/O.
 */
#ifndef SN_HANDSHAKE_H
#define SN_HANDSHAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/bytebuf.h"
#include "protocol/node_name.h"

/* Distribution capability flags (OTP's dist.h / ei_connect_int.h). */
#define DFLAG_PUBLISHED 0x1ULL
#define DFLAG_ATOM_CACHE 0x2ULL
#define DFLAG_EXTENDED_REFERENCES 0x4ULL
#define DFLAG_DIST_MONITOR 0x8ULL
#define DFLAG_FUN_TAGS 0x10ULL
#define DFLAG_DIST_MONITOR_NAME 0x20ULL
#define DFLAG_NEW_FUN_TAGS 0x80ULL
#define DFLAG_EXTENDED_PIDS_PORTS 0x100ULL
#define DFLAG_EXPORT_PTR_TAG 0x200ULL
#define DFLAG_BIT_BINARIES 0x400ULL
#define DFLAG_NEW_FLOATS 0x800ULL
#define DFLAG_UTF8_ATOMS 0x10000ULL
#define DFLAG_MAP_TAG 0x20000ULL
#define DFLAG_BIG_CREATION 0x40000ULL
#define DFLAG_HANDSHAKE_23 0x1000000ULL
#define DFLAG_UNLINK_ID 0x2000000ULL
#define DFLAG_MANDATORY_25_DIGEST 0x4000000ULL
#define DFLAG_V4_NC (0x4ULL << 32)
/* Process aliases (OTP 24): a reply to a call whose tag is [alias | Ref]
 * goes to the alias with ALIAS_SEND, so the caller's runtime drops it once
 * the call is over. */
#define DFLAG_ALIAS (0x8ULL << 32)

/* What an OTP 25 node insists on; a peer lacking any of these is refused. */
#define DFLAG_MANDATORY_25                                                          \
	(DFLAG_EXTENDED_REFERENCES | DFLAG_FUN_TAGS | DFLAG_EXTENDED_PIDS_PORTS |   \
	 DFLAG_UTF8_ATOMS | DFLAG_NEW_FUN_TAGS | DFLAG_BIG_CREATION |               \
	 DFLAG_NEW_FLOATS | DFLAG_MAP_TAG | DFLAG_EXPORT_PTR_TAG |                  \
	 DFLAG_BIT_BINARIES | DFLAG_HANDSHAKE_23)

/* What this node advertises: the mandatory set, monitors by pid and by name
 * (so MONITOR_P reaches us and `noproc` can be answered), UNLINK_ID and V4_NC
 * (mandatory from OTP 26). Not PUBLISHED: the node stays hidden. No atom
 * cache and no fragments, so every packet is a plain 'p' packet. */
#define DFLAG_OURS                                                                  \
	(DFLAG_MANDATORY_25 | DFLAG_MANDATORY_25_DIGEST | DFLAG_DIST_MONITOR |      \
	 DFLAG_DIST_MONITOR_NAME | DFLAG_UNLINK_ID | DFLAG_V4_NC | DFLAG_ALIAS)

/* No handshake message is larger than this; longer lengths are refused. */
#define HANDSHAKE_MAX_MESSAGE 1024
#define HANDSHAKE_DIGEST_LEN 16

struct handshake_name {
	uint64_t flags;
	uint32_t creation;
	char node[NODE_NAME_BUF];
};

struct handshake_challenge {
	uint64_t flags;
	uint32_t challenge;
	uint32_t creation;
	char node[NODE_NAME_BUF];
};

/* Finds one 2-byte-framed handshake message at the start of buf.
 * Returns 1 and sets *msg, *msg_len (the body) and *consumed (body + 2);
 * 0 if more bytes are needed; -EPROTO if the length is 0 or > HANDSHAKE_MAX_MESSAGE. */
int handshake_frame(const uint8_t *buf, size_t len, const uint8_t **msg, size_t *msg_len, size_t *consumed);
/* As handshake_frame with a length of `len_bytes` (2, or 4 inside TLS:
 * inet_tls_dist runs the handshake over a {packet, 4} socket). */
int handshake_frame_sized(const uint8_t *buf, size_t len, size_t len_bytes, const uint8_t **msg, size_t *msg_len,
			  size_t *consumed);

/* Decoders take one message body. Each returns 0 or -EPROTO (wrong tag, wrong
 * size, or a node name that is empty, too long, or not "alive@host"). */
int handshake_decode_name(const uint8_t *msg, size_t len, struct handshake_name *out);
/* Status text is copied NUL-terminated into out (outsz bytes). */
int handshake_decode_status(const uint8_t *msg, size_t len, char *out, size_t outsz);
int handshake_decode_challenge(const uint8_t *msg, size_t len, struct handshake_challenge *out);
int handshake_decode_reply(const uint8_t *msg, size_t len, uint32_t *challenge, uint8_t digest[HANDSHAKE_DIGEST_LEN]);
int handshake_decode_ack(const uint8_t *msg, size_t len, uint8_t digest[HANDSHAKE_DIGEST_LEN]);

/* Encoders append one framed message to out. Each returns 0 or -ENOMEM. */
int handshake_encode_name(struct bytebuf *out, uint64_t flags, uint32_t creation, const char *node);
int handshake_encode_status(struct bytebuf *out, const char *status);
int handshake_encode_challenge(struct bytebuf *out, uint64_t flags, uint32_t challenge, uint32_t creation,
			const char *node);
int handshake_encode_reply(struct bytebuf *out, uint32_t challenge, const uint8_t digest[HANDSHAKE_DIGEST_LEN]);
int handshake_encode_ack(struct bytebuf *out, const uint8_t digest[HANDSHAKE_DIGEST_LEN]);

/* digest = MD5(cookie ++ decimal(challenge)). */
void handshake_digest(const char *cookie, uint32_t challenge, uint8_t out[HANDSHAKE_DIGEST_LEN]);
/* Constant-time comparison: the time taken does not depend on where they differ. */
bool handshake_digest_equal(const uint8_t a[HANDSHAKE_DIGEST_LEN], const uint8_t b[HANDSHAKE_DIGEST_LEN]);

#endif
