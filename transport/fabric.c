/*
 * fabric.c: the libfabric side of transport.h. The only file that includes
 * libfabric and the only place a provider name means anything.
 *
 * One fabric = one domain, one address vector and 1..TRANSPORT_LANES_MAX
 * FI_EP_RDM endpoints ("lanes", each with its completion queue and, with
 * FI_RMA_EVENT, a counter of peers' accesses), under one mutex; the
 * providers used here make progress only when polled (FI_PROGRESS_MANUAL
 * for data), so each lane may have a progress thread (progress_main).
 * Our transfers all go out on lane 0, spread over the peer's lanes.
 * Transfers are one-sided FI_RMA: fi_writemsg with FI_DELIVERY_COMPLETE (the bytes are in
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
 * libfabric itself is dlopen()ed on the first transport_fabric_open (or
 * transport_is_available), never linked: its providers' constructors run
 * at load (Debian's PSM pulls in libinfinipath, which calibrates a clock
 * with hundreds of usleeps: 0.2 s, 724 clock_nanosleep under strace),
 * and every process linking libshard paid that at start though most
 * never use RDMA. The headers stay the only
 * compile-time dependency; the few non-inline calls (the rest of the API
 * is static inline through the objects' ops tables) go through 'fab'.
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
#include <rdma/fi_eq.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <dirent.h>
#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* The library loaded at run time (its soname, as libfabric1 installs it). */
#define FABRIC_LIB "libfabric.so.1"

/* libfabric's non-inline entry points, resolved once by fab_load. */
static struct {
    void *handle; /* NULL: not loadable (error says why) */
    int (*getinfo)(uint32_t version, const char *node, const char *service, uint64_t flags,
                   const struct fi_info *hints, struct fi_info **info);
    void (*freeinfo)(struct fi_info *info);
    struct fi_info *(*dupinfo)(const struct fi_info *info);
    int (*fabric)(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
    const char *(*strerror)(int errnum);
    char error[256];
} fab;
static pthread_once_t fab_once = PTHREAD_ONCE_INIT;

static void
fab_load_once(void)
{
    void *h = dlopen(FABRIC_LIB, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(fab.error, sizeof(fab.error), "%s", e ? e : FABRIC_LIB ": cannot be loaded");
        return;
    }
    /* Through void * (dlsym's type); POSIX guarantees the conversion. */
    void *sym[5] = {dlsym(h, "fi_getinfo"), dlsym(h, "fi_freeinfo"), dlsym(h, "fi_dupinfo"),
                    dlsym(h, "fi_fabric"), dlsym(h, "fi_strerror")};
    for (size_t i = 0; i < ARRAY_LEN(sym); i++)
        if (!sym[i]) {
            snprintf(fab.error, sizeof(fab.error), "%s: missing symbols", FABRIC_LIB);
            dlclose(h);
            return;
        }
    memcpy(&fab.getinfo, &sym[0], sizeof(void *));
    memcpy(&fab.freeinfo, &sym[1], sizeof(void *));
    memcpy(&fab.dupinfo, &sym[2], sizeof(void *));
    memcpy(&fab.fabric, &sym[3], sizeof(void *));
    memcpy(&fab.strerror, &sym[4], sizeof(void *));
    fab.handle = h; /* never closed: providers keep threads and atexit hooks */
}

/* Loads libfabric on first use (thread-safe). Returns whether it is usable. */
static bool
fab_load(void)
{
    pthread_once(&fab_once, fab_load_once);
    return fab.handle != NULL;
}

#define PEER_CACHE 64
/* A provider is asked for messages no larger than this. */
#define CHUNK_MAX (16u << 20)

struct peer {
    uint8_t addr[TRANSPORT_ADDR_MAX];
    size_t addr_len;
    fi_addr_t fa;
    uint64_t used; /* LRU stamp; 0: free */
    int in_flight; /* our operations to it */
};

/* One endpoint of the fabric, with its own queue and (passive side) its
 * own progress thread: the provider moves a peer's RMA on the target's
 * progress, so each lane is one core copying. */
struct lane {
    struct transport_fabric *f;
    struct fid_cq *cq;
    struct fid_cntr *rcntr; /* peers' accesses to our regions (FI_RMA_EVENT); may be NULL */
    struct fid_ep *ep;
    uint8_t name[TRANSPORT_ADDR_MAX];
    size_t name_len;
    pthread_t thread;
    bool has_thread;
};

struct transport_fabric {
    pthread_mutex_t lock;
    /* Held for reading by a progress thread while it drives its lane
     * without 'lock', for writing while endpoints are closed. */
    pthread_rwlock_t ep_lock;
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct lane lanes[TRANSPORT_LANES_MAX];
    size_t n_lanes;
    bool has_ep; /* the endpoints are open */
    char provider[TRANSPORT_PROVIDER_MAX];
    uint64_t mr_mode;
    uint64_t next_key;
    int post_timeout_ms;
    struct peer peers[PEER_CACHE];
    uint64_t peer_clock;
    struct op *ops;      /* in flight */
    uint64_t generation; /* bumped by reset_locked */
    /* The progress threads (transport_config.has_progress_thread). */
    bool has_threads;
    bool is_stopping;
    int holds;
    pthread_cond_t cond;    /* holds or ops appeared, or stopping */
    struct waiter *waiters; /* threads asleep in transport_xfer_wait/_end */
};

/* A thread waiting for one transfer ('done') or for all of 'x' to end;
 * op_complete wakes it (on its stack; listed while it waits). */
struct waiter {
    const struct transport_done *done;
    const struct transport_xfer *x;
    int lane_pid; /* waits for a free lane of this shm peer (0: not) */
    pthread_cond_t cond;
    struct waiter *next;
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
    fi_addr_t fa[TRANSPORT_LANES_MAX]; /* the token's lanes */
    size_t n_fa;
    size_t next_lane; /* posts go round the lanes */
    int peer_pid;     /* an shm peer of ours (named shard_PID_...); 0: unknown */
    uint64_t generation;
    int in_flight;
    int first_error;
};

/* A posted operation. 'ctx' comes first: the provider gets &op->ctx. */
struct op {
    struct fi_context ctx;
    struct transport_xfer *x;
    fi_addr_t fa; /* the lane it went to */
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

static int open_endpoints(struct transport_fabric *f);
static int reset_locked(struct transport_fabric *f);

/* The cached peer of 'fa', or NULL. Caller holds the lock. */
static struct peer *
peer_of(struct transport_fabric *f, fi_addr_t fa)
{
    for (size_t i = 0; i < PEER_CACHE; i++)
        if (f->peers[i].used && f->peers[i].fa == fa)
            return &f->peers[i];
    return NULL;
}

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
    struct peer *p = peer_of(f, o->fa);
    if (p && p->in_flight > 0 && --p->in_flight == 0 && x->peer_pid) {
        /* A lane of an shm peer is free: wake its oldest poster. */
        struct waiter *oldest = NULL;
        for (struct waiter *w = f->waiters; w; w = w->next)
            if (w->lane_pid == x->peer_pid)
                oldest = w;
        if (oldest)
            pthread_cond_signal(&oldest->cond);
    }
    if (status < 0 && x->first_error == 0)
        x->first_error = status;
    o->done->status = status;
    for (struct waiter *w = f->waiters; w; w = w->next)
        if (w->done == o->done || (w->x == x && x->in_flight == 0))
            pthread_cond_signal(&w->cond);
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
    int done = 0;
    for (size_t l = 0; l < f->n_lanes && f->has_ep; l++) {
        struct fid_cq *cq = f->lanes[l].cq;
        struct fi_cq_entry entries[16];
        ssize_t n = fi_cq_read(cq, entries, ARRAY_LEN(entries));
        for (ssize_t i = 0; i < n; i++)
            op_complete(f, entries[i].op_context, 0);
        if (n > 0)
            done += (int)n;
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry err;
            memset(&err, 0, sizeof(err));
            if (fi_cq_readerr(cq, &err, 0) == 1 && err.op_context) {
                struct op *o = err.op_context;
                int st = err.err > 0 && err.err < 256 ? -err.err : -EIO;
                peer_forget(f, o->fa);
                op_complete(f, o, st);
                done++;
            }
        }
    }
    return done;
}

/* Sleeps 'us' microseconds. The calling thread's timer slack is cut to
 * 1 us the first time: with Linux's default 50 us slack every short poll
 * interval here became ~60 us, a latency a 64 KiB transfer paid twice. */
static void
sleep_us(long us)
{
    static _Thread_local bool is_slack_set;
    if (!is_slack_set) {
        prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
        is_slack_set = true;
    }
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/*
 * A progress thread, one per lane. On the passive side (a client holding
 * the fabric) the target side of a peer's RMA (shm copies there, tcp
 * receives there) moves bytes only while polled, and completes nothing in
 * our queue. With a counter of peers' accesses (FI_RMA_EVENT) the thread
 * drives its lane by reading the counter, without the fabric lock, so
 * lanes copy in parallel, and the count tells whether a poll moved bytes;
 * without one (one lane then) it polls the queue under the lock. On the
 * active side (our own transfers in flight) lane 0's thread polls the
 * queue and wakes each waiter when its transfer completes: one poller
 * for every request, instead of each waiting request sleeping and polling
 * (which cost the server more CPU than the copies). While bytes move it
 * polls back to back;
 * once idle it yields for PROGRESS_SPINS rounds, then sleeps 10, 20, ...
 * up to 100 us: a client waiting on a slow server costs little CPU, and a
 * burst of small transfers waits microseconds for its next poll.
 */
#define PROGRESS_SPINS 64
static void *
progress_main(void *arg)
{
    struct lane *ln = arg;
    struct transport_fabric *f = ln->f;
    unsigned idle = 0;
    uint64_t seen = 0;
    pthread_mutex_lock(&f->lock);
    while (!f->is_stopping) {
        /* Lane 0 also completes our own transfers and wakes their waiters. */
        bool has_ops = f->ops != NULL && ln == &f->lanes[0];
        if (f->holds == 0 && !has_ops) {
            pthread_cond_wait(&f->cond, &f->lock);
            idle = 0;
            continue;
        }
        bool is_busy = false, is_held = f->holds > 0;
        if (has_ops || !ln->rcntr)
            is_busy = poll_locked(f) > 0;
        pthread_mutex_unlock(&f->lock);
        if (ln->rcntr && is_held) {
            pthread_rwlock_rdlock(&f->ep_lock);
            uint64_t c = f->has_ep && ln->rcntr ? fi_cntr_read(ln->rcntr) : seen;
            pthread_rwlock_unlock(&f->ep_lock);
            is_busy = is_busy || c != seen;
            seen = c;
        }
        idle = is_busy ? 0 : idle + 1;
        if (idle > PROGRESS_SPINS)
            sleep_us((long)MIN((idle - PROGRESS_SPINS) * 10u, 100u));
        else if (idle > 0)
            sched_yield();
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
open_provider(struct transport_fabric *f, const char *prov, const char *node, bool wants_events)
{
    struct fi_info *hints = fab.dupinfo(NULL); /* fi_allocinfo */
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
    /* The passive side asks for FI_RMA_EVENT first (the counter its
     * progress thread watches); a provider without it still serves. */
    rc = -FI_ENODATA;
    if (wants_events) {
        hints->caps |= FI_RMA_EVENT;
        rc = fab.getinfo(FI_VERSION(1, 9), node, NULL, node ? FI_SOURCE : 0, hints, &f->info);
        hints->caps &= ~(uint64_t)FI_RMA_EVENT;
    }
    if (rc != 0)
        rc = fab.getinfo(FI_VERSION(1, 9), node, NULL, node ? FI_SOURCE : 0, hints, &f->info);
    fab.freeinfo(hints);
    if (rc != 0) {
        f->info = NULL;
        return -ENODEV;
    }
    snprintf(f->provider, sizeof(f->provider), "%s", f->info->fabric_attr->prov_name);
    f->mr_mode = f->info->domain_attr->mr_mode;
    /* Lanes share the domain's memory keys: only without per-endpoint
     * registration, and only with the counter their threads poll. */
    if (!(f->info->caps & FI_RMA_EVENT) || (f->mr_mode & FI_MR_ENDPOINT))
        f->n_lanes = 1;
    rc = fab.fabric(f->info->fabric_attr, &f->fabric, NULL);
    if (rc == 0)
        rc = fi_domain(f->fabric, f->info, &f->domain, NULL);
    if (rc == 0)
        rc = open_endpoints(f);
    if (rc != 0) {
        log_warn("rdma: provider %s: %s", prov, fab.strerror(-rc));
        return -ENODEV;
    }
    return 0;
}

/* Opens the address vector and each lane's endpoint with its completion
 * queue (and counter) on the domain. Returns 0 or a negative libfabric
 * code (then close_endpoints cleans up). */
static int
open_endpoints(struct transport_fabric *f)
{
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    int rc = fi_av_open(f->domain, &av_attr, &f->av, NULL);
    for (size_t l = 0; l < f->n_lanes && rc == 0; l++) {
        struct lane *ln = &f->lanes[l];
        struct fi_cq_attr cq_attr = {
            .size = 1024, .format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_NONE};
        ln->f = f;
        rc = fi_cq_open(f->domain, &cq_attr, &ln->cq, NULL);
        if (rc == 0)
            rc = fi_endpoint(f->domain, f->info, &ln->ep, NULL);
        if (rc == 0)
            rc = fi_ep_bind(ln->ep, &f->av->fid, 0);
        if (rc == 0)
            rc = fi_ep_bind(ln->ep, &ln->cq->fid, FI_TRANSMIT | FI_RECV);
        if (rc == 0 && (f->info->caps & FI_RMA_EVENT)) {
            struct fi_cntr_attr cntr_attr = {.events = FI_CNTR_EVENTS_COMP,
                                             .wait_obj = FI_WAIT_NONE};
            rc = fi_cntr_open(f->domain, &cntr_attr, &ln->rcntr, NULL);
            if (rc == 0)
                rc = fi_ep_bind(ln->ep, &ln->rcntr->fid, FI_REMOTE_WRITE | FI_REMOTE_READ);
        }
        if (rc == 0)
            rc = fi_enable(ln->ep);
        ln->name_len = sizeof(ln->name);
        if (rc == 0)
            rc = fi_getname(&ln->ep->fid, ln->name, &ln->name_len);
    }
    f->has_ep = rc == 0;
    return rc;
}

/* Closes the endpoints; the caller holds 'lock' (or is the only user). */
static void
close_endpoints(struct transport_fabric *f)
{
    pthread_rwlock_wrlock(&f->ep_lock);
    f->has_ep = false;
    for (size_t l = 0; l < TRANSPORT_LANES_MAX; l++) {
        struct lane *ln = &f->lanes[l];
        if (ln->ep)
            fi_close(&ln->ep->fid);
        if (ln->cq)
            fi_close(&ln->cq->fid);
        if (ln->rcntr)
            fi_close(&ln->rcntr->fid);
        ln->ep = NULL;
        ln->cq = NULL;
        ln->rcntr = NULL;
    }
    if (f->av)
        fi_close(&f->av->fid);
    f->av = NULL;
    pthread_rwlock_unlock(&f->ep_lock);
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
    close_endpoints(f);
    while (f->ops)
        op_complete(f, f->ops, -ECANCELED);
    memset(f->peers, 0, sizeof(f->peers));
    f->generation++;
    pthread_rwlock_wrlock(&f->ep_lock);
    int rc = open_endpoints(f);
    pthread_rwlock_unlock(&f->ep_lock);
    log_warn("rdma: endpoint reset after a stalled transfer%s", rc ? ": reopen failed" : "");
    return rc ? -ENODEV : 0;
}

static void
close_fids(struct transport_fabric *f)
{
    close_endpoints(f);
    if (f->domain)
        fi_close(&f->domain->fid);
    if (f->fabric)
        fi_close(&f->fabric->fid);
    if (f->info)
        fab.freeinfo(f->info);
    f->domain = NULL;
    f->fabric = NULL;
    f->info = NULL;
}

bool
transport_is_available(void)
{
    return fab_load();
}

const char *
transport_load_error(void)
{
    return fab_load() ? NULL : fab.error;
}

/* Stops and joins the progress threads. */
static void
stop_threads(struct transport_fabric *f)
{
    pthread_mutex_lock(&f->lock);
    f->is_stopping = true;
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->lock);
    for (size_t l = 0; l < TRANSPORT_LANES_MAX; l++)
        if (f->lanes[l].has_thread) {
            pthread_join(f->lanes[l].thread, NULL);
            f->lanes[l].has_thread = false;
        }
}

int
transport_fabric_open(const struct transport_config *cfg, struct transport_fabric **out)
{
    static const char *const auto_order[] = {"efa", "verbs;ofi_rxm", "shm"};
    if (!fab_load())
        return -ELIBACC;
    struct transport_fabric *f = xcalloc(1, sizeof(*f));
    int rc = -ENOTSUP;
    size_t lanes = MIN(MAX(cfg->lanes, 1u), (unsigned)TRANSPORT_LANES_MAX);
    pthread_mutex_init(&f->lock, NULL);
    pthread_rwlock_init(&f->ep_lock, NULL);
    pthread_cond_init(&f->cond, NULL);
    f->next_key = 1;
    f->post_timeout_ms = cfg->post_timeout_ms > 0 ? cfg->post_timeout_ms : 30000;
    if (strcmp(cfg->provider, "auto") == 0) {
        rc = -ENODEV;
        for (size_t i = 0; i < ARRAY_LEN(auto_order) && rc != 0; i++) {
            f->n_lanes = lanes;
            rc = open_provider(f, auto_order[i], cfg->node, cfg->has_progress_thread);
            if (rc != 0)
                close_fids(f);
        }
    } else {
        const char *prov = provider_lookup(cfg->provider);
        f->n_lanes = lanes;
        if (prov)
            rc = open_provider(f, prov, cfg->node, cfg->has_progress_thread);
    }
    if (rc != 0)
        goto fail;
    for (size_t l = 0; l < f->n_lanes && cfg->has_progress_thread; l++) {
        if (pthread_create(&f->lanes[l].thread, NULL, progress_main, &f->lanes[l]) != 0) {
            rc = -EAGAIN;
            goto fail;
        }
        f->lanes[l].has_thread = true;
        f->has_threads = true;
    }
    *out = f;
    return 0;

fail:
    stop_threads(f);
    close_fids(f);
    pthread_cond_destroy(&f->cond);
    pthread_rwlock_destroy(&f->ep_lock);
    pthread_mutex_destroy(&f->lock);
    free(f);
    return rc;
}

void
transport_fabric_close(struct transport_fabric *f)
{
    if (!f)
        return;
    stop_threads(f);
    close_fids(f);
    pthread_cond_destroy(&f->cond);
    pthread_rwlock_destroy(&f->ep_lock);
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
        pthread_cond_broadcast(&f->cond);
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
        rc = fi_mr_bind(r->mr, &f->lanes[0].ep->fid, 0);
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
    for (size_t l = 0; l < r->f->n_lanes; l++) {
        memcpy(t->addr[l], r->f->lanes[l].name, r->f->lanes[l].name_len);
        t->addr_len[l] = r->f->lanes[l].name_len;
    }
    t->n_lanes = r->f->n_lanes;
    t->key = fi_mr_key(r->mr);
    /* Without FI_MR_VIRT_ADDR the target address counts from the region. */
    t->remote_addr =
        (r->f->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)p : (uint64_t)(p - r->base);
    t->len = len;
    t->nonce = nonce;
    return 0;
}

/* ---- transfers ------------------------------------------------------------- */

/* The fabric address of 'addr' ('len' bytes: one lane of a peer),
 * inserted once and cached. Caller holds the lock. */
static int
peer_resolve(struct transport_fabric *f, const uint8_t *addr, size_t len, fi_addr_t *fa)
{
    struct peer *lru = &f->peers[0];
    for (size_t i = 0; i < PEER_CACHE; i++) {
        struct peer *p = &f->peers[i];
        if (p->used && p->addr_len == len && memcmp(p->addr, addr, len) == 0) {
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
    int n = fi_av_insert(f->av, addr, 1, fa, 0, NULL);
    if (n != 1)
        return -EHOSTUNREACH;
    memcpy(lru->addr, addr, len);
    lru->addr_len = len;
    lru->fa = *fa;
    lru->used = ++f->peer_clock;
    return 0;
}

/* The pid in an shm address of ours ("fi_shm://shard_PID_..."), else 0. */
static int
shm_peer_pid(const struct transport_fabric *f, const struct transport_token *t)
{
    char name[TRANSPORT_ADDR_MAX + 1];
    int pid = 0;
    if (strcmp(f->provider, "shm") != 0)
        return 0;
    memcpy(name, t->addr[0], t->addr_len[0]);
    name[t->addr_len[0]] = '\0';
    const char *p = strstr(name, "shard_");
    if (!p || sscanf(p, "shard_%d_", &pid) != 1 || pid <= 0)
        return 0;
    return pid;
}

/*
 * Whether the shm peer 'pid' can take a post: 1 running, 0 stopped, -1
 * gone (or a zombie). shm enqueues a command under a spinlock in the
 * peer's region, which the peer holds while it copies: posting to a peer
 * stopped, or killed, in the middle of a copy would spin forever, with
 * our lock held. Unknown peers (pid 0) count as running.
 */
static int
shm_peer_state(int pid)
{
    if (pid <= 0)
        return 1;
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *fp = fopen(path, "re");
    if (!fp)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    char state = paren && paren[1] == ' ' ? paren[2] : '?';
    if (state == 'Z' || state == 'X' || state == 'x')
        return -1;
    return state == 'T' || state == 't' ? 0 : 1;
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
    x->peer_pid = shm_peer_pid(f, t);
    pthread_mutex_lock(&f->lock);
    x->generation = f->generation;
    int rc = f->has_ep ? 0 : -ENODEV;
    for (size_t l = 0; l < t->n_lanes && rc == 0; l++)
        rc = peer_resolve(f, t->addr[l], t->addr_len[l], &x->fa[l]);
    x->n_fa = t->n_lanes;
    x->next_lane = (size_t)(t->nonce % TRANSPORT_LANES_MAX); /* small GETs spread too */
    pthread_mutex_unlock(&f->lock);
    if (rc != 0) {
        free(x);
        return rc;
    }
    *out = x;
    return 0;
}

/* Sleeps on 'w' (listed in the fabric) until op_complete wakes it or
 * 'deadline_ns' (CLOCK_MONOTONIC) passes. Caller holds the lock. */
static void
waiter_sleep(struct transport_fabric *f, struct waiter *w, int64_t deadline_ns)
{
    struct timespec until = {(time_t)(deadline_ns / 1000000000), (long)(deadline_ns % 1000000000)};
    pthread_cond_timedwait(&w->cond, &f->lock, &until);
}

static void
waiter_add(struct transport_fabric *f, struct waiter *w)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &attr);
    pthread_condattr_destroy(&attr);
    w->next = f->waiters;
    f->waiters = w;
}

static void
waiter_remove(struct transport_fabric *f, struct waiter *w)
{
    for (struct waiter **p = &f->waiters; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    pthread_cond_destroy(&w->cond);
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
        struct fid_ep *ep = f->lanes[0].ep;
        int state = shm_peer_state(x->peer_pid);
        if (state < 0) {
            rc = -FI_ECONNRESET;
            break;
        }
        /* The peer's lanes take the posts in turn: each is a core copying.
         * An shm peer of ours gets one operation per lane at a time: a
         * lane copies holding its region's spinlock, which a post to it
         * spins on, and a peer killed then would hold it forever. */
        struct peer *p = NULL;
        for (size_t i = 0; i < x->n_fa && !p; i++) {
            struct peer *q = peer_of(f, x->fa[(x->next_lane + i) % x->n_fa]);
            if (q && (q->in_flight == 0 || x->peer_pid == 0)) {
                p = q;
                x->next_lane += i + 1;
            }
        }
        if (state > 0 && p) {
            o->fa = p->fa;
            msg.addr = o->fa;
            rc = is_write ? fi_writemsg(ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE)
                          : fi_readmsg(ep, &msg, FI_COMPLETION);
            if (rc == 0)
                p->in_flight++;
        } else {
            rc = -FI_EAGAIN; /* stopped, or every lane busy: wait, up to the post timeout */
        }
        if (rc != -FI_EAGAIN || clock_mono_ns() > deadline)
            break;
        if (state > 0 && !p && f->has_threads) {
            /* Every lane busy: lane 0's thread wakes us when one frees
             * (or after 1 ms, to look again). */
            struct waiter w = {.lane_pid = x->peer_pid};
            waiter_add(f, &w);
            waiter_sleep(f, &w, MIN(deadline, clock_mono_ns() + 1000000));
            waiter_remove(f, &w);
        } else {
            /* The queue is full: completing earlier operations makes room. */
            poll_locked(f);
            pthread_mutex_unlock(&f->lock);
            sleep_us(state == 0 ? 1000 : 10);
            pthread_mutex_lock(&f->lock);
        }
        if (x->generation != f->generation) {
            rc = -FI_ECANCELED; /* reset meanwhile: the peer's addresses are gone */
            break;
        }
    }
    if (rc == 0) {
        x->in_flight++;
        o->next = f->ops;
        if (f->ops)
            f->ops->prev = o;
        else if (f->has_threads)
            pthread_cond_broadcast(&f->cond); /* lane 0's thread polls from now on */
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
    pthread_mutex_lock(&f->lock);
    if (f->has_threads) {
        /* Lane 0's thread polls; sleep until it completes 'done'. */
        struct waiter w = {.done = done};
        waiter_add(f, &w);
        while (done->status == 1 && clock_mono_ns() < deadline)
            waiter_sleep(f, &w, deadline);
        waiter_remove(f, &w);
    }
    for (;;) {
        int st = done->status;
        if (st == 1 && poll_locked(f) > 0)
            st = done->status;
        if (st != 1) {
            pthread_mutex_unlock(&f->lock);
            return st;
        }
        if (clock_mono_ns() > deadline) {
            reset_locked(f);
            pthread_mutex_unlock(&f->lock);
            return -ETIMEDOUT;
        }
        pthread_mutex_unlock(&f->lock);
        /* Spin briefly (small transfers complete in microseconds), then
         * yield the core to the threads doing the copies. */
        if (++spins > 64)
            sleep_us(spins > 1024 ? 50 : 5);
        pthread_mutex_lock(&f->lock);
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
    if (f->has_threads && x->in_flight > 0) {
        struct waiter w = {.x = x};
        waiter_add(f, &w);
        while (x->in_flight > 0 && clock_mono_ns() < deadline)
            waiter_sleep(f, &w, deadline);
        waiter_remove(f, &w);
    }
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

const char *
transport_load_error(void)
{
    return "built without libfabric";
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
