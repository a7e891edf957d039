/*
 * proc.h — the node's processes as BEAM peers see them: objects with a pid,
 * maybe a registered name, a message handler, and the remote monitors and
 * links that watch them.
 *
 * A proc is not a thread: delivering a message is a call to its handler on
 * the event loop. The table owns every proc; it knows nothing of sockets
 * (dist_node.c sends the exit notices when a proc ends).
 */
#ifndef SN_PROC_H
#define SN_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ei.h>

#include "etf/term.h"

struct proc;

/* A message delivered to a proc. `from` is the sender's pid when the
 * distribution told us (REG_SEND), else NULL. `term` is the validated message
 * without version byte, valid only during the call. */
struct proc_msg {
	const erlang_pid *from;
	const char *term;
	size_t len;
	/* The node the message came from: the peer of the connection it
	 * arrived on, as its handshake proved (not what the message or its
	 * control tuple claims), or this node for a local send. What a node
	 * says about itself in a message is believed only if it is `via`. */
	const char *via;
};

typedef void (*proc_handler_fn)(void *ctx, struct proc *self, const struct proc_msg *m);

enum watcher_kind { WATCH_MONITOR, WATCH_LINK };

/* A remote process watching one of ours. */
struct watcher {
	enum watcher_kind kind;
	erlang_pid pid;       /* the watching (remote) process */
	char *ref;            /* monitor: the raw encoded reference (in the watcher's block) */
	size_t ref_len;
	char *watched;        /* monitor: the raw ToProc term, name atom or pid (same block) */
	size_t watched_len;
	struct watcher *next;
};

struct proc {
	erlang_pid pid;
	char name[TERM_ATOM_BUF]; /* registered name, or "" */
	size_t name_len;          /* strlen(name): lookups compare it first */
	proc_handler_fn handler;
	void *ctx;
	struct watcher *watchers;
};

struct proc_table {
	struct proc **slots; /* indexed by pid number - 1; NULL where free */
	size_t nslots;
	uint32_t next_serial;
};

/* Creates a proc with pid <node.N.0> (node and creation as given) and, if
 * name is non-NULL, registers it. Returns the proc (owned by the table), or
 * NULL: -EEXIST when the name is taken, -ENOMEM (in *err). */
struct proc *proc_spawn(struct proc_table *t, const char *node, uint32_t creation, const char *name,
			proc_handler_fn handler, void *ctx, int *err);

/* Finds by registered name, or by pid (only pids of `node`); NULL if none. */
struct proc *proc_by_name(const struct proc_table *t, const char *name);
struct proc *proc_by_pid(const struct proc_table *t, const erlang_pid *pid);

/* Adds a watcher; ref/watched bytes are copied. Returns 0 or -ENOMEM. */
int proc_watch(struct proc *p, enum watcher_kind kind, const erlang_pid *pid, const char *ref,
	       size_t ref_len, const char *watched, size_t watched_len);
/* Removes the monitor with this raw ref (DEMONITOR_P). Returns true if found. */
bool proc_unwatch_monitor(struct proc *p, const char *ref, size_t ref_len);
/* Removes the link with pid (UNLINK, EXIT). Returns true if found. */
bool proc_unwatch_link(struct proc *p, const erlang_pid *pid);
/* Removes every watcher whose pid lives on `node` (its connection went down). */
void proc_table_forget_node(struct proc_table *t, const char *node);

/* Detaches the watcher list (caller frees with watcher_list_free), unregisters
 * and frees the proc. */
struct watcher *proc_remove(struct proc_table *t, struct proc *p);
void watcher_list_free(struct watcher *w);

void proc_table_free(struct proc_table *t);

#endif
