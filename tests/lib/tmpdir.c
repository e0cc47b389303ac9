/*
 * tmpdir.c: temp directories for tests (mkdtemp + nftw removal).
 */
#define _XOPEN_SOURCE 700
#include "tests/lib/tmpdir.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *
test_tmpdir_create(const char *tag)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    size_t n = strlen(base) + strlen(tag) + 32;
    char *p = malloc(n);
    if (!p)
        abort();
    snprintf(p, n, "%s/shard-%s-XXXXXX", base, tag);
    if (!mkdtemp(p)) {
        perror("mkdtemp");
        abort();
    }
    return p;
}

static int
rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void
test_tmpdir_remove(char *path)
{
    if (!path)
        return;
    if (!getenv("SHARD_KEEP_TMP"))
        nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(path);
}
