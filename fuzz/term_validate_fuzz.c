/*
 * term_validate_fuzz.c — libFuzzer target for the term validator and what
 * reads validated terms (`make fuzz`). Every input is a peer's bytes after
 * a version byte. Checked on each:
 *   - term_validate never reads outside the input (ASan) and, when it
 *     accepts, term_skip ends where it did;
 *   - the verdict is the term's own: a term accepted with bytes after it
 *     is accepted alone, in an exact copy, at the same end; a whole input
 *     accepted alone is accepted with bytes after it (a text float whose
 *     NUL lay after the term broke this);
 *   - term_readable_by reads nothing outside an accepted term;
 *   - ei walks every accepted term, in an exact copy, to exactly its end
 *     (ei_skip_term, built with ASan: a fun whose Size lied had it read
 *     26 KB past the term);
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
#include "etf/term_validate.h"
#include "etf/term_readable.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

/* The term data[0..end), accepted with bytes after it, alone in an
 * exact-size block: accepted at the same end, and walked there by ei. */
static void check_alone(const uint8_t *data, size_t end)
{
	char *alone = malloc(end ? end : 1);
	if (alone == NULL)
		return;
	memcpy(alone, data, end);
	size_t alone_end = 0;
	check(term_validate(alone, end, &alone_end) == 0 && alone_end == end);
	int ei_end = 0;
	check(ei_skip_term(alone, &ei_end) == 0 && (size_t)ei_end == end);
	/* Reads nothing outside the term, whatever identifiers name the
	 * reader (any pid of a@b, creation 0..3, is the fuzzer's to make). */
	(void)term_readable_by(alone, end, "a@b", (uint32_t)(end & 3));
	free(alone);
}

/* A whole input accepted alone stays accepted, at its end, with bytes
 * after it: a NUL, the rest of a text float, a small integer, a []. */
static void check_with_bytes_after(const uint8_t *data, size_t size)
{
	static const struct {
		const char *bytes;
		size_t n;
	} tails[] = {{"\0", 1}, {"0\0", 2}, {"e+00\0", 5}, {"\x61\x01", 2}, {"\x6a", 1}};
	for (size_t k = 0; k < sizeof tails / sizeof tails[0]; k++) {
		char *b = malloc(size + tails[k].n);
		if (b == NULL)
			return;
		memcpy(b, data, size);
		memcpy(b + size, tails[k].bytes, tails[k].n);
		size_t end = 0;
		check(term_validate(b, size + tails[k].n, &end) == 0 && end == size);
		free(b);
	}
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
		check_alone(data, end);
		if (end == size)
			check_with_bytes_after(data, size);
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
