/* hosted_entity.c — see hosted_entity.h. */
#include "hosting/hosted_entity.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "etf/term.h"
#include "etf/term_encode.h"

int hosted_entity_set_state(struct hosted_entity *he, const char *state, size_t len)
{
	char *copy = NULL;
	if (len > UINT32_MAX)
		return -ENOMEM;
	if (len > 0 && len == he->state_len && he->state != NULL) {
		/* A counter's next value, say: the same size, in place. */
		memmove(he->state, state, len);
		return 0;
	}
	if (len > 0) {
		if ((copy = malloc(len)) == NULL)
			return -ENOMEM;
		memcpy(copy, state, len);
	}
	free(he->state);
	he->state = copy;
	he->state_len = (uint32_t)len;
	return 0;
}

/* Messages of a hosted type go to its processes (host_entities.c); one
 * reaching here would be a mistake of the region's, answered as one. */
static enum entity_after never_handled(void *state, const char *msg, size_t msg_len, ei_x_buff *reply)
{
	(void)state;
	(void)msg;
	(void)msg_len;
	(void)term_x_whole_or_enomem(reply, 0, term_x_error_atom(reply, "not_hosted_here"));
	return ENTITY_CONTINUE;
}

static void stop(void *state)
{
	struct hosted_entity *he = state;
	if (he->ops != NULL)
		he->ops->stopped(he->ops->arg, he);
	free(he->state);
	he->state = NULL;
}

/* An entity that never completed a message has no state of its own yet:
 * it moves as `undefined`, which starts it anew, as it would have. */
static int encode_state(const void *state, ei_x_buff *out)
{
	const struct hosted_entity *he = state;
	if (he->state == NULL)
		return term_x_encode_atom(out, "undefined") < 0 ? -ENOMEM : 0;
	return term_x_append_raw(out, he->state, he->state_len);
}

static int decode_state(void *state, const char *term, size_t len)
{
	return hosted_entity_set_state(state, term, len);
}

void hosted_entity_type_init(struct entity_type *t, const char *name)
{
	*t = (struct entity_type){
		.api_version = ENTITY_API_VERSION,
		.name = name,
		.state_size = sizeof(struct hosted_entity),
		.handle = never_handled,
		.stop = stop,
		.encode_state = encode_state,
		.decode_state = decode_state,
	};
}

void hosted_pid_keep(struct hosted_pid *hp, const erlang_pid *pid)
{
	*hp = (struct hosted_pid){.num = pid->num, .serial = pid->serial, .creation = pid->creation};
}

bool hosted_pid_is(const struct hosted_pid *hp, const erlang_pid *pid, const char *host)
{
	return hp->num == pid->num && hp->serial == pid->serial && hp->creation == pid->creation &&
	       strcmp(pid->node, host) == 0;
}

void hosted_pid_expand(const struct hosted_pid *hp, const char *host, erlang_pid *out)
{
	term_pid_set(out, host, strnlen(host, sizeof out->node - 1), hp->num, hp->serial, hp->creation);
}
