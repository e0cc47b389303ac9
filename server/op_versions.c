/*
 * op_versions.c: ListObjectVersions (GET /bucket?versions) for unversioned
 * buckets, answered the way S3 answers for a bucket that never had
 * versioning: every object is its own only version, VersionId "null",
 * IsLatest true. The listing is index_object_list's (one seek per common
 * prefix); key-marker is its start_after. A version-id-marker can only be
 * "null" (or empty), and "after the null version of K" is "after K".
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/errors.h"
#include "server/ops.h"
#include "server/req.h"
#include "server/server.h"
#include "server/tier.h"
#include "server/util.h"
#include "server/xml_out.h"

void
op_list_object_versions(struct s3_req *r)
{
    struct index_bucket bk;
    if (!s3_bucket_lookup(r, &bk))
        return;
    struct index_list_params p = {.bucket_id = bk.id, .max_keys = 1000};
    p.prefix = s3_req_param_value(r, "prefix");
    p.delimiter = s3_req_param_value(r, "delimiter");
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
    bool is_url = false;
    if (s3_req_param(r, "encoding-type")) {
        if (!slice_eq(s3_req_param_value(r, "encoding-type"), SLICE_LIT("url"))) {
            s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                             "Invalid Encoding Method specified in Request");
            return;
        }
        is_url = true;
    }
    struct slice key_marker = s3_req_param_value(r, "key-marker");
    struct slice vid_marker = s3_req_param_value(r, "version-id-marker");
    if (vid_marker.len && !slice_eq(vid_marker, SLICE_LIT("null"))) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "Invalid version id specified");
        return;
    }
    if (vid_marker.len && !key_marker.len) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                         "A version-id marker cannot be specified without a key marker.");
        return;
    }
    p.start_after = key_marker;

    struct index_list_result res;
    if (index_object_list(r->srv->index, &p, r->arena, &res) < 0) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    const char *owner_id = s3_bucket_owner_id(r, &bk);
    char owner_name[INDEX_USER_NAME_MAX + 1];
    s3_owner_name(r, owner_id, owner_name, sizeof(owner_name));

    struct buf b;
    buf_init(&b);
    xml_begin(&b, "ListVersionsResult");
    xml_elem(&b, "Name", r->bucket);
    xml_elem_key(&b, "Prefix", p.prefix, is_url);
    xml_elem_key(&b, "KeyMarker", key_marker, is_url);
    xml_elem(&b, "VersionIdMarker", vid_marker);
    xml_elem_u64(&b, "MaxKeys", p.max_keys);
    if (p.delimiter.len)
        xml_elem_key(&b, "Delimiter", p.delimiter, is_url);
    if (is_url)
        xml_elem_str(&b, "EncodingType", "url");
    xml_elem_bool(&b, "IsTruncated", res.is_truncated);
    if (res.is_truncated) {
        xml_elem_key(&b, "NextKeyMarker", res.next_marker, is_url);
        xml_elem_str(&b, "NextVersionIdMarker", "null");
    }
    for (uint32_t i = 0; i < res.n_entries; i++) {
        const struct index_list_entry *e = &res.entries[i];
        if (e->is_prefix)
            continue;
        char date[40], etag[48];
        s3_format_iso_date(e->mtime_ns, date);
        s3_format_etag(e->etag, e->parts_count, etag);
        buf_append_str(&b, "<Version>");
        xml_elem_key(&b, "Key", e->key, is_url);
        xml_elem_str(&b, "VersionId", "null");
        xml_elem_bool(&b, "IsLatest", true);
        xml_elem_str(&b, "LastModified", date);
        xml_elem_str(&b, "ETag", etag);
        xml_elem_u64(&b, "Size", e->size);
        buf_append_str(&b, "<Owner>");
        xml_elem_str(&b, "ID", owner_id);
        xml_elem_str(&b, "DisplayName", owner_name);
        buf_append_str(&b, "</Owner>");
        xml_elem_str(&b, "StorageClass", tier_class_name(r->srv->tiers, e->flags));
        buf_append_str(&b, "</Version>");
    }
    for (uint32_t i = 0; i < res.n_entries; i++) {
        const struct index_list_entry *e = &res.entries[i];
        if (!e->is_prefix)
            continue;
        buf_append_str(&b, "<CommonPrefixes>");
        xml_elem_key(&b, "Prefix", e->key, is_url);
        buf_append_str(&b, "</CommonPrefixes>");
    }
    xml_end(&b, "ListVersionsResult");
    s3_respond_body(r, 200, "application/xml", b.ptr, b.len);
    buf_cleanup(&b);
}
