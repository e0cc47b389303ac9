/*
 * cli_bench.c: `shard bench`, the load generator the bench/ scripts drive.
 *
 *   shard bench put|get|range|list|head|mixed --bucket B [--prefix P] [--size N]
 *       [--objects N] [--fanout F] [--concurrency N] [--duration S] [--count N]
 *       [--range-size N] [--delimiter D] [--max-keys N] [--first-page]
 *       [--no-prepare] [--json FILE] [--transport auto|http|rdma [--verify]]
 *
 * With --transport, get and range read into a buffer of the worker's own
 * through shard_read_range (over RDMA: the server writes into it), put sends
 * with shard_put_buffer, and --verify compares every byte read with the
 * payload the objects were written with.
 *
 * 'concurrency' threads each own one keep-alive curl handle and run blocking
 * requests back to back; each keeps its own counters and a fixed-size
 * log-linear latency histogram (~1.5% resolution), merged at the end. Output
 * is one line per op type:
 *   RESULT op=get ops=N secs=S ops_per_s=X MBps=X keys_per_s=X p50_ms=X p90_ms=X
 *          p99_ms=X errors=N
 * mixed is 50% get, 30% head, 20% put (overwrites) over the prepared objects.
 */
#include "config.h"

#include "client/cli_util.h"
#include "client/shard_int.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/resource.h>

enum bench_op { OP_PUT, OP_GET, OP_RANGE, OP_LIST, OP_HEAD, OP_MIXED, OP_COUNT_ };
static const char *const OP_NAMES[] = {"put", "get", "range", "list", "head", "mixed"};

/* Histogram: values < 64 us exact, then 32 sub-buckets per power of two. */
#define HIST_LEN (64 + 40 * 32)

struct op_stats {
    uint64_t ops, errors, bytes, keys;
    uint64_t hist[HIST_LEN];
};

struct bench;

struct worker {
    struct bench *b;
    pthread_t thread;
    CURL *e;
    uint64_t rng;
    struct op_stats stats[OP_COUNT_];
    struct client_list_parser *lister;
    struct client_resp resp;
    char token[2048];
    uint64_t got_bytes;
    size_t put_off;
    char first_error[600];
    char *dest; /* --transport: the caller buffer reads land in */
};

struct bench {
    struct shard_client *c;
    const struct cli_opts *o;
    enum bench_op op;
    const char *prefix;
    uint64_t size, range_size, objects, count;
    unsigned max_keys;
    char *payload;      /* 'size' pseudo-random bytes every PUT sends */
    double phase_cpu_s; /* CPU seconds of the process during the last run_phase */
    int64_t deadline_ns;
    atomic_uint_fast64_t claimed, next_put;
    atomic_bool is_stopped;
};

static unsigned
hist_index(uint64_t us)
{
    if (us < 64)
        return (unsigned)us;
    unsigned msb = 63u - (unsigned)__builtin_clzll(us);
    unsigned shift = msb - 5;
    unsigned idx = 64 + (shift - 1) * 32 + (unsigned)((us >> shift) - 32);
    return idx < HIST_LEN ? idx : HIST_LEN - 1;
}

static double
hist_value_us(unsigned idx)
{
    if (idx < 64)
        return idx;
    unsigned shift = (idx - 64) / 32 + 1, m = (idx - 64) % 32 + 32;
    return (double)((uint64_t)m << shift) + (double)(1ull << shift) / 2;
}

static double
hist_percentile_ms(const struct op_stats *s, double p)
{
    uint64_t total = 0;
    for (unsigned i = 0; i < HIST_LEN; i++)
        total += s->hist[i];
    if (total == 0)
        return 0;
    uint64_t want = (uint64_t)(p * (double)total + 0.999999), seen = 0;
    if (want == 0)
        want = 1;
    for (unsigned i = 0; i < HIST_LEN; i++) {
        seen += s->hist[i];
        if (seen >= want)
            return hist_value_us(i) / 1000.0;
    }
    return hist_value_us(HIST_LEN - 1) / 1000.0;
}

static uint64_t
rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static void
object_key(const struct bench *b, uint64_t i, char *out, size_t cap)
{
    unsigned f = b->o->fanout;
    if (f > 0)
        snprintf(out, cap, "%s%08" PRIu64 "/%08" PRIu64, b->prefix, i / f, i % f);
    else
        snprintf(out, cap, "%s%010" PRIu64, b->prefix, i);
}

static size_t
count_body(char *p, size_t size, size_t n, void *ctx)
{
    (void)p;
    struct worker *w = ctx;
    w->got_bytes += size * n;
    return size * n;
}

static size_t
keep_body(char *p, size_t size, size_t n, void *ctx)
{
    struct worker *w = ctx;
    buf_append(&w->resp.body, p, size * n);
    return size * n;
}

static size_t
send_payload(char *dst, size_t size, size_t n, void *ctx)
{
    struct worker *w = ctx;
    size_t len = MIN(size * n, w->b->size - w->put_off);
    memcpy(dst, w->b->payload + w->put_off, len);
    w->put_off += len;
    return len;
}

/* With --transport: a GET or range lands in the worker's own buffer
 * (shard_read_range, the zero-copy case over RDMA), a PUT is sent from the
 * payload buffer (shard_put_buffer). Returns 0 and the bytes, or -1. */
static int
run_op_buffer(struct worker *w, enum bench_op op, uint64_t i, uint64_t *bytes)
{
    struct bench *b = w->b;
    char key[1100];
    struct shard_error err;
    object_key(b, i, key, sizeof(key));
    uint64_t off = 0, want = b->size;
    if (op == OP_RANGE) {
        uint64_t slots = b->size / b->range_size;
        off = slots ? (rng_next(&w->rng) % slots) * b->range_size : 0;
        want = MIN(b->range_size, b->size - off);
    }
    if (!w->dest)
        w->dest = xmalloc(MAX(op == OP_RANGE ? b->range_size : b->size, 1));
    int rc = op == OP_PUT ? shard_put_buffer(b->c, b->o->bucket, key, b->payload, b->size, &err)
                          : shard_read_range(b->c, b->o->bucket, key, off, want, w->dest, &err);
    if (rc != 0) {
        snprintf(w->first_error, sizeof(w->first_error), "%s %.200s: %.60s: %.300s",
                 op == OP_PUT ? "PUT" : "GET", key, err.code, err.message);
        return -1;
    }
    if (op != OP_PUT && b->o->is_verify && memcmp(w->dest, b->payload + off, want) != 0) {
        snprintf(w->first_error, sizeof(w->first_error), "GET %.200s at %" PRIu64 ": bytes differ",
                 key, off);
        return -1;
    }
    *bytes = want;
    return 0;
}

/* Runs one request of 'op' on object 'i'; returns 0 and the payload bytes moved, or -1. */
static int
run_op(struct worker *w, enum bench_op op, uint64_t i, uint64_t *bytes, uint64_t *keys)
{
    struct bench *b = w->b;
    if (b->o->has_transport && (op == OP_GET || op == OP_RANGE || op == OP_PUT))
        return run_op_buffer(w, op, i, bytes);
    char key[1100], range[80];
    struct client_req req = {.method = "GET", .bucket = b->o->bucket, .key = key};
    struct client_prepared p;
    struct buf q;
    buf_init(&q);
    uint64_t want = b->size;
    object_key(b, i, key, sizeof(key));
    switch (op) {
    case OP_PUT:
        req.method = "PUT";
        req.payload_hash = CLIENT_UNSIGNED;
        break;
    case OP_HEAD:
        req.method = "HEAD";
        want = 0;
        break;
    case OP_RANGE: {
        uint64_t slots = b->size / b->range_size;
        uint64_t off = slots ? (rng_next(&w->rng) % slots) * b->range_size : 0;
        want = MIN(b->range_size, b->size - off);
        snprintf(range, sizeof(range), "Range: bytes=%" PRIu64 "-%" PRIu64, off,
                 off + (want ? want : 1) - 1);
        if (want > 0)
            req.headers[req.n_headers++] = range;
        break;
    }
    case OP_LIST:
        req.key = NULL;
        client__list_query(&q, b->prefix, b->o->delimiter, b->max_keys, w->token);
        req.query = q.ptr;
        break;
    default:
        break;
    }
    curl_easy_reset(w->e);
    client__handle_defaults(b->c, w->e);
    if (client__prepare(b->c, w->e, &req, &p) != 0) {
        buf_cleanup(&q);
        return -1;
    }
    w->got_bytes = 0;
    w->resp.body.len = 0;
    if (op == OP_PUT) {
        w->put_off = 0;
        curl_easy_setopt(w->e, CURLOPT_READFUNCTION, send_payload);
        curl_easy_setopt(w->e, CURLOPT_READDATA, w);
        curl_easy_setopt(w->e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)b->size);
    }
    curl_easy_setopt(w->e, CURLOPT_WRITEFUNCTION, op == OP_LIST ? keep_body : count_body);
    curl_easy_setopt(w->e, CURLOPT_WRITEDATA, w);
    CURLcode cc = curl_easy_perform(w->e);
    long status = 0;
    curl_easy_getinfo(w->e, CURLINFO_RESPONSE_CODE, &status);
    client__prepared_cleanup(&p);
    buf_cleanup(&q);
    int rc = 0;
    if (cc != CURLE_OK) {
        snprintf(w->first_error, sizeof(w->first_error), "%s %.400s: %s", req.method, key,
                 curl_easy_strerror(cc));
        rc = -1;
    } else if (status < 200 || status > 299) {
        snprintf(w->first_error, sizeof(w->first_error), "%s %.400s: HTTP %ld", req.method,
                 req.key ? key : "(list)", status);
        rc = -1;
    } else if (op == OP_LIST) {
        if (client__list_parser_page(w->lister, w->resp.body.ptr, w->resp.body.len) != 0) {
            snprintf(w->first_error, sizeof(w->first_error), "list: bad XML");
            rc = -1;
        } else {
            *keys = client__list_parser_count(w->lister);
            *bytes = w->resp.body.len;
            const char *t = client__list_parser_token(w->lister);
            if (b->o->is_first_page || !client__list_parser_truncated(w->lister))
                w->token[0] = '\0'; /* start over */
            else
                snprintf(w->token, sizeof(w->token), "%s", t);
        }
    } else if ((op == OP_GET || op == OP_RANGE) && w->got_bytes != want) {
        snprintf(w->first_error, sizeof(w->first_error),
                 "GET %.400s: %" PRIu64 " bytes, want %" PRIu64, key, w->got_bytes, want);
        rc = -1;
    } else {
        *bytes = op == OP_PUT ? b->size : w->got_bytes;
    }
    return rc;
}

static bool
claim(struct bench *b)
{
    if (atomic_load(&b->is_stopped))
        return false;
    if (b->deadline_ns > 0 && clock_mono_ns() >= b->deadline_ns)
        return false;
    if (b->count > 0 && atomic_fetch_add(&b->claimed, 1) >= b->count)
        return false;
    return true;
}

static void *
worker_main(void *arg)
{
    struct worker *w = arg;
    struct bench *b = w->b;
    while (claim(b)) {
        enum bench_op op = b->op;
        uint64_t i;
        if (op == OP_MIXED) {
            uint64_t r = rng_next(&w->rng) % 100;
            op = r < 50 ? OP_GET : r < 80 ? OP_HEAD : OP_PUT;
        }
        if (b->op == OP_PUT) {
            i = atomic_fetch_add(&b->next_put, 1);
            if (b->objects > 0 && i >= b->objects)
                break;
        } else {
            i = b->objects ? rng_next(&w->rng) % b->objects : 0;
        }
        uint64_t bytes = 0, keys = 0;
        int64_t t0 = clock_mono_ns();
        int rc = run_op(w, op, i, &bytes, &keys);
        int64_t us = (clock_mono_ns() - t0) / 1000;
        struct op_stats *s = &w->stats[op];
        if (rc != 0) {
            s->errors++;
            continue;
        }
        s->ops++;
        s->bytes += bytes;
        s->keys += keys;
        s->hist[hist_index((uint64_t)us)]++;
    }
    return NULL;
}

/* Runs the workers until the stop condition; merges into 'total'. Returns seconds. */
static double
run_phase(struct bench *b, unsigned conc, struct op_stats *total, char *first_error, size_t fe_cap)
{
    struct worker *ws = xcalloc(conc, sizeof(*ws));
    if (b->o->has_transport && (b->op == OP_GET || b->op == OP_RANGE)) {
        /* The caller's buffers exist before the clock starts (a loader
         * reuses its buffers): their first-touch faults are not timed. */
        size_t len = (size_t)MAX(b->op == OP_RANGE ? b->range_size : b->size, 1);
        for (unsigned i = 0; i < conc; i++) {
            ws[i].dest = xmalloc(len);
            memset(ws[i].dest, 0, len);
        }
    }
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    int64_t t0 = clock_mono_ns();
    if (b->o->duration_s > 0 && b->op != OP_COUNT_)
        b->deadline_ns = t0 + (int64_t)(b->o->duration_s * 1e9);
    for (unsigned i = 0; i < conc; i++) {
        ws[i].b = b;
        ws[i].e = curl_easy_init();
        ws[i].rng = 0x9E3779B97F4A7C15ull * (i + 1) ^ (uint64_t)t0;
        ws[i].lister = client__list_parser_create(NULL, NULL);
        client__resp_init(&ws[i].resp);
        pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]);
    }
    for (unsigned i = 0; i < conc; i++)
        pthread_join(ws[i].thread, NULL);
    double secs = (double)(clock_mono_ns() - t0) / 1e9;
    getrusage(RUSAGE_SELF, &ru1);
    b->phase_cpu_s = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) +
                     (double)(ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
                     (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1e6 +
                     (double)(ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;
    memset(total, 0, sizeof(*total) * OP_COUNT_);
    for (unsigned i = 0; i < conc; i++) {
        for (int op = 0; op < OP_COUNT_; op++) {
            struct op_stats *d = &total[op], *s = &ws[i].stats[op];
            d->ops += s->ops;
            d->errors += s->errors;
            d->bytes += s->bytes;
            d->keys += s->keys;
            for (unsigned k = 0; k < HIST_LEN; k++)
                d->hist[k] += s->hist[k];
        }
        if (first_error[0] == '\0' && ws[i].first_error[0] != '\0')
            snprintf(first_error, fe_cap, "%s", ws[i].first_error);
        curl_easy_cleanup(ws[i].e);
        client__list_parser_destroy(ws[i].lister);
        client__resp_cleanup(&ws[i].resp);
        free(ws[i].dest);
    }
    free(ws);
    return secs;
}

static int
ensure_bucket(struct bench *b)
{
    struct shard_error err;
    if (shard_bucket_create(b->c, b->o->bucket, &err) == 0)
        return 0;
    if (err.kind == SHARD_ERR_S3 && err.http_status == 409)
        return 0; /* BucketAlreadyOwnedByYou / BucketAlreadyExists */
    return cli_fail("bench: create bucket", &err);
}

int
cli_bench(struct shard_client *c, const struct cli_opts *o, int nargs, char **args)
{
    if (nargs != 1) {
        cli_msg("bench wants one op: put|get|range|list|head|mixed");
        return CLI_USAGE;
    }
    struct bench *b = xcalloc(1, sizeof(*b));
    int op = -1;
    for (int i = 0; i < OP_COUNT_; i++)
        if (strcmp(args[0], OP_NAMES[i]) == 0)
            op = i;
    int rc = CLI_OK;
    if (op < 0 || o->bucket == NULL) {
        cli_msg(op < 0 ? "bench: unknown op '%s' (put|get|range|list|head|mixed)"
                       : "bench %s: --bucket is required",
                args[0]);
        free(b);
        return CLI_USAGE;
    }
    b->c = c;
    b->o = o;
    b->op = (enum bench_op)op;
    b->prefix = o->prefix ? o->prefix : "bench/";
    b->size = o->has_size ? o->size : 1u << 20;
    b->objects = o->objects ? o->objects : 16;
    b->range_size = o->range_size ? o->range_size : 64u << 10;
    b->max_keys = o->max_keys ? o->max_keys : 1000;
    unsigned conc = o->concurrency ? o->concurrency : 16;
    if (b->size > (1ull << 34)) {
        cli_msg("bench: --size is at most 16G");
        free(b);
        return CLI_USAGE;
    }
    b->payload = xcalloc(1, b->size ? b->size : 1);
    uint64_t seed = 0x1234567ull;
    /* Reads compare with it only under --verify: a 1 GiB get skips it. */
    bool needs_payload = b->op == OP_PUT || b->op == OP_MIXED || !o->is_no_prepare || o->is_verify;
    for (uint64_t i = 0; needs_payload && i + 8 <= b->size; i += 8) {
        uint64_t v = rng_next(&seed);
        memcpy(b->payload + i, &v, 8);
    }
    struct op_stats *total = xcalloc(OP_COUNT_, sizeof(*total));
    char first_error[600] = "";
    if ((rc = ensure_bucket(b)) != CLI_OK)
        goto done;

    if (b->op != OP_PUT && !o->is_no_prepare) {
        struct bench prep = *b;
        prep.op = OP_PUT;
        prep.count = 0;
        atomic_store(&prep.next_put, 0);
        atomic_store(&prep.claimed, 0);
        struct cli_opts po = *o;
        po.duration_s = 0;
        prep.o = &po;
        run_phase(&prep, conc, total, first_error, sizeof(first_error));
        if (total[OP_PUT].errors > 0) {
            cli_msg("bench: preparing %" PRIu64 " objects failed: %s", b->objects, first_error);
            rc = CLI_S3;
            goto done;
        }
    }
    b->count = o->count;
    /* --duration 0: unbounded in time, so bounded by --count or --objects. */
    if (o->duration_s <= 0 && b->count == 0 && b->op != OP_PUT)
        b->count = b->objects;
    double secs = run_phase(b, conc, total, first_error, sizeof(first_error));
    double cpu_s = b->phase_cpu_s;

    FILE *json = NULL;
    if (o->json_path != NULL && (json = fopen(o->json_path, "w")) == NULL) {
        cli_msg("%s: %s", o->json_path, strerror(errno));
        rc = CLI_IO;
        goto done;
    }
    if (json)
        fprintf(json,
                "{\"endpoint\": \"%s\", \"bucket\": \"%s\", \"op\": \"%s\", \"size\": %" PRIu64
                ", \"concurrency\": %u, \"results\": [",
                shard_client_endpoint(c), o->bucket, OP_NAMES[b->op], b->size, conc);
    uint64_t errors = 0;
    bool is_first = true;
    for (int i = 0; i < OP_COUNT_; i++) {
        struct op_stats *s = &total[i];
        bool is_wanted = b->op == OP_MIXED ? (s->ops + s->errors > 0) : i == (int)b->op;
        if (!is_wanted)
            continue;
        errors += s->errors;
        double ops_s = secs > 0 ? (double)s->ops / secs : 0;
        double mbps = secs > 0 ? (double)s->bytes / 1048576.0 / secs : 0;
        double keys_s = secs > 0 ? (double)s->keys / secs : 0;
        double p50 = hist_percentile_ms(s, 0.50), p90 = hist_percentile_ms(s, 0.90),
               p99 = hist_percentile_ms(s, 0.99);
        printf("RESULT op=%s ops=%" PRIu64 " secs=%.6f ops_per_s=%.1f MBps=%.3f keys_per_s=%.1f "
               "p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f errors=%" PRIu64 "\n",
               OP_NAMES[i], s->ops, secs, ops_s, mbps, keys_s, p50, p90, p99, s->errors);
        if (json)
            fprintf(json,
                    "%s\n  {\"op\": \"%s\", \"ops\": %" PRIu64 ", \"secs\": %.6f, \"ops_per_s\": "
                    "%.1f, \"MBps\": %.3f, \"keys_per_s\": %.1f, \"p50_ms\": %.3f, \"p90_ms\": "
                    "%.3f, \"p99_ms\": %.3f, \"errors\": %" PRIu64 "}",
                    is_first ? "" : ",", OP_NAMES[i], s->ops, secs, ops_s, mbps, keys_s, p50, p90,
                    p99, s->errors);
        is_first = false;
    }
    if (b->o->has_transport) {
        struct shard_transport_stats ts;
        shard_client_transport_stats(b->c, &ts);
        printf("TRANSPORT rdma_requests=%" PRIu64 " rdma_bytes=%" PRIu64 " http_fallbacks=%" PRIu64
               " client_cpu_s=%.3f%s%s\n",
               ts.rdma_requests, ts.rdma_bytes, ts.http_fallbacks, cpu_s,
               ts.last_fallback[0] ? " last_fallback=" : "", ts.last_fallback);
    }
    if (json) {
        fprintf(json, "\n]}\n");
        if (fclose(json) != 0) {
            cli_msg("%s: %s", o->json_path, strerror(errno));
            rc = CLI_IO;
        }
    }
    if (errors > 0) {
        cli_msg("bench: %" PRIu64 " errors; first: %s", errors, first_error);
        if (rc == CLI_OK)
            rc = CLI_S3;
    }
done:
    free(total);
    free(b->payload);
    free(b);
    return rc;
}
