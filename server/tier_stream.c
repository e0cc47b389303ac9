/*
 * tier_stream.c: a response body read from a tier on the offload workers.
 *
 * A producer job (one at a time per body) reads the tier into a ring of
 * TIER_STREAM_RING_LEN bytes until it is full or the body complete; MHD's
 * content reader (event thread) only copies out of the ring, restarts the
 * producer once half the ring is free and suspends the connection while it
 * is empty. The producer writes only the free part of the ring, the reader
 * only reads the filled part; indices and flags are under 'lock'. Whoever
 * runs last (the free callback or a running producer) frees the stream.
 */
#include "config.h"

#include "common/common.h"
#include "server/offload.h"
#include "server/server.h"
#include "server/tier.h"
#include "server/tier_stream.h"
#include "server/util.h"

#include <inttypes.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define TIER_STREAM_BLOCK_LEN (256 * 1024)

struct tier_stream {
    struct server *srv;
    struct MHD_Connection *conn;
    struct tier_reader *trd;
    uint64_t len; /* body bytes */
    struct offload_job job;

    pthread_mutex_t lock;
    uint8_t *ring;
    size_t head;       /* first unread byte */
    size_t fill;       /* unread bytes */
    uint64_t produced; /* body bytes written into the ring so far */
    bool is_running;   /* the producer is queued or running */
    bool is_suspended; /* the reader suspended the connection */
    bool is_done;      /* the producer wrote its last byte, or failed */
    bool is_failed;    /* ... and the body must end in error */
    bool is_freed;     /* the response is gone */
};

static void
stream_destroy(struct tier_stream *s)
{
    tier_reader_destroy(s->trd);
    free(s->ring);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* The producer: fills the ring until it is full or the body is complete,
 * resuming the connection whenever the reader waits for bytes. Runs with
 * s->is_running set; frees the stream when the response went away. */
static void
stream_job(void *arg)
{
    struct tier_stream *s = arg;
    struct MHD_Connection *conn = s->conn;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        size_t wpos = (s->head + s->fill) % TIER_STREAM_RING_LEN;
        size_t span = MIN(TIER_STREAM_RING_LEN - s->fill, TIER_STREAM_RING_LEN - wpos);
        if (s->is_freed || s->is_done || span == 0) {
            bool is_freed = s->is_freed;
            bool must_resume = s->is_suspended;
            s->is_suspended = false;
            s->is_running = false;
            pthread_mutex_unlock(&s->lock);
            if (must_resume)
                MHD_resume_connection(conn);
            if (is_freed)
                stream_destroy(s);
            return;
        }
        uint64_t pos = s->produced;
        pthread_mutex_unlock(&s->lock);
        size_t want = (size_t)MIN((uint64_t)span, s->len - pos);
        ssize_t n = tier_reader_read(s->trd, pos, s->ring + wpos, want);
        pthread_mutex_lock(&s->lock);
        if (n <= 0) {
            /* A tier error, or the tier's copy is shorter than the record
             * says: nothing can stand in for the missing bytes. */
            log_warn("tier stream: read at %" PRIu64 " of %" PRIu64 " failed (%zd)", pos, s->len,
                     n);
            s->is_done = s->is_failed = true;
        } else {
            s->fill += (size_t)n;
            s->produced += (uint64_t)n;
            s->is_done = s->produced == s->len;
        }
        bool must_resume = s->is_suspended;
        s->is_suspended = false;
        pthread_mutex_unlock(&s->lock);
        if (must_resume)
            MHD_resume_connection(conn);
    }
}

/* Queues the producer on a worker, or runs it here without a pool. */
static void
stream_start(struct tier_stream *s)
{
    if (s->srv->offload)
        offload_submit(s->srv->offload, &s->job);
    else
        stream_job(s);
}

/* MHD's content reader (event thread). */
static ssize_t
stream_read_cb(void *cls, uint64_t pos, char *out, size_t max)
{
    struct tier_stream *s = cls;
    (void)pos;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        if (s->fill && !s->is_failed) {
            size_t k = MIN(max, MIN(s->fill, TIER_STREAM_RING_LEN - s->head));
            memcpy(out, s->ring + s->head, k);
            s->head = (s->head + k) % TIER_STREAM_RING_LEN;
            s->fill -= k;
            bool must_start = !s->is_running && !s->is_done && s->fill <= TIER_STREAM_RING_LEN / 2;
            if (must_start)
                s->is_running = true;
            pthread_mutex_unlock(&s->lock);
            if (must_start)
                stream_start(s);
            return (ssize_t)k;
        }
        if (s->is_done) {
            bool is_failed = s->is_failed;
            pthread_mutex_unlock(&s->lock);
            return is_failed ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
        }
        if (!s->is_running) {
            s->is_running = true;
            pthread_mutex_unlock(&s->lock);
            stream_start(s);
            pthread_mutex_lock(&s->lock);
            continue; /* without a pool the job ran here: its bytes are in */
        }
        s->is_suspended = true;
        MHD_suspend_connection(s->conn);
        pthread_mutex_unlock(&s->lock);
        return 0;
    }
}

static void
stream_free_cb(void *cls)
{
    struct tier_stream *s = cls;
    pthread_mutex_lock(&s->lock);
    s->is_freed = true;
    bool is_running = s->is_running;
    pthread_mutex_unlock(&s->lock);
    if (!is_running)
        stream_destroy(s);
}

struct MHD_Response *
tier_stream_response(struct server *srv, struct MHD_Connection *conn, struct tier_reader *trd,
                     uint64_t len)
{
    struct tier_stream *s = xcalloc(1, sizeof(*s));
    pthread_mutex_init(&s->lock, NULL);
    s->srv = srv;
    s->conn = conn;
    s->len = len;
    s->ring = xmalloc(TIER_STREAM_RING_LEN);
    s->job.fn = stream_job;
    s->job.arg = s;
    struct MHD_Response *resp = MHD_create_response_from_callback(
        len, TIER_STREAM_BLOCK_LEN, stream_read_cb, s, stream_free_cb);
    if (!resp) {
        free(s->ring);
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
    }
    s->trd = trd;
    /* The first bytes are read while the headers go out. */
    if (srv->offload) {
        s->is_running = true;
        offload_submit(srv->offload, &s->job);
    }
    return resp;
}
