/*
 * fabric.c: the libfabric side of transport.h. The only file that includes
 * libfabric and the only place a provider name means anything.
 *
 * One fabric = one domain, one FI_EP_RDM endpoint, one completion queue and
 * one address vector, all under one mutex (the providers used here make
 * progress only when polled: FI_PROGRESS_MANUAL for data). Transfers are
 * one-sided FI_RMA: fi_writemsg with FI_DELIVERY_COMPLETE (the bytes are in
 * the peer's memory before the completion, so the HTTP reply that follows
 * never overtakes them) and fi_readmsg. Each posted operation carries a
 * heap 'struct op' as its context, listed in the fabric; whoever polls the
 * queue completes it. Invariant: a buffer is the provider's until its op
 * completes; an op that does not complete in time is never left behind:
 * the endpoint is reset (closed and reopened), which cancels every op in
 * flight, so a dead or stalled peer holds no buffer and stalls no one for
 * longer than the timeout. Peer addresses are cached (the tcp provider
 * keeps a connection per address); a peer whose transfer failed is
 * dropped from the cache. shm regions get names of their own
 * ("shard_PID_RANDOM"), so a region a killed process left behind is never
 * taken for a live one, and is swept at the next open.
 */
#include "config.h"

#include "common/common.h"
#include "transport/transport.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_LIBFABRIC

#include <pthread.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <dirent.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#define PEER_CACHE 64
/* A provider is asked for messages no larger than this. */
#define CHUNK_MAX (16u << 20)

struct peer {
    uint8_t addr[TRANSPORT_ADDR_MAX];
    size_t addr_len;
    fi_addr_t fa;
    uint64_t used; /* LRU stamp; 0: free */
};

struct transport_fabric {
    pthread_mutex_t lock;
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    char provider[TRANSPORT_PROVIDER_MAX];
    uint8_t name[TRANSPORT_ADDR_MAX];
    size_t name_len;
    uint64_t mr_mode;
    uint64_t next_key;
    int post_timeout_ms;
    struct peer peers[PEER_CACHE];
    uint64_t peer_clock;
    struct op *ops;      /* in flight */
    uint64_t generation; /* bumped by reset_locked */
    /* The progress thread (clients). */
    bool has_thread;
    bool is_stopping;
    int holds;
    pthread_cond_t cond;
    pthread_t thread;
};

struct transport_region {
    struct transport_fabric *f;
    struct fid_mr *mr;
    uint8_t *base;
    size_t len;
};

struct transport_xfer {
    struct transport_fabric *f;
    struct transport_token t;
    fi_addr_t fa;
    uint64_t generation;
    int in_flight;
    int first_error;
};

/* A posted operation. 'ctx' comes first: the provider gets &op->ctx. */
struct op {
    struct fi_context ctx;
    struct transport_xfer *x;
    struct transport_done *done;
    struct op *prev, *next; /* the fabric's operations in flight */
};

static int
errno_from_fi(ssize_t rc)
{
    if (rc >= 0)
        return 0;
    int e = (int)-rc;
    /* libfabric's own codes start at 256: map them to something errno-like. */
    return e < 256 ? -e : -EIO;
}

static int open_endpoint(struct transport_fabric *f);
static int reset_locked(struct transport_fabric *f);

/* Completes 'o' with 'status'. Caller holds the lock. */
static void
op_complete(struct transport_fabric *f, struct op *o, int status)
{
    struct transport_xfer *x = o->x;
    if (o->prev)
        o->prev->next = o->next;
    else
        f->ops = o->next;
    if (o->next)
        o->next->prev = o->prev;
    x->in_flight--;
    if (status < 0 && x->first_error == 0)
        x->first_error = status;
    o->done->status = status;
    free(o);
}

/* Forgets the cached peer 'fa' (after a failure: the next request from
 * that address starts afresh). Caller holds the lock. */
static void
peer_forget(struct transport_fabric *f, fi_addr_t fa)
{
    for (size_t i = 0; i < PEER_CACHE; i++)
        if (f->peers[i].used && f->peers[i].fa == fa) {
            fi_av_remove(f->av, &fa, 1, 0);
            f->peers[i].used = 0;
        }
}

/* Polls the completion queue once. Returns the completions handled.
 * Caller holds the lock. */
static int
poll_locked(struct transport_fabric *f)
{
    struct fi_cq_entry entries[16];
    ssize_t n = fi_cq_read(f->cq, entries, ARRAY_LEN(entries));
    if (n > 0) {
        for (ssize_t i = 0; i < n; i++)
            op_complete(f, entries[i].op_context, 0);
        return (int)n;
    }
    if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry err;
        memset(&err, 0, sizeof(err));
        if (fi_cq_readerr(f->cq, &err, 0) == 1 && err.op_context) {
            struct op *o = err.op_context;
            int st = err.err > 0 && err.err < 256 ? -err.err : -EIO;
            peer_forget(f, o->x->fa);
            op_complete(f, o, st);
            return 1;
        }
    }
    return 0;
}

static void
sleep_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static void *
progress_main(void *arg)
{
    struct transport_fabric *f = arg;
    pthread_mutex_lock(&f->lock);
    long idle_us = 0;
    while (!f->is_stopping) {
        if (f->holds == 0) {
            pthread_cond_wait(&f->cond, &f->lock);
            idle_us = 0;
            continue;
        }
        /* The target side of an emulated RMA (tcp) moves bytes only
         * while polled; back off to a short sleep when nothing happens,
         * so a waiting client costs little CPU. */
        int n = poll_locked(f);
        pthread_mutex_unlock(&f->lock);
        if (n > 0)
            idle_us = 0;
        else if (idle_us < 200)
            idle_us += 20;
        if (idle_us)
            sleep_us(idle_us);
        pthread_mutex_lock(&f->lock);
    }
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

/* The provider string of libfabric for a configured name. */
static const char *
provider_lookup(const char *name)
{
    static const char *const names[][2] = {
        {"shm", "shm"},
        {"tcp", "tcp;ofi_rxm"},
        {"verbs", "verbs;ofi_rxm"},
        {"efa", "efa"},
    };
    for (size_t i = 0; i < ARRAY_LEN(names); i++)
        if (strcmp(name, names[i][0]) == 0 || strcmp(name, names[i][1]) == 0)
            return names[i][1];
    return NULL;
}

/* Removes the shm regions that processes of ours (named "shard_PID_...",
 * below) left in /dev/shm when they were killed: nobody maps them any
 * more, and each holds the provider's 16 MiB. */
static void
shm_sweep(void)
{
    DIR *d = opendir("/dev/shm");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int pid;
        if (sscanf(e->d_name, "shard_%d_", &pid) != 1 || pid <= 0)
            continue;
        if (kill(pid, 0) == 0 || errno != ESRCH)
            continue;
        char path[300];
        snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
        unlink(path);
    }
    closedir(d);
}

static int
open_provider(struct transport_fabric *f, const char *prov, const char *node)
{
    struct fi_info *hints = fi_allocinfo();
    int rc = -ENOMEM;
    if (!hints)
        return rc;
    hints->caps = FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    hints->mode = FI_CONTEXT;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode =
        FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    hints->domain_attr->threading = FI_THREAD_SAFE;
    hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
    hints->fabric_attr->prov_name = strdup(prov);
    char name[64];
    if (strcmp(prov, "shm") == 0) {
        /* shm names its region after the pid, or after 'node' (it binds
         * no address: a node is only a name); a region a killed process
         * left behind would then collide with (or be taken for) a later
         * process of the same name. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(name, sizeof(name), "shard_%d_%lx", (int)getpid(),
                 (unsigned long)(ts.tv_nsec ^ (ts.tv_sec << 20) ^ (uintptr_t)f));
        node = name;
        shm_sweep();
    }
    rc = fi_getinfo(FI_VERSION(1, 9), node, NULL, node ? FI_SOURCE : 0, hints, &f->info);
    fi_freeinfo(hints);
    if (rc != 0) {
        f->info = NULL;
        return -ENODEV;
    }
    snprintf(f->provider, sizeof(f->provider), "%s", f->info->fabric_attr->prov_name);
    f->mr_mode = f->info->domain_attr->mr_mode;
    rc = fi_fabric(f->info->fabric_attr, &f->fabric, NULL);
    if (rc == 0)
        rc = fi_domain(f->fabric, f->info, &f->domain, NULL);
    if (rc == 0)
        rc = open_endpoint(f);
    if (rc != 0) {
        log_warn("rdma: provider %s: %s", prov, fi_strerror(-rc));
        return -ENODEV;
    }
    return 0;
}

/* Opens the endpoint, its completion queue and address vector on the
 * domain. Returns 0 or a negative libfabric code. */
static int
open_endpoint(struct transport_fabric *f)
{
    struct fi_cq_attr cq_attr = {
        .size = 1024, .format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_NONE};
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    int rc = fi_cq_open(f->domain, &cq_attr, &f->cq, NULL);
    if (rc == 0)
        rc = fi_av_open(f->domain, &av_attr, &f->av, NULL);
    if (rc == 0)
        rc = fi_endpoint(f->domain, f->info, &f->ep, NULL);
    if (rc == 0)
        rc = fi_ep_bind(f->ep, &f->av->fid, 0);
    if (rc == 0)
        rc = fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV);
    if (rc == 0)
        rc = fi_enable(f->ep);
    f->name_len = sizeof(f->name);
    if (rc == 0)
        rc = fi_getname(&f->ep->fid, f->name, &f->name_len);
    return rc;
}

static void
close_endpoint(struct transport_fabric *f)
{
    if (f->ep)
        fi_close(&f->ep->fid);
    if (f->av)
        fi_close(&f->av->fid);
    if (f->cq)
        fi_close(&f->cq->fid);
    f->ep = NULL;
    f->av = NULL;
    f->cq = NULL;
}

/*
 * A peer that completes nothing can stall the endpoint for everyone (shm
 * answers its peers in order, so a dead one holds up the rest): start
 * again with a fresh endpoint. Every operation in flight is cancelled
 * (its buffers are no longer the provider's), every cached peer
 * forgotten, and transfers begun before fail their next post. Caller holds
 * the lock. Returns 0 or -ENODEV (the endpoint could not be reopened:
 * every later transfer fails).
 */
static int
reset_locked(struct transport_fabric *f)
{
    close_endpoint(f);
    while (f->ops)
        op_complete(f, f->ops, -ECANCELED);
    memset(f->peers, 0, sizeof(f->peers));
    f->generation++;
    int rc = open_endpoint(f);
    log_warn("rdma: endpoint reset after a stalled transfer%s", rc ? ": reopen failed" : "");
    return rc ? -ENODEV : 0;
}

static void
close_fids(struct transport_fabric *f)
{
    close_endpoint(f);
    if (f->domain)
        fi_close(&f->domain->fid);
    if (f->fabric)
        fi_close(&f->fabric->fid);
    if (f->info)
        fi_freeinfo(f->info);
    f->domain = NULL;
    f->fabric = NULL;
    f->info = NULL;
}

bool
transport_is_available(void)
{
    return true;
}

int
transport_fabric_open(const struct transport_config *cfg, struct transport_fabric **out)
{
    static const char *const auto_order[] = {"efa", "verbs;ofi_rxm", "shm"};
    struct transport_fabric *f = xcalloc(1, sizeof(*f));
    int rc = -ENOTSUP;
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->cond, NULL);
    f->next_key = 1;
    f->post_timeout_ms = cfg->post_timeout_ms > 0 ? cfg->post_timeout_ms : 30000;
    if (strcmp(cfg->provider, "auto") == 0) {
        rc = -ENODEV;
        for (size_t i = 0; i < ARRAY_LEN(auto_order) && rc != 0; i++) {
            rc = open_provider(f, auto_order[i], cfg->node);
            if (rc != 0)
                close_fids(f);
        }
    } else {
        const char *prov = provider_lookup(cfg->provider);
        if (prov)
            rc = open_provider(f, prov, cfg->node);
    }
    if (rc != 0)
        goto fail;
    if (cfg->has_progress_thread) {
        if (pthread_create(&f->thread, NULL, progress_main, f) != 0) {
            rc = -EAGAIN;
            goto fail;
        }
        f->has_thread = true;
    }
    *out = f;
    return 0;

fail:
    close_fids(f);
    pthread_cond_destroy(&f->cond);
    pthread_mutex_destroy(&f->lock);
    free(f);
    return rc;
}

void
transport_fabric_close(struct transport_fabric *f)
{
    if (!f)
        return;
    if (f->has_thread) {
        pthread_mutex_lock(&f->lock);
        f->is_stopping = true;
        pthread_cond_signal(&f->cond);
        pthread_mutex_unlock(&f->lock);
        pthread_join(f->thread, NULL);
    }
    close_fids(f);
    pthread_cond_destroy(&f->cond);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

const char *
transport_fabric_provider(const struct transport_fabric *f)
{
    return f->provider;
}

bool
transport_fabric_needs_local_region(const struct transport_fabric *f)
{
    return (f->mr_mode & FI_MR_LOCAL) != 0;
}

void
transport_fabric_hold(struct transport_fabric *f)
{
    pthread_mutex_lock(&f->lock);
    if (f->holds++ == 0)
        pthread_cond_signal(&f->cond);
    pthread_mutex_unlock(&f->lock);
}

void
transport_fabric_release(struct transport_fabric *f)
{
    pthread_mutex_lock(&f->lock);
    f->holds--;
    pthread_mutex_unlock(&f->lock);
}

/* ---- memory regions ------------------------------------------------------ */

int
transport_region_create(struct transport_fabric *f, void *buf, size_t len, unsigned access,
                        struct transport_region **out)
{
    uint64_t acc = 0;
    if (access & TRANSPORT_REMOTE_WRITE)
        acc |= FI_REMOTE_WRITE;
    if (access & TRANSPORT_REMOTE_READ)
        acc |= FI_REMOTE_READ;
    if (access & TRANSPORT_LOCAL)
        acc |= FI_READ | FI_WRITE;
    struct transport_region *r = xcalloc(1, sizeof(*r));
    r->f = f;
    r->base = buf;
    r->len = len;
    pthread_mutex_lock(&f->lock);
    uint64_t key = f->next_key++;
    int rc = fi_mr_reg(f->domain, buf, len, acc, 0, key, 0, &r->mr, NULL);
    if (rc == 0 && (f->mr_mode & FI_MR_ENDPOINT)) {
        rc = fi_mr_bind(r->mr, &f->ep->fid, 0);
        if (rc == 0)
            rc = fi_mr_enable(r->mr);
    }
    pthread_mutex_unlock(&f->lock);
    if (rc != 0) {
        if (r->mr)
            fi_close(&r->mr->fid);
        free(r);
        return errno_from_fi(rc);
    }
    *out = r;
    return 0;
}

void
transport_region_destroy(struct transport_region *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->f->lock);
    fi_close(&r->mr->fid);
    pthread_mutex_unlock(&r->f->lock);
    free(r);
}

int
transport_region_token(const struct transport_region *r, const void *buf, uint64_t len,
                       uint64_t nonce, struct transport_token *t)
{
    const uint8_t *p = buf;
    if (p < r->base || len == 0 || (uint64_t)(p - r->base) > r->len ||
        len > r->len - (uint64_t)(p - r->base))
        return -ERANGE;
    memset(t, 0, sizeof(*t));
    snprintf(t->provider, sizeof(t->provider), "%s", r->f->provider);
    memcpy(t->addr, r->f->name, r->f->name_len);
    t->addr_len = r->f->name_len;
    t->key = fi_mr_key(r->mr);
    /* Without FI_MR_VIRT_ADDR the target address counts from the region. */
    t->remote_addr =
        (r->f->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)p : (uint64_t)(p - r->base);
    t->len = len;
    t->nonce = nonce;
    return 0;
}

/* ---- transfers ------------------------------------------------------------- */

/* The peer's fabric address, inserted once and cached. Caller holds the lock. */
static int
peer_resolve(struct transport_fabric *f, const struct transport_token *t, fi_addr_t *fa)
{
    struct peer *lru = &f->peers[0];
    for (size_t i = 0; i < PEER_CACHE; i++) {
        struct peer *p = &f->peers[i];
        if (p->used && p->addr_len == t->addr_len && memcmp(p->addr, t->addr, t->addr_len) == 0) {
            p->used = ++f->peer_clock;
            *fa = p->fa;
            return 0;
        }
        if (p->used < lru->used)
            lru = p;
    }
    if (lru->used) {
        fi_av_remove(f->av, &lru->fa, 1, 0);
        lru->used = 0;
    }
    int n = fi_av_insert(f->av, t->addr, 1, fa, 0, NULL);
    if (n != 1)
        return -EHOSTUNREACH;
    memcpy(lru->addr, t->addr, t->addr_len);
    lru->addr_len = t->addr_len;
    lru->fa = *fa;
    lru->used = ++f->peer_clock;
    return 0;
}

int
transport_xfer_begin(struct transport_fabric *f, const struct transport_token *t,
                     struct transport_xfer **out)
{
    if (strcmp(t->provider, f->provider) != 0)
        return -EPROTO;
    struct transport_xfer *x = xcalloc(1, sizeof(*x));
    x->f = f;
    x->t = *t;
    pthread_mutex_lock(&f->lock);
    x->generation = f->generation;
    int rc = f->ep ? peer_resolve(f, t, &x->fa) : -ENODEV;
    pthread_mutex_unlock(&f->lock);
    if (rc != 0) {
        free(x);
        return rc;
    }
    *out = x;
    return 0;
}

static int
xfer_post(struct transport_xfer *x, bool is_write, uint64_t off, void *local, size_t len,
          struct transport_region *region, struct transport_done *done)
{
    struct transport_fabric *f = x->f;
    if (len == 0 || off > x->t.len || len > x->t.len - off || len > CHUNK_MAX)
        return -ERANGE;
    if ((f->mr_mode & FI_MR_LOCAL) && !region)
        return -EINVAL;
    struct op *o = xcalloc(1, sizeof(*o));
    o->x = x;
    o->done = done;
    done->status = 1;
    void *desc = region ? fi_mr_desc(region->mr) : NULL;
    struct iovec iov = {local, len};
    struct fi_rma_iov riov = {.addr = x->t.remote_addr + off, .len = len, .key = x->t.key};
    struct fi_msg_rma msg = {
        .msg_iov = &iov,
        .desc = &desc,
        .iov_count = 1,
        .addr = x->fa,
        .rma_iov = &riov,
        .rma_iov_count = 1,
        .context = &o->ctx,
    };
    ssize_t rc;
    int64_t deadline = clock_mono_ns() + (int64_t)f->post_timeout_ms * 1000000;
    pthread_mutex_lock(&f->lock);
    if (x->generation != f->generation) {
        pthread_mutex_unlock(&f->lock);
        free(o);
        done->status = -ECANCELED;
        return -ECANCELED;
    }
    for (;;) {
        rc = is_write ? fi_writemsg(f->ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE)
                      : fi_readmsg(f->ep, &msg, FI_COMPLETION);
        if (rc != -FI_EAGAIN || clock_mono_ns() > deadline)
            break;
        /* The queue is full: completing earlier operations makes room. */
        poll_locked(f);
        pthread_mutex_unlock(&f->lock);
        sleep_us(10);
        pthread_mutex_lock(&f->lock);
    }
    if (rc == 0) {
        x->in_flight++;
        o->next = f->ops;
        if (f->ops)
            f->ops->prev = o;
        f->ops = o;
    } else if (rc == -FI_EAGAIN) {
        reset_locked(f); /* stalled: see transport_config.post_timeout_ms */
    }
    pthread_mutex_unlock(&f->lock);
    if (rc != 0) {
        done->status = errno_from_fi(rc);
        free(o);
        return rc == -FI_EAGAIN ? -ETIMEDOUT : errno_from_fi(rc);
    }
    return 0;
}

int
transport_xfer_write(struct transport_xfer *x, uint64_t off, const void *src, size_t len,
                     struct transport_region *region, struct transport_done *done)
{
    return xfer_post(x, true, off, (void *)src, len, region, done);
}

int
transport_xfer_read(struct transport_xfer *x, uint64_t off, void *dst, size_t len,
                    struct transport_region *region, struct transport_done *done)
{
    return xfer_post(x, false, off, dst, len, region, done);
}

int
transport_xfer_wait(struct transport_xfer *x, struct transport_done *done, int timeout_ms)
{
    struct transport_fabric *f = x->f;
    int64_t deadline = clock_mono_ns() + (int64_t)timeout_ms * 1000000;
    unsigned spins = 0;
    for (;;) {
        pthread_mutex_lock(&f->lock);
        int st = done->status;
        if (st == 1 && poll_locked(f) > 0)
            st = done->status;
        pthread_mutex_unlock(&f->lock);
        if (st != 1)
            return st;
        if (clock_mono_ns() > deadline) {
            pthread_mutex_lock(&f->lock);
            if (done->status == 1)
                reset_locked(f);
            pthread_mutex_unlock(&f->lock);
            return -ETIMEDOUT;
        }
        /* Spin briefly (small transfers complete in microseconds), then
         * yield the core to the threads doing the copies. */
        if (++spins > 64)
            sleep_us(spins > 1024 ? 50 : 5);
    }
}

int
transport_xfer_end(struct transport_xfer *x, int timeout_ms)
{
    if (!x)
        return 0;
    struct transport_fabric *f = x->f;
    int64_t deadline = clock_mono_ns() + (int64_t)timeout_ms * 1000000;
    pthread_mutex_lock(&f->lock);
    while (x->in_flight > 0 && clock_mono_ns() < deadline) {
        if (poll_locked(f) == 0) {
            pthread_mutex_unlock(&f->lock);
            sleep_us(20);
            pthread_mutex_lock(&f->lock);
        }
    }
    if (x->in_flight > 0)
        reset_locked(f); /* cancels them all */
    int rc = x->first_error;
    pthread_mutex_unlock(&f->lock);
    free(x);
    return rc;
}

#else /* !HAVE_LIBFABRIC */

bool
transport_is_available(void)
{
    return false;
}

int
transport_fabric_open(const struct transport_config *cfg, struct transport_fabric **out)
{
    (void)cfg;
    (void)out;
    return -ENOTSUP;
}

void
transport_fabric_close(struct transport_fabric *f)
{
    (void)f;
}

const char *
transport_fabric_provider(const struct transport_fabric *f)
{
    (void)f;
    return "";
}

bool
transport_fabric_needs_local_region(const struct transport_fabric *f)
{
    (void)f;
    return true;
}

void
transport_fabric_hold(struct transport_fabric *f)
{
    (void)f;
}

void
transport_fabric_release(struct transport_fabric *f)
{
    (void)f;
}

int
transport_region_create(struct transport_fabric *f, void *buf, size_t len, unsigned access,
                        struct transport_region **out)
{
    (void)f;
    (void)buf;
    (void)len;
    (void)access;
    (void)out;
    return -ENOTSUP;
}

void
transport_region_destroy(struct transport_region *r)
{
    (void)r;
}

int
transport_region_token(const struct transport_region *r, const void *buf, uint64_t len,
                       uint64_t nonce, struct transport_token *t)
{
    (void)r;
    (void)buf;
    (void)len;
    (void)nonce;
    (void)t;
    return -ENOTSUP;
}

int
transport_xfer_begin(struct transport_fabric *f, const struct transport_token *t,
                     struct transport_xfer **out)
{
    (void)f;
    (void)t;
    (void)out;
    return -ENOTSUP;
}

int
transport_xfer_write(struct transport_xfer *x, uint64_t off, const void *src, size_t len,
                     struct transport_region *region, struct transport_done *done)
{
    (void)x;
    (void)off;
    (void)src;
    (void)len;
    (void)region;
    (void)done;
    return -ENOTSUP;
}

int
transport_xfer_read(struct transport_xfer *x, uint64_t off, void *dst, size_t len,
                    struct transport_region *region, struct transport_done *done)
{
    (void)x;
    (void)off;
    (void)dst;
    (void)len;
    (void)region;
    (void)done;
    return -ENOTSUP;
}

int
transport_xfer_wait(struct transport_xfer *x, struct transport_done *done, int timeout_ms)
{
    (void)x;
    (void)done;
    (void)timeout_ms;
    return -ENOTSUP;
}

int
transport_xfer_end(struct transport_xfer *x, int timeout_ms)
{
    (void)x;
    (void)timeout_ms;
    return 0;
}

#endif
