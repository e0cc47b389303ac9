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

static void *
accept_main(void *arg)
{
    struct listener *l = arg;
    while (!atomic_load(&l->is_stopping)) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);
        int fd = accept4(l->fd, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC);
        if (fd < 0) {
            int err = errno;
            if (atomic_load(&l->is_stopping))
                break;
            if (err == EINTR || err == ECONNABORTED || err == EPROTO)
                continue;
            if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
                /* Out of descriptors or memory: the connections in the
                 * backlog wait until some close, rather than spin here. */
                log_warn("accept: %s; pausing 10 ms", strerror(err));
                struct timespec ts = {0, 10 * 1000 * 1000};
                nanosleep(&ts, NULL);
                continue;
            }
            log_error("accept: %s; no longer accepting", strerror(err));
            break;
        }
        l->add(l->ctx, fd, (struct sockaddr *)&ss, len);
    }
    return NULL;
}

int
listener_start(struct listener *l, listener_add_fn add, void *ctx, size_t stack_len)
{
    l->add = add;
    l->ctx = ctx;
    int err = server_thread_start(&l->thread, stack_len, accept_main, l);
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
