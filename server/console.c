/*
 * console.c: the read-only status console at /_/console. The page, app.js
 * and app.css are embedded (console_assets.c) and served without
 * authentication; the page learns nothing from them but the region it must
 * sign for. What it shows comes from two JSON endpoints that need SigV4 by
 * an admin key (op_admin authorizes them as admin reads), which the page
 * signs in the browser with a signing key derived at login, so no secret
 * and no session token ever leaves it or is stored:
 *   GET /_/console/api/summary  health, version, uptime, the request and
 *                               byte counters (the page graphs their
 *                               rates), storage, index, lifecycle, and the
 *                               last errors (error_ring.c)
 *   GET /_/console/api/buckets  buckets with object counts and bytes: a
 *                               bounded scan (CONSOLE_SCAN_MAX_*), run on a
 *                               worker (router.c marks it blocking)
 * Every console response carries a strict Content-Security-Policy (only
 * this origin's script, style and fetches; no framing) and is not cached.
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/console.h"
#include "server/error_ring.h"
#include "server/errors.h"
#include "server/lifecycle.h"
#include "server/req.h"
#include "server/server.h"
#include "server/xml_out.h"
#include "shard_version.h"
#include "storage/storage.h"

#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CSP                                                                                        \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "                    \
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/* The page's placeholder for the server's region (a <meta> content). */
#define REGION_MARK "@REGION@"

/* Queues 'len' bytes of 'body' ('is_static': static storage, else
 * copied) with the console's security headers. */
static void
respond(struct s3_req *r, const char *content_type, const void *body, size_t len, bool is_static)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        len, (void *)body, is_static ? MHD_RESPMEM_PERSISTENT : MHD_RESPMEM_MUST_COPY);
    s3_resp_header(resp, "Content-Type", content_type);
    s3_resp_header(resp, "Content-Security-Policy", CSP);
    s3_resp_header(resp, "X-Content-Type-Options", "nosniff");
    s3_resp_header(resp, "X-Frame-Options", "DENY");
    s3_resp_header(resp, "Referrer-Policy", "no-referrer");
    s3_resp_header(resp, "Cache-Control", "no-store");
    if (!r->is_responded)
        r->resp_bytes = len;
    s3_respond(r, 200, resp);
}

/* ======================================================================
 * Static files
 * ====================================================================== */

static const struct console_asset *
asset_find(struct slice name)
{
    for (size_t i = 0; i < console_n_assets; i++)
        if (slice_eq(name, slice_from_cstr(console_assets[i].name)))
            return &console_assets[i];
    return NULL;
}

/* Whether 'region' may go into the page as it is: the characters of
 * region names only, so nothing needs escaping. */
static bool
is_plain_region(const char *region)
{
    for (const char *p = region; *p; p++)
        if (!(*p == '-' || *p == '_' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
              (*p >= 'A' && *p <= 'Z')))
            return false;
    return true;
}

/* The page, with the region the page signs for in place of REGION_MARK. */
static void
serve_page(struct s3_req *r, const struct console_asset *a)
{
    struct slice page = {(const char *)a->data, a->len};
    const char *region = is_plain_region(r->srv->cfg.region) ? r->srv->cfg.region : "";
    const char *mark = memmem(page.ptr, page.len, REGION_MARK, strlen(REGION_MARK));
    if (!mark) {
        respond(r, a->content_type, a->data, a->len, true);
        return;
    }
    struct buf b;
    buf_init(&b);
    size_t head = (size_t)(mark - page.ptr);
    buf_append(&b, page.ptr, head);
    buf_append_str(&b, region);
    head += strlen(REGION_MARK);
    buf_append(&b, page.ptr + head, page.len - head);
    respond(r, a->content_type, b.ptr, b.len, false);
    buf_cleanup(&b);
}

bool
console_serve_static(struct s3_req *r, struct slice path)
{
    const struct slice prefix = SLICE_LIT("console/");
    if (slice_eq(path, SLICE_LIT("console")) || slice_eq(path, prefix)) {
        const struct console_asset *page = asset_find(SLICE_LIT("index.html"));
        if (!page)
            return false;
        serve_page(r, page);
        return true;
    }
    if (!slice_has_prefix(path, prefix))
        return false;
    struct slice name = {path.ptr + prefix.len, path.len - prefix.len};
    const struct console_asset *a = asset_find(name);
    if (!a || slice_eq(name, SLICE_LIT("index.html")))
        return false;
    respond(r, a->content_type, a->data, a->len, true);
    return true;
}

/* ======================================================================
 * API
 * ====================================================================== */

/* Appends a JSON string of wall-clock 'ns' as ISO 8601 UTC, or null for 0. */
static void
json_time(struct buf *b, int64_t ns)
{
    if (ns <= 0) {
        buf_append_str(b, "null");
        return;
    }
    time_t s = (time_t)(ns / 1000000000);
    struct tm tm;
    gmtime_r(&s, &tm);
    buf_printf(b, "\"%04d-%02d-%02dT%02d:%02d:%02dZ\"", tm.tm_year + 1900, tm.tm_mon + 1,
               tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static void
api_summary(struct s3_req *r)
{
    struct server *srv = r->srv;
    const struct metrics *m = &srv->metrics;
    struct storage_stats st;
    storage_stats_get(srv->storage, &st);
    struct index_stats ix = {0};
    index_stats_get(srv->index, &ix);
    struct lifecycle_stats ls = {0};
    if (srv->lifecycle)
        lifecycle_stats_get(srv->lifecycle, &ls);
    int64_t now_ns = clock_now_ns();
    struct buf b;
    buf_init(&b);
    buf_printf(
        &b, "{\"status\":\"%s\",\"version\":", atomic_load(&srv->is_stopping) ? "stopping" : "ok");
    json_string(&b, slice_from_cstr(SHARD_VERSION));
    buf_append_str(&b, ",\"region\":");
    json_string(&b, slice_from_cstr(srv->cfg.region));
    buf_printf(&b, ",\"now_ms\":%" PRId64 ",\"uptime_s\":%.3f", now_ns / 1000000,
               (double)(clock_mono_ns() - srv->start_mono_ns) / 1e9);
    buf_printf(&b,
               ",\"counters\":{\"requests\":%" PRIu64 ",\"errors_4xx\":%" PRIu64
               ",\"errors_5xx\":%" PRIu64 ",\"auth_failures\":%" PRIu64 ",\"bytes_in\":%" PRIu64
               ",\"bytes_out\":%" PRIu64 ",\"puts\":%" PRIu64 ",\"gets\":%" PRIu64
               "},\"in_flight\":%" PRIu64,
               (uint64_t)atomic_load(&m->requests), (uint64_t)atomic_load(&m->errors_4xx),
               (uint64_t)atomic_load(&m->errors_5xx), (uint64_t)atomic_load(&m->auth_failures),
               (uint64_t)atomic_load(&m->bytes_in), (uint64_t)atomic_load(&m->bytes_out),
               (uint64_t)atomic_load(&m->puts), (uint64_t)atomic_load(&m->gets),
               (uint64_t)atomic_load(&srv->in_flight));
    buf_printf(&b,
               ",\"storage\":{\"total_bytes\":%" PRIu64 ",\"free_bytes\":%" PRIu64
               ",\"pending_bytes\":%" PRIu64
               ",\"volumes\":%u},\"index\":{\"map_size_bytes\":%" PRIu64
               ",\"map_used_bytes\":%" PRIu64 "}",
               st.total_bytes, st.free_bytes, st.pending_bytes, st.n_volumes, ix.map_size_bytes,
               ix.used_bytes);
    buf_printf(&b, ",\"lifecycle\":{\"interval_s\":%u,\"passes\":%" PRIu64 ",\"last_pass_end\":",
               srv->cfg.lifecycle_interval_s, ls.passes);
    json_time(&b, ls.last_pass_end_ns);
    buf_printf(&b,
               ",\"last_pass_ms\":%" PRId64 ",\"objects_scanned\":%" PRIu64
               ",\"objects_expired\":%" PRIu64 ",\"bytes_expired\":%" PRIu64
               ",\"uploads_aborted\":%" PRIu64 ",\"errors\":%" PRIu64 "}",
               ls.last_pass_ms, ls.objects_scanned, ls.objects_expired, ls.bytes_expired,
               ls.uploads_aborted, ls.errors);
    buf_append_str(&b, ",\"recent_errors\":");
    error_ring_format_json(&b, ERROR_RING_SIZE);
    buf_append_str(&b, "}\n");
    respond(r, "application/json", b.ptr, b.len, false);
    buf_cleanup(&b);
}

struct bucket_list {
    struct index_bucket *v;
    size_t n;
    bool is_truncated;
};

static int
collect_bucket(void *ctx, const struct index_bucket *bk)
{
    struct bucket_list *l = ctx;
    if (l->n == CONSOLE_BUCKETS_MAX) {
        l->is_truncated = true;
        return 1;
    }
    l->v[l->n++] = *bk;
    return 0;
}

static void
api_buckets(struct s3_req *r)
{
    struct bucket_list l = {.v = arena_calloc(r->arena, CONSOLE_BUCKETS_MAX, sizeof(*l.v))};
    /* The bucket list first (one read transaction), then each bucket's
     * count in its own: a thread holds one transaction at a time. */
    if (index_bucket_list(r->srv->index, collect_bucket, &l) < 0) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    struct buf b;
    buf_init(&b);
    buf_printf(&b, "{\"buckets_truncated\":%s,\"scan_max_per_bucket\":%d,\"buckets\":[",
               l.is_truncated ? "true" : "false", CONSOLE_SCAN_MAX_PER_BUCKET);
    uint64_t budget = CONSOLE_SCAN_MAX_TOTAL;
    for (size_t i = 0; i < l.n; i++) {
        uint64_t n = 0, bytes = 0;
        bool is_cut = false;
        int rc = -EAGAIN;
        if (budget > 0)
            rc = index_bucket_usage(r->srv->index, l.v[i].id,
                                    MIN(budget, (uint64_t)CONSOLE_SCAN_MAX_PER_BUCKET), &n, &bytes,
                                    &is_cut);
        buf_append_str(&b, i ? ",{\"name\":" : "{\"name\":");
        json_string(&b, slice_from_cstr(l.v[i].name));
        buf_append_str(&b, ",\"created\":");
        json_time(&b, l.v[i].created_ns);
        buf_printf(&b, ",\"public_read\":%s", l.v[i].is_public_read ? "true" : "false");
        if (rc == 0) {
            budget -= n;
            buf_printf(&b, ",\"objects\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"truncated\":%s}", n,
                       bytes, is_cut ? "true" : "false");
        } else {
            /* Past the budget, or unreadable: counts unknown. */
            buf_append_str(&b, ",\"objects\":null,\"bytes\":null,\"truncated\":true}");
        }
    }
    buf_append_str(&b, "]}\n");
    respond(r, "application/json", b.ptr, b.len, false);
    buf_cleanup(&b);
}

void
console_api(struct s3_req *r, struct slice what)
{
    if (slice_eq(what, SLICE_LIT("summary")))
        api_summary(r);
    else if (slice_eq(what, SLICE_LIT("buckets")))
        api_buckets(r);
    else
        s3_respond_error(r, S3_ERR_INVALID_REQUEST, "Unknown console endpoint");
}
