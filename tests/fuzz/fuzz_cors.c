/*
 * fuzz_cors.c: libFuzzer target for server/cors.c (and its shape parser in
 * xml_in.c): the PutBucketCors body. Properties: the status is a known
 * one, with a message unless OK or MALFORMED; an accepted configuration
 * has 1..100 rules, each with an origin and a method, no pattern with two
 * wildcards and no wildcard ExposeHeader; formatting it and parsing the
 * result gives the same rules, which format to the same bytes; matching
 * the rules against the input's first bytes as an origin never fails.
 */
#include "server/cors.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CORS_MAX_INPUT (256u << 10)

static void
fail(const char *what)
{
    fprintf(stderr, "fuzz_cors: %s\n", what);
    abort();
}

static bool
list_eq(const struct slice *a, size_t na, const struct slice *b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (!slice_eq(a[i], b[i]))
            return false;
    return true;
}

static size_t
stars(struct slice s)
{
    size_t n = 0;
    for (size_t i = 0; i < s.len; i++)
        n += s.ptr[i] == '*';
    return n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct arena *a;
    struct cors_config c, c2;
    const char *msg = NULL;
    struct buf b1, b2;

    if (size > FUZZ_CORS_MAX_INPUT)
        return 0;
    a = arena_create(4096);
    enum cors_status st = cors_parse((const char *)data, size, a, &c, &msg);
    if (st != CORS_OK && st != CORS_MALFORMED && st != CORS_INVALID_REQUEST)
        fail("unknown status");
    if (st == CORS_INVALID_REQUEST && (!msg || !*msg))
        fail("an error without its message");
    if (st != CORS_OK) {
        arena_destroy(a);
        return 0;
    }
    if (c.n_rules < 1 || c.n_rules > 100)
        fail("rule count out of 1..100");
    for (size_t i = 0; i < c.n_rules; i++) {
        const struct cors_rule *r = &c.rules[i];
        if (r->n_origins == 0 || r->methods == 0)
            fail("a rule without origin or method");
        for (size_t k = 0; k < r->n_origins; k++)
            if (stars(r->origins[k]) > 1)
                fail("an origin with two wildcards");
        for (size_t k = 0; k < r->n_headers; k++)
            if (stars(r->headers[k]) > 1)
                fail("a header with two wildcards");
        for (size_t k = 0; k < r->n_expose; k++)
            if (stars(r->expose[k]))
                fail("a wildcard ExposeHeader");
    }
    buf_init(&b1);
    buf_init(&b2);
    cors_format(&c, &b1);
    if (cors_parse(b1.ptr, b1.len, a, &c2, &msg) != CORS_OK || c2.n_rules != c.n_rules)
        fail("the formatted configuration does not parse back");
    for (size_t i = 0; i < c.n_rules; i++) {
        const struct cors_rule *x = &c.rules[i], *y = &c2.rules[i];
        if (!slice_eq(x->id, y->id) || x->methods != y->methods || x->max_age_s != y->max_age_s ||
            !list_eq(x->origins, x->n_origins, y->origins, y->n_origins) ||
            !list_eq(x->headers, x->n_headers, y->headers, y->n_headers) ||
            !list_eq(x->expose, x->n_expose, y->expose, y->n_expose) ||
            !list_eq(x->method_names, x->n_method_names, y->method_names, y->n_method_names))
            fail("a rule changed through format and parse");
    }
    cors_format(&c2, &b2);
    if (b1.len != b2.len || memcmp(b1.ptr, b2.ptr, b1.len) != 0)
        fail("formatting is not stable");
    struct slice origin = {(const char *)data, MIN(size, 64)};
    (void)cors_match(&c, origin, CORS_GET, origin);
    buf_cleanup(&b1);
    buf_cleanup(&b2);
    arena_destroy(a);
    return 0;
}
