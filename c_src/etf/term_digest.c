/* term_digest.c — see term_digest.h. */
#include "etf/term_digest.h"

#include "base/fnv1a.h"

uint64_t term_digest(const void *collection, size_t n, term_digest_encode_fn encode)
{
	ei_x_buff x;
	if (n == 0 || ei_x_new(&x) < 0)
		return 0;
	uint64_t digest = 0;
	for (size_t k = 0; k < n; k++) {
		x.index = 0;
		if (encode(collection, k, &x) != 0) {
			ei_x_free(&x);
			return 0;
		}
		digest ^= fnv1a64(x.buff, (size_t)x.index);
	}
	ei_x_free(&x);
	/* XOR can cancel to 0 (two equal elements do): 0 means "unknown". */
	return digest == 0 ? 1 : digest;
}
