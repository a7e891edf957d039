/* store_files.c — see store_files.h. */
#include "store/store_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int store_make_dirs(const char *dir)
{
	size_t len = strlen(dir);
	char *p = malloc(len + 1);
	if (p == NULL)
		return -ENOMEM;
	memcpy(p, dir, len + 1);
	int rc = 0;
	for (size_t i = 1; i <= len && rc == 0; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		char c = p[i];
		p[i] = '\0';
		if (mkdir(p, 0777) != 0 && errno != EEXIST)
			rc = -errno;
		p[i] = c;
	}
	free(p);
	return rc;
}

int store_lock_file(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int rc = errno == EWOULDBLOCK ? -EWOULDBLOCK : -errno;
		close(fd);
		return rc;
	}
	return fd;
}
