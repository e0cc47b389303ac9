/*
 * tier_remote.c: the remote tier, one implementation of struct tier_ops
 * (tier.h): any S3 endpoint (another shardstore, Ceph RGW, AWS), reached
 * with libshard. The only file of server/ that sees libshard's types.
 *
 * Each object is one remote object PREFIX + 16 hex digits of an id; its
 * record holds one extent {volume 0, offset id, len size + 1, flags
 * TIER_REMOTE}: the +1 keeps the extent of an empty object non-empty, so
 * copies share it like any other (index/extref.c skips empty extents).
 * Ids grow from the start time in ns, so they never repeat.
 *
 * A put is durable once the remote acknowledged it. Deletes (released
 * extents) go to a background thread, after the reads that may still use
 * them (pins: a delete waits for every pin taken before its release); a
 * delete that fails is retried with backoff, and one lost in a crash is
 * found by the sweep, which deletes remote objects no record references
 * (never one a move in flight may still publish). A remote that fails is
 * marked down with a doubling backoff (1 s..60 s): puts fail at once with
 * -EAGAIN meanwhile, so a lifecycle pass skips its moves and a later one
 * retries; nothing half-moved is ever published.
 */
#include "config.h"

#include "client/shard.h"
#include "common/common.h"
#include "index/index.h"
#include "server/server.h"
#include "server/tier.h"
#include "server/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REMOTE_BACKOFF_MIN_MS 1000
#define REMOTE_BACKOFF_MAX_MS 60000
#define REMOTE_COPY_BUF (1u << 20)
#define REMOTE_INFLIGHT_MAX 64

struct remote_delete {
    uint64_t id;
    uint64_t seq; /* the pin sequence at release */
};

struct remote_tier {
    struct tier base;
    struct shard_config_in in;
    char endpoint[512], bucket[64], prefix[256], access_key[129], secret_key[129], region[64];
    char tmp_dir[4200];
    pthread_mutex_t mu;
    pthread_cond_t cond;
    struct shard_client **pool; /* idle clients */
    size_t n_pool, cap_pool;
    uint64_t next_id;
    uint64_t inflight[REMOTE_INFLIGHT_MAX]; /* ids of moves not yet published or dropped */
    size_t n_inflight;
    int64_t down_until_ns;
    uint32_t backoff_ms;
    /* pins and deferred deletes */
    uint64_t pin_seq;
    uint64_t *pins; /* sequence of each held pin */
    size_t n_pins, cap_pins;
    struct remote_delete *dels;
    size_t n_dels, cap_dels;
    uint64_t stored_bytes; /* bytes put and not yet deleted, since start */
    pthread_t deleter;
    bool has_deleter, is_stopping;
};

struct tier_reader {
    struct remote_tier *t;
    char key[300];
    uint64_t first, len;
};

/* ---- clients and health ------------------------------------------------- */

static struct shard_client *
client_take(struct remote_tier *t, struct shard_error *err)
{
    pthread_mutex_lock(&t->mu);
    struct shard_client *c = t->n_pool ? t->pool[--t->n_pool] : NULL;
    pthread_mutex_unlock(&t->mu);
    if (c)
        return c;
    struct shard_options opts = {
        .max_retries = 2, .connect_timeout_ms = 2000, .stall_timeout_ms = 10000, .parallel = 4};
    return shard_client_create(&t->in, &opts, err);
}

static void
client_give(struct remote_tier *t, struct shard_client *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&t->mu);
    if (t->n_pool == t->cap_pool) {
        t->cap_pool = t->cap_pool ? t->cap_pool * 2 : 8;
        t->pool = xrealloc(t->pool, t->cap_pool * sizeof(*t->pool));
    }
    t->pool[t->n_pool++] = c;
    pthread_mutex_unlock(&t->mu);
}

/* Maps a libshard failure to -errno and marks the remote down when it is
 * unreachable or failing (not for a plain S3 refusal like 404). */
static int
remote_fail(struct remote_tier *t, const struct shard_error *err, const char *what)
{
    bool is_down = err->kind != SHARD_ERR_S3 || err->http_status >= 500;
    log_warn("remote tier: %s: %s %s", what, err->code, err->message);
    if (!is_down)
        return err->http_status == 404 ? -ENOENT : -EIO;
    pthread_mutex_lock(&t->mu);
    t->backoff_ms =
        t->backoff_ms ? MIN(t->backoff_ms * 2, REMOTE_BACKOFF_MAX_MS) : REMOTE_BACKOFF_MIN_MS;
    t->down_until_ns = clock_mono_ns() + (int64_t)t->backoff_ms * 1000000;
    pthread_mutex_unlock(&t->mu);
    return -EAGAIN;
}

static void
remote_ok(struct remote_tier *t)
{
    pthread_mutex_lock(&t->mu);
    t->backoff_ms = 0;
    t->down_until_ns = 0;
    pthread_mutex_unlock(&t->mu);
}

static bool
is_down(struct remote_tier *t)
{
    pthread_mutex_lock(&t->mu);
    bool down = t->down_until_ns && clock_mono_ns() < t->down_until_ns;
    pthread_mutex_unlock(&t->mu);
    return down;
}

static void
remote_key(const struct remote_tier *t, uint64_t id, char *out, size_t cap)
{
    snprintf(out, cap, "%s%016" PRIx64, t->prefix, id);
}

static void
inflight_drop(struct remote_tier *t, uint64_t id)
{
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < t->n_inflight; i++) {
        if (t->inflight[i] == id) {
            t->inflight[i] = t->inflight[--t->n_inflight];
            break;
        }
    }
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->mu);
}

/* ---- put ---------------------------------------------------------------- */

static int
remote_put(struct tier *base, uint64_t size, tier_source_fn src, void *src_ctx, struct arena *a,
           struct index_object *out)
{
    struct remote_tier *t = (struct remote_tier *)base;
    struct shard_error err = {0};
    struct shard_client *c = NULL;
    char path[4300], key[300];
    uint8_t *buf = NULL;
    uint64_t id = 0;
    int fd = -1, rc = 0;

    if (is_down(t))
        return -EAGAIN;
    pthread_mutex_lock(&t->mu);
    while (t->n_inflight == REMOTE_INFLIGHT_MAX)
        pthread_cond_wait(&t->cond, &t->mu);
    id = t->next_id++;
    t->inflight[t->n_inflight++] = id;
    pthread_mutex_unlock(&t->mu);
    /* libshard uploads from a file: the plain bytes go to an unlinked
     * temporary file first (parallel parts read it with pread). */
    snprintf(path, sizeof(path), "%s/remote-XXXXXX", t->tmp_dir);
    fd = mkstemp(path);
    if (fd < 0) {
        rc = -errno;
        goto fail;
    }
    unlink(path);
    buf = xmalloc(REMOTE_COPY_BUF);
    for (uint64_t pos = 0; pos < size;) {
        ssize_t n = src(src_ctx, pos, buf, (size_t)MIN((uint64_t)REMOTE_COPY_BUF, size - pos));
        if (n <= 0) {
            rc = n < 0 ? (int)n : -EIO;
            goto fail;
        }
        if (write(fd, buf, (size_t)n) != n) {
            rc = -EIO;
            goto fail;
        }
        pos += (uint64_t)n;
    }
    remote_key(t, id, key, sizeof(key));
    if (!(c = client_take(t, &err)) ||
        shard_put_fd(c, t->bucket, key, fd, size, NULL, NULL, NULL, &err) != 0) {
        rc = remote_fail(t, &err, "put");
        goto fail;
    }
    remote_ok(t);
    struct index_extent *e = arena_calloc(a, 1, sizeof(*e));
    *e = (struct index_extent){.volume = 0, .flags = TIER_REMOTE, .offset = id, .len = size + 1};
    out->extents = e;
    out->n_extents = 1;
    out->sums = NULL;
    out->sums_len = 0;
    pthread_mutex_lock(&t->mu);
    t->stored_bytes += size;
    pthread_mutex_unlock(&t->mu);

fail:
    /* On success the id stays in flight until the mover settles it. */
    if (fd >= 0)
        close(fd);
    free(buf);
    client_give(t, c);
    if (rc < 0)
        inflight_drop(t, id);
    return rc;
}

/* The move of 'e' is published or dropped: the sweep may judge its id
 * (a commit is visible to it, since it reads the index after listing). */
static void
remote_settle(struct tier *base, const struct index_extent *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        inflight_drop((struct remote_tier *)base, e[i].offset);
}

/* ---- reading ------------------------------------------------------------ */

static int
remote_reader_create(struct tier *base, uint64_t pin, const struct index_object *obj,
                     uint64_t first, uint64_t len, struct tier_reader **out)
{
    struct remote_tier *t = (struct remote_tier *)base;
    (void)pin;
    if (obj->n_extents != 1 || obj->extents[0].len != obj->size + 1 || first > obj->size ||
        len > obj->size - first)
        return -EILSEQ;
    struct tier_reader *rd = xcalloc(1, sizeof(*rd));
    rd->t = t;
    rd->first = first;
    rd->len = len;
    remote_key(t, obj->extents[0].offset, rd->key, sizeof(rd->key));
    *out = rd;
    return 0;
}

static ssize_t
remote_read(struct tier_reader *rd, uint64_t pos, void *buf, size_t len)
{
    if (pos >= rd->len)
        return 0;
    len = (size_t)MIN((uint64_t)len, rd->len - pos);
    struct shard_error err = {0};
    struct shard_client *c = client_take(rd->t, &err);
    int rc = c ? shard_read_range(c, rd->t->bucket, rd->key, rd->first + pos, len, buf, &err) : -1;
    client_give(rd->t, c);
    if (rc != 0)
        return remote_fail(rd->t, &err, "read");
    return (ssize_t)len;
}

static void
remote_reader_destroy(struct tier_reader *rd)
{
    free(rd);
}

/* ---- pins and deletes --------------------------------------------------- */

static int
remote_pin(struct tier *base, uint64_t *pin)
{
    struct remote_tier *t = (struct remote_tier *)base;
    pthread_mutex_lock(&t->mu);
    if (t->n_pins == t->cap_pins) {
        t->cap_pins = t->cap_pins ? t->cap_pins * 2 : 64;
        t->pins = xrealloc(t->pins, t->cap_pins * sizeof(*t->pins));
    }
    *pin = ++t->pin_seq;
    t->pins[t->n_pins++] = *pin;
    pthread_mutex_unlock(&t->mu);
    return 0;
}

static void
remote_unpin(struct tier *base, uint64_t pin)
{
    struct remote_tier *t = (struct remote_tier *)base;
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < t->n_pins; i++) {
        if (t->pins[i] == pin) {
            t->pins[i] = t->pins[--t->n_pins];
            break;
        }
    }
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->mu);
}

static void
remote_release(struct tier *base, const struct index_extent *e, size_t n)
{
    struct remote_tier *t = (struct remote_tier *)base;
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < n; i++) {
        if (t->n_dels == t->cap_dels) {
            t->cap_dels = t->cap_dels ? t->cap_dels * 2 : 64;
            t->dels = xrealloc(t->dels, t->cap_dels * sizeof(*t->dels));
        }
        t->dels[t->n_dels++] = (struct remote_delete){e[i].offset, t->pin_seq};
        t->stored_bytes -= MIN(t->stored_bytes, e[i].len ? e[i].len - 1 : 0);
    }
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->mu);
}

/* Takes one delete no held pin can still need (under t->mu); false when none. */
static bool
take_ready_delete(struct remote_tier *t, struct remote_delete *out)
{
    uint64_t oldest = UINT64_MAX;
    for (size_t i = 0; i < t->n_pins; i++)
        oldest = MIN(oldest, t->pins[i]);
    for (size_t i = 0; i < t->n_dels; i++) {
        if (t->dels[i].seq < oldest) {
            *out = t->dels[i];
            t->dels[i] = t->dels[--t->n_dels];
            return true;
        }
    }
    return false;
}

static void *
deleter_main(void *arg)
{
    struct remote_tier *t = arg;
    pthread_mutex_lock(&t->mu);
    while (!t->is_stopping) {
        struct remote_delete d;
        bool down = t->down_until_ns && clock_mono_ns() < t->down_until_ns;
        if (down || !take_ready_delete(t, &d)) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_nsec += 200000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&t->cond, &t->mu, &ts);
            continue;
        }
        pthread_mutex_unlock(&t->mu);
        char key[300];
        struct shard_error err = {0};
        remote_key(t, d.id, key, sizeof(key));
        struct shard_client *c = client_take(t, &err);
        int rc = c ? shard_delete(c, t->bucket, key, &err) : -1;
        client_give(t, c);
        if (rc != 0 && remote_fail(t, &err, "delete") != -ENOENT) {
            /* Kept for a retry after the backoff (or for the sweep). */
            remote_release(&t->base, &(struct index_extent){.offset = d.id}, 1);
        } else if (rc == 0) {
            remote_ok(t);
        }
        pthread_mutex_lock(&t->mu);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* ---- sweep -------------------------------------------------------------- */

struct sweep_ctx {
    struct remote_tier *t;
    uint64_t floor; /* ids from here on were handed out after the sweep began */
    uint64_t inflight[REMOTE_INFLIGHT_MAX];
    size_t n_inflight;
    uint64_t *found;
    size_t n_found, cap_found;
};

static int
sweep_collect(void *ctx, const struct shard_list_entry *e)
{
    struct sweep_ctx *s = ctx;
    size_t pl = strlen(s->t->prefix);
    const char *hex = e->key + pl;
    char *end;
    if (e->is_prefix || strlen(e->key) != pl + 16)
        return 0;
    uint64_t id = strtoull(hex, &end, 16);
    if (*end)
        return 0;
    if (s->n_found == s->cap_found) {
        s->cap_found = s->cap_found ? s->cap_found * 2 : 256;
        s->found = xrealloc(s->found, s->cap_found * sizeof(*s->found));
    }
    s->found[s->n_found++] = id;
    return 0;
}

static long
remote_sweep(struct tier *base, bool (*is_referenced)(void *ctx, uint64_t offset), void *ctx)
{
    struct remote_tier *t = (struct remote_tier *)base;
    struct sweep_ctx s = {.t = t};
    struct shard_error err = {0};
    long n_deleted = 0;
    if (is_down(t))
        return -EAGAIN;
    /* First what may still be published, then the listing, then (through
     * 'is_referenced', which reads the index now) what is published. */
    pthread_mutex_lock(&t->mu);
    s.floor = t->next_id;
    memcpy(s.inflight, t->inflight, t->n_inflight * sizeof(*s.inflight));
    s.n_inflight = t->n_inflight;
    pthread_mutex_unlock(&t->mu);
    struct shard_client *c = client_take(t, &err);
    int rc = c ? shard_list(c, t->bucket, t->prefix, NULL, sweep_collect, &s, &err) : -1;
    if (rc != 0) {
        client_give(t, c);
        free(s.found);
        return remote_fail(t, &err, "list");
    }
    for (size_t i = 0; i < s.n_found; i++) {
        uint64_t id = s.found[i];
        bool skip = id >= s.floor;
        for (size_t k = 0; k < s.n_inflight && !skip; k++)
            skip = s.inflight[k] == id;
        if (skip || is_referenced(ctx, id))
            continue;
        char key[300];
        remote_key(t, id, key, sizeof(key));
        if (shard_delete(c, t->bucket, key, &err) == 0)
            n_deleted++;
    }
    client_give(t, c);
    free(s.found);
    return n_deleted;
}

/* ---- the rest ----------------------------------------------------------- */

static void
remote_space(struct tier *base, struct tier_space *out)
{
    struct remote_tier *t = (struct remote_tier *)base;
    pthread_mutex_lock(&t->mu);
    out->used_bytes = t->stored_bytes;
    out->total_bytes = 0;
    pthread_mutex_unlock(&t->mu);
}

static void
remote_destroy(struct tier *base)
{
    struct remote_tier *t = (struct remote_tier *)base;
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    t->is_stopping = true;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->mu);
    if (t->has_deleter)
        pthread_join(t->deleter, NULL);
    for (size_t i = 0; i < t->n_pool; i++)
        shard_client_destroy(t->pool[i]);
    free(t->pool);
    free(t->pins);
    free(t->dels);
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static const struct tier_ops remote_ops = {
    .put = remote_put,
    .sync = NULL,
    .reader_create = remote_reader_create,
    .read = remote_read,
    .reader_destroy = remote_reader_destroy,
    .release = remote_release,
    .mark_used = NULL,
    .ready = NULL,
    .pin = remote_pin,
    .unpin = remote_unpin,
    .space = remote_space,
    .sweep = remote_sweep,
    .verify = NULL,
    .settle = remote_settle,
    .destroy = remote_destroy,
};

int
tier_remote_open(const struct server *srv, struct tier **out)
{
    const struct config *cfg = &srv->cfg;
    struct remote_tier *t = xcalloc(1, sizeof(*t));
    t->base.ops = &remote_ops;
    t->base.id = TIER_REMOTE;
    t->base.reads_wait = true;
    snprintf(t->base.name, sizeof(t->base.name), "%s", cfg->remote_tier_class);
    snprintf(t->endpoint, sizeof(t->endpoint), "%s", cfg->remote_tier_endpoint);
    snprintf(t->bucket, sizeof(t->bucket), "%s", cfg->remote_tier_bucket);
    snprintf(t->prefix, sizeof(t->prefix), "%s", cfg->remote_tier_prefix);
    snprintf(t->access_key, sizeof(t->access_key), "%s", cfg->remote_tier_access_key);
    snprintf(t->secret_key, sizeof(t->secret_key), "%s", cfg->remote_tier_secret_key);
    snprintf(t->region, sizeof(t->region), "%s", cfg->remote_tier_region);
    snprintf(t->tmp_dir, sizeof(t->tmp_dir), "%s", cfg->data_dir);
    t->in = (struct shard_config_in){.endpoint_url = t->endpoint,
                                     .region = t->region[0] ? t->region : "us-east-1",
                                     .access_key = t->access_key,
                                     .secret_key = t->secret_key};
    t->next_id = (uint64_t)clock_now_ns();
    pthread_mutex_init(&t->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cond, &ca);
    pthread_condattr_destroy(&ca);
    struct shard_error err = {0};
    struct shard_client *c = client_take(t, &err);
    if (!c || !t->bucket[0]) {
        log_error("remote tier: %s", c ? "remote_tier_bucket is not set" : err.message);
        shard_client_destroy(c);
        remote_destroy(&t->base);
        return -EINVAL;
    }
    client_give(t, c);
    if (server_thread_start(&t->deleter, "shard-tierdel", 0, deleter_main, t) != 0) {
        remote_destroy(&t->base);
        return -EAGAIN;
    }
    t->has_deleter = true;
    *out = &t->base;
    return 0;
}
