/*
 * fuzz_list_xml.c: libFuzzer target for the list page parsers of
 * libshard: client/xml.c (expat) in both its modes (ListObjectsV2 and
 * ListObjectVersions: server answers libshard reads) and the hand-written
 * ListVersionsResult scanner of client/version_scan.c. Properties beyond
 * "no crash": every key, version id and marker handed out is
 * NUL-terminated within its buffer; a common prefix has no version id and
 * is never latest, only a version or delete marker is; the callbacks seen
 * equal the entries counted; parsing the same input twice gives the same
 * callbacks and markers; when expat and the scanner both accept a page they
 * report the same callbacks (every field), count and markers, and the
 * scanner's head read accepts what its whole scan accepts.
 */
#include "client/shard_int.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* client/xml.c is linked alone (no libcurl client): its DeleteObjects
 * result parser reports through client__err, never reached here. */
int
client__err(struct shard_error *err, enum shard_errkind kind, long status, const char *code,
            const char *fmt, ...)
{
    (void)err;
    (void)kind;
    (void)status;
    (void)code;
    (void)fmt;
    return -1;
}

/* What one parse produced. */
struct fuzz_list_state {
    uint64_t hash;
    size_t calls;
};

static void
fuzz_list_fail(const char *why)
{
    fprintf(stderr, "fuzz_list_xml: %s\n", why);
    abort();
}

static void
fuzz_list_mix(struct fuzz_list_state *st, const char *s, size_t cap)
{
    size_t n = strnlen(s, cap);
    if (n == cap)
        fuzz_list_fail("a string without its NUL");
    for (size_t i = 0; i < n; i++)
        st->hash = (st->hash ^ (unsigned char)s[i]) * 1099511628211ull;
    st->hash = (st->hash ^ 0x100) * 1099511628211ull;
}

static int
fuzz_list_cb(void *ctx, const struct shard_list_entry *e)
{
    struct fuzz_list_state *st = ctx;
    fuzz_list_mix(st, e->key, 4096);
    fuzz_list_mix(st, e->info.etag, sizeof(e->info.etag));
    fuzz_list_mix(st, e->info.last_modified, sizeof(e->info.last_modified));
    st->hash ^= e->info.size + (e->is_prefix ? 1 : 0);
    st->calls++;
    return 0;
}

static int
fuzz_version_cb(void *ctx, const struct shard_version_entry *e)
{
    struct fuzz_list_state *st = ctx;
    fuzz_list_mix(st, e->key, 4096);
    fuzz_list_mix(st, e->version_id, 256);
    fuzz_list_mix(st, e->info.etag, sizeof(e->info.etag));
    fuzz_list_mix(st, e->info.last_modified, sizeof(e->info.last_modified));
    st->hash = (st->hash ^ e->info.size) * 1099511628211ull;
    if (e->is_prefix && (e->version_id[0] || e->is_latest || e->is_delete_marker))
        fuzz_list_fail("a common prefix with version fields");
    if (e->is_delete_marker && e->info.size != 0)
        fuzz_list_fail("a delete marker with a size");
    st->hash ^= (uint64_t)e->is_latest << 1 | (uint64_t)e->is_delete_marker << 2;
    st->calls++;
    return 0;
}

/* Parses 'xml' in one mode; returns what it saw (markers mixed in). */
static struct fuzz_list_state
fuzz_list_run(const char *xml, size_t len, bool is_versions)
{
    struct fuzz_list_state st = {1469598103934665603ull, 0};
    struct client_list_parser *p = is_versions
                                       ? client__list_versions_parser_create(fuzz_version_cb, &st)
                                       : client__list_parser_create(fuzz_list_cb, &st);
    int rc = client__list_parser_page(p, xml, len);
    if (rc == 0 && st.calls != client__list_parser_count(p))
        fuzz_list_fail("entries counted and entries handed out differ");
    fuzz_list_mix(&st, client__list_parser_token(p), 4096);
    fuzz_list_mix(&st, client__list_parser_key_marker(p), 4096);
    fuzz_list_mix(&st, client__list_parser_version_marker(p), 256);
    st.hash ^= (uint64_t)client__list_parser_truncated(p) << 3 | (uint64_t)(rc != 0) << 4;
    client__list_parser_destroy(p);
    return st;
}

/* Scans 'xml' with the versions scanner; '*rc' gets its result. */
static struct fuzz_list_state
fuzz_scan_run(const char *xml, size_t len, int *rc)
{
    struct fuzz_list_state st = {1469598103934665603ull, 0};
    struct client_version_scan *s = client__version_scan_create(fuzz_version_cb, &st);
    *rc = client__version_scan_page(s, xml, len);
    if (*rc == 0 && st.calls != client__version_scan_count(s))
        fuzz_list_fail("scanner: entries counted and entries handed out differ");
    fuzz_list_mix(&st, "", 1); /* where the token is mixed in for expat */
    fuzz_list_mix(&st, client__version_scan_key_marker(s), 4096);
    fuzz_list_mix(&st, client__version_scan_version_marker(s), 256);
    st.hash ^= (uint64_t)client__version_scan_truncated(s) << 3 | (uint64_t)(*rc != 0) << 4;
    /* The head read: bounded strings; it accepts what the whole scan does
     * (it may name other markers when a page repeats them after its
     * entries: list_versions.c refuses such a page). */
    int hrc = client__version_scan_head(s, xml, len);
    fuzz_list_mix(&st, client__version_scan_key_marker(s), 4096);
    fuzz_list_mix(&st, client__version_scan_version_marker(s), 256);
    st.hash ^= (uint64_t)(hrc != 0) << 5;
    if (*rc == 0 && hrc != 0)
        fuzz_list_fail("the head read refuses a page the scan accepts");
    client__version_scan_destroy(s);
    return st;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A private copy with no slack after it: ASan catches any over-read. */
    char *copy = malloc(size ? size : 1);
    if (size)
        memcpy(copy, data, size);
    for (int mode = 0; mode < 2; mode++) {
        struct fuzz_list_state a = fuzz_list_run(copy, size, mode == 1);
        struct fuzz_list_state b = fuzz_list_run(copy, size, mode == 1);
        if (a.hash != b.hash || a.calls != b.calls)
            fuzz_list_fail("two parses of one input differ");
    }
    /* The scanner against expat: the same answer whenever both accept. */
    struct fuzz_list_state st = {1469598103934665603ull, 0};
    struct client_list_parser *p = client__list_versions_parser_create(fuzz_version_cb, &st);
    int erc = client__list_parser_page(p, copy, size);
    fuzz_list_mix(&st, "", 1);
    fuzz_list_mix(&st, client__list_parser_key_marker(p), 4096);
    fuzz_list_mix(&st, client__list_parser_version_marker(p), 256);
    st.hash ^= (uint64_t)client__list_parser_truncated(p) << 3 | (uint64_t)(erc != 0) << 4;
    size_t ecount = client__list_parser_count(p);
    client__list_parser_destroy(p);
    int src, src2;
    struct fuzz_list_state a = fuzz_scan_run(copy, size, &src);
    struct fuzz_list_state b = fuzz_scan_run(copy, size, &src2);
    if (a.hash != b.hash || a.calls != b.calls || src != src2)
        fuzz_list_fail("two scans of one input differ");
    if (erc == 0 && src == 0) {
        /* The head read's bits were mixed into 'a' after the page's. */
        struct fuzz_list_state again = {1469598103934665603ull, 0};
        struct client_version_scan *s = client__version_scan_create(fuzz_version_cb, &again);
        client__version_scan_page(s, copy, size);
        fuzz_list_mix(&again, "", 1);
        fuzz_list_mix(&again, client__version_scan_key_marker(s), 4096);
        fuzz_list_mix(&again, client__version_scan_version_marker(s), 256);
        again.hash ^= (uint64_t)client__version_scan_truncated(s) << 3;
        if (again.hash != st.hash || again.calls != st.calls ||
            client__version_scan_count(s) != ecount)
            fuzz_list_fail("expat and the scanner accept a page and differ");
        client__version_scan_destroy(s);
    }
    free(copy);
    return 0;
}
