/*
 * metrics.h: the metrics registry behind /_/metrics (metrics.c). A metric
 * is one series: a name plus a fixed label set, registered once (get or
 * create, idempotent) and then updated without locks. Updates land in a
 * per-thread shard of relaxed atomic slots, so threads never share a cache
 * line on the hot path; a scrape sums the shards. Adding a metric to a
 * feature is one line:
 *
 *     metrics_add(metrics_counter("shardstore_x_total", "", "What it counts"), 1);
 *
 * (registration scans the registry: hot paths keep the returned handle).
 */
#ifndef SHARD_SERVER_METRICS_H
#define SHARD_SERVER_METRICS_H

#include "common/common.h"

#include <stddef.h>
#include <stdint.h>

struct metric;

/* Latency histogram bounds in nanoseconds, exported in seconds:
 * 100 us to 60 s. */
extern const uint64_t metrics_latency_bounds_ns[];
extern const size_t metrics_latency_n_bounds;

/* The counter 'name' with 'labels' (the inside of {...}, e.g.
 * "op=\"GetObject\"", or "" for none; label values must already be
 * escaped), registered with 'help' on first use. 'name', 'labels' and
 * 'help' are copied. Never NULL: when the registry is full a scratch
 * metric that is never exported is returned (and a warning logged once). */
struct metric *metrics_counter(const char *name, const char *labels, const char *help);
/* A histogram with the 'n_bounds' ascending upper bounds 'bounds' (in the
 * unit of the observed values; not copied: static storage), exported as
 * bounds * 'scale' (e.g. 1e-9 to export nanoseconds as seconds). Same
 * rules as metrics_counter; a histogram registered again under the same
 * name and labels keeps its first bounds. */
struct metric *metrics_histogram(const char *name, const char *labels, const char *help,
                                 const uint64_t *bounds, size_t n_bounds, double scale);
/* A latency histogram: metrics_latency_bounds_ns, exported in seconds. */
struct metric *metrics_latency(const char *name, const char *labels, const char *help);

/* Adds 'v' to a counter. Lock-free. */
void metrics_add(struct metric *m, uint64_t v);
/* Records one observation 'v' in a histogram. Lock-free. */
void metrics_observe(struct metric *m, uint64_t v);

/* The per-operation request metrics: requests by status class, time to
 * first byte and total time, body bytes in and out. 'op' is a string with static storage (the
 * route table's operation name); NULL counts as "Unknown". 'status' 0
 * means no response was sent. Lock-free once the operation was seen. */
void metrics_request_done(const char *op, int status, int64_t ttfb_ns, int64_t total_ns,
                          uint64_t bytes_in, uint64_t bytes_out);
/* Counts an authentication failure for 'reason' (static string). */
void metrics_auth_failure(const char *reason);

/* Appends every registered metric to 'b' in the Prometheus text format
 * 0.0.4: HELP and TYPE once per name, the series of a name together. */
void metrics_render(struct buf *b);
/* For values computed at scrape time (gauges, counters kept elsewhere):
 * the HELP and TYPE lines of 'name' (once per scrape), then one sample
 * per label set ('labels' NULL or "" for none). */
void metrics_render_header(struct buf *b, const char *name, const char *type, const char *help);
void metrics_render_sample(struct buf *b, const char *name, const char *labels, double v);
/* Both for a single unlabelled sample. */
void metrics_render_value(struct buf *b, const char *name, const char *type, const char *help,
                          double v);

#endif
