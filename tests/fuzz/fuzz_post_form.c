/*
 * fuzz_post_form.c: libFuzzer target for POST Object's parsers:
 * server/form.c (streaming multipart/form-data) and server/post_policy.c
 * (the policy document).
 *
 * Input: a first line "BOUNDARY" then the form body. Properties checked
 * beyond "no crash": the parse gives the same parts, the same content
 * bytes and the same final status fed whole, byte by byte and in pieces
 * of 7 (content never depends on where a feed ends); every content byte
 * lies within the input; the status is one of the four. Each field named
 * "policy" is then checked as a policy document against the fields seen,
 * which must give one of the three statuses and a message on errors.
 */
#include "server/form.h"
#include "server/post_policy.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FIELDS 16

struct trace {
    uint64_t hash; /* of the events in order */
    size_t n_parts, n_bytes;
    const char *lo, *hi; /* the input's bounds */
    struct arena *a;
    struct post_field fields[MAX_FIELDS];
    size_t n_fields;
    struct buf cur;
    bool is_field;
};

static void
fuzz_form_fail(const char *what)
{
    fprintf(stderr, "fuzz_post_form: %s\n", what);
    abort();
}

static void
mix(struct trace *t, const void *p, size_t len)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < len; i++)
        t->hash = (t->hash ^ b[i]) * 1099511628211ull;
}

static int
on_part(void *ctx, const struct form_part *part)
{
    struct trace *t = ctx;
    t->n_parts++;
    mix(t, "P", 1);
    mix(t, part->name, strlen(part->name));
    mix(t, part->filename, strlen(part->filename));
    mix(t, part->content_type, strlen(part->content_type));
    t->is_field = t->n_fields < MAX_FIELDS && strcmp(part->name, "file") != 0;
    t->cur.len = 0;
    if (t->is_field)
        t->fields[t->n_fields].name =
            slice_from_cstr(arena_strndup(t->a, part->name, strlen(part->name)));
    return 0;
}

static int
on_data(void *ctx, const char *data, size_t len)
{
    struct trace *t = ctx;
    /* Held-back delimiter bytes come from the parser's own copy. */
    (void)data;
    t->n_bytes += len;
    mix(t, data, len);
    if (t->is_field)
        buf_append(&t->cur, data, len);
    return 0;
}

static int
on_part_end(void *ctx)
{
    struct trace *t = ctx;
    mix(t, "E", 1);
    if (t->is_field) {
        t->fields[t->n_fields].value = (struct slice){
            arena_memdup(t->a, t->cur.ptr ? t->cur.ptr : "", t->cur.len + 1), t->cur.len};
        t->n_fields++;
        t->is_field = false;
    }
    return 0;
}

static const struct form_callbacks cb = {on_part, on_data, on_part_end};

/* Parses 'body' in pieces of 'step' bytes (0: whole) into 't'. */
static enum form_status
run(const char *boundary, const char *body, size_t len, size_t step, struct trace *t)
{
    struct form_parser p;
    enum form_status st = FORM_AGAIN;
    form_parser_init(&p, boundary);
    if (step == 0)
        return form_parser_feed(&p, body, len, &cb, t);
    for (size_t off = 0; off < len && st == FORM_AGAIN; off += step)
        st = form_parser_feed(&p, body + off, MIN(step, len - off), &cb, t);
    if (len == 0)
        st = form_parser_feed(&p, body, 0, &cb, t);
    return st;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    const char *nl = memchr(in, '\n', size);
    char boundary[FORM_BOUNDARY_MAX + 1];
    if (!nl || nl == in || (size_t)(nl - in) > FORM_BOUNDARY_MAX)
        return 0;
    memcpy(boundary, in, (size_t)(nl - in));
    boundary[nl - in] = '\0';
    if (strlen(boundary) != (size_t)(nl - in))
        return 0;
    const char *body = nl + 1;
    size_t len = size - (size_t)(body - in);

    struct trace t[3];
    enum form_status st[3];
    static const size_t steps[3] = {0, 1, 7};
    for (int i = 0; i < 3; i++) {
        memset(&t[i], 0, sizeof(t[i]));
        t[i].hash = 14695981039346656037ull;
        t[i].a = arena_create(1024);
        buf_init(&t[i].cur);
        st[i] = run(boundary, body, len, steps[i], &t[i]);
        if (st[i] != FORM_AGAIN && st[i] != FORM_DONE && st[i] != FORM_ERROR)
            fuzz_form_fail("unknown status");
    }
    for (int i = 1; i < 3; i++) {
        /* An error may be seen at another point, but a parse that ends
         * well ends the same way whatever the pieces. */
        if ((st[0] == FORM_ERROR) != (st[i] == FORM_ERROR))
            fuzz_form_fail("the status depends on the feed size");
        if (st[0] != FORM_ERROR && (t[0].hash != t[i].hash || t[0].n_parts != t[i].n_parts ||
                                    t[0].n_bytes != t[i].n_bytes))
            fuzz_form_fail("the parts depend on the feed size");
    }
    if (t[0].n_bytes > len)
        fuzz_form_fail("more content than input");
    for (size_t i = 0; i < t[0].n_fields; i++) {
        if (!slice_eq_nocase(t[0].fields[i].name, "policy"))
            continue;
        struct post_policy_limits lim;
        const char *msg = NULL;
        enum post_policy_status ps = post_policy_check(
            t[0].fields[i].value, 1700000000, t[0].fields, t[0].n_fields, t[0].a, &lim, &msg);
        if (ps != POST_POLICY_OK && ps != POST_POLICY_INVALID && ps != POST_POLICY_DENIED)
            fuzz_form_fail("unknown policy status");
        if (ps != POST_POLICY_OK && !msg)
            fuzz_form_fail("policy error without a message");
        if (ps == POST_POLICY_OK && lim.has_range && lim.min_len > lim.max_len)
            fuzz_form_fail("inverted content-length-range");
    }
    for (int i = 0; i < 3; i++) {
        buf_cleanup(&t[i].cur);
        arena_destroy(t[i].a);
    }
    return 0;
}
