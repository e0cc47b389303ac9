/*
 * guard.c: the connection guard. MHD's only defence against slow clients is
 * an idle timeout that every byte resets; this file adds deadlines a
 * trickling client cannot extend.
 *
 * A table indexed by socket number holds every connection from accept
 * (guard_admit) to MHD's close notification, under one mutex taken only at
 * accept, at close and by the watchdog (never per request). MHD's callbacks
 * report each request's phase with a lock-free store; the watchdog thread
 * scans the table a few times a second, reads the kernel's byte counters
 * (TCP_INFO) of each socket, and shuts down (SHUT_RDWR) the sockets that
 * break a rule, which makes MHD close them. A socket is only shut down with
 * the mutex held and its entry live, and MHD reports the close before it
 * closes the socket, so a reused socket number is never hit.
 */
#include "common/common.h"
#include "server/guard.h"
#include "server/util.h"

#include <errno.h>
#include <linux/tcp.h> /* glibc's struct tcp_info lacks the byte counters */
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* An entry MHD was given but never reported started is forgotten after
 * this long (MHD refused it after accepting the hand-over). */
#define GUARD_PENDING_MAX_NS (10LL * 1000 * 1000 * 1000)
/* The watchdog releases the mutex after this many entries, so that accept
 * and close wait at most for a short stretch of the scan. */
#define GUARD_SCAN_CHUNK 256
/* Seconds between two summary log lines of what was dropped. */
#define GUARD_LOG_PERIOD_NS (10LL * 1000 * 1000 * 1000)

enum conn_state { CONN_FREE, CONN_PENDING, CONN_ACTIVE };

enum drop_reason {
    DROP_HEADERS, /* no complete request headers in time */
    DROP_BODY,    /* upload below the minimum rate */
    DROP_SEND,    /* the client read nothing of the response */
    DROP_EVICT,   /* made room for a new client at the limit */
    DROP_STOP,    /* shutdown */
    DROP_COUNT
};

static const char *const drop_names[DROP_COUNT] = {
    "no request headers in time", "upload below the minimum rate", "client stopped reading",
    "evicted at the connection limit", "shutdown"};

struct guard_conn {
    /* (sequence << 2) | enum guard_phase: written by the connection's
     * thread, read by the watchdog and the accept thread. A new sequence
     * number tells the watchdog a new phase began since its last look. */
    atomic_uint phase_word;
    /* The rest is under the guard's mutex. */
    int fd;
    enum conn_state state;
    bool is_dropped;
    bool has_ip;
    bool has_marks;       /* rx_mark, acked and progress_ns are set */
    bool is_next_request; /* idle: bytes of the next request arrived */
    uint32_t ip;          /* IPv4 address, network order */
    unsigned seen_word;   /* phase_word at the watchdog's last look */
    int64_t since_ns;     /* when the current phase (or next request) began */
    uint64_t rx_mark;     /* bytes received at the start of the rate window */
    int64_t rx_mark_ns;
    uint64_t acked; /* bytes acknowledged by the client at the last progress */
    int64_t progress_ns;
};

struct ip_slot {
    uint32_t ip;
    uint32_t n; /* 0: the slot is empty */
};

struct guard {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    bool is_stopping;
    struct guard_conn *conns; /* indexed by socket number */
    int n_fds;
    int fd_hi; /* every live entry is below this */
    uint32_t n_conns;
    uint32_t n_dropped; /* entries dropped and not yet closed by MHD */
    struct ip_slot *ips;
    uint32_t ip_mask; /* slots - 1 (a power of two) */
    int64_t exit_at_ns;
    uint32_t exit_after_s;
    int64_t log_at_ns;
    uint64_t dropped[DROP_COUNT];
    uint64_t refused_ip;
    uint64_t refused_full;
    /* Limits, from the configuration. */
    int64_t header_ns;
    int64_t body_window_ns;
    uint64_t body_min_bytes; /* per window */
    int64_t send_ns;
    uint32_t per_ip;
    uint32_t limit;
    int64_t scan_ns;
};

/* ======================================================================
 * Connections per client address: open addressing, linear probing
 * ====================================================================== */

/* The slot where the probe for 'ip' starts (Fibonacci hashing). */
static uint32_t
ip_home(const struct guard *g, uint32_t ip)
{
    return (ip * 2654435761u) & g->ip_mask;
}

/* The slot holding 'ip', or the empty slot where it would go. */
static struct ip_slot *
ip_find(struct guard *g, uint32_t ip)
{
    for (uint32_t i = ip_home(g, ip);; i = (i + 1) & g->ip_mask)
        if (g->ips[i].n == 0 || g->ips[i].ip == ip)
            return &g->ips[i];
}

/* Empties slot 's'. */
static void
ip_remove(struct guard *g, struct ip_slot *s)
{
    /* Backward-shift deletion keeps every probe chain unbroken. */
    uint32_t hole = (uint32_t)(s - g->ips);
    g->ips[hole].n = 0;
    for (uint32_t i = (hole + 1) & g->ip_mask; g->ips[i].n; i = (i + 1) & g->ip_mask) {
        uint32_t home = ip_home(g, g->ips[i].ip);
        /* Move the entry into the hole unless its home lies cyclically
         * in (hole, i]. */
        bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (stays)
            continue;
        g->ips[hole] = g->ips[i];
        g->ips[i].n = 0;
        hole = i;
    }
}

/* ======================================================================
 * The table
 * ====================================================================== */

/* Frees the entry 'c' and its count for its address. Called with the mutex
 * held. */
static void
conn_release(struct guard *g, struct guard_conn *c)
{
    if (c->has_ip) {
        struct ip_slot *s = ip_find(g, c->ip);
        if (s->n && --s->n == 0)
            ip_remove(g, s);
    }
    if (c->is_dropped)
        g->n_dropped--;
    g->n_conns--;
    c->state = CONN_FREE;
}

/* Shuts the socket of 'c' down for 'why'; MHD notices at its next poll and
 * closes the connection. Called with the mutex held. */
static void
conn_drop(struct guard *g, struct guard_conn *c, enum drop_reason why)
{
    shutdown(c->fd, SHUT_RDWR);
    c->is_dropped = true;
    g->n_dropped++;
    g->dropped[why]++;
    log_debug("guard: dropped connection %d: %s", c->fd, drop_names[why]);
}

/* The phase 'c' is in; '*word' gets the phase word it was read from. */
static enum guard_phase
conn_phase(const struct guard_conn *c, unsigned *word)
{
    *word = atomic_load_explicit(&c->phase_word, memory_order_acquire);
    return (enum guard_phase)(*word & 3u);
}

/* The connection to drop to make room at the limit: the one that has
 * waited longest for a request (headers or keep-alive), as nginx reuses its
 * idle keep-alive connections when it runs out. Under a flood of connections
 * each one then lives as long as it takes the flood to fill the table once,
 * and a real client needs far less to send its request. Called with the
 * mutex held. */
static struct guard_conn *
find_victim(struct guard *g, int64_t now)
{
    struct guard_conn *best = NULL;
    int64_t best_age = -1;
    for (int fd = 0; fd < g->fd_hi; fd++) {
        struct guard_conn *c = &g->conns[fd];
        if (c->state != CONN_ACTIVE || c->is_dropped)
            continue;
        unsigned word;
        enum guard_phase p = conn_phase(c, &word);
        if (word != c->seen_word || (p != GUARD_PHASE_HEADERS && p != GUARD_PHASE_IDLE))
            continue;
        if (now - c->since_ns > best_age) {
            best_age = now - c->since_ns;
            best = c;
        }
    }
    return best;
}

bool
guard_admit(struct guard *g, int fd, const struct sockaddr *sa, socklen_t len)
{
    bool is_admitted = false;
    int64_t now = clock_mono_ns();
    pthread_mutex_lock(&g->lock);
    if (fd < 0 || fd >= g->n_fds) {
        g->refused_full++;
        goto out;
    }
    struct guard_conn *c = &g->conns[fd];
    if (c->state != CONN_FREE)
        conn_release(g, c); /* MHD closed it without telling */
    bool has_ip = sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in);
    uint32_t ip = has_ip ? ((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr : 0;
    struct ip_slot *s = has_ip ? ip_find(g, ip) : NULL;
    if (s && g->per_ip && s->n >= g->per_ip) {
        g->refused_ip++;
        goto out;
    }
    if (g->n_conns - g->n_dropped >= g->limit) {
        struct guard_conn *victim = find_victim(g, now);
        if (!victim || g->n_dropped >= GUARD_CONNECTION_SLACK) {
            g->refused_full++;
            goto out;
        }
        conn_drop(g, victim, DROP_EVICT);
    }
    if (s) {
        s->ip = ip;
        s->n++;
    }
    memset(c, 0, sizeof(*c));
    c->fd = fd;
    c->state = CONN_PENDING;
    c->has_ip = has_ip;
    c->ip = ip;
    c->since_ns = now;
    atomic_store_explicit(&c->phase_word, GUARD_PHASE_HEADERS, memory_order_relaxed);
    c->seen_word = GUARD_PHASE_HEADERS;
    g->n_conns++;
    if (fd >= g->fd_hi)
        g->fd_hi = fd + 1;
    is_admitted = true;
out:
    pthread_mutex_unlock(&g->lock);
    return is_admitted;
}

void
guard_forget(struct guard *g, int fd)
{
    pthread_mutex_lock(&g->lock);
    if (fd >= 0 && fd < g->n_fds && g->conns[fd].state == CONN_PENDING)
        conn_release(g, &g->conns[fd]);
    pthread_mutex_unlock(&g->lock);
}

struct guard_conn *
guard_conn_started(struct guard *g, int fd)
{
    struct guard_conn *c = NULL;
    pthread_mutex_lock(&g->lock);
    if (fd >= 0 && fd < g->n_fds && g->conns[fd].state == CONN_PENDING) {
        c = &g->conns[fd];
        c->state = CONN_ACTIVE;
    }
    pthread_mutex_unlock(&g->lock);
    return c;
}

void
guard_conn_closed(struct guard *g, struct guard_conn *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&g->lock);
    if (c->state != CONN_FREE)
        conn_release(g, c);
    pthread_mutex_unlock(&g->lock);
}

void
guard_conn_phase(struct guard_conn *c, enum guard_phase phase)
{
    if (!c)
        return;
    /* Only the connection's own thread writes after admission. The same
     * phase again is no new phase (its window goes on). */
    unsigned w = atomic_load_explicit(&c->phase_word, memory_order_relaxed);
    if ((w & 3u) == (unsigned)phase)
        return;
    atomic_store_explicit(&c->phase_word, (((w >> 2) + 1) << 2) | (unsigned)phase,
                          memory_order_release);
}

/* ======================================================================
 * The watchdog
 * ====================================================================== */

/* Applies the rules to one live connection at time 'now'. Called with the
 * mutex held. */
static void
check_conn(struct guard *g, struct guard_conn *c, int64_t now)
{
    unsigned word;
    enum guard_phase p = conn_phase(c, &word);
    if (word != c->seen_word) {
        c->seen_word = word;
        c->since_ns = now;
        c->has_marks = false;
        c->is_next_request = false;
    }
    if (p == GUARD_PHASE_HEADERS) {
        if (g->header_ns && now - c->since_ns > g->header_ns)
            conn_drop(g, c, DROP_HEADERS);
        return;
    }
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    memset(&ti, 0, sizeof(ti));
    if (getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_notsent_bytes) + sizeof(ti.tcpi_notsent_bytes))
        return;
    if (!c->has_marks) {
        c->has_marks = true;
        c->rx_mark = ti.tcpi_bytes_received;
        c->rx_mark_ns = now;
        c->acked = ti.tcpi_bytes_acked;
        c->progress_ns = now;
    }
    switch (p) {
    case GUARD_PHASE_IDLE:
        /* MHD reports a request once its headers are in; the first byte of
         * the next one shows only in the kernel's count. */
        if (!c->is_next_request && ti.tcpi_bytes_received != c->rx_mark) {
            c->is_next_request = true;
            c->since_ns = now;
        }
        if (c->is_next_request && g->header_ns && now - c->since_ns > g->header_ns) {
            conn_drop(g, c, DROP_HEADERS);
            return;
        }
        break;
    case GUARD_PHASE_BODY:
        if (g->body_min_bytes && now - c->rx_mark_ns >= g->body_window_ns) {
            if (ti.tcpi_bytes_received - c->rx_mark < g->body_min_bytes) {
                conn_drop(g, c, DROP_BODY);
                return;
            }
            c->rx_mark = ti.tcpi_bytes_received;
            c->rx_mark_ns = now;
        }
        break;
    case GUARD_PHASE_HEADERS:
    case GUARD_PHASE_BUSY:
        break;
    }
    /* Send progress: bytes queued and none acknowledged for send_ns. */
    if (ti.tcpi_bytes_acked != c->acked || (ti.tcpi_notsent_bytes == 0 && ti.tcpi_unacked == 0)) {
        c->acked = ti.tcpi_bytes_acked;
        c->progress_ns = now;
    } else if (g->send_ns && now - c->progress_ns > g->send_ns) {
        conn_drop(g, c, DROP_SEND);
    }
}

/* One pass over the table, releasing the mutex every GUARD_SCAN_CHUNK
 * entries. Called with the mutex held. */
static void
scan(struct guard *g)
{
    for (int fd = 0; fd < g->fd_hi; fd++) {
        if (fd % GUARD_SCAN_CHUNK == GUARD_SCAN_CHUNK - 1) {
            pthread_mutex_unlock(&g->lock);
            pthread_mutex_lock(&g->lock);
        }
        struct guard_conn *c = &g->conns[fd];
        int64_t now = clock_mono_ns();
        if (c->state == CONN_PENDING && now - c->since_ns > GUARD_PENDING_MAX_NS)
            conn_release(g, c);
        else if (c->state == CONN_ACTIVE && !c->is_dropped)
            check_conn(g, c, now);
    }
    while (g->fd_hi > 0 && g->conns[g->fd_hi - 1].state == CONN_FREE)
        g->fd_hi--;
}

/* Logs what was dropped or refused since the last line, at most one line
 * per GUARD_LOG_PERIOD_NS. Called with the mutex held. */
static void
log_summary(struct guard *g, int64_t now)
{
    if (now < g->log_at_ns)
        return;
    uint64_t total = g->refused_ip + g->refused_full;
    for (int i = 0; i < DROP_COUNT; i++)
        total += g->dropped[i];
    if (!total)
        return;
    log_info("guard: dropped %llu connections (headers late %llu, upload slow %llu, reader "
             "stalled %llu, evicted at the limit %llu, at shutdown %llu), refused %llu "
             "(per-address cap %llu, full %llu) since the last such line",
             (unsigned long long)(total - g->refused_ip - g->refused_full),
             (unsigned long long)g->dropped[DROP_HEADERS],
             (unsigned long long)g->dropped[DROP_BODY], (unsigned long long)g->dropped[DROP_SEND],
             (unsigned long long)g->dropped[DROP_EVICT], (unsigned long long)g->dropped[DROP_STOP],
             (unsigned long long)(g->refused_ip + g->refused_full),
             (unsigned long long)g->refused_ip, (unsigned long long)g->refused_full);
    memset(g->dropped, 0, sizeof(g->dropped));
    g->refused_ip = 0;
    g->refused_full = 0;
    g->log_at_ns = now + GUARD_LOG_PERIOD_NS;
}

/* The watchdog thread: a scan every scan_ns until guard_destroy, and the
 * forced exit armed by guard_exit_after. */
static void *
watchdog_main(void *arg)
{
    struct guard *g = arg;
    pthread_mutex_lock(&g->lock);
    while (!g->is_stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t at = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + g->scan_ns;
        ts.tv_sec = (time_t)(at / 1000000000);
        ts.tv_nsec = (long)(at % 1000000000);
        pthread_cond_timedwait(&g->wake, &g->lock, &ts);
        if (g->is_stopping)
            break;
        int64_t now = clock_mono_ns();
        if (g->exit_at_ns && now >= g->exit_at_ns) {
            log_error("stopping: still not done after %u s; exiting now, dropping what is left",
                      g->exit_after_s);
            _exit(1);
        }
        scan(g);
        log_summary(g, now);
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

/* ======================================================================
 * Create, stop, destroy
 * ====================================================================== */

struct guard *
guard_create(const struct config *cfg, size_t stack_len)
{
    struct guard *g = xcalloc(1, sizeof(*g));
    pthread_mutex_init(&g->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->wake, &ca);
    pthread_condattr_destroy(&ca);
    struct rlimit rl;
    rlim_t n = 65536;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        n = rl.rlim_cur;
    g->n_fds = (int)MIN(MAX(n, (rlim_t)1024), (rlim_t)(1 << 20));
    g->conns = xcalloc((size_t)g->n_fds, sizeof(*g->conns));
    g->limit = cfg->connection_limit;
    /* Live entries never exceed limit + slack, nor the table. */
    uint64_t most = MIN((uint64_t)g->limit + GUARD_CONNECTION_SLACK, (uint64_t)g->n_fds);
    uint32_t slots = 16;
    while (slots < 2 * most)
        slots *= 2;
    g->ips = xcalloc(slots, sizeof(*g->ips));
    g->ip_mask = slots - 1;
    g->header_ns = (int64_t)cfg->header_timeout_s * 1000000000;
    g->send_ns = (int64_t)cfg->send_timeout_s * 1000000000;
    uint32_t window_s = MAX(cfg->body_rate_window_s, 1u);
    g->body_window_ns = (int64_t)window_s * 1000000000;
    g->body_min_bytes = cfg->min_body_rate * window_s;
    g->per_ip = cfg->connection_limit_per_ip;
    /* Scan four times per shortest deadline, at most once a second. */
    int64_t shortest = 1000000000;
    if (g->header_ns)
        shortest = MIN(shortest, g->header_ns / 4);
    if (g->send_ns)
        shortest = MIN(shortest, g->send_ns / 4);
    if (g->body_min_bytes)
        shortest = MIN(shortest, g->body_window_ns / 4);
    g->scan_ns = MAX(shortest, 100LL * 1000 * 1000);
    if (server_thread_start(&g->thread, "shard-guard", stack_len, watchdog_main, g) < 0)
        goto fail;
    return g;

fail:
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->lock);
    free(g->ips);
    free(g->conns);
    free(g);
    return NULL;
}

void
guard_drop(struct guard *g, enum guard_drop_what what)
{
    pthread_mutex_lock(&g->lock);
    for (int fd = 0; fd < g->fd_hi; fd++) {
        struct guard_conn *c = &g->conns[fd];
        if (c->state == CONN_FREE || c->is_dropped)
            continue;
        unsigned word;
        enum guard_phase p = conn_phase(c, &word);
        bool is_waiting =
            c->state == CONN_ACTIVE && (p == GUARD_PHASE_HEADERS || p == GUARD_PHASE_IDLE);
        if (what == GUARD_DROP_ALL || is_waiting)
            conn_drop(g, c, DROP_STOP);
    }
    pthread_mutex_unlock(&g->lock);
}

bool
guard_wait_closed(struct guard *g, uint32_t timeout_ms)
{
    int64_t deadline = clock_mono_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        uint32_t n_active = 0;
        pthread_mutex_lock(&g->lock);
        for (int fd = 0; fd < g->fd_hi; fd++)
            n_active += g->conns[fd].state == CONN_ACTIVE;
        pthread_mutex_unlock(&g->lock);
        if (n_active == 0)
            return true;
        if (clock_mono_ns() >= deadline)
            return false;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

void
guard_exit_after(struct guard *g, uint32_t seconds)
{
    pthread_mutex_lock(&g->lock);
    g->exit_at_ns = clock_mono_ns() + (int64_t)seconds * 1000000000;
    g->exit_after_s = seconds;
    pthread_mutex_unlock(&g->lock);
}

void
guard_destroy(struct guard *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    g->is_stopping = true;
    pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->lock);
    pthread_join(g->thread, NULL);
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->lock);
    free(g->ips);
    free(g->conns);
    free(g);
}
