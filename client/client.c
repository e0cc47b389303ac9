/*
 * client.c: the shard_client object: resolved configuration, effective
 * options, and a locked pool of idle curl easy handles. A handle keeps its
 * keep-alive connection across requests, so taking one from the pool reuses
 * a warm connection; a shared DNS cache spares the lookups.
 */
#include "config.h"

#include "client/shard_int.h"

#include <stdarg.h>
#include <stdlib.h>

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void
curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void
share_lock(CURL *e, curl_lock_data data, curl_lock_access access, void *ctx)
{
    (void)e;
    (void)access;
    struct shard_client *c = ctx;
    pthread_mutex_lock(&c->share_locks[data]);
}

static void
share_unlock(CURL *e, curl_lock_data data, void *ctx)
{
    (void)e;
    struct shard_client *c = ctx;
    pthread_mutex_unlock(&c->share_locks[data]);
}

static void
options_fill(struct shard_options *o)
{
    if (o->parallel == 0)
        o->parallel = 8;
    if (o->parallel > 256)
        o->parallel = 256;
    /* 1 MiB ranges keep the in-order window (parallel x chunk) cache-sized:
     * on 127.0.0.1, --parallel 8 reads 1 GiB in ~0.48 s with 1 MiB ranges
     * against ~0.66 s with 8 MiB ones (the copy into a cold window costs). */
    if (o->chunk_size == 0)
        o->chunk_size = 1u << 20;
    if (o->part_size == 0)
        o->part_size = 8u << 20;
    if (o->max_retries == 0)
        o->max_retries = 8;
    if (o->retry_base_ms == 0)
        o->retry_base_ms = 50;
    if (o->connect_timeout_ms == 0)
        o->connect_timeout_ms = 10000;
    if (o->stall_timeout_ms == 0)
        o->stall_timeout_ms = 30000;
}

struct shard_client *
shard_client_create(const struct shard_config_in *in, const struct shard_options *opts,
                    struct shard_error *err)
{
    pthread_once(&curl_once, curl_init_once);
    struct shard_client *c = xcalloc(1, sizeof(*c));
    if (client__config_resolve(in, &c->cfg, err) != 0) {
        free(c);
        return NULL;
    }
    if (client__endpoint_parse(c->cfg.endpoint_url, c->scheme_host, sizeof(c->scheme_host), c->host,
                               sizeof(c->host), c->base_path, sizeof(c->base_path)) != 0) {
        client__err(err, SHARD_ERR_CONFIG, 0, "InvalidEndpoint",
                    "invalid endpoint URL '%s' (want http[s]://host[:port][/path])",
                    c->cfg.endpoint_url);
        client__config_cleanup(&c->cfg);
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->rdma_lock, NULL);
    if (opts != NULL)
        c->opts = *opts;
    options_fill(&c->opts);
    for (size_t i = 0; i < ARRAY_LEN(c->share_locks); i++)
        pthread_mutex_init(&c->share_locks[i], NULL);
    pthread_mutex_init(&c->pool_lock, NULL);
    c->share = curl_share_init();
    curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    return c;
}

void
shard_client_destroy(struct shard_client *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->pool_len; i++)
        curl_easy_cleanup(c->pool[i]);
    free(c->pool);
    curl_share_cleanup(c->share);
    for (size_t i = 0; i < ARRAY_LEN(c->share_locks); i++)
        pthread_mutex_destroy(&c->share_locks[i]);
    pthread_mutex_destroy(&c->pool_lock);
    client__rdma_cleanup(c);
    client__config_cleanup(&c->cfg);
    free(c);
}

const char *
shard_client_endpoint(const struct shard_client *c)
{
    return c->cfg.endpoint_url;
}

const char *
shard_client_region(const struct shard_client *c)
{
    return c->cfg.region;
}

const struct shard_options *
shard_client_options(const struct shard_client *c)
{
    return &c->opts;
}

CURL *
client__handle_get(struct shard_client *c)
{
    CURL *e = NULL;
    pthread_mutex_lock(&c->pool_lock);
    if (c->pool_len > 0)
        e = c->pool[--c->pool_len];
    pthread_mutex_unlock(&c->pool_lock);
    if (e == NULL) {
        e = curl_easy_init();
        if (e == NULL)
            abort(); /* only on out of memory */
    }
    client__handle_defaults(c, e);
    return e;
}

void
client__handle_put(struct shard_client *c, CURL *e)
{
    if (e == NULL)
        return;
    curl_easy_reset(e); /* keeps the connection and caches */
    pthread_mutex_lock(&c->pool_lock);
    if (c->pool_len == c->pool_cap) {
        c->pool_cap = c->pool_cap ? 2 * c->pool_cap : 16;
        c->pool = xrealloc(c->pool, c->pool_cap * sizeof(*c->pool));
    }
    c->pool[c->pool_len++] = e;
    pthread_mutex_unlock(&c->pool_lock);
}

void
client__handle_defaults(struct shard_client *c, CURL *e)
{
    curl_easy_setopt(e, CURLOPT_SHARE, c->share);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)c->opts.connect_timeout_ms);
    /* A transfer that moves less than 1 byte/s for the stall time is dead. */
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)((c->opts.stall_timeout_ms + 999) / 1000));
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 256L * 1024);
    curl_easy_setopt(e, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    if (c->cfg.ca_bundle != NULL)
        curl_easy_setopt(e, CURLOPT_CAINFO, c->cfg.ca_bundle);
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

int
client__err(struct shard_error *err, enum shard_errkind kind, long status, const char *code,
            const char *fmt, ...)
{
    if (err != NULL) {
        err->kind = kind;
        err->http_status = status;
        snprintf(err->code, sizeof(err->code), "%s", code ? code : "");
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof(err->message), fmt, ap);
        va_end(ap);
    }
    return kind;
}

int
client__err_from_resp(struct shard_error *err, const struct client_resp *resp)
{
    char code[64] = "", message[400] = "";
    if (resp->body.len == 0 || client__xml_error(resp->body.ptr, resp->body.len, code, sizeof(code),
                                                 message, sizeof(message)) != 0) {
        /* HEAD answers and non-S3 proxies carry no XML: name the status. */
        const char *name = resp->status == 404   ? "NotFound"
                           : resp->status == 403 ? "Forbidden"
                           : resp->status == 400 ? "BadRequest"
                           : resp->status == 416 ? "InvalidRange"
                           : resp->status == 503 ? "SlowDown"
                                                 : "HttpError";
        snprintf(code, sizeof(code), "%s", name);
        snprintf(message, sizeof(message), "%s",
                 resp->status == 404 ? "Not Found" : "no error body");
    }
    return client__err(err, SHARD_ERR_S3, resp->status, code, "%s", message);
}

int
client__err_curl(struct shard_error *err, CURLcode rc, const char *errbuf)
{
    const char *code = rc == CURLE_OPERATION_TIMEDOUT ? "Timeout" : "ConnectionError";
    return client__err(err, SHARD_ERR_NET, 0, code, "%s",
                       errbuf && errbuf[0] ? errbuf : curl_easy_strerror(rc));
}

const char *
shard_errkind_name(enum shard_errkind kind)
{
    switch (kind) {
    case SHARD_OK:
        return "ok";
    case SHARD_ERR_S3:
        return "S3 error";
    case SHARD_ERR_NET:
        return "network error";
    case SHARD_ERR_IO:
        return "I/O error";
    case SHARD_ERR_ARG:
        return "invalid argument";
    case SHARD_ERR_CONFIG:
        return "configuration error";
    case SHARD_ERR_PROTO:
        return "protocol error";
    case SHARD_ERR_FORMAT:
        return "format error";
    }
    return "error";
}
