/*
 * cors.c: bucket CORS configurations. cors_parse validates a PutBucketCors
 * body (shape from xml_in.c) with S3's errors and builds the rule set;
 * cors_format writes what GetBucketCors answers (and what is stored);
 * cors_match evaluates the rules as S3 does: the first rule whose
 * AllowedOrigin matches the Origin (one '*' wildcard allowed), whose
 * AllowedMethod has the method and whose AllowedHeader patterns cover
 * every requested header wins. Header names compare case-insensitively,
 * origins exactly. Matching allocates nothing.
 */
#include "server/cors.h"
#include "server/xml_in.h"

#include <inttypes.h>
#include <stdio.h>

static const struct {
    const char *name;
    unsigned bit;
} methods[] = {
    {"GET", CORS_GET},       {"PUT", CORS_PUT},   {"POST", CORS_POST},
    {"DELETE", CORS_DELETE}, {"HEAD", CORS_HEAD},
};

unsigned
cors_method_bit(struct slice method)
{
    for (size_t i = 0; i < ARRAY_LEN(methods); i++)
        if (slice_eq(method, slice_from_cstr(methods[i].name)))
            return methods[i].bit;
    return 0;
}

static size_t
count_stars(struct slice s)
{
    size_t n = 0;
    for (size_t i = 0; i < s.len; i++)
        n += s.ptr[i] == '*';
    return n;
}

/* Matches 's' against 'pattern' holding at most one '*' (any run of
 * bytes); 'is_nocase' compares ASCII letters without case. */
static bool
wildcard_match(struct slice pattern, struct slice s, bool is_nocase)
{
    const char *star = memchr(pattern.ptr, '*', pattern.len);
    if (!star)
        return is_nocase ? slice_casecmp(pattern, s) == 0 : slice_eq(pattern, s);
    size_t pre = (size_t)(star - pattern.ptr), post = pattern.len - pre - 1;
    if (s.len < pre + post)
        return false;
    struct slice p1 = {pattern.ptr, pre}, s1 = {s.ptr, pre};
    struct slice p2 = {star + 1, post}, s2 = {s.ptr + s.len - post, post};
    if (is_nocase)
        return slice_casecmp(p1, s1) == 0 && slice_casecmp(p2, s2) == 0;
    return slice_eq(p1, s1) && slice_eq(p2, s2);
}

/* Validates one parsed rule into 'out'. */
static enum cors_status
rule_build(const struct xml_cors_rule *x, struct arena *a, struct cors_rule *out, const char **msg)
{
    memset(out, 0, sizeof(*out));
    out->max_age_s = -1;
    if (x->n_origins == 0 || x->n_methods == 0)
        return CORS_MALFORMED;
    if (x->id.len > 255) {
        *msg = "The ID of a CORSRule must be no longer than 255 characters";
        return CORS_INVALID_REQUEST;
    }
    out->id = x->id.ptr ? x->id : SLICE_LIT("");
    for (size_t i = 0; i < x->n_origins; i++) {
        if (count_stars(x->origins[i]) > 1) {
            *msg = arena_sprintf(a, "AllowedOrigin \"%.*s\" can not have more than one wildcard.",
                                 (int)MIN(x->origins[i].len, 256), x->origins[i].ptr);
            return CORS_INVALID_REQUEST;
        }
        if (x->origins[i].len == 0)
            return CORS_MALFORMED;
    }
    out->origins = x->origins;
    out->n_origins = x->n_origins;
    for (size_t i = 0; i < x->n_methods; i++) {
        unsigned bit = cors_method_bit(x->methods[i]);
        if (!bit) {
            *msg = arena_sprintf(a,
                                 "Found unsupported HTTP method in CORS config. Unsupported "
                                 "method is %.*s",
                                 (int)MIN(x->methods[i].len, 64), x->methods[i].ptr);
            return CORS_INVALID_REQUEST;
        }
        out->methods |= bit;
    }
    out->method_names = x->methods;
    out->n_method_names = x->n_methods;
    for (size_t i = 0; i < x->n_headers; i++) {
        if (count_stars(x->headers[i]) > 1) {
            *msg = arena_sprintf(a, "AllowedHeader \"%.*s\" can not have more than one wildcard.",
                                 (int)MIN(x->headers[i].len, 256), x->headers[i].ptr);
            return CORS_INVALID_REQUEST;
        }
    }
    out->headers = x->headers;
    out->n_headers = x->n_headers;
    for (size_t i = 0; i < x->n_expose; i++) {
        if (count_stars(x->expose[i])) {
            *msg = arena_sprintf(a,
                                 "ExposeHeader \"%.*s\" contains wildcard. We currently do not "
                                 "support wildcard for ExposeHeader.",
                                 (int)MIN(x->expose[i].len, 256), x->expose[i].ptr);
            return CORS_INVALID_REQUEST;
        }
    }
    out->expose = x->expose;
    out->n_expose = x->n_expose;
    if (x->max_age.ptr) {
        uint64_t v;
        if (parse_u64(x->max_age, INT32_MAX, &v) != 0)
            return CORS_MALFORMED;
        out->max_age_s = (int64_t)v;
    }
    return CORS_OK;
}

enum cors_status
cors_parse(const char *body, size_t len, struct arena *a, struct cors_config *out, const char **msg)
{
    struct xml_cors_request req;
    *msg = NULL;
    enum xml_in_status st = xml_parse_cors(body, len, a, &req);
    if (st == XML_IN_TOO_MANY) {
        *msg = "The number of CORS rules should not exceed allowed limit of 100 rules.";
        return CORS_INVALID_REQUEST;
    }
    if (st != XML_IN_OK)
        return CORS_MALFORMED;
    out->rules = arena_calloc(a, req.n_rules, sizeof(*out->rules));
    out->n_rules = req.n_rules;
    for (size_t i = 0; i < req.n_rules; i++) {
        enum cors_status cs = rule_build(&req.rules[i], a, &out->rules[i], msg);
        if (cs != CORS_OK)
            return cs;
    }
    return CORS_OK;
}

static void
elem(struct buf *b, const char *name, struct slice v)
{
    buf_printf(b, "<%s>", name);
    for (size_t i = 0; i < v.len; i++) {
        char c = v.ptr[i];
        if (c == '&')
            buf_append_str(b, "&amp;");
        else if (c == '<')
            buf_append_str(b, "&lt;");
        else if (c == '>')
            buf_append_str(b, "&gt;");
        else if (c == '"')
            buf_append_str(b, "&quot;");
        else if (c == '\r')
            buf_append_str(b, "&#13;");
        else
            buf_append(b, &c, 1);
    }
    buf_printf(b, "</%s>", name);
}

void
cors_format(const struct cors_config *c, struct buf *b)
{
    buf_append_str(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CORSConfiguration "
                      "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
    for (size_t i = 0; i < c->n_rules; i++) {
        const struct cors_rule *r = &c->rules[i];
        buf_append_str(b, "<CORSRule>");
        if (r->id.len)
            elem(b, "ID", r->id);
        for (size_t k = 0; k < r->n_headers; k++)
            elem(b, "AllowedHeader", r->headers[k]);
        for (size_t k = 0; k < r->n_method_names; k++)
            elem(b, "AllowedMethod", r->method_names[k]);
        for (size_t k = 0; k < r->n_origins; k++)
            elem(b, "AllowedOrigin", r->origins[k]);
        for (size_t k = 0; k < r->n_expose; k++)
            elem(b, "ExposeHeader", r->expose[k]);
        if (r->max_age_s >= 0)
            buf_printf(b, "<MaxAgeSeconds>%" PRId64 "</MaxAgeSeconds>", r->max_age_s);
        buf_append_str(b, "</CORSRule>");
    }
    buf_append_str(b, "</CORSConfiguration>");
}

/* Whether every comma-separated header of 'list' matches one of the
 * rule's AllowedHeader patterns. */
static bool
headers_allowed(const struct cors_rule *r, struct slice list)
{
    size_t i = 0;
    while (i < list.len) {
        size_t j = i;
        while (j < list.len && list.ptr[j] != ',')
            j++;
        struct slice h = slice_trim((struct slice){list.ptr + i, j - i});
        i = j + 1;
        if (h.len == 0)
            continue;
        bool is_ok = false;
        for (size_t k = 0; k < r->n_headers && !is_ok; k++)
            is_ok = wildcard_match(r->headers[k], h, true);
        if (!is_ok)
            return false;
    }
    return true;
}

const struct cors_rule *
cors_match(const struct cors_config *c, struct slice origin, unsigned method,
           struct slice request_headers)
{
    for (size_t i = 0; i < c->n_rules; i++) {
        const struct cors_rule *r = &c->rules[i];
        if (!(r->methods & method))
            continue;
        bool is_origin = false;
        for (size_t k = 0; k < r->n_origins && !is_origin; k++)
            is_origin = wildcard_match(r->origins[k], origin, false);
        if (is_origin && headers_allowed(r, request_headers))
            return r;
    }
    return NULL;
}

bool
cors_rule_is_any_origin(const struct cors_rule *rule)
{
    for (size_t k = 0; k < rule->n_origins; k++)
        if (slice_eq(rule->origins[k], SLICE_LIT("*")))
            return true;
    return false;
}

void
cors_methods_format(const struct cors_rule *rule, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < ARRAY_LEN(methods); i++) {
        if (!(rule->methods & methods[i].bit))
            continue;
        int w = snprintf(out + n, cap - n, "%s%s", n ? ", " : "", methods[i].name);
        if (w < 0 || (size_t)w >= cap - n)
            return;
        n += (size_t)w;
    }
}
