/* node_set.c — see node_set.h. */
#include "protocol/node_set.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void node_set_init(struct node_set *s)
{
	s->names = NULL;
	s->n = 0;
	s->cap = 0;
}

void node_set_free(struct node_set *s)
{
	free(s->names);
	node_set_init(s);
}

bool node_set_contains(const struct node_set *s, const char *name)
{
	for (size_t k = 0; k < s->n; k++)
		if (strcmp(s->names[k], name) == 0)
			return true;
	return false;
}

static int reserve(struct node_set *s, size_t need)
{
	if (need <= s->cap)
		return 0;
	size_t cap = s->cap ? s->cap : 8;
	while (cap < need)
		cap *= 2;
	void *p = realloc(s->names, cap * sizeof *s->names);
	if (p == NULL)
		return -ENOMEM;
	s->names = p;
	s->cap = cap;
	return 0;
}

int node_set_add(struct node_set *s, const char *name)
{
	size_t len = strlen(name);
	if (len >= NODE_NAME_BUF)
		return -ENAMETOOLONG;
	if (node_set_contains(s, name))
		return 0;
	if (reserve(s, s->n + 1))
		return -ENOMEM;
	memcpy(s->names[s->n++], name, len + 1);
	return 1;
}

bool node_set_remove(struct node_set *s, const char *name)
{
	for (size_t k = 0; k < s->n; k++) {
		if (strcmp(s->names[k], name) == 0) {
			memmove(&s->names[k], &s->names[k + 1], (s->n - k - 1) * sizeof *s->names);
			s->n--;
			return true;
		}
	}
	return false;
}

int node_set_assign(struct node_set *s, const char *const *names, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (strlen(names[k]) >= NODE_NAME_BUF)
			return -ENAMETOOLONG;
	/* Built aside and swapped in, so a failure leaves the old contents. */
	struct node_set fresh;
	node_set_init(&fresh);
	if (n > 0 && reserve(&fresh, n))
		return -ENOMEM;
	for (size_t k = 0; k < n; k++)
		(void)node_set_add(&fresh, names[k]); /* cannot fail: reserved, and checked */
	node_set_free(s);
	*s = fresh;
	return 0;
}
