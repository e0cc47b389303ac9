/*
 * versioning.c: bucket versioning and Object Lock at the S3 level. index/
 * keeps the versions and enforces retention inside its transactions
 * (index/version.c); this file speaks the wire: version ids (32 hex chars
 * of the index's 16-byte ids, "null" for null versions), ?versionId= on
 * reads, the x-amz-version-id, x-amz-delete-marker and x-amz-object-lock-*
 * headers, and the versioning, object-lock, retention and legal-hold
 * sub-resources. Versioning state lives in index/ (it is read inside every
 * write transaction); the default retention is stored as the canonical
 * ObjectLockConfiguration document (bucket config kind OBJECT_LOCK).
 */
#include "config.h"

#include "auth/auth.h"
#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/body.h"
#include "server/commit.h"
#include "server/errors.h"
#include "server/lock_xml.h"
#include "server/ops.h"
#include "server/req.h"
#include "server/server.h"
#include "server/util.h"
#include "server/versioning.h"
#include "server/xml_out.h"

#include <errno.h>
#include <microhttpd.h>

/* ---- version ids -------------------------------------------------------- */

bool
s3_version_id_parse(struct slice s, uint8_t out[INDEX_VERSION_ID_LEN])
{
    if (slice_eq(s, SLICE_LIT("null"))) {
        memset(out, 0, INDEX_VERSION_ID_LEN);
        return true;
    }
    if (s.len != 2 * INDEX_VERSION_ID_LEN)
        return false;
    for (size_t i = 0; i < s.len; i++)
        if (!((s.ptr[i] >= '0' && s.ptr[i] <= '9') || (s.ptr[i] >= 'a' && s.ptr[i] <= 'f')))
            return false;
    if (hex_decode(s.ptr, s.len, out) != 0)
        return false;
    for (size_t i = 0; i < INDEX_VERSION_ID_LEN; i++)
        if (out[i])
            return true;
    return false; /* all zero is "null", spelled only that way */
}

void
s3_version_id_format(uint32_t flags, const uint8_t *id, char *out)
{
    if (flags & INDEX_VERSION_NULL) {
        memcpy(out, "null", 5);
        return;
    }
    hex_encode(id, INDEX_VERSION_ID_LEN, out);
    out[2 * INDEX_VERSION_ID_LEN] = 0;
}

bool
s3_req_version_id(struct s3_req *r, bool *has, uint8_t vid[INDEX_VERSION_ID_LEN])
{
    const struct s3_param *p = s3_req_param(r, "versionId");
    *has = p != NULL;
    if (p && !s3_version_id_parse(p->value, vid)) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "Invalid version id specified");
        return false;
    }
    return true;
}

/* ---- reads -------------------------------------------------------------- */

/* Answers 'e' for delete marker 'o' with its x-amz-delete-marker and
 * x-amz-version-id headers. */
static void
respond_marker(struct s3_req *r, enum s3_error e, const struct index_object *o)
{
    struct MHD_Response *resp = s3_error_response(r, e, NULL);
    char vid[S3_VERSION_ID_MAX + 1], date[40];
    s3_version_id_format(o->version_flags, o->version_id, vid);
    s3_resp_header(resp, "x-amz-delete-marker", "true");
    s3_resp_header(resp, "x-amz-version-id", arena_strndup(r->arena, vid, strlen(vid)));
    if (e == S3_ERR_METHOD_NOT_ALLOWED) {
        s3_format_http_date(o->mtime_ns, date);
        s3_resp_header(resp, "Last-Modified", arena_strndup(r->arena, date, strlen(date)));
        s3_resp_header(resp, "Allow", "DELETE");
    }
    s3_respond(r, s3_error_status(e), resp);
}

bool
s3_object_lookup(struct s3_req *r, const struct index_bucket *bk, struct index_object *obj)
{
    bool has_vid;
    uint8_t vid[INDEX_VERSION_ID_LEN];
    if (!s3_req_version_id(r, &has_vid, vid))
        return false;
    int rc = has_vid ? index_object_version_get(r->srv->index, bk->id, r->key, vid, r->arena, obj)
                     : index_object_get(r->srv->index, bk->id, r->key, r->arena, obj);
    if (rc == 0 && has_vid && (obj->version_flags & INDEX_VERSION_MARKER)) {
        respond_marker(r, S3_ERR_METHOD_NOT_ALLOWED, obj);
        return false;
    }
    if (rc == 0)
        return true;
    if (rc != -ENOENT) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return false;
    }
    if (has_vid) {
        s3_respond_error(r, S3_ERR_NO_SUCH_VERSION, NULL);
        return false;
    }
    /* Absent latest: a delete marker says so in the answer. */
    struct index_object newest;
    if (index_object_version_get(r->srv->index, bk->id, r->key, NULL, r->arena, &newest) == 0 &&
        (newest.version_flags & INDEX_VERSION_MARKER)) {
        respond_marker(r, S3_ERR_NO_SUCH_KEY, &newest);
        return false;
    }
    s3_respond_error(r, S3_ERR_NO_SUCH_KEY, NULL);
    return false;
}

void
s3_version_headers(struct s3_req *r, struct MHD_Response *resp, const struct index_object *o)
{
    if (!(o->version_flags & INDEX_VERSION_HAS_ID))
        return;
    char vid[S3_VERSION_ID_MAX + 1], date[40];
    s3_version_id_format(o->version_flags, o->version_id, vid);
    s3_resp_header(resp, "x-amz-version-id", arena_strndup(r->arena, vid, strlen(vid)));
    if (o->lock_mode != INDEX_LOCK_NONE) {
        s3_format_iso_date(o->retain_until_ns, date);
        s3_resp_header(resp, "x-amz-object-lock-mode", lock_mode_name(o->lock_mode));
        s3_resp_header(resp, "x-amz-object-lock-retain-until-date",
                       arena_strndup(r->arena, date, strlen(date)));
    }
    if (o->has_legal_hold)
        s3_resp_header(resp, "x-amz-object-lock-legal-hold", "ON");
}

void
s3_version_result_headers(struct s3_req *r, struct MHD_Response *resp, uint32_t flags,
                          const uint8_t *id)
{
    if (!(flags & INDEX_VERSION_HAS_ID))
        return;
    char vid[S3_VERSION_ID_MAX + 1];
    s3_version_id_format(flags, id, vid);
    s3_resp_header(resp, "x-amz-version-id", arena_strndup(r->arena, vid, strlen(vid)));
    if (flags & INDEX_VERSION_MARKER)
        s3_resp_header(resp, "x-amz-delete-marker", "true");
}

/* ---- Object Lock on writes ---------------------------------------------- */

/* Reads the default retention of bucket 'bk' into '*c' (none: has_default
 * false). Returns false when the stored document is unreadable. */
static bool
lock_conf_get(struct s3_req *r, uint64_t bucket_id, struct lock_conf *c)
{
    const void *val;
    size_t len;
    memset(c, 0, sizeof(*c));
    int rc = index_bucket_config_get(r->srv->index, bucket_id, INDEX_BUCKET_CONFIG_OBJECT_LOCK,
                                     r->arena, &val, &len);
    if (rc == -ENOENT)
        return true;
    return rc == 0 && lock_conf_parse(val, len, r->arena, c) == LOCK_XML_OK;
}

/* True when the request carries Content-MD5 or an x-amz-checksum. */
static bool
has_body_digest(struct s3_req *r)
{
    if (s3_req_has_header(r, "content-md5") ||
        s3_req_has_header(r, "x-amz-sdk-checksum-algorithm") ||
        s3_req_has_header(r, "x-amz-trailer"))
        return true;
    for (size_t i = 0; i < r->n_headers; i++)
        if (slice_has_prefix(r->headers[i].name, SLICE_LIT("x-amz-checksum-")) &&
            !slice_eq_nocase(r->headers[i].name, "x-amz-checksum-type"))
            return true;
    return false;
}

enum s3_error
s3_lock_for_write(struct s3_req *r, const struct index_bucket *bk, struct index_object *obj,
                  int64_t now_ns, bool needs_digest, const char **msg)
{
    struct slice mode = s3_req_header(r, "x-amz-object-lock-mode");
    struct slice until = s3_req_header(r, "x-amz-object-lock-retain-until-date");
    struct slice hold = s3_req_header(r, "x-amz-object-lock-legal-hold");
    enum index_versioning st;
    bool has_lock;
    *msg = NULL;
    obj->lock_mode = INDEX_LOCK_NONE;
    obj->retain_until_ns = 0;
    obj->has_legal_hold = false;
    bool is_asked = mode.ptr || until.ptr || hold.ptr;
    if (index_versioning_get(r->srv->index, bk->id, &st, &has_lock) != 0)
        return S3_ERR_INTERNAL_ERROR;
    if (!has_lock) {
        if (!is_asked)
            return S3_OK;
        *msg = "Bucket is missing Object Lock Configuration";
        return S3_ERR_INVALID_REQUEST;
    }
    if ((mode.ptr != NULL) != (until.ptr != NULL)) {
        *msg = "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be "
               "supplied";
        return S3_ERR_INVALID_ARGUMENT;
    }
    if (mode.ptr) {
        int m = lock_mode_parse(mode);
        int64_t t;
        if (m < 0) {
            *msg = "Unknown wormMode directive.";
            return S3_ERR_INVALID_ARGUMENT;
        }
        if (lock_date_parse(until, &t) != 0) {
            *msg = "The retain until date must be provided in ISO 8601 format";
            return S3_ERR_INVALID_ARGUMENT;
        }
        if (t <= now_ns) {
            *msg = "The retain until date must be in the future!";
            return S3_ERR_INVALID_ARGUMENT;
        }
        obj->lock_mode = (uint8_t)m;
        obj->retain_until_ns = t;
    } else {
        struct lock_conf c;
        if (!lock_conf_get(r, bk->id, &c))
            return S3_ERR_INTERNAL_ERROR;
        if (c.has_default) {
            obj->lock_mode = (uint8_t)c.mode;
            obj->retain_until_ns = lock_conf_until_ns(&c, now_ns);
        }
    }
    if (hold.ptr) {
        if (slice_eq(hold, SLICE_LIT("ON"))) {
            obj->has_legal_hold = true;
        } else if (!slice_eq(hold, SLICE_LIT("OFF"))) {
            *msg = "Legal Hold must be either of 'ON' or 'OFF'";
            return S3_ERR_INVALID_ARGUMENT;
        }
    }
    if (needs_digest && (obj->lock_mode != INDEX_LOCK_NONE || obj->has_legal_hold) &&
        !has_body_digest(r)) {
        *msg = "Content-MD5 OR x-amz-checksum- HTTP header is required for Put Object requests "
               "with Object Lock parameters";
        return S3_ERR_INVALID_REQUEST;
    }
    return S3_OK;
}

bool
s3_bypass_governance(struct s3_req *r)
{
    if (!slice_eq_nocase(s3_req_header(r, "x-amz-bypass-governance-retention"), "true"))
        return false;
    return s3_is_allowed(r, AUTH_ACTION_BUCKET_ADMIN, r->key);
}

/* ---- bucket versioning -------------------------------------------------- */

void
op_get_bucket_versioning(struct s3_req *r)
{
    struct index_bucket bk;
    enum index_versioning st;
    bool has_lock;
    if (!s3_bucket_lookup(r, &bk))
        return;
    if (index_versioning_get(r->srv->index, bk.id, &st, &has_lock) != 0) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    struct buf b;
    buf_init(&b);
    buf_append_str(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<VersioningConfiguration "
                       "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
    if (st != INDEX_VERSIONING_OFF)
        xml_elem_str(&b, "Status", st == INDEX_VERSIONING_ENABLED ? "Enabled" : "Suspended");
    buf_append_str(&b, "</VersioningConfiguration>");
    s3_respond_body(r, 200, "application/xml", b.ptr, b.len);
    buf_cleanup(&b);
}

static void
put_bucket_versioning_end(struct s3_req *r)
{
    struct index_bucket bk;
    int status;
    if (!s3_bucket_lookup(r, &bk))
        return;
    enum lock_xml_status st = versioning_xml_parse(r->xml_body.ptr ? r->xml_body.ptr : "",
                                                   r->xml_body.len, r->arena, &status);
    if (st == LOCK_XML_UNSUPPORTED) {
        s3_respond_error(r, S3_ERR_NOT_IMPLEMENTED, "MFA delete is not supported.");
        return;
    }
    if (st != LOCK_XML_OK) {
        s3_respond_error(r, S3_ERR_MALFORMED_XML, NULL);
        return;
    }
    if (status == 0) {
        s3_respond_empty(r, 200); /* no Status: nothing changes, as in S3 */
        return;
    }
    int rc = index_versioning_put(
        r->srv->index, bk.id, status == 1 ? INDEX_VERSIONING_ENABLED : INDEX_VERSIONING_SUSPENDED,
        false);
    if (rc == -EPERM) {
        s3_respond_error(r, S3_ERR_INVALID_BUCKET_STATE,
                         "An Object Lock configuration is present on this bucket, so the "
                         "versioning state cannot be changed.");
        return;
    }
    if (rc < 0) {
        s3_respond_error(r, rc == -ENOENT ? S3_ERR_NO_SUCH_BUCKET : S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    log_info("bucket %s: versioning %s (by %s)", bk.name, status == 1 ? "Enabled" : "Suspended",
             r->user_name);
    s3_respond_empty(r, 200);
}

void
op_put_bucket_versioning(struct s3_req *r)
{
    s3_req_expect_xml(r, 64 * 1024, put_bucket_versioning_end);
}

/* ---- Object Lock configuration ------------------------------------------ */

void
op_get_object_lock_config(struct s3_req *r)
{
    struct index_bucket bk;
    enum index_versioning st;
    bool has_lock;
    struct lock_conf c;
    if (!s3_bucket_lookup(r, &bk))
        return;
    if (index_versioning_get(r->srv->index, bk.id, &st, &has_lock) != 0 ||
        !lock_conf_get(r, bk.id, &c)) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    if (!has_lock) {
        s3_respond_error(r, S3_ERR_OBJECT_LOCK_CONFIGURATION_NOT_FOUND, NULL);
        return;
    }
    struct buf b;
    buf_init(&b);
    lock_conf_format(&b, &c);
    s3_respond_body(r, 200, "application/xml", b.ptr, b.len);
    buf_cleanup(&b);
}

static void
put_object_lock_config_end(struct s3_req *r)
{
    struct index_bucket bk;
    struct lock_conf c;
    enum index_versioning st;
    bool has_lock;
    if (!s3_xml_body_begin(r, &bk))
        return;
    enum lock_xml_status ps =
        lock_conf_parse(r->xml_body.ptr ? r->xml_body.ptr : "", r->xml_body.len, r->arena, &c);
    if (ps == LOCK_XML_INVALID) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                         "Default retention period must be a positive integer value.");
        return;
    }
    if (ps != LOCK_XML_OK) {
        s3_respond_error(r, S3_ERR_MALFORMED_XML, NULL);
        return;
    }
    if (index_versioning_get(r->srv->index, bk.id, &st, &has_lock) != 0) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    /* Object Lock is enabled at creation; S3 also allows it later on a
     * bucket whose versioning is Enabled. */
    if (!has_lock && st != INDEX_VERSIONING_ENABLED) {
        s3_respond_error(r, S3_ERR_INVALID_BUCKET_STATE,
                         "Versioning must be 'Enabled' on the bucket to apply a Object Lock "
                         "configuration");
        return;
    }
    int rc =
        has_lock ? 0 : index_versioning_put(r->srv->index, bk.id, INDEX_VERSIONING_ENABLED, true);
    if (rc == 0) {
        if (c.has_default) {
            struct buf b;
            buf_init(&b);
            lock_conf_format(&b, &c);
            rc = index_bucket_config_put(r->srv->index, bk.id, INDEX_BUCKET_CONFIG_OBJECT_LOCK,
                                         b.ptr, b.len);
            buf_cleanup(&b);
        } else {
            rc = index_bucket_config_delete(r->srv->index, bk.id, INDEX_BUCKET_CONFIG_OBJECT_LOCK);
            if (rc == -ENOENT)
                rc = 0;
        }
    }
    if (rc < 0) {
        s3_respond_error(r, rc == -ENOENT ? S3_ERR_NO_SUCH_BUCKET : S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    s3_respond_empty(r, 200);
}

void
op_put_object_lock_config(struct s3_req *r)
{
    s3_req_expect_xml(r, 64 * 1024, put_object_lock_config_end);
}

/* ---- retention and legal hold ------------------------------------------- */

/* Looks up the bucket and checks that it has Object Lock. Responds and
 * returns false otherwise. */
static bool
lock_bucket_lookup(struct s3_req *r, struct index_bucket *bk, bool is_write)
{
    enum index_versioning st;
    bool has_lock;
    if (is_write ? !s3_xml_body_begin(r, bk) : !s3_bucket_lookup(r, bk))
        return false;
    if (index_versioning_get(r->srv->index, bk->id, &st, &has_lock) != 0) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return false;
    }
    if (!has_lock) {
        s3_respond_error(r, S3_ERR_INVALID_REQUEST, "Bucket is missing Object Lock Configuration");
        return false;
    }
    return true;
}

static void
get_lock(struct s3_req *r, bool is_hold)
{
    struct index_bucket bk;
    struct index_object o;
    if (!lock_bucket_lookup(r, &bk, false) || !s3_object_lookup(r, &bk, &o))
        return;
    struct buf b;
    buf_init(&b);
    if (is_hold) {
        xml_begin(&b, "LegalHold");
        xml_elem_str(&b, "Status", o.has_legal_hold ? "ON" : "OFF");
        xml_end(&b, "LegalHold");
    } else if (o.lock_mode == INDEX_LOCK_NONE) {
        buf_cleanup(&b);
        s3_respond_error(r, S3_ERR_NO_SUCH_OBJECT_LOCK_CONFIGURATION, NULL);
        return;
    } else {
        char date[40];
        s3_format_iso_date(o.retain_until_ns, date);
        xml_begin(&b, "Retention");
        xml_elem_str(&b, "Mode", lock_mode_name(o.lock_mode));
        xml_elem_str(&b, "RetainUntilDate", date);
        xml_end(&b, "Retention");
    }
    s3_respond_body(r, 200, "application/xml", b.ptr, b.len);
    buf_cleanup(&b);
}

static void
put_lock_end(struct s3_req *r, bool is_hold)
{
    struct index_bucket bk;
    struct index_object want;
    bool has_vid;
    if (!lock_bucket_lookup(r, &bk, true))
        return;
    memset(&want, 0, sizeof(want));
    struct index_op op = {.kind = INDEX_OP_SET_LOCK,
                          .bucket_id = bk.id,
                          .key = r->key,
                          .object = &want,
                          .now_ns = clock_now_ns(),
                          .arena = r->arena};
    if (!s3_req_version_id(r, &has_vid, op.version_id))
        return;
    op.has_version_id = has_vid;
    const char *body = r->xml_body.ptr ? r->xml_body.ptr : "";
    enum lock_xml_status ps;
    if (is_hold) {
        op.lock_what = INDEX_SET_LEGAL_HOLD;
        ps = legal_hold_xml_parse(body, r->xml_body.len, r->arena, &want.has_legal_hold);
    } else {
        int mode;
        op.lock_what = INDEX_SET_RETENTION;
        op.bypass_governance = s3_bypass_governance(r);
        ps = retention_xml_parse(body, r->xml_body.len, r->arena, &mode, &want.retain_until_ns);
        want.lock_mode = (uint8_t)mode;
        if (ps == LOCK_XML_OK && mode != LOCK_MODE_NONE && want.retain_until_ns <= op.now_ns) {
            s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                             "The retain until date must be in the future!");
            return;
        }
    }
    if (ps == LOCK_XML_INVALID) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "Invalid date format for RetainUntilDate");
        return;
    }
    if (ps != LOCK_XML_OK) {
        s3_respond_error(r, S3_ERR_MALFORMED_XML, NULL);
        return;
    }
    int rc = committer_run(r->srv->committer, &op, 1);
    if (rc == 0)
        rc = op.result;
    if (rc == -ENOENT) {
        s3_respond_error(r, has_vid ? S3_ERR_NO_SUCH_VERSION : S3_ERR_NO_SUCH_KEY, NULL);
        return;
    }
    if (rc == -EACCES) {
        s3_respond_error(r, S3_ERR_ACCESS_DENIED, NULL);
        return;
    }
    if (rc < 0) {
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
        return;
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    s3_respond(r, 200, resp);
}

static void
put_retention_end(struct s3_req *r)
{
    put_lock_end(r, false);
}

static void
put_legal_hold_end(struct s3_req *r)
{
    put_lock_end(r, true);
}

void
op_get_object_retention(struct s3_req *r)
{
    get_lock(r, false);
}

void
op_get_object_legal_hold(struct s3_req *r)
{
    get_lock(r, true);
}

void
op_put_object_retention(struct s3_req *r)
{
    s3_req_expect_xml(r, 64 * 1024, put_retention_end);
}

void
op_put_object_legal_hold(struct s3_req *r)
{
    s3_req_expect_xml(r, 64 * 1024, put_legal_hold_end);
}
