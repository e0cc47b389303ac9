/*
 * op_batch.c: batch GET (POST /bucket?batch): up to 10,000 entries (key,
 * optional tar member, optional Range) answered as one chunked tar whose
 * members are the entries in request order, named "key" or "key/member".
 * Invariants: server memory per batch is its arena and a BATCH_RING_LEN
 * ring, whatever the batch; storage is read only by producer jobs on
 * workers, never by the MHD content reader (event loop), which only drains
 * the ring; a job never waits for the client. A failed entry becomes an
 * "__error__/NAME" member (ContinueOnError) or ends the stream without its
 * chunked terminator. docs/DESIGN.md "Batch GET" has the whole protocol.
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/body.h"
#include "server/errors.h"
#include "server/extents.h"
#include "server/ops.h"
#include "server/range.h"
#include "server/req.h"
#include "server/server.h"
#include "server/sse.h"
#include "server/tar.h"
#include "server/tier.h"
#include "server/util.h"
#include "server/xml_in.h"
#include "server/xml_out.h"
#include "storage/storage.h"

#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* The body: 10,000 entries of typical keys and member names fit easily. */
#define BATCH_BODY_MAX (8u << 20)
/* Bytes buffered between the producer and the client. */
#define BATCH_RING_LEN (1024u * 1024)
/* MHD asks the reader for at most this much at a time. */
#define BATCH_BLOCK_LEN (64u * 1024)
/* The producer hands the reader what it wrote after at most this much, so
 * the first bytes go out while later entries are read: a batch of small
 * samples fits the ring whole, and filling it before answering had the
 * client wait for every entry. */
#define BATCH_STEP_LEN (128u * 1024)
/* Headers of one entry: a pax header (path and size records) and the
 * ustar header, or a whole error member. */
#define BATCH_PENDING_MAX (16u * 1024)
#define BATCH_ERROR_PREFIX "__error__/"
/* Entries smaller than this are read with plain preads under a narrowed
 * pin: a storage reader's read-ahead hint (megabytes) costs more than a
 * small sample when samples are picked at random. */
#define BATCH_DIRECT_MAX (1u << 20)

enum batch_phase {
    PHASE_START,   /* open entry 'next' (or write the end-of-archive blocks) */
    PHASE_PENDING, /* write 'pending' (headers, an error member, the trailer) */
    PHASE_DATA,    /* copy the entry's bytes */
    PHASE_PAD,     /* zeros to the next 512-byte boundary */
};

struct batch {
    /* Fixed once the answer is queued. */
    struct server *srv;
    struct MHD_Connection *conn;
    struct arena *arena; /* the entries */
    struct xml_batch_request req;
    bool *is_denied;
    uint64_t bucket_id;
    char request_id[24];
    struct offload_job job;

    /* Shared by the producer and the reader, under 'lock'. */
    pthread_mutex_t lock;
    uint8_t *ring;
    size_t head;       /* first unread byte */
    size_t len;        /* unread bytes */
    bool is_running;   /* the producer is queued or running */
    bool is_suspended; /* the reader suspended the connection */
    bool is_done;      /* the producer wrote its last byte */
    bool is_failed;    /* ... and the stream must end in error */
    bool is_freed;     /* the response is gone: whoever runs last frees */

    /* The producer's own state (one job at a time). */
    enum batch_phase phase;
    size_t next;  /* entry being written */
    bool is_last; /* 'pending' is the end-of-archive trailer */
    uint8_t pending[BATCH_PENDING_MAX];
    size_t pending_len, pending_off;
    struct arena *scratch; /* the current entry's lookups */
    bool has_pin;
    uint64_t pin;
    struct storage_reader *rd;
    struct storage_extent *se; /* or preads of these (in 'scratch') */
    uint32_t n_se;
    uint64_t data_first;        /* object offset of the entry's first byte (preads) */
    const uint8_t *inline_data; /* or the bytes of an inline object */
    uint64_t data_len, data_done;
    size_t pad_left;
};

/* ======================================================================
 * Tar headers
 * ====================================================================== */

/* Writes 'v' as a NUL-terminated, zero-padded octal field of 'len' bytes;
 * false (the field untouched) when it does not fit. Digits by hand: six
 * snprintf calls per header were a visible part of a batch's CPU. */
static bool
tar_octal(uint8_t *field, size_t len, uint64_t v)
{
    if (len - 1 < 22 && (v >> (3 * (len - 1))) != 0)
        return false;
    for (size_t i = len - 1; i-- > 0; v >>= 3)
        field[i] = (uint8_t)('0' + (v & 7));
    field[len - 1] = '\0';
    return true;
}

/* Fills the 512-byte ustar header 'h' of a regular file (or of a pax
 * header when 'type' is 'x'). 'name' is cut to 100 bytes (a pax path
 * record then carries the whole); a size too large for the field is left
 * 0 (a pax size record carries it). */
static void
tar_ustar_header(uint8_t *h, struct slice name, uint64_t size, int64_t mtime_s, char type)
{
    memset(h, 0, TAR_BLOCK);
    memcpy(h, name.ptr, MIN(name.len, (size_t)100));
    tar_octal(h + 100, 8, 0644);
    tar_octal(h + 108, 8, 0);
    tar_octal(h + 116, 8, 0);
    if (!tar_octal(h + 124, 12, size))
        tar_octal(h + 124, 12, 0);
    tar_octal(h + 136, 12, mtime_s > 0 ? (uint64_t)mtime_s : 0);
    h[156] = (uint8_t)type;
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (size_t i = 0; i < TAR_BLOCK; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum & 0777777);
    h[155] = ' ';
}

/* Appends one pax record "LEN key=value\n" to 'b'. */
static void
pax_record(struct buf *b, const char *key, struct slice value)
{
    size_t body = 1 + strlen(key) + 1 + value.len + 1; /* ' ' key '=' value '\n' */
    size_t digits = 1;
    while (1) {
        size_t total = body + digits;
        size_t d = 1;
        for (size_t t = total; t >= 10; t /= 10)
            d++;
        if (d == digits)
            break;
        digits = d;
    }
    buf_printf(b, "%zu %s=", body + digits, key);
    buf_append(b, value.ptr, value.len);
    buf_append(b, "\n", 1);
}

/* Writes the headers of member 'name' ('size' bytes) at 'out' (room for
 * BATCH_PENDING_MAX bytes): a pax header when the name or the size does not
 * fit ustar, then the ustar header. Returns the bytes written. */
static size_t
tar_member_headers(uint8_t *out, struct slice name, uint64_t size, int64_t mtime_s)
{
    size_t n = 0;
    if (name.len > 100 || size > 077777777777ull) {
        struct buf rec;
        buf_init(&rec);
        if (name.len > 100)
            pax_record(&rec, "path", name);
        if (size > 077777777777ull) {
            char num[24];
            int l = snprintf(num, sizeof(num), "%" PRIu64, size);
            pax_record(&rec, "size", (struct slice){num, (size_t)l});
        }
        size_t padded = (rec.len + TAR_BLOCK - 1) / TAR_BLOCK * TAR_BLOCK;
        tar_ustar_header(out, SLICE_LIT("././@PaxHeader"), rec.len, mtime_s, 'x');
        memset(out + TAR_BLOCK, 0, padded);
        memcpy(out + TAR_BLOCK, rec.ptr, rec.len);
        n = TAR_BLOCK + padded;
        buf_cleanup(&rec);
    }
    tar_ustar_header(out + n, name, size, mtime_s, '0');
    return n + TAR_BLOCK;
}

/* ======================================================================
 * The producer
 * ====================================================================== */

/* The member name of entry 'e', in 'a': "key" or "key/member". */
static struct slice
entry_name(struct arena *a, const struct xml_batch_entry *e, const char *prefix)
{
    size_t pl = strlen(prefix);
    size_t len = pl + e->key.len + (e->member.len ? 1 + e->member.len : 0);
    char *p = arena_alloc(a, len + 1);
    memcpy(p, prefix, pl);
    memcpy(p + pl, e->key.ptr, e->key.len);
    if (e->member.len) {
        p[pl + e->key.len] = '/';
        memcpy(p + pl + e->key.len + 1, e->member.ptr, e->member.len);
    }
    p[len] = '\0';
    return (struct slice){p, len};
}

/* Releases what the current entry holds (reader, pin, lookups). */
static void
entry_close(struct batch *b)
{
    storage_reader_destroy(b->rd);
    b->rd = NULL;
    if (b->has_pin)
        storage_reader_unpin(b->srv->storage, b->pin);
    b->has_pin = false;
    b->inline_data = NULL;
    b->se = NULL;
    b->n_se = 0;
    b->data_len = b->data_done = 0;
    b->pad_left = 0;
    arena_clear(b->scratch);
}

/* Maps a member lookup's -errno to its S3 error. */
static enum s3_error
member_error(int rc)
{
    if (rc == -EILSEQ)
        return S3_ERR_INVALID_ARCHIVE;
    if (rc == -ENOENT)
        return S3_ERR_NO_SUCH_MEMBER;
    if (rc == -ENODATA)
        return S3_ERR_SLOW_DOWN;
    return s3_error_from_errno(rc);
}

/* Opens entry b->next: its bytes become the data source and its headers
 * 'pending'. Returns S3_OK, or the entry's error (nothing is held then). */
static enum s3_error
entry_open(struct batch *b)
{
    const struct xml_batch_entry *e = &b->req.entries[b->next];
    struct index_object obj;
    struct index_member m;
    struct range rg;
    enum s3_error err = S3_OK;
    if (b->is_denied[b->next])
        return S3_ERR_ACCESS_DENIED;
    if (e->key.len > INDEX_MAX_KEY)
        return S3_ERR_KEY_TOO_LONG;
    int rc = storage_reader_pin(b->srv->storage, &b->pin);
    if (rc < 0)
        return s3_error_from_errno(rc);
    b->has_pin = true;
    rc = index_object_get(b->srv->index, b->bucket_id, e->key, b->scratch, &obj);
    if (rc < 0) {
        err = rc == -ENOENT ? S3_ERR_NO_SUCH_KEY : s3_error_from_errno(rc);
        goto fail;
    }
    /* The extents of an encrypted object hold ciphertext: such entries
     * are refused, like tar members of encrypted objects (op_member.c). */
    if (sse_object_is_encrypted(&obj, b->scratch)) {
        err = S3_ERR_NOT_IMPLEMENTED;
        goto fail;
    }
    /* Tiered bytes are read through their tier (op_get.c), which batch
     * entries do not do: such entries are refused the same way. */
    if (TIER_OF(tier_object_flags(&obj)) != TIER_HOT) {
        err = S3_ERR_NOT_IMPLEMENTED;
        goto fail;
    }
    uint64_t first = 0, size = obj.size;
    int64_t mtime_s = obj.mtime_ns / 1000000000;
    if (e->member.len) {
        rc = member_find(b->srv, b->scratch, b->bucket_id, e->key, &obj, e->member, b->request_id,
                         &m);
        if (rc < 0) {
            err = member_error(rc);
            goto fail;
        }
        first = m.offset;
        size = m.size;
        mtime_s = m.mtime_s;
    }
    uint64_t len = size;
    enum range_status rs = range_parse(e->range, size, &rg);
    if (rs == RANGE_UNSATISFIABLE) {
        err = S3_ERR_INVALID_RANGE;
        goto fail;
    }
    if (rs == RANGE_OK) {
        first += rg.first;
        len = rg.last - rg.first + 1;
    }
    if (len && obj.inline_len) {
        if (first > obj.inline_len || len > obj.inline_len - first) {
            err = S3_ERR_INTERNAL_ERROR;
            goto fail;
        }
        b->inline_data = obj.inline_data + first;
    } else if (len) {
        struct storage_extent *se = arena_calloc(b->scratch, obj.n_extents + 1, sizeof(*se));
        extents_from_index(obj.extents, obj.n_extents, se);
        if (len < BATCH_DIRECT_MAX) {
            b->se = se;
            b->n_se = obj.n_extents;
            b->data_first = first;
            rc = storage_reader_narrow(b->srv->storage, b->pin, se, obj.n_extents, first, len);
        } else {
            rc = storage_reader_create(b->srv->storage, b->pin, se, obj.n_extents, first, len,
                                       &b->rd);
        }
        if (rc < 0) {
            err = s3_error_from_errno(rc);
            goto fail;
        }
    }
    b->data_len = len;
    b->data_done = 0;
    b->pad_left = (size_t)((TAR_BLOCK - len % TAR_BLOCK) % TAR_BLOCK);
    b->pending_len = tar_member_headers(b->pending, entry_name(b->scratch, e, ""), len, mtime_s);
    b->pending_off = 0;
    return S3_OK;

fail:
    entry_close(b);
    return err;
}

/* Reads up to 'len' bytes of the current entry at 'pos' (from its first
 * byte) with a pread of the extent holding them (entries below
 * BATCH_DIRECT_MAX). Returns the bytes read, or -errno. */
static ssize_t
entry_pread(struct batch *b, uint64_t pos, uint8_t *dst, size_t len)
{
    uint64_t off = b->data_first + pos, base = 0;
    for (uint32_t i = 0; i < b->n_se; i++) {
        if (off < base + b->se[i].len) {
            size_t n = (size_t)MIN((uint64_t)len, base + b->se[i].len - off);
            return storage_read(b->srv->storage, &b->se[i], off - base, dst, n);
        }
        base += b->se[i].len;
    }
    return -EIO;
}

/* Makes 'pending' the placeholder member of failed entry b->next: named
 * "__error__/NAME", holding the S3 error document of 'err'. */
static void
entry_error_member(struct batch *b, enum s3_error err)
{
    const struct xml_batch_entry *e = &b->req.entries[b->next];
    struct buf x;
    buf_init(&x);
    buf_append_str(&x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>");
    xml_elem_str(&x, "Code", s3_error_code(err));
    xml_elem_str(&x, "Message", s3_error_message(err));
    xml_elem(&x, "Key", e->key);
    if (e->member.len)
        xml_elem(&x, "Member", e->member);
    if (e->range.len)
        xml_elem(&x, "Range", e->range);
    xml_elem_str(&x, "RequestId", b->request_id);
    buf_append_str(&x, "</Error>");
    struct slice name = entry_name(b->scratch, e, BATCH_ERROR_PREFIX);
    size_t n = tar_member_headers(b->pending, name, x.len, clock_now_ns() / 1000000000);
    size_t padded = (x.len + TAR_BLOCK - 1) / TAR_BLOCK * TAR_BLOCK;
    if (n + padded <= sizeof(b->pending)) {
        memset(b->pending + n, 0, padded);
        memcpy(b->pending + n, x.ptr, x.len);
        n += padded;
    }
    b->pending_len = n;
    b->pending_off = 0;
    buf_cleanup(&x);
    log_info("request %s: batch entry %zu failed: %s", b->request_id, b->next, s3_error_code(err));
}

/* Starts entry b->next (or the trailer after the last): fills 'pending'.
 * Returns S3_OK, or the entry's error when the batch must end with it
 * (no ContinueOnError). */
static enum s3_error
entry_begin(struct batch *b)
{
    if (b->next == b->req.n_entries) {
        /* The end of the archive: two zero blocks. */
        memset(b->pending, 0, 2 * TAR_BLOCK);
        b->pending_len = 2 * TAR_BLOCK;
        b->pending_off = 0;
        b->is_last = true;
        b->phase = PHASE_PENDING;
        return S3_OK;
    }
    enum s3_error err = entry_open(b);
    if (err != S3_OK && !b->req.is_continue_on_error)
        return err;
    if (err != S3_OK)
        entry_error_member(b, err);
    b->phase = PHASE_PENDING;
    return S3_OK;
}

/* Writes up to 'cap' bytes of the stream at 'dst'. Returns the bytes
 * written; sets '*is_end' when the stream is complete and '*is_failed'
 * when it must end in error. */
static size_t
batch_produce(struct batch *b, uint8_t *dst, size_t cap, bool *is_end, bool *is_failed)
{
    size_t n = 0;
    while (n < cap) {
        switch (b->phase) {
        case PHASE_START:
            if (entry_begin(b) != S3_OK) {
                log_warn("request %s: batch ends at entry %zu (no ContinueOnError)", b->request_id,
                         b->next);
                *is_failed = *is_end = true;
                return n;
            }
            break;
        case PHASE_PENDING: {
            size_t k = MIN(cap - n, b->pending_len - b->pending_off);
            memcpy(dst + n, b->pending + b->pending_off, k);
            n += k;
            b->pending_off += k;
            if (b->pending_off < b->pending_len)
                break;
            if (b->is_last) {
                *is_end = true;
                return n;
            }
            b->phase = b->data_len ? PHASE_DATA : PHASE_PAD;
            break;
        }
        case PHASE_DATA: {
            size_t k = (size_t)MIN((uint64_t)(cap - n), b->data_len - b->data_done);
            if (b->inline_data) {
                memcpy(dst + n, b->inline_data + b->data_done, k);
            } else {
                ssize_t got = b->rd ? storage_reader_read(b->rd, b->data_done, dst + n, k)
                                    : entry_pread(b, b->data_done, dst + n, k);
                if (got <= 0) {
                    /* Part of the member is out: nothing can stand in for it. */
                    log_warn("request %s: batch entry %zu: storage read failed (%zd)",
                             b->request_id, b->next, got);
                    *is_failed = *is_end = true;
                    return n;
                }
                k = (size_t)got;
            }
            n += k;
            b->data_done += k;
            if (b->data_done == b->data_len)
                b->phase = PHASE_PAD;
            break;
        }
        case PHASE_PAD: {
            size_t k = MIN(cap - n, b->pad_left);
            memset(dst + n, 0, k);
            n += k;
            b->pad_left -= k;
            if (b->pad_left)
                break;
            entry_close(b);
            b->next++;
            b->phase = PHASE_START;
            break;
        }
        }
    }
    return n;
}

/* ======================================================================
 * The ring between producer and reader
 * ====================================================================== */

static void
batch_destroy(struct batch *b)
{
    if (!b)
        return;
    entry_close(b);
    arena_destroy(b->scratch);
    arena_destroy(b->arena);
    free(b->ring);
    pthread_mutex_destroy(&b->lock);
    free(b);
}

/* One step of the producer: writes up to BATCH_STEP_LEN bytes to the ring
 * and resumes the connection when the reader waits for them. Returns true
 * when there is more to do; false when the producer stopped (the ring is
 * full, the stream complete or the response gone): b->is_running is then
 * cleared and the batch freed if the response went away meanwhile. */
static bool
batch_step(struct batch *b)
{
    struct MHD_Connection *conn = b->conn;
    pthread_mutex_lock(&b->lock);
    size_t wpos = (b->head + b->len) % BATCH_RING_LEN;
    size_t span = MIN(BATCH_RING_LEN - b->len, BATCH_RING_LEN - wpos);
    if (b->is_freed || b->is_done || span == 0) {
        bool is_freed = b->is_freed;
        bool must_resume = b->is_suspended;
        b->is_suspended = false;
        b->is_running = false;
        pthread_mutex_unlock(&b->lock);
        if (must_resume)
            MHD_resume_connection(conn);
        if (is_freed)
            batch_destroy(b);
        return false;
    }
    pthread_mutex_unlock(&b->lock);
    bool is_end = false, is_failed = false;
    size_t n =
        batch_produce(b, b->ring + wpos, MIN(span, (size_t)BATCH_STEP_LEN), &is_end, &is_failed);
    atomic_fetch_add(&b->srv->metrics.bytes_out, n);
    pthread_mutex_lock(&b->lock);
    b->len += n;
    b->is_done = is_end;
    b->is_failed = is_failed;
    bool must_resume = b->is_suspended && (n || is_end);
    if (must_resume)
        b->is_suspended = false;
    pthread_mutex_unlock(&b->lock);
    if (must_resume)
        MHD_resume_connection(conn);
    return true;
}

/* The producer job: steps until the ring is full or the stream complete.
 * Runs with b->is_running set; frees the batch when the response went
 * away meanwhile. */
static void
batch_job(void *arg)
{
    struct batch *b = arg;
    while (batch_step(b))
        ;
}

/* MHD's content reader (event loop): copies what the ring holds; queues
 * the producer when half the ring is free; with nothing to send, suspends
 * the connection until the producer resumes it. */
static ssize_t
batch_read_cb(void *cls, uint64_t pos, char *out, size_t max)
{
    struct batch *b = cls;
    (void)pos;
    pthread_mutex_lock(&b->lock);
    for (;;) {
        if (b->len) {
            size_t k = MIN(max, MIN(b->len, BATCH_RING_LEN - b->head));
            memcpy(out, b->ring + b->head, k);
            b->head = (b->head + k) % BATCH_RING_LEN;
            b->len -= k;
            bool must_start = !b->is_running && !b->is_done && b->len <= BATCH_RING_LEN / 2;
            if (must_start)
                b->is_running = true;
            pthread_mutex_unlock(&b->lock);
            if (must_start && b->srv->offload)
                offload_submit(b->srv->offload, &b->job);
            else if (must_start)
                batch_job(b); /* a thread per connection: block here */
            return (ssize_t)k;
        }
        if (b->is_done) {
            bool is_failed = b->is_failed;
            pthread_mutex_unlock(&b->lock);
            return is_failed ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
        }
        if (!b->is_running) {
            b->is_running = true;
            pthread_mutex_unlock(&b->lock);
            if (b->srv->offload)
                offload_submit(b->srv->offload, &b->job);
            else
                batch_job(b);
            pthread_mutex_lock(&b->lock);
            continue; /* after shutdown the job ran here: its bytes are in */
        }
        b->is_suspended = true;
        MHD_suspend_connection(b->conn);
        pthread_mutex_unlock(&b->lock);
        return 0;
    }
}

static void
batch_free_cb(void *cls)
{
    struct batch *b = cls;
    pthread_mutex_lock(&b->lock);
    b->is_freed = true;
    bool is_running = b->is_running;
    pthread_mutex_unlock(&b->lock);
    if (!is_running)
        batch_destroy(b);
}

/* ======================================================================
 * The request
 * ====================================================================== */

static void
batch_end(struct s3_req *r)
{
    struct index_bucket bk;
    if (!s3_bucket_lookup(r, &bk))
        return;
    struct batch *b = xcalloc(1, sizeof(*b));
    pthread_mutex_init(&b->lock, NULL);
    b->srv = r->srv;
    b->conn = r->conn;
    b->arena = arena_create(64 * 1024);
    b->scratch = arena_create(16 * 1024);
    b->bucket_id = bk.id;
    snprintf(b->request_id, sizeof(b->request_id), "%s", r->request_id);
    b->job.fn = batch_job;
    b->job.arg = b;
    b->phase = PHASE_START;
    enum xml_in_status st =
        xml_parse_batch(r->xml_body.ptr ? r->xml_body.ptr : "", r->xml_body.len, b->arena, &b->req);
    if (st != XML_IN_OK) {
        s3_respond_error(r, S3_ERR_MALFORMED_XML,
                         st == XML_IN_TOO_MANY ? "A batch holds at most 10000 entries." : NULL);
        goto fail;
    }
    /* The route checked the caller's level; a prefix grant covers only
     * some keys, so each entry is decided on its own. */
    b->is_denied = arena_calloc(b->arena, b->req.n_entries, sizeof(*b->is_denied));
    for (size_t i = 0; i < b->req.n_entries; i++)
        b->is_denied[i] = !s3_is_allowed(r, AUTH_ACTION_READ, b->req.entries[i].key);
    /* The first entry decides between an S3 error and a 200. */
    enum s3_error err = entry_begin(b);
    if (err != S3_OK) {
        s3_respond_error(r, err, NULL);
        goto fail;
    }
    b->ring = xmalloc(BATCH_RING_LEN);
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, BATCH_BLOCK_LEN,
                                                                  batch_read_cb, b, batch_free_cb);
    if (!resp) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        goto fail;
    }
    /* One step now, on this worker, so the first bytes go out with the
     * headers; the reader queues the producer for the rest as soon as it
     * takes them, so later entries are read while these are sent. */
    b->is_running = true;
    if (batch_step(b)) {
        pthread_mutex_lock(&b->lock);
        b->is_running = false;
        pthread_mutex_unlock(&b->lock);
    }
    s3_resp_header(resp, "Content-Type", "application/x-tar");
    s3_resp_header(resp, "x-amz-batch-entries", arena_sprintf(r->arena, "%zu", b->req.n_entries));
    s3_respond(r, 200, resp);
    return;

fail:
    batch_destroy(b);
}

void
op_batch_get(struct s3_req *r)
{
    s3_req_expect_xml(r, BATCH_BODY_MAX, batch_end);
}
