/*
 * lifecycle_xml.c: LifecycleConfiguration and bucket Tagging bodies:
 * parse (expat), validate with S3's errors and messages, format as S3's
 * Get answers, and match a lifecycle rule against an object.
 *
 * Parsing builds a small bounded tree first (depth LX_DEPTH_MAX, at most
 * LX_NODES_MAX elements, LX_TEXT_MAX bytes of text per element, no mixed
 * content, no DOCTYPE or entity declaration), then interprets it: an
 * element the schema does not know, a repeated singleton or a missing
 * required element is MalformedXML, as in S3. Invariant kept for the fuzz
 * target: lc_parse(lc_format(c)) gives c back, field for field.
 */
#include "server/lifecycle_xml.h"

#include <expat.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define LX_DEPTH_MAX 8
#define LX_NODES_MAX 100000
#define LX_TEXT_MAX 4096
/* expat takes an int length; feed large bodies in pieces no larger than this. */
#define LX_CHUNK_LEN (1u << 20)

/* ------------------------------------------------------------------ */
/* A bounded element tree                                             */
/* ------------------------------------------------------------------ */

struct lx_node {
    const char *name;  /* local name (any "prefix:" dropped) */
    struct slice text; /* character data of a leaf, NUL-terminated */
    struct lx_node *first, *last, *next;
};

struct lx_ctx {
    XML_Parser parser;
    struct arena *a;
    bool has_failed;
    int depth;
    size_t n_nodes;
    struct lx_node *root;
    struct lx_node *stack[LX_DEPTH_MAX];
    size_t text_len;
    char text[LX_TEXT_MAX];
};

static void
lx_fail(struct lx_ctx *c)
{
    if (c->has_failed)
        return;
    c->has_failed = true;
    XML_StopParser(c->parser, XML_FALSE);
}

static bool
lx_is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

static bool
lx_is_blank(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!lx_is_space(p[i]))
            return false;
    return true;
}

static struct slice
lx_trim(struct slice s)
{
    while (s.len && lx_is_space(s.ptr[0])) {
        s.ptr++;
        s.len--;
    }
    while (s.len && lx_is_space(s.ptr[s.len - 1]))
        s.len--;
    return s;
}

static void XMLCALL
lx_on_start(void *user, const XML_Char *name, const XML_Char **attrs)
{
    struct lx_ctx *c = user;
    (void)attrs; /* xmlns and everything else is ignored */
    if (c->has_failed)
        return;
    if (c->depth == LX_DEPTH_MAX || ++c->n_nodes > LX_NODES_MAX) {
        lx_fail(c);
        return;
    }
    if (c->depth > 0 && !lx_is_blank(c->text, c->text_len)) {
        lx_fail(c); /* mixed content */
        return;
    }
    const char *colon = strrchr(name, ':');
    struct lx_node *n = arena_calloc(c->a, 1, sizeof(*n));
    const char *local = colon ? colon + 1 : name;
    n->name = arena_strndup(c->a, local, strlen(local));
    if (c->depth == 0) {
        c->root = n;
    } else {
        struct lx_node *p = c->stack[c->depth - 1];
        if (p->last)
            p->last->next = n;
        else
            p->first = n;
        p->last = n;
    }
    c->stack[c->depth++] = n;
    c->text_len = 0;
}

static void XMLCALL
lx_on_end(void *user, const XML_Char *name)
{
    struct lx_ctx *c = user;
    (void)name; /* expat matched it to the start tag */
    if (c->has_failed || c->depth == 0)
        return;
    struct lx_node *n = c->stack[--c->depth];
    if (n->first == NULL)
        n->text = (struct slice){arena_strndup(c->a, c->text, c->text_len), c->text_len};
    else if (!lx_is_blank(c->text, c->text_len))
        lx_fail(c);
    c->text_len = 0;
}

static void XMLCALL
lx_on_text(void *user, const XML_Char *s, int len)
{
    struct lx_ctx *c = user;
    if (c->has_failed || c->depth == 0)
        return;
    if (len < 0 || (size_t)len > sizeof(c->text) - c->text_len) {
        lx_fail(c);
        return;
    }
    memcpy(c->text + c->text_len, s, (size_t)len);
    c->text_len += (size_t)len;
}

static void XMLCALL
lx_on_doctype(void *user, const XML_Char *name, const XML_Char *sysid, const XML_Char *pubid,
              int has_internal_subset)
{
    (void)name;
    (void)sysid;
    (void)pubid;
    (void)has_internal_subset;
    lx_fail(user);
}

static void XMLCALL
lx_on_entity_decl(void *user, const XML_Char *name, int is_parameter, const XML_Char *value,
                  int value_len, const XML_Char *base, const XML_Char *sysid, const XML_Char *pubid,
                  const XML_Char *notation)
{
    (void)name;
    (void)is_parameter;
    (void)value;
    (void)value_len;
    (void)base;
    (void)sysid;
    (void)pubid;
    (void)notation;
    lx_fail(user);
}

/* Parses 'body' into a tree in 'a'. Returns the root, or NULL when the
 * body is not well-formed or exceeds a bound. */
static struct lx_node *
lx_parse(const char *body, size_t len, struct arena *a)
{
    struct lx_ctx *c = xcalloc(1, sizeof(*c));
    struct lx_node *root = NULL;
    size_t off = 0;

    c->a = a;
    c->parser = XML_ParserCreate(NULL);
    if (!c->parser) {
        /* Like xmalloc(): bookkeeping allocations do not fail softly. */
        log_error("lifecycle_xml: out of memory creating the XML parser");
        abort();
    }
    XML_SetUserData(c->parser, c);
    XML_SetParamEntityParsing(c->parser, XML_PARAM_ENTITY_PARSING_NEVER);
    XML_SetStartDoctypeDeclHandler(c->parser, lx_on_doctype);
    XML_SetEntityDeclHandler(c->parser, lx_on_entity_decl);
    XML_SetElementHandler(c->parser, lx_on_start, lx_on_end);
    XML_SetCharacterDataHandler(c->parser, lx_on_text);
    do {
        size_t n = MIN(len - off, (size_t)LX_CHUNK_LEN);
        bool is_final = off + n == len;
        if (XML_Parse(c->parser, body ? body + off : NULL, (int)n, is_final) != XML_STATUS_OK) {
            lx_fail(c);
            break;
        }
        off += n;
    } while (off < len);
    if (!c->has_failed && c->depth == 0)
        root = c->root;
    XML_ParserFree(c->parser);
    free(c);
    return root;
}

/* True when every child of 'n' is named in 'names' (NULL-terminated) and
 * those not in 'repeat_mask' (bit i: names[i] may repeat) appear once at
 * most. */
static bool
lx_children_ok(const struct lx_node *n, const char *const *names, uint32_t repeat_mask)
{
    uint32_t seen = 0;
    for (const struct lx_node *ch = n->first; ch; ch = ch->next) {
        size_t i = 0;
        while (names[i] && strcmp(names[i], ch->name) != 0)
            i++;
        if (!names[i])
            return false;
        if ((seen & (1u << i)) && !(repeat_mask & (1u << i)))
            return false;
        seen |= 1u << i;
    }
    return true;
}

static const struct lx_node *
lx_child(const struct lx_node *n, const char *name)
{
    for (const struct lx_node *ch = n->first; ch; ch = ch->next)
        if (strcmp(ch->name, name) == 0)
            return ch;
    return NULL;
}

/* A text element: present and without children. */
static bool
lx_is_leaf(const struct lx_node *n)
{
    return n && n->first == NULL;
}

/* Parses an optionally signed decimal integer with surrounding
 * whitespace. Returns false when it is not one (or out of int64). */
static bool
lx_int(const struct lx_node *n, int64_t *out)
{
    uint64_t v;
    if (!lx_is_leaf(n))
        return false;
    struct slice s = lx_trim(n->text);
    bool is_neg = s.len && s.ptr[0] == '-';
    if (s.len && (s.ptr[0] == '-' || s.ptr[0] == '+')) {
        s.ptr++;
        s.len--;
    }
    if (parse_u64(s, INT64_MAX, &v) != 0)
        return false;
    *out = is_neg ? -(int64_t)v : (int64_t)v;
    return true;
}

/* S3's Date elements are ISO 8601, which common/ neither parses (bare
 * dates, offsets) nor formats; lx_date and lc_format_date stay private
 * here, on common's calendar arithmetic (days_from_civil, civil_from_days). */

static bool
lx_digits(const char *p, size_t n, int *out)
{
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return true;
}

/*
 * Parses an ISO 8601 date ("YYYY-MM-DD", optionally followed by
 * "THH:MM:SS", a fraction, and "Z" or "+HH:MM"/"-HH:MM"). Returns 1 at
 * midnight UTC (seconds in '*out'), 0 when valid but not midnight UTC,
 * -1 when not a date.
 */
static int
lx_date(const struct lx_node *n, int64_t *out)
{
    if (!lx_is_leaf(n))
        return -1;
    struct slice s = lx_trim(n->text);
    int y, mo, d, h = 0, mi = 0, se = 0, oh = 0, om = 0;
    bool has_fraction = false;
    if (s.len < 10 || s.ptr[4] != '-' || s.ptr[7] != '-' || !lx_digits(s.ptr, 4, &y) ||
        !lx_digits(s.ptr + 5, 2, &mo) || !lx_digits(s.ptr + 8, 2, &d))
        return -1;
    size_t i = 10;
    if (i < s.len) {
        if (s.len < 19 || (s.ptr[10] != 'T' && s.ptr[10] != 't') || s.ptr[13] != ':' ||
            s.ptr[16] != ':' || !lx_digits(s.ptr + 11, 2, &h) || !lx_digits(s.ptr + 14, 2, &mi) ||
            !lx_digits(s.ptr + 17, 2, &se))
            return -1;
        i = 19;
        if (i < s.len && s.ptr[i] == '.') {
            size_t j = ++i;
            while (i < s.len && s.ptr[i] >= '0' && s.ptr[i] <= '9') {
                if (s.ptr[i] != '0')
                    has_fraction = true;
                i++;
            }
            if (i == j)
                return -1;
        }
        if (i < s.len && (s.ptr[i] == 'Z' || s.ptr[i] == 'z')) {
            i++;
        } else if (i < s.len && (s.ptr[i] == '+' || s.ptr[i] == '-')) {
            int sign = s.ptr[i] == '-' ? -1 : 1;
            if (s.len - i != 6 || s.ptr[i + 3] != ':' || !lx_digits(s.ptr + i + 1, 2, &oh) ||
                !lx_digits(s.ptr + i + 4, 2, &om) || oh > 23 || om > 59)
                return -1;
            oh *= sign;
            om *= sign;
            i += 6;
        }
        if (i != s.len)
            return -1;
    }
    static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool is_leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
        (mo == 2 && d == 29 && !is_leap) || h > 23 || mi > 59 || se > 59)
        return -1;
    int64_t t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se -
                ((int64_t)oh * 3600 + (int64_t)om * 60);
    if (t < 0)
        return -1;
    *out = t;
    return t % 86400 == 0 && !has_fraction ? 1 : 0;
}

/* Formats 'date_s' (seconds since the epoch) as "YYYY-MM-DDTHH:MM:SS.000Z"
 * into 'out' (at least 32 bytes). */
static void
lc_format_date(int64_t date_s, char *out)
{
    int64_t sod = date_s % 86400, y;
    unsigned m, d;
    civil_from_days(date_s / 86400, &y, &m, &d);
    snprintf(out, 32, "%04d-%02d-%02dT%02d:%02d:%02d.000Z", (int)y, (int)m, (int)d,
             (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60));
}

/* Number of UTF-8 characters in 's' (expat hands out valid UTF-8). */
static size_t
utf8_chars(struct slice s)
{
    size_t n = 0;
    for (size_t i = 0; i < s.len; i++)
        n += ((unsigned char)s.ptr[i] & 0xc0) != 0x80;
    return n;
}

/* ------------------------------------------------------------------ */
/* Lifecycle: interpretation and validation                           */
/* ------------------------------------------------------------------ */

struct lc_parse_ctx {
    struct arena *a;
    const char *msg;
};

static enum lc_status
lc_err(struct lc_parse_ctx *p, enum lc_status st, const char *msg)
{
    p->msg = msg;
    return st;
}

static enum lc_status
parse_tag(struct lc_parse_ctx *p, const struct lx_node *n, struct lc_tag *out)
{
    static const char *const names[] = {"Key", "Value", NULL};
    const struct lx_node *k = lx_child(n, "Key"), *v = lx_child(n, "Value");
    if (!lx_children_ok(n, names, 0) || !lx_is_leaf(k) || (v && !lx_is_leaf(v)))
        return lc_err(p, LC_MALFORMED, NULL);
    out->key = k->text;
    out->value = v ? v->text : (struct slice){"", 0};
    if (out->key.len == 0 || utf8_chars(out->key) > LC_TAG_KEY_MAX)
        return lc_err(p, LC_INVALID_ARGUMENT, "The TagKey you have provided is invalid");
    if (utf8_chars(out->value) > LC_TAG_VALUE_MAX)
        return lc_err(p, LC_INVALID_ARGUMENT, "The TagValue you have provided is invalid");
    return LC_OK;
}

static enum lc_status
parse_object_size(struct lc_parse_ctx *p, const struct lx_node *n, uint64_t *out)
{
    int64_t v;
    if (!lx_int(n, &v))
        return lc_err(p, LC_MALFORMED, NULL);
    if (v < 0)
        return lc_err(p, LC_INVALID_ARGUMENT,
                      "ObjectSizeGreaterThan and ObjectSizeLessThan must be non-negative");
    *out = (uint64_t)v;
    return LC_OK;
}

static enum lc_status
parse_prefix(struct lc_parse_ctx *p, const struct lx_node *n, struct lc_filter *f)
{
    if (!lx_is_leaf(n))
        return lc_err(p, LC_MALFORMED, NULL);
    if (n->text.len > LC_PREFIX_MAX)
        return lc_err(p, LC_INVALID_ARGUMENT, "The maximum size of a prefix is 1024");
    f->has_prefix = true;
    f->prefix = n->text;
    return LC_OK;
}

static enum lc_status
parse_and(struct lc_parse_ctx *p, const struct lx_node *n, struct lc_filter *f)
{
    static const char *const names[] = {"Prefix", "Tag", "ObjectSizeGreaterThan",
                                        "ObjectSizeLessThan", NULL};
    enum lc_status st;
    if (!lx_children_ok(n, names, 1u << 1))
        return lc_err(p, LC_MALFORMED, NULL);
    uint32_t n_tags = 0;
    for (const struct lx_node *ch = n->first; ch; ch = ch->next)
        n_tags += strcmp(ch->name, "Tag") == 0;
    if (n_tags > LC_FILTER_TAGS_MAX)
        return lc_err(p, LC_INVALID_ARGUMENT, "The number of tags in a filter must not exceed 50");
    f->tags = arena_calloc(p->a, n_tags ? n_tags : 1, sizeof(*f->tags));
    for (const struct lx_node *ch = n->first; ch; ch = ch->next) {
        if (strcmp(ch->name, "Prefix") == 0)
            st = parse_prefix(p, ch, f);
        else if (strcmp(ch->name, "Tag") == 0)
            st = parse_tag(p, ch, &f->tags[f->n_tags++]);
        else if (strcmp(ch->name, "ObjectSizeGreaterThan") == 0) {
            f->has_size_gt = true;
            st = parse_object_size(p, ch, &f->size_gt);
        } else {
            f->has_size_lt = true;
            st = parse_object_size(p, ch, &f->size_lt);
        }
        if (st != LC_OK)
            return st;
    }
    for (uint32_t i = 0; i < f->n_tags; i++)
        for (uint32_t j = i + 1; j < f->n_tags; j++)
            if (slice_eq(f->tags[i].key, f->tags[j].key))
                return lc_err(p, LC_INVALID_REQUEST, "Duplicate Tag Keys are not allowed.");
    return LC_OK;
}

static enum lc_status
parse_filter(struct lc_parse_ctx *p, const struct lx_node *n, struct lc_filter *f)
{
    static const char *const names[] = {
        "Prefix", "Tag", "ObjectSizeGreaterThan", "ObjectSizeLessThan", "And", NULL};
    if (!lx_children_ok(n, names, 0))
        return lc_err(p, LC_MALFORMED, NULL);
    const struct lx_node *ch = n->first;
    if (!ch) {
        f->form = LC_FILTER_EMPTY;
        return LC_OK;
    }
    if (ch->next) /* one predicate, or And to combine several */
        return lc_err(p, LC_MALFORMED, NULL);
    if (strcmp(ch->name, "Prefix") == 0) {
        f->form = LC_FILTER_PREFIX;
        return parse_prefix(p, ch, f);
    }
    if (strcmp(ch->name, "Tag") == 0) {
        f->form = LC_FILTER_TAG;
        f->tags = arena_calloc(p->a, 1, sizeof(*f->tags));
        f->n_tags = 1;
        return parse_tag(p, ch, f->tags);
    }
    if (strcmp(ch->name, "ObjectSizeGreaterThan") == 0) {
        f->form = LC_FILTER_SIZE_GT;
        f->has_size_gt = true;
        return parse_object_size(p, ch, &f->size_gt);
    }
    if (strcmp(ch->name, "ObjectSizeLessThan") == 0) {
        f->form = LC_FILTER_SIZE_LT;
        f->has_size_lt = true;
        return parse_object_size(p, ch, &f->size_lt);
    }
    f->form = LC_FILTER_AND;
    return parse_and(p, ch, f);
}

/* Parses a positive (or, with 'allow_zero', non-negative) day count
 * element; 'msg' is S3's message for a value out of range. */
static enum lc_status
parse_days(struct lc_parse_ctx *p, const struct lx_node *n, bool allow_zero, const char *msg,
           uint32_t *out)
{
    int64_t v;
    if (!lx_int(n, &v))
        return lc_err(p, LC_MALFORMED, NULL);
    if (v < (allow_zero ? 0 : 1) || v > LC_DAYS_MAX)
        return lc_err(p, LC_INVALID_ARGUMENT, msg);
    *out = (uint32_t)v;
    return LC_OK;
}

static enum lc_status
parse_date(struct lc_parse_ctx *p, const struct lx_node *n, int64_t *out)
{
    int rc = lx_date(n, out);
    if (rc < 0)
        return lc_err(p, LC_INVALID_ARGUMENT, "Invalid date: 'Date' must be in ISO 8601 format");
    if (rc == 0)
        return lc_err(p, LC_INVALID_ARGUMENT, "'Date' must be at midnight GMT");
    return LC_OK;
}

static enum lc_status
parse_storage_class(struct lc_parse_ctx *p, const struct lx_node *n, char *out)
{
    if (!lx_is_leaf(n))
        return lc_err(p, LC_MALFORMED, NULL);
    struct slice s = lx_trim(n->text);
    if (s.len == 0 || s.len > LC_STORAGE_CLASS_MAX)
        return lc_err(p, LC_INVALID_CLASS, "The storage class you specified is not valid");
    for (size_t i = 0; i < s.len; i++) {
        char c = s.ptr[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
            return lc_err(p, LC_INVALID_CLASS, "The storage class you specified is not valid");
    }
    memcpy(out, s.ptr, s.len);
    out[s.len] = 0;
    if (strcmp(out, "STANDARD") == 0)
        return lc_err(p, LC_INVALID_REQUEST,
                      "'StorageClass' STANDARD is not a valid target of a Transition action");
    return LC_OK;
}

static enum lc_status
parse_transition(struct lc_parse_ctx *p, const struct lx_node *n, bool is_noncurrent,
                 struct lc_transition *t)
{
    static const char *const names[] = {"Days", "Date", "StorageClass", NULL};
    static const char *const nc_names[] = {"NoncurrentDays", "NewerNoncurrentVersions",
                                           "StorageClass", NULL};
    enum lc_status st;
    if (!lx_children_ok(n, is_noncurrent ? nc_names : names, 0))
        return lc_err(p, LC_MALFORMED, NULL);
    const struct lx_node *days = lx_child(n, is_noncurrent ? "NoncurrentDays" : "Days");
    const struct lx_node *date = is_noncurrent ? NULL : lx_child(n, "Date");
    const struct lx_node *newer = is_noncurrent ? lx_child(n, "NewerNoncurrentVersions") : NULL;
    const struct lx_node *sc = lx_child(n, "StorageClass");
    if (!sc || (!days && !date) || (days && date))
        return lc_err(p, LC_MALFORMED, NULL);
    if (days) {
        t->has_days = true;
        st = parse_days(p, days, true,
                        is_noncurrent ? "'NoncurrentDays' in NoncurrentVersionTransition action "
                                        "must be nonnegative"
                                      : "'Days' in Transition action must be nonnegative",
                        &t->days);
        if (st != LC_OK)
            return st;
    }
    if (date) {
        t->has_date = true;
        if ((st = parse_date(p, date, &t->date_s)) != LC_OK)
            return st;
    }
    if (newer) {
        int64_t v;
        if (!lx_int(newer, &v))
            return lc_err(p, LC_MALFORMED, NULL);
        if (v < 1 || v > 100)
            return lc_err(p, LC_INVALID_ARGUMENT,
                          "'NewerNoncurrentVersions' must be an integer from 1 to 100");
        t->has_newer = true;
        t->newer = (uint32_t)v;
    }
    return parse_storage_class(p, sc, t->storage_class);
}

/* The order S3 requires between transitions to its classes (earlier days
 * first); 0 for a class without a place (COLD, a remote tier's). */
static int
class_rank(const char *sc)
{
    static const char *const order[][3] = {
        {"STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING"},
        {"GLACIER_IR", NULL, NULL},
        {"GLACIER", NULL, NULL},
        {"DEEP_ARCHIVE", NULL, NULL},
    };
    for (size_t i = 0; i < ARRAY_LEN(order); i++)
        for (size_t j = 0; j < 3; j++)
            if (order[i][j] && strcmp(order[i][j], sc) == 0)
                return (int)i + 1;
    return 0;
}

static enum lc_status
check_transitions(struct lc_parse_ctx *p, struct lc_rule *r)
{
    for (uint32_t i = 0; i < r->n_transitions; i++) {
        const struct lc_transition *t = &r->transitions[i];
        int rank = class_rank(t->storage_class);
        if (t->has_days && t->days < 30 && rank == 1)
            return lc_err(p, LC_INVALID_REQUEST,
                          arena_sprintf(p->a,
                                        "'Days' in Transition action must be greater than or "
                                        "equal to 30 for storageClass '%s'",
                                        t->storage_class));
        for (uint32_t j = i + 1; j < r->n_transitions; j++) {
            const struct lc_transition *u = &r->transitions[j];
            if (strcmp(t->storage_class, u->storage_class) == 0)
                return lc_err(p, LC_INVALID_REQUEST,
                              "'StorageClass' must be different for 'Transition' actions in "
                              "same 'Rule'");
            if (t->has_days != u->has_days)
                return lc_err(p, LC_INVALID_REQUEST,
                              arena_sprintf(p->a,
                                            "Found mixed 'Date' and 'Days' based Transition "
                                            "actions in lifecycle rule for prefix '%s'",
                                            r->filter.has_prefix ? r->filter.prefix.ptr : ""));
            int64_t a = t->has_days ? t->days : t->date_s, b = u->has_days ? u->days : u->date_s;
            int urank = class_rank(u->storage_class);
            if (a == b)
                return lc_err(p, LC_INVALID_REQUEST,
                              t->has_days ? "'Days' in Transition actions in the same 'Rule' "
                                            "must be different"
                                          : "'Date' in Transition actions in the same 'Rule' "
                                            "must be different");
            if (rank && urank && rank != urank && (rank < urank) != (a < b))
                return lc_err(
                    p, LC_INVALID_REQUEST,
                    arena_sprintf(p->a,
                                  "'%s' in Transition action for StorageClass '%s' must be "
                                  "later than '%s' in Transition action for StorageClass '%s'",
                                  t->has_days ? "Days" : "Date",
                                  rank > urank ? t->storage_class : u->storage_class,
                                  t->has_days ? "Days" : "Date",
                                  rank > urank ? u->storage_class : t->storage_class));
        }
        if (r->has_exp_days && t->has_days && r->exp_days <= t->days)
            return lc_err(p, LC_INVALID_REQUEST,
                          arena_sprintf(p->a,
                                        "'Days' in the Expiration action for filter '%s' must "
                                        "be greater than 'Days' in the Transition action",
                                        r->filter.has_prefix ? r->filter.prefix.ptr : ""));
        if (r->has_exp_date && t->has_date && r->exp_date_s <= t->date_s)
            return lc_err(p, LC_INVALID_REQUEST,
                          arena_sprintf(p->a,
                                        "'Date' in the Expiration action for filter '%s' must "
                                        "be later than 'Date' in the Transition action",
                                        r->filter.has_prefix ? r->filter.prefix.ptr : ""));
    }
    return LC_OK;
}

static enum lc_status
parse_expiration(struct lc_parse_ctx *p, const struct lx_node *n, struct lc_rule *r)
{
    static const char *const names[] = {"Days", "Date", "ExpiredObjectDeleteMarker", NULL};
    if (!lx_children_ok(n, names, 0))
        return lc_err(p, LC_MALFORMED, NULL);
    const struct lx_node *days = lx_child(n, "Days"), *date = lx_child(n, "Date");
    const struct lx_node *eodm = lx_child(n, "ExpiredObjectDeleteMarker");
    if ((days != NULL) + (date != NULL) + (eodm != NULL) != 1)
        return lc_err(p, LC_MALFORMED, NULL);
    r->has_expiration = true;
    if (days) {
        r->has_exp_days = true;
        return parse_days(p, days, false, "'Days' for Expiration action must be a positive integer",
                          &r->exp_days);
    }
    if (date) {
        r->has_exp_date = true;
        return parse_date(p, date, &r->exp_date_s);
    }
    struct slice v = lx_is_leaf(eodm) ? lx_trim(eodm->text) : SLICE_NULL;
    if (slice_eq(v, SLICE_LIT("true")))
        r->exp_delete_marker = true;
    else if (!slice_eq(v, SLICE_LIT("false")))
        return lc_err(p, LC_MALFORMED, NULL);
    r->has_exp_delete_marker = true;
    if (lc_rule_has_tags(r))
        return lc_err(p, LC_INVALID_REQUEST,
                      "ExpiredObjectDeleteMarker cannot be specified with Tag filters");
    return LC_OK;
}

static enum lc_status
parse_nc_expiration(struct lc_parse_ctx *p, const struct lx_node *n, struct lc_rule *r)
{
    static const char *const names[] = {"NoncurrentDays", "NewerNoncurrentVersions", NULL};
    enum lc_status st;
    if (!lx_children_ok(n, names, 0))
        return lc_err(p, LC_MALFORMED, NULL);
    const struct lx_node *days = lx_child(n, "NoncurrentDays");
    const struct lx_node *newer = lx_child(n, "NewerNoncurrentVersions");
    if (!days)
        return lc_err(p, LC_MALFORMED, NULL);
    r->has_nc_expiration = true;
    r->has_nc_exp_days = true;
    st = parse_days(p, days, false,
                    "'NoncurrentDays' for NoncurrentVersionExpiration action must be a positive "
                    "integer",
                    &r->nc_exp_days);
    if (st != LC_OK || !newer)
        return st;
    int64_t v;
    if (!lx_int(newer, &v))
        return lc_err(p, LC_MALFORMED, NULL);
    if (v < 1 || v > 100)
        return lc_err(p, LC_INVALID_ARGUMENT,
                      "'NewerNoncurrentVersions' must be an integer from 1 to 100");
    r->has_nc_exp_newer = true;
    r->nc_exp_newer = (uint32_t)v;
    return LC_OK;
}

static enum lc_status
parse_rule(struct lc_parse_ctx *p, const struct lx_node *n, struct lc_rule *r)
{
    static const char *const names[] = {"ID",
                                        "Prefix",
                                        "Filter",
                                        "Status",
                                        "Expiration",
                                        "Transition",
                                        "NoncurrentVersionExpiration",
                                        "NoncurrentVersionTransition",
                                        "AbortIncompleteMultipartUpload",
                                        NULL};
    enum lc_status st;
    if (!lx_children_ok(n, names, (1u << 5) | (1u << 7)))
        return lc_err(p, LC_MALFORMED, NULL);
    const struct lx_node *id = lx_child(n, "ID"), *status = lx_child(n, "Status");
    const struct lx_node *prefix = lx_child(n, "Prefix"), *filter = lx_child(n, "Filter");
    if (id) {
        if (!lx_is_leaf(id))
            return lc_err(p, LC_MALFORMED, NULL);
        if (id->text.len > LC_ID_MAX)
            return lc_err(p, LC_INVALID_ARGUMENT,
                          "ID length should not exceed allowed limit of 255");
        r->id = id->text;
    }
    if (!lx_is_leaf(status))
        return lc_err(p, LC_MALFORMED, NULL);
    if (slice_eq(status->text, SLICE_LIT("Enabled")))
        r->is_enabled = true;
    else if (!slice_eq(status->text, SLICE_LIT("Disabled")))
        return lc_err(p, LC_MALFORMED, NULL);
    if ((prefix != NULL) == (filter != NULL))
        return lc_err(p, LC_MALFORMED, NULL);
    if (prefix) {
        r->filter.form = LC_FILTER_LEGACY_PREFIX;
        st = parse_prefix(p, prefix, &r->filter);
    } else {
        st = parse_filter(p, filter, &r->filter);
    }
    if (st != LC_OK)
        return st;
    if (r->filter.has_size_gt && r->filter.has_size_lt && r->filter.size_gt >= r->filter.size_lt)
        return lc_err(p, LC_INVALID_ARGUMENT,
                      "ObjectSizeGreaterThan must be less than ObjectSizeLessThan");

    uint32_t n_tr = 0, n_nctr = 0;
    for (const struct lx_node *ch = n->first; ch; ch = ch->next) {
        n_tr += strcmp(ch->name, "Transition") == 0;
        n_nctr += strcmp(ch->name, "NoncurrentVersionTransition") == 0;
    }
    r->transitions = arena_calloc(p->a, n_tr ? n_tr : 1, sizeof(*r->transitions));
    r->nc_transitions = arena_calloc(p->a, n_nctr ? n_nctr : 1, sizeof(*r->nc_transitions));
    for (const struct lx_node *ch = n->first; ch; ch = ch->next) {
        st = LC_OK;
        if (strcmp(ch->name, "Expiration") == 0) {
            st = parse_expiration(p, ch, r);
        } else if (strcmp(ch->name, "Transition") == 0) {
            st = parse_transition(p, ch, false, &r->transitions[r->n_transitions++]);
        } else if (strcmp(ch->name, "NoncurrentVersionTransition") == 0) {
            st = parse_transition(p, ch, true, &r->nc_transitions[r->n_nc_transitions++]);
        } else if (strcmp(ch->name, "NoncurrentVersionExpiration") == 0) {
            st = parse_nc_expiration(p, ch, r);
        } else if (strcmp(ch->name, "AbortIncompleteMultipartUpload") == 0) {
            static const char *const an[] = {"DaysAfterInitiation", NULL};
            const struct lx_node *d = lx_child(ch, "DaysAfterInitiation");
            if (!lx_children_ok(ch, an, 0) || !d)
                return lc_err(p, LC_MALFORMED, NULL);
            r->has_abort = true;
            st = parse_days(p, d, false,
                            "'DaysAfterInitiation' for AbortIncompleteMultipartUpload action "
                            "must be a positive integer",
                            &r->abort_days);
            if (st == LC_OK && lc_rule_has_tags(r))
                st = lc_err(p, LC_INVALID_REQUEST,
                            "AbortIncompleteMultipartUpload cannot be specified with Tags.");
            /* An upload has no size yet: a size filter could not select. */
            if (st == LC_OK && (r->filter.has_size_gt || r->filter.has_size_lt))
                st = lc_err(p, LC_INVALID_REQUEST,
                            "AbortIncompleteMultipartUpload cannot be specified with an object "
                            "size filter");
        }
        if (st != LC_OK)
            return st;
    }
    if (!r->has_expiration && !r->n_transitions && !r->has_abort && !r->has_nc_expiration &&
        !r->n_nc_transitions)
        return lc_err(p, LC_INVALID_REQUEST, "At least one action needs to be specified in a rule");
    for (uint32_t i = 0; i < r->n_nc_transitions; i++)
        for (uint32_t j = i + 1; j < r->n_nc_transitions; j++)
            if (strcmp(r->nc_transitions[i].storage_class, r->nc_transitions[j].storage_class) == 0)
                return lc_err(p, LC_INVALID_REQUEST,
                              "'StorageClass' must be different for "
                              "'NoncurrentVersionTransition' actions in same 'Rule'");
    return check_transitions(p, r);
}

static bool
id_is_taken(const struct lc_config *c, uint32_t upto, struct slice id)
{
    for (uint32_t i = 0; i < upto; i++)
        if (c->rules[i].id.len && slice_eq(c->rules[i].id, id))
            return true;
    return false;
}

enum lc_status
lc_parse(const char *body, size_t len, struct arena *a, struct lc_config *out, const char **msg)
{
    static const char *const names[] = {"Rule", NULL};
    struct lc_parse_ctx p = {.a = a};
    enum lc_status st = LC_OK;
    struct lx_node *root = lx_parse(body, len, a);

    *out = (struct lc_config){0};
    if (!root || strcmp(root->name, "LifecycleConfiguration") != 0 ||
        !lx_children_ok(root, names, 1u) || !root->first) {
        st = lc_err(&p, LC_MALFORMED, NULL);
        goto done;
    }
    uint32_t n = 0;
    for (const struct lx_node *ch = root->first; ch; ch = ch->next)
        n++;
    if (n > LC_RULES_MAX) {
        st = lc_err(&p, LC_INVALID_REQUEST,
                    "The number of lifecycle rules must not exceed the allowed limit of 1000 "
                    "rules");
        goto done;
    }
    out->rules = arena_calloc(a, n, sizeof(*out->rules));
    for (const struct lx_node *ch = root->first; ch; ch = ch->next) {
        if ((st = parse_rule(&p, ch, &out->rules[out->n_rules])) != LC_OK)
            goto done;
        out->n_rules++;
    }
    for (uint32_t i = 0; i < out->n_rules; i++)
        if (out->rules[i].id.len && id_is_taken(out, i, out->rules[i].id)) {
            st = lc_err(&p, LC_INVALID_ARGUMENT,
                        "Rule ID must be unique. Found same ID for more than one rule");
            goto done;
        }
    /* S3 names a rule given without ID; the name must not clash. */
    for (uint32_t i = 0, k = 1; i < out->n_rules; i++) {
        while (!out->rules[i].id.len) {
            char *id = arena_sprintf(a, "rule-%" PRIu32, k++);
            struct slice s = slice_from_cstr(id);
            if (!id_is_taken(out, out->n_rules, s))
                out->rules[i].id = s;
        }
    }

done:
    if (st != LC_OK)
        *out = (struct lc_config){0};
    *msg = p.msg;
    return st;
}

/* ------------------------------------------------------------------ */
/* Formatting                                                         */
/* ------------------------------------------------------------------ */

/* XML text escaping. (server/xml_out.c has the server's; this library
 * links without the server, so it keeps its own, with the same output:
 * markup characters and control characters as references.) */
static void
lx_escape(struct buf *b, struct slice s)
{
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (c == '&')
            buf_append_str(b, "&amp;");
        else if (c == '<')
            buf_append_str(b, "&lt;");
        else if (c == '>')
            buf_append_str(b, "&gt;");
        else if (c == '"')
            buf_append_str(b, "&quot;");
        else if (c == '\'')
            buf_append_str(b, "&apos;");
        else if (c < 0x20)
            buf_printf(b, "&#%u;", c);
        else
            buf_append(b, &s.ptr[i], 1);
    }
}

static void
lx_elem(struct buf *b, const char *name, struct slice v)
{
    buf_printf(b, "<%s>", name);
    lx_escape(b, v);
    buf_printf(b, "</%s>", name);
}

static void
lx_elem_u64(struct buf *b, const char *name, uint64_t v)
{
    buf_printf(b, "<%s>%" PRIu64 "</%s>", name, v, name);
}

static void
lx_elem_date(struct buf *b, const char *name, int64_t date_s)
{
    char d[32];
    lc_format_date(date_s, d);
    buf_printf(b, "<%s>%s</%s>", name, d, name);
}

static void
format_tag(struct buf *b, const struct lc_tag *t)
{
    buf_append_str(b, "<Tag>");
    lx_elem(b, "Key", t->key);
    lx_elem(b, "Value", t->value);
    buf_append_str(b, "</Tag>");
}

static void
format_filter(struct buf *b, const struct lc_filter *f)
{
    if (f->form == LC_FILTER_LEGACY_PREFIX) {
        lx_elem(b, "Prefix", f->prefix);
        return;
    }
    buf_append_str(b, "<Filter>");
    if (f->form == LC_FILTER_AND)
        buf_append_str(b, "<And>");
    if (f->has_prefix)
        lx_elem(b, "Prefix", f->prefix);
    for (uint32_t i = 0; i < f->n_tags; i++)
        format_tag(b, &f->tags[i]);
    if (f->has_size_gt)
        lx_elem_u64(b, "ObjectSizeGreaterThan", f->size_gt);
    if (f->has_size_lt)
        lx_elem_u64(b, "ObjectSizeLessThan", f->size_lt);
    if (f->form == LC_FILTER_AND)
        buf_append_str(b, "</And>");
    buf_append_str(b, "</Filter>");
}

static void
format_transition(struct buf *b, const struct lc_transition *t, bool is_noncurrent)
{
    const char *root = is_noncurrent ? "NoncurrentVersionTransition" : "Transition";
    buf_printf(b, "<%s>", root);
    if (t->has_days)
        lx_elem_u64(b, is_noncurrent ? "NoncurrentDays" : "Days", t->days);
    if (t->has_date)
        lx_elem_date(b, "Date", t->date_s);
    if (t->has_newer)
        lx_elem_u64(b, "NewerNoncurrentVersions", t->newer);
    buf_printf(b, "<StorageClass>%s</StorageClass></%s>", t->storage_class, root);
}

void
lc_format(const struct lc_config *c, struct buf *b)
{
    buf_append_str(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<LifecycleConfiguration "
                      "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
    for (uint32_t i = 0; i < c->n_rules; i++) {
        const struct lc_rule *r = &c->rules[i];
        buf_append_str(b, "<Rule>");
        if (r->has_expiration) {
            buf_append_str(b, "<Expiration>");
            if (r->has_exp_days)
                lx_elem_u64(b, "Days", r->exp_days);
            if (r->has_exp_date)
                lx_elem_date(b, "Date", r->exp_date_s);
            if (r->has_exp_delete_marker)
                buf_printf(b, "<ExpiredObjectDeleteMarker>%s</ExpiredObjectDeleteMarker>",
                           r->exp_delete_marker ? "true" : "false");
            buf_append_str(b, "</Expiration>");
        }
        lx_elem(b, "ID", r->id);
        format_filter(b, &r->filter);
        buf_printf(b, "<Status>%s</Status>", r->is_enabled ? "Enabled" : "Disabled");
        for (uint32_t k = 0; k < r->n_transitions; k++)
            format_transition(b, &r->transitions[k], false);
        for (uint32_t k = 0; k < r->n_nc_transitions; k++)
            format_transition(b, &r->nc_transitions[k], true);
        if (r->has_nc_expiration) {
            buf_append_str(b, "<NoncurrentVersionExpiration>");
            if (r->has_nc_exp_days)
                lx_elem_u64(b, "NoncurrentDays", r->nc_exp_days);
            if (r->has_nc_exp_newer)
                lx_elem_u64(b, "NewerNoncurrentVersions", r->nc_exp_newer);
            buf_append_str(b, "</NoncurrentVersionExpiration>");
        }
        if (r->has_abort)
            buf_printf(b,
                       "<AbortIncompleteMultipartUpload><DaysAfterInitiation>%" PRIu32
                       "</DaysAfterInitiation></AbortIncompleteMultipartUpload>",
                       r->abort_days);
        buf_append_str(b, "</Rule>");
    }
    buf_append_str(b, "</LifecycleConfiguration>");
}

/* ------------------------------------------------------------------ */
/* Matching                                                           */
/* ------------------------------------------------------------------ */

bool
lc_rule_has_tags(const struct lc_rule *rule)
{
    return rule->filter.n_tags > 0;
}

bool
lc_rule_matches(const struct lc_rule *rule, const struct lc_object *o)
{
    const struct lc_filter *f = &rule->filter;
    if (f->has_prefix && !slice_has_prefix(o->key, f->prefix))
        return false;
    if (f->has_size_gt && !(o->size > f->size_gt))
        return false;
    if (f->has_size_lt && !(o->size < f->size_lt))
        return false;
    if (f->n_tags && !o->has_tags)
        return false;
    for (uint32_t i = 0; i < f->n_tags; i++) {
        bool is_found = false;
        for (size_t j = 0; j < o->n_tags && !is_found; j++)
            is_found = slice_eq(o->tags[j].key, f->tags[i].key) &&
                       slice_eq(o->tags[j].value, f->tags[i].value);
        if (!is_found)
            return false;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Bucket tagging                                                     */
/* ------------------------------------------------------------------ */

enum lc_status
lc_parse_tagging(const char *body, size_t len, struct arena *a, struct lc_tag **tags,
                 uint32_t *n_tags, const char **msg)
{
    static const char *const root_names[] = {"TagSet", NULL};
    static const char *const set_names[] = {"Tag", NULL};
    struct lx_node *root = lx_parse(body, len, a);
    const struct lx_node *set;
    struct lc_tag *out = NULL;
    uint32_t n = 0;

    *tags = NULL;
    *n_tags = 0;
    *msg = NULL;
    if (!root || strcmp(root->name, "Tagging") != 0 || !lx_children_ok(root, root_names, 0) ||
        !(set = lx_child(root, "TagSet")) || !lx_children_ok(set, set_names, 1u))
        return LC_MALFORMED;
    for (const struct lx_node *ch = set->first; ch; ch = ch->next)
        n++;
    if (n > LC_BUCKET_TAGS_MAX) {
        *msg = "Bucket tag count cannot be greater than 50";
        return LC_INVALID_TAG;
    }
    out = arena_calloc(a, n ? n : 1, sizeof(*out));
    n = 0;
    for (const struct lx_node *ch = set->first; ch; ch = ch->next) {
        static const char *const tag_names[] = {"Key", "Value", NULL};
        const struct lx_node *k = lx_child(ch, "Key"), *v = lx_child(ch, "Value");
        if (!lx_children_ok(ch, tag_names, 0) || !lx_is_leaf(k) || !lx_is_leaf(v))
            return LC_MALFORMED;
        struct lc_tag t = {k->text, v->text};
        if (t.key.len == 0) {
            *msg = "The TagKey you have provided is invalid";
            return LC_INVALID_TAG;
        }
        if (utf8_chars(t.key) > LC_TAG_KEY_MAX) {
            *msg = "The TagKey you have provided is too long, max 128";
            return LC_INVALID_TAG;
        }
        if (utf8_chars(t.value) > LC_TAG_VALUE_MAX) {
            *msg = "The TagValue you have provided is too long, max 256";
            return LC_INVALID_TAG;
        }
        if (slice_has_prefix(t.key, SLICE_LIT("aws:"))) {
            *msg = "Your TagKey cannot be prefixed with aws:";
            return LC_INVALID_TAG;
        }
        for (uint32_t i = 0; i < n; i++)
            if (slice_eq(out[i].key, t.key)) {
                *msg = "Cannot provide multiple Tags with the same key";
                return LC_INVALID_TAG;
            }
        out[n++] = t;
    }
    *tags = out;
    *n_tags = n;
    return LC_OK;
}

void
lc_format_tagging(const struct lc_tag *tags, uint32_t n_tags, struct buf *b)
{
    buf_append_str(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Tagging "
                      "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet>");
    for (uint32_t i = 0; i < n_tags; i++)
        format_tag(b, &tags[i]);
    buf_append_str(b, "</TagSet></Tagging>");
}
