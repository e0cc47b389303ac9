/*
 * op_cors.c: bucket CORS. Put/Get/DeleteBucketCors keep the document Get
 * answers in the bucket's configuration store; the unauthenticated OPTIONS
 * preflight answers from the rules; cors_add_headers puts Access-Control-*
 * and Vary on every other response to a request with an Origin. Rules are
 * parsed once per bucket into a cache (bucket id -> rules or "none", an
 * arena each) read under its lock, so a request neither parses nor
 * allocates; Put/Delete invalidate the entry (a generation counter keeps a
 * racing load out) and the cache is dropped whole past CACHE_MAX entries.
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/body.h"
#include "server/cors.h"
#include "server/errors.h"
#include "server/ops.h"
#include "server/req.h"
#include "server/server.h"

#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define CACHE_SLOTS 256
#define CACHE_MAX 4096

struct cors_entry {
    uint64_t bucket_id;
    struct arena *arena;
    bool has_config; /* false: the bucket has none (cached too) */
    struct cors_config cfg;
    struct cors_entry *next;
};

/* One cache per process (one server per process). */
static struct {
    pthread_rwlock_t lock;
    uint64_t gen;
    size_t n;
    struct cors_entry *slots[CACHE_SLOTS];
} cache = {.lock = PTHREAD_RWLOCK_INITIALIZER};

static void
entry_free(struct cors_entry *e)
{
    if (!e)
        return;
    arena_destroy(e->arena);
    free(e);
}

static struct cors_entry *
cache_find(uint64_t bucket_id)
{
    for (struct cors_entry *e = cache.slots[bucket_id % CACHE_SLOTS]; e; e = e->next)
        if (e->bucket_id == bucket_id)
            return e;
    return NULL;
}

/* Drops every entry; the caller holds the write lock. */
static void
cache_clear_locked(void)
{
    for (size_t i = 0; i < CACHE_SLOTS; i++) {
        while (cache.slots[i]) {
            struct cors_entry *e = cache.slots[i];
            cache.slots[i] = e->next;
            entry_free(e);
        }
    }
    cache.n = 0;
}

static void
cache_invalidate(uint64_t bucket_id)
{
    pthread_rwlock_wrlock(&cache.lock);
    struct cors_entry **pp = &cache.slots[bucket_id % CACHE_SLOTS];
    while (*pp) {
        struct cors_entry *e = *pp;
        if (e->bucket_id == bucket_id) {
            *pp = e->next;
            entry_free(e);
            cache.n--;
        } else {
            pp = &e->next;
        }
    }
    cache.gen++;
    pthread_rwlock_unlock(&cache.lock);
}

/* Reads and parses the bucket's configuration. Returns NULL on an index
 * error (nothing is cached then). */
static struct cors_entry *
entry_load(struct index *ix, uint64_t bucket_id)
{
    struct cors_entry *e = xcalloc(1, sizeof(*e));
    const void *val;
    size_t len;
    const char *msg;
    e->bucket_id = bucket_id;
    e->arena = arena_create(4096);
    int rc = index_bucket_config_get(ix, bucket_id, INDEX_BUCKET_CONFIG_CORS, e->arena, &val, &len);
    if (rc == 0)
        e->has_config = cors_parse(val, len, e->arena, &e->cfg, &msg) == CORS_OK;
    if (rc < 0 && rc != -ENOENT) {
        entry_free(e);
        return NULL;
    }
    return e;
}

typedef void cors_rules_fn(struct s3_req *r, const struct cors_config *cfg, void *ctx);

/* Calls 'fn' with the bucket's rules (NULL when it has none) under the
 * cache lock, loading them on first use. Returns false when they could not
 * be read. */
static bool
with_rules(struct s3_req *r, uint64_t bucket_id, cors_rules_fn *fn, void *ctx)
{
    pthread_rwlock_rdlock(&cache.lock);
    struct cors_entry *e = cache_find(bucket_id);
    if (e) {
        fn(r, e->has_config ? &e->cfg : NULL, ctx);
        pthread_rwlock_unlock(&cache.lock);
        return true;
    }
    uint64_t gen = cache.gen;
    pthread_rwlock_unlock(&cache.lock);

    struct cors_entry *loaded = entry_load(r->srv->index, bucket_id);
    if (!loaded)
        return false;
    bool is_cached = false;
    pthread_rwlock_wrlock(&cache.lock);
    e = cache_find(bucket_id);
    if (!e && gen == cache.gen) {
        if (cache.n >= CACHE_MAX)
            cache_clear_locked();
        loaded->next = cache.slots[bucket_id % CACHE_SLOTS];
        cache.slots[bucket_id % CACHE_SLOTS] = loaded;
        cache.n++;
        e = loaded;
        is_cached = true;
    }
    if (!e)
        e = loaded; /* raced an invalidation: used for this request only */
    fn(r, e->has_config ? &e->cfg : NULL, ctx);
    pthread_rwlock_unlock(&cache.lock);
    if (!is_cached)
        entry_free(loaded);
    return true;
}

/* The id of the request's bucket: the one authorization read, else a
 * lookup (error answers before authorization). */
static bool
request_bucket_id(struct s3_req *r, uint64_t *id)
{
    if (r->has_bucket) {
        *id = r->bucket_rec.id;
        return true;
    }
    struct index_bucket bk;
    if (index_bucket_get(r->srv->index, r->bucket, &bk) != 0)
        return false;
    *id = bk.id;
    return true;
}

/* Adds the answer of matching rule 'rule' to 'resp'; 'allow_headers' is
 * the preflight's Access-Control-Request-Headers (echoed), or empty. */
static void
rule_headers(struct s3_req *r, struct MHD_Response *resp, const struct cors_rule *rule,
             struct slice allow_headers)
{
    char methods[64];
    bool is_any = cors_rule_is_any_origin(rule);
    s3_resp_header(resp, "Access-Control-Allow-Origin",
                   is_any ? "*" : arena_strndup(r->arena, r->cors_origin.ptr, r->cors_origin.len));
    cors_methods_format(rule, methods, sizeof(methods));
    s3_resp_header(resp, "Access-Control-Allow-Methods", methods);
    if (allow_headers.len)
        s3_resp_header(resp, "Access-Control-Allow-Headers",
                       arena_strndup(r->arena, allow_headers.ptr, allow_headers.len));
    if (rule->n_expose) {
        struct buf b;
        buf_init(&b);
        for (size_t i = 0; i < rule->n_expose; i++) {
            if (i)
                buf_append_str(&b, ", ");
            buf_append(&b, rule->expose[i].ptr, rule->expose[i].len);
        }
        s3_resp_header(resp, "Access-Control-Expose-Headers",
                       arena_strndup(r->arena, b.ptr ? b.ptr : "", b.len));
        buf_cleanup(&b);
    }
    if (rule->max_age_s >= 0)
        s3_resp_header(resp, "Access-Control-Max-Age",
                       arena_sprintf(r->arena, "%" PRId64, rule->max_age_s));
    if (!is_any)
        s3_resp_header(resp, "Access-Control-Allow-Credentials", "true");
}

#define CORS_VARY "Origin, Access-Control-Request-Headers, Access-Control-Request-Method"

struct actual_ctx {
    struct MHD_Response *resp;
    unsigned method;
};

static void
actual_fn(struct s3_req *r, const struct cors_config *cfg, void *arg)
{
    struct actual_ctx *ac = arg;
    if (!cfg)
        return;
    s3_resp_header(ac->resp, "Vary", CORS_VARY);
    const struct cors_rule *rule = cors_match(cfg, r->cors_origin, ac->method, SLICE_NULL);
    if (rule)
        rule_headers(r, ac->resp, rule, SLICE_NULL);
}

void
cors_add_headers(struct s3_req *r, struct MHD_Response *resp)
{
    uint64_t id;
    struct actual_ctx ac = {resp, cors_method_bit(r->method)};
    if (r->is_admin || r->bucket.len == 0 || ac.method == 0 || r->is_cors_preflight ||
        !request_bucket_id(r, &id))
        return;
    with_rules(r, id, actual_fn, &ac);
}

/* ======================================================================
 * The preflight: OPTIONS /bucket[/key]
 * ====================================================================== */

struct preflight_ctx {
    unsigned method;
    struct slice request_headers;
    bool has_config;
    bool is_allowed;
    struct MHD_Response *resp;
};

static void
preflight_fn(struct s3_req *r, const struct cors_config *cfg, void *arg)
{
    struct preflight_ctx *pc = arg;
    pc->has_config = cfg != NULL;
    if (!cfg)
        return;
    const struct cors_rule *rule = cors_match(cfg, r->cors_origin, pc->method, pc->request_headers);
    if (!rule)
        return;
    pc->is_allowed = true;
    pc->resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    rule_headers(r, pc->resp, rule, pc->request_headers);
    s3_resp_header(pc->resp, "Vary", CORS_VARY);
}

void
op_cors_preflight(struct s3_req *r)
{
    r->is_cors_preflight = true;
    if (!r->cors_origin.ptr) {
        s3_respond_error(r, S3_ERR_BAD_REQUEST,
                         "Insufficient information. Origin request header needed.");
        return;
    }
    struct slice m = s3_req_header(r, "access-control-request-method");
    struct preflight_ctx pc = {.method = cors_method_bit(m)};
    if (!pc.method) {
        s3_respond_error(r, S3_ERR_BAD_REQUEST,
                         arena_sprintf(r->arena, "Invalid Access-Control-Request-Method: %.*s",
                                       (int)MIN(m.len, 64), m.ptr ? m.ptr : "null"));
        return;
    }
    pc.request_headers = s3_req_header(r, "access-control-request-headers");
    struct index_bucket bk;
    int rc = index_bucket_get(r->srv->index, r->bucket, &bk);
    if (rc == -ENOENT) {
        s3_respond_error(r, S3_ERR_NO_SUCH_BUCKET, NULL);
        return;
    }
    if (rc < 0 || !with_rules(r, bk.id, preflight_fn, &pc)) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    if (pc.is_allowed) {
        s3_respond(r, 200, pc.resp);
        return;
    }
    s3_respond_error(r, S3_ERR_CORS_RESPONSE,
                     pc.has_config
                         ? "This CORS request is not allowed. This is usually because the "
                           "evalution of Origin, request method / Access-Control-Request-Method "
                           "or Access-Control-Request-Headers are not whitelisted by the "
                           "resource's CORS spec."
                         : "CORS is not enabled for this bucket.");
}

/* ======================================================================
 * Put/Get/DeleteBucketCors
 * ====================================================================== */

static void
put_cors_end(struct s3_req *r)
{
    struct index_bucket bk;
    struct cors_config cfg;
    const char *msg = NULL;
    if (!s3_xml_body_begin(r, &bk))
        return;
    enum cors_status st =
        cors_parse(r->xml_body.ptr ? r->xml_body.ptr : "", r->xml_body.len, r->arena, &cfg, &msg);
    if (st != CORS_OK) {
        s3_respond_error(r, st == CORS_MALFORMED ? S3_ERR_MALFORMED_XML : S3_ERR_INVALID_REQUEST,
                         st == CORS_MALFORMED ? NULL : msg);
        return;
    }
    struct buf b;
    buf_init(&b);
    cors_format(&cfg, &b);
    int rc = index_bucket_config_put(r->srv->index, bk.id, INDEX_BUCKET_CONFIG_CORS, b.ptr, b.len);
    buf_cleanup(&b);
    cache_invalidate(bk.id);
    if (rc == -ENOENT) {
        s3_respond_error(r, S3_ERR_NO_SUCH_BUCKET, NULL);
        return;
    }
    if (rc < 0) {
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
        return;
    }
    log_info("bucket %s: CORS configuration set, %zu rule(s) (by %s)", bk.name, cfg.n_rules,
             r->user_name);
    s3_respond_empty(r, 200);
}

void
op_put_bucket_cors(struct s3_req *r)
{
    s3_req_expect_xml(r, CORS_BODY_MAX, put_cors_end);
}

void
op_get_bucket_cors(struct s3_req *r)
{
    struct index_bucket bk;
    const void *val;
    size_t len;
    if (!s3_bucket_lookup(r, &bk))
        return;
    int rc = index_bucket_config_get(r->srv->index, bk.id, INDEX_BUCKET_CONFIG_CORS, r->arena, &val,
                                     &len);
    if (rc == -ENOENT)
        s3_respond_error(r, S3_ERR_NO_SUCH_CORS_CONFIGURATION, NULL);
    else if (rc < 0)
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
    else
        s3_respond_body(r, 200, "application/xml", val, len);
}

void
op_delete_bucket_cors(struct s3_req *r)
{
    struct index_bucket bk;
    if (!s3_bucket_lookup(r, &bk))
        return;
    int rc = index_bucket_config_delete(r->srv->index, bk.id, INDEX_BUCKET_CONFIG_CORS);
    cache_invalidate(bk.id);
    if (rc < 0 && rc != -ENOENT)
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
    else
        s3_respond_empty(r, 204);
}
