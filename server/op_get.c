/*
 * op_get.c: GetObject and HeadObject.
 *
 * The request pins storage before the index lookup, so the extents it
 * finds cannot be reused while it reads them, even if the object is
 * overwritten or deleted meanwhile (deferred reclaim). Once the bytes to
 * send are known the pin is narrowed to them (or dropped when none come
 * from storage), so a slow client holds back its own object's space and
 * nothing else; the request drops it on completion. storage/ maps the
 * range: when it is one span (every single-PUT object is one extent when
 * space allows) it goes out zero-copy, MHD sendfile()ing from a dup of the
 * span's fd; otherwise it is streamed through a bounded buffer by a
 * storage reader, whose pin follows the stream and is revoked if the
 * client stops reading for reader_pin_timeout.
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/errors.h"
#include "server/extents.h"
#include "server/http.h"
#include "server/lifecycle.h"
#include "server/meta.h"
#include "server/ops.h"
#include "server/rdma.h"
#include "server/range.h"
#include "server/req.h"
#include "server/server.h"
#include "server/sse.h"
#include "server/tier_stream.h"
#include "server/util.h"
#include "server/versioning.h"
#include "server/xml_out.h"
#include "storage/storage.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define GET_BLOCK_LEN (256 * 1024)
/* A body that cannot go zero-copy and is at most this long is read whole
 * before the answer and given to MHD as one buffer (see s3_body_response). */
#define GET_BUFFERED_MAX GET_BLOCK_LEN

/* A streamed body reads through a storage reader, owned by the MHD response
 * (freed by its free callback), so it does not depend on the request's
 * arena. */
static ssize_t
reader_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
    ssize_t n = storage_reader_read(cls, pos, buf, max);
    if (n == 0)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (n < 0)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    return n;
}

static void
reader_free(void *cls)
{
    storage_reader_destroy(cls);
}

/* Reads all 'len' bytes of 'rd' into a new buffer and returns a response
 * that sends it (and frees it), or NULL (a read failed or no memory). */
static struct MHD_Response *
buffered_response(struct storage_reader *rd, uint64_t len)
{
    struct MHD_Response *resp = NULL;
    char *buf = malloc((size_t)len);
    if (!buf)
        return NULL;
    for (uint64_t got = 0; got < len;) {
        ssize_t n = storage_reader_read(rd, got, buf + got, (size_t)(len - got));
        if (n <= 0)
            goto fail;
        got += (uint64_t)n;
    }
    resp = MHD_create_response_from_buffer_with_free_callback((size_t)len, buf, free);
    if (!resp)
        goto fail;
    return resp;

fail:
    free(buf);
    return NULL;
}

static ssize_t
no_body_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)cls;
    (void)pos;
    (void)buf;
    (void)max;
    return MHD_CONTENT_READER_END_OF_STREAM;
}

bool
s3_req_pin(struct s3_req *r)
{
    if (r->has_pin)
        return true;
    int rc = storage_reader_pin(r->srv->storage, &r->pin);
    if (rc == 0 && (rc = tier_pins_take(r->srv->tiers, &r->tier_pins)) < 0)
        storage_reader_unpin(r->srv->storage, r->pin);
    if (rc < 0) {
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
        return false;
    }
    r->has_pin = true;
    return true;
}

void
s3_req_unpin(struct s3_req *r)
{
    if (!r->has_pin)
        return;
    storage_reader_unpin(r->srv->storage, r->pin);
    tier_pins_drop(r->srv->tiers, &r->tier_pins, TIER_MAX);
    r->has_pin = false;
}

/* A tiered object's body streams through a tier reader (tier.h), owned
 * by the response like a storage reader. */
static ssize_t
tier_reader_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
    ssize_t n = tier_reader_read(cls, pos, buf, max);
    if (n == 0)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (n < 0)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    return n;
}

static void
tier_reader_free(void *cls)
{
    tier_reader_destroy(cls);
}

/* The body of an object whose bytes are in a tier: the hot pin and the
 * other tiers' pins are dropped, the tier's stays until completion. A
 * tier whose reads wait on a network is read on the workers. */
static struct MHD_Response *
tier_body_response(struct s3_req *r, const struct index_object *obj, uint64_t first, uint64_t len)
{
    struct tier_reader *trd = NULL;
    uint32_t id = TIER_OF(tier_object_flags(obj));
    /* Narrowed to nothing: it holds no hot extent back any more. */
    if (storage_reader_narrow(r->srv->storage, r->pin, NULL, 0, 0, 0) < 0)
        return NULL;
    tier_pins_drop(r->srv->tiers, &r->tier_pins, id);
    if (tier_reader_create(r->srv->tiers, &r->tier_pins, obj, first, len, &trd) < 0)
        return NULL;
    struct MHD_Response *resp =
        tier_reads_wait(r->srv->tiers, id)
            ? tier_stream_response(r->srv, r->conn, trd, len)
            : MHD_create_response_from_callback(len, GET_BLOCK_LEN, tier_reader_cb, trd,
                                                tier_reader_free);
    if (!resp)
        tier_reader_destroy(trd);
    return resp;
}

struct MHD_Response *
s3_body_response(struct s3_req *r, const struct index_object *obj, uint64_t first, uint64_t len,
                 bool is_head)
{
    struct MHD_Response *resp = NULL;
    struct storage_reader *rd = NULL;
    if (is_head || len == 0 || obj->inline_len)
        s3_req_unpin(r);
    if (is_head)
        return MHD_create_response_from_callback(len, 4096, no_body_cb, NULL, NULL);
    if (len == 0)
        return MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (obj->inline_len)
        return MHD_create_response_from_buffer(len, (void *)(obj->inline_data + first),
                                               MHD_RESPMEM_MUST_COPY);
    if (TIER_OF(tier_object_flags(obj)) != TIER_HOT)
        return tier_body_response(r, obj, first, len);
    tier_pins_drop(r->srv->tiers, &r->tier_pins, TIER_MAX);
    struct storage_extent *se = arena_calloc(r->arena, obj->n_extents + 1, sizeof(*se));
    extents_from_index(obj->extents, obj->n_extents, se);
    int rc = storage_reader_create(r->srv->storage, r->pin, se, obj->n_extents, first, len, &rd);
    if (rc < 0)
        goto fail;
    /* Under TLS there is no sendfile: MHD would pread an fd response
     * 4 KiB at a time (one TLS record, poll and send each); the streamed
     * reader below reads GET_BLOCK_LEN at once. A body of at most
     * GET_BUFFERED_MAX is read whole into a buffer response instead. A
     * callback response costs a GET_BLOCK_LEN block that MHD zeroes per
     * answer (perf, 64 KiB ranges over HTTPS: page faults, zeroing and
     * unmapping took ~15% of the server's CPU), and MHD sends its header
     * alone, then one 16 KiB record per event-loop turn; from a buffer it
     * sends the header and two records in the turn that read the request
     * (strace, a 64 KiB range: 2 more turns instead of 3). */
    if (storage_reader_is_one_span(rd) && !http_conn_is_tls(r->conn)) {
        /* Zero copy: MHD sendfile()s from its own dup of storage's fd. */
        struct storage_send_span span;
        rc = storage_reader_span(rd, 0, &span);
        if (rc == 0) {
            storage_reader_destroy(rd);
            rd = NULL;
            int fd = fcntl(span.fd, F_DUPFD_CLOEXEC, 0);
            if (fd < 0)
                goto fail;
            resp = MHD_create_response_from_fd_at_offset64(len, fd, (int64_t)span.offset);
            if (!resp)
                close(fd);
            else
                atomic_fetch_add(&r->srv->metrics.gets_zero_copy, 1);
            return resp;
        }
        if (rc != -ENOTSUP)
            goto fail;
    }
    if (len <= GET_BUFFERED_MAX) {
        resp = buffered_response(rd, len);
        if (!resp)
            goto fail;
        storage_reader_destroy(rd);
        rd = NULL;
        /* The bytes are in memory: nothing of storage is held back any
         * more while the client takes them. */
        s3_req_unpin(r);
        r->tls_cork_len = len;
        atomic_fetch_add(&r->srv->metrics.gets_buffered, 1);
    } else {
        resp = MHD_create_response_from_callback(len, GET_BLOCK_LEN, reader_cb, rd, reader_free);
        if (!resp)
            goto fail;
    }
    atomic_fetch_add(&r->srv->metrics.gets_streamed, 1);
    return resp;

fail:
    storage_reader_destroy(rd);
    return NULL;
}

static bool
etag_matches(struct slice header, const uint8_t etag[16])
{
    /* A list of entity tags, or "*". */
    size_t i = 0;
    while (i < header.len) {
        size_t j = i;
        while (j < header.len && header.ptr[j] != ',')
            j++;
        struct slice tok = {header.ptr + i, j - i};
        while (tok.len && tok.ptr[0] == ' ') {
            tok.ptr++;
            tok.len--;
        }
        while (tok.len && tok.ptr[tok.len - 1] == ' ')
            tok.len--;
        uint8_t md5[16];
        if (slice_eq(tok, SLICE_LIT("*")))
            return true;
        if (s3_parse_etag(tok, md5) && memcmp(md5, etag, 16) == 0)
            return true;
        i = j + 1;
    }
    return false;
}

/* RFC 9110 §13.2.2 order, with S3's combinations: If-Match decides over
 * If-Unmodified-Since, If-None-Match over If-Modified-Since. */
enum s3_error
s3_get_conditions(struct s3_req *r, const struct index_object *obj)
{
    int64_t mtime_s = obj->mtime_ns / 1000000000;
    struct slice im = s3_req_header(r, "if-match");
    struct slice inm = s3_req_header(r, "if-none-match");
    struct slice ims = s3_req_header(r, "if-modified-since");
    struct slice ius = s3_req_header(r, "if-unmodified-since");
    int64_t t;
    if (im.ptr) {
        if (!etag_matches(im, obj->etag))
            return S3_ERR_PRECONDITION_FAILED;
    } else if (ius.ptr && http_date_parse(ius, &t) == 0 && mtime_s > t) {
        return S3_ERR_PRECONDITION_FAILED;
    }
    if (inm.ptr) {
        if (etag_matches(inm, obj->etag))
            return S3_ERR_NOT_MODIFIED;
    } else if (ims.ptr && http_date_parse(ims, &t) == 0 && mtime_s <= t) {
        return S3_ERR_NOT_MODIFIED;
    }
    return S3_OK;
}

static const char *overrides[][2] = {
    {"response-content-type", "Content-Type"},
    {"response-content-language", "Content-Language"},
    {"response-expires", "Expires"},
    {"response-cache-control", "Cache-Control"},
    {"response-content-disposition", "Content-Disposition"},
    {"response-content-encoding", "Content-Encoding"},
};

/* Adds the object's headers: validators, stored metadata, overrides, and
 * the checksum when asked for and the whole object is returned. */
static void
object_headers(struct s3_req *r, struct MHD_Response *resp, const struct index_object *obj,
               const struct meta *m, bool is_whole)
{
    char etag[48], date[40];
    s3_format_etag(obj->etag, obj->parts_count, etag);
    s3_format_http_date(obj->mtime_ns, date);
    s3_resp_header(resp, "ETag", etag);
    s3_resp_header(resp, "Last-Modified", date);
    s3_resp_header(resp, "Accept-Ranges", "bytes");
    bool has_type = false;
    bool want_checksum = slice_eq_nocase(s3_req_header(r, "x-amz-checksum-mode"), "ENABLED");
    for (size_t i = 0; i < m->n; i++) {
        const struct meta_entry *e = &m->entries[i];
        if (slice_has_prefix(e->name, SLICE_LIT(META_INTERNAL_PREFIX)) ||
            slice_eq(e->name, SLICE_LIT("x-amz-storage-class")))
            continue; /* the class is the extents' (tier.h), not a stored header */
        bool is_checksum = slice_has_prefix(e->name, SLICE_LIT("x-amz-checksum-"));
        if (is_checksum && !(want_checksum && is_whole))
            continue;
        bool is_overridden = false;
        for (size_t k = 0; k < ARRAY_LEN(overrides); k++)
            if (slice_eq_nocase(e->name, overrides[k][1]) && s3_req_param(r, overrides[k][0]))
                is_overridden = true;
        if (is_overridden)
            continue;
        if (slice_eq(e->name, SLICE_LIT("content-type")))
            has_type = true;
        s3_resp_header(resp, arena_strndup(r->arena, e->name.ptr, e->name.len),
                       arena_strndup(r->arena, e->value.ptr, e->value.len));
    }
    for (size_t k = 0; k < ARRAY_LEN(overrides); k++) {
        const struct s3_param *p = s3_req_param(r, overrides[k][0]);
        if (!p)
            continue;
        s3_resp_header(resp, overrides[k][1], arena_strndup(r->arena, p->value.ptr, p->value.len));
        if (k == 0)
            has_type = true;
    }
    if (!has_type)
        s3_resp_header(resp, "Content-Type", "binary/octet-stream");
    uint32_t flags = tier_object_flags(obj);
    if (flags) /* absent for STANDARD, as S3 */
        s3_resp_header(resp, "x-amz-storage-class", tier_class_name(r->srv->tiers, flags));
    if (obj->parts_count)
        s3_resp_header(resp, "x-amz-mp-parts-count",
                       arena_sprintf(r->arena, "%" PRIu32, obj->parts_count));
}

bool
s3_range_apply(struct s3_req *r, uint64_t size, uint64_t *first, uint64_t *len, int *status,
               char *content_range, size_t content_range_len)
{
    struct range rg;
    enum range_status rs = range_parse(s3_req_header(r, "range"), size, &rg);
    if (rs == RANGE_UNSATISFIABLE) {
        /* As AWS: the error document, and the size in Content-Range. */
        struct MHD_Response *resp = s3_error_response(r, S3_ERR_INVALID_RANGE, NULL);
        snprintf(content_range, content_range_len, "bytes */%" PRIu64, size);
        s3_resp_header(resp, "Content-Range", content_range);
        s3_respond(r, s3_error_status(S3_ERR_INVALID_RANGE), resp);
        return false;
    }
    if (rs == RANGE_OK) {
        *first = rg.first;
        *len = rg.last - rg.first + 1;
        *status = 206;
        range_format_content_range(&rg, size, content_range, content_range_len);
    }
    return true;
}

static void
get_or_head(struct s3_req *r, bool is_head)
{
    struct index_bucket bk;
    struct sse_obj sse = {.mode = SSE_NONE};
    if (!s3_bucket_lookup(r, &bk) || !s3_req_pin(r))
        return;
    struct index_object obj;
    if (!s3_object_lookup(r, &bk, &obj))
        goto unpin;
    struct meta m;
    if (!meta_decode(r->arena, obj.meta, obj.meta_len, &m)) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        goto unpin;
    }
    /* Encrypted: its key (SSE-C: the request's), opened or refused here. */
    if (!sse_for_read(r, &m, false, &sse))
        goto unpin;
    enum s3_error e = s3_get_conditions(r, &obj);
    if (e == S3_ERR_NOT_MODIFIED) {
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        char etag[48], date[40];
        s3_format_etag(obj.etag, obj.parts_count, etag);
        s3_format_http_date(obj.mtime_ns, date);
        s3_resp_header(resp, "ETag", etag);
        s3_resp_header(resp, "Last-Modified", date);
        s3_respond(r, 304, resp);
        goto unpin;
    }
    if (e != S3_OK) {
        s3_respond_error(r, e, NULL);
        goto unpin;
    }
    uint64_t first = 0, len = obj.size;
    int status = 200;
    struct range rg;
    char content_range[96];
    const struct s3_param *pn = s3_req_param(r, "partNumber");
    if (pn) {
        uint64_t n;
        if (parse_u64(pn->value, INDEX_MAX_PARTS, &n) != 0 || n == 0) {
            s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                             "Part number must be an integer between 1 and 10000, inclusive");
            goto unpin;
        }
        if (n > MAX(obj.parts_count, 1u)) {
            s3_respond_error(r, S3_ERR_INVALID_PART_NUMBER, NULL);
            goto unpin;
        }
        if (obj.parts_count) {
            /* The part's byte range, from the part sizes kept at completion. */
            if (!meta_part_sizes_parse(meta_get(&m, META_PART_SIZES), obj.parts_count, (uint32_t)n,
                                       &first, &len)) {
                s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
                goto unpin;
            }
            status = 206;
            rg.first = first;
            rg.last = first + len - 1;
            if (len == 0)
                status = 200;
            else
                range_format_content_range(&rg, obj.size, content_range, sizeof(content_range));
        }
    }
    if (!pn &&
        !s3_range_apply(r, obj.size, &first, &len, &status, content_range, sizeof(content_range)))
        goto unpin;
    struct MHD_Response *resp;
    if (r->rdma && (sse.mode || TIER_OF(tier_object_flags(&obj)) != TIER_HOT)) {
        /* The extents hold ciphertext or tier blobs: the client repeats
         * over HTTP. */
        s3_rdma_decline(r, "an encrypted or tiered object is served over HTTP only");
        goto unpin;
    }
    /* Over RDMA the bytes are in the client's buffer before the reply. */
    if (r->rdma)
        resp = s3_rdma_get(r, &obj, first, len, status);
    else if (sse.mode)
        resp = sse_body_response(r, &obj, &m, &sse, first, len, is_head);
    else
        resp = s3_body_response(r, &obj, first, len, is_head);
    sse_obj_wipe(&sse);
    if (!resp) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        goto unpin;
    }
    object_headers(r, resp, &obj, &m, status == 200);
    sse_resp_headers(resp, &sse);
    s3_version_headers(r, resp, &obj);
    s3_tagging_count_header(r, resp, &m);
    char expiration[LIFECYCLE_HEADER_MAX];
    struct s3_tag *tags;
    size_t n_tags;
    if (!meta_tags_get(&m, r->arena, &tags, &n_tags))
        n_tags = 0; /* corrupt tags select no Tag-filtered rule */
    if (lifecycle_expiration_header(r->srv->lifecycle, bk.id, r->key, obj.size, obj.mtime_ns, tags,
                                    n_tags, expiration, sizeof(expiration)))
        s3_resp_header(resp, "x-amz-expiration", expiration);
    if (status == 206)
        s3_resp_header(resp, "Content-Range", content_range);
    if (!is_head) {
        atomic_fetch_add(&r->srv->metrics.gets, 1);
        atomic_fetch_add(&r->srv->metrics.bytes_out, len);
        r->resp_bytes = len;
    }
    s3_respond(r, status, resp);
    return;

unpin:
    /* Answered without reading from storage: hold nothing back. */
    sse_obj_wipe(&sse);
    s3_req_unpin(r);
}

void
op_get_object(struct s3_req *r)
{
    if (!s3_rdma_begin(r))
        return;
    get_or_head(r, false);
}

void
op_head_object(struct s3_req *r)
{
    get_or_head(r, true);
}
