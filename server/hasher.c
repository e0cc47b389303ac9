/*
 * hasher.c: hashing threads behind the receive path of uploads. The event
 * loop copies a stream's payload into 256 KiB chunks; each thread takes the
 * next 64 KiB of every one of its streams that has bytes queued, submits
 * them to that stream's lane of one multi-buffer MD5 (auth/md5_mb.c) and
 * advances all lanes in one run, then feeds the same bytes to the stream's
 * extra checksum. Streams beyond the 8 lanes of a thread use a plain MD5.
 * A borrowing stream (hasher_stream_borrow) queues no copies: each chunk
 * points at bytes its writer lends (a storage staging buffer), given back
 * through the chunk's release callback once hashed or dropped.
 * Invariants: only the thread touches its struct auth_md5_mb (lanes are
 * reset there); every chunk but the last of a stream is a multiple of 64
 * bytes, so only the last can end in a partial block; a stream's queue is
 * bounded, the writer is paused past it and resumed by the thread; a lent
 * chunk is released exactly once, after its last read.
 */
#include "config.h"

#include "common/common.h"
#include "server/hasher.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HASHER_CHUNK_LEN (256u << 10)
/* Bytes of one stream hashed per run: a stream arriving later joins the
 * lanes after at most this much of the others. A multiple of 64. */
#define HASHER_SLICE_LEN (64u << 10)
/* Chunks queued per stream before its writer pauses, and the count at
 * which it resumes. */
#define HASHER_QUEUE_MAX 8
#define HASHER_QUEUE_RESUME 4
/* A lane stream with this many chunks queued is hashed even when other
 * lanes of its thread have nothing yet (below HASHER_QUEUE_MAX, so its
 * writer is never paused waiting for them). */
#define HASHER_QUEUE_URGENT 4
/* Free chunks kept for reuse (page faults of fresh ones cost as much as
 * the copy). */
#define HASHER_POOL_MAX 64

struct chunk {
    struct chunk *next;
    const unsigned char *ptr; /* 'data', or the bytes lent */
    size_t len;
    size_t off; /* hashed so far */
    bool is_final;
    bool is_lent;              /* 'ptr' is someone else's: no 'data', never pooled */
    hasher_release_fn release; /* lent: called once the bytes are no longer read */
    void *release_arg;
    unsigned char data[]; /* HASHER_CHUNK_LEN bytes in a copying stream's chunks */
};

struct hthread {
    struct hasher *h;
    pthread_t tid;
    bool is_started;
    pthread_mutex_t lock;
    pthread_cond_t work; /* the thread waits for queued chunks */
    pthread_cond_t done; /* writers wait for progress */
    struct hasher_stream *streams;
    unsigned n_streams;
    bool lane_used[AUTH_MD5_MB_LANES];
    bool is_stopping;
    struct auth_md5_mb mb; /* the thread's only */
};

struct hasher {
    struct hthread *threads;
    unsigned n_threads;
    pthread_mutex_t pool_lock;
    struct chunk *pool;
    unsigned n_pool;
    atomic_uint_fast64_t n_lane;
    atomic_uint_fast64_t n_plain;
    atomic_uint_fast64_t n_pauses;
    atomic_uint_fast64_t n_runs;      /* runs of the lanes */
    atomic_uint_fast64_t n_lane_jobs; /* lane slices hashed in those runs */
    uint32_t delay_ms;
};

struct hasher_stream {
    struct hthread *t;
    struct hasher_stream *next; /* in t->streams */
    int lane;                   /* -1: plain MD5 in 'md5' */
    bool needs_reset;           /* the lane is reset by the thread first */
    struct auth_checksum md5;
    struct auth_checksum ck;
    bool has_ck;
    struct chunk *fill; /* being filled by the writer, not queued yet */
    struct chunk *head; /* queued, oldest first */
    struct chunk *tail;
    unsigned n_queued;
    bool is_busy;  /* the thread hashes the head chunk */
    bool is_ended; /* the final chunk is queued */
    bool is_done;  /* every byte hashed, digests below */
    bool is_gone;  /* done: its lane and place are free for the next stream */
    bool is_paused;
    bool is_hurried; /* its writer waits for a lent chunk: urgent until drained */
    /* Flow control, in chunks queued: pause the writer at 'queue_max',
     * resume it at 'queue_resume', hash without waiting for the lane
     * neighbours at 'queue_urgent'. */
    unsigned queue_max;
    unsigned queue_resume;
    unsigned queue_urgent;
    uint8_t md5_out[AUTH_CK_MAX_DIGEST]; /* MD5 in the first 16 */
    uint8_t ck_out[AUTH_CK_MAX_DIGEST];
    size_t ck_len;
    hasher_flow_fn pause;
    hasher_flow_fn resume;
    void *arg;
};

static struct chunk *
chunk_get(struct hasher *h)
{
    pthread_mutex_lock(&h->pool_lock);
    struct chunk *c = h->pool;
    if (c) {
        h->pool = c->next;
        h->n_pool--;
    }
    pthread_mutex_unlock(&h->pool_lock);
    if (!c)
        c = xmalloc(sizeof(*c) + HASHER_CHUNK_LEN);
    c->next = NULL;
    c->ptr = c->data;
    c->is_lent = false;
    c->release = NULL;
    c->len = 0;
    c->off = 0;
    c->is_final = false;
    return c;
}

/* A chunk of lent bytes (no 'data' of its own). */
static struct chunk *
chunk_lent(const void *ptr, size_t len, hasher_release_fn release, void *release_arg)
{
    static const unsigned char none[1];
    struct chunk *c = xcalloc(1, sizeof(*c));
    c->ptr = ptr ? ptr : none; /* an empty tail: never NULL to md5/memcpy */
    c->len = len;
    c->is_lent = true;
    c->release = release;
    c->release_arg = release_arg;
    return c;
}

static void
chunk_put(struct hasher *h, struct chunk *c)
{
    if (c->is_lent) {
        if (c->release)
            c->release(c->release_arg);
        free(c);
        return;
    }
    pthread_mutex_lock(&h->pool_lock);
    if (h->n_pool < HASHER_POOL_MAX) {
        c->next = h->pool;
        h->pool = c;
        h->n_pool++;
        c = NULL;
    }
    pthread_mutex_unlock(&h->pool_lock);
    free(c);
}

/* One stream's share of a run. */
struct job {
    struct hasher_stream *s;
    const unsigned char *ptr;
    size_t len;     /* bytes consumed by this job */
    bool is_tail;   /* the last bytes of the stream: finish the digests */
    bool is_submit; /* whole blocks queued on the lane */
};

/* Takes the next slice of 's' (thread's lock held). */
static void
job_take(struct hthread *t, struct hasher_stream *s, struct job *j)
{
    struct chunk *c = s->head;
    size_t rem = c->len - c->off;
    size_t n = MIN(rem, (size_t)HASHER_SLICE_LEN);
    j->s = s;
    j->ptr = c->ptr + c->off;
    j->is_submit = false;
    if (s->lane < 0) {
        j->len = n;
        j->is_tail = c->is_final && n == rem;
    } else if (n >= 64) {
        j->len = n & ~(size_t)63;
        j->is_tail = false;
        j->is_submit = true;
    } else {
        j->len = n; /* only the final chunk ends in a partial block */
        j->is_tail = true;
    }
    if (s->needs_reset) {
        auth_md5_mb_reset(&t->mb, (unsigned)s->lane);
        s->needs_reset = false;
    }
    s->is_busy = true;
}

/* Hashes the jobs gathered (no lock held). */
static void
jobs_run(struct hthread *t, struct job *jobs, size_t n)
{
    bool has_lane = false;
    for (size_t i = 0; i < n; i++) {
        struct job *j = &jobs[i];
        if (j->is_submit) {
            auth_md5_mb_submit(&t->mb, (unsigned)j->s->lane, j->ptr, j->len);
            has_lane = true;
        } else if (j->s->lane < 0) {
            auth_checksum_update(&j->s->md5, j->ptr, j->len);
        }
    }
    if (has_lane) {
        auth_md5_mb_run(&t->mb);
        atomic_fetch_add(&t->h->n_runs, 1);
        for (size_t i = 0; i < n; i++)
            if (jobs[i].is_submit)
                atomic_fetch_add(&t->h->n_lane_jobs, 1);
    }
    for (size_t i = 0; i < n; i++) {
        struct job *j = &jobs[i];
        struct hasher_stream *s = j->s;
        if (s->has_ck)
            auth_checksum_update(&s->ck, j->ptr, j->len);
        if (!j->is_tail)
            continue;
        if (s->lane < 0)
            auth_checksum_final(&s->md5, s->md5_out);
        else
            auth_md5_mb_final(&t->mb, (unsigned)s->lane, j->ptr, j->len, s->md5_out);
        if (s->has_ck) {
            s->ck_len = auth_checksum_final(&s->ck, s->ck_out);
            s->has_ck = false;
        }
    }
}

/* Accounts for a finished job (thread's lock held). */
static void
job_done(struct hthread *t, struct job *j)
{
    struct hasher_stream *s = j->s;
    struct chunk *c = s->head;
    c->off += j->len;
    s->is_busy = false;
    if (j->is_tail) {
        /* The digest is out: the lane (and the thread's count) go to the
         * next upload now, not when this one's commit is over. */
        s->is_done = true;
        s->is_gone = true;
        t->n_streams--;
        if (s->lane >= 0)
            t->lane_used[s->lane] = false;
    }
    /* A lane's final chunk, hashed to its end, is kept for its tail job
     * (possibly empty), which pads and finishes the digest. */
    if (!j->is_tail && (c->off < c->len || c->is_final))
        return;
    s->head = c->next;
    if (!s->head)
        s->tail = NULL;
    s->n_queued--;
    chunk_put(t->h, c);
    if (s->n_queued == 0)
        s->is_hurried = false;
    if (s->is_paused && s->n_queued <= s->queue_resume) {
        s->is_paused = false;
        if (s->resume)
            s->resume(s->arg);
    }
}

/* Whether 's' must be hashed now rather than wait for its thread's other
 * lanes: a plain MD5 gains nothing by waiting, an ended stream's owner waits
 * for its digest, a long queue would soon pause its writer, and a hurried
 * one's writer waits for its bytes back (its lane neighbours may be
 * connections of the very event loop that waits). */
static bool
stream_is_urgent(const struct hasher_stream *s)
{
    return s->lane < 0 || s->is_ended || s->is_hurried || s->n_queued >= s->queue_urgent;
}

/*
 * Whether the thread should run now (its lock held). A run costs the same
 * whatever number of lanes are busy, so while some of its open lane streams
 * have no bytes queued and none of those with bytes is urgent, it waits for
 * them: with 16 parts in flight the lanes were 3.6 of 8 busy per run when
 * every queued chunk started one.
 */
static bool
hthread_should_run(const struct hthread *t)
{
    bool has_ready = false, has_idle = false;
    for (const struct hasher_stream *s = t->streams; s; s = s->next) {
        if (s->is_done)
            continue;
        if (!s->head) {
            has_idle = true;
            continue;
        }
        if (stream_is_urgent(s))
            return true;
        has_ready = true;
    }
    return has_ready && !has_idle;
}

static void *
hthread_main(void *arg)
{
    struct hthread *t = arg;
    struct job *jobs = NULL;
    size_t jobs_cap = 0;
    pthread_mutex_lock(&t->lock);
    for (;;) {
        if (jobs_cap < t->n_streams) {
            jobs_cap = t->n_streams * 2;
            jobs = xrealloc(jobs, jobs_cap * sizeof(*jobs));
        }
        size_t n = 0;
        if (hthread_should_run(t))
            for (struct hasher_stream *s = t->streams; s; s = s->next)
                if (s->head && !s->is_done)
                    job_take(t, s, &jobs[n++]);
        if (n == 0) {
            if (t->is_stopping)
                break;
            pthread_cond_wait(&t->work, &t->lock);
            continue;
        }
        pthread_mutex_unlock(&t->lock);
        if (t->h->delay_ms) {
            struct timespec ts = {t->h->delay_ms / 1000, (long)(t->h->delay_ms % 1000) * 1000000};
            nanosleep(&ts, NULL);
        }
        jobs_run(t, jobs, n);
        pthread_mutex_lock(&t->lock);
        for (size_t i = 0; i < n; i++)
            job_done(t, &jobs[i]);
        pthread_cond_broadcast(&t->done);
    }
    pthread_mutex_unlock(&t->lock);
    free(jobs);
    return NULL;
}

struct hasher *
hasher_create(unsigned n_threads, uint32_t delay_ms)
{
    struct hasher *h = xcalloc(1, sizeof(*h));
    h->delay_ms = delay_ms;
    h->threads = xcalloc(MAX(n_threads, 1u), sizeof(*h->threads));
    pthread_mutex_init(&h->pool_lock, NULL);
    for (unsigned i = 0; i < MAX(n_threads, 1u); i++) {
        struct hthread *t = &h->threads[i];
        t->h = h;
        pthread_mutex_init(&t->lock, NULL);
        pthread_cond_init(&t->work, NULL);
        pthread_cond_init(&t->done, NULL);
        auth_md5_mb_init(&t->mb);
        h->n_threads = i + 1;
        if (pthread_create(&t->tid, NULL, hthread_main, t) != 0)
            goto fail;
        pthread_setname_np(t->tid, "shard-hasher");
        t->is_started = true;
    }
    return h;
fail:
    hasher_destroy(h);
    return NULL;
}

void
hasher_destroy(struct hasher *h)
{
    if (!h)
        return;
    for (unsigned i = 0; i < h->n_threads; i++) {
        struct hthread *t = &h->threads[i];
        if (t->is_started) {
            pthread_mutex_lock(&t->lock);
            t->is_stopping = true;
            pthread_cond_signal(&t->work);
            pthread_mutex_unlock(&t->lock);
            pthread_join(t->tid, NULL);
        }
        pthread_cond_destroy(&t->done);
        pthread_cond_destroy(&t->work);
        pthread_mutex_destroy(&t->lock);
    }
    while (h->pool) {
        struct chunk *c = h->pool;
        h->pool = c->next;
        free(c);
    }
    pthread_mutex_destroy(&h->pool_lock);
    free(h->threads);
    free(h);
}

struct hasher_stream *
hasher_stream_create(struct hasher *h, enum auth_checksum_algo ck, hasher_flow_fn pause,
                     hasher_flow_fn resume, void *arg)
{
    struct hasher_stream *s = xcalloc(1, sizeof(*s));
    s->pause = pause;
    s->resume = resume;
    s->arg = arg;
    s->lane = -1;
    s->queue_max = HASHER_QUEUE_MAX;
    s->queue_resume = HASHER_QUEUE_RESUME;
    s->queue_urgent = HASHER_QUEUE_URGENT;
    if (ck != AUTH_CK_NONE) {
        auth_checksum_init(&s->ck, ck);
        s->has_ck = true;
    }
    /* The least loaded thread (a racy read is only a worse choice). */
    struct hthread *t = &h->threads[0];
    for (unsigned i = 1; i < h->n_threads; i++)
        if (h->threads[i].n_streams < t->n_streams)
            t = &h->threads[i];
    pthread_mutex_lock(&t->lock);
    for (unsigned i = 0; i < AUTH_MD5_MB_LANES && s->lane < 0; i++)
        if (!t->lane_used[i]) {
            t->lane_used[i] = true;
            s->lane = (int)i;
            s->needs_reset = true;
        }
    s->t = t;
    s->next = t->streams;
    t->streams = s;
    t->n_streams++;
    pthread_mutex_unlock(&t->lock);
    if (s->lane < 0) {
        auth_checksum_init(&s->md5, AUTH_CK_MD5);
        atomic_fetch_add(&h->n_plain, 1);
    } else {
        atomic_fetch_add(&h->n_lane, 1);
    }
    return s;
}

/* Queues the fill chunk (thread's lock held). */
static void
queue_fill(struct hasher_stream *s)
{
    struct chunk *c = s->fill;
    s->fill = NULL;
    if (s->tail)
        s->tail->next = c;
    else
        s->head = c;
    s->tail = c;
    s->n_queued++;
    /* Only a change hthread_should_run may see wakes the thread. */
    if (s->n_queued == 1 || stream_is_urgent(s))
        pthread_cond_signal(&s->t->work);
}

void
hasher_stream_write(struct hasher_stream *s, const void *data, size_t len)
{
    const unsigned char *p = data;
    while (len) {
        if (!s->fill)
            s->fill = chunk_get(s->t->h);
        size_t n = MIN(len, HASHER_CHUNK_LEN - s->fill->len);
        memcpy(s->fill->data + s->fill->len, p, n);
        s->fill->len += n;
        p += n;
        len -= n;
        if (s->fill->len < HASHER_CHUNK_LEN)
            break;
        struct hthread *t = s->t;
        pthread_mutex_lock(&t->lock);
        queue_fill(s);
        if (s->n_queued >= s->queue_max && !s->is_paused) {
            if (s->pause) {
                s->is_paused = true;
                atomic_fetch_add(&s->t->h->n_pauses, 1);
                s->pause(s->arg);
            } else {
                while (s->n_queued > s->queue_resume)
                    pthread_cond_wait(&t->done, &t->lock);
            }
        }
        pthread_mutex_unlock(&t->lock);
    }
}

void
hasher_stream_borrow(struct hasher_stream *s, size_t n_max)
{
    assert(!s->fill && !s->head && !s->is_ended);
    /* The writer fills its next buffer while the others are lent: pause it
     * while it still has one free, so it never waits for the thread. Resume
     * it once half are back: resuming after each buffer (512 KiB) made 3.4x
     * the pauses of a copying stream, each an MHD suspend and resume. */
    s->queue_max = (unsigned)MAX(n_max, 2u) - 1;
    s->queue_resume = s->queue_max / 2;
    s->queue_urgent = MIN(s->queue_max, 2u);
}

void
hasher_stream_lend(struct hasher_stream *s, const void *data, size_t len, bool is_last,
                   hasher_release_fn release, void *release_arg)
{
    struct hthread *t = s->t;
    assert(!s->fill && !s->is_ended && (is_last || len % 64 == 0));
    s->fill = chunk_lent(data, len, release, release_arg);
    s->fill->is_final = is_last;
    pthread_mutex_lock(&t->lock);
    s->is_ended = is_last;
    queue_fill(s);
    if (s->n_queued >= s->queue_max && !s->is_paused && s->pause && !is_last) {
        s->is_paused = true;
        atomic_fetch_add(&t->h->n_pauses, 1);
        s->pause(s->arg);
    }
    pthread_mutex_unlock(&t->lock);
}

void
hasher_stream_hurry(struct hasher_stream *s)
{
    struct hthread *t = s->t;
    pthread_mutex_lock(&t->lock);
    if (s->n_queued > 0 && !s->is_hurried) {
        s->is_hurried = true;
        pthread_cond_signal(&t->work);
    }
    pthread_mutex_unlock(&t->lock);
}

size_t
hasher_stream_finish(struct hasher_stream *s, uint8_t md5[16], uint8_t ck_out[AUTH_CK_MAX_DIGEST])
{
    struct hthread *t = s->t;
    if (!s->is_ended && !s->fill)
        s->fill = chunk_get(t->h);
    pthread_mutex_lock(&t->lock);
    if (!s->is_ended) {
        s->fill->is_final = true;
        s->is_ended = true;
        queue_fill(s);
    }
    while (!s->is_done)
        pthread_cond_wait(&t->done, &t->lock);
    pthread_mutex_unlock(&t->lock);
    memcpy(md5, s->md5_out, 16);
    if (s->ck_len)
        memcpy(ck_out, s->ck_out, s->ck_len);
    return s->ck_len;
}

void
hasher_stream_destroy(struct hasher_stream *s)
{
    if (!s)
        return;
    struct hthread *t = s->t;
    pthread_mutex_lock(&t->lock);
    while (s->is_busy)
        pthread_cond_wait(&t->done, &t->lock);
    for (struct hasher_stream **pp = &t->streams; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    if (!s->is_gone) {
        t->n_streams--;
        if (s->lane >= 0)
            t->lane_used[s->lane] = false;
    }
    pthread_cond_signal(&t->work); /* the others may all be ready now */
    pthread_mutex_unlock(&t->lock);
    while (s->head) {
        struct chunk *c = s->head;
        s->head = c->next;
        chunk_put(t->h, c);
    }
    if (s->fill)
        chunk_put(t->h, s->fill);
    if (s->lane < 0)
        auth_checksum_cleanup(&s->md5);
    if (s->has_ck)
        auth_checksum_cleanup(&s->ck);
    free(s);
}

void
hasher_counts(struct hasher *h, uint64_t *n_lane, uint64_t *n_plain, uint64_t *n_pauses)
{
    *n_pauses = atomic_load(&h->n_pauses);
    *n_lane = atomic_load(&h->n_lane);
    *n_plain = atomic_load(&h->n_plain);
}

void
hasher_run_counts(struct hasher *h, uint64_t *n_runs, uint64_t *n_lane_jobs)
{
    *n_runs = atomic_load(&h->n_runs);
    *n_lane_jobs = atomic_load(&h->n_lane_jobs);
}
