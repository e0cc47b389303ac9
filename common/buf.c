/*
 * buf.c: a growable heap byte buffer, used to format responses (XML, JSON)
 * whose size is known only at the end. Amortized doubling.
 */
#include "common/common.h"

#include <stdio.h>
#include <stdlib.h>

void
buf_init(struct buf *b)
{
    b->ptr = NULL;
    b->len = 0;
    b->cap = 0;
}

void
buf_cleanup(struct buf *b)
{
    if (!b)
        return;
    free(b->ptr);
    buf_init(b);
}

void
buf_reserve(struct buf *b, size_t extra)
{
    if (b->cap - b->len > extra)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len <= extra)
        cap *= 2;
    b->ptr = xrealloc(b->ptr, cap);
    b->cap = cap;
}

void
buf_append(struct buf *b, const void *p, size_t len)
{
    buf_reserve(b, len);
    if (len)
        memcpy(b->ptr + b->len, p, len);
    b->len += len;
    b->ptr[b->len] = '\0';
}

void
buf_append_str(struct buf *b, const char *s)
{
    buf_append(b, s, strlen(s));
}

void
buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    buf_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}
