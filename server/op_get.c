/*
 * op_get.c: GetObject and HeadObject.
 *
 * The reader pins storage before the index lookup, so the extents it finds
 * cannot be reused until the request completes, even if the object is
 * overwritten or deleted meanwhile (deferred reclaim). A range inside one
 * extent (every single-PUT object is one extent when space allows) goes
 * out zero-copy: MHD sendfile()s from a dup of the volume fd. A range that
 * crosses extents is streamed through a bounded buffer with read-ahead.
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/errors.h"
#include "server/lifecycle.h"
#include "server/meta.h"
#include "server/ops.h"
#include "server/range.h"
#include "server/req.h"
#include "server/server.h"
#include "server/util.h"
#include "server/xml_out.h"
#include "storage/storage.h"

#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define GET_BLOCK_LEN (256 * 1024)
#define GET_READAHEAD_LEN (8u << 20)

/* State of a multi-extent body; owned by the MHD response (freed by its
 * free callback), so it does not depend on the request's arena. */
struct extent_reader {
    struct storage *storage;
    uint64_t base;            /* object offset of the first byte served */
    uint64_t readahead_until; /* object offset already hinted */
    size_t n;
    struct storage_extent *extents;
    uint64_t *starts; /* object offset of each extent */
    uint64_t object_size;
};

static ssize_t
extent_read_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct extent_reader *er = cls;
    uint64_t off = er->base + pos;
    if (off >= er->object_size)
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t lo = 0, hi = er->n;
    while (hi - lo > 1) { /* last extent with start <= off */
        size_t mid = (lo + hi) / 2;
        if (er->starts[mid] <= off)
            lo = mid;
        else
            hi = mid;
    }
    const struct storage_extent *e = &er->extents[lo];
    uint64_t in_ext = off - er->starts[lo];
    if (off + GET_READAHEAD_LEN / 2 > er->readahead_until) {
        uint64_t from = MAX(off, er->readahead_until);
        uint64_t len = MIN(GET_READAHEAD_LEN, e->len - (from - er->starts[lo]));
        if (from >= er->starts[lo] && from < er->starts[lo] + e->len) {
            storage_readahead(er->storage, e, from - er->starts[lo], len);
            er->readahead_until = from + len;
        }
    }
    size_t want = (size_t)MIN((uint64_t)max, e->len - in_ext);
    ssize_t n = storage_read(er->storage, e, in_ext, buf, want);
    if (n <= 0)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    return n;
}

static void
extent_reader_free(void *cls)
{
    struct extent_reader *er = cls;
    if (!er)
        return;
    free(er->extents);
    free(er->starts);
    free(er);
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

/* Makes the response body for bytes [first, first+len) of 'obj'. */
static struct MHD_Response *
body_response(struct s3_req *r, const struct index_object *obj, uint64_t first, uint64_t len,
              bool is_head)
{
    if (is_head)
        return MHD_create_response_from_callback(len, 4096, no_body_cb, NULL, NULL);
    if (len == 0)
        return MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (obj->inline_len)
        return MHD_create_response_from_buffer(len, (void *)(obj->inline_data + first),
                                               MHD_RESPMEM_MUST_COPY);
    /* Single extent holding the whole range: zero copy. */
    uint64_t start = 0;
    for (uint32_t i = 0; i < obj->n_extents; i++) {
        const struct index_extent *e = &obj->extents[i];
        if (first >= start && first + len <= start + e->len) {
            int fd = storage_volume_fd(r->srv->storage, e->volume);
            if (fd < 0)
                return NULL;
            struct MHD_Response *resp =
                MHD_create_response_from_fd_at_offset64(len, fd, e->offset + (first - start));
            if (!resp)
                close(fd);
            return resp;
        }
        start += e->len;
    }
    struct extent_reader *er = xcalloc(1, sizeof(*er));
    er->storage = r->srv->storage;
    er->base = first;
    er->n = obj->n_extents;
    er->extents = xcalloc(er->n, sizeof(*er->extents));
    er->starts = xcalloc(er->n, sizeof(*er->starts));
    s3_extents_to_storage(obj->extents, er->n, er->extents);
    start = 0;
    for (size_t i = 0; i < er->n; i++) {
        er->starts[i] = start;
        start += er->extents[i].len;
    }
    er->object_size = first + len;
    er->readahead_until = first;
    struct MHD_Response *resp = MHD_create_response_from_callback(
        len, GET_BLOCK_LEN, extent_read_cb, er, extent_reader_free);
    if (!resp)
        extent_reader_free(er);
    return resp;
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
static enum s3_error
get_conditions(struct s3_req *r, const struct index_object *obj)
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
    } else if (ius.ptr && s3_parse_http_date(ius, &t) == 0 && mtime_s > t) {
        return S3_ERR_PRECONDITION_FAILED;
    }
    if (inm.ptr) {
        if (etag_matches(inm, obj->etag))
            return S3_ERR_NOT_MODIFIED;
    } else if (ims.ptr && s3_parse_http_date(ims, &t) == 0 && mtime_s <= t) {
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
        if (slice_has_prefix(e->name, SLICE_LIT(META_INTERNAL_PREFIX)))
            continue;
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
    if (obj->parts_count)
        s3_resp_header(resp, "x-amz-mp-parts-count",
                       arena_sprintf(r->arena, "%" PRIu32, obj->parts_count));
}

static void
get_or_head(struct s3_req *r, bool is_head)
{
    struct index_bucket bk;
    if (!s3_bucket_lookup(r, &bk))
        return;
    r->pin = storage_reader_pin(r->srv->storage);
    r->has_pin = true;
    struct index_object obj;
    int rc = index_object_get(r->srv->index, bk.id, r->key, r->arena, &obj);
    if (rc == -ENOENT) {
        s3_respond_error(r, S3_ERR_NO_SUCH_KEY, NULL);
        return;
    }
    struct meta m;
    if (rc < 0 || !meta_decode(r->arena, obj.meta, obj.meta_len, &m)) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    enum s3_error e = get_conditions(r, &obj);
    if (e == S3_ERR_NOT_MODIFIED) {
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        char etag[48], date[40];
        s3_format_etag(obj.etag, obj.parts_count, etag);
        s3_format_http_date(obj.mtime_ns, date);
        s3_resp_header(resp, "ETag", etag);
        s3_resp_header(resp, "Last-Modified", date);
        s3_respond(r, 304, resp);
        return;
    }
    if (e != S3_OK) {
        s3_respond_error(r, e, NULL);
        return;
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
            return;
        }
        if (n > MAX(obj.parts_count, 1u)) {
            s3_respond_error(r, S3_ERR_INVALID_PART_NUMBER, NULL);
            return;
        }
        if (obj.parts_count) {
            /* The part's byte range, from the part sizes kept at completion. */
            struct slice sizes = meta_get(&m, META_PART_SIZES);
            if (sizes.len != (size_t)obj.parts_count * 8) {
                s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
                return;
            }
            const uint8_t *sp = (const uint8_t *)sizes.ptr;
            for (uint64_t i = 0; i < n; i++) {
                uint64_t v = 0;
                for (int b = 7; b >= 0; b--)
                    v = v << 8 | sp[i * 8 + (uint64_t)b];
                if (i + 1 < n)
                    first += v;
                else
                    len = v;
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
    enum range_status rs = pn ? RANGE_NONE : range_parse(s3_req_header(r, "range"), obj.size, &rg);
    if (rs == RANGE_UNSATISFIABLE) {
        struct buf b;
        buf_init(&b);
        xml_error(&b, "InvalidRange", "The requested range is not satisfiable", r->raw_path,
                  r->request_id);
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(b.len, b.ptr, MHD_RESPMEM_MUST_FREE);
        s3_resp_header(resp, "Content-Type", "application/xml");
        snprintf(content_range, sizeof(content_range), "bytes */%" PRIu64, obj.size);
        s3_resp_header(resp, "Content-Range", content_range);
        s3_respond(r, 416, resp);
        return;
    }
    if (rs == RANGE_OK) {
        first = rg.first;
        len = rg.last - rg.first + 1;
        status = 206;
        range_format_content_range(&rg, obj.size, content_range, sizeof(content_range));
    }
    struct MHD_Response *resp = body_response(r, &obj, first, len, is_head);
    if (!resp) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    object_headers(r, resp, &obj, &m, status == 200);
    char expiration[LIFECYCLE_HEADER_MAX];
    if (lifecycle_expiration_header(r->srv->lifecycle, bk.id, r->key, obj.size, obj.mtime_ns,
                                    expiration, sizeof(expiration)))
        s3_resp_header(resp, "x-amz-expiration", expiration);
    if (status == 206)
        s3_resp_header(resp, "Content-Range", content_range);
    if (!is_head) {
        atomic_fetch_add(&r->srv->metrics.gets, 1);
        atomic_fetch_add(&r->srv->metrics.bytes_out, len);
    }
    s3_respond(r, status, resp);
}

void
op_get_object(struct s3_req *r)
{
    get_or_head(r, false);
}

void
op_head_object(struct s3_req *r)
{
    get_or_head(r, true);
}

void
s3_extents_to_storage(const struct index_extent *in, size_t n, struct storage_extent *out)
{
    for (size_t i = 0; i < n; i++) {
        out[i].volume = in[i].volume;
        out[i].flags = 0;
        out[i].offset = in[i].offset;
        out[i].len = in[i].len;
    }
}
