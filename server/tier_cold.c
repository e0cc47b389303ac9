/*
 * tier_cold.c: the local cold tier, one implementation of struct
 * tier_ops (tier.h). Its bytes live in a second volume set (storage/,
 * opened on cold_dir), one blob per object in the format of
 * cold_format.h: zstd-compressed blocks of cold_block_size plain bytes
 * (raw when incompressible), an entry per block, a footer. Each blob
 * records its block length, so changing the setting affects new blobs.
 *
 * Space is storage/'s: free space is rebuilt at startup from the extents
 * the index references (mark_used/ready), so a blob written but never
 * published is free after a crash, and freed blobs wait for reader pins
 * (deferred reclaim) like hot extents. A read maps its range to blocks
 * and reads and decompresses only those (the last one decoded is kept
 * for the next call of a streamed GET); every entry and block is checked
 * against its xxh64 and storage keeps its own sums of the stored bytes.
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/cold_format.h"
#include "server/extents.h"
#include "server/tier.h"
#include "storage/storage.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

struct cold_tier {
    struct tier base;
    struct storage *st;
    int level;
    uint32_t block_len; /* plain bytes per block of new blobs */
};

struct tier_reader {
    struct cold_tier *t;
    struct storage_extent *se;
    size_t n_se;
    uint64_t blob_len;
    struct cold_footer f;
    uint64_t first, len;
    struct cold_codec *codec;
    uint8_t *stored; /* one stored block */
    uint8_t *plain;  /* one decoded block */
    int64_t cached;  /* index of the block in 'plain', -1: none */
};

/* Reads 'len' bytes at blob offset 'pos' across the extents 'se'.
 * Returns 0 or -errno (-EIO on a short read). */
static int
blob_read(struct storage *st, const struct storage_extent *se, size_t n, uint64_t pos, void *buf,
          size_t len)
{
    uint8_t *p = buf;
    uint64_t start = 0;
    for (size_t i = 0; i < n && len > 0; i++) {
        uint64_t end = start + se[i].len;
        while (pos >= start && pos < end && len > 0) {
            size_t want = (size_t)MIN((uint64_t)len, end - pos);
            ssize_t got = storage_read(st, &se[i], pos - start, p, want);
            if (got <= 0)
                return got < 0 ? (int)got : -EIO;
            p += got;
            pos += (uint64_t)got;
            len -= (size_t)got;
        }
        start = end;
    }
    return len == 0 ? 0 : -EIO;
}

/* ---- writing ------------------------------------------------------------ */

static int
cold_put(struct tier *base, uint64_t size, tier_source_fn src, void *src_ctx, struct arena *a,
         struct index_object *out)
{
    struct cold_tier *t = (struct cold_tier *)base;
    struct storage_writer *w = NULL;
    struct cold_codec *codec = cold_codec_create(t->level);
    uint32_t bl = t->block_len;
    uint64_t n_blocks = size / bl + (size % bl != 0);
    size_t cap = cold_block_bound(bl);
    uint8_t *plain = xmalloc(bl);
    uint8_t *stored = xmalloc(cap);
    uint8_t *table = NULL;
    uint64_t off = 0;
    int rc;

    if (n_blocks > UINT32_MAX) {
        rc = -EFBIG;
        goto fail;
    }
    table = xmalloc(n_blocks ? n_blocks * COLD_ENTRY_LEN : 1);
    if ((rc = storage_writer_create(t->st, UINT64_MAX, &w)) < 0)
        goto fail;
    for (uint64_t b = 0; b < n_blocks; b++) {
        size_t plen = (size_t)MIN((uint64_t)bl, size - b * bl);
        size_t got = 0;
        while (got < plen) {
            ssize_t n = src(src_ctx, b * bl + got, plain + got, plen - got);
            if (n <= 0) {
                rc = n < 0 ? (int)n : -EIO;
                goto fail;
            }
            got += (size_t)n;
        }
        struct cold_entry e;
        if ((rc = cold_block_encode(codec, plain, plen, stored, cap, &e)) < 0)
            goto fail;
        e.stored_off = off;
        if ((rc = storage_writer_write(w, stored, e.stored_len)) < 0)
            goto fail;
        off += e.stored_len;
        cold_entry_format(&e, (uint32_t)b, table + b * COLD_ENTRY_LEN);
    }
    struct cold_footer f = {
        .block_len = bl, .n_blocks = (uint32_t)n_blocks, .size = size, .table_off = off};
    uint8_t foot[COLD_FOOTER_LEN];
    cold_footer_format(&f, foot);
    if ((rc = storage_writer_write(w, table, n_blocks * COLD_ENTRY_LEN)) < 0 ||
        (rc = storage_writer_write(w, foot, sizeof(foot))) < 0 ||
        (rc = storage_writer_finish(w)) < 0)
        goto fail;
    const struct storage_extent *se;
    size_t n = storage_writer_extents(w, &se);
    struct index_extent *ie = extents_to_index(a, se, n);
    for (size_t i = 0; i < n; i++)
        ie[i].flags = TIER_FLAGS(TIER_COLD, 0);
    size_t sums_len;
    const uint8_t *sums = storage_writer_sums(w, &sums_len);
    uint8_t *sums_copy = arena_alloc(a, sums_len ? sums_len : 1);
    memcpy(sums_copy, sums, sums_len);
    out->extents = ie;
    out->n_extents = (uint32_t)n;
    out->sums = sums_copy;
    out->sums_len = sums_len;
    storage_writer_destroy(w, true);
    w = NULL;

fail:
    storage_writer_destroy(w, false);
    free(table);
    free(stored);
    free(plain);
    cold_codec_destroy(codec);
    return rc;
}

/* Durability of the puts so far: one fdatasync per cold volume written. */
static int
cold_sync(struct tier *base)
{
    return storage_sync(((struct cold_tier *)base)->st);
}

/* ---- reading ------------------------------------------------------------ */

static void
cold_reader_destroy(struct tier_reader *rd)
{
    if (!rd)
        return;
    cold_codec_destroy(rd->codec);
    free(rd->stored);
    free(rd->plain);
    free(rd->se);
    free(rd);
}

static int
cold_reader_create(struct tier *base, uint64_t pin, const struct index_object *obj, uint64_t first,
                   uint64_t len, struct tier_reader **out)
{
    struct cold_tier *t = (struct cold_tier *)base;
    struct tier_reader *rd = xcalloc(1, sizeof(*rd));
    uint8_t foot[COLD_FOOTER_LEN];
    int rc;

    rd->t = t;
    rd->n_se = obj->n_extents;
    rd->se = xcalloc(obj->n_extents + 1, sizeof(*rd->se));
    extents_from_index(obj->extents, obj->n_extents, rd->se);
    for (size_t i = 0; i < rd->n_se; i++)
        rd->blob_len += rd->se[i].len;
    rd->first = first;
    rd->len = len;
    rd->cached = -1;
    /* The whole blob stays held: blocks are read in any order. */
    if ((rc = storage_reader_narrow(t->st, pin, rd->se, rd->n_se, 0, rd->blob_len)) < 0)
        goto fail;
    if (rd->blob_len < COLD_FOOTER_LEN) {
        rc = -EILSEQ;
        goto fail;
    }
    if ((rc = blob_read(t->st, rd->se, rd->n_se, rd->blob_len - COLD_FOOTER_LEN, foot,
                        sizeof(foot))) < 0 ||
        (rc = cold_footer_parse(foot, rd->blob_len, &rd->f)) < 0)
        goto fail;
    if (rd->f.size != obj->size || first > rd->f.size || len > rd->f.size - first) {
        rc = -EILSEQ;
        goto fail;
    }
    rd->codec = cold_codec_create(t->level);
    rd->plain = xmalloc(rd->f.block_len);
    rd->stored = xmalloc(cold_block_bound(rd->f.block_len));
    *out = rd;
    return 0;

fail:
    if (rc == -EILSEQ)
        log_error("cold tier: a blob fails its format checks");
    cold_reader_destroy(rd);
    return rc;
}

/* Decodes block 'b' into rd->plain (unless it is there already). */
static int
load_block(struct tier_reader *rd, uint32_t b)
{
    if (rd->cached == (int64_t)b)
        return 0;
    rd->cached = -1;
    uint8_t eb[COLD_ENTRY_LEN];
    struct cold_entry e;
    int rc = blob_read(rd->t->st, rd->se, rd->n_se, rd->f.table_off + (uint64_t)b * COLD_ENTRY_LEN,
                       eb, sizeof(eb));
    if (rc == 0)
        rc = cold_entry_parse(eb, b, &rd->f, &e);
    if (rc == 0)
        rc = blob_read(rd->t->st, rd->se, rd->n_se, e.stored_off, rd->stored, e.stored_len);
    if (rc == 0)
        rc = cold_block_decode(rd->codec, &e, rd->stored, rd->plain,
                               cold_block_plain_len(&rd->f, b));
    if (rc == -EILSEQ)
        log_error("cold tier: block %u fails its checksum", b);
    if (rc == 0)
        rd->cached = b;
    return rc;
}

static ssize_t
cold_read(struct tier_reader *rd, uint64_t pos, void *buf, size_t len)
{
    if (pos >= rd->len)
        return 0;
    size_t done = 0;
    len = (size_t)MIN((uint64_t)len, rd->len - pos);
    while (done < len) {
        uint64_t at = rd->first + pos + done;
        uint32_t b = (uint32_t)(at / rd->f.block_len);
        int rc = load_block(rd, b);
        if (rc < 0)
            return done ? (ssize_t)done : rc;
        uint64_t in_block = at - (uint64_t)b * rd->f.block_len;
        size_t n = (size_t)MIN((uint64_t)(len - done), cold_block_plain_len(&rd->f, b) - in_block);
        memcpy((uint8_t *)buf + done, rd->plain + in_block, n);
        done += n;
    }
    return (ssize_t)done;
}

/* ---- space and pins ----------------------------------------------------- */

static void
cold_release(struct tier *base, const struct index_extent *e, size_t n)
{
    struct cold_tier *t = (struct cold_tier *)base;
    struct storage_extent *se = xcalloc(n + 1, sizeof(*se));
    extents_from_index(e, n, se);
    storage_release(t->st, se, n);
    free(se);
}

static int
cold_mark_used(struct tier *base, const struct index_extent *e)
{
    struct cold_tier *t = (struct cold_tier *)base;
    struct storage_extent se;
    extents_from_index(e, 1, &se);
    return storage_mark_used(t->st, &se);
}

static int
cold_ready(struct tier *base)
{
    return storage_ready(((struct cold_tier *)base)->st);
}

static int
cold_pin(struct tier *base, uint64_t *pin)
{
    return storage_reader_pin(((struct cold_tier *)base)->st, pin);
}

static void
cold_unpin(struct tier *base, uint64_t pin)
{
    storage_reader_unpin(((struct cold_tier *)base)->st, pin);
}

static void
cold_space(struct tier *base, struct tier_space *out)
{
    struct storage_stats s;
    storage_stats_get(((struct cold_tier *)base)->st, &s);
    out->total_bytes = s.total_bytes;
    out->used_bytes = s.total_bytes - s.free_bytes;
}

/* Scrub: storage's own sums of the stored bytes (the record's sums are
 * the cold writer's), then nothing more: a block's plain sum is checked
 * on every read. */
static long
cold_verify(struct tier *base, uint64_t pin, const struct index_object *obj)
{
    struct cold_tier *t = (struct cold_tier *)base;
    struct storage_extent *se = xcalloc(obj->n_extents + 1, sizeof(*se));
    extents_from_index(obj->extents, obj->n_extents, se);
    long bad = storage_reader_narrow(t->st, pin, se, obj->n_extents, 0, UINT64_MAX);
    if (bad == 0)
        bad = storage_verify(t->st, se, obj->n_extents, obj->sums, obj->sums_len);
    free(se);
    return bad;
}

static void
cold_destroy(struct tier *base)
{
    struct cold_tier *t = (struct cold_tier *)base;
    if (!t)
        return;
    storage_close(t->st);
    free(t);
}

static const struct tier_ops cold_ops = {
    .put = cold_put,
    .sync = cold_sync,
    .reader_create = cold_reader_create,
    .read = cold_read,
    .reader_destroy = cold_reader_destroy,
    .release = cold_release,
    .mark_used = cold_mark_used,
    .ready = cold_ready,
    .pin = cold_pin,
    .unpin = cold_unpin,
    .space = cold_space,
    .sweep = NULL,
    .verify = cold_verify,
    .settle = NULL,
    .destroy = cold_destroy,
};

int
tier_cold_open(const struct tier_cold_config *cfg, struct tier **out)
{
    struct cold_tier *t = xcalloc(1, sizeof(*t));
    t->base.ops = &cold_ops;
    t->base.id = TIER_COLD;
    snprintf(t->base.name, sizeof(t->base.name), "COLD");
    t->level = cfg->zstd_level;
    t->block_len = cfg->block_len;
    if (t->block_len < COLD_BLOCK_LEN_MIN || t->block_len > COLD_BLOCK_LEN_MAX ||
        (t->block_len & (t->block_len - 1)) != 0) {
        free(t);
        return -EINVAL;
    }
    struct storage_config sc = {
        .dir = cfg->dir,
        .volume_size = cfg->volume_size,
        .max_volumes = cfg->max_volumes,
        .write_buffer_total = 8u << 20,
        .is_direct = true,
        .is_sparse = true, /* a cold tier no rule uses costs no disk */
        .max_pins = cfg->max_pins,
        .pin_timeout_ms = 0,
    };
    int rc = 0;
    if (mkdir(cfg->dir, 0700) == 0)
        rc = dir_sync_parent(cfg->dir);
    else if (errno != EEXIST)
        rc = -errno;
    if (rc == 0)
        rc = storage_open(&t->st, &sc);
    if (rc < 0) {
        free(t);
        return rc;
    }
    *out = &t->base;
    return 0;
}
