/*
 * json.c: a small strict JSON parser (RFC 8259) for the documents users
 * send: bucket policies and POST policy documents. The input is bounded by
 * the caller (a few KiB) and nesting by JSON_MAX_DEPTH; the tree is built
 * in the caller's arena and nothing else is allocated, so a hostile
 * document costs at most a constant factor of its own size.
 *
 * Invariants: strings come out decoded (escapes resolved, \u as UTF-8,
 * lone surrogates refused); a number keeps its source text; members keep
 * document order; trailing bytes other than whitespace are an error.
 */
#include "common/common.h"

struct json_parser {
    const char *p;
    const char *end;
    struct arena *a;
    int depth;
};

static void
skip_ws(struct json_parser *jp)
{
    while (jp->p < jp->end && (*jp->p == ' ' || *jp->p == '\t' || *jp->p == '\n' || *jp->p == '\r'))
        jp->p++;
}

/* Reads 4 hex digits at jp->p into '*out'. Returns false when malformed. */
static bool
hex4(struct json_parser *jp, unsigned *out)
{
    unsigned v = 0;
    if (jp->end - jp->p < 4)
        return false;
    for (int i = 0; i < 4; i++) {
        int d = hex_digit_value((unsigned char)jp->p[i]);
        if (d < 0)
            return false;
        v = v * 16 + (unsigned)d;
    }
    jp->p += 4;
    *out = v;
    return true;
}

/* Parses a string at jp->p (on the opening quote) into '*out' (decoded,
 * NUL-terminated in the arena). The decoded form is never longer than the
 * source, so one allocation of the source's length suffices. */
static bool
parse_string(struct json_parser *jp, struct slice *out)
{
    const char *s = ++jp->p;
    const char *q = s;
    while (q < jp->end && *q != '"') {
        if (*q == '\\')
            q++;
        q++;
    }
    if (q >= jp->end)
        return false;
    char *o = arena_alloc(jp->a, (size_t)(q - s) + 1);
    size_t n = 0;
    while (jp->p < q) {
        unsigned char c = (unsigned char)*jp->p++;
        if (c < 0x20)
            return false;
        if (c != '\\') {
            o[n++] = (char)c;
            continue;
        }
        c = (unsigned char)*jp->p++;
        unsigned cp, lo;
        switch (c) {
        case '"':
        case '\\':
        case '/':
            o[n++] = (char)c;
            break;
        case 'b':
            o[n++] = '\b';
            break;
        case 'f':
            o[n++] = '\f';
            break;
        case 'n':
            o[n++] = '\n';
            break;
        case 'r':
            o[n++] = '\r';
            break;
        case 't':
            o[n++] = '\t';
            break;
        case 'u':
            if (!hex4(jp, &cp))
                return false;
            if (cp >= 0xdc00 && cp <= 0xdfff)
                return false;
            if (cp >= 0xd800 && cp <= 0xdbff) {
                /* A high surrogate needs its low half: \uDC00-\uDFFF. The
                 * pair's six source bytes give room for its four. */
                if (q - jp->p < 6 || jp->p[0] != '\\' || jp->p[1] != 'u')
                    return false;
                jp->p += 2;
                if (!hex4(jp, &lo) || lo < 0xdc00 || lo > 0xdfff)
                    return false;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            }
            n += utf8_encode(o + n, cp);
            break;
        default:
            return false;
        }
        if (jp->p > q)
            return false;
    }
    jp->p = q + 1;
    o[n] = '\0';
    *out = (struct slice){o, n};
    return true;
}

/* Parses a number per the JSON grammar; keeps its text. */
static bool
parse_number(struct json_parser *jp, struct slice *out)
{
    const char *s = jp->p;
    if (jp->p < jp->end && *jp->p == '-')
        jp->p++;
    if (jp->p >= jp->end || *jp->p < '0' || *jp->p > '9')
        return false;
    if (*jp->p == '0')
        jp->p++;
    else
        while (jp->p < jp->end && *jp->p >= '0' && *jp->p <= '9')
            jp->p++;
    if (jp->p < jp->end && *jp->p == '.') {
        jp->p++;
        if (jp->p >= jp->end || *jp->p < '0' || *jp->p > '9')
            return false;
        while (jp->p < jp->end && *jp->p >= '0' && *jp->p <= '9')
            jp->p++;
    }
    if (jp->p < jp->end && (*jp->p == 'e' || *jp->p == 'E')) {
        jp->p++;
        if (jp->p < jp->end && (*jp->p == '+' || *jp->p == '-'))
            jp->p++;
        if (jp->p >= jp->end || *jp->p < '0' || *jp->p > '9')
            return false;
        while (jp->p < jp->end && *jp->p >= '0' && *jp->p <= '9')
            jp->p++;
    }
    *out = (struct slice){arena_strndup(jp->a, s, (size_t)(jp->p - s)), (size_t)(jp->p - s)};
    return true;
}

static bool
parse_literal(struct json_parser *jp, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(jp->end - jp->p) < n || memcmp(jp->p, lit, n) != 0)
        return false;
    jp->p += n;
    return true;
}

static bool parse_value(struct json_parser *jp, struct json_value *v);

/* Parses the members of an array or object after its opening bracket. */
static bool
parse_container(struct json_parser *jp, struct json_value *v, bool is_object)
{
    char close = is_object ? '}' : ']';
    struct json_value **tail = &v->first;
    if (++jp->depth > JSON_MAX_DEPTH)
        return false;
    jp->p++;
    skip_ws(jp);
    if (jp->p < jp->end && *jp->p == close) {
        jp->p++;
        jp->depth--;
        return true;
    }
    for (;;) {
        struct json_value *m = arena_calloc(jp->a, 1, sizeof(*m));
        skip_ws(jp);
        if (is_object) {
            if (jp->p >= jp->end || *jp->p != '"' || !parse_string(jp, &m->name))
                return false;
            skip_ws(jp);
            if (jp->p >= jp->end || *jp->p != ':')
                return false;
            jp->p++;
        }
        if (!parse_value(jp, m))
            return false;
        *tail = m;
        tail = &m->next;
        v->n++;
        skip_ws(jp);
        if (jp->p >= jp->end)
            return false;
        if (*jp->p == ',') {
            jp->p++;
            continue;
        }
        if (*jp->p != close)
            return false;
        jp->p++;
        jp->depth--;
        return true;
    }
}

static bool
parse_value(struct json_parser *jp, struct json_value *v)
{
    skip_ws(jp);
    if (jp->p >= jp->end)
        return false;
    switch (*jp->p) {
    case '{':
        v->type = JSON_OBJECT;
        return parse_container(jp, v, true);
    case '[':
        v->type = JSON_ARRAY;
        return parse_container(jp, v, false);
    case '"':
        v->type = JSON_STRING;
        return parse_string(jp, &v->str);
    case 't':
        v->type = JSON_BOOL;
        v->boolean = true;
        return parse_literal(jp, "true");
    case 'f':
        v->type = JSON_BOOL;
        return parse_literal(jp, "false");
    case 'n':
        v->type = JSON_NULL;
        return parse_literal(jp, "null");
    default:
        v->type = JSON_NUMBER;
        return parse_number(jp, &v->str);
    }
}

int
json_parse(const char *in, size_t len, struct arena *a, struct json_value *out)
{
    memset(out, 0, sizeof(*out));
    if (!in)
        return -1;
    struct json_parser jp = {.p = in, .end = in + len, .a = a};
    if (!parse_value(&jp, out))
        return -1;
    skip_ws(&jp);
    return jp.p == jp.end ? 0 : -1;
}

const struct json_value *
json_member(const struct json_value *obj, const char *name)
{
    if (!obj || obj->type != JSON_OBJECT)
        return NULL;
    for (const struct json_value *m = obj->first; m; m = m->next)
        if (slice_eq(m->name, slice_from_cstr(name)))
            return m;
    return NULL;
}
