/*
 * tls.h: the server's TLS certificate (tls.c), the only door to GnuTLS.
 * The certificate chain and key are read from PEM files at start and again
 * on each tls_reload(); MHD asks tls.c for the current pair at every
 * handshake, so a reload never drops a connection.
 */
#ifndef SHARD_SERVER_TLS_H
#define SHARD_SERVER_TLS_H

#include <stdbool.h>
#include <stddef.h>

/* TLS 1.2 and 1.3 only; AEAD ciphers with forward secrecy only. */
extern const char tls_priorities[];

/*
 * Loads the chain 'cert_file' (server certificate first) and its private
 * key 'key_file' and makes them current. Returns 0, or -1 after logging
 * why (unreadable file, bad PEM, key not matching the certificate). Call
 * once before the daemon starts; tls_reload() after.
 */
int tls_open(const char *cert_file, const char *key_file);

/*
 * Reloads the files given to tls_open(). New handshakes use the new pair;
 * the old one stays in memory (sessions may point into it) until
 * tls_close(). On failure the current pair stays and -1 is returned after
 * logging why. Returns 0 when nothing is open. Any thread.
 */
int tls_reload(void);

/* Frees every pair; the daemon must be stopped. Idempotent. */
void tls_close(void);

/* A function pointer with its GnuTLS type erased. */
typedef void (*tls_any_fn)(void);

/*
 * The certificate callback to give MHD (MHD_OPTION_HTTPS_CERT_CALLBACK, a
 * gnutls_certificate_retrieve_function2), its type erased so that no
 * GnuTLS type leaves tls.c.
 */
tls_any_fn tls_cert_callback(void);

/*
 * Sends 'len' bytes as application data on the GnuTLS session 'session'
 * (MHD_CONNECTION_INFO_GNUTLS_SESSION), without blocking. For the thread
 * that owns the connection, between two MHD sends. Returns true when all
 * of it went out.
 */
bool tls_session_send(void *session, const void *buf, size_t len);

/*
 * Corks 'session': its sends are only appended to a buffer (no record is
 * made, nothing is written to the socket) until tls_session_uncork().
 */
void tls_session_cork(void *session);

/*
 * Sends what the cork held back, as full records, on the session whose
 * socket is 'fd'. A socket that is full is waited for (poll) up to
 * 'timeout_ms' each time. Returns true when everything went out.
 */
bool tls_session_uncork(void *session, int fd, int timeout_ms);

#endif
