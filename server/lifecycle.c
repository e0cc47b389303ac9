/*
 * lifecycle.c: the lifecycle worker and the cache of parsed rules.
 *
 * A pass walks every bucket with a lifecycle configuration (or one bucket
 * on demand): it lists the bucket's objects page by page and deletes
 * those an enabled Expiration rule has expired, moves those a due
 * Transition sends to another storage class (tier_move, tier.h: the tier
 * copy made durable, then one index transaction checked against the
 * version listed, then the old extents freed), then aborts the multipart
 * uploads an AbortIncompleteMultipartUpload rule has made stale. Every
 * change goes through the committer exactly as DeleteObject
 * (INDEX_OP_DELETE) and AbortMultipartUpload (INDEX_OP_UPLOAD_ABORT) do:
 * one index transaction per batch, extents released to storage after the
 * commit (deferred while readers hold them). A delete carries the ETag the
 * listing saw (or the record read for its tags), so an object overwritten
 * meanwhile is left alone. A kill at any point leaves each object either
 * present or gone, and free space is rebuilt from the index at start, so
 * nothing leaks.
 *
 * The listing has no tags: an object's record (its metadata blob) is read
 * only when a rule filtering on tags would expire it by now if its tags
 * matched, so buckets without Tag filters pay nothing more. Passes are
 * serialized by 'pass_mu' (background and on-demand ones), run on a thread
 * LIFECYCLE_NICE below the requests' CPU priority and paced to
 * cfg.lifecycle_max_objects_per_s actions and cfg.lifecycle_max_mib_per_s
 * transition MiB per second.
 *
 * The cache maps bucket id -> parsed rules (or "none") for the
 * x-amz-expiration header; a Put/Delete of the configuration invalidates
 * the entry, and a generation counter keeps a load that raced with an
 * invalidation from being cached.
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/commit.h"
#include "server/lifecycle.h"
#include "server/lifecycle_versions.h"
#include "server/lifecycle_xml.h"
#include "server/meta.h"
#include "server/server.h"
#include "server/tags.h"
#include "server/tier.h"
#include "server/util.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CACHE_SLOTS 256
/* Deletes committed together (one index transaction). */
#define DELETE_BATCH 64
#define LIST_PAGE 1000
/* 9999-12-31T23:59:59Z, the last instant an HTTP date can name. */
#define HTTP_DATE_MAX_S 253402300799

struct cache_entry {
    uint64_t bucket_id;
    struct arena *a; /* owns 'cfg' */
    bool has_config; /* false: the bucket has none (cached too) */
    struct lc_config cfg;
    struct cache_entry *next;
};

struct lifecycle {
    struct server *srv;
    pthread_t thread;
    bool has_thread;
    pthread_mutex_t mu; /* stop, wake, stats */
    pthread_cond_t cond;
    bool is_stopping;
    struct lifecycle_stats stats;
    pthread_mutex_t pass_mu; /* one pass at a time */
    /* pacing of actions and of transition bytes */
    int64_t pace_t0_ns;
    uint64_t pace_n;
    uint64_t pace_bytes;
    /* cache */
    pthread_rwlock_t cache_lock;
    uint64_t cache_gen;
    struct cache_entry *slots[CACHE_SLOTS];
};

static uint64_t
day_s(const struct lifecycle *lc)
{
    return lc->srv->cfg.lifecycle_day_s ? lc->srv->cfg.lifecycle_day_s : 1;
}

static bool
is_stopping(struct lifecycle *lc)
{
    pthread_mutex_lock(&lc->mu);
    bool stop = lc->is_stopping;
    pthread_mutex_unlock(&lc->mu);
    return stop || atomic_load(&lc->srv->is_stopping);
}

static bool
stop_cb(void *ctx)
{
    return is_stopping(ctx);
}

/* ------------------------------------------------------------------ */
/* Expiry times                                                       */
/* ------------------------------------------------------------------ */

/*
 * When rule 'r' expires an object last modified at 'mtime_ns', in
 * seconds since the epoch; -1 when the rule has no Expiration by Days or
 * Date. Days count from the modification time and round up to the next
 * day boundary (midnight UTC with 86,400-second days), as S3 does.
 */
static int64_t
rule_expiry_s(const struct lc_rule *r, int64_t mtime_ns, uint64_t day)
{
    if (r->has_exp_date)
        return r->exp_date_s;
    if (!r->has_exp_days)
        return -1;
    uint64_t day_ns = day * 1000000000ull, span_ns, t;
    /* Days up to 2^31 of up to 2^32 seconds overflow: such a rule never fires. */
    if (__builtin_mul_overflow((uint64_t)r->exp_days, day_ns, &span_ns) ||
        __builtin_add_overflow((uint64_t)(mtime_ns > 0 ? mtime_ns : 0), span_ns, &t) ||
        t > (uint64_t)INT64_MAX - day_ns)
        return INT64_MAX;
    return (int64_t)(((t + day_ns - 1) / day_ns) * day);
}

/* The earliest expiry among the enabled rules of 'cfg' matching 'o';
 * -1 when none. '*rule' is the rule that gives it. */
static int64_t
config_expiry_s(const struct lc_config *cfg, const struct lc_object *o, int64_t mtime_ns,
                uint64_t day, const struct lc_rule **rule)
{
    int64_t best = -1;
    for (uint32_t i = 0; i < cfg->n_rules; i++) {
        const struct lc_rule *r = &cfg->rules[i];
        if (!r->is_enabled || !lc_rule_matches(r, o))
            continue;
        int64_t t = rule_expiry_s(r, mtime_ns, day);
        if (t >= 0 && (best < 0 || t < best)) {
            best = t;
            *rule = r;
        }
    }
    return best;
}

/* Copies the 'n' object tags into 'out' (room for 'n'): the lifecycle
 * parser's tag type and the object tag type are distinct. */
static void
tags_to_lc(const struct s3_tag *tags, size_t n, struct lc_tag *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (struct lc_tag){.key = tags[i].key, .value = tags[i].value};
}

/* ------------------------------------------------------------------ */
/* Cache of parsed rules                                              */
/* ------------------------------------------------------------------ */

/* Loads and parses the configuration of 'bucket_id' into a new entry. */
static struct cache_entry *
cache_load(struct lifecycle *lc, uint64_t bucket_id)
{
    struct cache_entry *e = xcalloc(1, sizeof(*e));
    const void *val;
    size_t len;
    const char *msg;
    e->bucket_id = bucket_id;
    e->a = arena_create(0);
    int rc = index_bucket_config_get(lc->srv->index, bucket_id, INDEX_BUCKET_CONFIG_LIFECYCLE, e->a,
                                     &val, &len);
    if (rc == 0 && lc_parse(val, len, e->a, &e->cfg, &msg) == LC_OK)
        e->has_config = true;
    else if (rc == 0)
        log_error("lifecycle: stored configuration of bucket %" PRIu64 " does not parse",
                  bucket_id);
    return e;
}

static void
cache_entry_free(struct cache_entry *e)
{
    arena_destroy(e->a);
    free(e);
}

void
lifecycle_invalidate(struct lifecycle *lc, uint64_t bucket_id)
{
    if (!lc)
        return;
    pthread_rwlock_wrlock(&lc->cache_lock);
    struct cache_entry **pp = &lc->slots[bucket_id % CACHE_SLOTS];
    while (*pp) {
        struct cache_entry *e = *pp;
        if (e->bucket_id == bucket_id) {
            *pp = e->next;
            cache_entry_free(e);
        } else {
            pp = &e->next;
        }
    }
    lc->cache_gen++;
    pthread_rwlock_unlock(&lc->cache_lock);
}

/* Formats the header value for 'cfg' into 'out'; false when no rule applies. */
static bool
format_expiration(const struct lc_config *cfg, const struct lc_object *o, int64_t mtime_ns,
                  uint64_t day, char *out, size_t cap)
{
    const struct lc_rule *rule = NULL;
    int64_t t = config_expiry_s(cfg, o, mtime_ns, day, &rule);
    if (t < 0 || !rule || t > HTTP_DATE_MAX_S)
        return false;
    char date[40];
    http_date_format(t, date);
    /* A rule ID is any text; control characters cannot go in a header. */
    char id[LC_ID_MAX + 1];
    size_t n = MIN(rule->id.len, sizeof(id) - 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)rule->id.ptr[i];
        id[i] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
    }
    id[n] = 0;
    snprintf(out, cap, "expiry-date=\"%s\", rule-id=\"%s\"", date, id);
    return true;
}

bool
lifecycle_expiration_header(struct lifecycle *lc, uint64_t bucket_id, struct slice key,
                            uint64_t size, int64_t mtime_ns, const struct s3_tag *tags,
                            size_t n_tags, char *out, size_t cap)
{
    if (!lc)
        return false;
    /* Stored tags are validated (at most TAGS_OBJECT_MAX); more still work. */
    struct lc_tag stack_tags[TAGS_OBJECT_MAX];
    struct lc_tag *lt = n_tags > TAGS_OBJECT_MAX ? xcalloc(n_tags, sizeof(*lt)) : stack_tags;
    tags_to_lc(tags, n_tags, lt);
    struct lc_object o = {.key = key, .size = size, .has_tags = true, .tags = lt, .n_tags = n_tags};
    uint64_t day = day_s(lc);
    bool is_found = false, has = false;
    pthread_rwlock_rdlock(&lc->cache_lock);
    uint64_t gen = lc->cache_gen;
    for (struct cache_entry *e = lc->slots[bucket_id % CACHE_SLOTS]; e; e = e->next) {
        if (e->bucket_id == bucket_id) {
            is_found = true;
            has = e->has_config && format_expiration(&e->cfg, &o, mtime_ns, day, out, cap);
            break;
        }
    }
    pthread_rwlock_unlock(&lc->cache_lock);
    if (is_found)
        goto done;

    struct cache_entry *e = cache_load(lc, bucket_id);
    has = e->has_config && format_expiration(&e->cfg, &o, mtime_ns, day, out, cap);
    pthread_rwlock_wrlock(&lc->cache_lock);
    bool is_present = false;
    for (struct cache_entry *x = lc->slots[bucket_id % CACHE_SLOTS]; x; x = x->next)
        is_present |= x->bucket_id == bucket_id;
    if (gen == lc->cache_gen && !is_present) {
        e->next = lc->slots[bucket_id % CACHE_SLOTS];
        lc->slots[bucket_id % CACHE_SLOTS] = e;
        e = NULL;
    }
    pthread_rwlock_unlock(&lc->cache_lock);
    if (e)
        cache_entry_free(e);
done:
    if (lt != stack_tags)
        free(lt);
    return has;
}

/* ------------------------------------------------------------------ */
/* A pass                                                             */
/* ------------------------------------------------------------------ */

/* Sleeps as needed so that actions stay under the configured rate. */
static void
pace(struct lifecycle *lc, uint64_t n_actions)
{
    uint64_t rate = lc->srv->cfg.lifecycle_max_objects_per_s;
    if (rate == 0 || n_actions == 0)
        return;
    lc->pace_n += n_actions;
    int64_t due_ns = lc->pace_t0_ns + (int64_t)(lc->pace_n * 1000000000ull / rate);
    while (!is_stopping(lc)) {
        int64_t now = clock_mono_ns();
        if (now >= due_ns)
            break;
        int64_t wait = MIN(due_ns - now, (int64_t)100000000);
        struct timespec ts = {0, (long)wait};
        nanosleep(&ts, NULL);
    }
}

/* Sleeps as needed so that transition bytes stay under
 * lifecycle_max_mib_per_s. */
static void
pace_bytes(struct lifecycle *lc, uint64_t n_bytes)
{
    uint64_t rate = (uint64_t)lc->srv->cfg.lifecycle_max_mib_per_s << 20;
    if (rate == 0 || n_bytes == 0)
        return;
    lc->pace_bytes += n_bytes;
    int64_t due_ns = lc->pace_t0_ns + (int64_t)((double)lc->pace_bytes * 1e9 / (double)rate);
    while (!is_stopping(lc)) {
        int64_t now = clock_mono_ns();
        if (now >= due_ns)
            break;
        int64_t wait = MIN(due_ns - now, (int64_t)100000000);
        struct timespec ts = {0, (long)wait};
        nanosleep(&ts, NULL);
    }
}

/* ------------------------------------------------------------------ */
/* Transitions                                                        */
/* ------------------------------------------------------------------ */

/* When transition 't' is due for an object modified at 'mtime_ns' (s). */
static int64_t
transition_due_s(const struct lc_transition *t, int64_t mtime_ns, uint64_t day)
{
    if (t->has_date)
        return t->date_s;
    struct lc_rule r = {.has_exp_days = true, .exp_days = t->days};
    return rule_expiry_s(&r, mtime_ns, day);
}

/* The transition of 'cfg' that applies to 'o' by 'now_s': among the
 * enabled rules' due transitions, the one due last (the furthest step of
 * a chain). NULL when none is due. */
static const struct lc_transition *
config_transition(const struct lc_config *cfg, const struct lc_object *o, int64_t mtime_ns,
                  uint64_t day, int64_t now_s)
{
    const struct lc_transition *best = NULL;
    int64_t best_t = -1;
    for (uint32_t i = 0; i < cfg->n_rules; i++) {
        const struct lc_rule *r = &cfg->rules[i];
        if (!r->is_enabled || !r->n_transitions || !lc_rule_matches(r, o))
            continue;
        for (uint32_t k = 0; k < r->n_transitions; k++) {
            int64_t t = transition_due_s(&r->transitions[k], mtime_ns, day);
            if (t >= 0 && t <= now_s && t > best_t) {
                best_t = t;
                best = &r->transitions[k];
            }
        }
    }
    return best;
}

static bool
config_has_transition(const struct lc_config *cfg, bool tags_only)
{
    for (uint32_t i = 0; i < cfg->n_rules; i++)
        if (cfg->rules[i].is_enabled && cfg->rules[i].n_transitions &&
            (!tags_only || lc_rule_has_tags(&cfg->rules[i])))
            return true;
    return false;
}

/* Transitions moved together: one index transaction, one sync per tier. */
#define MOVE_BATCH 64
#define MOVE_BATCH_BYTES (64ull << 20)

struct move_batch {
    struct tier_move_item items[MOVE_BATCH];
    size_t n;
    uint64_t bytes;
};

/* Moves the batch; counts what moved. */
static void
flush_moves(struct lifecycle *lc, struct move_batch *mb, struct lifecycle_stats *st)
{
    if (mb->n == 0)
        return;
    tier_move_batch(lc->srv, mb->items, mb->n);
    uint64_t moved = 0;
    for (size_t i = 0; i < mb->n; i++) {
        int rc = mb->items[i].result;
        if (rc > 0) {
            st->objects_transitioned++;
            st->bytes_transitioned += mb->items[i].moved_len;
            moved += mb->items[i].moved_len;
        } else if (rc < 0 && rc != -ESTALE && rc != -ENOENT) {
            st->errors++;
            st->transition_errors++;
        }
    }
    pace(lc, mb->n);
    pace_bytes(lc, moved);
    mb->n = 0;
    mb->bytes = 0;
}

/* Queues the object 'o' when a transition is due for it ('o->key'
 * borrowed until the batch is flushed). */
static void
transition_object(struct lifecycle *lc, uint64_t bucket_id, const struct lc_config *cfg,
                  const struct lc_object *o, int64_t mtime_ns, const uint8_t etag[16],
                  uint32_t cur_flags, int64_t now_s, struct move_batch *mb,
                  struct lifecycle_stats *st)
{
    const struct lc_transition *t = config_transition(cfg, o, mtime_ns, day_s(lc), now_s);
    uint32_t flags;
    if (!t)
        return;
    if (tier_class_parse(lc->srv->tiers, slice_from_cstr(t->storage_class), &flags) < 0) {
        st->errors++; /* the tier was removed from the configuration */
        return;
    }
    if (flags == cur_flags)
        return;
    struct tier_move_item *it = &mb->items[mb->n++];
    *it = (struct tier_move_item){.bucket_id = bucket_id, .key = o->key, .flags = flags};
    memcpy(it->etag, etag, 16);
    mb->bytes += o->size;
    if (mb->n == MOVE_BATCH || mb->bytes >= MOVE_BATCH_BYTES)
        flush_moves(lc, mb, st);
}

/* The mover of lifecycle_expire_versions: noncurrent versions' moves,
 * batched and paced like transitions. */
struct version_mover {
    struct lifecycle *lc;
    struct lifecycle_stats *st;
    struct move_batch mb;
};

static void
version_move_queue(void *ctx, const struct tier_move_item *it, uint64_t size)
{
    struct version_mover *m = ctx;
    m->mb.items[m->mb.n++] = *it;
    m->mb.bytes += size;
    if (m->mb.n == MOVE_BATCH || m->mb.bytes >= MOVE_BATCH_BYTES)
        flush_moves(m->lc, &m->mb, m->st);
}

static void
version_move_flush(void *ctx)
{
    struct version_mover *m = ctx;
    flush_moves(m->lc, &m->mb, m->st);
}

/* Commits the delete batch; counts what applied. */
static void
flush_deletes(struct lifecycle *lc, struct index_op *ops, const uint64_t *sizes, size_t n,
              struct lifecycle_stats *st)
{
    if (n == 0)
        return;
    int rc = committer_run(lc->srv->committer, ops, n);
    for (size_t i = 0; i < n; i++) {
        if (rc == 0 && ops[i].result == 0) {
            st->objects_expired++;
            st->bytes_expired += sizes[i];
        } else if (rc != 0 || ops[i].result != -ESTALE) {
            st->errors++; /* -ESTALE: overwritten meanwhile, left alone */
        }
    }
    pace(lc, n);
}

static bool
config_has_expiration(const struct lc_config *cfg)
{
    for (uint32_t i = 0; i < cfg->n_rules; i++)
        if (cfg->rules[i].is_enabled && (cfg->rules[i].has_exp_days || cfg->rules[i].has_exp_date))
            return true;
    return false;
}

/* True when an enabled Expiration rule of 'cfg' filters on tags. */
static bool
config_has_tag_expiration(const struct lc_config *cfg)
{
    for (uint32_t i = 0; i < cfg->n_rules; i++) {
        const struct lc_rule *r = &cfg->rules[i];
        if (r->is_enabled && (r->has_exp_days || r->has_exp_date) && lc_rule_has_tags(r))
            return true;
    }
    return false;
}

/* True when an enabled rule of 'cfg' that filters on tags would have
 * expired 'o' (tags unknown, modified 'mtime_ns') by 'now_s' if its tags
 * matched: only then are the object's tags worth reading. */
static bool
tag_rule_may_expire(const struct lc_config *cfg, const struct lc_object *o, int64_t mtime_ns,
                    uint64_t day, int64_t now_s)
{
    for (uint32_t i = 0; i < cfg->n_rules; i++) {
        const struct lc_rule *r = &cfg->rules[i];
        if (!r->is_enabled || !lc_rule_has_tags(r))
            continue;
        struct lc_rule untagged = *r;
        untagged.filter.n_tags = 0;
        if (!lc_rule_matches(&untagged, o))
            continue;
        int64_t t = rule_expiry_s(r, mtime_ns, day);
        if (t >= 0 && t <= now_s)
            return true;
    }
    return false;
}

/*
 * Reads the current record of 'key' with its tags into '*o' (key, size,
 * tags; everything in 'a'), '*mtime_ns' and 'etag'. Returns 0, -ENOENT
 * (deleted meanwhile), or another negative errno (-EIO: the metadata or
 * its tags do not decode). The delete's ETag check covers an overwrite
 * after this read, not a PutObjectTagging (which keeps the ETag): tags
 * changed between this read and the commit are not seen.
 */
static int
read_object_tags(struct lifecycle *lc, uint64_t bucket_id, struct slice key, struct arena *a,
                 struct lc_object *o, int64_t *mtime_ns, uint8_t etag[16])
{
    struct index_object obj;
    struct meta m;
    struct s3_tag *tags;
    size_t n;
    int rc = index_object_get(lc->srv->index, bucket_id, key, a, &obj);
    if (rc < 0)
        return rc;
    if (!meta_decode(a, obj.meta, obj.meta_len, &m) || !meta_tags_get(&m, a, &tags, &n))
        return -EIO;
    struct lc_tag *lt = arena_calloc(a, n ? n : 1, sizeof(*lt));
    tags_to_lc(tags, n, lt);
    *o =
        (struct lc_object){.key = key, .size = obj.size, .has_tags = true, .tags = lt, .n_tags = n};
    *mtime_ns = obj.mtime_ns;
    memcpy(etag, obj.etag, 16);
    return 0;
}

/* Deletes the objects of bucket 'bucket_id' the rules have expired. */
static void
expire_objects(struct lifecycle *lc, uint64_t bucket_id, const struct lc_config *cfg,
               struct lifecycle_stats *st)
{
    struct arena *a = arena_create(0);
    struct arena *op_a = arena_create(0);
    struct arena *obj_a = arena_create(0); /* one object record read for its tags */
    bool has_tag_rules = config_has_tag_expiration(cfg);
    bool has_transitions = config_has_transition(cfg, false);
    bool has_tag_transitions = config_has_transition(cfg, true);
    struct index_op ops[DELETE_BATCH];
    uint64_t sizes[DELETE_BATCH];
    struct move_batch *mb = xcalloc(1, sizeof(*mb));
    char *after = NULL;
    size_t after_len = 0;
    uint64_t day = day_s(lc);
    int64_t now_s = clock_now_ns() / 1000000000;

    for (;;) {
        if (is_stopping(lc))
            break;
        struct index_list_params p = {
            .bucket_id = bucket_id, .start_after = {after, after_len}, .max_keys = LIST_PAGE};
        struct index_list_result res;
        int rc = index_object_list(lc->srv->index, &p, a, &res);
        if (rc < 0) {
            st->errors++;
            break;
        }
        size_t n = 0;
        for (uint32_t i = 0; i < res.n_entries && !is_stopping(lc); i++) {
            const struct index_list_entry *e = &res.entries[i];
            st->objects_scanned++;
            struct lc_object o = {.key = e->key, .size = e->size};
            int64_t mtime_ns = e->mtime_ns;
            uint8_t etag[16];
            memcpy(etag, e->etag, 16);
            const struct lc_rule *rule = NULL;
            int64_t t = config_expiry_s(cfg, &o, mtime_ns, day, &rule);
            if ((t < 0 || t > now_s) && has_tag_rules &&
                tag_rule_may_expire(cfg, &o, mtime_ns, day, now_s)) {
                /* Judged again on the record read: it may be newer than the listing. */
                arena_clear(obj_a);
                st->tags_read++;
                rc = read_object_tags(lc, bucket_id, e->key, obj_a, &o, &mtime_ns, etag);
                if (rc < 0) {
                    st->errors += rc != -ENOENT;
                    continue;
                }
                t = config_expiry_s(cfg, &o, mtime_ns, day, &rule);
            }
            if (t < 0 || t > now_s) {
                if (!has_transitions)
                    continue;
                if (!o.has_tags && has_tag_transitions &&
                    !config_transition(cfg, &o, mtime_ns, day, now_s)) {
                    arena_clear(obj_a);
                    st->tags_read++;
                    if (read_object_tags(lc, bucket_id, e->key, obj_a, &o, &mtime_ns, etag) < 0)
                        continue;
                }
                transition_object(lc, bucket_id, cfg, &o, mtime_ns, etag, e->flags, now_s, mb, st);
                continue;
            }
            ops[n] = (struct index_op){.kind = INDEX_OP_DELETE,
                                       .bucket_id = bucket_id,
                                       .key = e->key,
                                       .has_if_match = true,
                                       .arena = op_a};
            memcpy(ops[n].if_match_etag, etag, 16);
            sizes[n++] = o.size;
            if (n == DELETE_BATCH) {
                flush_deletes(lc, ops, sizes, n, st);
                arena_clear(op_a);
                n = 0;
            }
        }
        flush_deletes(lc, ops, sizes, n, st);
        flush_moves(lc, mb, st); /* before the page's keys go */
        arena_clear(op_a);
        if (!res.is_truncated || res.next_marker.len == 0)
            break;
        free(after);
        after = xmalloc(res.next_marker.len);
        memcpy(after, res.next_marker.ptr, res.next_marker.len);
        after_len = res.next_marker.len;
        arena_clear(a);
    }
    flush_moves(lc, mb, st);
    free(mb);
    free(after);
    arena_destroy(obj_a);
    arena_destroy(op_a);
    arena_destroy(a);
}

/* The smallest DaysAfterInitiation of the enabled abort rules matching
 * upload key 'key' (their prefix; uploads have no size or tags yet);
 * 0 when none. */
static uint32_t
abort_days(const struct lc_config *cfg, struct slice key)
{
    uint32_t best = 0;
    for (uint32_t i = 0; i < cfg->n_rules; i++) {
        const struct lc_rule *r = &cfg->rules[i];
        if (!r->is_enabled || !r->has_abort || lc_rule_has_tags(r))
            continue;
        if (r->filter.has_prefix && !slice_has_prefix(key, r->filter.prefix))
            continue;
        if (best == 0 || r->abort_days < best)
            best = r->abort_days;
    }
    return best;
}

/* Aborts the uploads of bucket 'bucket_id' the rules have made stale. */
static void
abort_uploads(struct lifecycle *lc, uint64_t bucket_id, const struct lc_config *cfg,
              struct lifecycle_stats *st)
{
    struct arena *a = arena_create(0);
    struct buf key_marker, id_marker;
    buf_init(&key_marker);
    buf_init(&id_marker);
    uint64_t day_ns = day_s(lc) * 1000000000ull;
    int64_t now_ns = clock_now_ns();

    for (;;) {
        if (is_stopping(lc))
            break;
        struct index_upload_list_params p = {
            .bucket_id = bucket_id,
            .key_marker = {key_marker.ptr, key_marker.len},
            .upload_id_marker = {id_marker.ptr, id_marker.len},
            .max_uploads = LIST_PAGE,
        };
        struct index_upload_list_result res;
        if (index_upload_list(lc->srv->index, &p, a, &res) < 0) {
            st->errors++;
            break;
        }
        for (uint32_t i = 0; i < res.n_uploads && !is_stopping(lc); i++) {
            const struct index_upload *u = &res.uploads[i];
            uint32_t days = abort_days(cfg, u->key);
            uint64_t span_ns;
            if (days == 0 || now_ns < u->initiated_ns ||
                __builtin_mul_overflow((uint64_t)days, day_ns, &span_ns) ||
                (uint64_t)(now_ns - u->initiated_ns) < span_ns)
                continue;
            struct index_op op = {
                .kind = INDEX_OP_UPLOAD_ABORT, .upload_id = u->upload_id, .arena = a};
            int rc = committer_run(lc->srv->committer, &op, 1);
            if (rc == 0 && op.result == 0)
                st->uploads_aborted++;
            else if (rc != 0 || op.result != -ENOENT)
                st->errors++; /* -ENOENT: completed or aborted meanwhile */
            pace(lc, 1);
        }
        if (!res.is_truncated)
            break;
        key_marker.len = 0;
        id_marker.len = 0;
        buf_append(&key_marker, res.next_key_marker.ptr, res.next_key_marker.len);
        buf_append(&id_marker, res.next_upload_id_marker.ptr, res.next_upload_id_marker.len);
        arena_clear(a);
    }
    buf_cleanup(&key_marker);
    buf_cleanup(&id_marker);
    arena_destroy(a);
}

/* One bucket's configuration, collected before the pass (the list
 * callback runs inside a read snapshot and must not write). */
struct pass_bucket {
    uint64_t bucket_id;
    void *val;
    size_t len;
};

struct pass_list {
    uint64_t only_id;
    struct pass_bucket *items;
    size_t n, cap;
};

static int
collect_bucket(void *ctx, uint64_t bucket_id, const void *val, size_t len)
{
    struct pass_list *l = ctx;
    if (l->only_id && bucket_id != l->only_id)
        return 0;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->items = xrealloc(l->items, l->cap * sizeof(*l->items));
    }
    l->items[l->n].bucket_id = bucket_id;
    l->items[l->n].val = xmalloc(len);
    memcpy(l->items[l->n].val, val, len);
    l->items[l->n++].len = len;
    return 0;
}

/* Runs one pass (under pass_mu); 'st' gets this pass's counts. */
static int
run_pass(struct lifecycle *lc, uint64_t only_id, struct lifecycle_stats *st)
{
    struct pass_list l = {.only_id = only_id};
    int64_t t0 = clock_mono_ns();
    int rc =
        index_bucket_config_list(lc->srv->index, INDEX_BUCKET_CONFIG_LIFECYCLE, collect_bucket, &l);
    if (rc < 0)
        st->errors++;
    lc->pace_t0_ns = clock_mono_ns();
    lc->pace_n = 0;
    lc->pace_bytes = 0;
    /* Remote tier copies a crash left unpublished, deletes lost: gone
     * before this pass may add more. An unreachable remote waits. */
    if (tier_sweep(lc->srv) < 0)
        st->errors++;
    for (size_t i = 0; i < l.n && !is_stopping(lc); i++) {
        struct arena *a = arena_create(0);
        struct lc_config cfg;
        const char *msg;
        if (lc_parse(l.items[i].val, l.items[i].len, a, &cfg, &msg) != LC_OK) {
            log_error("lifecycle: stored configuration of bucket %" PRIu64 " does not parse",
                      l.items[i].bucket_id);
            st->errors++;
            arena_destroy(a);
            continue;
        }
        if (config_has_expiration(&cfg) || config_has_transition(&cfg, false))
            expire_objects(lc, l.items[i].bucket_id, &cfg, st);
        struct version_mover *vm = xcalloc(1, sizeof(*vm));
        vm->lc = lc;
        vm->st = st;
        struct lifecycle_mover mover = {version_move_queue, version_move_flush, vm};
        lifecycle_expire_versions(lc->srv, l.items[i].bucket_id, &cfg, clock_now_ns() / 1000000000,
                                  day_s(lc), stop_cb, lc, &mover, st);
        version_move_flush(vm);
        free(vm);
        abort_uploads(lc, l.items[i].bucket_id, &cfg, st);
        arena_destroy(a);
    }
    for (size_t i = 0; i < l.n; i++)
        free(l.items[i].val);
    free(l.items);
    st->passes = 1;
    st->last_pass_end_ns = clock_now_ns();
    st->last_pass_ms = (clock_mono_ns() - t0) / 1000000;
    return is_stopping(lc) ? -ECANCELED : 0;
}

/* How far below the requests a pass runs (nice is per thread on Linux):
 * under contention its copies and compression yield to foreground
 * requests; its rates are maxima, not promises. */
#define LIFECYCLE_NICE 10

static void
thread_lower_priority(void)
{
    id_t tid = (id_t)syscall(SYS_gettid);
    errno = 0;
    int cur = getpriority(PRIO_PROCESS, tid);
    if (cur == -1 && errno != 0)
        return;
    if (setpriority(PRIO_PROCESS, tid, MIN(cur + LIFECYCLE_NICE, 19)) != 0)
        log_warn("lifecycle: cannot lower the pass's CPU priority: %s", strerror(errno));
}

/* A pass on the calling thread. */
static int
run_here(struct lifecycle *lc, uint64_t bucket_id, struct lifecycle_stats *out)
{
    struct lifecycle_stats st = {0};
    pthread_mutex_lock(&lc->pass_mu);
    int rc = run_pass(lc, bucket_id, &st);
    pthread_mutex_unlock(&lc->pass_mu);
    pthread_mutex_lock(&lc->mu);
    lc->stats.passes += st.passes;
    lc->stats.last_pass_end_ns = st.last_pass_end_ns;
    lc->stats.last_pass_ms = st.last_pass_ms;
    lc->stats.objects_scanned += st.objects_scanned;
    lc->stats.objects_expired += st.objects_expired;
    lc->stats.bytes_expired += st.bytes_expired;
    lc->stats.uploads_aborted += st.uploads_aborted;
    lc->stats.errors += st.errors;
    lc->stats.tags_read += st.tags_read;
    lc->stats.objects_transitioned += st.objects_transitioned;
    lc->stats.bytes_transitioned += st.bytes_transitioned;
    lc->stats.transition_errors += st.transition_errors;
    pthread_mutex_unlock(&lc->mu);
    if (st.objects_expired || st.uploads_aborted || st.errors || st.objects_transitioned)
        log_info("lifecycle: pass: %" PRIu64 " objects expired (%" PRIu64 " bytes), %" PRIu64
                 " transitioned (%" PRIu64 " bytes), %" PRIu64 " uploads aborted, %" PRIu64
                 " errors",
                 st.objects_expired, st.bytes_expired, st.objects_transitioned,
                 st.bytes_transitioned, st.uploads_aborted, st.errors);
    if (out)
        *out = st;
    return rc;
}

struct pass_call {
    struct lifecycle *lc;
    uint64_t bucket_id;
    struct lifecycle_stats *out;
    int rc;
};

static void *
pass_main(void *arg)
{
    struct pass_call *c = arg;
    thread_lower_priority();
    c->rc = run_here(c->lc, c->bucket_id, c->out);
    return NULL;
}

int
lifecycle_run(struct lifecycle *lc, uint64_t bucket_id, struct lifecycle_stats *out)
{
    /* On a thread of its own, so that lowering its priority leaves the
     * caller (a request worker) as it was. */
    struct pass_call c = {lc, bucket_id, out, 0};
    pthread_t t;
    if (server_thread_start(&t, "shard-lifecycle", 0, pass_main, &c) != 0)
        return run_here(lc, bucket_id, out);
    pthread_join(t, NULL);
    return c.rc;
}

void
lifecycle_stats_get(struct lifecycle *lc, struct lifecycle_stats *out)
{
    pthread_mutex_lock(&lc->mu);
    *out = lc->stats;
    pthread_mutex_unlock(&lc->mu);
}

/* ------------------------------------------------------------------ */
/* The thread                                                         */
/* ------------------------------------------------------------------ */

static void *
lifecycle_main(void *arg)
{
    struct lifecycle *lc = arg;
    uint32_t interval = lc->srv->cfg.lifecycle_interval_s;
    thread_lower_priority();
    pthread_mutex_lock(&lc->mu);
    while (!lc->is_stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += interval;
        while (!lc->is_stopping && pthread_cond_timedwait(&lc->cond, &lc->mu, &ts) != ETIMEDOUT) {
        }
        if (lc->is_stopping)
            break;
        pthread_mutex_unlock(&lc->mu);
        run_here(lc, 0, NULL);
        pthread_mutex_lock(&lc->mu);
    }
    pthread_mutex_unlock(&lc->mu);
    return NULL;
}

struct lifecycle *
lifecycle_create(struct server *srv)
{
    struct lifecycle *lc = xcalloc(1, sizeof(*lc));
    pthread_condattr_t ca;
    lc->srv = srv;
    pthread_mutex_init(&lc->mu, NULL);
    pthread_mutex_init(&lc->pass_mu, NULL);
    pthread_rwlock_init(&lc->cache_lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&lc->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (srv->cfg.lifecycle_interval_s == 0)
        return lc;
    if (server_thread_start(&lc->thread, "shard-lifecycle", 0, lifecycle_main, lc) != 0) {
        log_error("lifecycle: cannot start the worker thread");
        lifecycle_destroy(lc);
        return NULL;
    }
    lc->has_thread = true;
    return lc;
}

void
lifecycle_destroy(struct lifecycle *lc)
{
    if (!lc)
        return;
    pthread_mutex_lock(&lc->mu);
    lc->is_stopping = true;
    pthread_cond_broadcast(&lc->cond);
    pthread_mutex_unlock(&lc->mu);
    if (lc->has_thread)
        pthread_join(lc->thread, NULL);
    for (size_t i = 0; i < CACHE_SLOTS; i++) {
        while (lc->slots[i]) {
            struct cache_entry *e = lc->slots[i];
            lc->slots[i] = e->next;
            cache_entry_free(e);
        }
    }
    pthread_cond_destroy(&lc->cond);
    pthread_rwlock_destroy(&lc->cache_lock);
    pthread_mutex_destroy(&lc->pass_mu);
    pthread_mutex_destroy(&lc->mu);
    free(lc);
}
