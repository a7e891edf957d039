/* term_digest.c — see term_digest.h. */
#include "etf/term_digest.h"

#include "base/fnv1a.h"
#include "etf/term.h"

#include <errno.h>

/* An element's part: its encoding's bytes hashed. */
static uint64_t part_of(const char *encoding, size_t len) { return fnv1a64(encoding, len); }

int term_digest_part(const void *collection, size_t k, term_digest_encode_fn encode, ei_x_buff *x, uint64_t *part)
{
	x->index = 0;
	if (encode(collection, k, x) != 0)
		return -ENOMEM;
	*part = part_of(x->buff, (size_t)x->index);
	return 0;
}

uint64_t term_digest_of_list(const char *buf, size_t idx)
{
	int ii = (int)idx, count;
	if (ei_decode_list_header(buf, &ii, &count) < 0 || count < 0)
		return 0;
	uint64_t digest = 0;
	for (size_t k = 0, at = (size_t)ii; k < (size_t)count; k++) {
		size_t end = at;
		term_skip(buf, &end);
		digest ^= part_of(buf + at, end - at);
		at = end;
	}
	return term_digest_of_parts(digest, (size_t)count);
}

uint64_t term_digest_of_parts(uint64_t xor_of_parts, size_t n)
{
	/* XOR can cancel to 0 (two equal elements do): 0 means "unknown". */
	return n == 0 ? 0 : xor_of_parts == 0 ? 1 : xor_of_parts;
}

uint64_t term_digest(const void *collection, size_t n, term_digest_encode_fn encode)
{
	ei_x_buff x;
	if (n == 0 || ei_x_new(&x) < 0)
		return 0;
	uint64_t digest = 0;
	for (size_t k = 0; k < n; k++) {
		uint64_t part;
		if (term_digest_part(collection, k, encode, &x, &part) != 0) {
			ei_x_free(&x);
			return 0;
		}
		digest ^= part;
	}
	ei_x_free(&x);
	return term_digest_of_parts(digest, n);
}
