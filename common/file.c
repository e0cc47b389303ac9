/*
 * file.c: making new directory entries durable.
 *
 * fsync(2) of a file makes its data and inode durable, not its name: the
 * entry lives in the directory, which needs its own fsync. Every file whose
 * existence matters after a crash (volumes, credentials, keys, the index)
 * is synced this way after it is created and before anything in it is
 * published.
 */
#define _GNU_SOURCE
#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
dir_sync(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int err = fsync(fd) < 0 ? -errno : 0;
    close(fd);
    return err;
}

int
dir_sync_parent(const char *path)
{
    char *parent = xstrdup(path);
    size_t len = strlen(parent);
    while (len > 1 && parent[len - 1] == '/')
        parent[--len] = '\0';
    char *slash = strrchr(parent, '/');
    int err;
    if (!slash) {
        err = dir_sync(".");
    } else if (slash == parent) {
        err = dir_sync("/");
    } else {
        *slash = '\0';
        err = dir_sync(parent);
    }
    free(parent);
    return err;
}
