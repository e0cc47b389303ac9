/*
 * listener.c: the listening socket and the thread that accepts on it.
 *
 * libmicrohttpd's thread pool lets every event-loop thread accept for
 * itself, so whichever thread happens to be idle takes a burst of new
 * connections, and 16 keep-alive clients can end up 12 on one thread and
 * 4 on the other: that thread saturates its core while the other idles.
 * Here one thread accepts and hands each socket to MHD_add_connection(),
 * which spreads connections over the pool by socket number, i.e. evenly.
 *
 * accept() failing never ends the thread: it backs off (out of descriptors
 * or memory, the backlog waits until some close) and retries, logging one
 * line per LISTENER_LOG_PERIOD_NS with a count rather than one per failure.
 *
 * Stopping: listener_close() shuts the socket down, which wakes accept(),
 * joins the thread and closes the socket. Accepted sockets belong to the
 * add callback (MHD closes them).
 */
#include "config.h"

#include "common/common.h"
#include "server/listener.h"
#include "server/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* At most one log line about failing accept() calls per this period. */
#define LISTENER_LOG_PERIOD_NS (10LL * 1000 * 1000 * 1000)
/* Backoff after a failed accept(): doubles from the first to the last. */
#define LISTENER_BACKOFF_MIN_NS (10LL * 1000 * 1000)
#define LISTENER_BACKOFF_MAX_NS (200LL * 1000 * 1000)

struct listener {
    int fd;
    pthread_t thread;
    bool has_thread;
    atomic_bool is_stopping;
    listener_add_fn add;
    void *ctx;
};

int
listener_open(const char *addr, uint16_t port, int backlog, struct listener **out,
              uint16_t *bound_port)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
        return -EINVAL;
    int err = 0;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, backlog) != 0) {
        err = -errno;
        goto fail;
    }
    struct sockaddr_in bound;
    socklen_t blen = sizeof(bound);
    if (getsockname(fd, (struct sockaddr *)&bound, &blen) != 0) {
        err = -errno;
        goto fail;
    }
    *bound_port = ntohs(bound.sin_port);
    struct listener *l = xcalloc(1, sizeof(*l));
    l->fd = fd;
    *out = l;
    return 0;

fail:
    close(fd);
    return err;
}

/* Whether accept() failing with 'err' concerns only the connection it was
 * taking (the client gave up, or its network did), so the next call may
 * follow at once. */
static bool
is_transient(int err)
{
    switch (err) {
    case EINTR:
    case EAGAIN:
    case ECONNABORTED:
    case EPROTO:
    case ENETDOWN:
    case ENETUNREACH:
    case EHOSTDOWN:
    case EHOSTUNREACH:
    case ENONET:
    case ENOPROTOOPT:
    case EOPNOTSUPP:
    case ETIMEDOUT:
        return true;
    default:
        return false;
    }
}

static void *
accept_main(void *arg)
{
    struct listener *l = arg;
    int64_t backoff_ns = 0;
    int64_t log_at_ns = 0;
    uint64_t n_failed = 0; /* since the last log line */
    while (!atomic_load(&l->is_stopping)) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);
        int fd = accept4(l->fd, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC);
        if (fd >= 0) {
            backoff_ns = 0;
            l->add(l->ctx, fd, (struct sockaddr *)&ss, len);
            continue;
        }
        int err = errno;
        if (atomic_load(&l->is_stopping))
            break;
        if (is_transient(err))
            continue;
        /* Out of descriptors (EMFILE, ENFILE) or memory, or anything else:
         * the connections in the backlog wait until some close. Back off
         * rather than spin, and never stop accepting for good. */
        n_failed++;
        int64_t now = clock_mono_ns();
        if (now >= log_at_ns) {
            log_warn("accept: %s; backing off and retrying (%llu failures since the last "
                     "such line)",
                     strerror(err), (unsigned long long)n_failed);
            n_failed = 0;
            log_at_ns = now + LISTENER_LOG_PERIOD_NS;
        }
        backoff_ns =
            backoff_ns ? MIN(2 * backoff_ns, LISTENER_BACKOFF_MAX_NS) : LISTENER_BACKOFF_MIN_NS;
        struct timespec ts = {(time_t)(backoff_ns / 1000000000), (long)(backoff_ns % 1000000000)};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int
listener_start(struct listener *l, listener_add_fn add, void *ctx, size_t stack_len)
{
    l->add = add;
    l->ctx = ctx;
    int err = server_thread_start(&l->thread, "shard-accept", stack_len, accept_main, l);
    if (err < 0)
        return err;
    l->has_thread = true;
    return 0;
}

void
listener_stop(struct listener *l)
{
    if (!l || atomic_exchange(&l->is_stopping, true))
        return;
    /* Wakes the accept() in progress (it fails with EINVAL). */
    shutdown(l->fd, SHUT_RDWR);
    if (l->has_thread)
        pthread_join(l->thread, NULL);
    l->has_thread = false;
    close(l->fd);
    l->fd = -1;
}

void
listener_close(struct listener *l)
{
    if (!l)
        return;
    listener_stop(l);
    free(l);
}
