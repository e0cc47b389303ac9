/*
 * fuzz_lifecycle.c: libFuzzer target for server/lifecycle_xml.c: the
 * LifecycleConfiguration parser (lc_parse) and the bucket Tagging parser
 * (lc_parse_tagging), both run on every input. Properties: the status is
 * a known one and comes with a message whenever it is not LC_OK or
 * LC_MALFORMED; an accepted configuration has 1..1000 rules with unique
 * non-empty IDs of at most 255 bytes, an action each and ordered size
 * bounds, and no tag or size filter on an abort rule; formatting it and parsing the result gives
 * the same rules (field by field) and formats to the same bytes again. An accepted tag set has at
 * most 50 tags with unique keys and round-trips the same way.
 */
#include "server/lifecycle_xml.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_LC_MAX_INPUT (1u << 20)

static void
fail(const char *what)
{
    fprintf(stderr, "fuzz_lifecycle: %s\n", what);
    abort();
}

static bool
tags_eq(const struct lc_tag *a, const struct lc_tag *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (!slice_eq(a[i].key, b[i].key) || !slice_eq(a[i].value, b[i].value))
            return false;
    return true;
}

static bool
transitions_eq(const struct lc_transition *a, const struct lc_transition *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (a[i].has_days != b[i].has_days || a[i].days != b[i].days ||
            a[i].has_date != b[i].has_date || a[i].date_s != b[i].date_s ||
            a[i].has_newer != b[i].has_newer || a[i].newer != b[i].newer ||
            strcmp(a[i].storage_class, b[i].storage_class) != 0)
            return false;
    return true;
}

static bool
rule_eq(const struct lc_rule *a, const struct lc_rule *b)
{
    const struct lc_filter *fa = &a->filter, *fb = &b->filter;
    return slice_eq(a->id, b->id) && a->is_enabled == b->is_enabled && fa->form == fb->form &&
           fa->has_prefix == fb->has_prefix && slice_eq(fa->prefix, fb->prefix) &&
           fa->n_tags == fb->n_tags && tags_eq(fa->tags, fb->tags, fa->n_tags) &&
           fa->has_size_gt == fb->has_size_gt && fa->size_gt == fb->size_gt &&
           fa->has_size_lt == fb->has_size_lt && fa->size_lt == fb->size_lt &&
           a->has_expiration == b->has_expiration && a->has_exp_days == b->has_exp_days &&
           a->exp_days == b->exp_days && a->has_exp_date == b->has_exp_date &&
           a->exp_date_s == b->exp_date_s && a->has_exp_delete_marker == b->has_exp_delete_marker &&
           a->exp_delete_marker == b->exp_delete_marker && a->n_transitions == b->n_transitions &&
           transitions_eq(a->transitions, b->transitions, a->n_transitions) &&
           a->has_abort == b->has_abort && a->abort_days == b->abort_days &&
           a->has_nc_expiration == b->has_nc_expiration && a->nc_exp_days == b->nc_exp_days &&
           a->has_nc_exp_newer == b->has_nc_exp_newer && a->nc_exp_newer == b->nc_exp_newer &&
           a->n_nc_transitions == b->n_nc_transitions &&
           transitions_eq(a->nc_transitions, b->nc_transitions, a->n_nc_transitions);
}

static void
check_status(enum lc_status st, const char *msg)
{
    if (st != LC_OK && st != LC_MALFORMED && st != LC_INVALID_ARGUMENT &&
        st != LC_INVALID_REQUEST && st != LC_INVALID_TAG && st != LC_INVALID_CLASS)
        fail("unknown status");
    if (st != LC_OK && st != LC_MALFORMED && (!msg || !*msg))
        fail("an error without its message");
}

static void
check_lifecycle(struct arena *a, const char *body, size_t len)
{
    struct lc_config c, c2;
    const char *msg = NULL;
    enum lc_status st = lc_parse(body, len, a, &c, &msg);
    check_status(st, msg);
    if (st != LC_OK)
        return;
    if (c.n_rules < 1 || c.n_rules > LC_RULES_MAX)
        fail("rule count out of 1..1000");
    for (uint32_t i = 0; i < c.n_rules; i++) {
        const struct lc_rule *r = &c.rules[i];
        if (r->id.len == 0 || r->id.len > LC_ID_MAX)
            fail("rule ID empty or too long");
        for (uint32_t j = 0; j < i; j++)
            if (slice_eq(r->id, c.rules[j].id))
                fail("duplicate rule IDs accepted");
        if (!r->has_expiration && !r->n_transitions && !r->has_abort && !r->has_nc_expiration &&
            !r->n_nc_transitions)
            fail("a rule without an action accepted");
        if (r->has_exp_date && r->exp_date_s % 86400 != 0)
            fail("an expiration date not at midnight accepted");
        if (r->has_exp_days && r->exp_days == 0)
            fail("zero expiration days accepted");
        if (r->filter.has_size_gt && r->filter.has_size_lt &&
            r->filter.size_gt >= r->filter.size_lt)
            fail("size bounds out of order accepted");
        if (r->has_abort && (lc_rule_has_tags(r) || r->filter.has_size_gt || r->filter.has_size_lt))
            fail("an abort rule with a tag or size filter accepted");
    }
    struct buf b1, b2;
    buf_init(&b1);
    buf_init(&b2);
    lc_format(&c, &b1);
    if (lc_parse(b1.ptr, b1.len, a, &c2, &msg) != LC_OK)
        fail("the formatted configuration does not parse");
    if (c2.n_rules != c.n_rules)
        fail("round trip changed the rule count");
    for (uint32_t i = 0; i < c.n_rules; i++)
        if (!rule_eq(&c.rules[i], &c2.rules[i]))
            fail("round trip changed a rule");
    lc_format(&c2, &b2);
    if (b1.len != b2.len || memcmp(b1.ptr, b2.ptr, b1.len) != 0)
        fail("formatting is not stable");
    buf_cleanup(&b1);
    buf_cleanup(&b2);
}

static void
check_tagging(struct arena *a, const char *body, size_t len)
{
    struct lc_tag *t, *t2;
    uint32_t n, n2;
    const char *msg = NULL;
    enum lc_status st = lc_parse_tagging(body, len, a, &t, &n, &msg);
    check_status(st, msg);
    if (st != LC_OK)
        return;
    if (n > LC_BUCKET_TAGS_MAX)
        fail("more than 50 tags accepted");
    for (uint32_t i = 0; i < n; i++) {
        if (t[i].key.len == 0)
            fail("an empty tag key accepted");
        for (uint32_t j = 0; j < i; j++)
            if (slice_eq(t[i].key, t[j].key))
                fail("duplicate tag keys accepted");
    }
    struct buf b;
    buf_init(&b);
    lc_format_tagging(t, n, &b);
    if (lc_parse_tagging(b.ptr, b.len, a, &t2, &n2, &msg) != LC_OK || n2 != n || !tags_eq(t, t2, n))
        fail("tag set round trip");
    buf_cleanup(&b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct arena *a;
    if (size > FUZZ_LC_MAX_INPUT)
        return 0;
    if (!a)
        a = arena_create(0);
    arena_clear(a);
    check_lifecycle(a, (const char *)data, size);
    arena_clear(a);
    check_tagging(a, (const char *)data, size);
    return 0;
}
