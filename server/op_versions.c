/*
 * op_versions.c: ListObjectVersions (GET /bucket?versions). A versioned
 * bucket lists index_version_list's page: Version and DeleteMarker
 * entries in key order, newest first, and CommonPrefixes (one seek to the
 * markers and one per prefix). A bucket that never had versioning is
 * answered from index_object_list the way S3 answers it: every object is
 * its own only version, VersionId "null", IsLatest true; key-marker is
 * its start_after, a version-id-marker can only be "null" (or empty), and
 * "after the null version of K" is "after K".
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
#include "server/versioning.h"
#include "server/xml_out.h"

/* The head of a ListVersionsResult, up to IsTruncated (both listings). */
static void
versions_result_begin(struct buf *b, struct s3_req *r, struct slice prefix, struct slice delimiter,
                      uint64_t max_keys, struct slice key_marker, struct slice vid_marker,
                      bool is_url, bool is_truncated)
{
    xml_begin(b, "ListVersionsResult");
    xml_elem(b, "Name", r->bucket);
    xml_elem_key(b, "Prefix", prefix, is_url);
    xml_elem_key(b, "KeyMarker", key_marker, is_url);
    xml_elem(b, "VersionIdMarker", vid_marker);
    xml_elem_u64(b, "MaxKeys", max_keys);
    if (delimiter.len)
        xml_elem_key(b, "Delimiter", delimiter, is_url);
    if (is_url)
        xml_elem_str(b, "EncodingType", "url");
    xml_elem_bool(b, "IsTruncated", is_truncated);
}

/* Appends the Owner element of 'owner_id'. */
static void
owner_elem(struct buf *b, const char *owner_id, const char *owner_name)
{
    buf_append_str(b, "<Owner>");
    xml_elem_str(b, "ID", owner_id);
    xml_elem_str(b, "DisplayName", owner_name);
    buf_append_str(b, "</Owner>");
}

/* ListObjectVersions of a versioned bucket (parameters parsed in 'lp'). */
static void
list_versioned(struct s3_req *r, const struct index_bucket *bk, const struct index_list_params *lp,
               struct slice key_marker, struct slice vid_marker, bool is_url)
{
    struct index_version_list_params p = {
        .bucket_id = bk->id,
        .prefix = lp->prefix,
        .delimiter = lp->delimiter,
        .key_marker = key_marker,
        .max_keys = lp->max_keys,
    };
    if (vid_marker.len) {
        if (!key_marker.len) {
            s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                             "A version-id marker cannot be specified without a key marker.");
            return;
        }
        if (!s3_version_id_parse(vid_marker, p.version_id_marker)) {
            s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "Invalid version id specified");
            return;
        }
        p.has_version_id_marker = true;
    }
    struct index_version_list_result res;
    if (index_version_list(r->srv->index, &p, r->arena, &res) < 0) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    const char *owner_id = s3_bucket_owner_id(r, bk);
    char owner_name[INDEX_USER_NAME_MAX + 1];
    s3_owner_name(r, owner_id, owner_name, sizeof(owner_name));

    struct buf b;
    char vid[S3_VERSION_ID_MAX + 1], date[40], etag[48];
    buf_init(&b);
    /* An entry is ~400 bytes: one allocation for the page, not a dozen reallocs. */
    buf_reserve(&b, 1024 + (size_t)res.n_entries * 512);
    versions_result_begin(&b, r, p.prefix, p.delimiter, p.max_keys, key_marker, vid_marker, is_url,
                          res.is_truncated);
    if (res.is_truncated) {
        xml_elem_key(&b, "NextKeyMarker", res.next_key_marker, is_url);
        if (res.next_has_version_id) {
            s3_version_id_format(res.next_version_flags, res.next_version_id, vid);
            xml_elem_str(&b, "NextVersionIdMarker", vid);
        }
    }
    /* Versions and markers interleaved in listing order, as S3 does.
     * A page is up to 1000 entries of ~400 bytes: written with plain
     * appends (no printf per element), the Owner block formatted once. */
    struct buf owner;
    buf_init(&owner);
    owner_elem(&owner, owner_id, owner_name);
    int64_t date_s = INT64_MIN;
    for (uint32_t i = 0; i < res.n_entries; i++) {
        const struct index_version_entry *e = &res.entries[i];
        if (e->is_prefix)
            continue;
        bool is_marker = (e->version_flags & INDEX_VERSION_MARKER) != 0;
        s3_version_id_format(e->version_flags, e->version_id, vid);
        if (e->mtime_ns / 1000000000 != date_s) {
            /* Many versions share a second: format it once. */
            date_s = e->mtime_ns / 1000000000;
            s3_format_iso_date(e->mtime_ns, date);
        }
        /* The milliseconds of this version. */
        int ms = (int)((e->mtime_ns / 1000000) % 1000);
        size_t dl = strlen(date);
        date[dl - 4] = (char)('0' + ms / 100);
        date[dl - 3] = (char)('0' + ms / 10 % 10);
        date[dl - 2] = (char)('0' + ms % 10);
        buf_append_str(&b, is_marker ? "<DeleteMarker>" : "<Version>");
        if (is_url) {
            xml_elem_key(&b, "Key", e->key, true);
        } else {
            buf_append_str(&b, "<Key>");
            xml_escape(&b, e->key);
            buf_append_str(&b, "</Key>");
        }
        buf_append_str(&b, "<VersionId>");
        buf_append_str(&b, vid);
        buf_append_str(&b, e->is_latest ? "</VersionId><IsLatest>true</IsLatest><LastModified>"
                                        : "</VersionId><IsLatest>false</IsLatest><LastModified>");
        buf_append(&b, date, dl);
        buf_append_str(&b, "</LastModified>");
        if (!is_marker) {
            char num[24];
            s3_format_etag(e->etag, e->parts_count, etag);
            buf_append_str(&b, "<ETag>");
            xml_escape(&b, slice_from_cstr(etag));
            buf_append_str(&b, "</ETag><Size>");
            buf_append(&b, num, u64_format(e->size, num));
            buf_append_str(&b, "</Size>");
        }
        buf_append(&b, owner.ptr, owner.len);
        if (is_marker) {
            buf_append_str(&b, "</DeleteMarker>");
        } else {
            buf_append_str(&b, "<StorageClass>");
            buf_append_str(&b, tier_class_name(r->srv->tiers, e->flags));
            buf_append_str(&b, "</StorageClass></Version>");
        }
    }
    buf_cleanup(&owner);
    for (uint32_t i = 0; i < res.n_entries; i++) {
        const struct index_version_entry *e = &res.entries[i];
        if (!e->is_prefix)
            continue;
        buf_append_str(&b, "<CommonPrefixes>");
        xml_elem_key(&b, "Prefix", e->key, is_url);
        buf_append_str(&b, "</CommonPrefixes>");
    }
    xml_end(&b, "ListVersionsResult");
    s3_respond_buf(r, 200, "application/xml", &b);
}

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
    enum index_versioning vst;
    bool has_lock;
    if (index_versioning_get(r->srv->index, bk.id, &vst, &has_lock) != 0) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    if (vst != INDEX_VERSIONING_OFF) {
        list_versioned(r, &bk, &p, key_marker, vid_marker, is_url);
        return;
    }
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
    versions_result_begin(&b, r, p.prefix, p.delimiter, p.max_keys, key_marker, vid_marker, is_url,
                          res.is_truncated);
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
    s3_respond_buf(r, 200, "application/xml", &b);
}
