/*
 * xml.c: the S3 answers the client reads, parsed with expat: <Error>,
 * single values (UploadId), ListObjectsV2 and ListObjectVersions pages
 * (keys URI-decoded when the page is url-encoded; one parser for both) and
 * DeleteObjects results.
 * Character data is collected only inside the few elements wanted, into a
 * fixed buffer, so a list page costs one pass of expat and no allocation
 * (the `shard bench list` fast path counts entries and keeps only the token).
 */
#include "config.h"

#include "client/shard_int.h"

#include <expat.h>
#include <stdlib.h>

/* Room for a 1024-byte key URI-encoded (3 bytes each) with its NUL. */
#define TEXT_CAP 4096

/* ------------------------------------------------------------------------ */
/* Single values                                                              */
/* ------------------------------------------------------------------------ */

struct text_ctx {
    const char *names[2]; /* elements wanted */
    char *outs[2];
    size_t caps[2];
    bool done[2];
    int active; /* index into names while inside one, else -1 */
    size_t len;
};

static void XMLCALL
text_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    (void)attrs;
    struct text_ctx *t = ud;
    for (int i = 0; i < 2; i++) {
        if (t->names[i] != NULL && !t->done[i] && strcmp(name, t->names[i]) == 0) {
            t->active = i;
            t->len = 0;
            t->outs[i][0] = '\0';
        }
    }
}

static void XMLCALL
text_end(void *ud, const XML_Char *name)
{
    struct text_ctx *t = ud;
    if (t->active >= 0 && strcmp(name, t->names[t->active]) == 0) {
        t->done[t->active] = true;
        t->active = -1;
    }
}

static void XMLCALL
text_chars(void *ud, const XML_Char *s, int len)
{
    struct text_ctx *t = ud;
    if (t->active < 0)
        return;
    int i = t->active;
    size_t n = MIN((size_t)len, t->caps[i] - 1 - t->len);
    memcpy(t->outs[i] + t->len, s, n);
    t->len += n;
    t->outs[i][t->len] = '\0';
}

/* Parses 'xml' collecting up to two element texts; returns 0 when it parsed. */
static int
parse_texts(const char *xml, size_t len, struct text_ctx *t)
{
    XML_Parser p = XML_ParserCreate(NULL);
    if (p == NULL)
        return -1;
    t->active = -1;
    XML_SetUserData(p, t);
    XML_SetElementHandler(p, text_start, text_end);
    XML_SetCharacterDataHandler(p, text_chars);
    int rc = XML_Parse(p, xml, (int)len, 1) == XML_STATUS_OK ? 0 : -1;
    XML_ParserFree(p);
    return rc;
}

int
client__xml_error(const char *xml, size_t len, char *code, size_t code_cap, char *message,
                  size_t message_cap)
{
    struct text_ctx t = {{"Code", "Message"}, {code, message}, {code_cap, message_cap}, {0}, -1, 0};
    code[0] = message[0] = '\0';
    if (len > INT32_MAX || parse_texts(xml, len, &t) != 0 || !t.done[0])
        return -1;
    return 0;
}

int
client__xml_text(const char *xml, size_t len, const char *name, char *out, size_t cap)
{
    struct text_ctx t = {{name, NULL}, {out, NULL}, {cap, 0}, {0}, -1, 0};
    out[0] = '\0';
    if (len > INT32_MAX || parse_texts(xml, len, &t) != 0 || !t.done[0])
        return -1;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* ListObjectsV2 and ListObjectVersions pages                                 */
/* ------------------------------------------------------------------------ */

enum list_field {
    F_NONE,
    F_KEY,
    F_SIZE,
    F_ETAG,
    F_MTIME,
    F_PREFIX,
    F_TRUNC,
    F_TOKEN,
    F_VID,
    F_LATEST,
    F_KEY_MARKER,
    F_VID_MARKER
};

/* Room for a version id (shardstore's are 32 characters, AWS's 32). */
#define VID_CAP 256

struct client_list_parser {
    XML_Parser xp;
    shard_list_fn fn;
    shard_version_fn vfn; /* ListObjectVersions: instead of 'fn' */
    void *ctx;
    bool is_versions; /* a ListObjectVersions parser */
    int depth;
    int in_entry; /* 0, 1 Contents, 2 CommonPrefixes, 3 Version, 4 DeleteMarker */
    enum list_field field;
    size_t count;
    bool is_truncated;
    bool is_url; /* the page's keys are URI-encoded */
    int stop_rc;
    struct shard_list_entry entry;
    char key[TEXT_CAP];
    char text[TEXT_CAP];
    size_t text_len;
    char token[TEXT_CAP];
    char vid[VID_CAP];
    bool is_latest;
    char key_marker[TEXT_CAP]; /* NextKeyMarker, decoded */
    char vid_marker[VID_CAP];  /* NextVersionIdMarker */
};

static void
text_copy(char *dst, size_t cap, const char *src, size_t len)
{
    len = MIN(len, cap - 1);
    memcpy(dst, src, len);
    dst[len] = '\0';
}

/* Copies 'src[0..len)' URI-decoded as S3 encodes listings (form style: '+'
 * is a space, as botocore decodes them); a '%' without two hex digits stays
 * as it is. */
void
client__uri_decode_form(char *dst, size_t cap, const char *src, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n + 1 < cap; i++) {
        int hi, lo;
        if (src[i] == '%' && i + 2 < len && (hi = hex_digit_value(src[i + 1])) >= 0 &&
            (lo = hex_digit_value(src[i + 2])) >= 0) {
            dst[n++] = (char)(hi << 4 | lo);
            i += 2;
        } else {
            dst[n++] = src[i] == '+' ? ' ' : src[i];
        }
    }
    dst[n] = '\0';
}

static void XMLCALL
list_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    (void)attrs;
    struct client_list_parser *p = ud;
    p->depth++;
    p->field = F_NONE;
    bool wants_fields = p->fn != NULL || p->vfn != NULL;
    if (p->depth == 2) {
        if (p->is_versions && name[0] == 'V' && strcmp(name, "Version") == 0) {
            p->count++;
            p->in_entry = 3;
        } else if (p->is_versions && name[0] == 'D' && strcmp(name, "DeleteMarker") == 0) {
            p->count++;
            p->in_entry = 4;
        } else if (p->is_versions && name[0] == 'N' && strcmp(name, "NextKeyMarker") == 0) {
            p->field = F_KEY_MARKER;
        } else if (p->is_versions && name[0] == 'N' && strcmp(name, "NextVersionIdMarker") == 0) {
            p->field = F_VID_MARKER;
        } else if (!p->is_versions && name[0] == 'C' && strcmp(name, "Contents") == 0) {
            p->count++;
            p->in_entry = 1;
        } else if (name[0] == 'C' && strcmp(name, "CommonPrefixes") == 0) {
            p->count++;
            p->in_entry = 2;
        } else if (name[0] == 'I' && strcmp(name, "IsTruncated") == 0) {
            p->field = F_TRUNC;
        } else if (name[0] == 'N' && strcmp(name, "NextContinuationToken") == 0) {
            p->field = F_TOKEN;
        }
    } else if (p->depth == 3 && p->in_entry && wants_fields) {
        switch (name[0]) {
        case 'K':
            p->field = strcmp(name, "Key") == 0 ? F_KEY : F_NONE;
            break;
        case 'S':
            p->field = strcmp(name, "Size") == 0 ? F_SIZE : F_NONE;
            break;
        case 'E':
            p->field = strcmp(name, "ETag") == 0 ? F_ETAG : F_NONE;
            break;
        case 'L':
            p->field = strcmp(name, "LastModified") == 0 ? F_MTIME : F_NONE;
            break;
        case 'P':
            p->field = strcmp(name, "Prefix") == 0 ? F_PREFIX : F_NONE;
            break;
        case 'V':
            p->field = strcmp(name, "VersionId") == 0 ? F_VID : F_NONE;
            break;
        case 'I':
            p->field = strcmp(name, "IsLatest") == 0 ? F_LATEST : F_NONE;
            break;
        default:
            break;
        }
    }
    p->text_len = 0;
}

static void XMLCALL
list_end(void *ud, const XML_Char *name)
{
    (void)name;
    struct client_list_parser *p = ud;
    const char *t = p->text;
    size_t n = p->text_len;
    p->text[n] = '\0';
    switch (p->field) {
    case F_NONE:
        break;
    case F_KEY:
    case F_PREFIX:
        if (p->is_url)
            client__uri_decode_form(p->key, sizeof(p->key), t, n);
        else
            text_copy(p->key, sizeof(p->key), t, n);
        break;
    case F_SIZE:
        p->entry.info.size = strtoull(t, NULL, 10);
        break;
    case F_ETAG:
        text_copy(p->entry.info.etag, sizeof(p->entry.info.etag), t, n);
        break;
    case F_MTIME:
        text_copy(p->entry.info.last_modified, sizeof(p->entry.info.last_modified), t, n);
        break;
    case F_TRUNC:
        p->is_truncated = n == 4 && memcmp(t, "true", 4) == 0;
        break;
    case F_TOKEN:
        text_copy(p->token, sizeof(p->token), t, n);
        break;
    case F_VID:
        text_copy(p->vid, sizeof(p->vid), t, n);
        break;
    case F_LATEST:
        p->is_latest = n == 4 && memcmp(t, "true", 4) == 0;
        break;
    case F_KEY_MARKER:
        if (p->is_url)
            client__uri_decode_form(p->key_marker, sizeof(p->key_marker), t, n);
        else
            text_copy(p->key_marker, sizeof(p->key_marker), t, n);
        break;
    case F_VID_MARKER:
        text_copy(p->vid_marker, sizeof(p->vid_marker), t, n);
        break;
    }
    p->field = F_NONE;
    if (p->depth == 2 && p->in_entry) {
        if (p->stop_rc == 0 && p->fn != NULL) {
            p->entry.key = p->key;
            p->entry.is_prefix = p->in_entry == 2;
            p->stop_rc = p->fn(p->ctx, &p->entry);
        } else if (p->stop_rc == 0 && p->vfn != NULL) {
            struct shard_version_entry v = {.key = p->key,
                                            .version_id = p->in_entry == 2 ? "" : p->vid,
                                            .is_prefix = p->in_entry == 2,
                                            .is_latest = p->in_entry != 2 && p->is_latest,
                                            .is_delete_marker = p->in_entry == 4,
                                            .info = p->entry.info};
            if (p->in_entry != 3) {
                /* A marker or prefix has no size or ETag, whatever the page says. */
                v.info.size = 0;
                v.info.etag[0] = '\0';
            }
            p->stop_rc = p->vfn(p->ctx, &v);
        }
        if (p->stop_rc != 0)
            XML_StopParser(p->xp, XML_FALSE);
        memset(&p->entry, 0, sizeof(p->entry));
        p->key[0] = '\0';
        p->vid[0] = '\0';
        p->is_latest = false;
        p->in_entry = 0;
    }
    p->depth--;
}

static void XMLCALL
list_chars(void *ud, const XML_Char *s, int len)
{
    struct client_list_parser *p = ud;
    if (p->field == F_NONE)
        return;
    size_t n = MIN((size_t)len, sizeof(p->text) - 1 - p->text_len);
    memcpy(p->text + p->text_len, s, n);
    p->text_len += n;
}

struct client_list_parser *
client__list_parser_create(shard_list_fn fn, void *ctx)
{
    struct client_list_parser *p = xcalloc(1, sizeof(*p));
    p->xp = XML_ParserCreate(NULL);
    if (p->xp == NULL)
        abort();
    p->fn = fn;
    p->ctx = ctx;
    return p;
}

struct client_list_parser *
client__list_versions_parser_create(shard_version_fn fn, void *ctx)
{
    struct client_list_parser *p = client__list_parser_create(NULL, ctx);
    p->vfn = fn;
    p->is_versions = true;
    return p;
}

void
client__list_parser_destroy(struct client_list_parser *p)
{
    if (p == NULL)
        return;
    XML_ParserFree(p->xp);
    free(p);
}

int
client__list_parser_page(struct client_list_parser *p, const char *xml, size_t len)
{
    XML_ParserReset(p->xp, NULL);
    XML_SetUserData(p->xp, p);
    XML_SetElementHandler(p->xp, list_start, list_end);
    XML_SetCharacterDataHandler(p->xp, list_chars);
    p->depth = 0;
    p->in_entry = 0;
    p->field = F_NONE;
    p->count = 0;
    p->is_truncated = false;
    p->stop_rc = 0;
    p->token[0] = '\0';
    p->key[0] = '\0';
    p->vid[0] = '\0';
    p->is_latest = false;
    p->key_marker[0] = '\0';
    p->vid_marker[0] = '\0';
    memset(&p->entry, 0, sizeof(p->entry));
    if (len > INT32_MAX)
        return -1;
    /* S3 may put EncodingType after the entries, so it is looked up before
     * parsing. A literal '<' in character data is always escaped, so these
     * bytes can only be the element itself, never part of a key. */
    static const char URL_TAG[] = "<EncodingType>url</EncodingType>";
    p->is_url = xml != NULL && memmem(xml, len, URL_TAG, sizeof(URL_TAG) - 1) != NULL;
    enum XML_Status st = XML_Parse(p->xp, xml, (int)len, 1);
    if (p->stop_rc != 0)
        return p->stop_rc;
    return st == XML_STATUS_OK ? 0 : -1;
}

size_t
client__list_parser_count(const struct client_list_parser *p)
{
    return p->count;
}

bool
client__list_parser_truncated(const struct client_list_parser *p)
{
    return p->is_truncated;
}

const char *
client__list_parser_token(const struct client_list_parser *p)
{
    return p->token;
}

const char *
client__list_parser_key_marker(const struct client_list_parser *p)
{
    return p->key_marker;
}

const char *
client__list_parser_version_marker(const struct client_list_parser *p)
{
    return p->vid_marker;
}

/* ------------------------------------------------------------------------ */
/* DeleteObjects results                                                      */
/* ------------------------------------------------------------------------ */

struct del_ctx {
    int depth;
    bool in_error;
    int n_errors;
    int field; /* 1 Key, 2 Code, 3 Message */
    char key[TEXT_CAP], code[64], message[256];
    size_t len;
};

static void XMLCALL
del_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    (void)attrs;
    struct del_ctx *d = ud;
    d->depth++;
    d->field = 0;
    if (d->depth == 2 && strcmp(name, "Error") == 0) {
        d->in_error = true;
        d->n_errors++;
    } else if (d->depth == 3 && d->in_error && d->n_errors == 1) {
        d->field = strcmp(name, "Key") == 0       ? 1
                   : strcmp(name, "Code") == 0    ? 2
                   : strcmp(name, "Message") == 0 ? 3
                                                  : 0;
        d->len = 0;
    }
}

static void XMLCALL
del_end(void *ud, const XML_Char *name)
{
    (void)name;
    struct del_ctx *d = ud;
    if (d->depth == 2)
        d->in_error = false;
    d->field = 0;
    d->depth--;
}

static void XMLCALL
del_chars(void *ud, const XML_Char *s, int len)
{
    struct del_ctx *d = ud;
    char *dst = d->field == 1 ? d->key : d->field == 2 ? d->code : d->field == 3 ? d->message : 0;
    size_t cap = d->field == 1   ? sizeof(d->key)
                 : d->field == 2 ? sizeof(d->code)
                                 : sizeof(d->message);
    if (dst == NULL)
        return;
    size_t n = MIN((size_t)len, cap - 1 - d->len);
    memcpy(dst + d->len, s, n);
    d->len += n;
    dst[d->len] = '\0';
}

int
client__xml_delete_result(const char *xml, size_t len, struct shard_error *first)
{
    struct del_ctx *d = xcalloc(1, sizeof(*d));
    XML_Parser p = XML_ParserCreate(NULL);
    int rc = -1;
    if (p == NULL || len > INT32_MAX)
        goto fail;
    XML_SetUserData(p, d);
    XML_SetElementHandler(p, del_start, del_end);
    XML_SetCharacterDataHandler(p, del_chars);
    if (XML_Parse(p, xml, (int)len, 1) != XML_STATUS_OK)
        goto fail;
    rc = d->n_errors;
    if (rc > 0)
        client__err(first, SHARD_ERR_S3, 200, d->code, "%s: %s", d->key, d->message);
fail:
    if (p != NULL)
        XML_ParserFree(p);
    free(d);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* ListAllMyBucketsResult                                                     */
/* ------------------------------------------------------------------------ */

struct buckets_ctx {
    XML_Parser xp;
    shard_list_fn fn;
    void *ctx;
    int depth, field; /* 1 Name, 2 CreationDate */
    int rc;
    struct shard_list_entry e;
    char name[TEXT_CAP];
    size_t len;
};

static void XMLCALL
buckets_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    (void)attrs;
    struct buckets_ctx *b = ud;
    b->depth++;
    b->field = 0;
    b->len = 0;
    if (b->depth == 4 && strcmp(name, "Name") == 0)
        b->field = 1;
    else if (b->depth == 4 && strcmp(name, "CreationDate") == 0)
        b->field = 2;
}

static void XMLCALL
buckets_end(void *ud, const XML_Char *name)
{
    struct buckets_ctx *b = ud;
    if (b->depth == 3 && strcmp(name, "Bucket") == 0 && b->rc == 0) {
        b->e.key = b->name;
        b->rc = b->fn(b->ctx, &b->e);
        if (b->rc != 0)
            XML_StopParser(b->xp, XML_FALSE);
        memset(&b->e, 0, sizeof(b->e));
        b->name[0] = '\0';
    }
    b->field = 0;
    b->depth--;
}

static void XMLCALL
buckets_chars(void *ud, const XML_Char *s, int len)
{
    struct buckets_ctx *b = ud;
    char *dst = b->field == 1 ? b->name : b->field == 2 ? b->e.info.last_modified : NULL;
    size_t cap = b->field == 1 ? sizeof(b->name) : sizeof(b->e.info.last_modified);
    if (dst == NULL)
        return;
    size_t n = MIN((size_t)len, cap - 1 - b->len);
    memcpy(dst + b->len, s, n);
    b->len += n;
    dst[b->len] = '\0';
}

int
client__xml_buckets(const char *xml, size_t len, shard_list_fn fn, void *ctx)
{
    struct buckets_ctx *b = xcalloc(1, sizeof(*b));
    int rc = -1;
    b->xp = XML_ParserCreate(NULL);
    b->fn = fn;
    b->ctx = ctx;
    if (b->xp == NULL || len > INT32_MAX)
        goto fail;
    XML_SetUserData(b->xp, b);
    XML_SetElementHandler(b->xp, buckets_start, buckets_end);
    XML_SetCharacterDataHandler(b->xp, buckets_chars);
    enum XML_Status st = XML_Parse(b->xp, xml, (int)len, 1);
    rc = b->rc != 0 ? b->rc : st == XML_STATUS_OK ? 0 : -1;
fail:
    if (b->xp != NULL)
        XML_ParserFree(b->xp);
    free(b);
    return rc;
}
