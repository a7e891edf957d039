/*
 * entity_plugin.h — entity types loaded from shared objects.
 *
 * Every `*.so` in a directory (the node's priv/, beside the executable) is
 * opened; one that exports `shardnode_entity_type` (see entity.h) adds its
 * type. A shared object that fails to load or whose type is invalid is
 * logged and skipped, so one bad plugin does not stop the node.
 */
#ifndef SN_ENTITY_PLUGIN_H
#define SN_ENTITY_PLUGIN_H

#include <stddef.h>

#include "entity/entity.h"
#include "base/log.h"

#define ENTITY_PLUGIN_MAX 32

struct entity_plugins {
	void *handles[ENTITY_PLUGIN_MAX];
	const struct entity_type *types[ENTITY_PLUGIN_MAX + 1]; /* NULL-terminated */
	size_t count;
};

/* Fills *p (whatever it held) with the plugins of `dir`. A missing
 * directory is not an error. Types whose name is already in `taken`
 * (NULL-terminated) are skipped. Always succeeds; problems are logged. */
void entity_plugins_load(struct entity_plugins *p, const char *dir, const struct entity_type *const *taken,
			 const struct logger *log);

/* Adds the plugins of `dir` to those *p holds (from entity_plugins_load).
 * Types named like one in `taken` or one already in *p are skipped, as are
 * files beyond ENTITY_PLUGIN_MAX plugins in all; each is logged. Returns 0,
 * or -errno when `dir` cannot be opened as a directory (nothing is added
 * then; the caller decides whether that is an error). */
int entity_plugins_add_dir(struct entity_plugins *p, const char *dir, const struct entity_type *const *taken,
			   const struct logger *log);

/* The directory holding the running executable (for priv/), into out. */
int entity_plugins_exe_dir(char *out, size_t outsz);

/* Closes every loaded shared object. No type of theirs may be used after. */
void entity_plugins_free(struct entity_plugins *p);

#endif
