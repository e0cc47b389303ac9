/*
 * op_list.c: ListObjectsV2 and ListObjects (v1). The index does the work
 * (one seek per common prefix); this file maps S3's parameters onto
 * index_object_list and formats the page. Continuation tokens name the
 * last key or prefix returned: stable under concurrent writes (resuming is
 * "everything after this key"), and checked, so that a token the server
 * did not make is refused (400 InvalidArgument) rather than silently
 * listing from some other place. Token bytes, then base64:
 *
 *     u8 version (1) | key (1..1024 bytes) | u32 BE FNV-1a of the above
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/errors.h"
#include "server/ops.h"
#include "server/req.h"
#include "server/server.h"
#include "server/key.h"
#include "server/util.h"
#include "server/xml_out.h"

#include <assert.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <stdlib.h>

#define LIST_TOKEN_VERSION 1
#define LIST_TOKEN_OVERHEAD 5

static uint32_t
fnv1a32(const uint8_t *p, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

/* Formats the continuation token resuming after 'key' into the arena. */
static const char *
list_token_format(struct arena *a, struct slice key)
{
    size_t n = key.len + LIST_TOKEN_OVERHEAD;
    uint8_t *raw = arena_alloc(a, n);
    raw[0] = LIST_TOKEN_VERSION;
    memcpy(raw + 1, key.ptr, key.len);
    uint32_t h = fnv1a32(raw, key.len + 1);
    for (int i = 0; i < 4; i++)
        raw[key.len + 1 + i] = (uint8_t)(h >> (24 - 8 * i));
    char *tok = arena_alloc(a, base64_encoded_len(n) + 1);
    base64_encode(raw, n, tok);
    return tok;
}

/* Parses 'tok' into the key to resume after (in the arena). Returns false
 * for anything list_token_format did not make. */
static bool
list_token_parse(struct arena *a, struct slice tok, struct slice *key)
{
    if (tok.len == 0 || tok.len > base64_encoded_len(INDEX_MAX_KEY + LIST_TOKEN_OVERHEAD))
        return false;
    uint8_t *raw = arena_alloc(a, base64_decoded_cap(tok.len) + 1);
    long n = base64_decode(tok.ptr, tok.len, raw);
    if (n < LIST_TOKEN_OVERHEAD + 1 || n > INDEX_MAX_KEY + LIST_TOKEN_OVERHEAD ||
        raw[0] != LIST_TOKEN_VERSION)
        return false;
    size_t klen = (size_t)n - LIST_TOKEN_OVERHEAD;
    uint32_t h = fnv1a32(raw, klen + 1);
    for (int i = 0; i < 4; i++)
        if (raw[klen + 1 + i] != (uint8_t)(h >> (24 - 8 * i)))
            return false;
    *key = (struct slice){(const char *)raw + 1, klen};
    return true;
}

/* ---- page formatting ------------------------------------------------------
 *
 * A page is up to 1000 <Contents>, about 200 bytes each: it is written
 * straight into one buffer reserved once for the worst case (every key
 * byte escaped), with no printf, no strlen and no allocation per key. Plain
 * keys (the common case) are copied whole; dates are formatted once per
 * distinct second; the ETag is hex from a table.
 */

/* Worst expansion of one key byte: XML_TEXT_EXPANSION in XML, "%XX" in
 * url form. */
#define LIST_URL_EXPANSION 3
/* Everything of one <Contents> but the key and the owner block. */
#define LIST_CONTENTS_FIXED 256
#define LIST_PREFIX_FIXED 48

#define PUT_LIT(p, s) (memcpy((p), (s), sizeof(s) - 1), (p) + sizeof(s) - 1)

/* URL form as uri_encode writes it for encoding-type=url: unreserved
 * bytes and '/' as they are, every other byte %XX. */
static char *
put_url(char *p, struct slice s)
{
    return uri_encode_to(p, s.ptr, s.len, true);
}

/* The "YYYY-MM-DDT" of the last day formatted. */
struct date_cache {
    int64_t day;
    bool is_valid;
    char text[11];
};

static char *
put_2digits(char *p, unsigned v)
{
    *p++ = (char)('0' + v / 10);
    *p++ = (char)('0' + v % 10);
    return p;
}

/* Writes the ISO 8601 date of 'ns' exactly as s3_format_iso_date does,
 * calling it only when the day changes (UTC days have 86,400 seconds in
 * time_t, so the time of day is plain arithmetic). */
static char *
put_date(char *p, int64_t ns, struct date_cache *dc)
{
    int64_t sec = ns / 1000000000;
    int64_t ms = (ns / 1000000) % 1000;
    if (ms < 0 || sec < 0 || sec > 253402300799LL) { /* outside 0000..9999: rare, slow path */
        char date[40];
        s3_format_iso_date(ns, date);
        size_t n = strlen(date);
        memcpy(p, date, n);
        return p + n;
    }
    int64_t day = sec / 86400;
    unsigned sod = (unsigned)(sec % 86400);
    if (!dc->is_valid || dc->day != day) {
        char date[40];
        s3_format_iso_date(day * 86400 * 1000000000, date);
        memcpy(dc->text, date, sizeof(dc->text));
        dc->day = day;
        dc->is_valid = true;
    }
    memcpy(p, dc->text, sizeof(dc->text));
    p += sizeof(dc->text);
    p = put_2digits(p, sod / 3600);
    *p++ = ':';
    p = put_2digits(p, sod / 60 % 60);
    *p++ = ':';
    p = put_2digits(p, sod % 60);
    *p++ = '.';
    *p++ = (char)('0' + ms / 100);
    p = put_2digits(p, (unsigned)(ms % 100));
    *p++ = 'Z';
    return p;
}

/* The ETag, quotes XML-escaped, as s3_format_etag + xml_escape write it. */
static char *
put_etag(char *p, const uint8_t md5[16], uint32_t parts_count)
{
    p = PUT_LIT(p, "&quot;");
    hex_encode(md5, 16, p); /* 32 digits; the NUL is overwritten next */
    p += 32;
    if (parts_count) {
        *p++ = '-';
        p += u64_format(parts_count, p);
    }
    return PUT_LIT(p, "&quot;");
}

static char *
put_key(char *p, struct slice key, bool is_url)
{
    return is_url ? put_url(p, key) : xml_text_put(p, key);
}

/* The <Owner> block of every <Contents> when the listing shows owners. */
static struct slice
list_owner_block(struct s3_req *r, const char *owner_id, const char *owner_name)
{
    struct buf b;
    buf_init(&b);
    buf_append_str(&b, "<Owner>");
    xml_elem_str(&b, "ID", owner_id);
    xml_elem_str(&b, "DisplayName", owner_name);
    buf_append_str(&b, "</Owner>");
    struct slice out = {arena_memdup(r->arena, b.ptr, b.len), b.len};
    buf_cleanup(&b);
    return out;
}

/*
 * Appends the <Contents> and <CommonPrefixes> of 'res' to 'b' (keys
 * URL-encoded when 'is_url'; 'owner' empty when owners are not shown).
 */
static void
list_format_entries(struct buf *b, const struct index_list_result *res, bool is_url,
                    struct slice owner, const struct tier_set *ts)
{
    size_t expansion = is_url ? LIST_URL_EXPANSION : XML_TEXT_EXPANSION;
    size_t need = 1;
    for (uint32_t i = 0; i < res->n_entries; i++) {
        const struct index_list_entry *e = &res->entries[i];
        need += e->key.len * expansion +
                (e->is_prefix ? LIST_PREFIX_FIXED
                              : LIST_CONTENTS_FIXED + owner.len + TIER_CLASS_NAME_MAX);
    }
    buf_reserve(b, need);
    char *p = b->ptr + b->len;
    struct date_cache dc = {0};
    for (uint32_t i = 0; i < res->n_entries; i++) {
        const struct index_list_entry *e = &res->entries[i];
        if (e->is_prefix)
            continue;
        p = PUT_LIT(p, "<Contents><Key>");
        p = put_key(p, e->key, is_url);
        p = PUT_LIT(p, "</Key><LastModified>");
        p = put_date(p, e->mtime_ns, &dc);
        p = PUT_LIT(p, "</LastModified><ETag>");
        p = put_etag(p, e->etag, e->parts_count);
        p = PUT_LIT(p, "</ETag><Size>");
        p += u64_format(e->size, p);
        p = PUT_LIT(p, "</Size>");
        if (owner.len) {
            memcpy(p, owner.ptr, owner.len);
            p += owner.len;
        }
        const char *cls = tier_class_name(ts, e->flags);
        size_t cls_len = strlen(cls);
        p = PUT_LIT(p, "<StorageClass>");
        memcpy(p, cls, cls_len);
        p += cls_len;
        p = PUT_LIT(p, "</StorageClass></Contents>");
    }
    for (uint32_t i = 0; i < res->n_entries; i++) {
        const struct index_list_entry *e = &res->entries[i];
        if (!e->is_prefix)
            continue;
        p = PUT_LIT(p, "<CommonPrefixes><Prefix>");
        p = put_key(p, e->key, is_url);
        p = PUT_LIT(p, "</Prefix></CommonPrefixes>");
    }
    b->len = (size_t)(p - b->ptr);
    assert(b->len < b->cap);
    b->ptr[b->len] = '\0';
}

/* Answers 200 with the page in 'b', handing its memory to MHD (a page is
 * up to a few hundred KiB: no copy). */
static void
list_respond(struct s3_req *r, struct buf *b)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer_with_free_callback(b->len, b->ptr, free);
    if (!resp) {
        buf_cleanup(b);
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    buf_init(b); /* MHD owns the memory now */
    MHD_add_response_header(resp, "Content-Type", "application/xml");
    s3_respond(r, 200, resp);
}

void
op_list_objects(struct s3_req *r)
{
    struct index_bucket bk;
    if (!s3_bucket_lookup(r, &bk))
        return;
    struct slice list_type = s3_req_param_value(r, "list-type");
    bool is_v2 = slice_eq(list_type, SLICE_LIT("2"));
    if (list_type.len && !is_v2) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "Invalid list-type");
        return;
    }
    struct index_list_params p = {.bucket_id = bk.id, .max_keys = 1000};
    p.prefix = s3_req_param_value(r, "prefix");
    p.delimiter = s3_req_param_value(r, "delimiter");
    const struct s3_param *mk = s3_req_param(r, "max-keys");
    if (mk) {
        uint64_t v;
        if (parse_u64(mk->value, UINT64_MAX, &v) != 0) {
            s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                             "Provided max-keys not an integer or within integer range");
            return;
        }
        p.max_keys = v > 1000 ? 1000 : (uint32_t)v;
    }
    struct slice enc_type = s3_req_param_value(r, "encoding-type");
    bool is_url = false;
    if (s3_req_param(r, "encoding-type")) {
        if (!slice_eq(enc_type, SLICE_LIT("url"))) {
            s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                             "Invalid Encoding Method specified in Request");
            return;
        }
        is_url = true;
    }
    struct slice token = s3_req_param_value(r, "continuation-token");
    bool has_token = is_v2 && s3_req_param(r, "continuation-token");
    struct slice start_after = s3_req_param_value(r, "start-after");
    struct slice marker = s3_req_param_value(r, "marker");
    if (is_v2) {
        /* An empty token means "from the start" (as S3); it is echoed. */
        if (has_token && token.len) {
            if (!list_token_parse(r->arena, token, &p.start_after)) {
                s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                                 "The continuation token provided is incorrect");
                return;
            }
        } else {
            p.start_after = start_after;
        }
    } else {
        p.start_after = marker;
    }
    bool fetch_owner = !is_v2 || slice_eq(s3_req_param_value(r, "fetch-owner"), SLICE_LIT("true"));
    /* Objects are owned by their bucket's owner. */
    const char *owner_id = s3_bucket_owner_id(r, &bk);
    char owner_name[INDEX_USER_NAME_MAX + 1] = "";
    if (fetch_owner)
        s3_owner_name(r, owner_id, owner_name, sizeof(owner_name));

    struct index_list_result res;
    int rc = index_object_list(r->srv->index, &p, r->arena, &res);
    if (rc < 0) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }

    struct buf b;
    buf_init(&b);
    xml_begin(&b, "ListBucketResult");
    xml_elem(&b, "Name", r->bucket);
    xml_elem_key(&b, "Prefix", p.prefix, is_url);
    if (is_v2) {
        if (has_token)
            xml_elem(&b, "ContinuationToken", token);
        if (s3_req_param(r, "start-after"))
            xml_elem_key(&b, "StartAfter", start_after, is_url);
        xml_elem_u64(&b, "KeyCount", res.n_entries);
    } else {
        xml_elem_key(&b, "Marker", marker, is_url);
    }
    xml_elem_u64(&b, "MaxKeys", p.max_keys);
    if (p.delimiter.len)
        xml_elem_key(&b, "Delimiter", p.delimiter, is_url);
    if (is_url)
        xml_elem_str(&b, "EncodingType", "url");
    xml_elem_bool(&b, "IsTruncated", res.is_truncated);
    if (res.is_truncated) {
        /* v1 has NextMarker only with a delimiter: without one, the next
         * marker is the last Key (as S3 documents it). */
        if (is_v2)
            xml_elem_str(&b, "NextContinuationToken", list_token_format(r->arena, res.next_marker));
        else if (p.delimiter.len)
            xml_elem_key(&b, "NextMarker", res.next_marker, is_url);
    }
    list_format_entries(&b, &res, is_url,
                        fetch_owner ? list_owner_block(r, owner_id, owner_name) : SLICE_NULL,
                        r->srv->tiers);
    xml_end(&b, "ListBucketResult");
    list_respond(r, &b);
}
