/*
 * listener.h: the listening socket and its accept thread (listener.c),
 * which hands each new connection to the HTTP daemon.
 */
#ifndef SHARD_SERVER_LISTENER_H
#define SHARD_SERVER_LISTENER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Takes ownership of the accepted socket 'fd'. */
typedef void (*listener_add_fn)(void *ctx, int fd, const struct sockaddr *sa, socklen_t len);
struct listener;
/* Binds and listens on IPv4 'addr':'port' (0: any free port, written to
 * '*bound_port'). Returns 0 or -errno. Caller frees with listener_close. */
int listener_open(const char *addr, uint16_t port, int backlog, struct listener **out,
                  uint16_t *bound_port);
/* Starts the accept thread, which passes each new connection to 'add'. */
int listener_start(struct listener *l, listener_add_fn add, void *ctx, size_t stack_len);
/* Stops accepting: wakes and joins the thread, closes the socket. Idempotent. */
void listener_stop(struct listener *l);
/* listener_stop, then frees. Accepts NULL. */
void listener_close(struct listener *l);

#endif
