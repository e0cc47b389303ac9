/*
 * op_multipart.c: CreateMultipartUpload, UploadPartCopy, CompleteMultipartUpload,
 * AbortMultipartUpload, ListParts, ListMultipartUploads (UploadPart shares
 * PutObject's streaming path in op_put.c).
 *
 * Every part lands in its own extents. Completion is metadata only: the
 * object record is the parts' extent lists joined in order, published by
 * one index transaction that also drops the upload and frees the parts
 * that were not used. Until that commit the object is not visible; a crash
 * before it leaves the upload resumable, a crash after it leaves the whole
 * object.
 *
 * ETag of the object: md5(concat(part md5s))-N. Checksums: with an upload
 * algorithm, each part has its checksum; the object's is COMPOSITE
 * (hash of the concatenated part checksums, "-N") or, for the CRCs when
 * asked, FULL_OBJECT (the parts' CRCs combined).
 */
#include "config.h"

#include "auth/auth.h"
#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/acl.h"
#include "server/body.h"
#include "server/commit.h"
#include "server/errors.h"
#include "server/extents.h"
#include "server/meta.h"
#include "server/ops.h"
#include "server/req.h"
#include "server/server.h"
#include "server/sse.h"
#include "server/util.h"
#include "server/versioning.h"
#include "server/xml_in.h"
#include "server/xml_out.h"
#include "storage/storage.h"

#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>

static struct slice
param(const struct s3_req *r, const char *name)
{
    const struct s3_param *p = s3_req_param(r, name);
    return p ? p->value : SLICE_NULL;
}

bool
s3_multipart_lookup(struct s3_req *r, const struct index_bucket *bk, struct index_upload *upload,
                    uint32_t *part_number)
{
    struct slice id = param(r, "uploadId");
    char idz[INDEX_UPLOAD_ID_LEN + 1];
    bool is_ok = id.len == INDEX_UPLOAD_ID_LEN;
    if (is_ok) {
        memcpy(idz, id.ptr, id.len);
        idz[id.len] = '\0';
        is_ok = index_upload_get(r->srv->index, idz, r->arena, upload) == 0 &&
                upload->bucket_id == bk->id && slice_eq(upload->key, r->key);
    }
    if (!is_ok) {
        s3_respond_error(r, S3_ERR_NO_SUCH_UPLOAD, NULL);
        return false;
    }
    if (part_number) {
        uint64_t n;
        if (parse_u64(param(r, "partNumber"), INDEX_MAX_PARTS, &n) != 0 || n == 0) {
            s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                             "Part number must be an integer between 1 and 10000, inclusive");
            return false;
        }
        *part_number = (uint32_t)n;
    }
    return true;
}

/* ======================================================================
 * CreateMultipartUpload
 * ====================================================================== */

/* The upload's metadata entry carrying the Object Lock to apply. */
#define MULTIPART_LOCK_META META_INTERNAL_PREFIX "lock"

static void
meta_push(struct s3_req *r, struct meta *m, const char *name, struct slice value)
{
    struct meta_entry *e = arena_calloc(r->arena, m->n + 1, sizeof(*e));
    if (m->n)
        memcpy(e, m->entries, m->n * sizeof(*e));
    e[m->n].name = slice_from_cstr(name);
    e[m->n].value = value;
    m->entries = e;
    m->n++;
}

void
op_create_multipart(struct s3_req *r)
{
    struct index_bucket bk;
    if (!s3_bucket_lookup(r, &bk))
        return;
    struct meta m;
    enum s3_error e = meta_from_request(r, &m);
    if (e != S3_OK) {
        s3_respond_error(r, e, NULL);
        return;
    }
    if (!s3_tagging_from_request(r, &m) || !s3_acl_from_request(r, &m))
        return;
    /* The upload's data key, wrapped; each part is a segment under it. */
    struct sse_obj sse;
    if (!sse_for_write(r, &bk, &sse))
        return;
    if (sse.mode)
        sse_meta_set(r->arena, &m, sse_record_format(r->arena, &sse, NULL, 0));
    sse_obj_wipe(&sse);
    uint32_t class_flags;
    if (!s3_storage_class_from_request(r, &class_flags))
        return;
    if (class_flags) /* the completed object moves there */
        meta_push(r, &m, TIER_META_STORAGE_CLASS,
                  slice_from_cstr(tier_class_name(r->srv->tiers, class_flags)));
    struct slice alg = s3_req_header(r, "x-amz-checksum-algorithm");
    struct slice type = s3_req_header(r, "x-amz-checksum-type");
    enum auth_checksum_algo algo = AUTH_CK_NONE;
    if (alg.ptr) {
        algo = auth_checksum_from_name(alg);
        if (algo == AUTH_CK_NONE || algo == AUTH_CK_MD5) {
            s3_respond_error(r, S3_ERR_INVALID_REQUEST,
                             "Checksum algorithm provided is unsupported.");
            return;
        }
    }
    bool is_crc = algo == AUTH_CK_CRC32 || algo == AUTH_CK_CRC32C || algo == AUTH_CK_CRC64NVME;
    const char *type_name = NULL;
    if (type.ptr) {
        if (slice_eq_nocase(type, "FULL_OBJECT") && is_crc) {
            type_name = "FULL_OBJECT";
        } else if (slice_eq_nocase(type, "COMPOSITE") && algo != AUTH_CK_NONE &&
                   algo != AUTH_CK_CRC64NVME) {
            type_name = "COMPOSITE";
        } else {
            s3_respond_error(r, S3_ERR_INVALID_REQUEST,
                             "The checksum type is not supported for this algorithm.");
            return;
        }
    } else if (algo != AUTH_CK_NONE) {
        type_name = algo == AUTH_CK_CRC64NVME ? "FULL_OBJECT" : "COMPOSITE";
    }
    if (algo != AUTH_CK_NONE) {
        meta_push(r, &m, "x-amz-checksum-algorithm", slice_from_cstr(auth_checksum_name(algo)));
        meta_push(r, &m, "x-amz-checksum-type", slice_from_cstr(type_name));
    }
    /* Object Lock asked for now applies at completion: kept with the
     * upload as "mode until_ns hold". */
    struct index_object lk;
    const char *lock_msg;
    memset(&lk, 0, sizeof(lk));
    e = s3_lock_for_write(r, &bk, &lk, clock_now_ns(), false, &lock_msg);
    if (e != S3_OK) {
        s3_respond_error(r, e, lock_msg);
        return;
    }
    if (lk.lock_mode || lk.has_legal_hold)
        meta_push(r, &m, MULTIPART_LOCK_META,
                  slice_from_cstr(arena_sprintf(r->arena, "%u %" PRId64 " %d", lk.lock_mode,
                                                lk.retain_until_ns, lk.has_legal_hold ? 1 : 0)));

    /* Time-ordered id: 8 bytes of initiation time, 8 random bytes. */
    struct index_upload up;
    memset(&up, 0, sizeof(up));
    up.initiated_ns = clock_now_ns();
    uint8_t raw[16];
    for (int i = 0; i < 8; i++)
        raw[i] = (uint8_t)((uint64_t)up.initiated_ns >> (56 - 8 * i));
    if (getrandom(raw + 8, 8, 0) != 8) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    hex_encode(raw, 16, up.upload_id);
    up.bucket_id = bk.id;
    up.key = r->key;
    meta_encode(r->arena, &m, &up.meta, &up.meta_len);
    struct index_op op = {.kind = INDEX_OP_UPLOAD_CREATE, .upload = &up, .arena = r->arena};
    int rc = committer_run(r->srv->committer, &op, 1);
    if (rc == 0)
        rc = op.result;
    if (rc < 0) {
        s3_respond_error(r, rc == -ENOENT ? S3_ERR_NO_SUCH_BUCKET : s3_error_from_errno(rc), NULL);
        return;
    }
    struct buf b;
    buf_init(&b);
    xml_begin(&b, "InitiateMultipartUploadResult");
    xml_elem(&b, "Bucket", r->bucket);
    xml_elem(&b, "Key", r->key);
    xml_elem_str(&b, "UploadId", up.upload_id);
    xml_end(&b, "InitiateMultipartUploadResult");
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(b.len, b.ptr, MHD_RESPMEM_MUST_FREE);
    s3_resp_header(resp, "Content-Type", "application/xml");
    if (algo != AUTH_CK_NONE) {
        s3_resp_header(resp, "x-amz-checksum-algorithm", auth_checksum_name(algo));
        s3_resp_header(resp, "x-amz-checksum-type", type_name);
    }
    sse_resp_headers(resp, &sse);
    s3_respond(r, 200, resp);
}

/* ======================================================================
 * UploadPartCopy
 * ====================================================================== */

/* Parses "bytes=first-last" of x-amz-copy-source-range against 'size'. */
static bool
parse_copy_range(struct slice v, uint64_t size, uint64_t *first, uint64_t *len)
{
    if (!slice_has_prefix(v, SLICE_LIT("bytes=")))
        return false;
    struct slice rest = {v.ptr + 6, v.len - 6};
    const char *dash = memchr(rest.ptr, '-', rest.len);
    if (!dash)
        return false;
    uint64_t a, b;
    if (parse_u64((struct slice){rest.ptr, (size_t)(dash - rest.ptr)}, UINT64_MAX, &a) != 0 ||
        parse_u64((struct slice){dash + 1, rest.len - (size_t)(dash - rest.ptr) - 1}, UINT64_MAX,
                  &b) != 0)
        return false;
    if (a > b || b >= size)
        return false;
    *first = a;
    *len = b - a + 1;
    return true;
}

/* A well-formed "bytes=first-last" whose bytes are not all in the source:
 * InvalidRange, as S3 answers (a malformed range is InvalidArgument). */
static bool
copy_range_is_outside(struct slice v, uint64_t size)
{
    uint64_t first, len;
    return parse_copy_range(v, UINT64_MAX, &first, &len) && first + len > size;
}

void
op_upload_part_copy(struct s3_req *r, const struct index_bucket *bk,
                    const struct index_upload *upload, uint32_t part_number)
{
    (void)bk;
    struct index_bucket src_bk;
    struct slice sk;
    struct index_object src;
    struct meta src_meta, um;
    struct sse_obj src_sse = {.mode = SSE_NONE}, dst_sse = {.mode = SSE_NONE};
    if (!s3_copy_source_lookup(r, &src_bk, &sk, &src))
        return;
    if (!meta_decode(r->arena, src.meta, src.meta_len, &src_meta) ||
        !meta_decode(r->arena, upload->meta, upload->meta_len, &um)) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    if (!sse_for_read(r, &src_meta, true, &src_sse))
        return;
    if (!sse_for_read(r, &um, false, &dst_sse)) {
        sse_obj_wipe(&src_sse);
        return;
    }
    uint64_t first = 0, len = src.size;
    struct slice range = s3_req_header(r, "x-amz-copy-source-range");
    if (range.ptr && !parse_copy_range(range, src.size, &first, &len)) {
        if (copy_range_is_outside(range, src.size)) {
            s3_respond_error(r, S3_ERR_INVALID_RANGE, NULL);
            return;
        }
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                         "The x-amz-copy-source-range value must be of the form bytes=first-last "
                         "where first and last are the zero-based offsets of the first and last "
                         "bytes to copy");
        goto done;
    }
    /* The copy runs to completion within this request: bound it as S3
     * does (5 GiB), with the size AWS names in its answer. */
    if (len > r->srv->cfg.max_copy_part_size) {
        char msg[160];
        snprintf(msg, sizeof(msg),
                 "The specified copy source is larger than the maximum allowable size for a copy "
                 "source: %" PRIu64,
                 r->srv->cfg.max_copy_part_size);
        s3_respond_error(r, S3_ERR_INVALID_REQUEST, msg);
        goto done;
    }
    struct storage_writer *w = NULL;
    uint8_t md5[16], salt[AUTH_SSE_SALT_LEN];
    int rc = src_sse.mode || dst_sse.mode
                 ? sse_copy_range(r, &src, &src_meta, &src_sse, first, len, &dst_sse, &w, md5, salt)
                 : s3_copy_range(r->srv, &src, first, len, &w, md5);
    sse_etag(&dst_sse, md5);
    if (rc < 0) {
        storage_writer_destroy(w, false);
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
        goto done;
    }
    struct index_part part;
    memset(&part, 0, sizeof(part));
    part.number = part_number;
    part.size = len;
    part.mtime_ns = clock_now_ns();
    memcpy(part.etag, md5, 16);
    if (w) {
        const struct storage_extent *se;
        size_t n = storage_writer_extents(w, &se);
        part.extents = extents_to_index(r->arena, se, n);
        part.n_extents = (uint32_t)n;
        part.sums = storage_writer_sums(w, &part.sums_len);
    }
    if (dst_sse.mode) {
        struct meta_entry pe = {
            SLICE_LIT(META_SSE_SEGMENT),
            {(const char *)arena_memdup(r->arena, salt, sizeof(salt)), sizeof(salt)}};
        struct meta pm = {&pe, 1};
        meta_encode(r->arena, &pm, &part.meta, &part.meta_len);
    }
    struct index_op op = {.kind = INDEX_OP_PART_PUT,
                          .upload_id = upload->upload_id,
                          .part = &part,
                          .arena = r->arena};
    rc = committer_run(r->srv->committer, &op, 1);
    if (rc == 0)
        rc = op.result;
    storage_writer_destroy(w, rc == 0);
    if (rc < 0) {
        s3_respond_error(r, rc == -ENOENT ? S3_ERR_NO_SUCH_UPLOAD : s3_error_from_errno(rc), NULL);
        goto done;
    }
    char etag[48], date[40];
    s3_format_etag(md5, 0, etag);
    s3_format_iso_date(part.mtime_ns, date);
    struct buf b;
    buf_init(&b);
    buf_append_str(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CopyPartResult>");
    xml_elem_str(&b, "LastModified", date);
    xml_elem_str(&b, "ETag", etag);
    buf_append_str(&b, "</CopyPartResult>");
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(b.len, b.ptr, MHD_RESPMEM_MUST_FREE);
    s3_resp_header(resp, "Content-Type", "application/xml");
    sse_resp_headers(resp, &dst_sse);
    s3_respond(r, 200, resp);

done:
    sse_obj_wipe(&src_sse);
    sse_obj_wipe(&dst_sse);
}

/* ======================================================================
 * CompleteMultipartUpload
 * ====================================================================== */

/* The checksum value a part stored ("x-amz-checksum-ALGO" in its meta),
 * decoded to raw bytes. Returns the length or 0 when absent. */
static size_t
part_checksum(struct s3_req *r, const struct index_part *p, enum auth_checksum_algo algo,
              uint8_t out[AUTH_CK_MAX_DIGEST])
{
    struct meta pm;
    if (!meta_decode(r->arena, p->meta, p->meta_len, &pm))
        return 0;
    struct slice v = meta_get(&pm, auth_checksum_header(algo));
    if (!v.ptr || v.len > 64)
        return 0;
    uint8_t tmp[64];
    long n = base64_decode(v.ptr, v.len, tmp);
    if (n <= 0 || (size_t)n != auth_checksum_len(algo))
        return 0;
    memcpy(out, tmp, (size_t)n);
    return (size_t)n;
}

static const struct slice *
xml_part_checksum(const struct xml_complete_part *xp, enum auth_checksum_algo algo)
{
    switch (algo) {
    case AUTH_CK_CRC32:
        return &xp->checksum_crc32;
    case AUTH_CK_CRC32C:
        return &xp->checksum_crc32c;
    case AUTH_CK_CRC64NVME:
        return &xp->checksum_crc64nvme;
    case AUTH_CK_SHA1:
        return &xp->checksum_sha1;
    case AUTH_CK_SHA256:
        return &xp->checksum_sha256;
    default:
        return NULL;
    }
}

/* The parts' raw checksums of 'algo' concatenated in order (for
 * META_PART_CHECKSUMS), or an empty slice when a part lacks one. */
static struct slice
part_checksums(struct s3_req *r, enum auth_checksum_algo algo, struct index_part **used, uint32_t n)
{
    size_t dl = auth_checksum_len(algo);
    uint8_t *out = arena_alloc(r->arena, dl * n + 1);
    for (uint32_t i = 0; i < n; i++)
        if (part_checksum(r, used[i], algo, out + (size_t)i * dl) != dl)
            return SLICE_NULL;
    return (struct slice){(const char *)out, dl * n};
}

/* Computes the whole-object checksum from the parts' checksums. Returns
 * the base64 text (with "-N" for COMPOSITE) or an empty slice. */
static struct slice
object_checksum(struct s3_req *r, enum auth_checksum_algo algo, bool is_full,
                struct index_part **used, uint32_t n)
{
    uint8_t dig[AUTH_CK_MAX_DIGEST];
    size_t dl = auth_checksum_len(algo);
    if (is_full) {
        uint64_t crc = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint8_t pd[AUTH_CK_MAX_DIGEST];
            if (part_checksum(r, used[i], algo, pd) != dl)
                return SLICE_NULL;
            uint64_t pc = 0;
            for (size_t k = 0; k < dl; k++)
                pc = pc << 8 | pd[k];
            crc = i == 0 ? pc : auth_checksum_crc_combine(algo, crc, pc, used[i]->size);
        }
        for (size_t k = 0; k < dl; k++)
            dig[k] = (uint8_t)(crc >> (8 * (dl - 1 - k)));
        char *b64 = arena_alloc(r->arena, base64_encoded_len(dl) + 1);
        return (struct slice){b64, base64_encode(dig, dl, b64)};
    }
    struct auth_checksum ck;
    auth_checksum_init(&ck, algo);
    for (uint32_t i = 0; i < n; i++) {
        uint8_t pd[AUTH_CK_MAX_DIGEST];
        if (part_checksum(r, used[i], algo, pd) != dl) {
            auth_checksum_cleanup(&ck);
            return SLICE_NULL;
        }
        auth_checksum_update(&ck, pd, dl);
    }
    auth_checksum_final(&ck, dig);
    char *b64 = arena_alloc(r->arena, base64_encoded_len(dl) + 16);
    size_t bl = base64_encode(dig, dl, b64);
    bl += (size_t)snprintf(b64 + bl, 16, "-%" PRIu32, n);
    return (struct slice){b64, bl};
}

/* The whole-object checksum a CompleteMultipartUpload may carry
 * (x-amz-checksum-ALGO) must be the upload's algorithm and match the
 * checksum formed from the parts ('ck', "-N" of a COMPOSITE one optional
 * in the header). Responds and returns false when it does not. */
static bool
complete_checksum_check(struct s3_req *r, enum auth_checksum_algo algo, struct slice ck)
{
    static const enum auth_checksum_algo algos[] = {
        AUTH_CK_CRC32, AUTH_CK_CRC32C, AUTH_CK_CRC64NVME, AUTH_CK_SHA1, AUTH_CK_SHA256,
    };
    for (size_t i = 0; i < ARRAY_LEN(algos); i++) {
        struct slice v = slice_trim(s3_req_header(r, auth_checksum_header(algos[i])));
        if (!v.ptr)
            continue;
        if (algos[i] != algo || !ck.len) {
            s3_respond_error(r, S3_ERR_INVALID_REQUEST,
                             arena_sprintf(r->arena,
                                           "The upload was created using the %s checksum "
                                           "algorithm, not %s.",
                                           algo == AUTH_CK_NONE ? "null" : auth_checksum_name(algo),
                                           auth_checksum_name(algos[i])));
            return false;
        }
        struct slice base = ck;
        const char *dash = memchr(ck.ptr, '-', ck.len);
        if (dash)
            base.len = (size_t)(dash - ck.ptr);
        if (!slice_eq(v, ck) && !slice_eq(v, base)) {
            s3_respond_error(r, S3_ERR_BAD_DIGEST,
                             arena_sprintf(r->arena,
                                           "The %s you specified did not match the calculated "
                                           "checksum.",
                                           auth_checksum_name(algos[i])));
            return false;
        }
    }
    return true;
}

/* Answers a completion: the CompleteMultipartUploadResult of 'etag' and,
 * when 'ck' is set, the object's checksum of 'algo'; the encryption
 * headers of 'sse' and the version ('vflags', 'vid') when not NULL. */
static void
complete_respond_xml(struct s3_req *r, struct slice etag, struct slice ck_name, struct slice ck,
                     struct slice ck_type, const struct sse_obj *sse, uint32_t vflags,
                     const uint8_t *vid)
{
    struct buf b;
    buf_init(&b);
    xml_begin(&b, "CompleteMultipartUploadResult");
    struct slice host = s3_req_header(r, "host");
    char *loc = arena_sprintf(r->arena, "http://%.*s/%.*s/", (int)host.len, host.ptr,
                              (int)r->bucket.len, r->bucket.ptr);
    buf_append_str(&b, "<Location>");
    xml_escape(&b, slice_from_cstr(loc));
    struct buf enc;
    buf_init(&enc);
    uri_encode(&enc, r->key.ptr, r->key.len, true);
    xml_escape(&b, (struct slice){enc.ptr ? enc.ptr : "", enc.len});
    buf_cleanup(&enc);
    buf_append_str(&b, "</Location>");
    xml_elem(&b, "Bucket", r->bucket);
    xml_elem(&b, "Key", r->key);
    xml_elem(&b, "ETag", etag);
    if (ck.len && ck_name.len) {
        char *name = arena_sprintf(r->arena, "Checksum%.*s", (int)ck_name.len, ck_name.ptr);
        xml_elem(&b, name, ck);
        xml_elem(&b, "ChecksumType", ck_type);
    }
    xml_end(&b, "CompleteMultipartUploadResult");
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(b.len, b.ptr, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(resp, "Content-Type", "application/xml");
    if (sse)
        sse_resp_headers(resp, sse);
    if (vid)
        s3_version_result_headers(r, resp, vflags, vid);
    r->resp_bytes = b.len;
    s3_respond(r, 200, resp);
    buf_cleanup(&b);
}

/* Names of the entries of a completion record (op->done_result): a meta
 * blob (meta.c) holding what the answer needs besides bucket and key. */
#define DONE_ETAG "etag"
#define DONE_CK_NAME "checksum-name"
#define DONE_CK "checksum"
#define DONE_CK_TYPE "checksum-type"
#define DONE_SSE "sse" /* "S3" or "C": the encryption headers to repeat */

static void
complete_respond(struct s3_req *r, const char *etag, enum auth_checksum_algo algo, struct slice ck,
                 bool is_full, const struct sse_obj *sse, uint32_t vflags, const uint8_t *vid)
{
    struct slice ck_name = ck.len ? slice_from_cstr(auth_checksum_name(algo)) : SLICE_NULL;
    complete_respond_xml(r, slice_from_cstr(etag), ck_name, ck,
                         is_full ? SLICE_LIT("FULL_OBJECT") : SLICE_LIT("COMPOSITE"), sse, vflags,
                         vid);
}

/* Encodes the completion record the index keeps with the completion. */
static void
done_result_encode(struct s3_req *r, const char *etag, enum auth_checksum_algo algo,
                   struct slice ck, bool is_full, enum sse_mode sse_mode, const uint8_t **out,
                   size_t *out_len)
{
    struct meta_entry e[5];
    size_t n = 0;
    e[n++] = (struct meta_entry){SLICE_LIT(DONE_ETAG), slice_from_cstr(etag)};
    if (ck.len) {
        e[n++] =
            (struct meta_entry){SLICE_LIT(DONE_CK_NAME), slice_from_cstr(auth_checksum_name(algo))};
        e[n++] = (struct meta_entry){SLICE_LIT(DONE_CK), ck};
        e[n++] = (struct meta_entry){SLICE_LIT(DONE_CK_TYPE),
                                     is_full ? SLICE_LIT("FULL_OBJECT") : SLICE_LIT("COMPOSITE")};
    }
    if (sse_mode != SSE_NONE)
        e[n++] = (struct meta_entry){SLICE_LIT(DONE_SSE),
                                     sse_mode == SSE_C ? SLICE_LIT("C") : SLICE_LIT("S3")};
    struct meta m = {e, n};
    meta_encode(r->arena, &m, out, out_len);
}

/* A CompleteMultipartUpload of an upload that already completed into
 * this bucket and key (a client that lost the first answer and retries):
 * answers what the completion answered and returns true. Returns false
 * when no such completion is remembered. */
static bool
complete_repeated(struct s3_req *r, const struct index_bucket *bk)
{
    struct slice id = param(r, "uploadId");
    if (id.len != INDEX_UPLOAD_ID_LEN)
        return false;
    char idz[INDEX_UPLOAD_ID_LEN + 1];
    memcpy(idz, id.ptr, id.len);
    idz[id.len] = '\0';
    struct index_upload_done done;
    struct meta m;
    if (index_upload_done_get(r->srv->index, idz, r->arena, &done) != 0 ||
        done.bucket_id != bk->id || !slice_eq(done.key, r->key) ||
        !meta_decode(r->arena, done.result, done.result_len, &m) || !meta_get(&m, DONE_ETAG).len)
        return false;
    struct slice mode = meta_get(&m, DONE_SSE);
    struct sse_obj sse = {.mode = SSE_NONE};
    if (mode.len)
        sse.mode = slice_eq(mode, SLICE_LIT("C")) ? SSE_C : SSE_S3;
    complete_respond_xml(r, meta_get(&m, DONE_ETAG), meta_get(&m, DONE_CK_NAME),
                         meta_get(&m, DONE_CK), meta_get(&m, DONE_CK_TYPE), &sse,
                         done.version_flags, done.version_id);
    return true;
}

/* The class CreateMultipartUpload asked for (TIER_META_STORAGE_CLASS in
 * the upload's metadata), or 0. */
static uint32_t
upload_class_flags(struct s3_req *r, const struct index_upload *up)
{
    struct meta um;
    uint32_t flags = 0;
    if (meta_decode(r->arena, up->meta, up->meta_len, &um)) {
        struct slice cls = meta_get(&um, TIER_META_STORAGE_CLASS);
        if (cls.ptr && tier_class_parse(r->srv->tiers, cls, &flags) < 0)
            flags = 0;
    }
    return flags;
}

/* Moves a completed object to its upload's storage class. */
static void
complete_storage_class(struct s3_req *r, uint64_t bucket_id, const struct index_upload *up,
                       const uint8_t etag[16])
{
    uint32_t flags = upload_class_flags(r, up);
    if (flags)
        s3_storage_class_apply(r, bucket_id, etag, flags);
}

static void
complete_end(struct s3_req *r)
{
    struct index_bucket bk;
    struct index_upload up;
    if (!s3_bucket_lookup(r, &bk) || complete_repeated(r, &bk) ||
        !s3_multipart_lookup(r, &bk, &up, NULL))
        return;
    struct xml_complete_request req;
    if (xml_parse_complete(r->xml_body.ptr ? r->xml_body.ptr : "", r->xml_body.len, r->arena,
                           &req) != XML_IN_OK ||
        req.n_parts == 0) {
        s3_respond_error(r, S3_ERR_MALFORMED_XML, NULL);
        return;
    }
    for (size_t i = 1; i < req.n_parts; i++)
        if (req.parts[i].part_number <= req.parts[i - 1].part_number) {
            s3_respond_error(r, S3_ERR_INVALID_PART_ORDER, NULL);
            return;
        }
    struct index_part *parts;
    uint32_t n_parts;
    bool is_truncated;
    int rc = index_part_list(r->srv->index, up.upload_id, 0, INDEX_MAX_PARTS, r->arena, &parts,
                             &n_parts, &is_truncated);
    if (rc < 0) {
        s3_respond_error(r, rc == -ENOENT ? S3_ERR_NO_SUCH_UPLOAD : S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    struct meta um;
    if (!meta_decode(r->arena, up.meta, up.meta_len, &um)) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    enum auth_checksum_algo algo = AUTH_CK_NONE;
    struct slice alg = meta_get(&um, "x-amz-checksum-algorithm");
    if (alg.ptr)
        algo = auth_checksum_from_name(alg);
    bool is_full = slice_eq(meta_get(&um, "x-amz-checksum-type"), SLICE_LIT("FULL_OBJECT"));

    /* Match the named parts against the stored ones (both sorted). */
    struct index_part **used = arena_calloc(r->arena, req.n_parts, sizeof(*used));
    struct index_part_ref *refs = arena_calloc(r->arena, req.n_parts, sizeof(*refs));
    uint32_t k = 0;
    uint64_t size = 0, n_extents = 0;
    size_t sums_len = 0;
    for (size_t i = 0; i < req.n_parts; i++) {
        const struct xml_complete_part *xp = &req.parts[i];
        while (k < n_parts && parts[k].number < xp->part_number)
            k++;
        uint8_t etag[16];
        if (k == n_parts || parts[k].number != xp->part_number || !s3_parse_etag(xp->etag, etag) ||
            memcmp(etag, parts[k].etag, 16) != 0) {
            s3_respond_error(r, S3_ERR_INVALID_PART, NULL);
            return;
        }
        if (algo != AUTH_CK_NONE) {
            const struct slice *given = xml_part_checksum(xp, algo);
            uint8_t pd[AUTH_CK_MAX_DIGEST];
            size_t dl = part_checksum(r, &parts[k], algo, pd);
            if (given && given->len) {
                char b64[64];
                size_t bl = dl ? base64_encode(pd, dl, b64) : 0;
                if (!dl || !slice_eq(*given, (struct slice){b64, bl})) {
                    s3_respond_error(r, S3_ERR_INVALID_PART, NULL);
                    return;
                }
            }
        }
        if (i + 1 < req.n_parts && parts[k].size < r->srv->cfg.min_part_size) {
            s3_respond_error(r, S3_ERR_ENTITY_TOO_SMALL, NULL);
            return;
        }
        used[i] = &parts[k];
        refs[i].number = parts[k].number;
        memcpy(refs[i].etag, parts[k].etag, 16);
        size += parts[k].size;
        n_extents += parts[k].n_extents;
        sums_len += parts[k].sums_len;
    }
    uint32_t n_used = (uint32_t)req.n_parts;

    /* The object: extents and sums joined, ETag over the part MD5s. */
    struct index_object obj;
    memset(&obj, 0, sizeof(obj));
    obj.size = size;
    obj.mtime_ns = clock_now_ns();
    obj.parts_count = n_used;
    struct index_extent *ext = arena_calloc(r->arena, n_extents ? n_extents : 1, sizeof(*ext));
    uint8_t *sums = arena_alloc(r->arena, sums_len ? sums_len : 1);
    uint64_t *sizes = arena_calloc(r->arena, n_used, sizeof(*sizes));
    struct auth_checksum md5;
    auth_checksum_init(&md5, AUTH_CK_MD5);
    size_t ne = 0, so = 0;
    for (uint32_t i = 0; i < n_used; i++) {
        if (used[i]->n_extents) /* a 0-byte part has none (and a NULL list) */
            memcpy(ext + ne, used[i]->extents, used[i]->n_extents * sizeof(*ext));
        ne += used[i]->n_extents;
        if (used[i]->sums_len)
            memcpy(sums + so, used[i]->sums, used[i]->sums_len);
        so += used[i]->sums_len;
        auth_checksum_update(&md5, used[i]->etag, 16);
        sizes[i] = used[i]->size;
    }
    uint8_t dig[AUTH_CK_MAX_DIGEST];
    auth_checksum_final(&md5, dig);
    memcpy(obj.etag, dig, 16);
    obj.extents = ext;
    obj.n_extents = (uint32_t)ne;
    obj.sums = sums;
    obj.sums_len = so;

    /* Final metadata: the upload's, its checksum, and the part sizes. */
    struct meta fm;
    fm.entries = arena_calloc(r->arena, um.n + 4, sizeof(*fm.entries));
    fm.n = 0;
    for (size_t i = 0; i < um.n; i++)
        if (!slice_eq(um.entries[i].name, SLICE_LIT("x-amz-checksum-algorithm")) &&
            !slice_eq(um.entries[i].name, SLICE_LIT("x-amz-checksum-type")) &&
            !slice_eq(um.entries[i].name, SLICE_LIT(MULTIPART_LOCK_META)))
            fm.entries[fm.n++] = um.entries[i];
    struct slice lock = meta_get(&um, MULTIPART_LOCK_META);
    if (lock.len) {
        unsigned mode = 0;
        int64_t until = 0;
        int hold = 0;
        char tmp[64];
        snprintf(tmp, sizeof(tmp), "%.*s", (int)lock.len, lock.ptr);
        if (sscanf(tmp, "%u %" SCNd64 " %d", &mode, &until, &hold) == 3 && mode <= 2) {
            obj.lock_mode = (uint8_t)mode;
            obj.retain_until_ns = until;
            obj.has_legal_hold = hold != 0;
        }
    }
    struct slice ck = SLICE_NULL;
    if (algo != AUTH_CK_NONE) {
        ck = object_checksum(r, algo, is_full, used, n_used);
        if (ck.len) {
            fm.entries[fm.n].name = slice_from_cstr(auth_checksum_header(algo));
            fm.entries[fm.n++].value = ck;
            fm.entries[fm.n].name = SLICE_LIT("x-amz-checksum-type");
            fm.entries[fm.n++].value = is_full ? SLICE_LIT("FULL_OBJECT") : SLICE_LIT("COMPOSITE");
        }
    }
    if (!complete_checksum_check(r, algo, ck))
        return;
    if (ck.len) {
        struct slice pcs = part_checksums(r, algo, used, n_used);
        if (pcs.len) {
            fm.entries[fm.n].name = SLICE_LIT(META_PART_CHECKSUMS);
            fm.entries[fm.n++].value = pcs;
        }
    }
    fm.entries[fm.n].name = SLICE_LIT(META_PART_SIZES);
    fm.entries[fm.n++].value = meta_part_sizes_format(r->arena, sizes, n_used);
    /* Encrypted: the record gets each part's segment salt, in order. */
    struct sse_obj sse;
    if (!sse_complete(r, used, n_used, &fm, &sse)) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    meta_encode(r->arena, &fm, &obj.meta, &obj.meta_len);

    struct index_op op = {
        .kind = INDEX_OP_UPLOAD_COMPLETE,
        .bucket_id = bk.id,
        .key = r->key,
        .object = &obj,
        .upload_id = up.upload_id,
        .parts_used = refs,
        .n_parts_used = n_used,
        .arena = r->arena,
    };
    struct slice inm = s3_req_header(r, "if-none-match");
    struct slice im = s3_req_header(r, "if-match");
    if (inm.ptr)
        op.if_none_match = true;
    if (im.ptr) {
        op.if_exists = true; /* an absent key: NoSuchKey */
        op.has_if_match = !slice_eq(im, SLICE_LIT("*"));
    }
    if (op.has_if_match) {
        if (!s3_parse_etag(im, op.if_match_etag)) {
            s3_respond_error(r, S3_ERR_PRECONDITION_FAILED, NULL);
            return;
        }
    }
    char etag[48];
    s3_format_etag(obj.etag, n_used, etag);
    done_result_encode(r, etag, algo, ck, is_full, sse.mode, &op.done_result, &op.done_result_len);
    rc = committer_run(r->srv->committer, &op, 1);
    if (rc == 0)
        rc = op.result;
    if (rc < 0) {
        enum s3_error e = s3_error_from_errno(rc);
        if (rc == -ENOENT)
            e = S3_ERR_NO_SUCH_UPLOAD;
        else if (rc == -ESTALE && !op.has_if_match)
            e = S3_ERR_INVALID_PART;
        s3_respond_error(r, e, NULL);
        return;
    }
    complete_storage_class(r, bk.id, &up, obj.etag);
    complete_respond(r, etag, algo, ck, is_full, &sse, op.result_version_flags,
                     op.result_version_id);
}

void
op_complete_multipart(struct s3_req *r)
{
    s3_req_expect_xml(r, 2u << 20, complete_end);
}

/* ======================================================================
 * AbortMultipartUpload, ListParts, ListMultipartUploads
 * ====================================================================== */

void
op_abort_multipart(struct s3_req *r)
{
    struct index_bucket bk;
    struct index_upload up;
    if (!s3_bucket_lookup(r, &bk) || !s3_multipart_lookup(r, &bk, &up, NULL))
        return;
    struct index_op op = {
        .kind = INDEX_OP_UPLOAD_ABORT, .upload_id = up.upload_id, .arena = r->arena};
    int rc = committer_run(r->srv->committer, &op, 1);
    if (rc == 0)
        rc = op.result;
    if (rc == -ENOENT)
        s3_respond_error(r, S3_ERR_NO_SUCH_UPLOAD, NULL);
    else if (rc < 0)
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
    else
        s3_respond_empty(r, 204);
}

int
s3_bucket_abort_uploads(struct s3_req *r, uint64_t bucket_id)
{
    struct index_upload_list_params p = {.bucket_id = bucket_id, .max_uploads = 1000};
    for (;;) {
        struct index_upload_list_result res;
        int rc = index_upload_list(r->srv->index, &p, r->arena, &res);
        if (rc < 0)
            return rc;
        if (res.n_uploads == 0)
            return 0;
        struct index_op *ops = arena_calloc(r->arena, res.n_uploads, sizeof(*ops));
        for (uint32_t i = 0; i < res.n_uploads; i++)
            ops[i] = (struct index_op){.kind = INDEX_OP_UPLOAD_ABORT,
                                       .upload_id = res.uploads[i].upload_id,
                                       .arena = r->arena};
        rc = committer_run(r->srv->committer, ops, res.n_uploads);
        for (uint32_t i = 0; rc == 0 && i < res.n_uploads; i++)
            if (ops[i].result < 0 && ops[i].result != -ENOENT)
                rc = ops[i].result; /* never loop on an upload that stays */
        if (rc < 0)
            return rc;
        if (!res.is_truncated)
            return 0;
    }
}

static void
owner_xml(struct s3_req *r, struct buf *b, const char *elem)
{
    buf_printf(b, "<%s>", elem);
    xml_elem_str(b, "ID", r->srv->owner_id);
    xml_elem_str(b, "DisplayName", "root");
    buf_printf(b, "</%s>", elem);
}

void
op_list_parts(struct s3_req *r)
{
    struct index_bucket bk;
    struct index_upload up;
    if (!s3_bucket_lookup(r, &bk) || !s3_multipart_lookup(r, &bk, &up, NULL))
        return;
    uint64_t max = 1000, marker = 0;
    const struct s3_param *mp = s3_req_param(r, "max-parts");
    const struct s3_param *pm = s3_req_param(r, "part-number-marker");
    if ((mp && parse_u64(mp->value, UINT32_MAX, &max) != 0) ||
        (pm && pm->value.len && parse_u64(pm->value, INDEX_MAX_PARTS, &marker) != 0)) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, NULL);
        return;
    }
    if (max > 1000)
        max = 1000;
    struct index_part *parts = NULL;
    uint32_t n = 0;
    bool is_truncated = false;
    int rc = max ? index_part_list(r->srv->index, up.upload_id, (uint32_t)marker, (uint32_t)max,
                                   r->arena, &parts, &n, &is_truncated)
                 : 0;
    if (rc < 0) {
        s3_respond_error(r, rc == -ENOENT ? S3_ERR_NO_SUCH_UPLOAD : S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    struct meta um;
    enum auth_checksum_algo algo = AUTH_CK_NONE;
    if (meta_decode(r->arena, up.meta, up.meta_len, &um)) {
        struct slice alg = meta_get(&um, "x-amz-checksum-algorithm");
        if (alg.ptr)
            algo = auth_checksum_from_name(alg);
    }
    struct buf b;
    buf_init(&b);
    xml_begin(&b, "ListPartsResult");
    xml_elem(&b, "Bucket", r->bucket);
    xml_elem(&b, "Key", r->key);
    xml_elem_str(&b, "UploadId", up.upload_id);
    owner_xml(r, &b, "Initiator");
    owner_xml(r, &b, "Owner");
    xml_elem_str(&b, "StorageClass", tier_class_name(r->srv->tiers, upload_class_flags(r, &up)));
    xml_elem_u64(&b, "PartNumberMarker", marker);
    if (n)
        xml_elem_u64(&b, "NextPartNumberMarker", parts[n - 1].number);
    xml_elem_u64(&b, "MaxParts", max);
    xml_elem_bool(&b, "IsTruncated", is_truncated);
    if (algo != AUTH_CK_NONE)
        xml_elem_str(&b, "ChecksumAlgorithm", auth_checksum_name(algo));
    for (uint32_t i = 0; i < n; i++) {
        char etag[48], date[40];
        s3_format_etag(parts[i].etag, 0, etag);
        s3_format_iso_date(parts[i].mtime_ns, date);
        buf_append_str(&b, "<Part>");
        xml_elem_u64(&b, "PartNumber", parts[i].number);
        xml_elem_str(&b, "LastModified", date);
        xml_elem_str(&b, "ETag", etag);
        xml_elem_u64(&b, "Size", parts[i].size);
        if (algo != AUTH_CK_NONE) {
            uint8_t pd[AUTH_CK_MAX_DIGEST];
            size_t dl = part_checksum(r, &parts[i], algo, pd);
            if (dl) {
                char b64[64], name[32];
                base64_encode(pd, dl, b64);
                snprintf(name, sizeof(name), "Checksum%s", auth_checksum_name(algo));
                xml_elem_str(&b, name, b64);
            }
        }
        buf_append_str(&b, "</Part>");
    }
    xml_end(&b, "ListPartsResult");
    s3_respond_body(r, 200, "application/xml", b.ptr, b.len);
    buf_cleanup(&b);
}

void
op_list_uploads(struct s3_req *r)
{
    struct index_bucket bk;
    if (!s3_bucket_lookup(r, &bk))
        return;
    struct index_upload_list_params p = {.bucket_id = bk.id, .max_uploads = 1000};
    p.prefix = param(r, "prefix");
    p.delimiter = param(r, "delimiter");
    p.key_marker = param(r, "key-marker");
    p.upload_id_marker = param(r, "upload-id-marker");
    const struct s3_param *mu = s3_req_param(r, "max-uploads");
    if (mu) {
        uint64_t v;
        if (parse_u64(mu->value, UINT64_MAX, &v) != 0) {
            s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, NULL);
            return;
        }
        p.max_uploads = v > 1000 ? 1000 : (uint32_t)v;
    }
    bool is_url = false;
    if (s3_req_param(r, "encoding-type")) {
        if (!slice_eq(param(r, "encoding-type"), SLICE_LIT("url"))) {
            s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                             "Invalid Encoding Method specified in Request");
            return;
        }
        is_url = true;
    }
    struct index_upload_list_result res;
    int rc = index_upload_list(r->srv->index, &p, r->arena, &res);
    if (rc < 0) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    struct buf b;
    buf_init(&b);
#define KEY_ELEM(name, v) xml_elem_key(&b, (name), (v), is_url)
    xml_begin(&b, "ListMultipartUploadsResult");
    xml_elem(&b, "Bucket", r->bucket);
    KEY_ELEM("KeyMarker", p.key_marker);
    xml_elem(&b, "UploadIdMarker", p.upload_id_marker);
    KEY_ELEM("NextKeyMarker", res.next_key_marker);
    xml_elem(&b, "NextUploadIdMarker", res.next_upload_id_marker);
    KEY_ELEM("Prefix", p.prefix);
    if (p.delimiter.len)
        KEY_ELEM("Delimiter", p.delimiter);
    xml_elem_u64(&b, "MaxUploads", p.max_uploads);
    xml_elem_bool(&b, "IsTruncated", res.is_truncated);
    if (is_url)
        xml_elem_str(&b, "EncodingType", "url");
    for (uint32_t i = 0; i < res.n_uploads; i++) {
        char date[40];
        s3_format_iso_date(res.uploads[i].initiated_ns, date);
        buf_append_str(&b, "<Upload>");
        KEY_ELEM("Key", res.uploads[i].key);
        xml_elem_str(&b, "UploadId", res.uploads[i].upload_id);
        owner_xml(r, &b, "Initiator");
        owner_xml(r, &b, "Owner");
        xml_elem_str(&b, "StorageClass", "STANDARD");
        xml_elem_str(&b, "Initiated", date);
        buf_append_str(&b, "</Upload>");
    }
    for (uint32_t i = 0; i < res.n_prefixes; i++) {
        buf_append_str(&b, "<CommonPrefixes>");
        KEY_ELEM("Prefix", res.prefixes[i]);
        buf_append_str(&b, "</CommonPrefixes>");
    }
#undef KEY_ELEM
    xml_end(&b, "ListMultipartUploadsResult");
    s3_respond_body(r, 200, "application/xml", b.ptr, b.len);
    buf_cleanup(&b);
}
