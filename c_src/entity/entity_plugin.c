/* entity_plugin.c — see entity_plugin.h. */
#include "entity/entity_plugin.h"
#include "entity/entity_type.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef const struct entity_type *(*type_fn)(void);

static bool name_taken(const struct entity_type *const *list, const char *name)
{
	for (; list && *list; list++)
		if (strcmp((*list)->name, name) == 0)
			return true;
	return false;
}

void entity_plugins_load(struct entity_plugins *p, const char *dir, const struct entity_type *const *taken,
			 const struct logger *log)
{
	memset(p, 0, sizeof *p);
	(void)entity_plugins_add_dir(p, dir, taken, log);
}

int entity_plugins_add_dir(struct entity_plugins *p, const char *dir, const struct entity_type *const *taken,
			   const struct logger *log)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return -errno;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);
		if (n < 4 || strcmp(de->d_name + n - 3, ".so") != 0)
			continue;
		char path[PATH_MAX];
		if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= sizeof path)
			continue;
		if (p->count == ENTITY_PLUGIN_MAX) {
			log_warn(log, "entity plugin %s not loaded: a node loads at most %d", path, ENTITY_PLUGIN_MAX);
			continue;
		}
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (h == NULL) {
			log_warn(log, "entity plugin %s not loaded: %s", path, dlerror());
			continue;
		}
		type_fn fn;
		*(void **)(&fn) = dlsym(h, "shardnode_entity_type");
		const struct entity_type *t = fn ? fn() : NULL;
		const char *why = fn == NULL ? "no shardnode_entity_type symbol" : entity_type_invalid(t);
		if (why == NULL && (name_taken(taken, t->name) || name_taken(p->types, t->name)))
			why = "a type of that name already exists";
		if (why != NULL) {
			log_warn(log, "entity plugin %s skipped: %s", path, why);
			dlclose(h);
			continue;
		}
		p->handles[p->count] = h;
		p->types[p->count++] = t;
		log_info(log, "entity type %s loaded from %s", t->name, path);
	}
	closedir(d);
	return 0;
}

int entity_plugins_exe_dir(char *out, size_t outsz)
{
	if (outsz < 2)
		return -ENAMETOOLONG;
	ssize_t n = readlink("/proc/self/exe", out, outsz - 1);
	if (n <= 0)
		return -errno;
	if ((size_t)n >= outsz - 1)
		return -ENAMETOOLONG; /* possibly cut off: the directory would be wrong */
	out[n] = '\0';
	char *slash = strrchr(out, '/');
	if (slash == NULL)
		return -ENOENT;
	*slash = '\0';
	return 0;
}

void entity_plugins_free(struct entity_plugins *p)
{
	for (size_t k = 0; k < p->count; k++)
		dlclose(p->handles[k]);
	p->count = 0;
	p->types[0] = NULL;
}
