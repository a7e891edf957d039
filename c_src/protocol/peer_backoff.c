/* peer_backoff.c — see peer_backoff.h. */
#include "protocol/peer_backoff.h"

#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>

void peer_backoff_free(struct peer_backoff *b)
{
	free(b->peers);
	b->peers = NULL;
	b->n = b->cap = 0;
}

static struct peer_failing *find(const struct peer_backoff *b, const char *peer)
{
	for (size_t k = 0; k < b->n; k++)
		if (strcmp(b->peers[k].peer, peer) == 0)
			return &b->peers[k];
	return NULL;
}

uint32_t peer_backoff_delay_ms(uint32_t failures)
{
	uint32_t delay = PEER_BACKOFF_FIRST_MS;
	for (uint32_t k = 1; k < failures && delay < PEER_BACKOFF_MAX_MS; k++)
		delay *= 2;
	return delay < PEER_BACKOFF_MAX_MS ? delay : PEER_BACKOFF_MAX_MS;
}

uint32_t peer_backoff_failed(struct peer_backoff *b, const char *peer, uint64_t now)
{
	struct peer_failing *p = find(b, peer);
	if (p == NULL) {
		if (b->n == b->cap) {
			size_t cap = b->cap ? b->cap * 2 : 8;
			struct peer_failing *q = realloc(b->peers, cap * sizeof *q);
			if (q == NULL)
				return 0;
			b->peers = q;
			b->cap = cap;
		}
		p = &b->peers[b->n++];
		memset(p, 0, sizeof *p);
		strlcpy(p->peer, peer, sizeof p->peer);
		p->since = now;
	}
	if (p->failures < UINT32_MAX)
		p->failures++;
	p->retry_at = now + peer_backoff_delay_ms(p->failures);
	return p->failures;
}

bool peer_backoff_may_try(const struct peer_backoff *b, const char *peer, uint64_t now)
{
	const struct peer_failing *p = find(b, peer);
	return p == NULL || now >= p->retry_at;
}

void peer_backoff_dropped(struct peer_backoff *b, const char *peer, uint64_t n)
{
	struct peer_failing *p = find(b, peer);
	if (p != NULL)
		p->dropped += n;
}

bool peer_backoff_warn_due(struct peer_backoff *b, const char *peer, uint64_t now, uint64_t after_ms)
{
	struct peer_failing *p = find(b, peer);
	if (p == NULL || p->warned || now < p->since + after_ms)
		return false;
	p->warned = true;
	return true;
}

void peer_backoff_reached(struct peer_backoff *b, const char *peer, struct peer_failing *out)
{
	struct peer_failing *p = find(b, peer);
	if (out != NULL) {
		if (p != NULL)
			*out = *p;
		else
			memset(out, 0, sizeof *out);
	}
	if (p != NULL)
		*p = b->peers[--b->n];
}
