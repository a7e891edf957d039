/*
 * term_validate_fuzz.c — libFuzzer target for the term validator and what
 * reads validated terms (`make fuzz`). Every input is a peer's bytes after
 * a version byte. Checked on each:
 *   - term_validate never reads outside the input (ASan) and, when it
 *     accepts, term_skip ends where it did;
 *   - phash2 and entity_id_canonical run on every accepted term without
 *     fault; a canonical form is itself valid, its own canonical form, and
 *     hashes as the term it came from.
 * A failed check aborts, which libFuzzer reports with the input.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ei.h>

#include "etf/entity_id.h"
#include "etf/phash2.h"
#include "etf/term.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size copy: ASan sees any read past the input. */
	char *buf = malloc(size ? size : 1);
	if (buf == NULL)
		return 0;
	memcpy(buf, data, size);
	size_t end = 0;
	if (term_validate(buf, size, &end) == 0) {
		size_t skipped = 0;
		term_skip(buf, &skipped);
		check(skipped == end);
		uint32_t h = 0, h2 = 0;
		int hashed = phash2_term(buf, end, &h) == 0;
		ei_x_buff canon;
		if (ei_x_new(&canon) == 0) {
			if (entity_id_canonical(buf, end, &canon) == 0) {
				size_t cend = 0;
				check(term_validate(canon.buff, (size_t)canon.index, &cend) == 0 &&
				      cend == (size_t)canon.index);
				ei_x_buff again;
				if (ei_x_new(&again) == 0) {
					check(entity_id_canonical(canon.buff, (size_t)canon.index, &again) == 0);
					check(again.index == canon.index &&
					      memcmp(again.buff, canon.buff, (size_t)canon.index) == 0);
					ei_x_free(&again);
				}
				if (hashed && phash2_term(canon.buff, (size_t)canon.index, &h2) == 0)
					check(h == h2);
			}
			ei_x_free(&canon);
		}
	}
	free(buf);
	return 0;
}
