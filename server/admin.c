/*
 * admin.c: endpoints under /_/ (no bucket name can start with '_').
 *   GET /_/health   200 "ok" when ready: the only path served before
 *                   authentication.
 *   GET /_/metrics  Prometheus text format 0.0.4: the registry of metrics.c
 *                   and the gauges read at scrape time. Who may read it is
 *                   metrics_access: admin (the default), local (loopback
 *                   peers, others as admin) or open.
 *   POST /_/scrub   re-reads every extent of every object and compares each
 *                   block with its xxHash64; answers JSON with the totals and
 *                   the objects that have bad blocks.
 *   /_/admin/...    users, access keys, grants, bucket flags (admin_users.c).
 *   POST /_/lifecycle/run[?bucket=NAME]  a lifecycle pass now (of one
 *                   bucket, or all), answered when it ends with its counts.
 *   GET /_/lifecycle/status  the worker's totals since start (JSON).
 *   GET /_/console[/...]  the status console's page and files (served to
 *                   anyone) and its JSON API under console/api/ (admin
 *                   reads), in console.c.
 * Everything else (and metrics unless open to the caller) needs SigV4 with the root key or the key
 * of a user with the admin flag (a read-only key of such a user: GET only).
 */
#include "config.h"

#include "auth/auth.h"
#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/console.h"
#include "server/errors.h"
#include "server/extents.h"
#include "server/hasher.h"
#include "server/lifecycle.h"
#include "server/rdma.h"
#include "server/tier.h"
#include "server/metrics.h"
#include "server/offload.h"
#include "server/ops.h"
#include "server/req.h"
#include "server/server.h"
#include "storage/storage.h"

#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>

static void
metric(struct buf *b, const char *name, const char *type, const char *help, uint64_t v)
{
    metrics_render_value(b, name, type, help, (double)v);
}

/* The scrub counters (registered at the first scrape or scrub). */
struct scrub_metrics {
    struct metric *runs;
    struct metric *objects;
    struct metric *bad_blocks;
    struct metric *read_errors;
};

static struct scrub_metrics
scrub_metrics(void)
{
    return (struct scrub_metrics){
        metrics_counter("shardstore_scrub_runs_total", "", "Scrubs run"),
        metrics_counter("shardstore_scrub_objects_total", "", "Objects verified by scrubs"),
        metrics_counter("shardstore_scrub_bad_blocks_total", "",
                        "Blocks whose checksum did not match in a scrub"),
        metrics_counter("shardstore_scrub_read_errors_total", "", "Objects a scrub could not read"),
    };
}

static void
admin_metrics(struct s3_req *r)
{
    struct server *srv = r->srv;
    struct storage_stats st;
    storage_stats_get(srv->storage, &st);
    struct index_stats ix = {0};
    index_stats_get(srv->index, &ix);
    scrub_metrics();
    struct buf b;
    buf_init(&b);
    metrics_render(&b);
    metric(&b, "shardstore_requests_total", "counter", "HTTP requests received",
           atomic_load(&srv->metrics.requests));
    metric(&b, "shardstore_errors_4xx_total", "counter", "Requests answered 4xx",
           atomic_load(&srv->metrics.errors_4xx));
    metric(&b, "shardstore_errors_5xx_total", "counter", "Requests answered 5xx",
           atomic_load(&srv->metrics.errors_5xx));
    metric(&b, "shardstore_auth_failures_total", "counter", "Requests that failed authentication",
           atomic_load(&srv->metrics.auth_failures));
    metric(&b, "shardstore_bytes_in_total", "counter", "Request body bytes received",
           atomic_load(&srv->metrics.bytes_in));
    metric(&b, "shardstore_body_pieces_total", "counter",
           "Pieces request bodies were received in (one per socket read)",
           atomic_load(&srv->metrics.body_pieces));
    metric(&b, "shardstore_bytes_out_total", "counter", "Object bytes sent",
           atomic_load(&srv->metrics.bytes_out));
    metric(&b, "shardstore_puts_total", "counter", "Objects written",
           atomic_load(&srv->metrics.puts));
    metric(&b, "shardstore_gets_total", "counter", "Object reads", atomic_load(&srv->metrics.gets));
    metric(&b, "shardstore_get_zero_copy_total", "counter",
           "Object reads whose bytes were sent from one span (sendfile)",
           atomic_load(&srv->metrics.gets_zero_copy));
    metric(&b, "shardstore_get_streamed_total", "counter",
           "Object reads whose bytes were read through a buffer",
           atomic_load(&srv->metrics.gets_streamed));
    metric(&b, "shardstore_get_buffered_total", "counter",
           "Of those, reads of at most 256 KiB read whole before the answer",
           atomic_load(&srv->metrics.gets_buffered));
    metric(&b, "shardstore_index_commits_total", "counter", "Index write transactions",
           atomic_load(&srv->metrics.commits));
    metric(&b, "shardstore_index_committed_ops_total", "counter", "Mutations in those transactions",
           atomic_load(&srv->metrics.committed_ops));
    metric(&b, "shardstore_requests_in_flight", "gauge", "Requests being served",
           atomic_load(&srv->in_flight));
    uint64_t n_conns = 0;
    for (size_t i = 0; i < ARRAY_LEN(srv->endpoints); i++) {
        const union MHD_DaemonInfo *di =
            srv->endpoints[i].daemon
                ? MHD_get_daemon_info(srv->endpoints[i].daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS)
                : NULL;
        n_conns += di ? di->num_connections : 0;
    }
    metric(&b, "shardstore_http_connections", "gauge", "Open client connections (every endpoint)",
           n_conns);
    metric(&b, "shardstore_storage_total_bytes", "gauge", "Bytes in all volumes", st.total_bytes);
    metric(&b, "shardstore_storage_free_bytes", "gauge", "Free bytes in the allocator",
           st.free_bytes);
    metric(&b, "shardstore_storage_pending_bytes", "gauge", "Freed bytes waiting for readers",
           st.pending_bytes);
    metric(&b, "shardstore_volume_prezeroed_bytes_total", "counter",
           "Zeros written into free volume space ahead of the allocator", st.prezeroed_bytes);
    /* Per tier: only the hot tier (the volumes of data_dir) exists. */
    uint64_t used = st.total_bytes - MIN(st.total_bytes, st.free_bytes);
    metrics_render_header(&b, "shardstore_volume_used_bytes", "gauge",
                          "Bytes held by data (and by freed extents not yet reclaimed)");
    metrics_render_sample(&b, "shardstore_volume_used_bytes", "tier=\"hot\"", (double)used);
    metrics_render_header(&b, "shardstore_volume_free_bytes", "gauge",
                          "Bytes free for new data in the volumes");
    metrics_render_sample(&b, "shardstore_volume_free_bytes", "tier=\"hot\"",
                          (double)st.free_bytes);
    metric(&b, "shardstore_storage_volumes", "gauge", "Volume files", st.n_volumes);
    metric(&b, "shardstore_storage_reader_pins", "gauge", "Reads holding back freed space",
           st.n_pins);
    metric(&b, "shardstore_index_map_size_bytes", "gauge", "Size of the index's LMDB map",
           ix.map_size_bytes);
    metric(&b, "shardstore_index_map_used_bytes", "gauge",
           "Bytes of the LMDB map in use (its high-water mark)", ix.used_bytes);
    metric(&b, "shardstore_index_shared_extents", "gauge",
           "Extents held by more than one object (copies)", index_shared_extents(srv->index));
    uint64_t n_member_indexes = 0;
    index_member_count(srv->index, &n_member_indexes);
    metric(&b, "shardstore_index_member_indexes", "gauge",
           "Tar objects with a member index (or known not to be tars)", n_member_indexes);
    metric(&b, "shardstore_http_offloaded_total", "counter",
           "Request steps run on a worker instead of an event-loop thread",
           atomic_load(&srv->metrics.offloaded));
    metric(&b, "shardstore_http_workers", "gauge", "Worker threads started for blocking steps",
           srv->offload ? offload_workers(srv->offload) : 0);
    rdma_server_metrics(srv->rdma, &b);
    uint64_t hs_lane = 0, hs_plain = 0, hs_pauses = 0;
    if (srv->hasher)
        hasher_counts(srv->hasher, &hs_lane, &hs_plain, &hs_pauses);
    metric(&b, "shardstore_hash_streams_lane_total", "counter",
           "Uploads hashed in a lane of a multi-buffer MD5", hs_lane);
    metric(&b, "shardstore_hash_streams_plain_total", "counter",
           "Uploads hashed by a hashing thread with a plain MD5 (every lane taken)", hs_plain);
    metric(&b, "shardstore_hash_pauses_total", "counter",
           "Uploads that stopped reading until their hashing caught up", hs_pauses);
    uint64_t hs_runs = 0, hs_lane_jobs = 0;
    if (srv->hasher)
        hasher_run_counts(srv->hasher, &hs_runs, &hs_lane_jobs);
    metric(&b, "shardstore_hash_lane_runs_total", "counter",
           "Runs of the multi-buffer MD5 lanes on the hashing threads", hs_runs);
    metric(&b, "shardstore_hash_lane_slices_total", "counter",
           "Stream slices hashed in those runs (per run: the lanes busy, at most 8)", hs_lane_jobs);
    struct lifecycle_stats ls = {0};
    if (srv->lifecycle)
        lifecycle_stats_get(srv->lifecycle, &ls);
    metric(&b, "shardstore_lifecycle_passes_total", "counter", "Lifecycle passes completed",
           ls.passes);
    metric(&b, "shardstore_lifecycle_objects_scanned_total", "counter",
           "Objects looked at by lifecycle passes", ls.objects_scanned);
    metric(&b, "shardstore_lifecycle_objects_expired_total", "counter",
           "Objects deleted by lifecycle Expiration rules", ls.objects_expired);
    metric(&b, "shardstore_lifecycle_bytes_expired_total", "counter",
           "Bytes of the objects lifecycle rules expired", ls.bytes_expired);
    metric(&b, "shardstore_lifecycle_uploads_aborted_total", "counter",
           "Multipart uploads aborted by lifecycle rules", ls.uploads_aborted);
    metric(&b, "shardstore_lifecycle_errors_total", "counter",
           "Lifecycle steps that failed (retried at the next pass)", ls.errors);
    metric(&b, "shardstore_lifecycle_objects_transitioned_total", "counter",
           "Objects moved to another storage class by lifecycle Transition rules",
           ls.objects_transitioned);
    metric(&b, "shardstore_lifecycle_bytes_transitioned_total", "counter",
           "Bytes of the objects lifecycle Transition rules moved", ls.bytes_transitioned);
    struct tier_stats ts;
    struct tier_space space[TIER_MAX];
    tier_stats_get(srv->tiers, &ts, space);
    metric(&b, "shardstore_tier_objects_moved_total", "counter",
           "Objects moved between tiers (lifecycle and x-amz-storage-class)", ts.objects_moved);
    metric(&b, "shardstore_tier_bytes_moved_total", "counter",
           "Plain bytes of the objects moved between tiers", ts.bytes_moved);
    metric(&b, "shardstore_tier_errors_total", "counter",
           "Moves between tiers that failed (nothing changed; retried)", ts.errors);
    metrics_render_header(&b, "shardstore_tier_used_bytes", "gauge",
                          "Bytes a tier stores (compressed in the cold tier)");
    for (uint32_t i = 1; i < TIER_MAX; i++) {
        const char *name = tier_name(srv->tiers, i);
        if (name)
            metrics_render_sample(&b, "shardstore_tier_used_bytes",
                                  arena_sprintf(r->arena, "tier=\"%s\"", name),
                                  (double)space[i].used_bytes);
    }
    s3_respond_body(r, 200, "text/plain; version=0.0.4; charset=utf-8", b.ptr, b.len);
    buf_cleanup(&b);
}

/* Whether the peer of 'r' is on a loopback address. */
static bool
is_loopback_peer(const struct s3_req *r)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr)
        return false;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a))
            return true;
        return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
    }
    return false;
}

/* Whether /_/metrics may be read by 'r' without a signature. */
static bool
is_metrics_open(const struct s3_req *r)
{
    switch ((enum metrics_access)r->srv->cfg.metrics_access) {
    case METRICS_ACCESS_OPEN:
        return true;
    case METRICS_ACCESS_LOCAL:
        return is_loopback_peer(r);
    case METRICS_ACCESS_ADMIN:
        break;
    }
    return false;
}

struct scrub_ctx {
    struct server *srv;
    uint64_t objects;
    uint64_t bytes;
    uint64_t bad_blocks;
    uint64_t errors;
    uint64_t skipped; /* no reader pin free (the table was full) */
    struct buf bad;   /* JSON array items */
};

static int
scrub_one(void *ctx, uint64_t bucket_id, struct slice key, const struct index_object *seen)
{
    struct scrub_ctx *sc = ctx;
    struct storage *st = sc->srv->storage;
    sc->objects++;
    sc->bytes += seen->size;
    if (seen->n_extents == 0)
        return 0;
    /* One pin per object, narrowed to it, so a long scrub holds back no
     * other space. The scan read 'seen' before the pin was taken, so look
     * it up again under the pin: an object changed meanwhile is verified as
     * it is now, one deleted meanwhile is skipped. */
    uint64_t pin;
    if (storage_reader_pin(st, &pin) < 0) {
        sc->skipped++;
        return 0;
    }
    struct tier_pins tp = {0};
    if (tier_pins_take(sc->srv->tiers, &tp) < 0) {
        storage_reader_unpin(st, pin);
        sc->skipped++;
        return 0;
    }
    struct arena *a = arena_create(4096);
    struct index_object obj;
    long bad = 0;
    int rc = index_object_get(sc->srv->index, bucket_id, key, a, &obj);
    if (rc < 0 && rc != -ENOENT) {
        bad = rc;
    } else if (rc == 0 && TIER_OF(tier_object_flags(&obj)) != TIER_HOT) {
        bad = tier_verify(sc->srv->tiers, &tp, &obj);
    } else if (rc == 0 && obj.n_extents > 0) {
        struct storage_extent *se = arena_calloc(a, obj.n_extents, sizeof(*se));
        extents_from_index(obj.extents, obj.n_extents, se);
        bad = storage_reader_narrow(st, pin, se, obj.n_extents, 0, UINT64_MAX);
        if (bad == 0)
            bad = storage_verify(st, se, obj.n_extents, obj.sums, obj.sums_len);
    }
    storage_reader_unpin(st, pin);
    tier_pins_drop(sc->srv->tiers, &tp, TIER_MAX);
    arena_destroy(a);
    if (bad == 0)
        return 0;
    if (bad < 0)
        sc->errors++;
    else
        sc->bad_blocks += (uint64_t)bad;
    /* JSON string of the key, with control characters and quotes escaped. */
    buf_printf(&sc->bad, "%s{\"bucket_id\":%" PRIu64 ",\"key\":\"", sc->bad.len ? "," : "",
               bucket_id);
    for (size_t i = 0; i < key.len; i++) {
        unsigned char c = (unsigned char)key.ptr[i];
        if (c == '"' || c == '\\')
            buf_printf(&sc->bad, "\\%c", c);
        else if (c < 0x20)
            buf_printf(&sc->bad, "\\u%04x", c);
        else
            buf_append(&sc->bad, &key.ptr[i], 1);
    }
    buf_printf(&sc->bad, "\",\"bad_blocks\":%ld}", bad);
    log_warn("scrub: object in bucket %" PRIu64 " (%zu-byte key) has %ld bad block(s)%s", bucket_id,
             key.len, bad < 0 ? 0 : bad, bad < 0 ? " (read error)" : "");
    return 0;
}

static void
admin_scrub(struct s3_req *r)
{
    struct scrub_ctx sc = {.srv = r->srv};
    buf_init(&sc.bad);
    int64_t t0 = clock_mono_ns();
    int rc = index_object_scan(r->srv->index, scrub_one, &sc);
    if (rc < 0) {
        buf_cleanup(&sc.bad);
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    struct buf b;
    buf_init(&b);
    buf_printf(&b,
               "{\"objects\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"bad_blocks\":%" PRIu64
               ",\"read_errors\":%" PRIu64 ",\"skipped\":%" PRIu64
               ",\"seconds\":%.3f,\"bad_objects\":[%s]}\n",
               sc.objects, sc.bytes, sc.bad_blocks, sc.errors, sc.skipped,
               (double)(clock_mono_ns() - t0) / 1e9, sc.bad.ptr ? sc.bad.ptr : "");
    struct scrub_metrics sm = scrub_metrics();
    metrics_add(sm.runs, 1);
    metrics_add(sm.objects, sc.objects);
    metrics_add(sm.bad_blocks, sc.bad_blocks);
    metrics_add(sm.read_errors, sc.errors);
    log_info("scrub: %" PRIu64 " objects, %" PRIu64 " bytes, %" PRIu64 " bad blocks", sc.objects,
             sc.bytes, sc.bad_blocks);
    s3_respond_body(r, 200, "application/json", b.ptr, b.len);
    buf_cleanup(&b);
    buf_cleanup(&sc.bad);
}

/* Lifecycle counts (a pass's, or the totals with the tiers' when 'ts' is
 * set) as JSON, or as "key=value" lines when 'is_text'. */
static void
lifecycle_format(struct buf *b, const struct lifecycle_stats *st, struct tier_set *ts, bool is_text)
{
    struct lc_field {
        const char *name;
        int64_t v;
    } f[24];
    size_t n = 0;
#define LC_FIELD(k, val) f[n++] = (struct lc_field){k, (int64_t)(val)}
    LC_FIELD("passes", st->passes);
    LC_FIELD("last_pass_end_ns", st->last_pass_end_ns);
    LC_FIELD("last_pass_ms", st->last_pass_ms);
    LC_FIELD("objects_scanned", st->objects_scanned);
    LC_FIELD("objects_expired", st->objects_expired);
    LC_FIELD("bytes_expired", st->bytes_expired);
    LC_FIELD("uploads_aborted", st->uploads_aborted);
    LC_FIELD("errors", st->errors);
    LC_FIELD("tags_read", st->tags_read);
    LC_FIELD("objects_transitioned", st->objects_transitioned);
    LC_FIELD("bytes_transitioned", st->bytes_transitioned);
    LC_FIELD("transition_errors", st->transition_errors);
    if (ts) {
        struct tier_stats t;
        struct tier_space space[TIER_MAX];
        tier_stats_get(ts, &t, space);
        LC_FIELD("tier_objects_moved", t.objects_moved);
        LC_FIELD("tier_bytes_moved", t.bytes_moved);
        LC_FIELD("tier_errors", t.errors);
        LC_FIELD("cold_used_bytes", space[TIER_COLD].used_bytes);
        LC_FIELD("cold_total_bytes", space[TIER_COLD].total_bytes);
    }
#undef LC_FIELD
    buf_append_str(b, is_text ? "" : "{");
    for (size_t i = 0; i < n; i++) {
        if (is_text)
            buf_printf(b, "%s=%" PRId64 "\n", f[i].name, f[i].v);
        else
            buf_printf(b, "%s\"%s\":%" PRId64, i ? "," : "", f[i].name, f[i].v);
    }
    buf_append_str(b, is_text ? "" : "}\n");
}

static void
admin_lifecycle(struct s3_req *r, struct slice what, bool is_get)
{
    struct lifecycle_stats st = {0};
    struct buf b;
    if (slice_eq(what, SLICE_LIT("status")) && is_get) {
        lifecycle_stats_get(r->srv->lifecycle, &st);
    } else if (slice_eq(what, SLICE_LIT("run")) && slice_eq(r->method, SLICE_LIT("POST"))) {
        uint64_t bucket_id = 0;
        const struct s3_param *p = s3_req_param(r, "bucket");
        if (p) {
            struct index_bucket bk;
            if (index_bucket_get(r->srv->index, p->value, &bk) != 0) {
                s3_respond_error(r, S3_ERR_NO_SUCH_BUCKET, NULL);
                return;
            }
            bucket_id = bk.id;
        }
        if (lifecycle_run(r->srv->lifecycle, bucket_id, &st) != 0) {
            s3_respond_error(r, S3_ERR_SLOW_DOWN, "The server is stopping");
            return;
        }
    } else {
        s3_respond_error(r, S3_ERR_INVALID_REQUEST, "Unknown admin endpoint");
        return;
    }
    buf_init(&b);
    lifecycle_format(&b, &st, is_get ? r->srv->tiers : NULL,
                     slice_eq(s3_req_param_value(r, "format"), SLICE_LIT("text")));
    s3_respond_body(r, 200, "application/json", b.ptr, b.len);
    buf_cleanup(&b);
}

void
op_admin(struct s3_req *r)
{
    struct slice what = {r->raw_path.ptr + 3, r->raw_path.len - 3};
    bool is_get = slice_eq(r->method, SLICE_LIT("GET")) || slice_eq(r->method, SLICE_LIT("HEAD"));
    if (slice_eq(what, SLICE_LIT("health")) && is_get) {
        if (atomic_load(&r->srv->is_stopping))
            s3_respond_body(r, 503, "text/plain", "stopping\n", 9);
        else
            s3_respond_body(r, 200, "text/plain", "ok\n", 3);
        return;
    }
    if (is_get && console_serve_static(r, what))
        return;
    bool is_metrics = slice_eq(what, SLICE_LIT("metrics")) && is_get;
    if (is_metrics && is_metrics_open(r)) {
        admin_metrics(r);
        return;
    }
    if (!s3_authenticate(r))
        return;
    enum auth_action action = is_get ? AUTH_ACTION_ADMIN_READ : AUTH_ACTION_ADMIN_WRITE;
    if (!s3_authorize(r, action, SLICE_NULL))
        return;
    if (slice_has_prefix(what, SLICE_LIT("admin/"))) {
        admin_users_handle(r, (struct slice){what.ptr + 6, what.len - 6});
        return;
    }
    if (is_metrics) {
        admin_metrics(r);
        return;
    }
    if (slice_has_prefix(what, SLICE_LIT("console/api/")) && is_get) {
        console_api(r, (struct slice){what.ptr + 12, what.len - 12});
        return;
    }
    if (slice_has_prefix(what, SLICE_LIT("lifecycle/"))) {
        admin_lifecycle(r, (struct slice){what.ptr + 10, what.len - 10}, is_get);
        return;
    }
    if (slice_eq(what, SLICE_LIT("scrub")) && slice_eq(r->method, SLICE_LIT("POST"))) {
        admin_scrub(r);
        return;
    }
    s3_respond_error(r, S3_ERR_INVALID_REQUEST, "Unknown admin endpoint");
}
