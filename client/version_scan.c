/*
 * version_scan.c: ListVersionsResult pages (ListObjectVersions) read by a
 * hand-written scanner instead of expat, which took two thirds of the CPU
 * of `shard ls --versions`. It is the state machine of xml.c's expat list
 * parser in its versions mode (same fields, same depths, same "a start tag
 * forgets the text so far" rule), driven by one pass over the page:
 *
 *   prolog   [UTF-8 BOM] (<?xml ... ?> | <!-- --> | <?pi?> | space)*   then the root
 *   content  text with &amp; &lt; &gt; &quot; &apos; &#N; &#xN; (decoded, CR LF -> LF),
 *            <![CDATA[...]]>, comments, PIs, <a attr="v">, <a/>, </a>
 *
 * Invariants: every byte read is inside [xml, xml+len); end tags must match
 * their start tags and the root must close, so a page cut short is an error,
 * never a short page; a page whose prolog it does not read (a DOCTYPE, an
 * encoding other than UTF-8, UTF-16) goes to the expat parser whole, before
 * any entry is handed out. tests/unit/client/test_version_scan.c and
 * fuzz_list_xml compare the two parsers.
 */
#include "config.h"

#include "client/shard_int.h"

#include <stdlib.h>
#include <strings.h>

/* As xml.c: room for a 1024-byte key URI-encoded, and a version id. */
#define SCAN_TEXT_CAP 4096
#define SCAN_VID_CAP 256
/* Deeper nesting is no list page: refused (expat has no limit). */
#define SCAN_DEPTH_MAX 64
/* scan_doc: the prolog is not one this scanner reads (expat's turn). */
#define SCAN_UNSUPPORTED (-2)
/* scan_doc in head mode: the next page's markers are known. */
#define SCAN_HEAD_DONE 1

enum scan_field {
    SF_NONE,
    SF_KEY,
    SF_SIZE,
    SF_ETAG,
    SF_MTIME,
    SF_PREFIX,
    SF_TRUNC,
    SF_VID,
    SF_LATEST,
    SF_KEY_MARKER,
    SF_VID_MARKER
};

enum scan_entry { SE_NONE, SE_PREFIX = 2, SE_VERSION = 3, SE_MARKER = 4 };

struct scan_name {
    const char *ptr;
    size_t len;
};

struct client_version_scan {
    shard_version_fn fn; /* NULL: count and markers only */
    void *ctx;
    struct client_list_parser *fallback; /* expat, made on first need */
    bool is_fallback;                    /* the last page went to expat */
    /* What the last page said. */
    size_t count;
    bool is_truncated;
    bool has_truncated, has_key_marker, has_vid_marker;
    bool is_url;
    /* The state machine. */
    bool is_head; /* stop at the first entry once the markers are known */
    int depth;    /* elements open, the root being depth 1 */
    enum scan_entry in_entry;
    enum scan_field field;
    int stop_rc;
    bool is_latest;
    struct shard_object_info info;
    size_t text_len;
    char text[SCAN_TEXT_CAP];
    char key[SCAN_TEXT_CAP];
    char vid[SCAN_VID_CAP];
    char key_marker[SCAN_TEXT_CAP]; /* NextKeyMarker, decoded */
    char vid_marker[SCAN_VID_CAP];  /* NextVersionIdMarker */
    struct scan_name open[SCAN_DEPTH_MAX];
};

struct client_version_scan *
client__version_scan_create(shard_version_fn fn, void *ctx)
{
    struct client_version_scan *s = xcalloc(1, sizeof(*s));
    s->fn = fn;
    s->ctx = ctx;
    return s;
}

void
client__version_scan_destroy(struct client_version_scan *s)
{
    if (s == NULL)
        return;
    client__list_parser_destroy(s->fallback);
    free(s);
}

/* ------------------------------------------------------------------------ */
/* Elements                                                                   */
/* ------------------------------------------------------------------------ */

static bool
name_is(const char *name, size_t len, const char *lit, size_t lit_len)
{
    return len == lit_len && memcmp(name, lit, len) == 0;
}
#define NAME_IS(n, l, lit) name_is((n), (l), lit, sizeof(lit) - 1)

/* Whether the head scan can stop before this entry: IsTruncated seen, and
 * when true both next markers too. */
static bool
head_known(const struct client_version_scan *s)
{
    return s->has_truncated && (!s->is_truncated || (s->has_key_marker && s->has_vid_marker));
}

/* A start tag 'name[0..len)' at depth 's->depth' (already counted). Returns
 * 0, or SCAN_HEAD_DONE in head mode at the first entry with the markers known. */
static int
scan_start(struct client_version_scan *s, const char *name, size_t len)
{
    s->field = SF_NONE;
    s->text_len = 0;
    if (s->depth == 2) {
        enum scan_entry e = SE_NONE;
        switch (name[0]) {
        case 'V':
            if (NAME_IS(name, len, "Version"))
                e = SE_VERSION;
            break;
        case 'D':
            if (NAME_IS(name, len, "DeleteMarker"))
                e = SE_MARKER;
            break;
        case 'C':
            if (NAME_IS(name, len, "CommonPrefixes"))
                e = SE_PREFIX;
            break;
        case 'N':
            if (NAME_IS(name, len, "NextKeyMarker"))
                s->field = SF_KEY_MARKER;
            else if (NAME_IS(name, len, "NextVersionIdMarker"))
                s->field = SF_VID_MARKER;
            break;
        case 'I':
            if (NAME_IS(name, len, "IsTruncated"))
                s->field = SF_TRUNC;
            break;
        default:
            break;
        }
        if (e != SE_NONE) {
            if (s->is_head && head_known(s))
                return SCAN_HEAD_DONE;
            s->count++;
            s->in_entry = e;
        }
    } else if (s->depth == 3 && s->in_entry != SE_NONE && s->fn != NULL) {
        switch (name[0]) {
        case 'K':
            s->field = NAME_IS(name, len, "Key") ? SF_KEY : SF_NONE;
            break;
        case 'S':
            s->field = NAME_IS(name, len, "Size") ? SF_SIZE : SF_NONE;
            break;
        case 'E':
            s->field = NAME_IS(name, len, "ETag") ? SF_ETAG : SF_NONE;
            break;
        case 'L':
            s->field = NAME_IS(name, len, "LastModified") ? SF_MTIME : SF_NONE;
            break;
        case 'P':
            s->field = NAME_IS(name, len, "Prefix") ? SF_PREFIX : SF_NONE;
            break;
        case 'V':
            s->field = NAME_IS(name, len, "VersionId") ? SF_VID : SF_NONE;
            break;
        case 'I':
            s->field = NAME_IS(name, len, "IsLatest") ? SF_LATEST : SF_NONE;
            break;
        default:
            break;
        }
    }
    return 0;
}

static void
scan_copy(char *dst, size_t cap, const char *src, size_t len)
{
    len = MIN(len, cap - 1);
    memcpy(dst, src, len);
    dst[len] = '\0';
}

/* The key (or marker) text, URI-decoded when the page is url-encoded. */
static void
scan_copy_key(const struct client_version_scan *s, char *dst, size_t cap)
{
    if (s->is_url)
        client__uri_decode_form(dst, cap, s->text, s->text_len);
    else
        scan_copy(dst, cap, s->text, s->text_len);
}

static bool
text_is_true(const struct client_version_scan *s)
{
    return s->text_len == 4 && memcmp(s->text, "true", 4) == 0;
}

/* The end tag of the element at 's->depth': the field it held, and at
 * depth 2 the entry it closed goes to the callback. Returns 0 or the
 * callback's non-zero value. */
static int
scan_end(struct client_version_scan *s)
{
    s->text[s->text_len] = '\0';
    switch (s->field) {
    case SF_NONE:
        break;
    case SF_KEY:
    case SF_PREFIX:
        scan_copy_key(s, s->key, sizeof(s->key));
        break;
    case SF_SIZE:
        s->info.size = strtoull(s->text, NULL, 10);
        break;
    case SF_ETAG:
        scan_copy(s->info.etag, sizeof(s->info.etag), s->text, s->text_len);
        break;
    case SF_MTIME:
        scan_copy(s->info.last_modified, sizeof(s->info.last_modified), s->text, s->text_len);
        break;
    case SF_TRUNC:
        s->is_truncated = text_is_true(s);
        s->has_truncated = true;
        break;
    case SF_VID:
        scan_copy(s->vid, sizeof(s->vid), s->text, s->text_len);
        break;
    case SF_LATEST:
        s->is_latest = text_is_true(s);
        break;
    case SF_KEY_MARKER:
        scan_copy_key(s, s->key_marker, sizeof(s->key_marker));
        s->has_key_marker = true;
        break;
    case SF_VID_MARKER:
        scan_copy(s->vid_marker, sizeof(s->vid_marker), s->text, s->text_len);
        s->has_vid_marker = true;
        break;
    }
    s->field = SF_NONE;
    int rc = 0;
    if (s->depth == 2 && s->in_entry != SE_NONE) {
        if (s->fn != NULL) {
            bool is_prefix = s->in_entry == SE_PREFIX;
            struct shard_version_entry v = {.key = s->key,
                                            .version_id = is_prefix ? "" : s->vid,
                                            .is_prefix = is_prefix,
                                            .is_latest = !is_prefix && s->is_latest,
                                            .is_delete_marker = s->in_entry == SE_MARKER,
                                            .info = s->info};
            if (s->in_entry != SE_VERSION) {
                /* A marker or prefix has no size or ETag, whatever the page says. */
                v.info.size = 0;
                v.info.etag[0] = '\0';
            }
            rc = s->fn(s->ctx, &v);
        }
        memset(&s->info, 0, sizeof(s->info));
        s->key[0] = '\0';
        s->vid[0] = '\0';
        s->is_latest = false;
        s->in_entry = SE_NONE;
    }
    s->depth--;
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Character data                                                             */
/* ------------------------------------------------------------------------ */

static void
text_put(struct client_version_scan *s, const char *p, size_t len)
{
    size_t n = MIN(len, sizeof(s->text) - 1 - s->text_len);
    memcpy(s->text + s->text_len, p, n);
    s->text_len += n;
}

/* Whether 'cp' is a Char of XML 1.0 (what a character reference may name). */
static bool
is_xml_char(unsigned long cp)
{
    return cp == 0x9 || cp == 0xa || cp == 0xd || (cp >= 0x20 && cp <= 0xd7ff) ||
           (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff);
}

/* Decodes the reference at 'p' (just after '&') up to its ';' into 'out'
 * (room for 4 bytes). Returns the bytes written and sets '*next' after the
 * ';', or -1 for anything but the five predefined entities and a character
 * reference to an XML Char. */
static int
scan_reference(const char *p, const char *end, char out[4], const char **next)
{
    const char *semi = memchr(p, ';', (size_t)MIN(end - p, 40));
    if (semi == NULL)
        return -1;
    size_t len = (size_t)(semi - p);
    *next = semi + 1;
    if (len >= 2 && p[0] == '#') {
        bool is_hex = p[1] == 'x';
        const char *d = p + (is_hex ? 2 : 1);
        unsigned long cp = 0;
        if (d == semi)
            return -1;
        for (; d < semi; d++) {
            int v = is_hex ? hex_digit_value(*d) : (*d >= '0' && *d <= '9' ? *d - '0' : -1);
            if (v < 0)
                return -1;
            cp = cp * (is_hex ? 16 : 10) + (unsigned long)v;
            if (cp > 0x10ffff)
                return -1; /* also the overflow check: at most 10 digits get here */
        }
        if (!is_xml_char(cp))
            return -1;
        return (int)utf8_encode(out, (unsigned)cp);
    }
    static const struct {
        const char *name;
        char ch;
    } ENTITIES[] = {{"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
    for (size_t i = 0; i < ARRAY_LEN(ENTITIES); i++) {
        if (len == strlen(ENTITIES[i].name) && memcmp(p, ENTITIES[i].name, len) == 0) {
            out[0] = ENTITIES[i].ch;
            return 1;
        }
    }
    return -1;
}

/* Appends the character data 'p[0..len)' to the field's text: references
 * decoded when 'is_raw' is false (text, not CDATA), CR LF and a lone CR
 * turned into LF as XML's end-of-line handling does. Returns 0 or -1. */
static int
scan_text(struct client_version_scan *s, const char *p, size_t len, bool is_raw)
{
    const char *end = p + len;
    while (p < end) {
        const char *run = p;
        while (p < end && *p != '\r' && (is_raw || *p != '&'))
            p++;
        text_put(s, run, (size_t)(p - run));
        if (p == end)
            break;
        if (*p == '\r') {
            text_put(s, "\n", 1);
            p += p + 1 < end && p[1] == '\n' ? 2 : 1;
        } else {
            char ch[4];
            int n = scan_reference(p + 1, end, ch, &p);
            if (n < 0)
                return -1;
            text_put(s, ch, (size_t)n);
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The document                                                               */
/* ------------------------------------------------------------------------ */

static bool
is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

/* Bytes that end a name, and bytes of character data that need a look
 * (the scan's hot loops test one table entry per byte). */
static const unsigned char NAME_STOP[256] = {
    [' '] = 1, ['\t'] = 1, ['\r'] = 1, ['\n'] = 1, ['/'] = 1, ['>'] = 1, ['='] = 1, ['<'] = 1};
static const unsigned char TEXT_STOP[256] = {['<'] = 1, ['&'] = 1, ['\r'] = 1};

static const char *
skip_space(const char *p, const char *end)
{
    while (p < end && is_space(*p))
        p++;
    return p;
}

/* Where 'lit' starts in [p, end), or NULL. */
static const char *
find(const char *p, const char *end, const char *lit)
{
    return p < end ? memmem(p, (size_t)(end - p), lit, strlen(lit)) : NULL;
}

/* The end of the name at 'p' (up to space, '/', '>', '=' or the end). */
static const char *
name_end(const char *p, const char *end)
{
    while (p < end && !NAME_STOP[(unsigned char)*p])
        p++;
    return p;
}

/* The attributes of a start tag from 'p' (after its name) to its '>' or
 * "/>": skipped. Returns the byte after the tag (with '*is_empty' set for
 * "/>"), or NULL when malformed. */
static const char *
skip_attributes(const char *p, const char *end, bool *is_empty)
{
    for (;;) {
        p = skip_space(p, end);
        if (p == end)
            return NULL;
        if (*p == '>') {
            *is_empty = false;
            return p + 1;
        }
        if (*p == '/') {
            if (p + 1 == end || p[1] != '>')
                return NULL;
            *is_empty = true;
            return p + 2;
        }
        const char *ne = name_end(p, end);
        if (ne == p)
            return NULL;
        p = skip_space(ne, end);
        if (p == end || *p != '=')
            return NULL;
        p = skip_space(p + 1, end);
        if (p == end || (*p != '"' && *p != '\''))
            return NULL;
        const char *close = memchr(p + 1, *p, (size_t)(end - p - 1));
        if (close == NULL || memchr(p + 1, '<', (size_t)(close - p - 1)) != NULL)
            return NULL;
        p = close + 1;
    }
}

/* The prolog up to the root's '<'. Returns its position, NULL when
 * malformed, or 'end' + 1 (never dereferenced) when expat must read it. */
static const char *
scan_prolog(const char *p, const char *end, bool *is_unsupported)
{
    *is_unsupported = false;
    if (end - p >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0)
        p += 3;
    else if (end - p >= 2 && (p[0] == '\0' || p[1] == '\0' || (unsigned char)p[0] >= 0xfe)) {
        *is_unsupported = true; /* UTF-16 or UCS-4 */
        return NULL;
    }
    for (;;) {
        p = skip_space(p, end);
        if (p == end || *p != '<')
            return NULL;
        if (end - p >= 5 && memcmp(p, "<?xml", 5) == 0 && p + 5 < end && is_space(p[5])) {
            const char *close = find(p, end, "?>");
            if (close == NULL)
                return NULL;
            /* Only UTF-8 (or no declared encoding) is read here. */
            const char *enc = find(p, close, "encoding");
            if (enc != NULL) {
                const char *v = skip_space(enc + 8, close);
                if (v < close && *v == '=')
                    v = skip_space(v + 1, close);
                if (close - v < 7 || (v[0] != '"' && v[0] != '\'') ||
                    strncasecmp(v + 1, "UTF-8", 5) != 0 || v[6] != v[0]) {
                    *is_unsupported = true;
                    return NULL;
                }
            }
            p = close + 2;
        } else if (end - p >= 2 && p[1] == '?') {
            const char *close = find(p + 2, end, "?>");
            if (close == NULL)
                return NULL;
            p = close + 2;
        } else if (end - p >= 4 && memcmp(p, "<!--", 4) == 0) {
            const char *close = find(p + 4, end, "-->");
            if (close == NULL)
                return NULL;
            p = close + 3;
        } else if (end - p >= 2 && p[1] == '!') {
            *is_unsupported = true; /* a DOCTYPE: its entities are expat's business */
            return NULL;
        } else {
            return p;
        }
    }
}

/* Scans the page [p, end). Returns 0, the callback's non-zero value,
 * SCAN_HEAD_DONE (head mode), -1 when malformed or SCAN_UNSUPPORTED. */
static int
scan_doc(struct client_version_scan *s, const char *p, const char *end)
{
    bool is_unsupported, has_root = false;
    p = scan_prolog(p, end, &is_unsupported);
    if (p == NULL)
        return is_unsupported ? SCAN_UNSUPPORTED : -1;
    while (p < end) {
        if (*p != '<') {
            if (s->depth > 0 && s->field != SF_NONE) {
                /* A field's text: copied up to its end, or to the first
                 * reference or CR, from which scan_text decodes it. */
                const char *q = p;
                while (q < end && !TEXT_STOP[(unsigned char)*q])
                    q++;
                text_put(s, p, (size_t)(q - p));
                if (q < end && *q != '<') {
                    const char *lt = memchr(q, '<', (size_t)(end - q));
                    p = lt != NULL ? lt : end;
                    if (scan_text(s, q, (size_t)(p - q), false) != 0)
                        return -1;
                } else {
                    p = q;
                }
                continue;
            }
            const char *lt = memchr(p, '<', (size_t)(end - p));
            const char *stop = lt != NULL ? lt : end;
            if (s->depth == 0 && skip_space(p, stop) != stop)
                return -1; /* text outside the root */
            p = stop;
            continue;
        }
        if (end - p < 2)
            return -1;
        if (p[1] == '/') {
            if (s->depth == 0)
                return -1;
            /* The name must be the open element's, whole. */
            const struct scan_name *o = &s->open[s->depth - 1];
            const char *name = p + 2;
            if ((size_t)(end - name) <= o->len || memcmp(name, o->ptr, o->len) != 0 ||
                !NAME_STOP[(unsigned char)name[o->len]])
                return -1;
            p = skip_space(name + o->len, end);
            if (p == end || *p != '>')
                return -1;
            p++;
            int rc = scan_end(s);
            if (rc != 0)
                return rc;
        } else if (p[1] == '!') {
            if (end - p >= 4 && memcmp(p, "<!--", 4) == 0) {
                const char *close = find(p + 4, end, "-->");
                if (close == NULL)
                    return -1;
                p = close + 3;
            } else if (s->depth > 0 && end - p >= 9 && memcmp(p, "<![CDATA[", 9) == 0) {
                const char *close = find(p + 9, end, "]]>");
                if (close == NULL)
                    return -1;
                if (s->field != SF_NONE)
                    scan_text(s, p + 9, (size_t)(close - p - 9), true);
                p = close + 3;
            } else {
                return -1;
            }
        } else if (p[1] == '?') {
            const char *close = find(p + 2, end, "?>");
            if (close == NULL)
                return -1;
            p = close + 2;
        } else {
            const char *name = p + 1, *ne = name_end(name, end);
            bool is_empty;
            if (ne == name || (s->depth == 0 && has_root) || s->depth == SCAN_DEPTH_MAX)
                return -1;
            const char *next = skip_attributes(ne, end, &is_empty);
            if (next == NULL)
                return -1;
            has_root = true;
            s->open[s->depth].ptr = name;
            s->open[s->depth].len = (size_t)(ne - name);
            s->depth++;
            int rc = scan_start(s, name, (size_t)(ne - name));
            if (rc == 0 && is_empty)
                rc = scan_end(s);
            if (rc != 0)
                return rc;
            p = next;
        }
    }
    return has_root && s->depth == 0 ? 0 : -1;
}

/* Forgets the last page; 'is_head' selects head mode. */
static void
scan_reset(struct client_version_scan *s, const char *xml, size_t len, bool is_head)
{
    s->is_fallback = false;
    s->count = 0;
    s->is_truncated = s->has_truncated = s->has_key_marker = s->has_vid_marker = false;
    s->is_head = is_head;
    s->depth = 0;
    s->in_entry = SE_NONE;
    s->field = SF_NONE;
    s->is_latest = false;
    memset(&s->info, 0, sizeof(s->info));
    s->text_len = 0;
    s->key[0] = s->vid[0] = s->key_marker[0] = s->vid_marker[0] = '\0';
    /* As xml.c: EncodingType may follow the entries (AWS lists it last),
     * so it is looked for first. A '<' in character data is escaped, so
     * these bytes are the element itself. */
    static const char URL_TAG[] = "<EncodingType>url</EncodingType>";
    s->is_url = xml != NULL && memmem(xml, len, URL_TAG, sizeof(URL_TAG) - 1) != NULL;
}

int
client__version_scan_page(struct client_version_scan *s, const char *xml, size_t len)
{
    scan_reset(s, xml, len, false);
    int rc = scan_doc(s, xml != NULL ? xml : "", xml != NULL ? xml + len : "");
    if (rc != SCAN_UNSUPPORTED)
        return rc;
    if (s->fallback == NULL)
        s->fallback = client__list_versions_parser_create(s->fn, s->ctx);
    s->is_fallback = true;
    return client__list_parser_page(s->fallback, xml, len);
}

int
client__version_scan_head(struct client_version_scan *s, const char *xml, size_t len)
{
    scan_reset(s, xml, len, true);
    int rc = scan_doc(s, xml != NULL ? xml : "", xml != NULL ? xml + len : "");
    if (rc == SCAN_HEAD_DONE || rc == 0)
        return 0;
    if (rc != SCAN_UNSUPPORTED)
        return -1;
    if (s->fallback == NULL)
        s->fallback = client__list_versions_parser_create(NULL, NULL);
    s->is_fallback = true;
    return client__list_parser_page(s->fallback, xml, len) == 0 ? 0 : -1;
}

size_t
client__version_scan_count(const struct client_version_scan *s)
{
    return s->is_fallback ? client__list_parser_count(s->fallback) : s->count;
}

bool
client__version_scan_truncated(const struct client_version_scan *s)
{
    return s->is_fallback ? client__list_parser_truncated(s->fallback) : s->is_truncated;
}

const char *
client__version_scan_key_marker(const struct client_version_scan *s)
{
    return s->is_fallback ? client__list_parser_key_marker(s->fallback) : s->key_marker;
}

const char *
client__version_scan_version_marker(const struct client_version_scan *s)
{
    return s->is_fallback ? client__list_parser_version_marker(s->fallback) : s->vid_marker;
}
