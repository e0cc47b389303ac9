/*
 * op_delete.c: DeleteObjects (POST /bucket?delete). The body's integrity
 * is checked with Content-MD5 or, as current SDKs send instead, an
 * x-amz-checksum-* header; then every key is deleted in one group commit.
 * An <Object> may carry conditions (ETag, LastModifiedTime, Size, as S3
 * added in 2025), checked inside the commit: a failed one is that entry's
 * PreconditionFailed (NoSuchKey when the key is absent), the others go on.
 */
#include "config.h"

#include "auth/auth.h"
#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/body.h"
#include "server/commit.h"
#include "server/errors.h"
#include "server/ops.h"
#include "server/req.h"
#include "server/server.h"
#include "server/util.h"
#include "server/versioning.h"
#include "server/xml_in.h"
#include "server/xml_out.h"

#include <errno.h>

static const enum auth_checksum_algo body_algos[] = {
    AUTH_CK_CRC32, AUTH_CK_CRC32C, AUTH_CK_CRC64NVME, AUTH_CK_SHA1, AUTH_CK_SHA256,
};

enum s3_error
s3_check_body_digest(struct s3_req *r)
{
    const char *body = r->xml_body.ptr ? r->xml_body.ptr : "";
    struct slice cmd5 = s3_req_header(r, "content-md5");
    enum auth_checksum_algo algo = AUTH_CK_NONE;
    struct slice expected = SLICE_NULL;
    if (cmd5.ptr) {
        algo = AUTH_CK_MD5;
        expected = cmd5;
    } else {
        for (size_t i = 0; i < ARRAY_LEN(body_algos); i++) {
            struct slice v = s3_req_header(r, auth_checksum_header(body_algos[i]));
            if (v.ptr) {
                algo = body_algos[i];
                expected = v;
            }
        }
        if (algo == AUTH_CK_NONE && r->is_chunked_payload) {
            for (size_t i = 0; i < ARRAY_LEN(body_algos); i++) {
                struct slice v =
                    auth_chunked_trailer(&r->chunked, auth_checksum_header(body_algos[i]));
                if (v.len) {
                    algo = body_algos[i];
                    expected = v;
                }
            }
        }
    }
    if (algo == AUTH_CK_NONE)
        return S3_ERR_MISSING_SECURITY_HEADER;
    struct auth_checksum ck;
    uint8_t dig[AUTH_CK_MAX_DIGEST];
    auth_checksum_init(&ck, algo);
    auth_checksum_update(&ck, body, r->xml_body.len);
    size_t n = auth_checksum_final(&ck, dig);
    char b64[64];
    size_t bl = base64_encode(dig, n, b64);
    if (!slice_eq(expected, (struct slice){b64, bl}))
        return algo == AUTH_CK_MD5 && expected.len != 24 ? S3_ERR_INVALID_DIGEST
                                                         : S3_ERR_BAD_DIGEST;
    return S3_OK;
}

bool
s3_xml_body_begin(struct s3_req *r, struct index_bucket *bk)
{
    if (!s3_bucket_lookup(r, bk))
        return false;
    enum s3_error e = s3_check_body_digest(r);
    if (e != S3_OK) {
        s3_respond_error(r, e, NULL);
        return false;
    }
    return true;
}

/* Parses an ISO 8601 time "YYYY-MM-DDTHH:MM:SS[.fff]Z" (what S3 lists as
 * LastModified) into Unix seconds. Returns false when malformed. */
static bool
iso_time_parse(struct slice v, int64_t *out_s)
{
    unsigned f[6];
    const size_t at[6] = {0, 5, 8, 11, 14, 17}, width[6] = {4, 2, 2, 2, 2, 2};
    const char seps[] = "--T::";
    if (v.len < 20 || v.ptr[v.len - 1] != 'Z')
        return false;
    for (size_t i = 0; i < 6; i++) {
        f[i] = 0;
        for (size_t k = 0; k < width[i]; k++) {
            char c = v.ptr[at[i] + k];
            if (c < '0' || c > '9')
                return false;
            f[i] = f[i] * 10 + (unsigned)(c - '0');
        }
        if (i < 5 && v.ptr[at[i] + width[i]] != seps[i])
            return false;
    }
    /* After the seconds: "Z", or "." and digits then "Z". */
    if (v.len > 20 && v.ptr[19] != '.')
        return false;
    for (size_t i = 20; i + 1 < v.len; i++)
        if (v.ptr[i] < '0' || v.ptr[i] > '9')
            return false;
    if (f[1] < 1 || f[1] > 12 || f[2] < 1 || f[2] > 31 || f[3] > 23 || f[4] > 59 || f[5] > 60)
        return false;
    *out_s = days_from_civil(f[0], f[1], f[2]) * 86400 + f[3] * 3600 + f[4] * 60 + f[5];
    return true;
}

/* Sets the conditions of one <Object> (S3, 2025: ETag, "*" for "exists",
 * LastModifiedTime, Size) on its delete 'op': any of them makes an absent
 * key NoSuchKey. Returns false when one is malformed. */
static bool
delete_conditions(const struct xml_delete_object *o, struct index_op *op)
{
    if (o->etag.ptr) {
        op->if_exists = true;
        if (!slice_eq(o->etag, SLICE_LIT("*"))) {
            if (!s3_parse_etag(o->etag, op->if_match_etag))
                return false;
            op->has_if_match = true;
        }
    }
    if (o->last_modified.ptr) {
        if (!iso_time_parse(o->last_modified, &op->if_mtime_s) &&
            http_date_parse(o->last_modified, &op->if_mtime_s) != 0)
            return false;
        op->if_exists = op->has_if_mtime_s = true;
    }
    if (o->size.ptr) {
        if (parse_u64(o->size, INT64_MAX, &op->if_size) != 0)
            return false;
        op->if_exists = op->has_if_size = true;
    }
    return true;
}

static void
delete_objects_end(struct s3_req *r)
{
    struct index_bucket bk;
    if (!s3_xml_body_begin(r, &bk))
        return;
    struct xml_delete_request req;
    enum xml_in_status st =
        xml_parse_delete(r->xml_body.ptr ? r->xml_body.ptr : "", r->xml_body.len, r->arena, &req);
    if (st != XML_IN_OK) {
        s3_respond_error(r, S3_ERR_MALFORMED_XML, NULL);
        return;
    }
    struct index_op *ops = arena_calloc(r->arena, req.n_objects, sizeof(*ops));
    /* The route checked the caller's level; a prefix grant covers only
     * some keys, so each key is decided on its own. */
    bool *is_denied = arena_calloc(r->arena, req.n_objects + 1, sizeof(*is_denied));
    bool *is_bad = arena_calloc(r->arena, req.n_objects + 1, sizeof(*is_bad));
    bool *is_bad_vid = arena_calloc(r->arena, req.n_objects + 1, sizeof(*is_bad_vid));
    bool bypass = s3_bypass_governance(r);
    int64_t now_ns = clock_now_ns();
    size_t n_ops = 0;
    for (size_t i = 0; i < req.n_objects; i++) {
        struct slice k = req.objects[i].key;
        if (k.len == 0 || k.len > INDEX_MAX_KEY)
            continue;
        if (!s3_is_allowed(r, AUTH_ACTION_WRITE, k)) {
            is_denied[i] = true;
            continue;
        }
        struct index_op *op = &ops[n_ops];
        *op = (struct index_op){.kind = INDEX_OP_DELETE,
                                .bucket_id = bk.id,
                                .key = k,
                                .now_ns = now_ns,
                                .bypass_governance = bypass,
                                .arena = r->arena};
        if (!delete_conditions(&req.objects[i], op)) {
            is_bad[i] = true;
            continue;
        }
        if (req.objects[i].version_id.ptr) {
            if (!s3_version_id_parse(req.objects[i].version_id, op->version_id)) {
                is_bad_vid[i] = true;
                continue;
            }
            op->has_version_id = true;
        }
        n_ops++;
    }
    int rc = n_ops ? committer_run(r->srv->committer, ops, n_ops) : 0;
    struct buf b;
    buf_init(&b);
    xml_begin(&b, "DeleteResult");
    size_t k = 0;
    for (size_t i = 0; i < req.n_objects; i++) {
        struct slice key = req.objects[i].key;
        const char *code = NULL, *msg = NULL;
        const struct index_op *done = NULL;
        if (key.len == 0 || key.len > INDEX_MAX_KEY) {
            code = key.len ? "KeyTooLongError" : "InvalidArgument";
            msg = key.len ? "Your key is too long" : "Empty key";
        } else if (is_denied[i]) {
            code = "AccessDenied";
            msg = "Access Denied";
        } else if (is_bad[i]) {
            code = "InvalidArgument";
            msg = "Invalid ETag, LastModifiedTime or Size condition";
        } else if (is_bad_vid[i]) {
            code = "NoSuchVersion";
            msg = "The specified version does not exist.";
        } else {
            int res = rc < 0 ? rc : ops[k].result;
            done = &ops[k];
            k++;
            if (res == -EACCES) {
                code = "AccessDenied";
                msg = "Access Denied because object protected by object lock.";
            } else if (res == -ENOENT) {
                code = "NoSuchBucket";
                msg = "The specified bucket does not exist";
            } else if (res == -ENODATA) {
                code = "NoSuchKey";
                msg = "The specified key does not exist.";
            } else if (res == -ESTALE || res == -EEXIST) {
                code = "PreconditionFailed";
                msg = "At least one of the pre-conditions you specified did not hold";
            } else if (res < 0) {
                code = "InternalError";
                msg = "We encountered an internal error. Please try again.";
            }
        }
        if (code) {
            buf_append_str(&b, "<Error>");
            xml_elem(&b, "Key", key);
            xml_elem_str(&b, "Code", code);
            xml_elem_str(&b, "Message", msg);
            buf_append_str(&b, "</Error>");
        } else if (!req.is_quiet) {
            buf_append_str(&b, "<Deleted>");
            xml_elem(&b, "Key", key);
            if (req.objects[i].version_id.len)
                xml_elem(&b, "VersionId", req.objects[i].version_id);
            if (done && (done->result_version_flags & INDEX_VERSION_MARKER)) {
                /* A marker added (no id asked) or removed (its id). */
                char vid[S3_VERSION_ID_MAX + 1];
                s3_version_id_format(done->result_version_flags, done->result_version_id, vid);
                xml_elem_str(&b, "DeleteMarker", "true");
                xml_elem_str(&b, "DeleteMarkerVersionId", vid);
            }
            buf_append_str(&b, "</Deleted>");
        }
    }
    xml_end(&b, "DeleteResult");
    s3_respond_body(r, 200, "application/xml", b.ptr, b.len);
    buf_cleanup(&b);
}

void
op_delete_objects(struct s3_req *r)
{
    s3_req_expect_xml(r, 2u << 20, delete_objects_end);
}
