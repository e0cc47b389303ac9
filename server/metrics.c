/*
 * metrics.c: the metrics registry (metrics.h). Series are registered under
 * a mutex into an append-only table whose published length is an atomic:
 * readers scan without locks and never see a half-filled entry. Values
 * live in METRICS_SHARDS copies of a slot array; a thread picks its shard
 * once and updates it with relaxed atomic adds (no lock, no shared cache
 * line between threads of different shards). A scrape sums the shards, so
 * it may miss an update in flight but never double counts. A histogram
 * stores per-bucket (not cumulative) counts and its sum; its count is the
 * sum of its buckets, so +Inf always equals _count.
 */
#include "config.h"

#include "common/common.h"
#include "server/metrics.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define METRICS_SHARDS 8
#define METRICS_SLOTS 8192
#define METRICS_MAX 1024
#define METRICS_OPS 128
#define METRICS_REASONS 32

enum metric_kind { KIND_COUNTER, KIND_HISTOGRAM };

struct metric {
    enum metric_kind kind;
    char *name;
    char *labels;
    char *help;
    const uint64_t *bounds;
    size_t n_bounds;
    double scale;
    uint32_t slot; /* counter: 1 slot; histogram: n_bounds + 1 buckets, then the sum */
};

const uint64_t metrics_latency_bounds_ns[] = {
    100000,     250000,     500000,     1000000,     2500000,     5000000,
    10000000,   25000000,   50000000,   100000000,   250000000,   500000000,
    1000000000, 2500000000, 5000000000, 10000000000, 30000000000, 60000000000,
};
const size_t metrics_latency_n_bounds = ARRAY_LEN(metrics_latency_bounds_ns);

struct shard {
    alignas(64) atomic_uint_fast64_t v[METRICS_SLOTS];
};

static struct shard shards[METRICS_SHARDS];
static atomic_uint next_shard;
static _Thread_local unsigned my_shard; /* 1 + index; 0: not chosen yet */

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct metric registry[METRICS_MAX];
static atomic_size_t n_metrics;
static uint32_t n_slots = 2; /* slots 0 and 1: the scratch metric */
static bool is_full_logged;
static struct metric scratch = {.kind = KIND_HISTOGRAM, .slot = 0};

/* Per-operation request metrics, found by the pointer of the name. */
struct op_stats {
    const char *name;
    struct metric *_Atomic requests[6]; /* by status class; 0: no response */
    struct metric *_Atomic ttfb;        /* NULL until registered */
    struct metric *_Atomic total;
    struct metric *bytes_in; /* set before 'total' is published */
    struct metric *bytes_out;
};
static struct op_stats ops[METRICS_OPS];
static atomic_size_t n_ops;

struct reason {
    const char *name;
    struct metric *m;
};
static struct reason reasons[METRICS_REASONS];
static atomic_size_t n_reasons;

static atomic_uint_fast64_t *
shard_slots(void)
{
    if (my_shard == 0)
        my_shard =
            atomic_fetch_add_explicit(&next_shard, 1, memory_order_relaxed) % METRICS_SHARDS + 1;
    return shards[my_shard - 1].v;
}

static struct metric *
find(const char *name, const char *labels)
{
    size_t n = atomic_load_explicit(&n_metrics, memory_order_acquire);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(registry[i].name, name) && !strcmp(registry[i].labels, labels))
            return &registry[i];
    return NULL;
}

static struct metric *
get_or_register(enum metric_kind kind, const char *name, const char *labels, const char *help,
                const uint64_t *bounds, size_t n_bounds, double scale)
{
    struct metric *m = find(name, labels);
    if (m)
        return m;
    pthread_mutex_lock(&reg_lock);
    m = find(name, labels);
    if (m)
        goto done;
    size_t n = atomic_load_explicit(&n_metrics, memory_order_relaxed);
    uint32_t need = kind == KIND_COUNTER ? 1 : (uint32_t)n_bounds + 2;
    if (n == METRICS_MAX || n_slots + need > METRICS_SLOTS) {
        if (!is_full_logged)
            log_warn("metrics: registry full, %s{%s} is not exported", name, labels);
        is_full_logged = true;
        m = &scratch;
        goto done;
    }
    m = &registry[n];
    m->kind = kind;
    m->name = xstrdup(name);
    m->labels = xstrdup(labels);
    m->help = xstrdup(help);
    m->bounds = bounds;
    m->n_bounds = kind == KIND_COUNTER ? 0 : n_bounds;
    m->scale = scale;
    m->slot = n_slots;
    n_slots += need;
    atomic_store_explicit(&n_metrics, n + 1, memory_order_release);
done:
    pthread_mutex_unlock(&reg_lock);
    return m;
}

struct metric *
metrics_counter(const char *name, const char *labels, const char *help)
{
    return get_or_register(KIND_COUNTER, name, labels, help, NULL, 0, 1);
}

struct metric *
metrics_histogram(const char *name, const char *labels, const char *help, const uint64_t *bounds,
                  size_t n_bounds, double scale)
{
    return get_or_register(KIND_HISTOGRAM, name, labels, help, bounds, n_bounds, scale);
}

struct metric *
metrics_latency(const char *name, const char *labels, const char *help)
{
    return metrics_histogram(name, labels, help, metrics_latency_bounds_ns,
                             metrics_latency_n_bounds, 1e-9);
}

void
metrics_add(struct metric *m, uint64_t v)
{
    atomic_fetch_add_explicit(&shard_slots()[m->slot], v, memory_order_relaxed);
}

void
metrics_observe(struct metric *m, uint64_t v)
{
    size_t i = 0;
    while (i < m->n_bounds && v > m->bounds[i])
        i++;
    atomic_uint_fast64_t *s = shard_slots() + m->slot;
    atomic_fetch_add_explicit(&s[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s[m->n_bounds + 1], v, memory_order_relaxed);
}

/* ======================================================================
 * Requests and authentication failures
 * ====================================================================== */

static struct op_stats *
op_stats(const char *op)
{
    size_t n = atomic_load_explicit(&n_ops, memory_order_acquire);
    for (size_t i = 0; i < n; i++)
        if (ops[i].name == op)
            return &ops[i];
    struct op_stats *s = NULL;
    bool is_new = false;
    pthread_mutex_lock(&reg_lock);
    n = atomic_load_explicit(&n_ops, memory_order_relaxed);
    for (size_t i = 0; i < n; i++)
        if (ops[i].name == op)
            s = &ops[i];
    if (!s && n < METRICS_OPS) {
        s = &ops[n];
        s->name = op;
        is_new = true;
        atomic_store_explicit(&n_ops, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&reg_lock);
    if (!is_new)
        return s;
    /* Only the thread that added the entry registers its series (with
     * the lock taken again inside); the others skip the histograms until
     * 'total' is published. An alias (same name, another pointer) gets the
     * same series. */
    char labels[96];
    snprintf(labels, sizeof(labels), "op=\"%s\"", op);
    struct metric *ttfb = metrics_latency("shardstore_http_request_first_byte_seconds", labels,
                                          "Time from the request line to the response head");
    struct metric *total = metrics_latency("shardstore_http_request_duration_seconds", labels,
                                           "Time from the request line to the request's end");
    s->bytes_in = metrics_counter("shardstore_http_request_bytes_total", labels,
                                  "Request body bytes received (as sent, framing included)");
    s->bytes_out = metrics_counter("shardstore_http_response_bytes_total", labels,
                                   "Response body bytes queued for sending");
    atomic_store_explicit(&s->ttfb, ttfb, memory_order_release);
    atomic_store_explicit(&s->total, total, memory_order_release);
    return s;
}

void
metrics_request_done(const char *op, int status, int64_t ttfb_ns, int64_t total_ns,
                     uint64_t bytes_in, uint64_t bytes_out)
{
    static const char *const classes[] = {"none", "1xx", "2xx", "3xx", "4xx", "5xx"};
    if (!op)
        op = "Unknown";
    struct op_stats *s = op_stats(op);
    if (!s)
        return;
    int c = status >= 100 && status < 600 ? status / 100 : 0;
    struct metric *m = atomic_load_explicit(&s->requests[c], memory_order_acquire);
    if (!m) {
        char labels[128];
        snprintf(labels, sizeof(labels), "op=\"%s\",code=\"%s\"", op, classes[c]);
        m = metrics_counter("shardstore_http_requests_total", labels,
                            "Requests by S3 operation and status class");
        atomic_store_explicit(&s->requests[c], m, memory_order_release);
    }
    metrics_add(m, 1);
    struct metric *total = atomic_load_explicit(&s->total, memory_order_acquire);
    struct metric *ttfb = atomic_load_explicit(&s->ttfb, memory_order_acquire);
    if (status > 0 && ttfb)
        metrics_observe(ttfb, ttfb_ns > 0 ? (uint64_t)ttfb_ns : 0);
    if (!total)
        return;
    metrics_observe(total, total_ns > 0 ? (uint64_t)total_ns : 0);
    if (bytes_in)
        metrics_add(s->bytes_in, bytes_in);
    if (bytes_out)
        metrics_add(s->bytes_out, bytes_out);
}

void
metrics_auth_failure(const char *reason)
{
    size_t n = atomic_load_explicit(&n_reasons, memory_order_acquire);
    for (size_t i = 0; i < n; i++)
        if (reasons[i].name == reason) {
            metrics_add(reasons[i].m, 1);
            return;
        }
    char labels[96];
    snprintf(labels, sizeof(labels), "reason=\"%s\"", reason);
    struct metric *m = metrics_counter("shardstore_auth_failures_by_reason_total", labels,
                                       "Requests refused at authentication, by reason");
    pthread_mutex_lock(&reg_lock);
    n = atomic_load_explicit(&n_reasons, memory_order_relaxed);
    if (n < METRICS_REASONS) {
        reasons[n] = (struct reason){reason, m};
        atomic_store_explicit(&n_reasons, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&reg_lock);
    metrics_add(m, 1);
}

/* ======================================================================
 * Rendering
 * ====================================================================== */

void
metrics_render_header(struct buf *b, const char *name, const char *type, const char *help)
{
    buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void
metrics_render_sample(struct buf *b, const char *name, const char *labels, double v)
{
    if (labels && *labels)
        buf_printf(b, "%s{%s} %.17g\n", name, labels, v);
    else
        buf_printf(b, "%s %.17g\n", name, v);
}

void
metrics_render_value(struct buf *b, const char *name, const char *type, const char *help, double v)
{
    metrics_render_header(b, name, type, help);
    metrics_render_sample(b, name, NULL, v);
}

static uint64_t
slot_sum(uint32_t slot)
{
    uint64_t v = 0;
    for (size_t s = 0; s < METRICS_SHARDS; s++)
        v += atomic_load_explicit(&shards[s].v[slot], memory_order_relaxed);
    return v;
}

static void
render_histogram(struct buf *b, const struct metric *m)
{
    const char *sep = *m->labels ? "," : "";
    uint64_t cum = 0;
    for (size_t i = 0; i <= m->n_bounds; i++) {
        cum += slot_sum(m->slot + (uint32_t)i);
        if (i < m->n_bounds)
            buf_printf(b, "%s_bucket{%s%sle=\"%g\"} %" PRIu64 "\n", m->name, m->labels, sep,
                       (double)m->bounds[i] * m->scale, cum);
        else
            buf_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", m->name, m->labels, sep, cum);
    }
    double sum = (double)slot_sum(m->slot + (uint32_t)m->n_bounds + 1) * m->scale;
    const char *open = *m->labels ? "{" : "", *close = *m->labels ? "}" : "";
    buf_printf(b, "%s_sum%s%s%s %.10g\n", m->name, open, m->labels, close, sum);
    buf_printf(b, "%s_count%s%s%s %" PRIu64 "\n", m->name, open, m->labels, close, cum);
}

void
metrics_render(struct buf *b)
{
    size_t n = atomic_load_explicit(&n_metrics, memory_order_acquire);
    for (size_t i = 0; i < n; i++) {
        const struct metric *first = &registry[i];
        bool is_seen = false;
        for (size_t j = 0; j < i && !is_seen; j++)
            is_seen = !strcmp(registry[j].name, first->name);
        if (is_seen)
            continue;
        metrics_render_header(b, first->name, first->kind == KIND_COUNTER ? "counter" : "histogram",
                              first->help);
        for (size_t j = i; j < n; j++) {
            const struct metric *m = &registry[j];
            if (strcmp(m->name, first->name))
                continue;
            if (m->kind == KIND_HISTOGRAM) {
                render_histogram(b, m);
            } else {
                const char *open = *m->labels ? "{" : "", *close = *m->labels ? "}" : "";
                buf_printf(b, "%s%s%s%s %" PRIu64 "\n", m->name, open, m->labels, close,
                           slot_sum(m->slot));
            }
        }
    }
}
