/*
 * meta.c: the object metadata blob (index_object.meta), opaque to index/.
 *
 * Format, version 1: byte 0x01, then entries of
 *   u16 name_len | name | u32 value_len | value      (little-endian)
 * Names are lower-case header names: content-type, content-encoding,
 * content-disposition, content-language, cache-control, expires,
 * x-amz-meta-*, x-amz-checksum-<algo>, x-amz-checksum-type,
 * x-amz-website-redirect-location (x-amz-storage-class was stored too
 * before tiers existed; the class now comes from the extents, tier.h,
 * and GET/HEAD skip a stored one); and the internal
 * entries (META_INTERNAL_PREFIX): x-shard-part-sizes (a multipart object's part sizes,
 * little-endian u64s, written and read only through meta_part_sizes_format/_parse) and the tags
 * (META_TAGS).
 */
#include "config.h"

#include "common/common.h"
#include "server/errors.h"
#include "server/meta.h"
#include "server/req.h"
#include "server/tags.h"

#include <ctype.h>

#define META_VERSION 1
#define META_MAX_USER 2048 /* S3: user metadata is limited to 2 KB */

void
meta_encode(struct arena *a, const struct meta *m, const uint8_t **out, size_t *out_len)
{
    size_t len = 1;
    for (size_t i = 0; i < m->n; i++)
        len += 2 + m->entries[i].name.len + 4 + m->entries[i].value.len;
    uint8_t *p = arena_alloc(a, len);
    size_t o = 0;
    p[o++] = META_VERSION;
    for (size_t i = 0; i < m->n; i++) {
        const struct meta_entry *e = &m->entries[i];
        uint16_t nl = (uint16_t)e->name.len;
        uint32_t vl = (uint32_t)e->value.len;
        p[o++] = (uint8_t)nl;
        p[o++] = (uint8_t)(nl >> 8);
        memcpy(p + o, e->name.ptr, nl);
        o += nl;
        for (int k = 0; k < 4; k++)
            p[o++] = (uint8_t)(vl >> (8 * k));
        if (vl)
            memcpy(p + o, e->value.ptr, vl);
        o += vl;
    }
    *out = p;
    *out_len = len;
}

bool
meta_decode(struct arena *a, const uint8_t *p, size_t len, struct meta *out)
{
    out->entries = NULL;
    out->n = 0;
    if (len == 0)
        return true;
    if (p[0] != META_VERSION)
        return false;
    size_t n = 0;
    size_t o = 1;
    while (o < len) {
        if (len - o < 2)
            return false;
        size_t nl = (size_t)p[o] | (size_t)p[o + 1] << 8;
        o += 2;
        if (len - o < nl + 4)
            return false;
        o += nl;
        size_t vl =
            (size_t)p[o] | (size_t)p[o + 1] << 8 | (size_t)p[o + 2] << 16 | (size_t)p[o + 3] << 24;
        o += 4;
        if (len - o < vl)
            return false;
        o += vl;
        n++;
    }
    out->entries = arena_calloc(a, n, sizeof(*out->entries));
    o = 1;
    for (size_t i = 0; i < n; i++) {
        size_t nl = (size_t)p[o] | (size_t)p[o + 1] << 8;
        o += 2;
        out->entries[i].name = (struct slice){(const char *)p + o, nl};
        o += nl;
        size_t vl =
            (size_t)p[o] | (size_t)p[o + 1] << 8 | (size_t)p[o + 2] << 16 | (size_t)p[o + 3] << 24;
        o += 4;
        out->entries[i].value = (struct slice){(const char *)p + o, vl};
        o += vl;
    }
    out->n = n;
    return true;
}

struct slice
meta_get(const struct meta *m, const char *name)
{
    for (size_t i = 0; i < m->n; i++)
        if (slice_eq(m->entries[i].name, slice_from_cstr(name)))
            return m->entries[i].value;
    return SLICE_NULL;
}

static const char *stored_headers[] = {
    "content-type",
    "content-encoding",
    "content-disposition",
    "content-language",
    "cache-control",
    "expires",
    "x-amz-website-redirect-location",
};

/* Removes "aws-chunked" from a Content-Encoding list: it describes the
 * transfer, not the object. The other codings keep the client's text,
 * separators and spacing included ("deflate, gzip, aws-chunked" is
 * "deflate, gzip"). Returns the cleaned value (maybe empty). */
static struct slice
strip_aws_chunked(struct arena *a, struct slice v)
{
    struct buf b;
    buf_init(&b);
    size_t i = 0, sep = 0; /* 'sep': where the separator before token i starts */
    while (i <= v.len) {
        size_t j = i;
        while (j < v.len && v.ptr[j] != ',')
            j++;
        struct slice tok = {v.ptr + i, j - i};
        while (tok.len && isspace((unsigned char)tok.ptr[0])) {
            tok.ptr++;
            tok.len--;
        }
        while (tok.len && isspace((unsigned char)tok.ptr[tok.len - 1]))
            tok.len--;
        if (tok.len && !slice_eq_nocase(tok, "aws-chunked")) {
            if (b.len) /* the client's separator: the comma and its spaces */
                buf_append(&b, v.ptr + sep, (size_t)(tok.ptr - v.ptr) - sep);
            buf_append(&b, tok.ptr, tok.len);
        }
        sep = j;
        i = j + 1;
    }
    struct slice r = {arena_strndup(a, b.ptr ? b.ptr : "", b.len), b.len};
    buf_cleanup(&b);
    return r;
}

enum s3_error
meta_from_request(struct s3_req *r, struct meta *out)
{
    out->entries = arena_calloc(r->arena, r->n_headers + 1, sizeof(*out->entries));
    out->n = 0;
    size_t user_len = 0;
    for (size_t i = 0; i < r->n_headers; i++) {
        struct slice name = r->headers[i].name;
        struct slice value = r->headers[i].value;
        bool keep = false;
        if (name.len > 11 && slice_eq_nocase((struct slice){name.ptr, 11}, "x-amz-meta-")) {
            keep = true;
            user_len += name.len - 11 + value.len;
        } else {
            for (size_t k = 0; k < ARRAY_LEN(stored_headers); k++)
                if (slice_eq_nocase(name, stored_headers[k]))
                    keep = true;
        }
        if (!keep)
            continue;
        if (slice_eq_nocase(name, "content-encoding")) {
            value = strip_aws_chunked(r->arena, value);
            if (value.len == 0)
                continue;
        }
        char *lname = arena_strndup(r->arena, name.ptr, name.len);
        for (size_t k = 0; k < name.len; k++)
            lname[k] = (char)tolower((unsigned char)lname[k]);
        out->entries[out->n].name = (struct slice){lname, name.len};
        out->entries[out->n].value = value;
        out->n++;
    }
    if (user_len > META_MAX_USER)
        return S3_ERR_METADATA_TOO_LARGE;
    return S3_OK;
}

/* ---- the part sizes of a multipart object (META_PART_SIZES) ------------- */

struct slice
meta_part_sizes_format(struct arena *a, const uint64_t *sizes, size_t n)
{
    uint8_t *p = arena_alloc(a, n ? n * 8 : 1);
    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < 8; b++)
            p[i * 8 + (size_t)b] = (uint8_t)(sizes[i] >> (8 * b));
    return (struct slice){(const char *)p, n * 8};
}

bool
meta_part_sizes_parse(struct slice blob, uint32_t n_parts, uint32_t number, uint64_t *first,
                      uint64_t *len)
{
    if (blob.len != (size_t)n_parts * 8 || number == 0 || number > n_parts)
        return false;
    const uint8_t *p = (const uint8_t *)blob.ptr;
    *first = 0;
    for (uint32_t i = 0; i < number; i++) {
        uint64_t v = 0;
        for (int b = 7; b >= 0; b--)
            v = v << 8 | p[(size_t)i * 8 + (size_t)b];
        if (i + 1 < number)
            *first += v;
        else
            *len = v;
    }
    return true;
}

bool
meta_tags_get(const struct meta *m, struct arena *a, struct s3_tag **tags, size_t *n)
{
    struct slice v = meta_get(m, META_TAGS);
    if (!v.ptr) {
        *tags = NULL;
        *n = 0;
        return true;
    }
    return tags_decode((const uint8_t *)v.ptr, v.len, a, tags, n);
}

void
meta_tags_set(struct arena *a, const struct meta *m, const struct s3_tag *tags, size_t n,
              struct meta *out)
{
    out->entries = arena_calloc(a, m->n + 1, sizeof(*out->entries));
    out->n = 0;
    for (size_t i = 0; i < m->n; i++)
        if (!slice_eq(m->entries[i].name, SLICE_LIT(META_TAGS)))
            out->entries[out->n++] = m->entries[i];
    if (n == 0)
        return;
    const uint8_t *p;
    size_t len;
    tags_encode(a, tags, n, &p, &len);
    out->entries[out->n++] =
        (struct meta_entry){SLICE_LIT(META_TAGS), (struct slice){(const char *)p, len}};
}
