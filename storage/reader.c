/*
 * reader.c: reads, read-ahead and scrubbing of extents.
 *
 * Reads use pread(2) on the volume's buffered read-only fd, bounded by the
 * extent's logical length (padding is never returned). A storage_reader
 * maps a byte range of an object onto its extents (joining those adjacent
 * on disk, so such an object is one span), for zero-copy spans or reads
 * with read-ahead, and keeps its pin narrowed to what is left to read; its
 * extents are checked against their volumes at creation.
 * Scrubbing re-reads every STORAGE_BLOCK_LEN block and compares its XXH64
 * with the sums the index kept (layout in extent_format.h), counting every
 * mismatch.
 */
#define _GNU_SOURCE
#include "storage/storage_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>
#include <xxhash.h>

/* Reads exactly 'len' bytes at 'off' of 'v' (a short file is corruption).
 * Returns 0 or -errno. */
static int
volume_pread(struct storage *st, struct storage__volume *v, uint64_t off, void *buf, size_t len)
{
    uint8_t *p = buf;
    if (storage__fault_hit(st, STORAGE_FAULT_READ))
        return -EIO;
    while (len > 0) {
        ssize_t n = pread(v->rfd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return CORRUPT_BKPT("volume shorter than an extent");
        p += n;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return 0;
}

ssize_t
storage_read(struct storage *st, const struct storage_extent *e, uint64_t off, void *buf,
             size_t len)
{
    int err = storage__extent_check(st, e);
    if (err < 0)
        return err;
    if (off >= e->len)
        return 0;
    size_t n = (size_t)MIN((uint64_t)len, e->len - off);
    if (n > SSIZE_MAX)
        n = SSIZE_MAX;
    err = volume_pread(st, storage__volume_get(st, e->volume), e->offset + off, buf, n);
    return err < 0 ? err : (ssize_t)n;
}

/* ---- readers of an object's byte range ---------------------------------- */

struct storage_reader {
    struct storage *st;
    uint64_t pin;   /* borrowed */
    uint64_t first; /* object offset of byte 0 of the reader */
    uint64_t len;
    size_t n;
    struct storage_extent *ext;
    uint64_t *starts;         /* object offset of each extent */
    uint64_t readahead_until; /* object offset already hinted */
};

int
storage_reader_create(struct storage *st, uint64_t pin, const struct storage_extent *e, size_t n,
                      uint64_t first, uint64_t len, struct storage_reader **out)
{
    int err = 0;
    struct storage_reader *rd = NULL;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (storage__extent_check(st, &e[i]) < 0)
            return -EIO;
        total += e[i].len;
    }
    if (first > total || len > total - first)
        return -ERANGE;
    err = storage__pin_narrow(st, pin, e, n, first, len, true);
    if (err < 0)
        return err;
    /* One allocation: the reader, then its extents, then their starts.
     * Extents that follow each other on disk (parts laid out in place, a
     * writer's steps grown into adjacent space) are joined, so their bytes
     * form one span: an extent continues the previous one when it starts
     * in the same volume where the previous one's bytes end, with no
     * padding between (the previous length is a multiple of STORAGE_ALIGN).
     * Empty extents are dropped. */
    rd = xcalloc(1, sizeof(*rd) + n * (sizeof(*rd->ext) + sizeof(*rd->starts)));
    rd->st = st;
    rd->pin = pin;
    rd->first = first;
    rd->len = len;
    rd->ext = (struct storage_extent *)(rd + 1);
    rd->starts = (uint64_t *)(rd->ext + n);
    uint64_t start = 0;
    for (size_t i = 0; i < n; i++) {
        struct storage_extent *prev = rd->n ? &rd->ext[rd->n - 1] : NULL;
        if (e[i].len == 0 && rd->n > 0)
            continue;
        if (prev && prev->len > 0 && prev->volume == e[i].volume &&
            prev->len % STORAGE_ALIGN == 0 && prev->offset + prev->len == e[i].offset) {
            prev->len += e[i].len;
        } else if (prev && prev->len == 0) {
            *prev = e[i];
        } else {
            rd->ext[rd->n] = e[i];
            rd->starts[rd->n] = start;
            rd->n++;
        }
        start += e[i].len;
    }
    rd->readahead_until = first;
    *out = rd;
    return 0;
}

void
storage_reader_destroy(struct storage_reader *rd)
{
    free(rd);
}

/* Returns the extent holding object offset 'off' (< the object's end): the
 * last one starting at or before it (empty extents share the next start). */
static size_t
reader_extent_at(const struct storage_reader *rd, uint64_t off)
{
    size_t lo = 0, hi = rd->n;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (rd->starts[mid] <= off)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

bool
storage_reader_is_one_span(const struct storage_reader *rd)
{
    if (rd->len == 0)
        return true;
    size_t i = reader_extent_at(rd, rd->first);
    return rd->first + rd->len <= rd->starts[i] + rd->ext[i].len;
}

int
storage_reader_span(struct storage_reader *rd, uint64_t pos, struct storage_send_span *out)
{
    if (pos >= rd->len)
        return -ERANGE;
    int err = storage__pin_touch(rd->st, rd->pin, false, 0, true);
    if (err < 0)
        return err;
    uint64_t off = rd->first + pos;
    size_t i = reader_extent_at(rd, off);
    const struct storage_extent *e = &rd->ext[i];
    uint64_t in_ext = off - rd->starts[i];
    out->fd = storage__volume_get(rd->st, e->volume)->rfd;
    out->offset = e->offset + in_ext;
    out->len = MIN(e->len - in_ext, rd->len - pos);
    return 0;
}

ssize_t
storage_reader_read(struct storage_reader *rd, uint64_t pos, void *buf, size_t len)
{
    if (pos >= rd->len)
        return 0;
    uint64_t off = rd->first + pos;
    size_t i = reader_extent_at(rd, off);
    const struct storage_extent *e = &rd->ext[i];
    struct storage__volume *v = storage__volume_get(rd->st, e->volume);
    uint64_t in_ext = off - rd->starts[i];
    uint64_t ext_left = e->len - in_ext;
    size_t n = (size_t)MIN(MIN((uint64_t)len, ext_left), rd->len - pos);
    if (n > SSIZE_MAX)
        n = SSIZE_MAX;
    if (off + STORAGE_READAHEAD_LEN / 2 > rd->readahead_until) {
        /* Hints what follows this read (the pread below fetches its own
         * bytes anyway), never past the reader's last byte: a range that
         * one pread covers hints nothing, and a 64 KiB range must not hint
         * megabytes it will not read. */
        uint64_t from = MAX(off + n, rd->readahead_until);
        uint64_t until = MIN(rd->starts[i] + e->len, rd->first + rd->len);
        if (from < until) {
            uint64_t ra = MIN((uint64_t)STORAGE_READAHEAD_LEN, until - from);
            posix_fadvise(v->rfd, (off_t)(e->offset + (from - rd->starts[i])), (off_t)ra,
                          POSIX_FADV_WILLNEED);
            rd->readahead_until = from + ra;
        }
    }
    int err = volume_pread(rd->st, v, e->offset + in_ext, buf, n);
    if (err < 0)
        return err;
    /* Checked after the read: a pin still held now was held all along, so
     * the bytes are the object's even if it was overwritten meanwhile. */
    err = storage__pin_touch(rd->st, rd->pin, true, off + n, false);
    return err < 0 ? err : (ssize_t)n;
}

size_t
storage_sums_len(const struct storage_extent *e, size_t n)
{
    size_t blocks = 0;
    for (size_t i = 0; i < n; i++)
        blocks += (size_t)((e[i].len + STORAGE_BLOCK_LEN - 1) / STORAGE_BLOCK_LEN);
    return blocks * STORAGE_SUM_LEN;
}

long
storage_verify(struct storage *st, const struct storage_extent *e, size_t n, const uint8_t *sums,
               size_t sums_len)
{
    long bad = 0;
    uint8_t *block = NULL;
    if (sums_len != storage_sums_len(e, n))
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (storage__extent_check(st, &e[i]) < 0)
            return -EIO;
    }
    block = xmalloc(STORAGE_BLOCK_LEN);
    for (size_t i = 0; i < n; i++) {
        struct storage__volume *v = storage__volume_get(st, e[i].volume);
        for (uint64_t pos = 0; pos < e[i].len; pos += STORAGE_BLOCK_LEN) {
            size_t len = (size_t)MIN((uint64_t)STORAGE_BLOCK_LEN, e[i].len - pos);
            int err = volume_pread(st, v, e[i].offset + pos, block, len);
            if (err < 0) {
                bad = err;
                goto done;
            }
            uint64_t want = 0;
            for (int k = 0; k < STORAGE_SUM_LEN; k++)
                want |= (uint64_t)sums[k] << (8 * k);
            sums += STORAGE_SUM_LEN;
            if (XXH64(block, len, STORAGE_SUM_SEED) != want) {
                CORRUPT_BKPT("block checksum mismatch");
                bad++;
            }
        }
    }
done:
    free(block);
    return bad;
}
