/*
 * op_copy.c: CopyObject (PUT with x-amz-copy-source).
 *
 * CopyObject copies no bytes: the new record points at the source's
 * extents, and the index counts the holders of each shared extent (see
 * index/extref.c), so deleting either object frees only what nobody else
 * holds. The commit re-checks inside its transaction that the source still
 * holds those extents (it may have been overwritten since we read it) and
 * we start over when it does not. The request's reader pin, narrowed to
 * the source's extents, keeps them from being reused meanwhile. The new record is
 * published by one group commit like any PUT.
 *
 * UploadPartCopy copies a byte range into the part's own extents through a
 * storage writer (bounded 1 MiB buffer): s3_copy_range.
 *
 * Encryption (sse.c): a copy shares the source's bytes only when they
 * decrypt the same way for the destination (both plain, both SSE-S3, SSE-C
 * under the same key); otherwise the plaintext is copied re-encrypted for
 * the destination (sse_copy_object).
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
#include "server/meta.h"
#include "server/ops.h"
#include "server/req.h"
#include "server/server.h"
#include "server/sse.h"
#include "server/util.h"
#include "server/versioning.h"
#include "server/xml_out.h"
#include "storage/storage.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdlib.h>

#define COPY_BUF_LEN (1u << 20)

/* Splits "/bucket/key?versionId=..." (URL-encoded) into bucket, key and
 * the version ('*has_vid', 'vid'). */
static bool
parse_copy_source(struct s3_req *r, struct slice src, struct slice *bucket, struct slice *key,
                  bool *has_vid, uint8_t vid[INDEX_VERSION_ID_LEN])
{
    const char *q = memchr(src.ptr, '?', src.len);
    *has_vid = false;
    if (q) {
        struct slice v = {q + 1, src.len - (size_t)(q - src.ptr) - 1};
        if (!slice_has_prefix(v, SLICE_LIT("versionId=")))
            return false;
        v.ptr += 10;
        v.len -= 10;
        if (!s3_version_id_parse(v, vid))
            return false;
        *has_vid = true;
        src.len = (size_t)(q - src.ptr);
    }
    struct slice dec;
    if (!s3_uri_decode(r->arena, src, &dec))
        return false;
    if (dec.len && dec.ptr[0] == '/') {
        dec.ptr++;
        dec.len--;
    }
    const char *slash = memchr(dec.ptr, '/', dec.len);
    if (!slash)
        return false;
    *bucket = (struct slice){dec.ptr, (size_t)(slash - dec.ptr)};
    *key = (struct slice){slash + 1, dec.len - bucket->len - 1};
    return bucket->len > 0 && key->len > 0 && key->len <= INDEX_MAX_KEY;
}

static enum s3_error
copy_conditions(struct s3_req *r, const struct index_object *src)
{
    uint8_t md5[16];
    int64_t t, mtime_s = src->mtime_ns / 1000000000;
    struct slice im = s3_req_header(r, "x-amz-copy-source-if-match");
    struct slice inm = s3_req_header(r, "x-amz-copy-source-if-none-match");
    struct slice ims = s3_req_header(r, "x-amz-copy-source-if-modified-since");
    struct slice ius = s3_req_header(r, "x-amz-copy-source-if-unmodified-since");
    if (im.ptr && !(s3_parse_etag(im, md5) && memcmp(md5, src->etag, 16) == 0))
        return S3_ERR_PRECONDITION_FAILED;
    if (!im.ptr && ius.ptr && http_date_parse(ius, &t) == 0 && mtime_s > t)
        return S3_ERR_PRECONDITION_FAILED;
    if (inm.ptr && ((s3_parse_etag(inm, md5) && memcmp(md5, src->etag, 16) == 0) ||
                    slice_eq(inm, SLICE_LIT("*"))))
        return S3_ERR_PRECONDITION_FAILED;
    if (!inm.ptr && ims.ptr && http_date_parse(ims, &t) == 0 && mtime_s <= t)
        return S3_ERR_PRECONDITION_FAILED;
    return S3_OK;
}

int
s3_copy_range(struct server *srv, const struct index_object *src, uint64_t first, uint64_t len,
              struct storage_writer **out, uint8_t md5_out[16])
{
    *out = NULL;
    struct tier_pins tp = {0};
    struct tier_reader *trd = NULL;
    int rc = storage_writer_create(srv->storage, len, out);
    if (rc < 0)
        return rc;
    if (TIER_OF(tier_object_flags(src)) != TIER_HOT) {
        /* The caller's pins (s3_req_pin) hold the source; these only
         * give the tier reader a handle. */
        if ((rc = tier_pins_take(srv->tiers, &tp)) < 0 ||
            (rc = tier_reader_create(srv->tiers, &tp, src, first, len, &trd)) < 0) {
            tier_pins_drop(srv->tiers, &tp, TIER_MAX);
            return rc;
        }
    }
    struct auth_checksum md5;
    if (md5_out)
        auth_checksum_init(&md5, AUTH_CK_MD5);
    char *buf = xmalloc(COPY_BUF_LEN);
    uint64_t ext_start = 0, pos = 0;
    while (trd && rc == 0 && pos < len) {
        ssize_t n = tier_reader_read(trd, pos, buf, (size_t)MIN((uint64_t)COPY_BUF_LEN, len - pos));
        if (n <= 0) {
            rc = n < 0 ? (int)n : -EIO;
            break;
        }
        if (md5_out)
            auth_checksum_update(&md5, buf, (size_t)n);
        rc = storage_writer_write(*out, buf, (size_t)n);
        pos += (uint64_t)n;
    }
    if (trd)
        len = 0;
    tier_reader_destroy(trd);
    tier_pins_drop(srv->tiers, &tp, TIER_MAX);
    for (uint32_t i = 0; i < src->n_extents && rc == 0 && len > 0; i++) {
        struct storage_extent e;
        extents_from_index(&src->extents[i], 1, &e);
        uint64_t ext_end = ext_start + e.len;
        if (first < ext_end) {
            uint64_t off = first - ext_start;
            while (off < e.len && len > 0 && rc == 0) {
                size_t want = (size_t)MIN(MIN((uint64_t)COPY_BUF_LEN, e.len - off), len);
                ssize_t n = storage_read(srv->storage, &e, off, buf, want);
                if (n <= 0) {
                    rc = n < 0 ? (int)n : -EIO;
                    break;
                }
                if (md5_out)
                    auth_checksum_update(&md5, buf, (size_t)n);
                rc = storage_writer_write(*out, buf, (size_t)n);
                off += (uint64_t)n;
                first += (uint64_t)n;
                len -= (uint64_t)n;
            }
        }
        ext_start = ext_end;
    }
    if (rc == 0 && src->inline_len && len > 0) {
        if (first + len > src->inline_len) {
            rc = -EINVAL;
        } else {
            if (md5_out)
                auth_checksum_update(&md5, src->inline_data + first, (size_t)len);
            rc = storage_writer_write(*out, src->inline_data + first, (size_t)len);
        }
    }
    free(buf);
    if (md5_out) {
        uint8_t dig[AUTH_CK_MAX_DIGEST];
        auth_checksum_final(&md5, dig);
        memcpy(md5_out, dig, 16);
    }
    if (rc == 0)
        rc = storage_writer_finish(*out);
    return rc;
}

bool
s3_copy_source_lookup(struct s3_req *r, struct index_bucket *src_bk, struct slice *src_key,
                      struct index_object *src)
{
    struct slice sb;
    bool has_vid;
    uint8_t vid[INDEX_VERSION_ID_LEN];
    if (!parse_copy_source(r, s3_req_header(r, "x-amz-copy-source"), &sb, src_key, &has_vid, vid)) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "Invalid copy source");
        return false;
    }
    if (index_bucket_get(r->srv->index, sb, src_bk) < 0) {
        s3_respond_error(r, S3_ERR_NO_SUCH_BUCKET, NULL);
        return false;
    }
    /* The route authorized the write of the target; reading the source
     * is a separate permission on (possibly) another bucket. */
    if (!s3_authorize_bucket(r, src_bk, AUTH_ACTION_READ, *src_key))
        return false;
    /* A fresh pin for each lookup (a retry looks again), narrowed at once
     * to the source found, so a long copy holds back nothing else. */
    s3_req_unpin(r);
    if (!s3_req_pin(r))
        return false;
    int rc = has_vid
                 ? index_object_version_get(r->srv->index, src_bk->id, *src_key, vid, r->arena, src)
                 : index_object_get(r->srv->index, src_bk->id, *src_key, r->arena, src);
    if (rc == 0 && (src->version_flags & INDEX_VERSION_MARKER)) {
        s3_respond_error(r, S3_ERR_INVALID_REQUEST,
                         "The source of a copy request may not specifically refer to a delete "
                         "marker by version id.");
        return false;
    }
    if (rc < 0) {
        s3_respond_error(r,
                         rc == -ENOENT ? (has_vid ? S3_ERR_NO_SUCH_VERSION : S3_ERR_NO_SUCH_KEY)
                                       : S3_ERR_INTERNAL_ERROR,
                         NULL);
        return false;
    }
    struct storage_extent *se = arena_calloc(r->arena, src->n_extents + 1, sizeof(*se));
    extents_from_index(src->extents, src->n_extents, se);
    rc = storage_reader_narrow(r->srv->storage, r->pin, se, src->n_extents, 0, UINT64_MAX);
    if (rc < 0) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return false;
    }
    enum s3_error e = copy_conditions(r, src);
    if (e != S3_OK) {
        s3_respond_error(r, e, NULL);
        return false;
    }
    return true;
}

/* Copies the 'src' record for the destination 'dst_bk'/r->key with the
 * metadata the request asks for. Returns 0 when published (and fills
 * 'out'), -ESTALE when the source changed under us, or another -errno
 * after responding (or for the caller to map). Responds itself on
 * request errors and returns 1. */
static int
copy_once(struct s3_req *r, const struct index_bucket *dst_bk, const struct index_bucket *src_bk,
          struct slice sk, const struct index_object *src, struct index_object *out,
          struct sse_obj *src_sse, struct sse_obj *dst_sse)
{
    struct slice directive = s3_req_header(r, "x-amz-metadata-directive");
    bool is_replace = slice_eq_nocase(directive, "REPLACE");
    if (directive.ptr && !is_replace && !slice_eq_nocase(directive, "COPY")) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "Unknown metadata directive.");
        return 1;
    }
    struct meta src_meta, new_meta;
    if (!meta_decode(r->arena, src->meta, src->meta_len, &src_meta)) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return 1;
    }
    if (!sse_for_read(r, &src_meta, true, src_sse) || !sse_for_write(r, dst_bk, dst_sse))
        return 1;
    bool is_shared = sse_copy_shares(src_sse, dst_sse);
    uint32_t class_flags;
    if (!s3_storage_class_from_request(r, &class_flags))
        return 1;
    /* Copying a named version onto its own key restores it (S3 allows it). */
    struct slice cs = s3_req_header(r, "x-amz-copy-source");
    bool is_versioned_src = cs.ptr && memmem(cs.ptr, cs.len, "?versionId=", 11) != NULL;
    if (!is_replace && is_shared && !is_versioned_src && src_bk->id == dst_bk->id &&
        slice_eq(sk, r->key) && class_flags == tier_object_flags(src)) {
        s3_respond_error(r, S3_ERR_INVALID_REQUEST,
                         "This copy request is illegal because it is trying to copy an object to "
                         "itself without changing the object's metadata, storage class, website "
                         "redirect location or encryption attributes.");
        return 1;
    }
    if (is_replace) {
        enum s3_error e = meta_from_request(r, &new_meta);
        if (e != S3_OK) {
            s3_respond_error(r, e, NULL);
            return 1;
        }
        /* The bytes and their layout are the same, so their checksums and
         * part sizes (internal entries) still hold. */
        struct meta_entry *ents =
            arena_calloc(r->arena, new_meta.n + src_meta.n + 1, sizeof(*ents));
        memcpy(ents, new_meta.entries, new_meta.n * sizeof(*ents));
        for (size_t i = 0; i < src_meta.n; i++)
            if (slice_has_prefix(src_meta.entries[i].name, SLICE_LIT("x-amz-checksum-")) ||
                slice_has_prefix(src_meta.entries[i].name, SLICE_LIT(META_INTERNAL_PREFIX)))
                ents[new_meta.n++] = src_meta.entries[i];
        new_meta.entries = ents;
    } else {
        new_meta = src_meta;
    }
    if (!s3_tagging_for_copy(r, &new_meta) || !s3_acl_from_request(r, &new_meta))
        return 1;
    int rc;
    if (!is_shared) {
        rc = sse_copy_object(r, dst_bk, src, &src_meta, src_sse, &new_meta, dst_sse, out);
        goto done;
    }

    /* Same extents, same sums, same ETag (a multipart source keeps its
     * "-N" ETag and part layout, so partNumber reads still work). */
    *out = *src;
    out->mtime_ns = clock_now_ns();
    meta_encode(r->arena, &new_meta, &out->meta, &out->meta_len);
    const char *lock_msg;
    enum s3_error le = s3_lock_for_write(r, dst_bk, out, out->mtime_ns, false, &lock_msg);
    if (le != S3_OK) {
        s3_respond_error(r, le, lock_msg);
        return 1;
    }
    struct index_op op = {
        .kind = INDEX_OP_PUT,
        .bucket_id = dst_bk->id,
        .key = r->key,
        .object = out,
        .arena = r->arena,
    };
    if (src->n_extents) {
        op.share_bucket_id = src_bk->id;
        op.share_key = sk;
        /* The very version read, latest or not (null: all zero). */
        if (src->version_flags & INDEX_VERSION_HAS_ID) {
            op.has_share_version_id = true;
            if (!(src->version_flags & INDEX_VERSION_NULL))
                memcpy(op.share_version_id, src->version_id, INDEX_VERSION_ID_LEN);
        }
    }
    rc = committer_run(r->srv->committer, &op, 1);
    out->version_flags = op.result_version_flags;
    memcpy(out->version_id, op.result_version_id, INDEX_VERSION_ID_LEN);
    if (rc == 0)
        rc = op.result;

done:
    if (rc < 0 && rc != -ESTALE) {
        s3_respond_error(r, rc == -ENOENT ? S3_ERR_NO_SUCH_BUCKET : s3_error_from_errno(rc), NULL);
        return 1;
    }
    /* The copy shares the source's bytes; a copy in another class (S3:
     * STANDARD unless x-amz-storage-class says otherwise) moves them. */
    if (rc == 0 && class_flags != tier_object_flags(out))
        s3_storage_class_apply(r, dst_bk->id, out->etag, class_flags);
    return rc;
}

void
op_copy_object(struct s3_req *r)
{
    struct index_bucket dst_bk, src_bk;
    struct slice sk;
    struct index_object src, obj;
    struct sse_obj src_sse = {.mode = SSE_NONE}, dst_sse = {.mode = SSE_NONE};
    if (!s3_bucket_lookup(r, &dst_bk))
        return;
    memset(&src, 0, sizeof(src));
    /* A source overwritten between our read and the commit: read it again.
     * Each round is a fresh, complete copy of one consistent version. */
    int rc = -ESTALE;
    for (int attempt = 0; attempt < 8 && rc == -ESTALE; attempt++) {
        if (!s3_copy_source_lookup(r, &src_bk, &sk, &src))
            goto done;
        sse_obj_wipe(&src_sse);
        sse_obj_wipe(&dst_sse);
        rc = copy_once(r, &dst_bk, &src_bk, sk, &src, &obj, &src_sse, &dst_sse);
    }
    if (rc == 1)
        goto done;
    if (rc != 0) {
        s3_respond_error(r, S3_ERR_SLOW_DOWN, "The copy source changes too fast; retry.");
        goto done;
    }
    char etag[48], date[40];
    s3_format_etag(obj.etag, obj.parts_count, etag);
    s3_format_iso_date(obj.mtime_ns, date);
    struct buf b;
    buf_init(&b);
    buf_append_str(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CopyObjectResult>");
    xml_elem_str(&b, "LastModified", date);
    xml_elem_str(&b, "ETag", etag);
    buf_append_str(&b, "</CopyObjectResult>");
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(b.len, b.ptr, MHD_RESPMEM_MUST_COPY);
    buf_cleanup(&b);
    if (!resp) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        goto done;
    }
    s3_resp_header(resp, "Content-Type", "application/xml");
    sse_resp_headers(resp, &dst_sse);
    s3_version_result_headers(r, resp, obj.version_flags, obj.version_id);
    if (src.version_flags & INDEX_VERSION_HAS_ID) {
        char vid[S3_VERSION_ID_MAX + 1];
        s3_version_id_format(src.version_flags, src.version_id, vid);
        s3_resp_header(resp, "x-amz-copy-source-version-id",
                       arena_strndup(r->arena, vid, strlen(vid)));
    }
    s3_respond(r, 200, resp);

done:
    sse_obj_wipe(&src_sse);
    sse_obj_wipe(&dst_sse);
}
