/* proc.c — see proc.h. */
#include "protocol/proc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>

struct proc *proc_spawn(struct proc_table *t, const char *node, uint32_t creation, const char *name,
			proc_handler_fn handler, void *ctx, int *err)
{
	if (name != NULL && proc_by_name(t, name) != NULL) {
		*err = -EEXIST;
		return NULL;
	}
	size_t slot = 0;
	while (slot < t->nslots && t->slots[slot] != NULL)
		slot++;
	if (slot == t->nslots) {
		size_t n = t->nslots ? t->nslots * 2 : 16;
		struct proc **s = realloc(t->slots, n * sizeof *s);
		if (s == NULL) {
			*err = -ENOMEM;
			return NULL;
		}
		memset(s + t->nslots, 0, (n - t->nslots) * sizeof *s);
		t->slots = s;
		t->nslots = n;
	}
	struct proc *p = calloc(1, sizeof *p);
	if (p == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	strlcpy(p->pid.node, node, sizeof p->pid.node);
	p->pid.num = (unsigned)(slot + 1);
	/* A reused slot gets a new serial, so a stale pid held by a peer does
	 * not reach the new proc. */
	p->pid.serial = t->next_serial++;
	p->pid.creation = creation;
	if (name)
		strlcpy(p->name, name, sizeof p->name);
	p->name_len = strlen(p->name);
	p->handler = handler;
	p->ctx = ctx;
	t->slots[slot] = p;
	*err = 0;
	return p;
}

struct proc *proc_by_name(const struct proc_table *t, const char *name)
{
	/* Every REG_SEND looks its target up here: the length, known once,
	 * rules out most procs without touching their names. */
	size_t n = strlen(name);
	if (n == 0)
		return NULL; /* "" is no registered name */
	for (size_t i = 0; i < t->nslots; i++) {
		struct proc *p = t->slots[i];
		if (p != NULL && p->name_len == n && memcmp(p->name, name, n) == 0)
			return p;
	}
	return NULL;
}

struct proc *proc_by_pid(const struct proc_table *t, const erlang_pid *pid)
{
	if (pid->num == 0 || pid->num > t->nslots)
		return NULL;
	struct proc *p = t->slots[pid->num - 1];
	if (p == NULL || p->pid.serial != pid->serial || p->pid.creation != pid->creation ||
	    strcmp(p->pid.node, pid->node) != 0)
		return NULL;
	return p;
}

int proc_watch(struct proc *p, enum watcher_kind kind, const erlang_pid *pid, const char *ref,
	       size_t ref_len, const char *watched, size_t watched_len)
{
	/* One block for the watcher and its bytes: a gen_server:call makes one
	 * monitor and removes it again, so this is on every call's path. */
	size_t extra = ref != NULL ? ref_len + watched_len : 0;
	struct watcher *w = malloc(sizeof *w + extra);
	if (w == NULL)
		return -ENOMEM;
	/* Field by field: a memset and a struct copy would each touch the
	 * whole 1 KB of the pid's node buffer. */
	w->kind = kind;
	term_pid_copy(&w->pid, pid);
	w->ref = w->watched = NULL;
	w->ref_len = w->watched_len = 0;
	if (ref != NULL) {
		char *bytes = (char *)(w + 1);
		memcpy(bytes, ref, ref_len);
		memcpy(bytes + ref_len, watched, watched_len);
		w->ref = bytes;
		w->ref_len = ref_len;
		w->watched = bytes + ref_len;
		w->watched_len = watched_len;
	}
	w->next = p->watchers;
	p->watchers = w;
	return 0;
}

bool proc_unwatch_monitor(struct proc *p, const char *ref, size_t ref_len)
{
	for (struct watcher **pw = &p->watchers; *pw; pw = &(*pw)->next) {
		struct watcher *w = *pw;
		if (w->kind == WATCH_MONITOR && w->ref_len == ref_len && memcmp(w->ref, ref, ref_len) == 0) {
			*pw = w->next;
			w->next = NULL;
			watcher_list_free(w);
			return true;
		}
	}
	return false;
}

bool proc_unwatch_link(struct proc *p, const erlang_pid *pid)
{
	for (struct watcher **pw = &p->watchers; *pw; pw = &(*pw)->next) {
		struct watcher *w = *pw;
		if (w->kind == WATCH_LINK && term_pid_equal(&w->pid, pid)) {
			*pw = w->next;
			w->next = NULL;
			watcher_list_free(w);
			return true;
		}
	}
	return false;
}

void proc_table_forget_node(struct proc_table *t, const char *node)
{
	for (size_t i = 0; i < t->nslots; i++) {
		struct proc *p = t->slots[i];
		if (p == NULL)
			continue;
		struct watcher **pw = &p->watchers;
		while (*pw) {
			struct watcher *w = *pw;
			if (strcmp(w->pid.node, node) == 0) {
				*pw = w->next;
				w->next = NULL;
				watcher_list_free(w);
			} else {
				pw = &w->next;
			}
		}
	}
}

struct watcher *proc_remove(struct proc_table *t, struct proc *p)
{
	struct watcher *w = p->watchers;
	t->slots[p->pid.num - 1] = NULL;
	free(p);
	return w;
}

void watcher_list_free(struct watcher *w)
{
	while (w) {
		struct watcher *next = w->next;
		free(w); /* ref and watched live in the same block */
		w = next;
	}
}

void proc_table_free(struct proc_table *t)
{
	for (size_t i = 0; i < t->nslots; i++) {
		if (t->slots[i])
			watcher_list_free(proc_remove(t, t->slots[i]));
	}
	free(t->slots);
	t->slots = NULL;
	t->nslots = 0;
}
