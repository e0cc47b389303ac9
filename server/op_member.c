/*
 * op_member.c: reads of tar members by name (GET/HEAD ?member=NAME) and
 * member listings (GET ?list-members), plus the member index builder.
 *
 * PutObject of a tar (key ending ".tar" or Content-Type application/x-tar)
 * feeds its payload to a builder as it streams in, and the index is
 * committed with the object in one transaction. Objects made by
 * CompleteMultipartUpload or CopyObject (or PUT under another name) get
 * theirs on first use: the first member request reads the headers through
 * storage, skipping member data, and commits the index for the etag it
 * read (index_op MEMBERS_PUT), so it is built once. Requests run on the
 * event loop while the index exists; when it does not, the handler leaves
 * the build to its end step (on_end), which the route runs on a worker. A malformed or
 * truncated tar never fails a PUT: its index says "not an archive" and
 * member requests answer InvalidArchive. Member bytes go out like any
 * range of the object (s3_body_response: zero-copy spans).
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/commit.h"
#include "server/errors.h"
#include "server/extents.h"
#include "server/ops.h"
#include "server/range.h"
#include "server/req.h"
#include "server/server.h"
#include "server/sse.h"
#include "common/tar.h"
#include "server/util.h"
#include "server/xml_out.h"
#include "storage/storage.h"

#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

/* Past these the object gets no member index ("not an archive"). */
#define MEMBER_NAMES_MAX (64u << 20)
#define MEMBER_LIST_MAX 1000

/* ======================================================================
 * The builder
 * ====================================================================== */

struct member_builder {
    struct tar_parser parser;
    bool is_failed;
    /* Names are kept in 'names'; until finish, each member's name.ptr
     * holds its offset there. */
    struct index_member *members;
    size_t n_members;
    size_t cap_members;
    struct buf names;
};

bool
member_put_is_tar(struct s3_req *r)
{
    static const char ct[] = "application/x-tar";
    struct slice key = r->key;
    if (key.len >= 4 && strncasecmp(key.ptr + key.len - 4, ".tar", 4) == 0)
        return true;
    struct slice v = s3_req_header(r, "content-type");
    size_t n = sizeof(ct) - 1;
    return v.len >= n && strncasecmp(v.ptr, ct, n) == 0 &&
           (v.len == n || v.ptr[n] == ';' || v.ptr[n] == ' ');
}

/* Drops what the builder collected: the object is no readable tar. */
static void
builder_fail(struct member_builder *b)
{
    b->is_failed = true;
    free(b->members);
    b->members = NULL;
    b->n_members = b->cap_members = 0;
    buf_cleanup(&b->names);
    buf_init(&b->names);
}

static int
builder_add(void *ctx, const struct tar_member *m)
{
    struct member_builder *b = ctx;
    if (b->n_members >= INDEX_MEMBERS_MAX || m->name_len > INDEX_MEMBER_NAME_MAX ||
        b->names.len + m->name_len > MEMBER_NAMES_MAX)
        return -1;
    if (b->n_members == b->cap_members) {
        b->cap_members = b->cap_members ? b->cap_members * 2 : 256;
        b->members = xrealloc(b->members, b->cap_members * sizeof(*b->members));
    }
    struct index_member *e = &b->members[b->n_members++];
    e->name = (struct slice){(const char *)(uintptr_t)b->names.len, m->name_len};
    e->offset = m->offset;
    e->size = m->size;
    e->mode = m->mode;
    e->mtime_s = m->mtime_s;
    buf_append(&b->names, m->name, m->name_len);
    return 0;
}

struct member_builder *
member_builder_create(void)
{
    struct member_builder *b = xcalloc(1, sizeof(*b));
    tar_parser_init(&b->parser, builder_add, b);
    buf_init(&b->names);
    return b;
}

void
member_builder_feed(struct member_builder *b, const void *data, size_t len)
{
    if (b->is_failed)
        return;
    if (tar_parser_feed(&b->parser, data, len) != TAR_OK)
        builder_fail(b);
}

void
member_builder_finish(struct member_builder *b, struct index_members *out)
{
    if (!b->is_failed && tar_parser_finish(&b->parser) != TAR_OK)
        builder_fail(b);
    memset(out, 0, sizeof(*out));
    out->is_archive = !b->is_failed;
    if (b->is_failed)
        return;
    for (size_t i = 0; i < b->n_members; i++)
        b->members[i].name.ptr = b->names.ptr + (uintptr_t)b->members[i].name.ptr;
    out->members = b->members;
    out->n_members = (uint32_t)b->n_members;
    b->is_failed = true; /* finished: no more input */
}

void
member_builder_destroy(struct member_builder *b)
{
    if (!b)
        return;
    free(b->members);
    buf_cleanup(&b->names);
    free(b);
}

/* ======================================================================
 * First use: the headers read back through storage
 * ====================================================================== */

/* Reads bytes [pos, pos+len) of 'obj' into 'buf' (the caller holds a pin
 * on its extents), through 'trd' when its bytes are in a tier. Returns 0
 * or -errno (-EIO when short). */
static int
object_read(struct server *srv, const struct index_object *obj, const struct storage_extent *se,
            struct tier_reader *trd, uint64_t pos, uint8_t *buf, size_t len)
{
    while (trd && len) {
        ssize_t got = tier_reader_read(trd, pos, buf, len);
        if (got <= 0)
            return got < 0 ? (int)got : -EIO;
        buf += got;
        pos += (uint64_t)got;
        len -= (size_t)got;
    }
    if (obj->inline_len) {
        if (pos > obj->inline_len || len > obj->inline_len - pos)
            return -EIO;
        memcpy(buf, obj->inline_data + pos, len);
        return 0;
    }
    uint64_t base = 0;
    for (uint32_t i = 0; i < obj->n_extents && len; i++) {
        uint64_t elen = se[i].len;
        if (pos < base + elen) {
            uint64_t off = pos - base;
            size_t n = (size_t)MIN((uint64_t)len, elen - off);
            ssize_t got = storage_read(srv->storage, &se[i], off, buf, n);
            if (got < 0)
                return (int)got;
            if ((size_t)got != n)
                return -EIO;
            buf += n;
            pos += n;
            len -= n;
        }
        base += elen;
    }
    return len ? -EIO : 0;
}

/* Builds the member index of 'obj' by reading its headers only (member
 * data is skipped). Returns 0 (the builder is finished into '*out') or
 * -errno when storage failed (then nothing is known about the object). */
static int
build_from_storage(struct server *srv, struct arena *a, const struct index_object *obj,
                   struct member_builder *b, struct index_members *out)
{
    uint8_t buf[TAR_BLOCK];
    struct storage_extent *se = arena_calloc(a, obj->n_extents + 1, sizeof(*se));
    extents_from_index(obj->extents, obj->n_extents, se);
    /* A tiered object is read through its tier, under pins taken here:
     * after the lookup, so space freed meanwhile (a delete or overwrite)
     * may be read, but then the ETag-checked commit of the index fails. */
    struct tier_reader *trd = NULL;
    struct tier_pins pins = {0};
    if (TIER_OF(tier_object_flags(obj)) != TIER_HOT) {
        int rc = tier_pins_take(srv->tiers, &pins);
        if (rc == 0)
            rc = tier_reader_create(srv->tiers, &pins, obj, 0, obj->size, &trd);
        if (rc < 0) {
            tier_pins_drop(srv->tiers, &pins, TIER_MAX);
            return rc;
        }
    }
    uint64_t pos = 0;
    while (pos < obj->size && !b->is_failed && !tar_parser_is_end(&b->parser)) {
        uint64_t skip = tar_parser_skippable(&b->parser);
        if (skip) {
            skip = MIN(skip, obj->size - pos);
            tar_parser_skip(&b->parser, skip);
            pos += skip;
            continue;
        }
        size_t n = (size_t)MIN((uint64_t)TAR_BLOCK, obj->size - pos);
        int rc = object_read(srv, obj, se, trd, pos, buf, n);
        if (rc < 0) {
            tier_reader_destroy(trd);
            tier_pins_drop(srv->tiers, &pins, TIER_MAX);
            return rc;
        }
        member_builder_feed(b, buf, n);
        pos += n;
    }
    tier_reader_destroy(trd);
    tier_pins_drop(srv->tiers, &pins, TIER_MAX);
    member_builder_finish(b, out);
    return 0;
}

/* The member index of 'obj' (key 'key' in bucket 'bucket_id', read under
 * a pin the caller holds) is missing: builds it and commits it for the
 * etag read; 'request_id' names the request in the log. Returns 0
 * (committed, or the object changed meanwhile: the caller's next lookup
 * says so) or -errno. */
static int
build_on_first_use(struct server *srv, struct arena *a, uint64_t bucket_id, struct slice key,
                   const struct index_object *obj, const char *request_id)
{
    struct member_builder *b = member_builder_create();
    struct index_members ms;
    int rc = build_from_storage(srv, a, obj, b, &ms);
    if (rc < 0)
        goto fail;
    struct index_op op = {
        .kind = INDEX_OP_MEMBERS_PUT,
        .bucket_id = bucket_id,
        .key = key,
        .members = &ms,
        .arena = a,
    };
    memcpy(op.if_match_etag, obj->etag, 16);
    rc = committer_run(srv->committer, &op, 1);
    if (rc == 0 && op.result != 0 && op.result != -ESTALE)
        rc = op.result;
    if (rc == 0)
        log_info("request %s: member index built on first use: %s, %" PRIu32 " members", request_id,
                 ms.is_archive ? "a tar" : "not a tar", ms.n_members);

fail:
    member_builder_destroy(b);
    return rc;
}

int
member_find(struct server *srv, struct arena *a, uint64_t bucket_id, struct slice key,
            const struct index_object *obj, struct slice name, const char *request_id,
            struct index_member *out)
{
    int rc = index_member_get(srv->index, bucket_id, key, obj->etag, name, a, out);
    if (rc == -ENODATA) {
        rc = build_on_first_use(srv, a, bucket_id, key, obj, request_id);
        if (rc == 0)
            rc = index_member_get(srv->index, bucket_id, key, obj->etag, name, a, out);
    }
    if (rc == 0 && (out->offset > obj->size || out->size > obj->size - out->offset))
        rc = -EIO; /* never expected: the index was built from these bytes */
    return rc;
}

/* ======================================================================
 * Requests
 * ====================================================================== */

/* Content types by member extension (lower case), for member reads. */
static const char *const content_types[][2] = {
    {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},
    {"png", "image/png"},
    {"gif", "image/gif"},
    {"webp", "image/webp"},
    {"bmp", "image/bmp"},
    {"tif", "image/tiff"},
    {"tiff", "image/tiff"},
    {"json", "application/json"},
    {"jsonl", "application/jsonl"},
    {"txt", "text/plain"},
    {"cls", "text/plain"},
    {"csv", "text/csv"},
    {"xml", "application/xml"},
    {"html", "text/html"},
    {"npy", "application/octet-stream"},
    {"npz", "application/zip"},
    {"pt", "application/octet-stream"},
    {"pth", "application/octet-stream"},
    {"wav", "audio/wav"},
    {"flac", "audio/flac"},
    {"mp3", "audio/mpeg"},
    {"mp4", "video/mp4"},
    {"webm", "video/webm"},
    {"gz", "application/gzip"},
    {"tar", "application/x-tar"},
    {"pdf", "application/pdf"},
};

static const char *
member_content_type(struct slice name)
{
    size_t i = name.len;
    while (i > 0 && name.ptr[i - 1] != '.' && name.ptr[i - 1] != '/')
        i--;
    if (i == 0 || name.ptr[i - 1] != '.')
        return "application/octet-stream";
    struct slice ext = {name.ptr + i, name.len - i};
    for (size_t k = 0; k < ARRAY_LEN(content_types); k++)
        if (slice_eq_nocase(ext, content_types[k][0]))
            return content_types[k][1];
    return "application/octet-stream";
}

/* Looks up the bucket and pins and reads the object; on failure responds
 * and returns false (the pin is dropped). */
static bool
member_object(struct s3_req *r, struct index_bucket *bk, struct index_object *obj)
{
    if (!s3_bucket_lookup(r, bk) || !s3_req_pin(r))
        return false;
    int rc = index_object_get(r->srv->index, bk->id, r->key, r->arena, obj);
    if (rc == 0 && !sse_object_is_encrypted(obj, r->arena))
        return true;
    if (rc == 0)
        s3_respond_error(r, S3_ERR_NOT_IMPLEMENTED,
                         "Tar members of an encrypted object are not served: GET it whole or by "
                         "range.");
    else
        s3_respond_error(r, rc == -ENOENT ? S3_ERR_NO_SUCH_KEY : s3_error_from_errno(rc), NULL);
    s3_req_unpin(r);
    return false;
}

/* Answers the outcome 'rc' of a member index lookup that did not succeed. */
static void
member_respond_error(struct s3_req *r, int rc)
{
    if (rc == -EILSEQ)
        s3_respond_error(r, S3_ERR_INVALID_ARCHIVE, NULL);
    else if (rc == -ENOENT)
        s3_respond_error(r, S3_ERR_NO_SUCH_MEMBER, NULL);
    else if (rc == -ENODATA)
        /* Overwritten while its index was being built: try again. */
        s3_respond_error(r, S3_ERR_SLOW_DOWN, "The object changed; retry.");
    else
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
}

static void get_member_end(struct s3_req *r);
static void head_member_end(struct s3_req *r);

/* Serves GET or HEAD ?member=. Without an index for the object, when
 * 'may_build' is false (the event loop), defers to the end step, which
 * calls again with 'may_build' on a worker. */
static void
get_or_head_member(struct s3_req *r, bool is_head, bool may_build)
{
    struct index_bucket bk;
    struct index_object obj;
    struct index_member m;
    char content_range[RANGE_FORMAT_LEN];
    struct slice name = s3_req_param_value(r, "member");
    if (name.len == 0 || name.len > INDEX_MEMBER_NAME_MAX) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "The member name must be 1 to 4096 bytes.");
        return;
    }
    if (!member_object(r, &bk, &obj))
        return;
    /* The validators are the object's: a member changes only with it. */
    enum s3_error ce = s3_get_conditions(r, &obj);
    if (ce != S3_OK) {
        s3_respond_error(r, ce, NULL);
        goto unpin;
    }
    int rc = index_member_get(r->srv->index, bk.id, r->key, obj.etag, name, r->arena, &m);
    if (rc == -ENODATA && !may_build) {
        r->on_end = is_head ? head_member_end : get_member_end;
        goto unpin;
    }
    if (rc == -ENODATA) {
        rc = build_on_first_use(r->srv, r->arena, bk.id, r->key, &obj, r->request_id);
        if (rc == 0)
            rc = index_member_get(r->srv->index, bk.id, r->key, obj.etag, name, r->arena, &m);
    }
    if (rc == 0 && (m.offset > obj.size || m.size > obj.size - m.offset))
        rc = -EIO; /* never expected: the index was built from these bytes */
    if (rc != 0) {
        member_respond_error(r, rc);
        goto unpin;
    }
    uint64_t first = 0, len = m.size;
    int status = 200;
    if (!s3_range_apply(r, m.size, &first, &len, &status, content_range, sizeof(content_range)))
        goto unpin;
    struct MHD_Response *resp = s3_body_response(r, &obj, m.offset + first, len, is_head);
    if (!resp) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        goto unpin;
    }
    char etag[48], date[40];
    s3_format_etag(obj.etag, obj.parts_count, etag);
    s3_format_http_date(obj.mtime_ns, date);
    s3_resp_header(resp, "ETag", etag);
    s3_resp_header(resp, "Last-Modified", date);
    s3_resp_header(resp, "Accept-Ranges", "bytes");
    s3_resp_header(resp, "Content-Type", member_content_type(m.name));
    if (status == 206)
        s3_resp_header(resp, "Content-Range", content_range);
    if (!is_head) {
        atomic_fetch_add(&r->srv->metrics.gets, 1);
        atomic_fetch_add(&r->srv->metrics.bytes_out, len);
    }
    s3_respond(r, status, resp);
    return;

unpin:
    s3_req_unpin(r);
}

static void
get_member_end(struct s3_req *r)
{
    get_or_head_member(r, false, true);
}

static void
head_member_end(struct s3_req *r)
{
    get_or_head_member(r, true, true);
}

void
op_get_member(struct s3_req *r)
{
    get_or_head_member(r, false, false);
}

void
op_head_member(struct s3_req *r)
{
    get_or_head_member(r, true, false);
}

/* Formats one page of members as XML (S3 style) or JSON. */
static void
format_list(struct s3_req *r, struct buf *b, bool is_json, bool is_url, struct slice marker,
            uint32_t max, const struct index_member *ms, uint32_t n, bool is_truncated)
{
    struct slice next = is_truncated && n ? ms[n - 1].name : SLICE_NULL;
    if (is_json) {
        buf_append_str(b, "{\"bucket\":");
        json_string(b, r->bucket);
        buf_append_str(b, ",\"key\":");
        json_string(b, r->key);
        buf_append_str(b, ",\"marker\":");
        json_string(b, marker);
        buf_printf(b, ",\"max_members\":%" PRIu32 ",\"is_truncated\":%s", max,
                   is_truncated ? "true" : "false");
        if (next.len) {
            buf_append_str(b, ",\"next_marker\":");
            json_string(b, next);
        }
        buf_append_str(b, ",\"members\":[");
        for (uint32_t i = 0; i < n; i++) {
            buf_append_str(b, i ? ",{\"name\":" : "{\"name\":");
            json_string(b, ms[i].name);
            buf_printf(b,
                       ",\"offset\":%" PRIu64 ",\"size\":%" PRIu64 ",\"mode\":%" PRIu32
                       ",\"mtime\":%" PRId64 "}",
                       ms[i].offset, ms[i].size, ms[i].mode, ms[i].mtime_s);
        }
        buf_append_str(b, "]}\n");
        return;
    }
    xml_begin(b, "ListMembersResult");
    xml_elem(b, "Bucket", r->bucket);
    xml_elem_key(b, "Key", r->key, is_url);
    xml_elem_key(b, "Marker", marker, is_url);
    xml_elem_u64(b, "MaxMembers", max);
    xml_elem_bool(b, "IsTruncated", is_truncated);
    if (next.len)
        xml_elem_key(b, "NextMarker", next, is_url);
    if (is_url)
        xml_elem_str(b, "EncodingType", "url");
    for (uint32_t i = 0; i < n; i++) {
        buf_append_str(b, "<Member>");
        xml_elem_key(b, "Name", ms[i].name, is_url);
        xml_elem_u64(b, "Offset", ms[i].offset);
        xml_elem_u64(b, "Size", ms[i].size);
        xml_elem_u64(b, "Mode", ms[i].mode);
        buf_printf(b, "<MTime>%" PRId64 "</MTime>", ms[i].mtime_s);
        buf_append_str(b, "</Member>");
    }
    xml_end(b, "ListMembersResult");
}

static void list_members(struct s3_req *r, bool may_build);

static void
list_members_end(struct s3_req *r)
{
    list_members(r, true);
}

void
op_list_members(struct s3_req *r)
{
    list_members(r, false);
}

/* Serves ?list-members; 'may_build' as in get_or_head_member. */
static void
list_members(struct s3_req *r, bool may_build)
{
    struct index_bucket bk;
    struct index_object obj;
    struct index_member *ms = NULL;
    uint32_t n = 0;
    bool is_truncated = false;
    uint64_t max = MEMBER_LIST_MAX;
    const struct s3_param *p = s3_req_param(r, "max-members");
    if (p && parse_u64(p->value, UINT64_MAX, &max) != 0) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "max-members must be a number.");
        return;
    }
    struct slice fmt = s3_req_param_value(r, "format");
    bool is_json = slice_eq(fmt, SLICE_LIT("json"));
    if (fmt.len && !is_json && !slice_eq(fmt, SLICE_LIT("xml"))) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "format must be xml or json.");
        return;
    }
    struct slice enc = s3_req_param_value(r, "encoding-type");
    bool is_url = slice_eq(enc, SLICE_LIT("url"));
    if (s3_req_param(r, "encoding-type") && !is_url) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                         "Invalid Encoding Method specified in Request");
        return;
    }
    struct slice marker = s3_req_param_value(r, "marker");
    max = MIN(max, (uint64_t)MEMBER_LIST_MAX);
    if (!member_object(r, &bk, &obj))
        return;
    /* Only the index is read: storage is needed only to build it. */
    int rc = index_member_list(r->srv->index, bk.id, r->key, obj.etag, marker,
                               max ? (uint32_t)max : 1, r->arena, &ms, &n, &is_truncated);
    if (rc == -ENODATA && !may_build) {
        s3_req_unpin(r);
        r->on_end = list_members_end;
        return;
    }
    if (rc == -ENODATA) {
        rc = build_on_first_use(r->srv, r->arena, bk.id, r->key, &obj, r->request_id);
        if (rc == 0)
            rc = index_member_list(r->srv->index, bk.id, r->key, obj.etag, marker,
                                   max ? (uint32_t)max : 1, r->arena, &ms, &n, &is_truncated);
    }
    s3_req_unpin(r);
    if (rc == -ENOENT) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "The marker is not a member of the archive.");
        return;
    }
    if (rc != 0) {
        member_respond_error(r, rc);
        return;
    }
    if (max == 0) {
        /* As max-keys=0: nothing listed, not truncated. */
        n = 0;
        is_truncated = false;
    }
    struct buf b;
    buf_init(&b);
    format_list(r, &b, is_json, is_url, marker, (uint32_t)max, ms, n, is_truncated);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer_with_free_callback(b.len, b.ptr, free);
    if (!resp) {
        buf_cleanup(&b);
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    s3_resp_header(resp, "Content-Type", is_json ? "application/json" : "application/xml");
    s3_respond(r, 200, resp);
}
