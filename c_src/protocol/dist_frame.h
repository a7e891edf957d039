/*
 * dist_frame.h — packets of an established distribution connection.
 *
 * After the handshake every packet is a 4-byte big-endian length and a body.
 * Length 0 is a tick (keep-alive). Since we advertise neither the atom cache
 * nor fragments, a body is always
 *
 *     112 ('p'), 131, ControlTuple [, 131, Message]
 *
 * dist_frame_next() splits the byte stream; dist_frame_parse() checks a body
 * whole (with term_validate) and records where the control tuple's elements
 * and the message are, so handlers read them with ei without re-checking.
 */
#ifndef SN_DIST_FRAME_H
#define SN_DIST_FRAME_H

#include <stddef.h>
#include <stdint.h>

enum dist_frame_result {
	DIST_FRAME_NEED_MORE = 0, /* not a whole packet yet */
	DIST_FRAME_TICK,          /* a zero-length keep-alive */
	DIST_FRAME_PACKET,        /* *body, *body_len set */
	DIST_FRAME_TOO_BIG,       /* length exceeds max_len: close the connection */
};

/* Looks at the start of buf. On TICK and PACKET, *consumed is the number of
 * bytes to drop (4 + body). Pure: reads only buf[0..len). */
enum dist_frame_result dist_frame_next(const uint8_t *buf, size_t len, size_t max_len,
				       const uint8_t **body, size_t *body_len, size_t *consumed);

/* Control message operations (erl_dist_protocol). */
enum dist_op {
	DOP_LINK = 1,
	DOP_SEND = 2,
	DOP_EXIT = 3,
	DOP_UNLINK = 4,
	DOP_REG_SEND = 6,
	DOP_GROUP_LEADER = 7,
	DOP_EXIT2 = 8,
	DOP_SEND_TT = 12,
	DOP_EXIT_TT = 13,
	DOP_REG_SEND_TT = 16,
	DOP_EXIT2_TT = 18,
	DOP_MONITOR_P = 19,
	DOP_DEMONITOR_P = 20,
	DOP_MONITOR_P_EXIT = 21,
	DOP_SEND_SENDER = 22,
	DOP_SEND_SENDER_TT = 23,
	DOP_PAYLOAD_EXIT = 24,
	DOP_PAYLOAD_EXIT_TT = 25,
	DOP_PAYLOAD_EXIT2 = 26,
	DOP_PAYLOAD_EXIT2_TT = 27,
	DOP_PAYLOAD_MONITOR_P_EXIT = 28,
	DOP_SPAWN_REQUEST = 29,
	DOP_ALIAS_SEND = 33,
	DOP_UNLINK_ID = 35,
	DOP_UNLINK_ID_ACK = 36,
};

#define DIST_MSG_MAX_ELEMS 8

/* A parsed packet body. Pointers point into the body passed to dist_frame_parse. */
struct dist_msg {
	long op;
	const char *ctl;   /* control tuple, version byte stripped */
	size_t nelems;     /* tuple elements after the op */
	size_t elem[DIST_MSG_MAX_ELEMS]; /* offsets into ctl of those elements */
	const char *payload; /* message term (version byte stripped), or NULL */
	size_t payload_len;
};

/* Parses one packet body. Returns 0, or -EPROTO: not a 'p' packet, a term
 * that is malformed or runs past the body, trailing bytes, or a control
 * tuple that does not start with a small integer op. */
int dist_frame_parse(const uint8_t *body, size_t len, struct dist_msg *out);

/* Parses the first `len` bytes of a packet body too large to keep (the
 * rest was discarded): the control tuple must be whole and valid within
 * them, as dist_frame_parse checks it; the message is cut. On 0, *out is
 * as dist_frame_parse fills it, but `payload` holds only the message's
 * first payload_len bytes, NOT validated (NULL if none came): read it with
 * term_validate on bounded pieces only. Returns 0 or -EPROTO. */
int dist_frame_parse_prefix(const uint8_t *prefix, size_t len, struct dist_msg *out);

#endif
