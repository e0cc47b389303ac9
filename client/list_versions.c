/*
 * list_versions.c: shard_list_versions, ListObjectVersions page by page.
 * Pages are read by version_scan.c. The next page is asked for while one
 * is scanned and handed to the callback: a fetch thread requests page N+1
 * as soon as it has read the head of page N (IsTruncated, NextKeyMarker and
 * NextVersionIdMarker, which S3 and shardstore send before the entries),
 * and queues the pages in order for the caller's thread, which alone runs
 * the callback:
 *
 *   fetch thread   GET 1 | head 1 | GET 2 | head 2 | GET 3 ...
 *   caller         ...............| scan 1, fn  | scan 2, fn ...
 *
 * Invariants: the callback sees the pages in request order, each entry
 * once; a page's head and its whole scan must name the same markers, else
 * the listing fails (a page is never trusted on its head alone); when the
 * callback stops the listing, the fetch thread finishes its request, drops
 * it and is joined before shard_list_versions returns.
 */
#include "config.h"

#include "client/shard_int.h"

#include <stdlib.h>

/* Pages fetched ahead of the one being scanned (each ~400 KiB). */
#define FETCH_AHEAD 2

void
client__list_versions_query(struct buf *q, const char *prefix, const char *delimiter,
                            unsigned max_keys, const char *key_marker, const char *version_marker)
{
    /* Parameters in canonical (sorted) order; values URI-encoded. */
    if (delimiter != NULL && delimiter[0] != '\0') {
        buf_append_str(q, "delimiter=");
        uri_encode(q, delimiter, strlen(delimiter), false);
        buf_append_str(q, "&");
    }
    buf_append_str(q, "encoding-type=url");
    if (key_marker != NULL && key_marker[0] != '\0') {
        buf_append_str(q, "&key-marker=");
        uri_encode(q, key_marker, strlen(key_marker), false);
    }
    if (max_keys > 0)
        buf_printf(q, "&max-keys=%u", max_keys);
    if (prefix != NULL && prefix[0] != '\0') {
        buf_append_str(q, "&prefix=");
        uri_encode(q, prefix, strlen(prefix), false);
    }
    if (version_marker != NULL && version_marker[0] != '\0') {
        buf_append_str(q, "&version-id-marker=");
        uri_encode(q, version_marker, strlen(version_marker), false);
    }
    buf_append_str(q, "&versions=");
}

/* What every page request of one listing shares. */
struct list_args {
    struct shard_client *c;
    const char *bucket, *prefix, *delimiter;
    unsigned max_keys;
};

/* GETs the page after 'key_marker'/'version_marker' (NULL on the first
 * page) into 'resp'. Returns 0 or a negative error ('err' filled). */
static int
list_get_page(const struct list_args *a, const char *key_marker, const char *version_marker,
              struct client_resp *resp, struct shard_error *err)
{
    struct buf q;
    buf_init(&q);
    client__list_versions_query(&q, a->prefix, a->delimiter, a->max_keys, key_marker,
                                version_marker);
    struct client_req req = {.method = "GET", .bucket = a->bucket, .query = q.ptr};
    int rc = client__perform(a->c, &req, NULL, 0, resp, err);
    buf_cleanup(&q);
    return rc;
}

static int
list_malformed(struct shard_error *err, long status)
{
    return client__err(err, SHARD_ERR_PROTO, status, "MalformedXML",
                       "cannot parse the ListObjectVersions answer");
}

static int
list_no_marker(struct shard_error *err, long status)
{
    return client__err(err, SHARD_ERR_PROTO, status, "MalformedXML",
                       "truncated version listing without a NextKeyMarker");
}

/* Whether a page's next markers lie past the ones it was asked for: keys
 * come in byte order, so the next key marker may not go back, and the same
 * pair again would ask for the same page forever. */
static bool
list_markers_advance(const char *key_marker, const char *version_marker, const char *next_key,
                     const char *next_version)
{
    if (key_marker == NULL)
        return true;
    int c = strcmp(next_key, key_marker);
    return c > 0 || (c == 0 && strcmp(next_version, version_marker ? version_marker : "") != 0);
}

static int
list_no_progress(struct shard_error *err, long status)
{
    return client__err(err, SHARD_ERR_PROTO, status, "MalformedXML",
                       "the version listing does not advance (markers repeated or going back)");
}

/* ------------------------------------------------------------------------ */
/* One page after the other                                                   */
/* ------------------------------------------------------------------------ */

/* Each page requested after the previous one was scanned whole: the
 * reference the pipelined listing is tested against, and its fallback when
 * no thread can be started. */
static int
list_sequential(const struct list_args *a, shard_version_fn fn, void *ctx, struct shard_error *err)
{
    struct client_version_scan *s = client__version_scan_create(fn, ctx);
    struct client_resp resp;
    char *key_marker = NULL, *version_marker = NULL;
    int rc;
    client__resp_init(&resp);
    for (;;) {
        rc = list_get_page(a, key_marker, version_marker, &resp, err);
        if (rc != 0)
            break;
        rc = client__version_scan_page(s, resp.body.ptr, resp.body.len);
        if (rc < 0)
            rc = list_malformed(err, resp.status);
        if (rc != 0 || !client__version_scan_truncated(s))
            break;
        const char *next = client__version_scan_key_marker(s);
        if (next[0] == '\0') {
            rc = list_no_marker(err, resp.status);
            break;
        }
        if (!list_markers_advance(key_marker, version_marker, next,
                                  client__version_scan_version_marker(s))) {
            rc = list_no_progress(err, resp.status);
            break;
        }
        /* A page ending on a common prefix has no NextVersionIdMarker. */
        free(key_marker);
        free(version_marker);
        key_marker = xstrdup(next);
        version_marker = xstrdup(client__version_scan_version_marker(s));
    }
    free(key_marker);
    free(version_marker);
    client__resp_cleanup(&resp);
    client__version_scan_destroy(s);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* The next page fetched while one is scanned                                 */
/* ------------------------------------------------------------------------ */

/* A fetched page (or the error that ended the fetching) and its head. */
struct list_page {
    struct client_resp resp;
    int rc;
    struct shard_error err;
    bool is_truncated;
    char *key_marker, *version_marker; /* NULL unless truncated */
};

struct list_fetch {
    struct list_args args;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct list_page *queue[FETCH_AHEAD]; /* pages in order, from 'first' */
    size_t first, n;
    /* Pages scanned, for the fetch thread to fill again: their buffers
     * are grown and their memory mapped already. */
    struct list_page *spare[FETCH_AHEAD + 2];
    size_t n_spare;
    bool is_stopped; /* the caller's thread is done: fetch no more */
};

static void
list_page_destroy(struct list_page *pg)
{
    if (pg == NULL)
        return;
    client__resp_cleanup(&pg->resp);
    free(pg->key_marker);
    free(pg->version_marker);
    free(pg);
}

/* Fetches page after page until the last one, an error, or the stop. */
static void *
list_fetch_main(void *arg)
{
    struct list_fetch *f = arg;
    struct client_version_scan *head = client__version_scan_create(NULL, NULL);
    const char *key_marker = NULL, *version_marker = NULL;
    for (;;) {
        pthread_mutex_lock(&f->lock);
        struct list_page *pg = f->n_spare > 0 ? f->spare[--f->n_spare] : NULL;
        pthread_mutex_unlock(&f->lock);
        if (pg == NULL) {
            pg = xcalloc(1, sizeof(*pg));
            client__resp_init(&pg->resp);
        } else {
            free(pg->key_marker);
            free(pg->version_marker);
            pg->key_marker = pg->version_marker = NULL;
            pg->is_truncated = false;
        }
        pg->rc = list_get_page(&f->args, key_marker, version_marker, &pg->resp, &pg->err);
        if (pg->rc == 0) {
            if (client__version_scan_head(head, pg->resp.body.ptr, pg->resp.body.len) != 0)
                pg->rc = list_malformed(&pg->err, pg->resp.status);
            else if (client__version_scan_truncated(head) &&
                     client__version_scan_key_marker(head)[0] == '\0')
                pg->rc = list_no_marker(&pg->err, pg->resp.status);
            else if (client__version_scan_truncated(head) &&
                     !list_markers_advance(key_marker, version_marker,
                                           client__version_scan_key_marker(head),
                                           client__version_scan_version_marker(head)))
                pg->rc = list_no_progress(&pg->err, pg->resp.status);
            else if (client__version_scan_truncated(head)) {
                pg->is_truncated = true;
                pg->key_marker = xstrdup(client__version_scan_key_marker(head));
                pg->version_marker = xstrdup(client__version_scan_version_marker(head));
            }
        }
        bool is_last = pg->rc != 0 || !pg->is_truncated;
        /* The queued page keeps its markers until the caller has scanned
         * it, so the next request can borrow them. */
        key_marker = pg->key_marker;
        version_marker = pg->version_marker;
        pthread_mutex_lock(&f->lock);
        while (f->n == FETCH_AHEAD && !f->is_stopped)
            pthread_cond_wait(&f->cond, &f->lock);
        bool is_stopped = f->is_stopped;
        if (!is_stopped) {
            f->queue[(f->first + f->n) % FETCH_AHEAD] = pg;
            f->n++;
            pthread_cond_broadcast(&f->cond);
        }
        pthread_mutex_unlock(&f->lock);
        if (is_stopped) {
            list_page_destroy(pg);
            break;
        }
        if (is_last)
            break;
    }
    client__version_scan_destroy(head);
    return NULL;
}

/* Whether the whole scan of a page named the markers its head did. */
static bool
list_markers_agree(const struct client_version_scan *s, const struct list_page *pg)
{
    if (client__version_scan_truncated(s) != pg->is_truncated)
        return false;
    return !pg->is_truncated ||
           (strcmp(client__version_scan_key_marker(s), pg->key_marker) == 0 &&
            strcmp(client__version_scan_version_marker(s), pg->version_marker) == 0);
}

static int
list_pipelined(const struct list_args *a, shard_version_fn fn, void *ctx, struct shard_error *err)
{
    struct list_fetch f = {.args = *a};
    pthread_t thread;
    pthread_mutex_init(&f.lock, NULL);
    pthread_cond_init(&f.cond, NULL);
    if (pthread_create(&thread, NULL, list_fetch_main, &f) != 0) {
        pthread_cond_destroy(&f.cond);
        pthread_mutex_destroy(&f.lock);
        return list_sequential(a, fn, ctx, err);
    }
    struct client_version_scan *s = client__version_scan_create(fn, ctx);
    struct list_page *done = NULL; /* the page scanned last: its markers are borrowed */
    int rc;
    for (;;) {
        pthread_mutex_lock(&f.lock);
        while (f.n == 0)
            pthread_cond_wait(&f.cond, &f.lock);
        struct list_page *pg = f.queue[f.first];
        f.first = (f.first + 1) % FETCH_AHEAD;
        f.n--;
        /* The fetch thread's request after 'done' has been made (it is
         * past 'pg'): 'done' may be filled again. */
        if (done != NULL && f.n_spare < ARRAY_LEN(f.spare)) {
            f.spare[f.n_spare++] = done;
            done = NULL;
        }
        pthread_cond_broadcast(&f.cond);
        pthread_mutex_unlock(&f.lock);
        list_page_destroy(done);
        done = pg;
        rc = pg->rc;
        if (rc != 0) {
            *err = pg->err;
            break;
        }
        rc = client__version_scan_page(s, pg->resp.body.ptr, pg->resp.body.len);
        if (rc < 0 || (rc == 0 && !list_markers_agree(s, pg)))
            rc = list_malformed(err, pg->resp.status);
        if (rc != 0 || !pg->is_truncated)
            break;
    }
    pthread_mutex_lock(&f.lock);
    f.is_stopped = true;
    pthread_cond_broadcast(&f.cond);
    pthread_mutex_unlock(&f.lock);
    pthread_join(thread, NULL);
    list_page_destroy(done);
    for (; f.n > 0; f.n--, f.first = (f.first + 1) % FETCH_AHEAD)
        list_page_destroy(f.queue[f.first]);
    while (f.n_spare > 0)
        list_page_destroy(f.spare[--f.n_spare]);
    client__version_scan_destroy(s);
    pthread_cond_destroy(&f.cond);
    pthread_mutex_destroy(&f.lock);
    return rc;
}

int
client__list_versions(struct shard_client *c, const char *bucket, const char *prefix,
                      const char *delimiter, unsigned max_keys, bool is_pipelined,
                      shard_version_fn fn, void *ctx, struct shard_error *err)
{
    struct list_args a = {c, bucket, prefix, delimiter, max_keys};
    return is_pipelined ? list_pipelined(&a, fn, ctx, err) : list_sequential(&a, fn, ctx, err);
}

int
shard_list_versions(struct shard_client *c, const char *bucket, const char *prefix,
                    const char *delimiter, shard_version_fn fn, void *ctx, struct shard_error *err)
{
    return client__list_versions(c, bucket, prefix, delimiter, 1000, true, fn, ctx, err);
}
