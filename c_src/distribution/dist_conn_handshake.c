/* dist_conn_handshake.c — the distribution handshake's steps (version 6,
 * erl_dist_protocol), as acceptor and as initiator, on the messages
 * dist_conn_io.c has framed (dist_conn_internal.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "distribution/dist_conn_internal.h"

static uint32_t random_u32(void)
{
	uint32_t v = 0;
	if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
		v = (uint32_t)rand(); /* never expected; still a valid challenge */
	return v;
}

static bool flags_acceptable(struct dist_conn *c, uint64_t flags)
{
	if ((flags & DFLAG_MANDATORY_25) != DFLAG_MANDATORY_25) {
		log_warn(c->settings->log, "connection %s refused: peer lacks mandatory distribution flags "
			 "(has 0x%llx)", dist_conn_peer_label(c), (unsigned long long)flags);
		return false;
	}
	return true;
}

static void send_challenge(struct dist_conn *c)
{
	c->our_challenge = random_u32();
	if (dist_conn_queue_handshake(c, handshake_encode_challenge(&c->hs_msg, DFLAG_OURS, c->our_challenge, c->settings->creation,
							  c->settings->name))) {
		dist_conn_close(c, "out of memory");
		return;
	}
	dist_conn_set_state(c, CONN_REPLY_WAIT, "challenge sent");
	dist_conn_flush_or_close(c);
}

static void send_status(struct dist_conn *c, const char *status)
{
	if (dist_conn_queue_handshake(c, handshake_encode_status(&c->hs_msg, status)))
		dist_conn_close(c, "out of memory");
}

static void on_name(struct dist_conn *c, const uint8_t *msg, size_t len)
{
	struct handshake_name name;
	if (handshake_decode_name(msg, len, &name)) {
		dist_conn_close(c, "malformed send_name");
		return;
	}
	memcpy(c->peer, name.node, sizeof c->peer);
	c->peer_flags = name.flags;
	c->peer_creation = name.creation;
	if (!flags_acceptable(c, name.flags)) {
		dist_conn_close(c, "missing mandatory flags");
		return;
	}
	switch (c->hooks->arbitrate(c->hooks->owner, c)) {
	case CONN_ARB_OK:
		send_status(c, "ok");
		send_challenge(c);
		break;
	case CONN_ARB_OK_SIMULTANEOUS:
		send_status(c, "ok_simultaneous");
		send_challenge(c);
		break;
	case CONN_ARB_NOK:
		send_status(c, "nok");
		dist_conn_flush_now(c);
		dist_conn_close(c, "simultaneous connect: ours wins");
		break;
	case CONN_ARB_ALIVE:
		send_status(c, "alive");
		dist_conn_set_state(c, CONN_ALIVE_WAIT, "a connection to this peer is up");
		dist_conn_flush_or_close(c);
		break;
	case CONN_ARB_REFUSE:
		send_status(c, "not_allowed");
		dist_conn_flush_now(c);
		dist_conn_close(c, "not allowed");
		break;
	}
}

static void on_alive_answer(struct dist_conn *c, const uint8_t *msg, size_t len)
{
	char status[32];
	if (handshake_decode_status(msg, len, status, sizeof status)) {
		dist_conn_close(c, "malformed alive answer");
		return;
	}
	if (strcmp(status, "true") != 0) {
		dist_conn_close(c, "peer keeps its old connection");
		return;
	}
	c->hooks->replace(c->hooks->owner, c);
	if (c->state != CONN_CLOSED)
		send_challenge(c);
}

static void on_reply(struct dist_conn *c, const uint8_t *msg, size_t len)
{
	uint32_t their_challenge;
	uint8_t digest[HANDSHAKE_DIGEST_LEN], expected[HANDSHAKE_DIGEST_LEN];
	if (handshake_decode_reply(msg, len, &their_challenge, digest)) {
		dist_conn_close(c, "malformed challenge_reply");
		return;
	}
	handshake_digest(c->settings->cookie, c->our_challenge, expected);
	if (!handshake_digest_equal(digest, expected)) {
		log_warn(c->settings->log, "connection from %s refused: wrong cookie", dist_conn_peer_label(c));
		dist_conn_close(c, "wrong cookie");
		return;
	}
	handshake_digest(c->settings->cookie, their_challenge, expected);
	if (dist_conn_queue_handshake(c, handshake_encode_ack(&c->hs_msg, expected))) {
		dist_conn_close(c, "out of memory");
		return;
	}
	dist_conn_go_up(c);
}

static void on_status(struct dist_conn *c, const uint8_t *msg, size_t len)
{
	char status[32];
	if (handshake_decode_status(msg, len, status, sizeof status)) {
		dist_conn_close(c, "malformed status");
		return;
	}
	if (strcmp(status, "ok") == 0 || strcmp(status, "ok_simultaneous") == 0) {
		dist_conn_set_state(c, CONN_CHALLENGE_WAIT, status);
	} else if (strcmp(status, "alive") == 0) {
		/* The peer still has a connection it believes is ours. We are
		 * connecting, so that one is stale: say so. */
		send_status(c, "true");
		dist_conn_set_state(c, CONN_CHALLENGE_WAIT, "answered alive with true");
		dist_conn_flush_or_close(c);
	} else if (strcmp(status, "nok") == 0) {
		dist_conn_go_nok_wait(c, "simultaneous connect: peer's wins");
	} else {
		char why[64];
		snprintf(why, sizeof why, "peer refused with status \"%s\"", status);
		dist_conn_close(c, why);
	}
}

static void on_challenge(struct dist_conn *c, const uint8_t *msg, size_t len)
{
	struct handshake_challenge ch;
	if (handshake_decode_challenge(msg, len, &ch)) {
		dist_conn_close(c, "malformed challenge");
		return;
	}
	if (strcmp(ch.node, c->peer) != 0) {
		dist_conn_close(c, "peer answered with another node name");
		return;
	}
	if (!flags_acceptable(c, ch.flags)) {
		dist_conn_close(c, "missing mandatory flags");
		return;
	}
	c->peer_flags = ch.flags;
	c->peer_creation = ch.creation;
	uint8_t digest[HANDSHAKE_DIGEST_LEN];
	handshake_digest(c->settings->cookie, ch.challenge, digest);
	c->our_challenge = random_u32();
	if (dist_conn_queue_handshake(c, handshake_encode_reply(&c->hs_msg, c->our_challenge, digest))) {
		dist_conn_close(c, "out of memory");
		return;
	}
	dist_conn_set_state(c, CONN_ACK_WAIT, "reply sent");
	dist_conn_flush_or_close(c);
}

static void on_ack(struct dist_conn *c, const uint8_t *msg, size_t len)
{
	uint8_t digest[HANDSHAKE_DIGEST_LEN], expected[HANDSHAKE_DIGEST_LEN];
	if (handshake_decode_ack(msg, len, digest)) {
		dist_conn_close(c, "malformed challenge_ack");
		return;
	}
	handshake_digest(c->settings->cookie, c->our_challenge, expected);
	if (!handshake_digest_equal(digest, expected)) {
		log_warn(c->settings->log, "connection to %s refused: wrong cookie", dist_conn_peer_label(c));
		dist_conn_close(c, "wrong cookie");
		return;
	}
	dist_conn_go_up(c);
}

void dist_conn_on_handshake_message(struct dist_conn *c, const uint8_t *msg, size_t len)
{
	switch (c->state) {
	case CONN_NAME_WAIT: on_name(c, msg, len); break;
	case CONN_ALIVE_WAIT: on_alive_answer(c, msg, len); break;
	case CONN_REPLY_WAIT: on_reply(c, msg, len); break;
	case CONN_STATUS_WAIT: on_status(c, msg, len); break;
	case CONN_CHALLENGE_WAIT: on_challenge(c, msg, len); break;
	case CONN_ACK_WAIT: on_ack(c, msg, len); break;
	default: dist_conn_close(c, "unexpected handshake message"); break;
	}
}

void dist_conn_send_name(struct dist_conn *c)
{
	if (dist_conn_queue_handshake(c, handshake_encode_name(&c->hs_msg, DFLAG_OURS, c->settings->creation,
							       c->settings->name))) {
		dist_conn_close(c, "out of memory");
		return;
	}
	dist_conn_set_state(c, CONN_STATUS_WAIT, "send_name sent");
	dist_conn_flush_or_close(c);
}
