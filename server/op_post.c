/*
 * op_post.c: POST Object (browser form uploads): POST /BUCKET with a
 * multipart/form-data body whose fields (key, policy, signature, metadata,
 * acl, tagging, success_action_*) come before the one "file" part.
 *
 * The body streams through form.c. Fields are kept (bounded by
 * POST_FIELDS_MAX bytes) until the file part begins; then, once and before
 * a byte of the file is stored, the form is judged: signature (SigV4 or
 * SigV2 over the policy; none for an anonymous POST), policy document
 * (post_policy.c), the bucket's authorization for s3:PutObject on the key
 * (bucket policy, ACLs, grants: an anonymous POST needs a policy that
 * allows it). The file's bytes then go to a storage writer as a PUT's do,
 * through MD5 (the ETag) and the checksum the form names; fields after the
 * file are ignored, as S3 ignores them. The end step checks the policy's
 * content-length-range and the checksum and commits the object like a PUT.
 * A failure found while the body streams (bad signature or policy, denied,
 * file too large) is answered at once with Connection: close, without
 * reading the rest of the body.
 *
 * The form's fields that a PUT would carry as headers (Content-Type,
 * x-amz-meta-*, x-amz-acl, x-amz-checksum-*, Cache-Control, ...) replace
 * the request's headers for meta.c and acl.c, so one code path stores them.
 */
#include "config.h"

#include "auth/auth.h"
#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/acl.h"
#include "server/commit.h"
#include "server/errors.h"
#include "server/extents.h"
#include "server/form.h"
#include "server/key.h"
#include "server/meta.h"
#include "server/ops.h"
#include "server/post_policy.h"
#include "server/req.h"
#include "server/reserve.h"
#include "server/server.h"
#include "server/tags.h"
#include "server/util.h"
#include "server/xml_in.h"
#include "server/xml_out.h"
#include "storage/storage.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>

/* All fields before the file together (the policy is at most ~20 KiB). */
#define POST_FIELDS_MAX (64 * 1024)
#define POST_FIELDS_COUNT_MAX 64
/* Room for the form around the file: boundaries, headers, fields. */
#define POST_FORM_OVERHEAD (1u << 20)

struct post_ctx {
    struct form_parser parser;
    struct index_bucket bucket;
    struct post_field fields[POST_FIELDS_COUNT_MAX];
    size_t n_fields;
    size_t fields_len;
    struct buf value; /* the field being read */
    bool in_field, in_file, has_file, is_done, is_ready;
    char filename[FORM_NAME_MAX + 1];
    char file_type[FORM_NAME_MAX + 1];
    struct slice key;
    struct post_policy_limits limits;
    struct storage_writer *writer;
    uint64_t held_charged, seen_reserved;
    uint64_t file_len;
    struct auth_checksum md5;
    bool has_md5;
    enum auth_checksum_algo ck_algo;
    struct auth_checksum ck;
    bool has_ck;
    struct slice ck_expected;
    struct slice host; /* the request's Host (its headers are replaced by the fields) */
    struct meta meta;
    enum s3_error error; /* the first error, answered at the end */
    const char *error_msg;
};

static const enum auth_checksum_algo checksum_algos[] = {
    AUTH_CK_CRC32, AUTH_CK_CRC32C, AUTH_CK_CRC64NVME, AUTH_CK_SHA1, AUTH_CK_SHA256,
};

static struct slice
field(const struct post_ctx *c, const char *name)
{
    for (size_t i = 0; i < c->n_fields; i++)
        if (slice_eq_nocase(c->fields[i].name, name))
            return c->fields[i].value;
    return SLICE_NULL;
}

static int
post_fail(struct post_ctx *c, enum s3_error e, const char *msg)
{
    if (c->error == S3_OK) {
        c->error = e;
        c->error_msg = msg;
    }
    return -1;
}

static void
post_release(struct s3_req *r, struct post_ctx *c, bool is_committed)
{
    storage_writer_destroy(c->writer, is_committed);
    c->writer = NULL;
    reserve_charge(r->srv->reserves, r->user_id, c->held_charged, 0);
    c->held_charged = 0;
}

static void
post_cleanup(struct s3_req *r)
{
    struct post_ctx *c = r->op_ctx;
    if (!c)
        return;
    post_release(r, c, false);
    buf_cleanup(&c->value);
    if (c->has_md5)
        auth_checksum_cleanup(&c->md5);
    if (c->has_ck)
        auth_checksum_cleanup(&c->ck);
    c->has_md5 = c->has_ck = false;
}

/* ======================================================================
 * Judging the form (when the file part begins)
 * ====================================================================== */

/* Authenticates the form's signature, if any. Returns 0 or -1 (error set). */
static int
post_authenticate(struct s3_req *r, struct post_ctx *c)
{
    struct auth_post post = {
        .policy = field(c, "policy"),
        .algorithm = field(c, "x-amz-algorithm"),
        .credential = field(c, "x-amz-credential"),
        .amz_date = field(c, "x-amz-date"),
        .access_key = field(c, "AWSAccessKeyId"),
        .region = r->srv->cfg.region,
    };
    struct slice sig4 = field(c, "x-amz-signature"), sig2 = field(c, "signature");
    bool is_v4 = sig4.ptr || post.credential.ptr || post.algorithm.ptr;
    bool is_v2 = post.access_key.ptr || sig2.ptr;
    enum auth_result res;
    if (!is_v4 && !is_v2)
        return 0; /* anonymous: the bucket's policy decides */
    if (!post.policy.ptr)
        return post_fail(c, S3_ERR_INVALID_ARGUMENT,
                         "Bucket POST must contain a field named 'policy'.  If it is specified, "
                         "please check the order of the fields.");
    if (is_v4) {
        if (!sig4.ptr || !post.credential.ptr || !post.algorithm.ptr || !post.amz_date.ptr)
            return post_fail(c, S3_ERR_INVALID_ARGUMENT,
                             "Bucket POST with SigV4 must contain the fields x-amz-algorithm, "
                             "x-amz-credential, x-amz-date and x-amz-signature.");
        post.signature = sig4;
        res = auth_post_verify_v4(&post, s3_lookup_secret, r, &r->auth);
    } else {
        if (!sig2.ptr || !post.access_key.ptr)
            return post_fail(c, S3_ERR_INVALID_ARGUMENT,
                             "Bucket POST must contain the fields AWSAccessKeyId and signature.");
        post.signature = sig2;
        res = auth_post_verify_v2(&post, s3_lookup_secret, r, &r->auth);
    }
    switch (res) {
    case AUTH_OK:
        r->principal.is_anonymous = false;
        r->is_authenticated = true;
        return 0;
    case AUTH_UNKNOWN_KEY:
        return post_fail(c, S3_ERR_INVALID_ACCESS_KEY_ID, NULL);
    case AUTH_BAD_SIGNATURE:
        return post_fail(c, S3_ERR_SIGNATURE_DOES_NOT_MATCH, NULL);
    case AUTH_BAD_REGION:
        return post_fail(c, S3_ERR_INVALID_ARGUMENT,
                         "Invalid credential: the region is not this server's");
    case AUTH_UNSUPPORTED:
        return post_fail(c, S3_ERR_INVALID_ARGUMENT,
                         "Invalid algorithm: only AWS4-HMAC-SHA256 is supported");
    default:
        return post_fail(c, S3_ERR_INVALID_ARGUMENT, "Invalid according to Policy: credentials");
    }
}

/* Fields that become the stored object's "headers". */
static bool
field_is_header(struct slice name)
{
    static const char *const names[] = {
        "content-type",     "cache-control", "content-disposition", "content-encoding",
        "content-language", "expires",       "x-amz-acl",           "x-amz-storage-class"};
    for (size_t i = 0; i < ARRAY_LEN(names); i++)
        if (slice_eq_nocase(name, names[i]))
            return true;
    return name.len > 11 && slice_eq_nocase((struct slice){name.ptr, 11}, "x-amz-meta-");
}

/* Replaces the request's headers with the form's storable fields (plus
 * the file part's Content-Type when the form names none). */
static void
headers_from_fields(struct s3_req *r, struct post_ctx *c)
{
    c->host = s3_req_header(r, "host");
    struct auth_header *h = arena_calloc(r->arena, c->n_fields + 2, sizeof(*h));
    size_t n = 0;
    bool has_type = false;
    for (size_t i = 0; i < c->n_fields; i++) {
        struct slice name = c->fields[i].name;
        if (slice_eq_nocase(name, "acl"))
            name = SLICE_LIT("x-amz-acl"); /* the form's name for the canned ACL */
        else if (!field_is_header(name))
            continue;
        has_type = has_type || slice_eq_nocase(name, "content-type");
        h[n++] = (struct auth_header){name, c->fields[i].value};
    }
    if (!has_type && c->file_type[0])
        h[n++] = (struct auth_header){
            SLICE_LIT("content-type"),
            slice_from_cstr(arena_strndup(r->arena, c->file_type, strlen(c->file_type)))};
    r->headers = h;
    r->n_headers = n;
}

/* The object key: the field's value with ${filename} replaced. */
static struct slice
key_from_field(struct s3_req *r, struct post_ctx *c, struct slice k)
{
    static const char var[] = "${filename}";
    const char *at = NULL;
    for (size_t i = 0; i + sizeof(var) - 1 <= k.len && !at; i++)
        if (memcmp(k.ptr + i, var, sizeof(var) - 1) == 0)
            at = k.ptr + i;
    if (!at)
        return k;
    /* A browser may send a path (C:\dir\name): only the name counts. */
    const char *fn = c->filename;
    for (const char *p = c->filename; *p; p++)
        if (*p == '/' || *p == '\\')
            fn = p + 1;
    char *out = arena_sprintf(r->arena, "%.*s%s%.*s", (int)(at - k.ptr), k.ptr, fn,
                              (int)(k.len - (size_t)(at - k.ptr) - (sizeof(var) - 1)),
                              at + sizeof(var) - 1);
    return slice_from_cstr(out);
}

static int
post_choose_checksum(struct post_ctx *c)
{
    for (size_t i = 0; i < ARRAY_LEN(checksum_algos); i++) {
        struct slice v = field(c, auth_checksum_header(checksum_algos[i]));
        if (!v.ptr)
            continue;
        if (c->ck_algo != AUTH_CK_NONE)
            return post_fail(c, S3_ERR_INVALID_REQUEST,
                             "Expecting a single x-amz-checksum- header. Multiple checksum "
                             "Types are not allowed.");
        c->ck_algo = checksum_algos[i];
        c->ck_expected = v;
    }
    if (c->ck_algo != AUTH_CK_NONE) {
        auth_checksum_init(&c->ck, c->ck_algo);
        c->has_ck = true;
    }
    return 0;
}

/* Judges the form once its fields are in; sets up the writer. Returns 0
 * or -1 (error set; answered at once, the rest of the body unread). */
static int
post_judge(struct s3_req *r, struct post_ctx *c)
{
    struct slice key = field(c, "key");
    if (!key.ptr)
        return post_fail(c, S3_ERR_INVALID_ARGUMENT,
                         "Bucket POST must contain a field named 'key'.  If it is specified, "
                         "please check the order of the fields.");
    if (post_authenticate(r, c) != 0)
        return -1;
    struct slice policy = field(c, "policy");
    if (policy.ptr) {
        struct post_field *all = arena_calloc(r->arena, c->n_fields + 1, sizeof(*all));
        memcpy(all, c->fields, c->n_fields * sizeof(*all));
        all[c->n_fields] = (struct post_field){SLICE_LIT("bucket"), r->bucket};
        const char *msg = NULL;
        enum post_policy_status st = post_policy_check(policy, clock_now_ns() / 1000000000, all,
                                                       c->n_fields + 1, r->arena, &c->limits, &msg);
        if (st == POST_POLICY_INVALID)
            return post_fail(c, S3_ERR_INVALID_POLICY_DOCUMENT, msg);
        if (st == POST_POLICY_DENIED)
            return post_fail(c, S3_ERR_ACCESS_DENIED, msg);
    } else if (r->is_authenticated) {
        return post_fail(c, S3_ERR_INVALID_ARGUMENT,
                         "Bucket POST must contain a field named 'policy'.");
    }
    c->key = key_from_field(r, c, key);
    r->key = c->key;
    if (c->key.len && !key_is_writable(c->key))
        return post_fail(c, S3_ERR_INVALID_ARGUMENT,
                         "Object keys must be UTF-8 text without NUL characters");
    if (c->key.len == 0 || c->key.len > INDEX_MAX_KEY)
        return post_fail(c, c->key.len ? S3_ERR_KEY_TOO_LONG : S3_ERR_INVALID_ARGUMENT,
                         c->key.len ? NULL : "User key must have a length greater than 0.");
    /* Authorized as a PUT of the key, now that the principal is known. */
    r->has_bucket = false;
    r->has_grant = false;
    if (!s3_is_allowed(r, AUTH_ACTION_WRITE, c->key))
        return post_fail(c, S3_ERR_ACCESS_DENIED, NULL);
    if (!r->has_bucket)
        return post_fail(c, S3_ERR_NO_SUCH_BUCKET, NULL);
    c->bucket = r->bucket_rec;
    headers_from_fields(r, c);
    enum s3_error e = meta_from_request(r, &c->meta);
    if (e != S3_OK)
        return post_fail(c, e, NULL);
    if (post_choose_checksum(c) != 0)
        return -1;
    return 0;
}

/* Applies the tagging field (an XML Tagging document) and the ACL to the
 * metadata. Runs in the end step, where responding is allowed. */
static bool
post_meta_finish(struct s3_req *r, struct post_ctx *c)
{
    struct slice t = field(c, "tagging");
    if (t.ptr) {
        struct xml_tagging_request req;
        if (xml_parse_tagging(t.ptr, t.len, TAGS_OBJECT_MAX, r->arena, &req) != XML_IN_OK) {
            s3_respond_error(r, S3_ERR_MALFORMED_XML, NULL);
            return false;
        }
        struct s3_tag *tags = arena_calloc(r->arena, req.n_tags + 1, sizeof(*tags));
        for (size_t i = 0; i < req.n_tags; i++)
            tags[i] = (struct s3_tag){req.tags[i].key, req.tags[i].value};
        enum tags_error te = tags_validate(tags, req.n_tags, TAGS_OBJECT_MAX);
        if (te != TAGS_OK) {
            s3_respond_error(r, S3_ERR_INVALID_TAG, tags_error_message(te));
            return false;
        }
        struct meta nm;
        meta_tags_set(r->arena, &c->meta, tags, req.n_tags, &nm);
        c->meta = nm;
    }
    return s3_acl_from_request(r, &c->meta);
}

/* ======================================================================
 * Form callbacks
 * ====================================================================== */

static int
on_part(void *ctx, const struct form_part *part)
{
    struct s3_req *r = ctx;
    struct post_ctx *c = r->op_ctx;
    if (c->has_file)
        return 0; /* after the file: ignored */
    if (slice_eq_nocase(slice_from_cstr(part->name), "file")) {
        c->has_file = c->in_file = true;
        snprintf(c->filename, sizeof(c->filename), "%s", part->filename);
        snprintf(c->file_type, sizeof(c->file_type), "%s", part->content_type);
        if (post_judge(r, c) != 0)
            return -1;
        auth_checksum_init(&c->md5, AUTH_CK_MD5);
        c->has_md5 = true;
        if (!reserve_has_room(r->srv->reserves, r->user_id))
            return post_fail(c, S3_ERR_SLOW_DOWN,
                             "Too many uploads of this user are in flight; retry later.");
        int rc = storage_writer_create(r->srv->storage, UINT64_MAX, &c->writer);
        if (rc < 0)
            return post_fail(c, s3_error_from_errno(rc), NULL);
        c->is_ready = true;
        return 0;
    }
    if (c->n_fields == POST_FIELDS_COUNT_MAX)
        return post_fail(c, S3_ERR_MALFORMED_POST_REQUEST, "Too many fields.");
    c->in_field = true;
    c->fields[c->n_fields].name =
        slice_from_cstr(arena_strndup(r->arena, part->name, strlen(part->name)));
    c->value.len = 0;
    return 0;
}

static int
on_data(void *ctx, const char *data, size_t len)
{
    struct s3_req *r = ctx;
    struct post_ctx *c = r->op_ctx;
    if (c->in_field) {
        c->fields_len += len;
        if (c->fields_len > POST_FIELDS_MAX)
            return post_fail(c, S3_ERR_MALFORMED_POST_REQUEST,
                             "Your POST request fields preceeding the upload file was too large.");
        buf_append(&c->value, data, len);
        return 0;
    }
    if (!c->in_file)
        return 0;
    c->file_len += len;
    if (c->limits.has_range && c->file_len > c->limits.max_len)
        return post_fail(c, S3_ERR_ENTITY_TOO_LARGE, NULL);
    auth_checksum_update(&c->md5, data, len);
    if (c->has_ck)
        auth_checksum_update(&c->ck, data, len);
    int rc = storage_writer_write(c->writer, data, len);
    if (rc < 0)
        return post_fail(c, s3_error_from_errno(rc), NULL);
    if (storage_writer_reserved_len(c->writer) != c->seen_reserved) {
        uint64_t held = storage_writer_held_len(c->writer);
        if (!reserve_charge(r->srv->reserves, r->user_id, c->held_charged, held))
            return post_fail(c, S3_ERR_SLOW_DOWN, NULL);
        c->held_charged = held;
        c->seen_reserved = storage_writer_reserved_len(c->writer);
    }
    return 0;
}

static int
on_part_end(void *ctx)
{
    struct s3_req *r = ctx;
    struct post_ctx *c = r->op_ctx;
    if (c->in_field) {
        c->fields[c->n_fields].value = (struct slice){
            arena_strndup(r->arena, c->value.ptr ? c->value.ptr : "", c->value.len), c->value.len};
        c->n_fields++;
        c->in_field = false;
    } else if (c->in_file) {
        c->in_file = false;
    }
    return 0;
}

static const struct form_callbacks form_cb = {on_part, on_data, on_part_end};

/* A failure known before the body is in is answered at once and the
 * connection closed (r->is_body_error_final): the rest of a large upload
 * is not read only to be thrown away. */
static enum s3_error
post_body(struct s3_req *r, const char *data, size_t len)
{
    struct post_ctx *c = r->op_ctx;
    if (c->error != S3_OK || c->is_done)
        return c->error;
    enum form_status st = form_parser_feed(&c->parser, data, len, &form_cb, r);
    if (st == FORM_ERROR)
        post_fail(c, S3_ERR_MALFORMED_POST_REQUEST, NULL);
    else if (st == FORM_DONE)
        c->is_done = true;
    if (c->error != S3_OK) {
        post_release(r, c, false);
        r->is_body_error_final = true;
        r->body_error_msg = c->error_msg;
    }
    return c->error;
}

/* ======================================================================
 * The end: commit and answer
 * ====================================================================== */

static void
post_respond(struct s3_req *r, struct post_ctx *c, const char *etag_s)
{
    struct slice redirect = field(c, "success_action_redirect");
    if (!redirect.ptr)
        redirect = field(c, "redirect");
    struct slice status = field(c, "success_action_status");
    char *bucket = arena_strndup(r->arena, r->bucket.ptr, r->bucket.len);
    struct buf loc;
    struct slice host = c->host;
    buf_init(&loc);
    buf_printf(&loc, "http://%.*s/%s/", (int)MIN(host.len, 255), host.ptr ? host.ptr : "", bucket);
    uri_encode(&loc, c->key.ptr, c->key.len, true);
    char *location = arena_strndup(r->arena, loc.ptr, loc.len);
    buf_cleanup(&loc);
    if (redirect.len && (slice_has_prefix(redirect, SLICE_LIT("http://")) ||
                         slice_has_prefix(redirect, SLICE_LIT("https://")))) {
        struct buf u;
        buf_init(&u);
        buf_append(&u, redirect.ptr, redirect.len);
        buf_append_str(&u, memchr(redirect.ptr, '?', redirect.len) ? "&bucket=" : "?bucket=");
        uri_encode(&u, bucket, strlen(bucket), false);
        buf_append_str(&u, "&key=");
        uri_encode(&u, c->key.ptr, c->key.len, false);
        buf_append_str(&u, "&etag=");
        uri_encode(&u, etag_s, strlen(etag_s), false);
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        s3_resp_header(resp, "Location", arena_strndup(r->arena, u.ptr, u.len));
        s3_resp_header(resp, "ETag", etag_s);
        buf_cleanup(&u);
        s3_respond(r, 303, resp);
        return;
    }
    if (slice_eq(status, SLICE_LIT("201"))) {
        struct buf b;
        buf_init(&b);
        xml_begin(&b, "PostResponse");
        xml_elem_str(&b, "Location", location);
        xml_elem_str(&b, "Bucket", bucket);
        xml_elem(&b, "Key", c->key);
        xml_elem_str(&b, "ETag", etag_s);
        xml_end(&b, "PostResponse");
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(b.len, b.ptr, MHD_RESPMEM_MUST_COPY);
        buf_cleanup(&b);
        s3_resp_header(resp, "Content-Type", "application/xml");
        s3_resp_header(resp, "ETag", etag_s);
        s3_resp_header(resp, "Location", location);
        s3_respond(r, 201, resp);
        return;
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    s3_resp_header(resp, "ETag", etag_s);
    s3_resp_header(resp, "Location", location);
    s3_respond(r, slice_eq(status, SLICE_LIT("200")) ? 200 : 204, resp);
}

static void
post_end(struct s3_req *r)
{
    struct post_ctx *c = r->op_ctx;
    if (c->error == S3_OK && !c->is_done)
        post_fail(c, S3_ERR_MALFORMED_POST_REQUEST, NULL);
    if (c->error == S3_OK && !c->has_file)
        post_fail(c, S3_ERR_INVALID_ARGUMENT, "POST requires exactly one file upload per request.");
    if (c->error == S3_OK && c->limits.has_range && c->file_len < c->limits.min_len)
        post_fail(c, S3_ERR_ENTITY_TOO_SMALL, NULL);
    if (c->error != S3_OK) {
        s3_respond_error(r, c->error, c->error_msg);
        return;
    }
    if (!post_meta_finish(r, c))
        return;
    int rc = storage_writer_finish(c->writer);
    if (rc < 0) {
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
        return;
    }
    reserve_charge(r->srv->reserves, r->user_id, c->held_charged, 0);
    c->held_charged = 0;
    uint8_t etag[AUTH_CK_MAX_DIGEST];
    auth_checksum_final(&c->md5, etag);
    c->has_md5 = false;
    if (c->has_ck) {
        uint8_t dig[AUTH_CK_MAX_DIGEST];
        size_t n = auth_checksum_final(&c->ck, dig);
        c->has_ck = false;
        char *b64 = arena_alloc(r->arena, base64_encoded_len(n) + 1);
        size_t bl = base64_encode(dig, n, b64);
        if (!slice_eq(c->ck_expected, (struct slice){b64, bl})) {
            s3_respond_error(r, S3_ERR_BAD_DIGEST,
                             arena_sprintf(r->arena,
                                           "The %s you specified did not match the calculated "
                                           "checksum.",
                                           auth_checksum_name(c->ck_algo)));
            return;
        }
        struct meta nm = c->meta;
        nm.entries = arena_calloc(r->arena, c->meta.n + 2, sizeof(*nm.entries));
        memcpy(nm.entries, c->meta.entries, c->meta.n * sizeof(*nm.entries));
        nm.entries[nm.n++] = (struct meta_entry){slice_from_cstr(auth_checksum_header(c->ck_algo)),
                                                 (struct slice){b64, bl}};
        nm.entries[nm.n++] =
            (struct meta_entry){SLICE_LIT("x-amz-checksum-type"), SLICE_LIT("FULL_OBJECT")};
        c->meta = nm;
    }
    struct index_object obj;
    memset(&obj, 0, sizeof(obj));
    obj.size = c->file_len;
    obj.mtime_ns = clock_now_ns();
    memcpy(obj.etag, etag, 16);
    meta_encode(r->arena, &c->meta, &obj.meta, &obj.meta_len);
    const struct storage_extent *se;
    size_t n_ext = storage_writer_extents(c->writer, &se);
    obj.extents = extents_to_index(r->arena, se, n_ext);
    obj.n_extents = (uint32_t)n_ext;
    obj.sums = storage_writer_sums(c->writer, &obj.sums_len);
    struct index_op op = {
        .kind = INDEX_OP_PUT,
        .bucket_id = c->bucket.id,
        .key = c->key,
        .object = &obj,
        .arena = r->arena,
    };
    rc = committer_run(r->srv->committer, &op, 1);
    if (rc == 0)
        rc = op.result;
    if (rc < 0) {
        s3_respond_error(r, rc == -ENOENT ? S3_ERR_NO_SUCH_BUCKET : s3_error_from_errno(rc), NULL);
        return;
    }
    post_release(r, c, true);
    atomic_fetch_add(&r->srv->metrics.puts, 1);
    char etag_s[48];
    s3_format_etag(etag, 0, etag_s);
    post_respond(r, c, etag_s);
}

void
op_post_object(struct s3_req *r)
{
    char boundary[FORM_BOUNDARY_MAX + 1];
    if (!form_boundary_parse(s3_req_header(r, "content-type"), boundary)) {
        s3_respond_error(r, S3_ERR_PRECONDITION_FAILED,
                         "Bucket POST must be of the enclosure-type multipart/form-data");
        return;
    }
    struct post_ctx *c = arena_calloc(r->arena, 1, sizeof(*c));
    form_parser_init(&c->parser, boundary);
    buf_init(&c->value);
    r->op_ctx = c;
    r->on_cleanup = post_cleanup;
    r->payload_max = r->srv->cfg.max_object_size + POST_FORM_OVERHEAD;
    r->on_body = post_body;
    r->on_end = post_end;
}
