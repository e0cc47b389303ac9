/*
 * xml_check.h: shared checks of the server/xml_in.c fuzz targets.
 *
 * Every slice a parser returns must lie inside the input or inside what
 * the arena handed out during the call. The arena is bump-pointer within
 * a block (common/arena.c), so with a first block far larger than any
 * output, "handed out during the call" is the span between an allocation
 * made just before the parse and one made just after it.
 */
#ifndef SHARD_FUZZ_XML_CHECK_H
#define SHARD_FUZZ_XML_CHECK_H

#include "common/common.h"
#include "server/xml_in.h"

#include <stdio.h>
#include <stdlib.h>

/* Bodies beyond the server's 1 MiB limit are not interesting. */
#define FUZZ_XML_MAX_INPUT (1u << 20)
/* Output of a 1 MiB body stays well below this; see the header comment. */
#define FUZZ_XML_ARENA_LEN (64u << 20)

struct fuzz_span {
    const char *input;
    size_t input_len;
    const char *arena_lo; /* first byte allocated by the parse */
    const char *arena_hi; /* one past the last */
};

static struct arena *fuzz_arena;

/* Returns the arena, cleared and with 'span->arena_lo' set. */
static inline struct arena *
fuzz_xml_begin(struct fuzz_span *span, const uint8_t *data, size_t size)
{
    if (!fuzz_arena)
        fuzz_arena = arena_create(FUZZ_XML_ARENA_LEN);
    arena_clear(fuzz_arena);
    span->input = (const char *)data;
    span->input_len = size;
    span->arena_lo = (const char *)arena_alloc(fuzz_arena, 16) + 16;
    span->arena_hi = NULL;
    return fuzz_arena;
}

static inline void
fuzz_xml_end_parse(struct fuzz_span *span)
{
    span->arena_hi = arena_alloc(fuzz_arena, 16);
    if (span->arena_hi < span->arena_lo ||
        (size_t)(span->arena_hi - span->arena_lo) >= FUZZ_XML_ARENA_LEN) {
        fprintf(stderr, "fuzz_xml: arena left its first block; raise FUZZ_XML_ARENA_LEN\n");
        abort();
    }
}

/* Returns true when 'len' bytes at 'p' lie in [lo, hi). */
static inline bool
fuzz_xml_within(const char *p, size_t len, const char *lo, const char *hi)
{
    return p >= lo && p <= hi && len <= (size_t)(hi - p);
}

/* Returns true when 'len' bytes at 'p' lie inside the parse's arena span. */
static inline bool
fuzz_xml_in_arena(const struct fuzz_span *span, const void *p, size_t len)
{
    return fuzz_xml_within(p, len, span->arena_lo, span->arena_hi);
}

static inline void
fuzz_xml_fail(const char *target, const char *what)
{
    fprintf(stderr, "%s: %s\n", target, what);
    abort();
}

/* Checks one returned slice: absent ({NULL, 0}), or at most
 * XML_IN_TEXT_MAX long and inside the input or the parse's arena span,
 * where it must also be NUL-terminated (xml_in.h promises it). */
static inline void
fuzz_xml_check_slice(const struct fuzz_span *span, struct slice s, const char *target)
{
    if (!s.ptr) {
        if (s.len)
            fuzz_xml_fail(target, "NULL slice with a length");
        return;
    }
    if (s.len > XML_IN_TEXT_MAX)
        fuzz_xml_fail(target, "slice longer than XML_IN_TEXT_MAX");
    if (fuzz_xml_in_arena(span, s.ptr, s.len + 1)) {
        if (s.ptr[s.len] != '\0')
            fuzz_xml_fail(target, "arena slice not NUL-terminated");
        return;
    }
    if (!fuzz_xml_within(s.ptr, s.len, span->input, span->input + span->input_len))
        fuzz_xml_fail(target, "slice outside the input and the arena");
}

#endif
