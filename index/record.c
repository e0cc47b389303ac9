/*
 * record.c: the object record codec (format in keys.h). Formatting writes
 * straight into the space LMDB reserves (MDB_RESERVE); parsing checks
 * every length against the value it reads from, since the map may hold
 * garbage after a media error, and reports corruption via CORRUPT_BKPT.
 */
#include "index/index_int.h"

#include <assert.h>
#include <errno.h>

size_t
index__record_len(const struct index_object *o, size_t key_len)
{
    size_t trailer = (o->version_flags & INDEX_VERSION_HAS_ID) ? INDEX_RECORD_VERSION_LEN : 0;
    return INDEX_RECORD_HEAD_LEN + trailer + key_len + (size_t)o->n_extents * INDEX_EXTENT_REC_LEN +
           o->sums_len + o->meta_len + o->inline_len;
}

static uint8_t *
put_bytes(uint8_t *p, const void *src, size_t len)
{
    if (len)
        memcpy(p, src, len);
    return p + len;
}

void
index__record_format(uint8_t *out, const struct index_object *o, const char *key, size_t key_len)
{
    assert(key_len <= INDEX_MAX_KEY);
    uint8_t *p = out;
    p[0] = INDEX_RECORD_VERSION;
    p[1] = (o->version_flags & INDEX_VERSION_HAS_ID) ? INDEX_RECORD_FLAG_VERSION : 0;
    index__put_le16(p + 2, (uint16_t)key_len);
    index__put_le64(p + 4, o->size);
    index__put_le64(p + 12, (uint64_t)o->mtime_ns);
    memcpy(p + 20, o->etag, 16);
    index__put_le32(p + 36, o->parts_count);
    index__put_le32(p + 40, o->n_extents);
    index__put_le32(p + 44, (uint32_t)o->sums_len);
    index__put_le32(p + 48, (uint32_t)o->meta_len);
    index__put_le32(p + 52, (uint32_t)o->inline_len);
    p += INDEX_RECORD_HEAD_LEN;
    if (o->version_flags & INDEX_VERSION_HAS_ID) {
        memcpy(p, o->version_id, INDEX_VERSION_ID_LEN);
        index__put_le64(p + 16, (uint64_t)o->retain_until_ns);
        p[24] = o->lock_mode;
        p[25] = (uint8_t)(((o->version_flags & INDEX_VERSION_NULL) ? 1 : 0) |
                          ((o->version_flags & INDEX_VERSION_MARKER) ? 2 : 0) |
                          (o->has_legal_hold ? 4 : 0));
        memset(p + 26, 0, INDEX_RECORD_VERSION_LEN - 26);
        p += INDEX_RECORD_VERSION_LEN;
    }
    p = put_bytes(p, key, key_len);
    for (uint32_t i = 0; i < o->n_extents; i++) {
        const struct index_extent *e = &o->extents[i];
        index__put_le32(p, e->volume);
        index__put_le32(p + 4, e->flags);
        index__put_le64(p + 8, e->offset);
        index__put_le64(p + 16, e->len);
        p += INDEX_EXTENT_REC_LEN;
    }
    p = put_bytes(p, o->sums, o->sums_len);
    p = put_bytes(p, o->meta, o->meta_len);
    p = put_bytes(p, o->inline_data, o->inline_len);
    assert((size_t)(p - out) == index__record_len(o, key_len));
}

int
index__record_parse(const uint8_t *p, size_t len, struct index__record *out)
{
    memset(out, 0, sizeof(*out));
    if (len < INDEX_RECORD_HEAD_LEN)
        return CORRUPT_BKPT("object record shorter than its header");
    if (p[0] != INDEX_RECORD_VERSION)
        return CORRUPT_BKPT("object record: unknown version");
    uint16_t key_len = index__get_le16(p + 2);
    struct index_object *o = &out->obj;
    o->size = index__get_le64(p + 4);
    o->mtime_ns = (int64_t)index__get_le64(p + 12);
    memcpy(o->etag, p + 20, 16);
    o->parts_count = index__get_le32(p + 36);
    o->n_extents = index__get_le32(p + 40);
    o->sums_len = index__get_le32(p + 44);
    o->meta_len = index__get_le32(p + 48);
    o->inline_len = index__get_le32(p + 52);
    if (key_len > INDEX_MAX_KEY)
        return CORRUPT_BKPT("object record: key too long");
    if (p[1] & ~INDEX_RECORD_FLAG_VERSION)
        return CORRUPT_BKPT("object record: unknown flags");
    size_t trailer = (p[1] & INDEX_RECORD_FLAG_VERSION) ? INDEX_RECORD_VERSION_LEN : 0;
    /* Every term is < 2^32 * 24, so the uint64_t sum cannot overflow. */
    uint64_t want = (uint64_t)INDEX_RECORD_HEAD_LEN + trailer + key_len +
                    (uint64_t)o->n_extents * INDEX_EXTENT_REC_LEN + o->sums_len + o->meta_len +
                    o->inline_len;
    if (want != len)
        return CORRUPT_BKPT("object record: lengths do not add up");
    const uint8_t *q = p + INDEX_RECORD_HEAD_LEN;
    if (trailer) {
        if (q[24] > INDEX_LOCK_COMPLIANCE || (q[25] & ~7u))
            return CORRUPT_BKPT("object record: bad version trailer");
        o->version_flags = INDEX_VERSION_HAS_ID | ((q[25] & 1) ? INDEX_VERSION_NULL : 0) |
                           ((q[25] & 2) ? INDEX_VERSION_MARKER : 0);
        memcpy(o->version_id, q, INDEX_VERSION_ID_LEN);
        o->retain_until_ns = (int64_t)index__get_le64(q + 16);
        o->lock_mode = q[24];
        o->has_legal_hold = (q[25] & 4) != 0;
        q += trailer;
    }
    out->full_key = (struct slice){(const char *)q, key_len};
    q += key_len;
    out->extents_raw = q;
    q += (size_t)o->n_extents * INDEX_EXTENT_REC_LEN;
    o->sums = q;
    q += o->sums_len;
    o->meta = q;
    q += o->meta_len;
    o->inline_data = q;
    return 0;
}

void
index__record_extent(const struct index__record *r, uint32_t i, struct index_extent *out)
{
    const uint8_t *q = r->extents_raw + (size_t)i * INDEX_EXTENT_REC_LEN;
    out->volume = index__get_le32(q);
    out->flags = index__get_le32(q + 4);
    out->offset = index__get_le64(q + 8);
    out->len = index__get_le64(q + 16);
}

struct index_extent *
index__record_extents(const struct index__record *r, struct arena *a)
{
    if (r->obj.n_extents == 0)
        return NULL;
    struct index_extent *ext = arena_alloc(a, (size_t)r->obj.n_extents * sizeof(*ext));
    for (uint32_t i = 0; i < r->obj.n_extents; i++)
        index__record_extent(r, i, &ext[i]);
    return ext;
}

void
index__record_copy(const struct index__record *r, struct arena *a, struct index_object *out)
{
    *out = r->obj;
    out->extents = index__record_extents(r, a);
    out->sums = r->obj.sums_len ? arena_memdup(a, r->obj.sums, r->obj.sums_len) : NULL;
    out->meta = r->obj.meta_len ? arena_memdup(a, r->obj.meta, r->obj.meta_len) : NULL;
    out->inline_data =
        r->obj.inline_len ? arena_memdup(a, r->obj.inline_data, r->obj.inline_len) : NULL;
}
