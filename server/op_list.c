/*
 * op_list.c: ListObjectsV2 and ListObjects (v1). The index does the work
 * (one seek per common prefix); this file maps S3's parameters onto
 * index_object_list and formats the page. Continuation tokens name the
 * last key or prefix returned: stable under concurrent writes (resuming is
 * "everything after this key"), and checked, so that a token the server
 * did not make is refused (400 InvalidArgument) rather than silently
 * listing from some other place. Token bytes, then base64:
 *
 *     u8 version (1) | key (1..1024 bytes) | u32 BE FNV-1a of the above
 */
#include "server/server.h"

#include <inttypes.h>

#define LIST_TOKEN_VERSION 1
#define LIST_TOKEN_OVERHEAD 5

static uint32_t
fnv1a32(const uint8_t *p, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

/* Formats the continuation token resuming after 'key' into the arena. */
static const char *
list_token_format(struct arena *a, struct slice key)
{
    size_t n = key.len + LIST_TOKEN_OVERHEAD;
    uint8_t *raw = arena_alloc(a, n);
    raw[0] = LIST_TOKEN_VERSION;
    memcpy(raw + 1, key.ptr, key.len);
    uint32_t h = fnv1a32(raw, key.len + 1);
    for (int i = 0; i < 4; i++)
        raw[key.len + 1 + i] = (uint8_t)(h >> (24 - 8 * i));
    char *tok = arena_alloc(a, base64_encoded_len(n) + 1);
    base64_encode(raw, n, tok);
    return tok;
}

/* Parses 'tok' into the key to resume after (in the arena). Returns false
 * for anything list_token_format did not make. */
static bool
list_token_parse(struct arena *a, struct slice tok, struct slice *key)
{
    if (tok.len == 0 || tok.len > base64_encoded_len(INDEX_MAX_KEY + LIST_TOKEN_OVERHEAD))
        return false;
    uint8_t *raw = arena_alloc(a, base64_decoded_cap(tok.len) + 1);
    long n = base64_decode(tok.ptr, tok.len, raw);
    if (n < LIST_TOKEN_OVERHEAD + 1 || n > INDEX_MAX_KEY + LIST_TOKEN_OVERHEAD ||
        raw[0] != LIST_TOKEN_VERSION)
        return false;
    size_t klen = (size_t)n - LIST_TOKEN_OVERHEAD;
    uint32_t h = fnv1a32(raw, klen + 1);
    for (int i = 0; i < 4; i++)
        if (raw[klen + 1 + i] != (uint8_t)(h >> (24 - 8 * i)))
            return false;
    *key = (struct slice){(const char *)raw + 1, klen};
    return true;
}

static struct slice
param_value(const struct s3_req *r, const char *name)
{
    const struct s3_param *p = s3_req_param(r, name);
    return p ? p->value : SLICE_NULL;
}

/* Writes an element whose text is URL-encoded when 'is_url' (encoding-type=url). */
static void
elem_key(struct buf *b, const char *name, struct slice v, bool is_url)
{
    if (!is_url) {
        xml_elem(b, name, v);
        return;
    }
    struct buf enc;
    buf_init(&enc);
    s3_url_encode(&enc, v);
    xml_elem(b, name, (struct slice){enc.ptr ? enc.ptr : "", enc.len});
    buf_cleanup(&enc);
}

void
op_list_objects(struct s3_req *r)
{
    struct index_bucket bk;
    if (!s3_bucket_lookup(r, &bk))
        return;
    struct slice list_type = param_value(r, "list-type");
    bool is_v2 = slice_eq(list_type, SLICE_LIT("2"));
    if (list_type.len && !is_v2) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "Invalid list-type");
        return;
    }
    struct index_list_params p = {.bucket_id = bk.id, .max_keys = 1000};
    p.prefix = param_value(r, "prefix");
    p.delimiter = param_value(r, "delimiter");
    const struct s3_param *mk = s3_req_param(r, "max-keys");
    if (mk) {
        uint64_t v;
        if (parse_u64(mk->value, UINT64_MAX, &v) != 0) {
            s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                             "Provided max-keys not an integer or within integer range");
            return;
        }
        p.max_keys = v > 1000 ? 1000 : (uint32_t)v;
    }
    struct slice enc_type = param_value(r, "encoding-type");
    bool is_url = false;
    if (s3_req_param(r, "encoding-type")) {
        if (!slice_eq(enc_type, SLICE_LIT("url"))) {
            s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                             "Invalid Encoding Method specified in Request");
            return;
        }
        is_url = true;
    }
    struct slice token = param_value(r, "continuation-token");
    bool has_token = is_v2 && s3_req_param(r, "continuation-token");
    struct slice start_after = param_value(r, "start-after");
    struct slice marker = param_value(r, "marker");
    if (is_v2) {
        if (has_token) {
            if (!list_token_parse(r->arena, token, &p.start_after)) {
                s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                                 "The continuation token provided is incorrect");
                return;
            }
        } else {
            p.start_after = start_after;
        }
    } else {
        p.start_after = marker;
    }
    bool fetch_owner = !is_v2 || slice_eq(param_value(r, "fetch-owner"), SLICE_LIT("true"));

    struct index_list_result res;
    int rc = index_object_list(r->srv->index, &p, r->arena, &res);
    if (rc < 0) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }

    struct buf b;
    buf_init(&b);
    xml_begin(&b, "ListBucketResult");
    xml_elem(&b, "Name", r->bucket);
    elem_key(&b, "Prefix", p.prefix, is_url);
    if (is_v2) {
        if (has_token)
            xml_elem(&b, "ContinuationToken", token);
        if (s3_req_param(r, "start-after"))
            elem_key(&b, "StartAfter", start_after, is_url);
        xml_elem_u64(&b, "KeyCount", res.n_entries);
    } else {
        elem_key(&b, "Marker", marker, is_url);
    }
    xml_elem_u64(&b, "MaxKeys", p.max_keys);
    if (p.delimiter.len)
        elem_key(&b, "Delimiter", p.delimiter, is_url);
    if (is_url)
        xml_elem_str(&b, "EncodingType", "url");
    xml_elem_bool(&b, "IsTruncated", res.is_truncated);
    if (res.is_truncated) {
        /* v1 has NextMarker only with a delimiter: without one, the next
         * marker is the last Key (as S3 documents it). */
        if (is_v2)
            xml_elem_str(&b, "NextContinuationToken", list_token_format(r->arena, res.next_marker));
        else if (p.delimiter.len)
            elem_key(&b, "NextMarker", res.next_marker, is_url);
    }
    for (uint32_t i = 0; i < res.n_entries; i++) {
        const struct index_list_entry *e = &res.entries[i];
        if (e->is_prefix)
            continue;
        char date[40], etag[48];
        s3_format_iso_date(e->mtime_ns, date);
        s3_format_etag(e->etag, e->parts_count, etag);
        buf_append_str(&b, "<Contents>");
        elem_key(&b, "Key", e->key, is_url);
        xml_elem_str(&b, "LastModified", date);
        xml_elem_str(&b, "ETag", etag);
        xml_elem_u64(&b, "Size", e->size);
        if (fetch_owner) {
            buf_append_str(&b, "<Owner>");
            xml_elem_str(&b, "ID", r->srv->owner_id);
            xml_elem_str(&b, "DisplayName", "root");
            buf_append_str(&b, "</Owner>");
        }
        xml_elem_str(&b, "StorageClass", "STANDARD");
        buf_append_str(&b, "</Contents>");
    }
    for (uint32_t i = 0; i < res.n_entries; i++) {
        const struct index_list_entry *e = &res.entries[i];
        if (!e->is_prefix)
            continue;
        buf_append_str(&b, "<CommonPrefixes>");
        elem_key(&b, "Prefix", e->key, is_url);
        buf_append_str(&b, "</CommonPrefixes>");
    }
    xml_end(&b, "ListBucketResult");
    s3_respond_body(r, 200, "application/xml", b.ptr, b.len);
    buf_cleanup(&b);
}
