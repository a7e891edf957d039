/* dist_frame.c — see dist_frame.h. */
#include "protocol/dist_frame.h"
#include "base/byteorder.h"

#include <errno.h>

#include "etf/term.h"
#include "etf/term_validate.h"

enum dist_frame_result dist_frame_next(const uint8_t *buf, size_t len, size_t max_len,
				       const uint8_t **body, size_t *body_len, size_t *consumed)
{
	if (len < 4)
		return DIST_FRAME_NEED_MORE;
	size_t n = be32_read(buf);
	if (n == 0) {
		*consumed = 4;
		return DIST_FRAME_TICK;
	}
	if (n > max_len)
		return DIST_FRAME_TOO_BIG;
	if (len - 4 < n)
		return DIST_FRAME_NEED_MORE;
	*body = buf + 4;
	*body_len = n;
	*consumed = 4 + n;
	return DIST_FRAME_PACKET;
}

/* The control tuple at the start of a body (after 'p' and its version
 * byte): validated, its op and elements recorded. *end gets its length.
 * Returns 0 or -EPROTO. */
static int parse_ctl(const uint8_t *body, size_t len, struct dist_msg *out, size_t *end)
{
	if (len < 3 || body[0] != 'p' || body[1] != TERM_VERSION_MAGIC)
		return -EPROTO;
	const char *ctl = (const char *)body + 2;
	*end = 0;
	if (term_validate(ctl, len - 2, end))
		return -EPROTO;
	size_t i = 0;
	long arity = term_get_tuple(ctl, &i);
	if (arity < 1)
		return -EPROTO;
	long op;
	if (term_get_long(ctl, &i, &op))
		return -EPROTO;
	out->op = op;
	out->ctl = ctl;
	out->nelems = 0;
	for (long k = 1; k < arity; k++) {
		if (out->nelems < DIST_MSG_MAX_ELEMS)
			out->elem[out->nelems++] = i;
		term_skip(ctl, &i);
	}
	out->payload = NULL;
	out->payload_len = 0;
	return 0;
}

int dist_frame_parse_prefix(const uint8_t *prefix, size_t len, struct dist_msg *out)
{
	size_t end;
	if (parse_ctl(prefix, len, out, &end))
		return -EPROTO;
	size_t ctl_space = len - 2;
	if (end == ctl_space)
		return 0;
	if (out->ctl[end] != (char)TERM_VERSION_MAGIC)
		return -EPROTO;
	out->payload = out->ctl + end + 1;
	out->payload_len = ctl_space - end - 1;
	return 0;
}

int dist_frame_parse(const uint8_t *body, size_t len, struct dist_msg *out)
{
	/* The whole body is there: the message, if one follows its version
	 * byte, must be exactly one term. */
	if (dist_frame_parse_prefix(body, len, out))
		return -EPROTO;
	size_t mend = 0;
	if (out->payload != NULL &&
	    (term_validate(out->payload, out->payload_len, &mend) || mend != out->payload_len))
		return -EPROTO;
	return 0;
}
