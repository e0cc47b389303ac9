/*
 * http.h: the HTTP front end (http.c): starts the listener, the MHD
 * daemon and the offload pool, and stops them within shutdown_grace.
 */
#ifndef SHARD_SERVER_HTTP_H
#define SHARD_SERVER_HTTP_H

#include <stdbool.h>

struct MHD_Connection;
struct s3_req;
struct server;

/* Listens on srv->cfg's address and serves. Returns 0 or -1 (logged). */
int http_start(struct server *srv);
/* Stops accepting, waits for requests in flight (at most shutdown_grace),
 * then stops the daemon. Idempotent. */
void http_stop(struct server *srv);
/* SIGHUP: reloads the TLS certificate and key (tls.c); connections stay.
 * A failed reload is logged and keeps the current pair. Main thread. */
void http_reload(struct server *srv);

/* Whether 'conn' came through an HTTPS endpoint (SSE-C, aws:SecureTransport,
 * and GET bodies, which cannot go out by sendfile under TLS). */
bool http_conn_is_tls(struct MHD_Connection *conn);

/* Stops reading the body of 'r' (its connection is suspended) until
 * http_body_resume; for an upload whose bytes queue up behind it. Only from
 * r's body handler, with the offload pool on (not thread_per_connection). */
void http_body_pause(struct s3_req *r);
/* Reads the body of 'r' again; any thread, once per pause. */
void http_body_resume(struct s3_req *r);

/* For a step on a worker (r->is_offloaded) that hands the rest of its work
 * to another thread (an asynchronous commit): the suspended connection is
 * resumed only once the step returned and that thread called
 * http_step_release, so neither sees 'r' freed under it. */
void http_step_hold(struct s3_req *r);
/* Lets go of a hold; the last one resumes the connection, after which 'r'
 * may be gone at once (do not touch it after the call). Any thread. */
void http_step_release(struct s3_req *r);

#endif
