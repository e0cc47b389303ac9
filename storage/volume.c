/*
 * volume.c: the storage object and its volume files (extent_format.h).
 *
 * Each volume is opened twice: O_DIRECT|O_RDWR for the io_uring writes
 * (buffered when the filesystem refuses O_DIRECT) and O_RDONLY buffered for
 * reads and sendfile. Volumes are created on demand, under alloc_lock, up to
 * max_volumes; the vols[] slots are published with a release store of
 * n_volumes and never change afterwards. storage_sync is a group commit: one
 * fdatasync per volume covers every write completed before it started.
 * A volume file created here is fsynced with its directory before it is
 * published, so no extent is ever committed into a file a crash can lose.
 */
#define _GNU_SOURCE
#include "storage/storage_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- volume files ------------------------------------------------------ */

static char *
volume_path(const struct storage *st, uint32_t id)
{
    struct buf b;
    buf_init(&b);
    buf_printf(&b, "%s/" STORAGE_VOLUME_NAME_FMT, st->dir, id);
    return b.ptr;
}

/* Some filesystems accept O_DIRECT at open and refuse it at the first I/O:
 * probe with an aligned read (an empty new file reads 0 bytes, which is fine). */
static bool
direct_io_works(int fd)
{
    void *probe = NULL;
    if (posix_memalign(&probe, STORAGE_ALIGN, STORAGE_ALIGN) != 0)
        return false;
    ssize_t n = pread(fd, probe, STORAGE_ALIGN, 0);
    free(probe);
    return n >= 0;
}

/*
 * Opens (creating when 'is_create') volume 'id' and makes sure it is
 * 'st->volume_size' long (allocated up front, or sparse when
 * st->is_sparse). Returns 0 and sets '*out', or -errno (-ENOENT when it
 * does not exist and !is_create; -ENOSPC when fallocate finds no room, in
 * which case a file it created is removed again).
 */
static int
volume_open(struct storage *st, uint32_t id, bool is_create, struct storage__volume **out)
{
    int err = 0;
    bool is_created = false;
    int wfd = -1, rfd = -1;
    char *path = volume_path(st, id);

    int flags = O_RDWR | O_CLOEXEC;
    if (is_create)
        flags |= O_CREAT | O_EXCL;
    wfd = open(path, flags | (st->is_direct ? O_DIRECT : 0), 0644);
    if (wfd >= 0)
        is_created = is_create;
    if (wfd >= 0 && st->is_direct && !direct_io_works(wfd)) {
        close(wfd);
        wfd = -1;
        errno = EINVAL;
    }
    if (wfd < 0 && errno == EINVAL && st->is_direct) {
        log_warn("storage: %s: O_DIRECT refused, using buffered writes", path);
        st->is_direct = false;
        /* A refused O_DIRECT open may still have created the file. */
        wfd = open(path, is_create ? O_RDWR | O_CLOEXEC | O_CREAT : flags, 0644);
        if (wfd >= 0)
            is_created = is_create;
    }
    if (wfd < 0) {
        err = -errno;
        goto fail;
    }
    struct stat sb;
    if (fstat(wfd, &sb) < 0) {
        err = -errno;
        goto fail;
    }
    if ((uint64_t)sb.st_size < st->volume_size && st->is_sparse) {
        if (ftruncate(wfd, (off_t)st->volume_size) < 0) {
            err = -errno;
            log_warn("storage: ftruncate %s: %s", path, strerror(-err));
            goto fail;
        }
    } else if ((uint64_t)sb.st_size < st->volume_size) {
        int ret = posix_fallocate(wfd, 0, (off_t)st->volume_size);
        if (ret != 0) {
            err = -ret;
            log_warn("storage: fallocate %s: %s", path, strerror(ret));
            goto fail;
        }
    }
    /* A new volume is durable (its size and its name in the directory)
     * before any extent in it can be published. */
    if (is_created) {
        if (storage__fault_hit(st, STORAGE_FAULT_FSYNC))
            err = -EIO;
        else if (fsync(wfd) < 0)
            err = -errno;
        if (err == 0)
            err = storage__dir_sync(st, st->dir);
        if (err < 0) {
            log_error("storage: cannot make %s durable: %s", path, strerror(-err));
            goto fail;
        }
    }
    rfd = open(path, O_RDONLY | O_CLOEXEC);
    if (rfd < 0) {
        err = -errno;
        goto fail;
    }
    struct storage__volume *v = xcalloc(1, sizeof(*v));
    v->id = id;
    v->wfd = wfd;
    v->rfd = rfd;
    v->len = MAX(st->volume_size, (uint64_t)sb.st_size & ~(uint64_t)(STORAGE_ALIGN - 1));
    atomic_init(&v->write_seq, 0);
    pthread_mutex_init(&v->sync_lock, NULL);
    *out = v;
    free(path);
    return 0;

fail:
    if (rfd >= 0)
        close(rfd);
    if (wfd >= 0)
        close(wfd);
    if (is_created)
        unlink(path);
    free(path);
    return err;
}

static void
volume_close(struct storage__volume *v)
{
    if (!v)
        return;
    storage__alloc_volume_cleanup(v);
    free(v->unwritten);
    close(v->wfd);
    close(v->rfd);
    pthread_mutex_destroy(&v->sync_lock);
    free(v);
}

/* Publishes 'v' as the next volume (caller holds alloc_lock or is storage_open). */
static void
volume_publish(struct storage *st, struct storage__volume *v)
{
    uint32_t n = atomic_load_explicit(&st->n_volumes, memory_order_relaxed);
    storage__alloc_volume_init(st, v);
    storage__prezero_scan(st, v);
    st->vols[n] = v;
    atomic_store_explicit(&st->n_volumes, n + 1, memory_order_release);
}

int
storage__volume_add(struct storage *st)
{
    uint32_t n = atomic_load_explicit(&st->n_volumes, memory_order_relaxed);
    if (n >= st->max_volumes)
        return -ENOSPC;
    struct storage__volume *v;
    int err = volume_open(st, n, true, &v);
    if (err == -EEXIST)
        err = volume_open(st, n, false, &v);
    if (err < 0)
        return err == -EDQUOT ? -ENOSPC : err;
    volume_publish(st, v);
    log_info("storage: created volume %u (%" PRIu64 " bytes)", n, v->len);
    return 0;
}

struct storage__volume *
storage__volume_get(struct storage *st, uint32_t id)
{
    if (id >= atomic_load_explicit(&st->n_volumes, memory_order_acquire))
        return NULL;
    return st->vols[id];
}

int
storage__extent_check(struct storage *st, const struct storage_extent *e)
{
    struct storage__volume *v = storage__volume_get(st, e->volume);
    if (!v || e->offset % STORAGE_ALIGN != 0 || e->offset > v->len || e->len > v->len - e->offset)
        return CORRUPT_BKPT("extent outside its volume");
    return 0;
}

int
storage__dir_sync(struct storage *st, const char *dir)
{
    if (storage__fault_hit(st, STORAGE_FAULT_FSYNC))
        return -EIO;
    return dir_sync(dir);
}

/* ---- open and close ----------------------------------------------------- */

int
storage_open(struct storage **out, const struct storage_config *cfg)
{
    int err = 0;
    struct storage *st = NULL;

    if (!cfg || !cfg->dir || cfg->volume_size == 0 || cfg->volume_size % STORAGE_BLOCK_LEN != 0 ||
        cfg->max_volumes == 0)
        return -EINVAL;
    bool is_dir_created = mkdir(cfg->dir, 0755) == 0;
    if (!is_dir_created && errno != EEXIST)
        return -errno;

    st = xcalloc(1, sizeof(*st));
    st->dir = xstrdup(cfg->dir);
    st->volume_size = cfg->volume_size;
    st->max_volumes = cfg->max_volumes;
    st->is_direct = cfg->is_direct;
    st->is_sparse = cfg->is_sparse;
    st->prezero_window = cfg->prezero_window;
    atomic_init(&st->prezeroed_bytes, 0);
    st->vols = xcalloc(cfg->max_volumes, sizeof(*st->vols));
    atomic_init(&st->n_volumes, 0);
    pthread_mutex_init(&st->alloc_lock, NULL);
    pthread_mutex_init(&st->reclaim_lock, NULL);
    pthread_cond_init(&st->claim_cond, NULL);
    storage__reclaim_init(st, cfg->max_pins, cfg->pin_timeout_ms);
    storage__pool_init(&st->pool, cfg->write_buffer_total);
    for (int i = 0; i < STORAGE_FAULT_N; i++)
        atomic_init(&st->fault_left[i], 0);
    if (is_dir_created) {
        err = storage__fault_hit(st, STORAGE_FAULT_FSYNC) ? -EIO : dir_sync_parent(cfg->dir);
        if (err < 0)
            goto fail;
    }

    for (uint32_t id = 0; id < cfg->max_volumes; id++) {
        struct storage__volume *v;
        err = volume_open(st, id, false, &v);
        if (err == -ENOENT)
            break;
        if (err < 0)
            goto fail;
        volume_publish(st, v);
    }
    if (atomic_load(&st->n_volumes) == 0) {
        err = storage__volume_add(st);
        if (err < 0)
            goto fail;
    }
    *out = st;
    return 0;

fail:
    storage_close(st);
    return err;
}

void
storage_close(struct storage *st)
{
    if (!st)
        return;
    /* Writers must be destroyed by now; this drains what the calling thread
     * still has on its ring (other threads drain theirs at exit). */
    storage__prezero_stop(st);
    storage__ring_thread_release();
    uint32_t n = atomic_load(&st->n_volumes);
    for (uint32_t i = 0; i < n; i++)
        volume_close(st->vols[i]);
    storage__reclaim_cleanup(st);
    storage__pool_cleanup(&st->pool);
    pthread_mutex_destroy(&st->alloc_lock);
    pthread_mutex_destroy(&st->reclaim_lock);
    pthread_cond_destroy(&st->claim_cond);
    free(st->vols);
    free(st->dir);
    free(st);
}

/* ---- durability ----------------------------------------------------------- */

int
storage_sync(struct storage *st)
{
    int err = 0;
    uint32_t n = atomic_load_explicit(&st->n_volumes, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++) {
        struct storage__volume *v = st->vols[i];
        uint64_t target = atomic_load(&v->write_seq);
        pthread_mutex_lock(&v->sync_lock);
        if (v->synced_seq < target) {
            /* Everything completed up to here is covered by this fdatasync,
             * including writes of callers now queued on sync_lock. */
            uint64_t seq = atomic_load(&v->write_seq);
            int ret = 0;
            if (storage__fault_hit(st, STORAGE_FAULT_FSYNC))
                ret = -EIO;
            else if (fdatasync(v->wfd) < 0)
                ret = -errno;
            if (ret == 0)
                v->synced_seq = seq;
            else if (err == 0)
                err = ret;
        }
        pthread_mutex_unlock(&v->sync_lock);
    }
    if (err < 0)
        log_error("storage: fdatasync failed: %s", strerror(-err));
    return err;
}

/* ---- reading helpers, stats, faults ---------------------------------- */

bool
storage_is_direct(const struct storage *st)
{
    return st->is_direct;
}

void
storage_stats_get(struct storage *st, struct storage_stats *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&st->reclaim_lock);
    pthread_mutex_lock(&st->alloc_lock);
    uint32_t n = atomic_load(&st->n_volumes);
    for (uint32_t i = 0; i < n; i++)
        out->total_bytes += st->vols[i]->len;
    out->free_bytes = st->free_bytes;
    out->pending_bytes = st->pending_bytes;
    out->n_pins = st->n_active;
    out->n_volumes = n;
    out->unwritten_bytes = st->unwritten_bytes + st->claimed_len; /* the claim is being written */
    out->prezeroed_bytes = atomic_load(&st->prezeroed_bytes);
    pthread_mutex_unlock(&st->alloc_lock);
    pthread_mutex_unlock(&st->reclaim_lock);
}

bool
storage__fault_hit(struct storage *st, enum storage__fault kind)
{
    uint_fast64_t left = atomic_load(&st->fault_left[kind]);
    while (left > 0) {
        if (atomic_compare_exchange_weak(&st->fault_left[kind], &left, left - 1))
            return left == 1;
    }
    return false;
}

void
storage_fault_inject(struct storage *st, const char *kind, uint64_t n)
{
    static const char *const names[STORAGE_FAULT_N] = {"submit", "read", "fsync", "prezero"};
    for (int i = 0; i < STORAGE_FAULT_N; i++) {
        if (strcmp(kind, names[i]) == 0)
            atomic_store(&st->fault_left[i], n);
    }
}
