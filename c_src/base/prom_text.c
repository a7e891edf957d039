/* prom_text.c — see prom_text.h. */
#include "base/prom_text.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

static void put(struct prom_text *p, const char *s, size_t n)
{
	if (p->err == 0 && bytebuf_append(p->out, s, n) != 0)
		p->err = -ENOMEM;
}

static void puts_(struct prom_text *p, const char *s) { put(p, s, strlen(s)); }

/* Decimal digits of v into the end of tmp[20]; returns where they start. */
static char *u64_digits(uint64_t v, char tmp[20])
{
	char *d = tmp + 20;
	do {
		*--d = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	return d;
}

static void put_u64(struct prom_text *p, uint64_t v)
{
	char tmp[20];
	char *d = u64_digits(v, tmp);
	put(p, d, (size_t)(tmp + 20 - d));
}

/* ns as seconds: whole seconds, then the nine decimals without the
 * trailing zeros. */
static void put_seconds(struct prom_text *p, uint64_t ns)
{
	put_u64(p, ns / 1000000000u);
	uint64_t frac = ns % 1000000000u;
	if (frac == 0)
		return;
	char dec[10] = {'.'};
	for (int k = 9; k >= 1; k--) {
		dec[k] = (char)('0' + frac % 10);
		frac /= 10;
	}
	size_t n = 10;
	while (dec[n - 1] == '0')
		n--;
	put(p, dec, n);
}

static void put_name(struct prom_text *p, const char *name, const char *suffix, const char *labels,
		     const char *extra_label)
{
	puts_(p, name);
	if (suffix)
		puts_(p, suffix);
	bool has_labels = labels != NULL && labels[0] != '\0';
	if (!has_labels && extra_label == NULL) {
		put(p, " ", 1);
		return;
	}
	put(p, "{", 1);
	if (has_labels)
		puts_(p, labels);
	if (extra_label != NULL) {
		if (has_labels)
			put(p, ",", 1);
		puts_(p, extra_label);
	}
	put(p, "} ", 2);
}

void prom_family(struct prom_text *p, const char *name, const char *type, const char *help)
{
	puts_(p, "# HELP ");
	puts_(p, name);
	put(p, " ", 1);
	puts_(p, help);
	puts_(p, "\n# TYPE ");
	puts_(p, name);
	put(p, " ", 1);
	puts_(p, type);
	put(p, "\n", 1);
}

void prom_u64(struct prom_text *p, const char *name, const char *labels, uint64_t v)
{
	put_name(p, name, NULL, labels, NULL);
	put_u64(p, v);
	put(p, "\n", 1);
}

void prom_seconds(struct prom_text *p, const char *name, const char *labels, uint64_t ns)
{
	put_name(p, name, NULL, labels, NULL);
	put_seconds(p, ns);
	put(p, "\n", 1);
}

void prom_histogram(struct prom_text *p, const char *name, const char *labels, const struct histogram *h)
{
	uint64_t cumulative = 0;
	char le[32];
	for (size_t k = 0; k <= HISTOGRAM_BOUNDS; k++) {
		cumulative += h->counts[k];
		const char *bound = k < HISTOGRAM_BOUNDS ? histogram_bounds_le[k] : "+Inf";
		size_t n = strlen(bound);
		memcpy(le, "le=\"", 4);
		memcpy(le + 4, bound, n);
		memcpy(le + 4 + n, "\"", 2);
		put_name(p, name, "_bucket", labels, le);
		put_u64(p, cumulative);
		put(p, "\n", 1);
	}
	put_name(p, name, "_sum", labels, NULL);
	put_seconds(p, h->sum_ns);
	put(p, "\n", 1);
	put_name(p, name, "_count", labels, NULL);
	put_u64(p, cumulative);
	put(p, "\n", 1);
}

int prom_label(char *buf, size_t cap, size_t *len, const char *key, const char *value)
{
	size_t n = *len;
	size_t need = (n > 0) + strlen(key) + 2 + 1 + 1; /* , key =" " NUL */
	for (const char *v = value; *v; v++)
		need += *v == '\\' || *v == '"' || *v == '\n' ? 2 : 1;
	if (n + need > cap)
		return -ENOSPC;
	if (n > 0)
		buf[n++] = ',';
	size_t kl = strlen(key);
	memcpy(buf + n, key, kl);
	n += kl;
	buf[n++] = '=';
	buf[n++] = '"';
	for (const char *v = value; *v; v++) {
		if (*v == '\\' || *v == '"' || *v == '\n') {
			buf[n++] = '\\';
			buf[n++] = *v == '\n' ? 'n' : *v;
		} else {
			buf[n++] = *v;
		}
	}
	buf[n++] = '"';
	buf[n] = '\0';
	*len = n;
	return 0;
}
