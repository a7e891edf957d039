/*
 * config_internal.h — what config.c (keys, values, the config file) gives
 * config_args.c (the command line), which calls it and nothing the other
 * way. Nobody else includes this.
 */
#ifndef SN_CONFIG_INTERNAL_H
#define SN_CONFIG_INTERNAL_H

#include "app/config.h"

/* Writes the message into err and returns -EINVAL: every refusal's one line. */
int config_fail(char err[CONFIG_ERR_BUF], const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Adds the singleton Name=Type (from `origin`, for the message). Returns 0
 * or -EINVAL with err set (a bad or repeated name, too many). */
int config_add_singleton(struct sn_config *c, const char *name, const char *type, const char *origin,
			 char err[CONFIG_ERR_BUF]);

#endif
