/*
 * member.c: shardstore's tar extensions of S3 in libshard: member HEAD and
 * GET (?member=NAME), member listings (?list-members, paged, parsed with
 * expat) and batch GET (POST ?batch, its tar answer streamed to the
 * caller through client__perform's sink). The streamed member reader is
 * reader.c's, given the member's query.
 *
 * Query strings are built in SigV4 canonical order (names sorted, values
 * encoded), since client__prepare signs them as given.
 */
#include "config.h"

#include "auth/auth.h"
#include "client/shard_int.h"

#include <expat.h>
#include <stdlib.h>

/* A batch body: 10,000 entries with the longest keys and members fit. */
#define BATCH_MAX 10000

void
client__member_query(struct buf *q, const char *member)
{
    buf_append_str(q, "member=");
    uri_encode(q, member, strlen(member), false);
}

int
shard_member_head(struct shard_client *c, const char *bucket, const char *key, const char *member,
                  struct shard_object_info *out, struct shard_error *err)
{
    struct buf q;
    buf_init(&q);
    client__member_query(&q, member);
    struct client_req req = {.method = "HEAD", .bucket = bucket, .key = key, .query = q.ptr};
    struct client_resp resp;
    client__resp_init(&resp);
    int rc = client__perform(c, &req, NULL, 0, &resp, err);
    if (rc == SHARD_ERR_S3 && resp.status >= 400 && resp.status < 500 && resp.status != 403) {
        /* HEAD has no body: a one-byte GET names the error (NoSuchMember,
         * NoSuchKey, InvalidArchive). */
        struct client_req get = {.method = "GET",
                                 .bucket = bucket,
                                 .key = key,
                                 .query = q.ptr,
                                 .headers = {"Range: bytes=0-0"},
                                 .n_headers = 1};
        struct shard_error get_err;
        if (client__perform(c, &get, NULL, 0, &resp, &get_err) == SHARD_ERR_S3 &&
            resp.status >= 400 && err != NULL)
            *err = get_err;
    }
    if (rc == 0 && out != NULL) {
        memset(out, 0, sizeof(*out));
        out->size = resp.length;
        snprintf(out->etag, sizeof(out->etag), "%s", resp.etag);
        snprintf(out->last_modified, sizeof(out->last_modified), "%s", resp.last_modified);
    }
    client__resp_cleanup(&resp);
    buf_cleanup(&q);
    return rc;
}

/* Where shard_member_get writes: the caller's buffer. */
struct into_buf {
    char *buf;
    size_t cap, len;
};

static int
into_buf_write(void *ctx, const void *data, size_t len)
{
    struct into_buf *b = ctx;
    if (len > b->cap - b->len)
        return -1;
    memcpy(b->buf + b->len, data, len);
    b->len += len;
    return 0;
}

long
shard_member_get(struct shard_client *c, const char *bucket, const char *key, const char *member,
                 uint64_t off, uint64_t len, void *buf, size_t cap, struct shard_error *err)
{
    struct buf q;
    char range[80] = "";
    struct into_buf dst = {buf, cap, 0};
    buf_init(&q);
    client__member_query(&q, member);
    struct client_req req = {.method = "GET", .bucket = bucket, .key = key, .query = q.ptr};
    if (len == 0) {
        buf_cleanup(&q);
        return 0;
    }
    if (off != 0 || len != UINT64_MAX) {
        if (len == UINT64_MAX || off > UINT64_MAX - len)
            snprintf(range, sizeof(range), "Range: bytes=%llu-", (unsigned long long)off);
        else
            snprintf(range, sizeof(range), "Range: bytes=%llu-%llu", (unsigned long long)off,
                     (unsigned long long)(off + len - 1));
        req.headers[req.n_headers++] = range;
    }
    struct client_resp resp;
    client__resp_init(&resp);
    resp.sink = into_buf_write;
    resp.sink_ctx = &dst;
    long rc = client__perform(c, &req, NULL, 0, &resp, err);
    if (rc == SHARD_ERR_IO)
        rc = client__err(err, SHARD_ERR_ARG, resp.status, "BufferTooSmall",
                         "the member's bytes do not fit in %zu bytes", cap);
    else if (rc == SHARD_ERR_S3 && resp.status == 416)
        rc = client__err(err, SHARD_ERR_ARG, 416, "InvalidRange",
                         "offset %llu is past the end of the member", (unsigned long long)off);
    else if (rc == 0 && resp.length != dst.len)
        rc = client__err(err, SHARD_ERR_PROTO, resp.status, "ShortRead", "got %zu of %llu bytes",
                         dst.len, (unsigned long long)resp.length);
    else if (rc == 0)
        rc = (long)dst.len;
    client__resp_cleanup(&resp);
    buf_cleanup(&q);
    return rc;
}

/* ---- listing ------------------------------------------------------------- */

enum list_field { LF_NONE, LF_NAME, LF_OFFSET, LF_SIZE, LF_MODE, LF_MTIME, LF_TRUNC, LF_NEXT };

/* The state of one ListMembersResult page parse. */
struct list_parse {
    XML_Parser xp;
    shard_member_fn fn;
    void *ctx;
    int stop; /* the callback's non-zero value */
    bool is_bad;
    bool in_member;
    enum list_field field;
    struct buf text;
    struct buf name;
    struct shard_member m;
    bool is_truncated;
    struct buf next; /* NextMarker, decoded */
    size_t count;
};

static const char *
local_name(const char *n)
{
    const char *colon = strrchr(n, ':');
    return colon ? colon + 1 : n;
}

static void XMLCALL
list_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    struct list_parse *p = ud;
    const char *n = local_name(name);
    (void)attrs;
    p->text.len = 0;
    p->field = LF_NONE;
    if (strcmp(n, "Member") == 0) {
        p->in_member = true;
        memset(&p->m, 0, sizeof(p->m));
        p->name.len = 0;
    } else if (p->in_member) {
        p->field = strcmp(n, "Name") == 0     ? LF_NAME
                   : strcmp(n, "Offset") == 0 ? LF_OFFSET
                   : strcmp(n, "Size") == 0   ? LF_SIZE
                   : strcmp(n, "Mode") == 0   ? LF_MODE
                   : strcmp(n, "MTime") == 0  ? LF_MTIME
                                              : LF_NONE;
    } else {
        p->field = strcmp(n, "IsTruncated") == 0  ? LF_TRUNC
                   : strcmp(n, "NextMarker") == 0 ? LF_NEXT
                                                  : LF_NONE;
    }
}

/* URL-decodes 'in' (encoding-type=url) into 'out'; false when malformed. */
static bool
decode_into(struct buf *out, const struct buf *in)
{
    out->len = 0;
    buf_reserve(out, in->len + 1);
    long n = uri_decode(in->ptr ? in->ptr : "", in->len, out->ptr);
    if (n < 0)
        return false;
    out->len = (size_t)n;
    out->ptr[n] = '\0';
    return true;
}

static void XMLCALL
list_end(void *ud, const XML_Char *name)
{
    struct list_parse *p = ud;
    const char *n = local_name(name);
    const char *t = p->text.ptr ? p->text.ptr : "";
    buf_append(&p->text, "", 1); /* NUL-terminate for strtoull */
    p->text.len--;
    if (p->stop || p->is_bad)
        return;
    switch (p->field) {
    case LF_NAME:
        if (!decode_into(&p->name, &p->text))
            p->is_bad = true;
        break;
    case LF_OFFSET:
        p->m.offset = strtoull(t, NULL, 10);
        break;
    case LF_SIZE:
        p->m.size = strtoull(t, NULL, 10);
        break;
    case LF_MODE:
        p->m.mode = (uint32_t)strtoul(t, NULL, 10);
        break;
    case LF_MTIME:
        p->m.mtime_s = strtoll(t, NULL, 10);
        break;
    case LF_TRUNC:
        p->is_truncated = strcmp(t, "true") == 0;
        break;
    case LF_NEXT:
        if (!decode_into(&p->next, &p->text))
            p->is_bad = true;
        break;
    case LF_NONE:
        break;
    }
    p->field = LF_NONE;
    if (strcmp(n, "Member") == 0 && p->in_member) {
        p->in_member = false;
        p->m.name = p->name.ptr ? p->name.ptr : "";
        p->count++;
        p->stop = p->fn(p->ctx, &p->m);
        if (p->stop)
            XML_StopParser(p->xp, XML_FALSE);
    }
}

static void XMLCALL
list_text(void *ud, const XML_Char *s, int len)
{
    struct list_parse *p = ud;
    if (p->field != LF_NONE && len > 0)
        buf_append(&p->text, s, (size_t)len);
}

int
shard_member_list(struct shard_client *c, const char *bucket, const char *key, const char *marker,
                  shard_member_fn fn, void *ctx, struct shard_error *err)
{
    struct list_parse p = {.fn = fn, .ctx = ctx};
    struct buf q;
    struct client_resp resp;
    int rc = 0;
    buf_init(&q);
    buf_init(&p.text);
    buf_init(&p.name);
    buf_init(&p.next);
    client__resp_init(&resp);
    buf_append_str(&p.next, marker ? marker : "");
    for (;;) {
        q.len = 0;
        buf_append_str(&q, "encoding-type=url&list-members=");
        if (p.next.len) {
            buf_append_str(&q, "&marker=");
            uri_encode(&q, p.next.ptr, p.next.len, false);
        }
        struct client_req req = {.method = "GET", .bucket = bucket, .key = key, .query = q.ptr};
        rc = client__perform(c, &req, NULL, 0, &resp, err);
        if (rc != 0)
            break;
        p.xp = XML_ParserCreate(NULL);
        XML_SetUserData(p.xp, &p);
        XML_SetElementHandler(p.xp, list_start, list_end);
        XML_SetCharacterDataHandler(p.xp, list_text);
        p.is_truncated = false;
        p.count = 0;
        p.next.len = 0;
        enum XML_Status xs =
            XML_Parse(p.xp, resp.body.ptr ? resp.body.ptr : "", (int)resp.body.len, XML_TRUE);
        XML_ParserFree(p.xp);
        if (p.stop) {
            rc = p.stop;
            break;
        }
        if (xs != XML_STATUS_OK || p.is_bad) {
            rc = client__err(err, SHARD_ERR_PROTO, resp.status, "MalformedXML",
                             "cannot parse the member listing");
            break;
        }
        if (!p.is_truncated)
            break;
        if (p.next.len == 0 || p.count == 0) {
            rc = client__err(err, SHARD_ERR_PROTO, resp.status, "NoMarker",
                             "a truncated member listing without NextMarker");
            break;
        }
    }
    client__resp_cleanup(&resp);
    buf_cleanup(&q);
    buf_cleanup(&p.text);
    buf_cleanup(&p.name);
    buf_cleanup(&p.next);
    return rc;
}

/* ---- batch GET ----------------------------------------------------------- */

/* Appends 's' to 'b' as XML character data; false for a byte XML 1.0
 * cannot carry (a control character other than tab, newline, CR). */
static bool
xml_text(struct buf *b, const char *s)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')
            return false;
        if (ch == '<')
            buf_append_str(b, "&lt;");
        else if (ch == '>')
            buf_append_str(b, "&gt;");
        else if (ch == '&')
            buf_append_str(b, "&amp;");
        else if (ch == '\r')
            buf_append_str(b, "&#13;");
        else
            buf_append(b, s, 1);
    }
    return true;
}

int
shard_batch_get(struct shard_client *c, const char *bucket, const struct shard_batch_entry *entries,
                size_t n, bool continue_on_error, shard_write_fn fn, void *ctx,
                struct shard_error *err)
{
    struct buf body;
    int rc = 0;
    if (n == 0 || n > BATCH_MAX)
        return client__err(err, SHARD_ERR_ARG, 0, "InvalidArgument",
                           "a batch holds 1 to 10000 entries, not %zu", n);
    buf_init(&body);
    buf_append_str(&body, "<Batch>");
    if (continue_on_error)
        buf_append_str(&body, "<ContinueOnError>true</ContinueOnError>");
    for (size_t i = 0; i < n; i++) {
        const struct shard_batch_entry *e = &entries[i];
        if (e->key == NULL || e->key[0] == '\0' || (e->member != NULL && e->member[0] == '\0')) {
            rc = client__err(err, SHARD_ERR_ARG, 0, "InvalidArgument",
                             "entry %zu has an empty key or member", i);
            goto done;
        }
        buf_append_str(&body, "<Entry><Key>");
        bool is_ok = xml_text(&body, e->key);
        buf_append_str(&body, "</Key>");
        if (e->member != NULL) {
            buf_append_str(&body, "<Member>");
            is_ok = is_ok && xml_text(&body, e->member);
            buf_append_str(&body, "</Member>");
        }
        if (e->range != NULL && e->range[0] != '\0') {
            buf_append_str(&body, "<Range>");
            is_ok = is_ok && xml_text(&body, e->range);
            buf_append_str(&body, "</Range>");
        }
        buf_append_str(&body, "</Entry>");
        if (!is_ok) {
            rc = client__err(err, SHARD_ERR_ARG, 0, "InvalidArgument",
                             "entry %zu holds a control character XML cannot carry", i);
            goto done;
        }
    }
    buf_append_str(&body, "</Batch>");
    uint8_t sha[32];
    char sha_hex[65];
    auth_sha256(body.ptr, body.len, sha);
    hex_encode(sha, 32, sha_hex);
    struct client_req req = {
        .method = "POST", .bucket = bucket, .query = "batch=", .payload_hash = sha_hex};
    struct client_resp resp;
    client__resp_init(&resp);
    resp.sink = fn;
    resp.sink_ctx = ctx;
    resp.sink_buffer_len = 256L * 1024;
    rc = client__perform(c, &req, body.ptr, body.len, &resp, err);
    if (rc == SHARD_ERR_NET && resp.sunk > 0)
        rc = client__err(err, SHARD_ERR_NET, resp.status, "BatchCut",
                         "the batch answer ended early after %llu bytes (an entry failed, or "
                         "the connection dropped)",
                         (unsigned long long)resp.sunk);
    client__resp_cleanup(&resp);
done:
    buf_cleanup(&body);
    return rc;
}
