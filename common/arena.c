/*
 * arena.c: request-scoped memory. Blocks are chained; allocations are
 * bump-pointer, 16-byte aligned, and freed all at once; arena_clear keeps
 * the first block for reuse. The arena holds memory only, never other
 * resources.
 */
#include "common/common.h"

#include <stdio.h>
#include <stdlib.h>

struct arena_block {
    struct arena_block *next;
    size_t cap;
    size_t used;
    _Alignas(16) unsigned char data[];
};

struct arena {
    struct arena_block *head;  /* current block, newest first */
    struct arena_block *first; /* kept across arena_clear */
};

static struct arena_block *
block_new(size_t cap)
{
    struct arena_block *b = xmalloc(sizeof(*b) + cap);
    b->next = NULL;
    b->cap = cap;
    b->used = 0;
    return b;
}

struct arena *
arena_create(size_t first_block_len)
{
    struct arena *a = xmalloc(sizeof(*a));
    if (first_block_len < 256)
        first_block_len = 256;
    a->first = block_new(first_block_len);
    a->head = a->first;
    return a;
}

void
arena_clear(struct arena *a)
{
    if (!a)
        return;
    struct arena_block *b = a->head;
    while (b && b != a->first) {
        struct arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = a->first;
    a->first->next = NULL;
    a->first->used = 0;
}

void
arena_destroy(struct arena *a)
{
    if (!a)
        return;
    arena_clear(a);
    free(a->first);
    free(a);
}

void *
arena_alloc(struct arena *a, size_t len)
{
    len = (len + 15) & ~(size_t)15;
    if (len == 0)
        len = 16;
    struct arena_block *b = a->head;
    if (b->cap - b->used < len) {
        size_t cap = b->cap * 2;
        if (cap < len)
            cap = len;
        if (cap > (1u << 20) && len < (1u << 20))
            cap = 1u << 20;
        struct arena_block *nb = block_new(cap);
        nb->next = a->head;
        a->head = nb;
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += len;
    return p;
}

void *
arena_calloc(struct arena *a, size_t n, size_t len)
{
    if (len && n > SIZE_MAX / len) {
        fprintf(stderr, "fatal: arena_calloc overflow\n");
        abort();
    }
    void *p = arena_alloc(a, n * len);
    memset(p, 0, n * len);
    return p;
}

void *
arena_memdup(struct arena *a, const void *p, size_t len)
{
    void *q = arena_alloc(a, len);
    if (len)
        memcpy(q, p, len);
    return q;
}

char *
arena_strndup(struct arena *a, const char *s, size_t len)
{
    char *q = arena_alloc(a, len + 1);
    if (len)
        memcpy(q, s, len);
    q[len] = '\0';
    return q;
}

char *
arena_sprintf(struct arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    char *s = arena_alloc(a, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}
