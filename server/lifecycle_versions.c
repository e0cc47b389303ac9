/*
 * lifecycle_versions.c: NoncurrentVersionExpiration,
 * NoncurrentVersionTransition and ExpiredObjectDeleteMarker over a
 * versioned bucket. One walk of
 * index_version_list (key order, newest first) sees each key's versions
 * together: a version became noncurrent when the next newer one was
 * written (that version's mtime), so its age is known without another
 * read. Removals are DELETEs of one version id through the committer, in
 * batches: the index re-checks Object Lock inside the transaction, so a
 * locked version is never removed, and a version already gone is a no-op.
 * Transitions of versions go to the pass's mover (tier_move by version id).
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/commit.h"
#include "server/lifecycle.h"
#include "server/lifecycle_versions.h"
#include "server/lifecycle_xml.h"
#include "server/server.h"
#include "server/tier.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define VERSIONS_PAGE 1000

/* When the enabled rules matching 'o' expire a version that became
 * noncurrent at 'since_ns' and has 'newer' noncurrent versions newer than
 * itself: the earliest time in seconds, or -1 (never). */
static int64_t
noncurrent_expiry_s(const struct lc_config *cfg, const struct lc_object *o, int64_t since_ns,
                    uint32_t newer, uint64_t day_s)
{
    int64_t best = -1;
    for (uint32_t i = 0; i < cfg->n_rules; i++) {
        const struct lc_rule *r = &cfg->rules[i];
        if (!r->is_enabled || !r->has_nc_expiration || !r->has_nc_exp_days || lc_rule_has_tags(r) ||
            !lc_rule_matches(r, o))
            continue;
        if (r->has_nc_exp_newer && newer < r->nc_exp_newer)
            continue;
        /* Days count from the moment it became noncurrent, rounded up to
         * the next day boundary, as for Expiration. */
        uint64_t day_ns = day_s * 1000000000ull;
        uint64_t t = (uint64_t)(since_ns > 0 ? since_ns : 0) + (uint64_t)r->nc_exp_days * day_ns;
        int64_t s = (int64_t)(((t + day_ns - 1) / day_ns) * day_s);
        if (best < 0 || s < best)
            best = s;
    }
    return best;
}

/* The NoncurrentVersionTransition of the enabled rules matching 'o' that
 * is due by 'now_s' for a version noncurrent since 'since_ns' with
 * 'newer' noncurrent versions newer than itself: among the due ones, the
 * one due last (the furthest step of a chain). NULL when none is due. */
static const struct lc_transition *
noncurrent_transition(const struct lc_config *cfg, const struct lc_object *o, int64_t since_ns,
                      uint32_t newer, uint64_t day_s, int64_t now_s)
{
    const struct lc_transition *best = NULL;
    int64_t best_t = -1;
    uint64_t day_ns = day_s * 1000000000ull;
    for (uint32_t i = 0; i < cfg->n_rules; i++) {
        const struct lc_rule *r = &cfg->rules[i];
        if (!r->is_enabled || !r->n_nc_transitions || lc_rule_has_tags(r) || !lc_rule_matches(r, o))
            continue;
        for (uint32_t k = 0; k < r->n_nc_transitions; k++) {
            const struct lc_transition *t = &r->nc_transitions[k];
            if (!t->has_days || (t->has_newer && newer < t->newer))
                continue;
            uint64_t at = (uint64_t)(since_ns > 0 ? since_ns : 0) + (uint64_t)t->days * day_ns;
            int64_t s = (int64_t)(((at + day_ns - 1) / day_ns) * day_s);
            if (s <= now_s && s > best_t) {
                best_t = s;
                best = t;
            }
        }
    }
    return best;
}

/* True when an enabled rule matching key 'o' removes a delete marker that
 * is the only version left of its key. */
static bool
removes_lone_marker(const struct lc_config *cfg, const struct lc_object *o)
{
    for (uint32_t i = 0; i < cfg->n_rules; i++) {
        const struct lc_rule *r = &cfg->rules[i];
        if (r->is_enabled && !lc_rule_has_tags(r) && lc_rule_matches(r, o) &&
            ((r->has_exp_delete_marker && r->exp_delete_marker) || r->has_exp_days))
            return true;
    }
    return false;
}

/* The walk's view of the key being looked at. */
struct key_state {
    char *key; /* heap copy; NULL before the first key */
    size_t key_len;
    uint32_t n_seen;        /* versions of the key seen so far */
    int64_t newer_mtime_ns; /* mtime of the last version seen */
    uint32_t n_noncurrent;  /* noncurrent versions seen so far */
    bool is_lone_marker;    /* the first version is a marker (so far alone) */
    uint8_t marker_id[INDEX_VERSION_ID_LEN];
    uint32_t marker_flags;
};

struct batch {
    struct server *srv;
    struct arena *a;
    struct index_op ops[VERSIONS_PAGE + 1];
    uint64_t sizes[VERSIONS_PAGE + 1];
    size_t n;
    struct lifecycle_stats *st;
};

static void
batch_add(struct batch *b, uint64_t bucket_id, struct slice key, uint32_t flags, const uint8_t *id,
          uint64_t size)
{
    struct index_op *op = &b->ops[b->n];
    *op = (struct index_op){.kind = INDEX_OP_DELETE,
                            .bucket_id = bucket_id,
                            .key = {arena_memdup(b->a, key.ptr, key.len), key.len},
                            .has_version_id = true,
                            .now_ns = clock_now_ns(),
                            .arena = b->a};
    if (!(flags & INDEX_VERSION_NULL))
        memcpy(op->version_id, id, INDEX_VERSION_ID_LEN);
    b->sizes[b->n++] = size;
}

static void
batch_flush(struct batch *b)
{
    if (b->n == 0)
        return;
    int rc = committer_run(b->srv->committer, b->ops, b->n);
    for (size_t i = 0; i < b->n; i++) {
        if (rc == 0 && b->ops[i].result == 0 && b->ops[i].result_version_flags) {
            b->st->objects_expired++;
            b->st->bytes_expired += b->sizes[i];
        } else if (rc != 0 || (b->ops[i].result != 0 && b->ops[i].result != -EACCES)) {
            b->st->errors++; /* -EACCES: under Object Lock, kept */
        }
    }
    b->n = 0;
    arena_clear(b->a);
}

/* The key 'ks' ends: a delete marker alone is removed when a rule says so. */
static void
key_end(struct batch *b, uint64_t bucket_id, const struct lc_config *cfg, struct key_state *ks)
{
    if (!ks->key || ks->n_seen != 1 || !ks->is_lone_marker)
        return;
    struct lc_object o = {.key = {ks->key, ks->key_len}};
    if (removes_lone_marker(cfg, &o))
        batch_add(b, bucket_id, o.key, ks->marker_flags, ks->marker_id, 0);
}

/* Sends noncurrent version 'e' (noncurrent since 'since_ns', 'newer'
 * noncurrent versions newer than it) to the mover when a transition is
 * due for it and it is not in that class yet. */
static void
transition_version(struct server *srv, uint64_t bucket_id, const struct lc_config *cfg,
                   const struct index_version_entry *e, int64_t since_ns, uint32_t newer,
                   int64_t now_s, uint64_t day_s, const struct lifecycle_mover *mover,
                   struct lifecycle_stats *st)
{
    struct lc_object o = {.key = e->key, .size = e->size};
    const struct lc_transition *t = noncurrent_transition(cfg, &o, since_ns, newer, day_s, now_s);
    uint32_t flags;
    if (!t)
        return;
    if (tier_class_parse(srv->tiers, slice_from_cstr(t->storage_class), &flags) < 0) {
        st->errors++; /* the tier was removed from the configuration */
        return;
    }
    if (flags == e->flags)
        return;
    struct tier_move_item it = {
        .bucket_id = bucket_id, .key = e->key, .flags = flags, .has_version_id = true};
    memcpy(it.etag, e->etag, 16);
    if (!(e->version_flags & INDEX_VERSION_NULL))
        memcpy(it.version_id, e->version_id, INDEX_VERSION_ID_LEN);
    mover->queue(mover->ctx, &it, e->size);
}

void
lifecycle_expire_versions(struct server *srv, uint64_t bucket_id, const struct lc_config *cfg,
                          int64_t now_s, uint64_t day_s, lifecycle_stop_fn stop, void *stop_ctx,
                          const struct lifecycle_mover *mover, struct lifecycle_stats *st)
{
    enum index_versioning vst;
    bool has_lock;
    if (index_versioning_get(srv->index, bucket_id, &vst, &has_lock) != 0 ||
        vst == INDEX_VERSIONING_OFF)
        return;
    struct arena *a = arena_create(0);
    struct batch *b = xcalloc(1, sizeof(*b));
    struct key_state ks = {0};
    struct index_version_list_params p = {.bucket_id = bucket_id, .max_keys = VERSIONS_PAGE};
    char *km = NULL;
    b->srv = srv;
    b->a = arena_create(0);
    b->st = st;
    for (;;) {
        struct index_version_list_result res;
        if (stop(stop_ctx))
            break;
        if (index_version_list(srv->index, &p, a, &res) < 0) {
            st->errors++;
            break;
        }
        for (uint32_t i = 0; i < res.n_entries; i++) {
            const struct index_version_entry *e = &res.entries[i];
            st->objects_scanned++;
            if (!ks.key || !slice_eq(e->key, (struct slice){ks.key, ks.key_len})) {
                key_end(b, bucket_id, cfg, &ks);
                free(ks.key);
                ks = (struct key_state){0};
                ks.key = xmalloc(e->key.len + 1);
                memcpy(ks.key, e->key.ptr, e->key.len);
                ks.key_len = e->key.len;
            }
            bool is_marker = (e->version_flags & INDEX_VERSION_MARKER) != 0;
            if (ks.n_seen == 0) {
                ks.is_lone_marker = is_marker;
                memcpy(ks.marker_id, e->version_id, INDEX_VERSION_ID_LEN);
                ks.marker_flags = e->version_flags;
            } else {
                /* Noncurrent since the newer version was written. */
                struct lc_object o = {.key = e->key, .size = e->size};
                int64_t t = noncurrent_expiry_s(cfg, &o, ks.newer_mtime_ns, ks.n_noncurrent, day_s);
                if (t >= 0 && t <= now_s)
                    batch_add(b, bucket_id, e->key, e->version_flags, e->version_id, e->size);
                else if (!is_marker)
                    transition_version(srv, bucket_id, cfg, e, ks.newer_mtime_ns, ks.n_noncurrent,
                                       now_s, day_s, mover, st);
                ks.n_noncurrent++;
            }
            ks.n_seen++;
            ks.newer_mtime_ns = e->mtime_ns;
        }
        /* Removals of this page go before the next one is listed; the
         * markers stay valid whatever is removed behind them. */
        batch_flush(b);
        mover->flush(mover->ctx); /* before the page's keys go */
        if (!res.is_truncated)
            break;
        free(km);
        km = xmalloc(res.next_key_marker.len + 1);
        memcpy(km, res.next_key_marker.ptr, res.next_key_marker.len);
        p.key_marker = (struct slice){km, res.next_key_marker.len};
        p.has_version_id_marker = res.next_has_version_id;
        memset(p.version_id_marker, 0, INDEX_VERSION_ID_LEN);
        if (!(res.next_version_flags & INDEX_VERSION_NULL))
            memcpy(p.version_id_marker, res.next_version_id, INDEX_VERSION_ID_LEN);
        arena_clear(a);
    }
    key_end(b, bucket_id, cfg, &ks);
    batch_flush(b);
    free(ks.key);
    free(km);
    arena_destroy(b->a);
    free(b);
    arena_destroy(a);
}
