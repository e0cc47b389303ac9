/*
 * tls.c: the certificate and key HTTPS presents, and their reload on
 * SIGHUP. MHD runs the TLS sessions (GnuTLS); at each handshake it calls
 * on_cert_request, which hands out the current pair. A reload builds a new
 * pair and swaps the pointer. Invariants: a pair, once current, is never
 * changed or freed until tls_close() (a session may keep pointers into it
 * for its lifetime), so a reload costs a few KiB that live until exit, and
 * a handshake never waits for a reload. GnuTLS types never leave this file.
 */
#include "config.h"

#include "common/common.h"
#include "server/tls.h"

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Certificates in one chain file, the server's first. */
#define TLS_CHAIN_MAX 16

/* Versions, then AEAD ciphers only, forward-secret key exchange only (TLS
 * 1.2; TLS 1.3 has nothing else), the server's order of preference. */
const char tls_priorities[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:"
                              "-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:"
                              "-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:"
                              "%SERVER_PRECEDENCE";

struct tls_pair {
    gnutls_pcert_st chain[TLS_CHAIN_MAX];
    unsigned chain_len;
    gnutls_privkey_t key;
    struct tls_pair *older; /* every pair ever loaded, newest first */
};

static pthread_mutex_t tls_lock = PTHREAD_MUTEX_INITIALIZER; /* loads and tls_close */
static _Atomic(struct tls_pair *) tls_current;
static struct tls_pair *tls_all; /* under tls_lock */
static char *tls_cert_path, *tls_key_path;

static void
pair_destroy(struct tls_pair *p)
{
    if (!p)
        return;
    for (unsigned i = 0; i < p->chain_len; i++)
        gnutls_pcert_deinit(&p->chain[i]);
    gnutls_privkey_deinit(p->key);
    free(p);
}

/* Reads both files into a new pair. Returns it, or NULL after logging. */
static struct tls_pair *
pair_load(const char *cert_file, const char *key_file)
{
    gnutls_datum_t cert = {NULL, 0}, key = {NULL, 0};
    gnutls_certificate_credentials_t check = NULL;
    struct tls_pair *p = xcalloc(1, sizeof(*p));
    const char *what = cert_file;
    int rc = gnutls_load_file(cert_file, &cert);
    if (rc < 0)
        goto fail;
    what = key_file;
    rc = gnutls_load_file(key_file, &key);
    if (rc < 0)
        goto fail;
    /* GnuTLS checks that the key belongs to the certificate when both go
     * into credentials; the pair itself is built below. */
    what = "certificate and key";
    rc = gnutls_certificate_allocate_credentials(&check);
    if (rc < 0)
        goto fail;
    rc = gnutls_certificate_set_x509_key_mem2(check, &cert, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
    if (rc < 0)
        goto fail;
    what = cert_file;
    p->chain_len = TLS_CHAIN_MAX;
    rc = gnutls_pcert_list_import_x509_raw(p->chain, &p->chain_len, &cert, GNUTLS_X509_FMT_PEM,
                                           GNUTLS_X509_CRT_LIST_SORT);
    if (rc < 0) {
        p->chain_len = 0;
        goto fail;
    }
    what = key_file;
    rc = gnutls_privkey_init(&p->key);
    if (rc < 0)
        goto fail;
    rc = gnutls_privkey_import_x509_raw(p->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
    if (rc < 0)
        goto fail;
    gnutls_certificate_free_credentials(check);
    gnutls_free(cert.data);
    gnutls_memset(key.data, 0, key.size);
    gnutls_free(key.data);
    return p;

fail:
    log_error("tls: %s: %s", what, gnutls_strerror(rc));
    gnutls_certificate_free_credentials(check);
    gnutls_free(cert.data);
    if (key.data)
        gnutls_memset(key.data, 0, key.size);
    gnutls_free(key.data);
    pair_destroy(p);
    return NULL;
}

/* Makes 'p' current; under tls_lock. */
static void
pair_publish(struct tls_pair *p)
{
    p->older = tls_all;
    tls_all = p;
    atomic_store_explicit(&tls_current, p, memory_order_release);
}

int
tls_open(const char *cert_file, const char *key_file)
{
    int rc = -1;
    pthread_mutex_lock(&tls_lock);
    struct tls_pair *p = pair_load(cert_file, key_file);
    if (!p)
        goto out;
    free(tls_cert_path);
    free(tls_key_path);
    tls_cert_path = xstrdup(cert_file);
    tls_key_path = xstrdup(key_file);
    pair_publish(p);
    rc = 0;
out:
    pthread_mutex_unlock(&tls_lock);
    return rc;
}

int
tls_reload(void)
{
    int rc = 0;
    pthread_mutex_lock(&tls_lock);
    if (!tls_cert_path)
        goto out;
    struct tls_pair *p = pair_load(tls_cert_path, tls_key_path);
    if (!p) {
        log_error("tls: reload failed; the current certificate stays");
        rc = -1;
        goto out;
    }
    pair_publish(p);
    log_info("tls: certificate reloaded from %s", tls_cert_path);
out:
    pthread_mutex_unlock(&tls_lock);
    return rc;
}

void
tls_close(void)
{
    pthread_mutex_lock(&tls_lock);
    atomic_store(&tls_current, NULL);
    while (tls_all) {
        struct tls_pair *p = tls_all;
        tls_all = p->older;
        pair_destroy(p);
    }
    free(tls_cert_path);
    free(tls_key_path);
    tls_cert_path = tls_key_path = NULL;
    pthread_mutex_unlock(&tls_lock);
}

/* gnutls_certificate_retrieve_function2: the current pair, whatever the
 * client asked for (one certificate is served). */
static int
on_cert_request(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length, gnutls_pcert_st **chain,
                unsigned int *chain_len, gnutls_privkey_t *key)
{
    (void)session;
    (void)req_ca_rdn;
    (void)nreqs;
    (void)pk_algos;
    (void)pk_algos_length;
    struct tls_pair *p = atomic_load_explicit(&tls_current, memory_order_acquire);
    if (!p)
        return -1;
    *chain = p->chain;
    *chain_len = p->chain_len;
    *key = p->key;
    return 0;
}

tls_any_fn
tls_cert_callback(void)
{
    gnutls_certificate_retrieve_function2 *fn = on_cert_request;
    return (tls_any_fn)fn;
}

bool
tls_session_send(void *session, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = gnutls_record_send((gnutls_session_t)session, p, len);
        if (n <= 0)
            return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

void
tls_session_cork(void *session)
{
    gnutls_record_cork((gnutls_session_t)session);
}

bool
tls_session_uncork(void *session, int fd, int timeout_ms)
{
    for (;;) {
        /* Without GNUTLS_RECORD_WAIT a full socket returns E_AGAIN and the
         * session stays corked with the rest; calling again goes on. */
        int rc = gnutls_record_uncork((gnutls_session_t)session, 0);
        if (rc >= 0)
            return true;
        if (rc != GNUTLS_E_AGAIN && rc != GNUTLS_E_INTERRUPTED)
            return false;
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int n = poll(&p, 1, timeout_ms);
        if (n == 0 || (n < 0 && errno != EINTR))
            return false;
    }
}
