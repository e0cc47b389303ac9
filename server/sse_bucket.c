/*
 * sse_bucket.c: Put/Get/DeleteBucketEncryption (?encryption), a bucket's
 * default encryption, which writes without encryption headers get
 * (sse.c's sse_for_write reads it on every PutObject, CopyObject and
 * CreateMultipartUpload).
 *
 * Stored in the index's per-bucket configuration store as three bytes:
 * version 1, the mode (SSE_S3) and BucketKeyEnabled; Get formats the XML
 * from them. Only AES256 is accepted: this server has no KMS, and a
 * default naming aws:kms is refused (501) rather than stored and not
 * applied. Like S3, Put needs Content-MD5 or a checksum of its body.
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/body.h"
#include "server/errors.h"
#include "server/ops.h"
#include "server/req.h"
#include "server/server.h"
#include "server/sse.h"
#include "server/xml_in.h"
#include "server/xml_out.h"

#include <errno.h>

#define ENCRYPTION_BODY_MAX (64 * 1024)
#define STORED_VERSION 1

/* Checks a parsed configuration; fills the stored form. Returns S3_OK or
 * the error, with '*msg' for the message when not the default one. */
static enum s3_error
encryption_check(const struct xml_encryption_request *req, uint8_t stored[3], const char **msg)
{
    *msg = NULL;
    if (req->n_rules != 1)
        return S3_ERR_MALFORMED_XML;
    const struct xml_encryption_rule *rule = &req->rules[0];
    if (!rule->has_default || !rule->algorithm.ptr)
        return S3_ERR_MALFORMED_XML;
    bool is_kms = slice_eq(rule->algorithm, SLICE_LIT("aws:kms")) ||
                  slice_eq(rule->algorithm, SLICE_LIT("aws:kms:dsse"));
    if (is_kms) {
        *msg = "This server has no KMS: the default encryption can be AES256 only.";
        return S3_ERR_NOT_IMPLEMENTED;
    }
    if (!slice_eq(rule->algorithm, SLICE_LIT("AES256")))
        return S3_ERR_MALFORMED_XML;
    if (rule->kms_key_id.ptr) {
        *msg = "a KMSMasterKeyID is not applicable if the default sse algorithm is not aws:kms "
               "or aws:kms:dsse";
        return S3_ERR_INVALID_ARGUMENT;
    }
    bool is_bucket_key = slice_eq(rule->bucket_key_enabled, SLICE_LIT("true"));
    if (rule->bucket_key_enabled.ptr && !is_bucket_key &&
        !slice_eq(rule->bucket_key_enabled, SLICE_LIT("false")))
        return S3_ERR_MALFORMED_XML;
    stored[0] = STORED_VERSION;
    stored[1] = SSE_S3;
    stored[2] = is_bucket_key ? 1 : 0;
    return S3_OK;
}

static void
put_encryption_end(struct s3_req *r)
{
    struct index_bucket bk;
    struct xml_encryption_request req;
    uint8_t stored[3];
    const char *msg = NULL;
    if (!s3_xml_body_begin(r, &bk))
        return;
    enum xml_in_status st = xml_parse_encryption(r->xml_body.ptr ? r->xml_body.ptr : "",
                                                 r->xml_body.len, r->arena, &req);
    enum s3_error e = st == XML_IN_OK ? encryption_check(&req, stored, &msg) : S3_ERR_MALFORMED_XML;
    if (e == S3_OK && !sse_keys_have_current(r->srv->sse_keys)) {
        e = S3_ERR_NOT_IMPLEMENTED;
        msg = "Server-side encryption needs a master key (sse_master_key_file), which this server "
              "has not.";
    }
    if (e != S3_OK) {
        s3_respond_error(r, e, msg);
        return;
    }
    int rc = index_bucket_config_put(r->srv->index, bk.id, INDEX_BUCKET_CONFIG_ENCRYPTION, stored,
                                     sizeof(stored));
    if (rc < 0) {
        s3_respond_error(r, rc == -ENOENT ? S3_ERR_NO_SUCH_BUCKET : s3_error_from_errno(rc), NULL);
        return;
    }
    log_info("bucket %s: default encryption AES256 (by %s)", bk.name, r->user_name);
    s3_respond_empty(r, 200);
}

void
op_put_bucket_encryption(struct s3_req *r)
{
    s3_req_expect_xml(r, ENCRYPTION_BODY_MAX, put_encryption_end);
}

void
op_get_bucket_encryption(struct s3_req *r)
{
    struct index_bucket bk;
    const void *val;
    size_t len;
    if (!s3_bucket_lookup(r, &bk))
        return;
    int rc = index_bucket_config_get(r->srv->index, bk.id, INDEX_BUCKET_CONFIG_ENCRYPTION, r->arena,
                                     &val, &len);
    const uint8_t *p = val;
    if (rc == -ENOENT) {
        s3_respond_error(r, S3_ERR_SSE_CONFIG_NOT_FOUND, NULL);
        return;
    }
    if (rc < 0 || len != 3 || p[0] != STORED_VERSION || p[1] != SSE_S3) {
        s3_respond_error(r, rc < 0 ? s3_error_from_errno(rc) : S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    struct buf b;
    buf_init(&b);
    xml_begin(&b, "ServerSideEncryptionConfiguration");
    buf_append_str(&b, "<Rule><ApplyServerSideEncryptionByDefault>");
    xml_elem_str(&b, "SSEAlgorithm", "AES256");
    buf_append_str(&b, "</ApplyServerSideEncryptionByDefault>");
    xml_elem_str(&b, "BucketKeyEnabled", p[2] ? "true" : "false");
    buf_append_str(&b, "</Rule>");
    xml_end(&b, "ServerSideEncryptionConfiguration");
    s3_respond_body(r, 200, "application/xml", b.ptr, b.len);
    buf_cleanup(&b);
}

void
op_delete_bucket_encryption(struct s3_req *r)
{
    struct index_bucket bk;
    if (!s3_bucket_lookup(r, &bk))
        return;
    int rc = index_bucket_config_delete(r->srv->index, bk.id, INDEX_BUCKET_CONFIG_ENCRYPTION);
    /* S3 answers 204 whether or not a configuration was set. */
    if (rc < 0 && rc != -ENOENT)
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
    else
        s3_respond_empty(r, 204);
}
