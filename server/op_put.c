/*
 * op_put.c: PutObject, UploadPart (the same streaming path) and
 * DeleteObject.
 *
 * PUT streams the decoded payload through the hashers (MD5 for the ETag,
 * plus the checksum the client asked for) into a storage writer, which
 * stages it in aligned buffers and writes it with io_uring into freshly
 * reserved extents. Only when the body is complete and every digest
 * matches is the object published, by one group commit (storage sync +
 * one index transaction). Any failure before that destroys the writer
 * uncommitted, which returns its extents: nothing becomes visible and no
 * space is leaked. The writer takes space and staging buffers only as bytes
 * arrive; what it holds ahead of them is charged to the caller's principal
 * (reserve.c) at each reservation step, and a principal past
 * reserve_max_per_principal gets 503 SlowDown, the upload's space released
 * at once. A tar's member index is built from the same payload bytes
 * (op_member.c) and committed with the object.
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
#include "server/hasher.h"
#include "server/http.h"
#include "server/lifecycle.h"
#include "server/meta.h"
#include "server/ops.h"
#include "server/rdma.h"
#include "server/req.h"
#include "server/part_layout.h"
#include "server/reserve.h"
#include "server/server.h"
#include "server/sse.h"
#include "server/util.h"
#include "server/versioning.h"
#include "storage/storage.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>

/* S3's limit for one part of a multipart upload. */
#define PUT_MAX_PART_SIZE (5ull << 30)
/* Bodies from this size on (or of unknown size) are hashed by the hashing
 * threads (hasher.c); smaller ones on the receiving thread, where a hand-off
 * would cost more than their hashing. */
#define PUT_HASHER_MIN_LEN (256u << 10)

static const enum auth_checksum_algo checksum_algos[] = {
    AUTH_CK_CRC32, AUTH_CK_CRC32C, AUTH_CK_CRC64NVME, AUTH_CK_SHA1, AUTH_CK_SHA256,
};

struct put_ctx {
    struct index_bucket bucket;
    /* UploadPart: the upload this part belongs to. */
    bool is_part;
    uint32_t part_number;
    struct index_upload upload;
    struct storage_writer *writer;
    uint64_t held_charged;  /* charged to the principal (reserve.c) */
    uint64_t seen_reserved; /* storage_writer_reserved_len at the last charge */
    char *inline_buf;
    size_t inline_len;
    bool is_inline;
    struct auth_checksum md5;
    bool has_md5;
    struct hasher_stream *hs; /* MD5 and 'ck' on the hashing threads instead */
    bool is_hash_lent;        /* 'hs' reads the writer's staging buffers */
    enum auth_checksum_algo ck_algo;
    struct auth_checksum ck;
    bool has_ck;
    struct slice ck_expected; /* base64 from a header, empty when from a trailer */
    bool is_ck_trailer;
    bool has_content_md5;
    uint8_t content_md5[16];
    bool has_declared_len;
    uint64_t declared_len;
    struct meta meta;
    bool if_none_match;
    bool has_if_match;
    uint8_t if_match[16];
    bool if_exists; /* If-Match (any): an absent key is NoSuchKey */
    bool has_if_none_match_etag;
    uint8_t if_none_match_etag[16];
    struct member_builder *members; /* a tar: its member index (op_member.c) */
    struct sse_obj sse;             /* encryption at rest (sse.c); mode SSE_NONE: none */
    struct sse_writer *sse_writer;
    uint8_t sse_salt[AUTH_SSE_SALT_LEN];
    uint32_t class_flags; /* x-amz-storage-class (tier.h); 0: STANDARD */
    /* The commit (put_end): the op and what it points at live here, in the
     * request's arena, until the committer is done with them; the answer
     * is built from them after it. */
    struct index_op op;
    struct index_object obj;
    struct index_part part;
    struct index_members members_index;
    uint8_t etag[16];
    struct slice ck_b64;
    char expiration[LIFECYCLE_HEADER_MAX]; /* x-amz-expiration; "": none */
};

/* Gives back what the upload holds: the writer's space and buffers (unless
 * 'is_committed') and its charge to the principal. */
static void
put_release(struct s3_req *r, struct put_ctx *c, bool is_committed)
{
    storage_writer_destroy(c->writer, is_committed);
    c->writer = NULL;
    reserve_charge(r->srv->reserves, r->user_id, c->held_charged, 0);
    c->held_charged = 0;
}

/* Re-charges the principal with what the writer holds now, after it
 * reserved a new step. Returns false when that passes the cap. */
static bool
put_recharge(struct s3_req *r, struct put_ctx *c)
{
    uint64_t held = storage_writer_held_len(c->writer);
    if (!reserve_charge(r->srv->reserves, r->user_id, c->held_charged, held))
        return false;
    c->held_charged = held;
    c->seen_reserved = storage_writer_reserved_len(c->writer);
    return true;
}

static void
put_cleanup(struct s3_req *r)
{
    struct put_ctx *c = r->op_ctx;
    if (!c)
        return;
    /* The stream first: it gives back the staging buffers lent to it
     * unhashed, so the writer need not wait for their hashing. */
    hasher_stream_destroy(c->hs);
    c->hs = NULL;
    put_release(r, c, false);
    member_builder_destroy(c->members);
    c->members = NULL;
    sse_writer_destroy(c->sse_writer);
    c->sse_writer = NULL;
    sse_obj_wipe(&c->sse);
    if (c->has_md5)
        auth_checksum_cleanup(&c->md5);
    if (c->has_ck)
        auth_checksum_cleanup(&c->ck);
    c->has_md5 = c->has_ck = false;
}

static enum s3_error
put_body(struct s3_req *r, const char *data, size_t len)
{
    struct put_ctx *c = r->op_ctx;
    if (c->has_declared_len && r->payload_len > c->declared_len)
        return S3_ERR_INCOMPLETE_BODY;
    if (c->is_hash_lent) {
        /* Hashed in the writer's staging buffers (put_tap_stage). */
    } else if (c->hs) {
        hasher_stream_write(c->hs, data, len);
    } else {
        auth_checksum_update(&c->md5, data, len);
        if (c->has_ck)
            auth_checksum_update(&c->ck, data, len);
    }
    if (c->members)
        member_builder_feed(c->members, data, len);
    if (c->is_inline) {
        memcpy(c->inline_buf + c->inline_len, data, len);
        c->inline_len += len;
        return S3_OK;
    }
    if (!c->writer)
        return S3_ERR_INTERNAL_ERROR; /* released after an earlier error */
    int rc = c->sse_writer ? sse_writer_write(c->sse_writer, c->writer, data, len)
                           : storage_writer_write(c->writer, data, len);
    if (rc < 0) {
        log_warn("request %s: write failed: %d", r->request_id, rc);
        put_release(r, c, false);
        return s3_error_from_errno(rc);
    }
    if (storage_writer_reserved_len(c->writer) != c->seen_reserved && !put_recharge(r, c)) {
        log_warn("request %s: principal over reserve_max_per_principal", r->request_id);
        put_release(r, c, false);
        return S3_ERR_SLOW_DOWN;
    }
    return S3_OK;
}

/* Whether 'v' is a well-formed value of checksum 'algo': the base64 of
 * exactly its digest (an empty value is not). */
static bool
checksum_value_is_valid(enum auth_checksum_algo algo, struct slice v)
{
    uint8_t tmp[AUTH_CK_MAX_DIGEST + 3];
    if (v.len == 0 || v.len > base64_encoded_len(AUTH_CK_MAX_DIGEST))
        return false;
    long n = base64_decode(v.ptr, v.len, tmp);
    return n > 0 && (size_t)n == auth_checksum_len(algo);
}

/* Picks the checksum the client sent or announced: a header with the value
 * (x-amz-checksum-ALGO), a trailer (x-amz-trailer: x-amz-checksum-ALGO), or
 * only the algorithm (x-amz-sdk-checksum-algorithm). */
static enum s3_error
put_choose_checksum(struct s3_req *r, struct put_ctx *c)
{
    c->ck_algo = AUTH_CK_NONE;
    for (size_t i = 0; i < ARRAY_LEN(checksum_algos); i++) {
        struct slice v = s3_req_header(r, auth_checksum_header(checksum_algos[i]));
        if (v.ptr) {
            if (c->ck_algo != AUTH_CK_NONE)
                return S3_ERR_INVALID_REQUEST;
            c->ck_algo = checksum_algos[i];
            c->ck_expected = v;
            if (!checksum_value_is_valid(c->ck_algo, v))
                return S3_ERR_INVALID_CHECKSUM;
        }
    }
    struct slice trailer = s3_req_header(r, "x-amz-trailer");
    if (trailer.ptr && c->ck_algo == AUTH_CK_NONE) {
        for (size_t i = 0; i < ARRAY_LEN(checksum_algos); i++)
            if (slice_eq_nocase(trailer, auth_checksum_header(checksum_algos[i]))) {
                c->ck_algo = checksum_algos[i];
                c->is_ck_trailer = true;
            }
        if (c->ck_algo == AUTH_CK_NONE || !r->is_chunked_payload)
            return S3_ERR_INVALID_REQUEST;
    }
    struct slice sdk = s3_req_header(r, "x-amz-sdk-checksum-algorithm");
    if (sdk.ptr && c->ck_algo == AUTH_CK_NONE) {
        c->ck_algo = auth_checksum_from_name(sdk);
        if (c->ck_algo == AUTH_CK_NONE || c->ck_algo == AUTH_CK_MD5)
            return S3_ERR_INVALID_REQUEST;
    }
    if (c->ck_algo != AUTH_CK_NONE) {
        auth_checksum_init(&c->ck, c->ck_algo);
        c->has_ck = true;
    }
    return S3_OK;
}

/* Adds a header entry to the request's metadata (names are lower-case). */
static void
meta_add(struct s3_req *r, struct meta *m, const char *name, struct slice value)
{
    struct meta_entry *e = arena_calloc(r->arena, m->n + 1, sizeof(*e));
    if (m->n)
        memcpy(e, m->entries, m->n * sizeof(*e));
    e[m->n].name = slice_from_cstr(arena_strndup(r->arena, name, strlen(name)));
    e[m->n].value =
        (struct slice){arena_strndup(r->arena, value.ptr ? value.ptr : "", value.len), value.len};
    m->entries = e;
    m->n++;
}

/* Finishes the digests and compares them with what the client declared. */
static enum s3_error
put_verify(struct s3_req *r, struct put_ctx *c, uint8_t etag[16], struct slice *ck_b64)
{
    uint8_t md5[AUTH_CK_MAX_DIGEST];
    uint8_t dig[AUTH_CK_MAX_DIGEST];
    size_t n = 0;
    if (c->hs)
        n = hasher_stream_finish(c->hs, md5, dig); /* waits for the hashing threads */
    else
        auth_checksum_final(&c->md5, md5);
    c->has_md5 = false;
    memcpy(etag, md5, 16);
    if (c->has_content_md5 && !auth_equal_ct(md5, c->content_md5, 16))
        return S3_ERR_BAD_DIGEST;
    *ck_b64 = SLICE_NULL;
    if (!c->has_ck)
        return S3_OK;
    if (!c->hs)
        n = auth_checksum_final(&c->ck, dig);
    c->has_ck = false;
    char *b64 = arena_alloc(r->arena, base64_encoded_len(n) + 1);
    size_t bl = base64_encode(dig, n, b64);
    *ck_b64 = (struct slice){b64, bl};
    struct slice expected = c->ck_expected;
    if (c->is_ck_trailer) {
        /* Announced in x-amz-trailer: it must come, and be well-formed
         * (absent and empty read the same). */
        expected = auth_chunked_trailer(&r->chunked, auth_checksum_header(c->ck_algo));
        if (!checksum_value_is_valid(c->ck_algo, expected))
            return S3_ERR_INVALID_CHECKSUM;
    }
    if (expected.len && !slice_eq(expected, *ck_b64))
        return S3_ERR_BAD_DIGEST;
    return S3_OK;
}

/* Converts a finished writer's extents for the index (in the arena). */
static void
writer_extents(struct s3_req *r, struct storage_writer *w, const struct index_extent **out,
               uint32_t *n_out, const uint8_t **sums, size_t *sums_len)
{
    *out = NULL;
    *n_out = 0;
    *sums = NULL;
    *sums_len = 0;
    if (!w)
        return;
    const struct storage_extent *se;
    size_t n = storage_writer_extents(w, &se);
    *out = extents_to_index(r->arena, se, n);
    *n_out = (uint32_t)n;
    *sums = storage_writer_sums(w, sums_len);
}

/* Answers the commit of 'c->op' ('rc' from committer_run or a
 * committer_submit callback) and, when it applied, gives the writer's
 * extents to the index. In the callback it runs on the committer thread,
 * ahead of the next batch: nothing here may block or take long (the
 * storage-class move, which does, never comes here asynchronously). */
static void
put_answer(struct s3_req *r, int rc)
{
    struct put_ctx *c = r->op_ctx;
    if (rc == 0)
        rc = c->op.result;
    if (rc < 0) {
        enum s3_error e = s3_error_from_errno(rc);
        if (rc == -ENOENT)
            e = c->is_part ? S3_ERR_NO_SUCH_UPLOAD : S3_ERR_NO_SUCH_BUCKET;
        s3_respond_error(r, e, NULL);
        return; /* cleanup destroys the writer uncommitted */
    }
    put_release(r, c, true);
    bool is_moved = false;
    if (!c->is_part) {
        atomic_fetch_add(&r->srv->metrics.puts, 1);
        is_moved =
            c->class_flags && s3_storage_class_apply(r, c->bucket.id, c->etag, c->class_flags) == 0;
    }
    char etag_s[48];
    s3_format_etag(c->etag, 0, etag_s);
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    s3_resp_header(resp, "ETag", etag_s);
    if (!c->is_part)
        s3_version_result_headers(r, resp, c->op.result_version_flags, c->op.result_version_id);
    if (is_moved)
        s3_resp_header(resp, "x-amz-storage-class", tier_class_name(r->srv->tiers, c->class_flags));
    if (c->ck_b64.len) {
        s3_resp_header(resp, auth_checksum_header(c->ck_algo),
                       arena_strndup(r->arena, c->ck_b64.ptr, c->ck_b64.len));
        if (!c->is_part)
            s3_resp_header(resp, "x-amz-checksum-type", "FULL_OBJECT");
    }
    sse_resp_headers(resp, &c->sse);
    if (c->expiration[0])
        s3_resp_header(resp, "x-amz-expiration", c->expiration);
    s3_respond(r, 200, resp);
}

/* committer_submit's callback (committer thread): the answer, then the
 * connection goes back to its event loop. */
static void
put_committed(void *arg, int rc)
{
    struct s3_req *r = arg;
    put_answer(r, rc);
    http_step_release(r);
}

/* Publishes 'c->op' and answers. On a worker the op goes to the committer
 * and this step returns at once: the worker is free for the next request
 * while the commit waits for its batch, and the committer's callback
 * answers and resumes the connection (one thread hop fewer than a worker
 * waking up only to resume it). A PUT with a storage-class move (it blocks
 * after the commit), and any without the offload pool
 * (thread_per_connection), wait in committer_run as before. */
static void
put_commit(struct s3_req *r, struct put_ctx *c)
{
    if (r->is_offloaded && !c->class_flags) {
        r->is_end_handed_off = true;
        http_step_hold(r);
        committer_submit(r->srv->committer, &c->op, 1, put_committed, r);
        return; /* r is the committer's now */
    }
    put_answer(r, committer_run(r->srv->committer, &c->op, 1));
}

/* UploadPart: publishes the part (replacing an earlier upload of the same
 * number, whose extents are freed). */
static void
put_end_part(struct s3_req *r, struct put_ctx *c)
{
    struct meta pm = {NULL, 0};
    if (c->ck_b64.len)
        meta_add(r, &pm, auth_checksum_header(c->ck_algo), c->ck_b64);
    struct index_part *part = &c->part;
    part->number = c->part_number;
    part->size = r->payload_len;
    part->mtime_ns = clock_now_ns();
    memcpy(part->etag, c->etag, 16);
    writer_extents(r, c->writer, &part->extents, &part->n_extents, &part->sums, &part->sums_len);
    if (c->sse.mode)
        meta_add(r, &pm, META_SSE_SEGMENT,
                 (struct slice){(const char *)c->sse_salt, AUTH_SSE_SALT_LEN});
    meta_encode(r->arena, &pm, &part->meta, &part->meta_len);
    c->op = (struct index_op){
        .kind = INDEX_OP_PART_PUT,
        .upload_id = c->upload.upload_id,
        .part = part,
        .arena = r->arena,
    };
    put_commit(r, c);
}

static void
put_end(struct s3_req *r)
{
    struct put_ctx *c = r->op_ctx;
    if (c->has_declared_len && r->payload_len != c->declared_len) {
        s3_respond_error(r, S3_ERR_INCOMPLETE_BODY, NULL);
        return;
    }
    if (c->writer) {
        int rc = c->sse_writer ? sse_writer_finish(c->sse_writer, c->writer) : 0;
        if (rc == 0)
            rc = storage_writer_finish(c->writer);
        if (rc < 0) {
            log_warn("request %s: writer finish failed: %d", r->request_id, rc);
            s3_respond_error(r, s3_error_from_errno(rc), NULL);
            return;
        }
        /* Finished: it holds no more than the bytes it was given. */
        reserve_charge(r->srv->reserves, r->user_id, c->held_charged, 0);
        c->held_charged = 0;
    }
    enum s3_error e = put_verify(r, c, c->etag, &c->ck_b64);
    if (e != S3_OK) {
        char msg[128];
        snprintf(msg, sizeof(msg), "The %s you specified did not match the calculated checksum.",
                 c->has_content_md5 && !c->ck_b64.len ? "Content-MD5"
                                                      : auth_checksum_name(c->ck_algo));
        s3_respond_error(r, e, e == S3_ERR_BAD_DIGEST ? msg : NULL);
        return;
    }
    sse_etag(&c->sse, c->etag);
    if (c->is_part) {
        put_end_part(r, c);
        return;
    }
    if (c->ck_b64.len) {
        meta_add(r, &c->meta, auth_checksum_header(c->ck_algo), c->ck_b64);
        meta_add(r, &c->meta, "x-amz-checksum-type", SLICE_LIT("FULL_OBJECT"));
    }

    struct index_object *obj = &c->obj;
    obj->size = r->payload_len;
    obj->mtime_ns = clock_now_ns();
    memcpy(obj->etag, c->etag, 16);
    if (c->sse.mode)
        sse_meta_set(r->arena, &c->meta, sse_record_format(r->arena, &c->sse, c->sse_salt, 1));
    meta_encode(r->arena, &c->meta, &obj->meta, &obj->meta_len);
    if (c->is_inline) {
        obj->inline_data = (const uint8_t *)c->inline_buf;
        obj->inline_len = c->inline_len;
    } else {
        writer_extents(r, c->writer, &obj->extents, &obj->n_extents, &obj->sums, &obj->sums_len);
    }
    const char *lock_msg;
    enum s3_error le = s3_lock_for_write(r, &c->bucket, obj, obj->mtime_ns, true, &lock_msg);
    if (le != S3_OK) {
        s3_respond_error(r, le, lock_msg);
        return; /* cleanup destroys the writer uncommitted */
    }
    c->op = (struct index_op){
        .kind = INDEX_OP_PUT,
        .bucket_id = c->bucket.id,
        .key = r->key,
        .object = obj,
        .if_none_match = c->if_none_match,
        .has_if_match = c->has_if_match,
        .if_exists = c->if_exists,
        .has_if_none_match_etag = c->has_if_none_match_etag,
        .arena = r->arena,
    };
    memcpy(c->op.if_match_etag, c->if_match, 16);
    memcpy(c->op.if_none_match_etag, c->if_none_match_etag, 16);
    if (c->members) {
        /* Committed with the object: never a version without its index. */
        member_builder_finish(c->members, &c->members_index);
        c->op.members = &c->members_index;
    }
    /* The answer's x-amz-expiration, here rather than after the commit,
     * where it could hold up the committer (a bucket's first PUT reads its
     * lifecycle from the index). The tags just stored (x-amz-tagging)
     * select Tag-filtered rules. */
    struct s3_tag *tags;
    size_t n_tags;
    if (!meta_tags_get(&c->meta, r->arena, &tags, &n_tags))
        n_tags = 0;
    if (!lifecycle_expiration_header(r->srv->lifecycle, c->bucket.id, r->key, obj->size,
                                     obj->mtime_ns, tags, n_tags, c->expiration,
                                     sizeof(c->expiration)))
        c->expiration[0] = '\0';
    put_commit(r, c);
}

/* Reads the declared payload length: X-Amz-Decoded-Content-Length for
 * aws-chunked bodies, else Content-Length. A body with neither (plain
 * Transfer-Encoding: chunked) has an unknown length. */
static enum s3_error
put_declared_len(struct s3_req *r, struct put_ctx *c)
{
    if (r->rdma) {
        /* The body comes over RDMA (rdma.c): the token says how long. */
        c->declared_len = s3_rdma_len(r);
        c->has_declared_len = true;
        return S3_OK;
    }
    struct slice v = r->is_chunked_payload ? s3_req_header(r, "x-amz-decoded-content-length")
                                           : s3_req_header(r, "content-length");
    if (v.ptr) {
        if (parse_u64(v, UINT64_MAX, &c->declared_len) != 0)
            return S3_ERR_INVALID_ARGUMENT;
        c->has_declared_len = true;
        return S3_OK;
    }
    if (r->is_chunked_payload)
        return S3_ERR_MISSING_CONTENT_LENGTH;
    struct slice te = s3_req_header(r, "transfer-encoding");
    if (!te.ptr)
        return S3_ERR_MISSING_CONTENT_LENGTH;
    return S3_OK;
}

/* Conditional PUT (RFC 9110 13.1, as S3): If-None-Match: * (the key must
 * not exist) or an ETag (the current object must not have it); If-Match:
 * * (the key must exist) or an ETag (the current object must have it).
 * If-Match on an absent key is NoSuchKey. Checked in the commit. */
static enum s3_error
put_conditions(struct s3_req *r, struct put_ctx *c)
{
    struct slice inm = slice_trim(s3_req_header(r, "if-none-match"));
    if (inm.ptr) {
        if (slice_eq(inm, SLICE_LIT("*")))
            c->if_none_match = true;
        else if (s3_parse_etag(inm, c->if_none_match_etag))
            c->has_if_none_match_etag = true;
        else
            return S3_ERR_PRECONDITION_FAILED;
    }
    struct slice im = slice_trim(s3_req_header(r, "if-match"));
    if (im.ptr) {
        c->if_exists = true;
        if (slice_eq(im, SLICE_LIT("*")))
            return S3_OK;
        if (!s3_parse_etag(im, c->if_match))
            return S3_ERR_PRECONDITION_FAILED;
        c->has_if_match = true;
    }
    return S3_OK;
}

/* The encryption of the upload: asked for by a PutObject (or its bucket's
 * default), or the multipart upload's for a part (whose SSE-C key must
 * come again). Responds and returns false on an error. */
static bool
put_sse_begin(struct s3_req *r, struct put_ctx *c)
{
    struct meta um;
    if (!c->is_part)
        return sse_for_write(r, &c->bucket, &c->sse);
    if (!meta_decode(r->arena, c->upload.meta, c->upload.meta_len, &um)) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return false;
    }
    return sse_for_read(r, &um, false, &c->sse);
}

/* Flow control of the hashing stream (hasher.c): too far ahead, the upload
 * stops reading its connection; the event thread serves the others. */
static void
put_pause(void *arg)
{
    struct s3_req *r = arg;
    /* The end step (on a worker, the connection suspended already) reads
     * nothing more: it only waits for the hashing. */
    if (!r->is_offloaded)
        http_body_pause(r);
}

static void
put_resume(void *arg)
{
    struct s3_req *r = arg;
    if (!r->is_offloaded)
        http_body_resume(r);
}

/* The writer's tap (storage_writer_tap): each staging buffer, once full,
 * is lent to the hashing stream, which gives it back once hashed. */
static void
put_tap_release(void *arg)
{
    storage_writer_stage_release(arg);
}

static void
put_tap_stage(void *arg, const uint8_t *data, size_t len, bool is_last, struct storage_stage *stage)
{
    struct put_ctx *c = arg;
    hasher_stream_lend(c->hs, data, len, is_last, stage ? put_tap_release : NULL, stage);
}

static void
put_tap_hurry(void *arg)
{
    struct put_ctx *c = arg;
    if (c->hs)
        hasher_stream_hurry(c->hs);
}

/* Sets up the streaming body of a PutObject or (with 'c->is_part') an
 * UploadPart: validation, digests, and the storage writer. */
static void
put_begin(struct s3_req *r, struct put_ctx *c)
{
    enum s3_error e = put_declared_len(r, c);
    if (e == S3_OK && !c->is_part)
        e = put_conditions(r, c);
    if (e == S3_OK && !c->is_part)
        e = meta_from_request(r, &c->meta);
    /* A part is capped like an object, and at S3's 5 GiB; the body
     * pipeline enforces the limit whatever the framing. */
    uint64_t max = r->srv->cfg.max_object_size;
    if (c->is_part)
        max = MIN(max, PUT_MAX_PART_SIZE);
    if (e == S3_OK && c->has_declared_len && c->declared_len > max)
        e = S3_ERR_ENTITY_TOO_LARGE;
    struct slice cmd5 = s3_req_header(r, "content-md5");
    if (e == S3_OK && cmd5.ptr) {
        uint8_t tmp[32];
        if (cmd5.len > 40 || base64_decode(cmd5.ptr, cmd5.len, tmp) != 16)
            e = S3_ERR_INVALID_DIGEST;
        memcpy(c->content_md5, tmp, 16);
        c->has_content_md5 = true;
    }
    if (e == S3_OK)
        e = put_choose_checksum(r, c);
    if (e == S3_OK && c->is_part && !c->has_ck) {
        /* The upload announced an algorithm: compute it for every part so
         * the whole-object checksum can be formed at completion. */
        struct meta um;
        if (meta_decode(r->arena, c->upload.meta, c->upload.meta_len, &um)) {
            struct slice alg = meta_get(&um, "x-amz-checksum-algorithm");
            if (alg.ptr) {
                c->ck_algo = auth_checksum_from_name(alg);
                if (c->ck_algo != AUTH_CK_NONE) {
                    auth_checksum_init(&c->ck, c->ck_algo);
                    c->has_ck = true;
                }
            }
        }
    }
    if (e != S3_OK) {
        s3_respond_error(r, e, NULL);
        return;
    }
    if (!c->is_part && !s3_tagging_from_request(r, &c->meta))
        return;
    if (!c->is_part && !s3_acl_from_request(r, &c->meta))
        return;
    if (!c->is_part && !s3_storage_class_from_request(r, &c->class_flags))
        return;
    if (!reserve_has_room(r->srv->reserves, r->user_id)) {
        s3_respond_error(r, S3_ERR_SLOW_DOWN,
                         "Too many uploads of this user are in flight; retry later.");
        return;
    }
    if (!put_sse_begin(r, c))
        return;
    r->op_ctx = c;
    r->on_cleanup = put_cleanup;
    auth_checksum_init(&c->md5, AUTH_CK_MD5);
    c->has_md5 = true;
    if (!c->is_part && !c->sse.mode && c->has_declared_len &&
        c->declared_len <= r->srv->cfg.inline_max) {
        c->is_inline = true;
        c->inline_buf = arena_alloc(r->arena, c->declared_len + 1);
    } else if (!c->has_declared_len || c->declared_len > 0) {
        uint64_t hint = c->has_declared_len ? c->declared_len : UINT64_MAX;
        if (c->sse.mode && c->has_declared_len)
            hint = sse_stored_len(hint);
        int rc = storage_writer_create(r->srv->storage, hint, &c->writer);
        if (rc < 0) {
            s3_respond_error(r, s3_error_from_errno(rc), NULL);
            return;
        }
        /* Large bodies: packages sealed on workers, behind the receive. */
        struct offload *seal_on =
            !c->has_declared_len || c->declared_len >= PUT_HASHER_MIN_LEN ? r->srv->offload : NULL;
        if (c->sse.mode &&
            !(c->sse_writer = sse_writer_create_pipelined(&c->sse, c->sse_salt, seal_on))) {
            s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
            return;
        }
        /* Plain parts only: an encrypted part's stored length is not its
         * declared one (each package carries a tag). */
        if (c->is_part && c->has_declared_len && !c->sse.mode)
            part_layout_place(r->srv->part_layout, r->srv->storage, c->upload.upload_id,
                              c->part_number, c->declared_len, c->writer);
    }
    if (r->srv->hasher && !c->is_inline &&
        (!c->has_declared_len || c->declared_len >= PUT_HASHER_MIN_LEN)) {
        /* The receiving thread only copies; MD5 and the checksum run on a
         * hashing thread, in a lane shared with other uploads. */
        c->hs = hasher_stream_create(r->srv->hasher, c->has_ck ? c->ck_algo : AUTH_CK_NONE,
                                     r->srv->offload ? put_pause : NULL, put_resume, r);
        auth_checksum_cleanup(&c->md5);
        c->has_md5 = false;
        if (c->has_ck)
            auth_checksum_cleanup(&c->ck); /* c->has_ck still says there is one */
        /* A plain body is staged as it came: the thread hashes it in the
         * staging buffers, saving the event loop a copy per byte. An
         * encrypted one is staged sealed, so its plaintext is copied. */
        if (c->writer && !c->sse_writer) {
            struct storage_tap tap = {put_tap_stage, put_tap_hurry, c};
            size_t n_bufs = storage_writer_tap(c->writer, &tap);
            hasher_stream_borrow(c->hs, n_bufs);
            c->is_hash_lent = true;
        }
    }
    if (!c->is_part && !c->sse.mode && member_put_is_tar(r))
        c->members = member_builder_create();
    r->payload_max = max;
    r->on_body = put_body;
    r->on_end = put_end;
}

void
op_put_object(struct s3_req *r)
{
    /* A PUT with x-amz-copy-source never gets here: the router sends it to
     * the CopyObject route, which runs on a worker. */
    struct put_ctx *c = arena_calloc(r->arena, 1, sizeof(*c));
    if (!s3_rdma_begin(r) || !s3_bucket_lookup(r, &c->bucket))
        return;
    put_begin(r, c);
}

void
op_upload_part(struct s3_req *r)
{
    struct put_ctx *c = arena_calloc(r->arena, 1, sizeof(*c));
    if (!s3_bucket_lookup(r, &c->bucket))
        return;
    if (!s3_multipart_lookup(r, &c->bucket, &c->upload, &c->part_number))
        return;
    if (s3_req_has_header(r, "x-amz-copy-source")) {
        op_upload_part_copy(r, &c->bucket, &c->upload, c->part_number);
        return;
    }
    c->is_part = true;
    if (!s3_rdma_begin(r))
        return;
    put_begin(r, c);
}

void
op_delete_object(struct s3_req *r)
{
    struct index_bucket bk;
    struct index_op op = {
        .kind = INDEX_OP_DELETE,
        .key = r->key,
        .now_ns = clock_now_ns(),
        .arena = r->arena,
    };
    if (!s3_req_version_id(r, &op.has_version_id, op.version_id))
        return;
    if (!s3_bucket_lookup(r, &bk))
        return;
    op.bucket_id = bk.id;
    op.bypass_governance = s3_bypass_governance(r);
    int rc = committer_run(r->srv->committer, &op, 1);
    if (rc == 0)
        rc = op.result;
    if (rc == -ENOENT) {
        s3_respond_error(r, S3_ERR_NO_SUCH_BUCKET, NULL);
    } else if (rc == -EACCES) {
        s3_respond_error(r, S3_ERR_ACCESS_DENIED, NULL);
    } else if (rc < 0) {
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
    } else {
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        if (op.has_version_id && !op.result_version_flags) {
            /* Nothing removed: S3 echoes the id asked for. */
            s3_resp_header(resp, "x-amz-version-id",
                           arena_strndup(r->arena, s3_req_param_value(r, "versionId").ptr,
                                         s3_req_param_value(r, "versionId").len));
        }
        s3_version_result_headers(r, resp, op.result_version_flags, op.result_version_id);
        s3_respond(r, 204, resp);
    }
}
