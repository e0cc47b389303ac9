/*
 * tier.c: the tier set and object moves between tiers (contract in
 * tier.h).
 *
 * The set maps storage class names to extent flags (STANDARD_IA and
 * GLACIER_IR follow tier_standard_ia / tier_glacier_ir, COLD by default)
 * and dispatches by TIER_OF(flags) to the implementations; nothing here
 * knows what a tier is made of. tier_move copies an object from where it
 * is (hot extents, inline bytes, or a tier) to its new tier, durable,
 * then publishes the new extents with one INDEX_OP_SET_EXTENTS checked
 * against the version read; the commit's freed list returns the old
 * extents (commit.c hands tier extents back through tier_release).
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/commit.h"
#include "server/extents.h"
#include "server/server.h"
#include "server/sse.h"
#include "server/tier.h"
#include "storage/storage.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOVE_BUF_LEN (1u << 20)

struct tier_set {
    struct server *srv;
    struct tier *tiers[TIER_MAX]; /* [TIER_HOT] stays NULL: storage/ directly */
    uint32_t ia_tier;             /* the tiers STANDARD_IA and GLACIER_IR map to */
    uint32_t glacier_tier;
    pthread_mutex_t mu;
    struct tier_stats stats;
};

/* ---- classes ------------------------------------------------------------ */

/* The tier whose own class is 'name', or TIER_MAX. */
static uint32_t
tier_by_name(const struct tier_set *ts, struct slice name)
{
    for (uint32_t i = 1; i < TIER_MAX; i++)
        if (ts->tiers[i] &&
            slice_eq(name, (struct slice){ts->tiers[i]->name, strlen(ts->tiers[i]->name)}))
            return i;
    return TIER_MAX;
}

int
tier_class_parse(const struct tier_set *ts, struct slice name, uint32_t *flags)
{
    uint32_t t;
    if (slice_eq(name, SLICE_LIT("STANDARD"))) {
        *flags = 0;
        return 0;
    }
    if (slice_eq(name, SLICE_LIT("STANDARD_IA")) && ts->ia_tier < TIER_MAX) {
        *flags = TIER_FLAGS(ts->ia_tier, TIER_CLASS_STANDARD_IA);
        return 0;
    }
    if (slice_eq(name, SLICE_LIT("GLACIER_IR")) && ts->glacier_tier < TIER_MAX) {
        *flags = TIER_FLAGS(ts->glacier_tier, TIER_CLASS_GLACIER_IR);
        return 0;
    }
    if ((t = tier_by_name(ts, name)) < TIER_MAX) {
        *flags = TIER_FLAGS(t, TIER_CLASS_OWN);
        return 0;
    }
    return -EINVAL;
}

const char *
tier_class_name(const struct tier_set *ts, uint32_t flags)
{
    uint32_t t = TIER_OF(flags);
    if (t == TIER_HOT)
        return "STANDARD";
    if (TIER_CLASS_OF(flags) == TIER_CLASS_STANDARD_IA)
        return "STANDARD_IA";
    if (TIER_CLASS_OF(flags) == TIER_CLASS_GLACIER_IR)
        return "GLACIER_IR";
    return t < TIER_MAX && ts->tiers[t] ? ts->tiers[t]->name : "STANDARD";
}

const char *
tier_name(const struct tier_set *ts, uint32_t id)
{
    return id < TIER_MAX && ts->tiers[id] ? ts->tiers[id]->name : NULL;
}

bool
tier_reads_wait(const struct tier_set *ts, uint32_t id)
{
    return id < TIER_MAX && ts->tiers[id] && ts->tiers[id]->reads_wait;
}

uint32_t
tier_object_flags(const struct index_object *obj)
{
    return obj->n_extents ? obj->extents[0].flags : 0;
}

/* ---- opening ------------------------------------------------------------ */

int
tier_set_open(struct server *srv)
{
    struct tier_set *ts = xcalloc(1, sizeof(*ts));
    char dir[4200];
    ts->srv = srv;
    pthread_mutex_init(&ts->mu, NULL);
    if (srv->cfg.cold_dir[0])
        snprintf(dir, sizeof(dir), "%s", srv->cfg.cold_dir);
    else
        snprintf(dir, sizeof(dir), "%s/cold", srv->cfg.data_dir);
    struct tier_cold_config cc = {
        .dir = dir,
        .volume_size = srv->cfg.cold_volume_size ? srv->cfg.cold_volume_size : srv->cfg.volume_size,
        .max_volumes = srv->cfg.cold_max_volumes ? srv->cfg.cold_max_volumes : srv->cfg.max_volumes,
        .zstd_level = (int)srv->cfg.cold_zstd_level,
        .block_len = srv->cfg.cold_block_size,
        .max_pins = srv->cfg.reader_pins_max,
    };
    int rc = tier_cold_open(&cc, &ts->tiers[TIER_COLD]);
    if (rc < 0) {
        log_error("cannot open the cold tier in %s: %s", dir, strerror(-rc));
        goto fail;
    }
    if (srv->cfg.remote_tier_endpoint[0]) {
        if (!srv->cfg.remote_tier_class[0] || strcmp(srv->cfg.remote_tier_class, "COLD") == 0 ||
            strcmp(srv->cfg.remote_tier_class, "STANDARD") == 0) {
            log_error("remote_tier_class must name the remote tier's own storage class");
            rc = -EINVAL;
            goto fail;
        }
        if ((rc = tier_remote_open(srv, &ts->tiers[TIER_REMOTE])) < 0) {
            log_error("cannot open the remote tier at %s: %s", srv->cfg.remote_tier_endpoint,
                      strerror(-rc));
            goto fail;
        }
    }
    const char *maps[2] = {srv->cfg.tier_standard_ia, srv->cfg.tier_glacier_ir};
    uint32_t *outs[2] = {&ts->ia_tier, &ts->glacier_tier};
    for (int i = 0; i < 2; i++) {
        *outs[i] = tier_by_name(ts, (struct slice){maps[i], strlen(maps[i])});
        if (*outs[i] == TIER_MAX) {
            log_error("tier_%s names no tier: %s", i ? "glacier_ir" : "standard_ia", maps[i]);
            rc = -EINVAL;
            goto fail;
        }
    }
    srv->tiers = ts;
    return 0;

fail:
    tier_set_close(ts);
    return rc;
}

void
tier_set_close(struct tier_set *ts)
{
    if (!ts)
        return;
    for (uint32_t i = 0; i < TIER_MAX; i++)
        if (ts->tiers[i])
            ts->tiers[i]->ops->destroy(ts->tiers[i]);
    pthread_mutex_destroy(&ts->mu);
    free(ts);
}

int
tier_mark_used(struct tier_set *ts, const struct index_extent *e)
{
    uint32_t t = TIER_OF(e->flags);
    if (t == TIER_HOT || t >= TIER_MAX || !ts->tiers[t])
        return -EINVAL;
    return ts->tiers[t]->ops->mark_used ? ts->tiers[t]->ops->mark_used(ts->tiers[t], e) : 0;
}

int
tier_set_ready(struct tier_set *ts)
{
    for (uint32_t i = 0; i < TIER_MAX; i++) {
        if (ts->tiers[i] && ts->tiers[i]->ops->ready) {
            int rc = ts->tiers[i]->ops->ready(ts->tiers[i]);
            if (rc < 0)
                return rc;
        }
    }
    return 0;
}

/* ---- pins, readers, release --------------------------------------------- */

int
tier_pins_take(struct tier_set *ts, struct tier_pins *p)
{
    p->held = 0;
    for (uint32_t i = 0; i < TIER_MAX; i++) {
        if (!ts->tiers[i] || !ts->tiers[i]->ops->pin)
            continue;
        int rc = ts->tiers[i]->ops->pin(ts->tiers[i], &p->pin[i]);
        if (rc < 0) {
            tier_pins_drop(ts, p, TIER_MAX);
            return rc;
        }
        p->held |= 1u << i;
    }
    return 0;
}

void
tier_pins_drop(struct tier_set *ts, struct tier_pins *p, uint32_t keep)
{
    for (uint32_t i = 0; i < TIER_MAX; i++) {
        if (i == keep || !(p->held & (1u << i)))
            continue;
        ts->tiers[i]->ops->unpin(ts->tiers[i], p->pin[i]);
        p->held &= ~(1u << i);
    }
}

/* A reader of the set: the implementation's reader and its tier. */
struct tier_set_reader {
    struct tier *t;
    struct tier_reader *rd;
};

int
tier_reader_create(struct tier_set *ts, const struct tier_pins *p, const struct index_object *obj,
                   uint64_t first, uint64_t len, struct tier_reader **out)
{
    return tier_reader_create_stored(ts, p, obj, obj->size, first, len, out);
}

int
tier_reader_create_stored(struct tier_set *ts, const struct tier_pins *p,
                          const struct index_object *obj, uint64_t stored_len, uint64_t first,
                          uint64_t len, struct tier_reader **out)
{
    uint32_t id = TIER_OF(tier_object_flags(obj));
    if (id == TIER_HOT || id >= TIER_MAX || !ts->tiers[id])
        return -EINVAL;
    struct tier *t = ts->tiers[id];
    if (t->ops->pin && !(p->held & (1u << id)))
        return -ESTALE;
    struct tier_set_reader *sr = xcalloc(1, sizeof(*sr));
    sr->t = t;
    /* The tier sees an object of the bytes it stores (an implementation
     * keeps nothing of 'obj' past reader_create). */
    struct index_object stored = *obj;
    stored.size = stored_len;
    int rc = t->ops->reader_create(t, p->pin[id], &stored, first, len, &sr->rd);
    if (rc < 0) {
        free(sr);
        return rc;
    }
    *out = (struct tier_reader *)sr;
    return 0;
}

ssize_t
tier_reader_read(struct tier_reader *rd, uint64_t pos, void *buf, size_t len)
{
    struct tier_set_reader *sr = (struct tier_set_reader *)rd;
    return sr->t->ops->read(sr->rd, pos, buf, len);
}

void
tier_reader_destroy(struct tier_reader *rd)
{
    struct tier_set_reader *sr = (struct tier_set_reader *)rd;
    if (!sr)
        return;
    sr->t->ops->reader_destroy(sr->rd);
    free(sr);
}

long
tier_verify(struct tier_set *ts, const struct tier_pins *p, const struct index_object *obj)
{
    uint32_t id = TIER_OF(tier_object_flags(obj));
    if (id == TIER_HOT || id >= TIER_MAX || !ts->tiers[id])
        return -EINVAL;
    struct tier *t = ts->tiers[id];
    if (!t->ops->verify)
        return 0;
    if (t->ops->pin && !(p->held & (1u << id)))
        return -ESTALE;
    return t->ops->verify(t, p->pin[id], obj);
}

void
tier_release(struct tier_set *ts, const struct index_extent *e, size_t n)
{
    /* Runs of one tier at a time (an object's extents are all in one). */
    size_t i = 0;
    while (i < n) {
        size_t j = i + 1;
        uint32_t id = TIER_OF(e[i].flags);
        while (j < n && TIER_OF(e[j].flags) == id)
            j++;
        if (id != TIER_HOT && id < TIER_MAX && ts->tiers[id])
            ts->tiers[id]->ops->release(ts->tiers[id], e + i, j - i);
        i = j;
    }
}

void
tier_stats_get(struct tier_set *ts, struct tier_stats *st, struct tier_space *space)
{
    pthread_mutex_lock(&ts->mu);
    *st = ts->stats;
    pthread_mutex_unlock(&ts->mu);
    for (uint32_t i = 0; i < TIER_MAX; i++) {
        space[i] = (struct tier_space){0};
        if (ts->tiers[i])
            ts->tiers[i]->ops->space(ts->tiers[i], &space[i]);
    }
}

/* ---- moves -------------------------------------------------------------- */

/* Where a move reads the object's current bytes. */
struct move_source {
    const struct index_object *obj;
    struct storage_reader *hot;
    struct tier_reader *tier;
    uint32_t crash_at; /* test_tier_crash_at */
};

/* Tests only (test_tier_crash_at): dies as kill -9 would at 'point'. */
static void
crash_point(uint32_t crash_at, uint32_t point)
{
    if (crash_at == point) {
        log_warn("test_tier_crash_at = %u: killing the process", point);
        raise(SIGKILL);
    }
}

static ssize_t
move_read(void *ctx, uint64_t pos, void *buf, size_t len)
{
    struct move_source *s = ctx;
    if (pos >= s->obj->size / 2)
        crash_point(s->crash_at, 1); /* half of the tier copy written */
    if (s->obj->inline_len) {
        if (pos >= s->obj->inline_len)
            return 0;
        size_t n = (size_t)MIN((uint64_t)len, s->obj->inline_len - pos);
        memcpy(buf, s->obj->inline_data + pos, n);
        return (ssize_t)n;
    }
    if (s->hot)
        return storage_reader_read(s->hot, pos, buf, len);
    if (s->tier)
        return tier_reader_read(s->tier, pos, buf, len);
    return 0;
}

/* Writes the object back into the hot volumes (a move to STANDARD). */
static int
hot_put(struct server *srv, uint64_t size, struct move_source *src, struct arena *a,
        struct storage_writer **w, struct index_object *out)
{
    int rc = storage_writer_create(srv->storage, size, w);
    uint8_t *buf = xmalloc(MOVE_BUF_LEN);
    uint64_t pos = 0;
    while (rc == 0 && pos < size) {
        ssize_t n = move_read(src, pos, buf, (size_t)MIN((uint64_t)MOVE_BUF_LEN, size - pos));
        if (n <= 0) {
            rc = n < 0 ? (int)n : -EIO;
            break;
        }
        rc = storage_writer_write(*w, buf, (size_t)n);
        pos += (uint64_t)n;
    }
    free(buf);
    if (rc == 0)
        rc = storage_writer_finish(*w);
    if (rc < 0)
        return rc;
    const struct storage_extent *se;
    size_t n = storage_writer_extents(*w, &se);
    size_t sums_len;
    const uint8_t *sums = storage_writer_sums(*w, &sums_len);
    uint8_t *copy = arena_alloc(a, sums_len ? sums_len : 1);
    memcpy(copy, sums, sums_len);
    out->extents = extents_to_index(a, se, n);
    out->n_extents = (uint32_t)n;
    out->sums = copy;
    out->sums_len = sums_len;
    return 0;
}

static void
count_move(struct tier_set *ts, int rc, uint64_t len)
{
    pthread_mutex_lock(&ts->mu);
    if (rc > 0) {
        ts->stats.objects_moved++;
        ts->stats.bytes_moved += len;
    } else if (rc < 0 && rc != -ESTALE && rc != -ENOENT) {
        ts->stats.errors++;
    }
    pthread_mutex_unlock(&ts->mu);
}

/* One object of a move batch, from its lookup to its commit. */
struct move_job {
    struct tier_move_item *item;
    struct arena *a;
    struct tier_pins tp;
    uint64_t pin;
    bool has_pin, is_ready, is_published;
    struct move_source src;
    struct storage_writer *w;
    struct tier *target;
    struct index_object obj, moved;
};

/*
 * Pins, looks up and copies 'j->item' to its target (not yet synced for
 * a tier with a sync step). Returns 0 with j->is_ready when a commit
 * must follow, 0 when the object is already there, or -errno.
 */
static int
move_prepare(struct server *srv, struct move_job *j)
{
    struct tier_set *ts = srv->tiers;
    struct tier_move_item *it = j->item;
    uint32_t to = TIER_OF(it->flags);
    int rc;

    if (to >= TIER_MAX || (to != TIER_HOT && !ts->tiers[to]))
        return -EINVAL;
    j->target = to == TIER_HOT ? NULL : ts->tiers[to];
    j->src.crash_at = srv->cfg.test_tier_crash_at;
    /* Pins before the lookup: the extents found stay readable even if
     * the object is overwritten or deleted while we copy it. */
    if ((rc = storage_reader_pin(srv->storage, &j->pin)) < 0)
        return rc;
    j->has_pin = true;
    if ((rc = tier_pins_take(ts, &j->tp)) < 0)
        return rc;
    rc = it->has_version_id ? index_object_version_get(srv->index, it->bucket_id, it->key,
                                                       it->version_id, j->a, &j->obj)
                            : index_object_get(srv->index, it->bucket_id, it->key, j->a, &j->obj);
    if (rc < 0)
        return rc;
    if (j->obj.version_flags & INDEX_VERSION_MARKER)
        return -ENOENT;
    if (memcmp(j->obj.etag, it->etag, 16) != 0)
        return -ESTALE;
    /* The bytes moved are the stored ones: an encrypted object's packages,
     * ciphertext as they are (sse.c reads them through the tier). */
    uint64_t stored;
    if ((rc = sse_stored_size(&j->obj, j->a, &stored)) < 0)
        return rc;
    uint32_t from = TIER_OF(tier_object_flags(&j->obj));
    if (tier_object_flags(&j->obj) == it->flags || (to == TIER_HOT && from == TIER_HOT))
        return 0; /* already there (inline and empty objects are hot) */
    j->src.obj = &j->obj;
    if (from != TIER_HOT) {
        rc = tier_reader_create_stored(ts, &j->tp, &j->obj, stored, 0, stored, &j->src.tier);
    } else if (j->obj.n_extents) {
        struct storage_extent *se = arena_calloc(j->a, j->obj.n_extents + 1, sizeof(*se));
        extents_from_index(j->obj.extents, j->obj.n_extents, se);
        rc = storage_reader_create(srv->storage, j->pin, se, j->obj.n_extents, 0, stored,
                                   &j->src.hot);
    }
    if (rc < 0)
        return rc;
    j->moved = (struct index_object){.size = j->obj.size, .mtime_ns = j->obj.mtime_ns};
    memcpy(j->moved.etag, j->obj.etag, 16);
    if (j->target) {
        rc = j->target->ops->put(j->target, stored, move_read, &j->src, j->a, &j->moved);
        for (uint32_t i = 0; rc == 0 && i < j->moved.n_extents; i++)
            ((struct index_extent *)j->moved.extents)[i].flags = it->flags;
    } else {
        rc = hot_put(srv, stored, &j->src, j->a, &j->w, &j->moved);
    }
    if (rc == 0)
        j->is_ready = true;
    return rc;
}

/* Releases what 'j' holds; an unpublished tier copy goes back at once. */
static void
move_finish(struct server *srv, struct move_job *j, int rc)
{
    struct tier_set *ts = srv->tiers;
    if (j->is_ready && !j->is_published && j->target && j->moved.n_extents)
        j->target->ops->release(j->target, j->moved.extents, j->moved.n_extents);
    storage_writer_destroy(j->w, j->is_published);
    storage_reader_destroy(j->src.hot);
    tier_reader_destroy(j->src.tier);
    tier_pins_drop(ts, &j->tp, TIER_MAX);
    if (j->has_pin)
        storage_reader_unpin(srv->storage, j->pin);
    j->item->moved_len = rc > 0 ? j->obj.size : 0;
    j->item->result = rc;
    count_move(ts, rc, j->item->moved_len);
    if (rc < 0 && rc != -ESTALE && rc != -ENOENT)
        log_warn("tier: moving an object of bucket %llu to %s failed: %s",
                 (unsigned long long)j->item->bucket_id, tier_class_name(ts, j->item->flags),
                 strerror(-rc));
    arena_destroy(j->a);
}

void
tier_move_batch(struct server *srv, struct tier_move_item *items, size_t n)
{
    struct tier_set *ts = srv->tiers;
    struct move_job *jobs = xcalloc(n ? n : 1, sizeof(*jobs));
    struct index_op *ops = xcalloc(n ? n : 1, sizeof(*ops));
    int *rcs = xcalloc(n ? n : 1, sizeof(*rcs));
    bool synced[TIER_MAX] = {false};
    size_t n_ops = 0;

    for (size_t i = 0; i < n; i++) {
        jobs[i].item = &items[i];
        jobs[i].a = arena_create(0);
        rcs[i] = move_prepare(srv, &jobs[i]);
    }
    /* One sync per target tier for the whole batch, then one commit. */
    for (size_t i = 0; i < n; i++) {
        if (!jobs[i].is_ready || !jobs[i].target)
            continue;
        struct tier *t = jobs[i].target;
        if (t->ops->sync && !synced[t->id]) {
            int rc = t->ops->sync(t);
            if (rc < 0) {
                for (size_t k = i; k < n; k++)
                    if (jobs[k].is_ready && jobs[k].target == t)
                        rcs[k] = rc;
            }
            synced[t->id] = true;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (!jobs[i].is_ready || rcs[i] < 0)
            continue;
        crash_point(jobs[i].src.crash_at, 2); /* tier copy durable, index not switched */
        ops[n_ops++] = (struct index_op){
            .kind = INDEX_OP_SET_EXTENTS,
            .bucket_id = items[i].bucket_id,
            .key = items[i].key,
            .has_version_id = items[i].has_version_id,
            .object = &jobs[i].moved,
            .expect_extents = jobs[i].obj.extents,
            .n_expect_extents = jobs[i].obj.n_extents,
            .expect_inline_len = jobs[i].obj.inline_len,
            .arena = jobs[i].a,
        };
        memcpy(ops[n_ops - 1].version_id, items[i].version_id, INDEX_VERSION_ID_LEN);
    }
    int crc = n_ops ? committer_run(srv->committer, ops, n_ops) : 0;
    for (size_t i = 0, k = 0; i < n; i++) {
        if (!jobs[i].is_ready || rcs[i] < 0)
            continue;
        struct index_op *op = &ops[k++];
        int rc = crc < 0 ? crc : op->result;
        if (jobs[i].target && jobs[i].target->ops->settle && jobs[i].moved.n_extents)
            jobs[i].target->ops->settle(jobs[i].target, jobs[i].moved.extents,
                                        jobs[i].moved.n_extents);
        if (rc == 0) {
            jobs[i].is_published = true;
            crash_point(jobs[i].src.crash_at, 3); /* switched; old extents not yet reused */
            rc = 1;
        }
        rcs[i] = rc;
    }
    for (size_t i = 0; i < n; i++)
        move_finish(srv, &jobs[i], rcs[i]);
    (void)ts;
    free(rcs);
    free(ops);
    free(jobs);
}

int
tier_move(struct server *srv, uint64_t bucket_id, struct slice key, const uint8_t etag[16],
          uint32_t flags, uint64_t *moved_len)
{
    struct tier_move_item it = {.bucket_id = bucket_id, .key = key, .flags = flags};
    memcpy(it.etag, etag, 16);
    tier_move_batch(srv, &it, 1);
    *moved_len = it.moved_len;
    return it.result;
}

/* ---- sweeps ------------------------------------------------------------- */

/* The offsets of one tier's extents the index references, sorted; loaded
 * at the first question (after the tier listed what it stores). */
struct sweep_refs {
    struct server *srv;
    uint32_t tier;
    bool is_loaded;
    int rc;
    uint64_t *offsets;
    size_t n, cap;
};

static void
collect_ref(void *ctx, const struct index_extent *e)
{
    struct sweep_refs *s = ctx;
    if (TIER_OF(e->flags) != s->tier)
        return;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->offsets = xrealloc(s->offsets, s->cap * sizeof(*s->offsets));
    }
    s->offsets[s->n++] = e->offset;
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static bool
is_referenced(void *ctx, uint64_t offset)
{
    struct sweep_refs *s = ctx;
    if (!s->is_loaded) {
        s->is_loaded = true;
        s->rc = index_extents_scan(s->srv->index, collect_ref, s);
        if (s->n)
            qsort(s->offsets, s->n, sizeof(*s->offsets), cmp_u64);
    }
    /* An unreadable index keeps everything. */
    return s->rc != 0 || bsearch(&offset, s->offsets, s->n, sizeof(offset), cmp_u64) != NULL;
}

long
tier_sweep(struct server *srv)
{
    struct tier_set *ts = srv->tiers;
    long total = 0;
    for (uint32_t i = 0; i < TIER_MAX; i++) {
        if (!ts->tiers[i] || !ts->tiers[i]->ops->sweep)
            continue;
        struct sweep_refs refs = {.srv = srv, .tier = i};
        long n = ts->tiers[i]->ops->sweep(ts->tiers[i], is_referenced, &refs);
        free(refs.offsets);
        if (n < 0)
            return n;
        total += n;
    }
    if (total) {
        pthread_mutex_lock(&ts->mu);
        ts->stats.orphans_swept += (uint64_t)total;
        pthread_mutex_unlock(&ts->mu);
        log_info("tier: deleted %ld remote object(s) no record references", total);
    }
    return total;
}
