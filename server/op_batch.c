/*
 * op_batch.c: batch GET (POST /bucket?batch): up to 10,000 entries (key,
 * optional tar member, optional Range) answered as one chunked tar whose
 * members are the entries in request order, named "key" or "key/member".
 * Invariants: server memory per batch is its arena, a BATCH_RING_LEN ring
 * and the read-ahead window (BATCH_AHEAD_MAX entries, BATCH_BUF_LEN of
 * read buffers), whatever the batch; storage is read only by producer
 * jobs on workers, never by the MHD content reader (event loop), which
 * only drains the ring; a job never waits for the client; bytes leave in
 * request order although the reads of the window's entries complete in
 * any order. A failed entry becomes an "__error__/NAME" member
 * (ContinueOnError) or ends the stream without its chunked terminator.
 * docs/DESIGN.md "Batch GET" has the whole protocol.
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
#include "common/tar.h"
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
/* The read-ahead window. Entries are opened (pinned, looked up) up to
 * BATCH_AHEAD_MAX ahead of the one being sent, and the bytes of those
 * below BATCH_DIRECT_MAX are read into BATCH_BUF_LEN of buffers, in reads
 * of at most BATCH_CHUNK_LEN, up to BATCH_READS_MAX at once: random
 * samples not in the page cache each waited for their own disk read when
 * read one after the other. Larger entries are read when their turn comes
 * through a storage reader (read-ahead, a revocable pin), as a GET would. */
#define BATCH_AHEAD_MAX 64u
#define BATCH_READS_MAX 64u
#define BATCH_CHUNK_LEN (128u * 1024)
#define BATCH_BUF_LEN (1024u * 1024)
#define BATCH_DIRECT_MAX (1u << 20)
/* Idle ring-and-buffers blocks kept for the next batches: a fresh 2 MiB
 * block per batch was paid again in page faults, zeroed pages and
 * madvise (about a sixth of the server's CPU on 64 cached samples). */
#define BATCH_IDLE_MAX 8u

enum batch_phase {
    PHASE_START,   /* begin entry 'next' (or write the end-of-archive blocks) */
    PHASE_PENDING, /* write 'pending' (headers, an error member, the trailer) */
    PHASE_DATA,    /* copy the entry's bytes */
    PHASE_PAD,     /* zeros to the next 512-byte boundary */
};

/* An entry of the window: opened ahead of its turn. */
struct batch_open {
    enum s3_error err; /* S3_OK, or why the entry fails (nothing held then) */
    bool has_pin;
    uint64_t pin;        /* narrowed to the entry's bytes */
    struct arena *arena; /* its lookups; cleared when it is sent */
    int64_t mtime_s;
    uint64_t first; /* object offset of its first byte */
    uint64_t len;
    const uint8_t *inline_data; /* the bytes of an inline object, or */
    struct storage_extent *se;  /* the object's extents */
    uint32_t n_se;
    bool is_direct;  /* read through the queue (below BATCH_DIRECT_MAX) */
    uint64_t queued; /* bytes whose reads are prepared (is_direct) */
};

/* A read of the window, in the order of the bytes sent. */
struct batch_read {
    int slot; /* in the read queue */
    bool is_reaped;
    ssize_t got;  /* once reaped: bytes read or -errno */
    uint8_t *buf; /* in 'rbuf' */
    size_t len;   /* bytes asked */
    size_t taken; /* bytes of 'rbuf' it holds (with a skipped tail) */
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
    struct arena *scratch;     /* the current entry's name and error */
    struct storage_reader *rd; /* the current entry's bytes, when not is_direct */
    uint64_t data_len, data_done;
    size_t pad_left;

    /* The window: opens[(open_head + i) % BATCH_AHEAD_MAX] is entry
     * next + i, for i < n_open; reads[] is a FIFO of the reads of their
     * bytes in the same order, into the FIFO buffer 'rbuf'. */
    struct batch_open opens[BATCH_AHEAD_MAX];
    size_t open_head, n_open;
    struct storage_readq *readq;
    struct batch_read reads[BATCH_READS_MAX];
    size_t read_head, n_reads;
    size_t read_off; /* bytes of reads[read_head] already sent */
    uint8_t *rbuf;
    size_t rbuf_head, rbuf_used;
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
 * Ring and read buffers, reused
 * ====================================================================== */

static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
static void *idle_blocks[BATCH_IDLE_MAX];
static size_t n_idle_blocks;

/* A block of BATCH_RING_LEN + BATCH_BUF_LEN bytes: an idle one, or a new
 * one. Free it with block_put. */
static uint8_t *
block_get(void)
{
    void *p = NULL;
    pthread_mutex_lock(&idle_lock);
    if (n_idle_blocks > 0)
        p = idle_blocks[--n_idle_blocks];
    pthread_mutex_unlock(&idle_lock);
    return p ? p : xmalloc(BATCH_RING_LEN + BATCH_BUF_LEN);
}

/* Keeps 'p' for the next batch, or frees it when BATCH_IDLE_MAX are kept;
 * NULL is a no-op. */
static void
block_put(void *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&idle_lock);
    if (n_idle_blocks < BATCH_IDLE_MAX) {
        idle_blocks[n_idle_blocks++] = p;
        p = NULL;
    }
    pthread_mutex_unlock(&idle_lock);
    free(p);
}

/* ======================================================================
 * The window: entries opened ahead and the reads of their bytes
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

/* The window's entry 'i' places after the one being sent (entry next + i). */
static struct batch_open *
window_at(struct batch *b, size_t i)
{
    return &b->opens[(b->open_head + i) % BATCH_AHEAD_MAX];
}

/* Releases what 'o' holds (its pin and lookups); keeps its arena. */
static void
open_close(struct batch *b, struct batch_open *o)
{
    struct arena *a = o->arena;
    if (o->has_pin)
        storage_reader_unpin(b->srv->storage, o->pin);
    if (a)
        arena_clear(a);
    memset(o, 0, sizeof(*o));
    o->arena = a;
}

/* Opens entry 'idx' into 'o' (closed): pins, looks up the object (and the
 * member), resolves the range and narrows the pin to the entry's bytes.
 * Returns S3_OK, or the entry's error (nothing is held then). */
static enum s3_error
open_lookup(struct batch *b, size_t idx, struct batch_open *o)
{
    const struct xml_batch_entry *e = &b->req.entries[idx];
    struct index_object obj;
    struct index_member m;
    struct range rg;
    enum s3_error err = S3_OK;
    if (b->is_denied[idx])
        return S3_ERR_ACCESS_DENIED;
    if (e->key.len > INDEX_MAX_KEY)
        return S3_ERR_KEY_TOO_LONG;
    if (!o->arena)
        o->arena = arena_create(4096);
    int rc = storage_reader_pin(b->srv->storage, &o->pin);
    if (rc < 0)
        return s3_error_from_errno(rc);
    o->has_pin = true;
    rc = index_object_get(b->srv->index, b->bucket_id, e->key, o->arena, &obj);
    if (rc < 0) {
        err = rc == -ENOENT ? S3_ERR_NO_SUCH_KEY : s3_error_from_errno(rc);
        goto fail;
    }
    /* The extents of an encrypted object hold ciphertext: such entries
     * are refused, like tar members of encrypted objects (op_member.c). */
    if (sse_object_is_encrypted(&obj, o->arena)) {
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
        rc =
            member_find(b->srv, o->arena, b->bucket_id, e->key, &obj, e->member, b->request_id, &m);
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
        o->inline_data = obj.inline_data + first;
    } else if (len) {
        o->se = arena_calloc(o->arena, obj.n_extents + 1, sizeof(*o->se));
        o->n_se = obj.n_extents;
        extents_from_index(obj.extents, obj.n_extents, o->se);
        uint64_t total = 0;
        for (uint32_t i = 0; i < o->n_se; i++)
            total += o->se[i].len;
        if (first > total || len > total - first) {
            log_error("request %s: batch entry %zu: extents shorter than the object", b->request_id,
                      idx);
            err = S3_ERR_INTERNAL_ERROR;
            goto fail;
        }
        /* Unrevocable while it waits in the window; a storage reader
         * makes it revocable when a large entry's turn comes. */
        rc = storage_reader_narrow(b->srv->storage, o->pin, o->se, o->n_se, first, len);
        if (rc < 0) {
            err = s3_error_from_errno(rc);
            goto fail;
        }
        o->is_direct = len < BATCH_DIRECT_MAX;
    }
    o->first = first;
    o->len = len;
    o->mtime_s = mtime_s;
    return S3_OK;

fail:
    open_close(b, o);
    return err;
}

/* Takes 'len' (<= BATCH_CHUNK_LEN) bytes of 'rbuf' after those taken,
 * from its start when the tail is too short (the tail skipped is taken
 * too). Returns NULL when there is no room; sets '*taken'. */
static uint8_t *
rbuf_take(struct batch *b, size_t len, size_t *taken)
{
    if (b->rbuf_used == 0)
        b->rbuf_head = 0;
    size_t tail = (b->rbuf_head + b->rbuf_used) % BATCH_BUF_LEN;
    size_t skip = tail + len > BATCH_BUF_LEN ? BATCH_BUF_LEN - tail : 0;
    if (b->rbuf_used + skip + len > BATCH_BUF_LEN)
        return NULL;
    b->rbuf_used += skip + len;
    *taken = skip + len;
    return b->rbuf + (skip ? 0 : tail);
}

/* Prepares the next read of the bytes of 'o' (the newest entry of the
 * window: is_direct, with bytes not yet queued). Returns false when the
 * queue or the buffers are full. */
static bool
window_queue_read(struct batch *b, struct batch_open *o)
{
    if (b->n_reads == BATCH_READS_MAX)
        return false;
    /* open_lookup checked that the extents hold every byte. */
    uint64_t off = o->first + o->queued, base = 0;
    uint32_t i = 0;
    while (off >= base + o->se[i].len)
        base += o->se[i++].len;
    size_t len =
        (size_t)MIN(MIN((uint64_t)BATCH_CHUNK_LEN, o->len - o->queued), base + o->se[i].len - off);
    size_t taken;
    uint8_t *buf = rbuf_take(b, len, &taken);
    if (!buf)
        return false;
    struct batch_read *r = &b->reads[(b->read_head + b->n_reads) % BATCH_READS_MAX];
    *r = (struct batch_read){.buf = buf, .len = len, .taken = taken};
    r->slot = storage_readq_prep(b->readq, &o->se[i], off - base, buf, len);
    if (r->slot < 0) {
        r->got = r->slot; /* answered when its turn comes */
        r->is_reaped = true;
    }
    b->n_reads++;
    o->queued += len;
    return true;
}

/* Opens entries ahead and prepares the reads of their bytes until the
 * window is full, then submits those reads. An entry is opened only once
 * the reads of the one before are all queued, so the reads (and the
 * buffers) follow the order of the stream. */
static void
window_fill(struct batch *b)
{
    for (;;) {
        if (b->n_open > 0) {
            struct batch_open *o = window_at(b, b->n_open - 1);
            if (o->err == S3_OK && o->is_direct && o->queued < o->len) {
                if (!window_queue_read(b, o))
                    break;
                continue;
            }
        }
        if (b->n_open == BATCH_AHEAD_MAX || b->next + b->n_open == b->req.n_entries)
            break;
        struct batch_open *o = window_at(b, b->n_open);
        size_t idx = b->next + b->n_open;
        b->n_open++;
        o->err = open_lookup(b, idx, o);
    }
    storage_readq_submit(b->readq);
}

/* Copies up to 'len' bytes of the current entry's next read to 'dst',
 * waiting for the read if it is still in flight; once a read is copied
 * whole its buffer is free, and the window is refilled when it has
 * drained to half. Returns the bytes copied, or -errno. */
static ssize_t
window_copy(struct batch *b, uint8_t *dst, size_t len)
{
    if (b->n_reads == 0)
        window_fill(b);
    if (b->n_reads == 0)
        return -EIO; /* never expected: the entry has bytes left */
    struct batch_read *r = &b->reads[b->read_head];
    if (!r->is_reaped) {
        r->got = storage_readq_reap(b->readq, r->slot);
        r->is_reaped = true;
    }
    if (r->got != (ssize_t)r->len)
        return r->got < 0 ? r->got : -EIO;
    size_t k = MIN(len, r->len - b->read_off);
    memcpy(dst, r->buf + b->read_off, k);
    b->read_off += k;
    if (b->read_off == r->len) {
        b->rbuf_head = (b->rbuf_head + r->taken) % BATCH_BUF_LEN;
        b->rbuf_used -= r->taken;
        b->read_head = (b->read_head + 1) % BATCH_READS_MAX;
        b->n_reads--;
        b->read_off = 0;
        if (b->n_reads <= BATCH_READS_MAX / 2 || b->rbuf_used <= BATCH_BUF_LEN / 2)
            window_fill(b);
    }
    return (ssize_t)k;
}

/* ======================================================================
 * The producer: the entries in order
 * ====================================================================== */

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

/* Starts entry b->next (or the trailer after the last): fills 'pending'
 * and, for a large entry, creates its storage reader. Returns S3_OK, or
 * the entry's error when the batch must end with it (no ContinueOnError). */
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
    if (b->n_open <= BATCH_AHEAD_MAX / 2)
        window_fill(b);
    struct batch_open *o = window_at(b, 0);
    if (o->err == S3_OK && o->len && !o->inline_data && !o->is_direct) {
        int rc = storage_reader_create(b->srv->storage, o->pin, o->se, o->n_se, o->first, o->len,
                                       &b->rd);
        if (rc < 0) {
            open_close(b, o);
            o->err = s3_error_from_errno(rc);
        }
    }
    if (o->err != S3_OK && !b->req.is_continue_on_error)
        return o->err;
    if (o->err != S3_OK) {
        entry_error_member(b, o->err);
        b->data_len = 0;
        b->pad_left = 0;
    } else {
        const struct xml_batch_entry *e = &b->req.entries[b->next];
        b->data_len = o->len;
        b->pad_left = (size_t)((TAR_BLOCK - o->len % TAR_BLOCK) % TAR_BLOCK);
        b->pending_len =
            tar_member_headers(b->pending, entry_name(b->scratch, e, ""), o->len, o->mtime_s);
        b->pending_off = 0;
    }
    b->data_done = 0;
    b->phase = PHASE_PENDING;
    return S3_OK;
}

/* Ends entry b->next: releases what it held and moves to the next. */
static void
entry_end(struct batch *b)
{
    storage_reader_destroy(b->rd);
    b->rd = NULL;
    open_close(b, window_at(b, 0));
    b->open_head = (b->open_head + 1) % BATCH_AHEAD_MAX;
    b->n_open--;
    b->next++;
    b->data_len = b->data_done = 0;
    b->pad_left = 0;
    arena_clear(b->scratch);
}

/* True when the current entry's next bytes are at hand: inline, or the
 * next read of the window is complete. */
static bool
entry_is_ready(struct batch *b)
{
    if (window_at(b, 0)->inline_data)
        return true;
    if (b->rd || b->n_reads == 0)
        return false;
    const struct batch_read *r = &b->reads[b->read_head];
    return r->is_reaped || storage_readq_is_done(b->readq, r->slot);
}

/* Writes up to 'cap' bytes of the stream at 'dst'; with 'is_nowait', only
 * until bytes not at hand would have to be waited for. Returns the bytes
 * written; sets '*is_end' when the stream is complete and '*is_failed'
 * when it must end in error. */
static size_t
batch_produce(struct batch *b, uint8_t *dst, size_t cap, bool is_nowait, bool *is_end,
              bool *is_failed)
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
            if (is_nowait && !entry_is_ready(b))
                return n;
            const struct batch_open *o = window_at(b, 0);
            size_t k = (size_t)MIN((uint64_t)(cap - n), b->data_len - b->data_done);
            ssize_t got;
            if (o->inline_data) {
                memcpy(dst + n, o->inline_data + b->data_done, k);
                got = (ssize_t)k;
            } else if (b->rd) {
                got = storage_reader_read(b->rd, b->data_done, dst + n, k);
            } else {
                got = window_copy(b, dst + n, k);
            }
            if (got <= 0) {
                /* Part of the member is out: nothing can stand in for it. */
                log_warn("request %s: batch entry %zu: storage read failed (%zd)", b->request_id,
                         b->next, got);
                *is_failed = *is_end = true;
                return n;
            }
            n += (size_t)got;
            b->data_done += (uint64_t)got;
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
            entry_end(b);
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
    /* Reads in flight write into 'rbuf' under the window's pins. */
    storage_readq_destroy(b->readq);
    storage_reader_destroy(b->rd);
    for (size_t i = 0; i < b->n_open; i++)
        open_close(b, window_at(b, i));
    for (size_t i = 0; i < BATCH_AHEAD_MAX; i++)
        arena_destroy(b->opens[i].arena);
    arena_destroy(b->scratch);
    arena_destroy(b->arena);
    block_put(b->ring); /* 'rbuf' is its second part */
    pthread_mutex_destroy(&b->lock);
    free(b);
}

/* One step of the producer: writes up to BATCH_STEP_LEN bytes to the ring
 * ('is_nowait': only those at hand, see batch_produce; '*len' says how
 * many) and resumes the connection when the reader waits for them.
 * Returns true when there is more to do; false when the producer stopped
 * (the ring is full, the stream complete or the response gone):
 * b->is_running is then cleared and the batch freed if the response went
 * away meanwhile. */
static bool
batch_step(struct batch *b, bool is_nowait, size_t *len)
{
    struct MHD_Connection *conn = b->conn;
    pthread_mutex_lock(&b->lock);
    size_t wpos = (b->head + b->len) % BATCH_RING_LEN;
    size_t span = MIN(BATCH_RING_LEN - b->len, BATCH_RING_LEN - wpos);
    *len = 0;
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
    size_t n = batch_produce(b, b->ring + wpos, MIN(span, (size_t)BATCH_STEP_LEN), is_nowait,
                             &is_end, &is_failed);
    *len = n;
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
    size_t len;
    while (batch_step(b, false, &len))
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
    /* Reads still in flight (the client went away mid-stream) are waited
     * for on a worker, never here on the event loop. The producer's state
     * is read safely: no job runs. */
    bool must_queue = !is_running && b->n_reads > 0 && b->srv->offload;
    if (must_queue)
        b->is_running = true;
    pthread_mutex_unlock(&b->lock);
    if (must_queue)
        offload_submit(b->srv->offload, &b->job); /* batch_step frees it */
    else if (!is_running)
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
    b->scratch = arena_create(4096);
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
    if (storage_readq_create(b->srv->storage, BATCH_READS_MAX, &b->readq) < 0) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        goto fail;
    }
    b->ring = block_get();
    b->rbuf = b->ring + BATCH_RING_LEN;
    /* The first entry decides between an S3 error and a 200. */
    enum s3_error err = entry_begin(b);
    if (err != S3_OK) {
        s3_respond_error(r, err, NULL);
        goto fail;
    }
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, BATCH_BLOCK_LEN,
                                                                  batch_read_cb, b, batch_free_cb);
    if (!resp) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        goto fail;
    }
    /* Steps now, on this worker, for as long as the bytes are at hand
     * (inline, or their reads complete: a batch of cached samples is
     * written whole here, with no hop to a worker and back per step), so
     * the first bytes go out with the headers; the reader queues the
     * producer for the rest as soon as it takes them, so later entries are
     * read while these are sent. */
    b->is_running = true;
    bool is_more;
    size_t len;
    do
        is_more = batch_step(b, true, &len);
    while (is_more && len > 0);
    if (is_more) {
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
