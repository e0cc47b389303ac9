/*
 * guard.h: the connection guard (guard.c), which keeps slow or hostile
 * clients from holding connections: a deadline for the request headers, a
 * minimum upload rate, a minimum send progress, a cap per client address
 * and, at the global connection limit, room for new clients made by
 * dropping the connection that has waited longest without a request.
 *
 * Threads: guard_admit and guard_forget run on the accept thread,
 * guard_conn_* on MHD's connection threads, guard_drop and guard_exit_after
 * on the thread that stops the server; a watchdog thread of its own scans
 * the connections a few times a second.
 */
#ifndef SHARD_SERVER_GUARD_H
#define SHARD_SERVER_GUARD_H

#include "server/server.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct guard;
struct guard_conn;

/* How many connections MHD takes beyond connection_limit: those the guard
 * dropped to make room and MHD has not closed yet. */
#define GUARD_CONNECTION_SLACK 64

/* Where a request of a connection is, as MHD's callbacks report it. */
enum guard_phase {
    GUARD_PHASE_HEADERS, /* accepted, no request seen yet */
    GUARD_PHASE_BODY,    /* headers in, the request body arriving */
    GUARD_PHASE_BUSY,    /* the request is being served or answered */
    GUARD_PHASE_IDLE,    /* keep-alive between two requests */
};

/* What guard_drop shuts down. */
enum guard_drop_what {
    GUARD_DROP_IDLE, /* connections without a request in progress */
    GUARD_DROP_ALL,
};

/* Creates a guard applying the limits of 'cfg' (header_timeout_s,
 * min_body_rate, body_rate_window_s, send_timeout_s,
 * connection_limit_per_ip, connection_limit), and starts its watchdog
 * thread with a stack of 'stack_len' bytes (0: the default). 'cfg' is
 * copied. Returns NULL when the thread cannot start. Caller frees with
 * guard_destroy. */
struct guard *guard_create(const struct config *cfg, size_t stack_len);
/* Stops the watchdog and frees the guard. MHD must have closed every
 * connection first (MHD_stop_daemon). Accepts NULL. */
void guard_destroy(struct guard *g);

/* Accept thread: registers the new connection 'fd' from peer 'sa' before
 * it is handed to MHD. Returns true to hand it over; false when it must be
 * refused (its address holds connection_limit_per_ip connections already,
 * or the server is full and no waiting connection could be dropped): the
 * caller then closes 'fd'. */
bool guard_admit(struct guard *g, int fd, const struct sockaddr *sa, socklen_t len);
/* Accept thread: MHD refused 'fd' (and closed it): forget it. */
void guard_forget(struct guard *g, int fd);

/* MHD_CONNECTION_NOTIFY_STARTED for socket 'fd'. Returns the connection's
 * handle for the calls below (kept by the caller as MHD's socket context),
 * or NULL when 'fd' was not admitted (the calls below accept NULL). */
struct guard_conn *guard_conn_started(struct guard *g, int fd);
/* MHD_CONNECTION_NOTIFY_CLOSED, before MHD closes the socket: 'c' is
 * invalid afterwards. Accepts NULL. */
void guard_conn_closed(struct guard *g, struct guard_conn *c);
/* Reports the phase of the connection's current request (reporting the
 * phase it is in already changes nothing). A store, no lock: cheap enough
 * for every request and every body chunk. Accepts NULL. */
void guard_conn_phase(struct guard_conn *c, enum guard_phase phase);

/* Shuts down (SHUT_RDWR) the connections selected by 'what' so that MHD
 * closes them; used while stopping. */
void guard_drop(struct guard *g, enum guard_drop_what what);
/* Waits until MHD has closed every connection it started, at most
 * 'timeout_ms'. Returns true when none is left. */
bool guard_wait_closed(struct guard *g, uint32_t timeout_ms);
/* Makes the watchdog end the process with _exit(1), after an error log
 * line, if the guard is still alive 'seconds' from now: the last resort
 * that bounds shutdown whatever blocks it. */
void guard_exit_after(struct guard *g, uint32_t seconds);

#endif
