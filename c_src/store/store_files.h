/*
 * store_files.h — the file-system chores every store shares: making its
 * directory and holding it for one process.
 */
#ifndef SN_STORE_FILES_H
#define SN_STORE_FILES_H

/* mkdir -p: creates `dir` and its missing parents (mode 0777 less the
 * umask). Returns 0 or -errno (-ENOMEM). */
int store_make_dirs(const char *dir);

/* Opens (creating it) the file `path` and takes an exclusive flock on it
 * without waiting: two processes writing one store would lose each other's
 * records. Returns the descriptor, which holds the lock until closed, or
 * -EWOULDBLOCK (another process holds it) or -errno. */
int store_lock_file(const char *path);

#endif
