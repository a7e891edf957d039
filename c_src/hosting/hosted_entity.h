/*
 * hosted_entity.h — the entity type of a type written in Erlang or Elixir
 * (docs/architecture.md, "Entities written in Erlang and Elixir"). To a
 * shard it is a C entity type whose state is the term the entity's
 * process last completed with, kept as its encoded bytes, so exports,
 * stores, remembered entities and passivation treat it like any other;
 * its messages never reach `handle` (host_entities.c sends them to the
 * process and completes them when the answer comes).
 *
 * The state the shard keeps for each entity is a struct hosted_entity.
 */
#ifndef SN_HOSTED_ENTITY_H
#define SN_HOSTED_ENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ei.h>

#include "entity/entity.h"
#include "hosting/remote_mailbox.h"

struct hosted_entity;

/* What the region does when one of its entities stops (passivation, a
 * delete, the shard leaving or stopping): tell the process to end, and
 * take back the messages still in the mailbox. Set on an entity the first
 * time the region sends it a message; an entity restored and never sent
 * one has no process and nothing queued. */
struct hosted_entity_ops {
	void (*stopped)(void *arg, struct hosted_entity *he);
	void *arg;
};

/* An entity process's pid without its node, which is always the host's:
 * 12 bytes where an erlang_pid takes over 1 KB (its node name buffer),
 * kept for every live entity. */
struct hosted_pid {
	uint32_t num, serial, creation;
};

struct hosted_entity {
	const struct hosted_entity_ops *ops; /* NULL: never sent a message here */
	char *state;          /* the last completed state, a term without version byte; owned; NULL: none yet */
	uint32_t state_len;
	bool has_pid;         /* the process the messages go to is known */
	/* A process this entity had and ended; a late crash report from it
	 * changes nothing. */
	bool has_retired;
	struct hosted_pid pid;
	struct hosted_pid retired;
	struct remote_mailbox mb;
};

/* Keeps `pid`'s number, serial and creation in *hp (its node is the
 * host's: the caller checked). */
void hosted_pid_keep(struct hosted_pid *hp, const erlang_pid *pid);

/* Whether `pid` is the process *hp names on node `host`. */
bool hosted_pid_is(const struct hosted_pid *hp, const erlang_pid *pid, const char *host);

/* Writes into *out the pid *hp names on node `host` (NAME@HOST, shorter
 * than a node name buffer: it is one). */
void hosted_pid_expand(const struct hosted_pid *hp, const char *host, erlang_pid *out);

/* Fills *t as the type named `name` (borrowed: it must outlive the type)
 * of entities hosted elsewhere. */
void hosted_entity_type_init(struct entity_type *t, const char *name);

/* Replaces the entity's state with a copy of the term state[0..len)
 * (no version byte); len 0: none. Returns 0 or -ENOMEM (the old state
 * stays). */
int hosted_entity_set_state(struct hosted_entity *he, const char *state, size_t len);

#endif
