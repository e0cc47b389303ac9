/*
 * op_list.c: ListObjectsV2 and ListObjects (v1). The index does the work
 * (one seek per common prefix); this file maps S3's parameters onto
 * index_object_list and formats the page. Continuation tokens are the
 * base64 of the last key or prefix returned: opaque to clients and stable
 * under concurrent writes (resuming is "everything after this key").
 */
#include "server/server.h"

#include <inttypes.h>

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
            char *dec = arena_alloc(r->arena, base64_decoded_cap(token.len) + 1);
            long n = base64_decode(token.ptr, token.len, dec);
            if (n <= 0 || n > INDEX_MAX_KEY) {
                s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                                 "The continuation token provided is incorrect");
                return;
            }
            p.start_after = (struct slice){dec, (size_t)n};
        } else {
            p.start_after = start_after;
        }
    } else {
        p.start_after = marker;
    }
    bool fetch_owner = !is_v2 || slice_eq(param_value(r, "fetch-owner"), SLICE_LIT("true"));
    /* Objects are owned by their bucket's owner. */
    const char *owner_id = s3_bucket_owner_id(r, &bk);
    char owner_name[INDEX_USER_NAME_MAX + 1];
    if (fetch_owner)
        s3_owner_name(r, owner_id, owner_name, sizeof(owner_name));

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
        if (is_v2) {
            char *tok = arena_alloc(r->arena, base64_encoded_len(res.next_marker.len) + 1);
            base64_encode(res.next_marker.ptr, res.next_marker.len, tok);
            xml_elem_str(&b, "NextContinuationToken", tok);
        } else {
            elem_key(&b, "NextMarker", res.next_marker, is_url);
        }
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
            xml_elem_str(&b, "ID", owner_id);
            xml_elem_str(&b, "DisplayName", owner_name);
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
