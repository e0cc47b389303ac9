/*
 * extents.c: the one place where index extents and storage extents meet.
 *
 * index/ and storage/ never include each other, so each has its own extent
 * type (struct index_extent, struct storage_extent) with the same fields;
 * server/ is the only module that knows both, and converts here, one
 * function per direction. The values are opaque to server/: it hands them
 * from one module to the other and never interprets a volume or offset.
 */
#include "server/extents.h"
#include "common/common.h"
#include "index/index.h"
#include "storage/storage.h"

void
extents_from_index(const struct index_extent *in, size_t n, struct storage_extent *out)
{
    for (size_t i = 0; i < n; i++) {
        out[i].volume = in[i].volume;
        out[i].flags = 0;
        out[i].offset = in[i].offset;
        out[i].len = in[i].len;
    }
}

struct index_extent *
extents_to_index(struct arena *a, const struct storage_extent *in, size_t n)
{
    struct index_extent *out = arena_calloc(a, n ? n : 1, sizeof(*out));
    for (size_t i = 0; i < n; i++) {
        out[i].volume = in[i].volume;
        out[i].flags = 0;
        out[i].offset = in[i].offset;
        out[i].len = in[i].len;
    }
    return out;
}
