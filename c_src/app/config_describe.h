/*
 * config_describe.h — the one line a node's log starts with, saying what it
 * runs (docs/contract.md, "Logs"): its version, its types (C, and those written in
 * Erlang or Elixir with their host), singletons, store and replicas, TLS,
 * the metrics port (when there is one) and seeds. Never a secret: the cookie and the PostgreSQL
 * connection string stay out of it.
 */
#ifndef SN_CONFIG_DESCRIBE_H
#define SN_CONFIG_DESCRIBE_H

#include <stddef.h>

#include "app/config.h"

/* Writes the description of `cfg` into out (n bytes, NUL-terminated; cut
 * short with "..." if it does not fit). */
void config_describe(const struct sn_config *cfg, char *out, size_t n);

/* The state_store setting as it is written: "memory", "lmdb" or
 * "postgres". Static text. */
const char *config_store_name(enum state_store_kind kind);

#endif
