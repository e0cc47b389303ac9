/*
 * keys.c: byte-order helpers and the LMDB object key encoders. The schema
 * itself is documented once, in keys.h.
 */
#include "index/keys.h"
#include "index/index.h"

#include <assert.h>
#include <xxhash.h>

void
index__put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

uint64_t
index__get_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

void
index__put_be32(uint8_t *p, uint32_t v)
{
    for (int i = 3; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

uint32_t
index__get_be32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = (v << 8) | p[i];
    return v;
}

void
index__put_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

void
index__put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void
index__put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

uint16_t
index__get_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

uint32_t
index__get_le32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

uint64_t
index__get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

size_t
index__objkey_encode(uint8_t *out, uint64_t bucket_id, struct slice key)
{
    assert(key.len <= INDEX_MAX_KEY);
    index__put_be64(out, bucket_id);
    if (key.len <= INDEX_DIRECT_MAX) {
        if (key.len)
            memcpy(out + INDEX_BID_LEN, key.ptr, key.len);
        return INDEX_BID_LEN + key.len;
    }
    memcpy(out + INDEX_BID_LEN, key.ptr, INDEX_DIRECT_MAX);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(key.ptr, key.len));
    memcpy(out + INDEX_BID_LEN + INDEX_DIRECT_MAX, c.digest, INDEX_HASH_LEN);
    return INDEX_LONG_LKEY_LEN;
}

size_t
index__objkey_seek_encode(uint8_t *out, uint64_t bucket_id, struct slice key)
{
    index__put_be64(out, bucket_id);
    if (key.len <= INDEX_DIRECT_MAX) {
        if (key.len)
            memcpy(out + INDEX_BID_LEN, key.ptr, key.len);
        return INDEX_BID_LEN + key.len;
    }
    memcpy(out + INDEX_BID_LEN, key.ptr, INDEX_DIRECT_MAX);
    memset(out + INDEX_BID_LEN + INDEX_DIRECT_MAX, 0, INDEX_HASH_LEN);
    return INDEX_LONG_LKEY_LEN;
}

size_t
index__key_escape(uint8_t *out, struct slice key)
{
    size_t n = 0;
    for (size_t i = 0; i < key.len; i++) {
        out[n++] = (uint8_t)key.ptr[i];
        if (key.ptr[i] == 0)
            out[n++] = 0xFF;
    }
    return n;
}

size_t
index__upload_tree_str(uint8_t *out, struct slice key, const uint8_t *raw_id)
{
    assert(key.len <= INDEX_MAX_KEY);
    size_t n = index__key_escape(out, key);
    out[n++] = 0;
    out[n++] = 0;
    memcpy(out + n, raw_id, INDEX_UPLOAD_RAW_LEN);
    return n + INDEX_UPLOAD_RAW_LEN;
}
