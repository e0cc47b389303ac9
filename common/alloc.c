/*
 * alloc.c: aborting allocators for small bookkeeping. Running out of memory
 * for a few bytes of metadata is not recoverable in any useful way; payload
 * buffers come from bounded pools elsewhere and fail as ordinary errors.
 */
#include "common/common.h"

#include <stdio.h>
#include <stdlib.h>

static void
oom(size_t len)
{
    fprintf(stderr, "fatal: out of memory allocating %zu bytes\n", len);
    abort();
}

void *
xmalloc(size_t len)
{
    void *p = malloc(len ? len : 1);
    if (!p)
        oom(len);
    return p;
}

void *
xcalloc(size_t n, size_t len)
{
    void *p = calloc(n ? n : 1, len ? len : 1);
    if (!p)
        oom(n * len);
    return p;
}

void *
xrealloc(void *p, size_t len)
{
    void *q = realloc(p, len ? len : 1);
    if (!q)
        oom(len);
    return q;
}

char *
xstrndup(const char *s, size_t len)
{
    char *p = xmalloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *
xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}
