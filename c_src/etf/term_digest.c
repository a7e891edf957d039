/* term_digest.c — see term_digest.h. */
#include "etf/term_digest.h"

#include "base/fnv1a.h"

#include <errno.h>

int term_digest_part(const void *collection, size_t k, term_digest_encode_fn encode, ei_x_buff *x, uint64_t *part)
{
	x->index = 0;
	if (encode(collection, k, x) != 0)
		return -ENOMEM;
	*part = fnv1a64(x->buff, (size_t)x->index);
	return 0;
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
