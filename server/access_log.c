/*
 * access_log.c: the access log and the audit log, JSON lines. A record is
 * formatted into a buffer on the caller's stack (bounded: long fields are
 * cut, never the line), by hand for numbers and times (no printf on the
 * request path). Access lines go to a buffer of the calling thread (its
 * own lock, taken only by it and by the flusher) and reach the O_APPEND
 * file with one write() per full buffer or every ACCESS_FLUSH_MS (the
 * flusher thread), and at close; so lines never interleave, a crash loses
 * at most that much, and lines of different threads may be out of time
 * order. Audit lines (rare) are written at once, one write() each.
 * Reopening (SIGHUP) opens the path again and dup2()s the new file over
 * the old descriptor: a write in flight lands whole in one file or the
 * other. Strings are JSON-escaped: quotes, backslashes and control bytes
 * escaped, valid UTF-8 kept, each invalid byte replaced by U+FFFD (and for
 * keys the exact bytes given again as hex in "key_hex"). No secret is ever
 * logged: the principal is a user name and an access key id.
 */
#include "config.h"

#include "common/common.h"
#include "server/access_log.h"
#include "server/errors.h"
#include "server/req.h"
#include "server/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The longest line: a 1024-byte key escaped (6 bytes per byte at worst)
 * twice over (text and hex) fits with room for the rest. */
#define LINE_MAX_BYTES 16384
/* Header values (user agent, range) are cut to this many bytes. */
#define FIELD_MAX_BYTES 256
/* Per-thread buffers of access lines: their size, how many threads have
 * one at a time (others write each line at once), and how often the
 * flusher writes them out. */
#define ACCESS_BUF_BYTES (64 * 1024)
#define ACCESS_BUFS_MAX 256
#define ACCESS_FLUSH_MS 200

struct log_file {
    char path[4096];
    int fd; /* -1: closed */
    bool is_stdout;
};

static struct log_file access_file = {.fd = -1};
static struct log_file audit_file = {.fd = -1};

/* ======================================================================
 * Files
 * ====================================================================== */

static int
file_open(struct log_file *f, const char *path)
{
    f->is_stdout = !strcmp(path, "-");
    if (f->is_stdout) {
        f->fd = STDOUT_FILENO;
        return 0;
    }
    if (strlen(path) >= sizeof(f->path))
        return -ENAMETOOLONG;
    snprintf(f->path, sizeof(f->path), "%s", path);
    f->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    return f->fd < 0 ? -errno : 0;
}

static void
file_reopen(struct log_file *f)
{
    if (f->fd < 0 || f->is_stdout)
        return;
    int fd = open(f->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0) {
        log_warn("cannot reopen log %s: %s (still writing to the old file)", f->path,
                 strerror(errno));
        return;
    }
    if (dup2(fd, f->fd) < 0)
        log_warn("cannot reopen log %s: %s", f->path, strerror(errno));
    close(fd);
}

static void
file_close(struct log_file *f)
{
    if (f->fd >= 0 && !f->is_stdout)
        close(f->fd);
    f->fd = -1;
}

/* ======================================================================
 * Per-thread buffers
 * ====================================================================== */

struct tbuf {
    pthread_mutex_t lock; /* the owner thread and the flusher */
    bool is_owned;        /* a live thread writes into it */
    size_t len;
    char data[ACCESS_BUF_BYTES];
};

static pthread_mutex_t bufs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tbuf *bufs[ACCESS_BUFS_MAX]; /* allocated on demand, freed at close */
static bool is_buffered;                   /* the flusher runs */
static pthread_key_t buf_key;              /* releases a thread's buffer at its exit */
static _Thread_local struct tbuf *my_buf;
static pthread_t flusher;
static pthread_cond_t flusher_wake = PTHREAD_COND_INITIALIZER;
static bool is_flusher_stopping;

static void
write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

/* Writes out 'b' (its lock held). */
static void
tbuf_flush(struct tbuf *b)
{
    if (b->len)
        write_all(access_file.fd, b->data, b->len);
    b->len = 0;
}

/* pthread key destructor: the thread ends; its lines go out now. */
static void
tbuf_release(void *arg)
{
    struct tbuf *b = arg;
    pthread_mutex_lock(&bufs_lock);
    pthread_mutex_lock(&b->lock);
    tbuf_flush(b);
    b->is_owned = false;
    pthread_mutex_unlock(&b->lock);
    pthread_mutex_unlock(&bufs_lock);
}

/* The calling thread's buffer, or NULL (none free, or not buffered). */
static struct tbuf *
tbuf_get(void)
{
    if (my_buf)
        return my_buf;
    pthread_mutex_lock(&bufs_lock);
    for (size_t i = 0; is_buffered && i < ACCESS_BUFS_MAX && !my_buf; i++) {
        if (!bufs[i]) {
            bufs[i] = xcalloc(1, sizeof(*bufs[i]));
            pthread_mutex_init(&bufs[i]->lock, NULL);
        }
        if (!bufs[i]->is_owned) {
            bufs[i]->is_owned = true;
            my_buf = bufs[i];
            pthread_setspecific(buf_key, my_buf);
        }
    }
    pthread_mutex_unlock(&bufs_lock);
    return my_buf;
}

static void
flush_all(void)
{
    for (size_t i = 0; i < ACCESS_BUFS_MAX && bufs[i]; i++) {
        pthread_mutex_lock(&bufs[i]->lock);
        tbuf_flush(bufs[i]);
        pthread_mutex_unlock(&bufs[i]->lock);
    }
}

static void *
flusher_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&bufs_lock);
    while (!is_flusher_stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += ACCESS_FLUSH_MS * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&flusher_wake, &bufs_lock, &ts);
        flush_all();
    }
    pthread_mutex_unlock(&bufs_lock);
    return NULL;
}

/* Appends the line 'p' (newline included) to the access log. */
static void
access_append(const char *p, size_t n)
{
    struct tbuf *b = tbuf_get();
    if (!b) {
        write_all(access_file.fd, p, n);
        return;
    }
    pthread_mutex_lock(&b->lock);
    if (b->len + n > sizeof(b->data))
        tbuf_flush(b);
    memcpy(b->data + b->len, p, n);
    b->len += n;
    pthread_mutex_unlock(&b->lock);
}

static int
buffers_start(void)
{
    int rc = pthread_key_create(&buf_key, tbuf_release);
    if (rc != 0)
        return -rc;
    is_flusher_stopping = false;
    rc = pthread_create(&flusher, NULL, flusher_main, NULL);
    if (rc != 0) {
        pthread_key_delete(buf_key);
        return -rc;
    }
    pthread_setname_np(flusher, "shard-accesslog");
    pthread_mutex_lock(&bufs_lock);
    is_buffered = true;
    pthread_mutex_unlock(&bufs_lock);
    return 0;
}

/* Stops the flusher, writes out and frees every buffer. Threads still
 * alive then write their lines directly. */
static void
buffers_stop(void)
{
    pthread_mutex_lock(&bufs_lock);
    if (!is_buffered) {
        pthread_mutex_unlock(&bufs_lock);
        return;
    }
    is_buffered = false;
    is_flusher_stopping = true;
    pthread_cond_signal(&flusher_wake);
    pthread_mutex_unlock(&bufs_lock);
    pthread_join(flusher, NULL);
    /* No destructor runs from here on (the key goes before the memory). */
    pthread_key_delete(buf_key);
    pthread_mutex_lock(&bufs_lock);
    flush_all();
    for (size_t i = 0; i < ACCESS_BUFS_MAX && bufs[i]; i++) {
        pthread_mutex_destroy(&bufs[i]->lock);
        free(bufs[i]);
        bufs[i] = NULL;
    }
    pthread_mutex_unlock(&bufs_lock);
    /* The calling thread's pointer (the others are gone: their threads
     * were joined before close). */
    my_buf = NULL;
}

int
access_log_open(const char *access_path, const char *audit_path)
{
    int rc = 0;
    if (*access_path && (rc = file_open(&access_file, access_path)) < 0) {
        log_error("cannot open access_log %s: %s", access_path, strerror(-rc));
        goto fail;
    }
    if (*audit_path && (rc = file_open(&audit_file, audit_path)) < 0) {
        log_error("cannot open audit_log %s: %s", audit_path, strerror(-rc));
        goto fail;
    }
    if (access_file.fd >= 0 && (rc = buffers_start()) < 0) {
        log_error("cannot start the access log flusher: %s", strerror(-rc));
        goto fail;
    }
    return 0;

fail:
    access_log_close();
    return rc;
}

void
access_log_reopen(void)
{
    /* Lines of before the signal go to the old file. */
    pthread_mutex_lock(&bufs_lock);
    flush_all();
    pthread_mutex_unlock(&bufs_lock);
    file_reopen(&access_file);
    file_reopen(&audit_file);
}

void
access_log_close(void)
{
    buffers_stop();
    file_close(&access_file);
    file_close(&audit_file);
}

/* ======================================================================
 * Formatting
 * ====================================================================== */

/* A bounded line: what does not fit is cut off (the line stays one line). */
struct line {
    char *p;
    size_t len;
    size_t cap;
};

static void
put(struct line *l, const char *s, size_t n)
{
    if (n > l->cap - l->len)
        n = l->cap - l->len;
    memcpy(l->p + l->len, s, n);
    l->len += n;
}

static void
put_str(struct line *l, const char *s)
{
    put(l, s, strlen(s));
}

static void
put_u64(struct line *l, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[sizeof(tmp) - ++n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(l, tmp + sizeof(tmp) - n, n);
}

/* 'ns' as milliseconds with three decimals ("12.345"); negative as 0. */
static void
put_ms(struct line *l, int64_t ns)
{
    uint64_t us = ns > 0 ? (uint64_t)ns / 1000 : 0;
    put_u64(l, us / 1000);
    char frac[4] = {'.', (char)('0' + us % 1000 / 100), (char)('0' + us % 100 / 10),
                    (char)('0' + us % 10)};
    put(l, frac, 4);
}

/* Length of the valid UTF-8 sequence at s[0..n), or 0 when invalid
 * (overlong forms, surrogates and code points past U+10FFFF included). */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned cp, min;
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0) {
        len = 2;
        cp = c & 0x1f;
        min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        len = 3;
        cp = c & 0x0f;
        min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
        len = 4;
        cp = c & 0x07;
        min = 0x10000;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* Appends 's' as a JSON string (with quotes), at most 'max' input bytes.
 * Returns whether some byte was not valid UTF-8. */
static bool
put_json(struct line *l, struct slice s, size_t max)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s.ptr;
    size_t n = MIN(s.len, max);
    bool is_invalid = false;
    put(l, "\"", 1);
    for (size_t i = 0; i < n && l->len + 8 < l->cap;) {
        unsigned char c = p[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            put(l, e, 2);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            put(l, e, 6);
            i++;
        } else {
            size_t k = utf8_len(p + i, n - i);
            if (k == 0) {
                put(l, "\\ufffd", 6);
                is_invalid = true;
                i++;
            } else {
                put(l, (const char *)p + i, k);
                i += k;
            }
        }
    }
    put(l, "\"", 1);
    return is_invalid;
}

/* ,"name":"value" with 'value' escaped; 'name' is a plain identifier. */
static void
put_field(struct line *l, const char *name, struct slice v, size_t max)
{
    put(l, ",\"", 2);
    put_str(l, name);
    put(l, "\":", 2);
    put_json(l, v, max);
}

/* ,"name":"value" for a value known to need no escaping. */
static void
put_plain(struct line *l, const char *name, const char *value)
{
    put(l, ",\"", 2);
    put_str(l, name);
    put(l, "\":\"", 3);
    put_str(l, value);
    put(l, "\"", 1);
}

/* {"time":"YYYY-MM-DDTHH:MM:SS.mmmZ" (UTC); the part up to the second
 * is formatted once per second and thread. */
static void
put_time(struct line *l)
{
    static _Thread_local time_t cached_s = -1;
    static _Thread_local char cached[64];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (ts.tv_sec != cached_s) {
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        snprintf(cached, sizeof(cached), "{\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        cached_s = ts.tv_sec;
    }
    put_str(l, cached);
    long ms = ts.tv_nsec / 1000000;
    char tail[6] = {(char)('0' + ms / 100), (char)('0' + ms / 10 % 10), (char)('0' + ms % 10), 'Z',
                    '"'};
    put(l, tail, 5);
}

static void
put_remote(struct line *l, const struct s3_req *r)
{
    char addr[INET6_ADDRSTRLEN] = "";
    const union MHD_ConnectionInfo *ci =
        r->conn ? MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS) : NULL;
    if (ci && ci->client_addr) {
        const struct sockaddr *sa = ci->client_addr;
        if (sa->sa_family == AF_INET)
            inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, addr,
                      sizeof(addr));
        else if (sa->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, addr,
                      sizeof(addr));
    }
    put_plain(l, "remote_addr", addr);
}

static void
put_principal(struct line *l, const struct s3_req *r, const char *field)
{
    bool is_signed = r->is_authenticated && !r->principal.is_anonymous;
    put_field(l, field, slice_from_cstr(is_signed ? r->user_name : "anonymous"), SIZE_MAX);
    if (is_signed)
        put_field(l, "access_key", slice_from_cstr(r->auth.access_key), SIZE_MAX);
}

/* Ends the line with its newline. */
static void
line_end(struct line *l)
{
    if (l->len == l->cap)
        l->len--; /* cut: keep room for the newline */
    l->p[l->len++] = '\n';
}

void
access_log_request(const struct s3_req *r, int64_t end_ns, bool is_complete)
{
    if (access_file.fd < 0)
        return;
    char buf[LINE_MAX_BYTES];
    struct line l = {buf, 0, sizeof(buf) - 2};
    put_time(&l);
    put_plain(&l, "request_id", r->request_id);
    put_remote(&l, r);
    put_principal(&l, r, "principal");
    put_plain(&l, "operation", r->op ? r->op : "Unknown");
    put_field(&l, "method", r->method, FIELD_MAX_BYTES);
    put_field(&l, "bucket", r->bucket, SIZE_MAX);
    put_str(&l, ",\"key\":");
    if (put_json(&l, r->key, SIZE_MAX)) {
        static const char hex[] = "0123456789abcdef";
        put_str(&l, ",\"key_hex\":\"");
        for (size_t i = 0; i < r->key.len && l.len + 4 < l.cap; i++) {
            unsigned char c = (unsigned char)r->key.ptr[i];
            char h[2] = {hex[c >> 4], hex[c & 15]};
            put(&l, h, 2);
        }
        put_str(&l, "\"");
    }
    struct slice range = s3_req_header(r, "range");
    if (range.ptr)
        put_field(&l, "range", range, FIELD_MAX_BYTES);
    else
        put_str(&l, ",\"range\":null");
    put_str(&l, ",\"status\":");
    put_u64(&l, r->status > 0 ? (uint64_t)r->status : 0);
    if (r->error != S3_OK)
        put_plain(&l, "error", s3_error_code(r->error));
    else
        put_str(&l, ",\"error\":null");
    put_str(&l, ",\"bytes_in\":");
    put_u64(&l, r->body_received);
    put_str(&l, ",\"bytes_out\":");
    put_u64(&l, r->resp_bytes);
    put_str(&l, ",\"duration_ms\":");
    put_ms(&l, end_ns - r->start_ns);
    if (r->respond_ns) {
        put_str(&l, ",\"ttfb_ms\":");
        put_ms(&l, r->respond_ns - r->start_ns);
    } else {
        put_str(&l, ",\"ttfb_ms\":null");
    }
    if (!is_complete)
        put_str(&l, ",\"incomplete\":true");
    put_field(&l, "user_agent", s3_req_header(r, "user-agent"), FIELD_MAX_BYTES);
    put_str(&l, "}");
    line_end(&l);
    access_append(l.p, l.len);
}

/* ======================================================================
 * Audit
 * ====================================================================== */

/* What an admin request does, from its method and path under /_/. */
static const char *
audit_action(const struct s3_req *r)
{
    static const struct {
        const char *method;
        const char *path;
        const char *action;
    } actions[] = {
        {"POST", "/_/admin/users", "user.add"},       {"DELETE", "/_/admin/users", "user.remove"},
        {"POST", "/_/admin/keys", "key.create"},      {"DELETE", "/_/admin/keys", "key.delete"},
        {"PUT", "/_/admin/grants", "grant.set"},      {"DELETE", "/_/admin/grants", "grant.remove"},
        {"PUT", "/_/admin/buckets", "bucket.update"}, {"POST", "/_/scrub", "scrub"},
    };
    for (size_t i = 0; i < ARRAY_LEN(actions); i++)
        if (slice_eq(r->method, slice_from_cstr(actions[i].method)) &&
            slice_eq(r->raw_path, slice_from_cstr(actions[i].path)))
            return actions[i].action;
    return "other";
}

void
access_log_audit(const struct s3_req *r)
{
    char buf[LINE_MAX_BYTES];
    struct line l = {buf, 0, sizeof(buf) - 2};
    put_time(&l);
    put_str(&l, ",\"audit\":true");
    put_plain(&l, "request_id", r->request_id);
    put_remote(&l, r);
    put_principal(&l, r, "actor");
    put_plain(&l, "action", audit_action(r));
    put_field(&l, "method", r->method, FIELD_MAX_BYTES);
    put_field(&l, "path", r->raw_path, FIELD_MAX_BYTES);
    /* The target: the request's parameters (names of users, keys,
     * buckets; never a secret), less the SigV4 ones of presigned URLs. */
    put_str(&l, ",\"target\":{");
    bool is_first = true;
    for (size_t i = 0; i < r->n_params; i++) {
        const struct s3_param *p = &r->params[i];
        if ((p->name.len >= 6 && !strncasecmp(p->name.ptr, "X-Amz-", 6)) ||
            slice_eq(p->name, SLICE_LIT("Signature")) ||
            slice_eq(p->name, SLICE_LIT("AWSAccessKeyId")))
            continue;
        if (!is_first)
            put_str(&l, ",");
        is_first = false;
        put_json(&l, p->name, FIELD_MAX_BYTES);
        put_str(&l, ":");
        put_json(&l, p->value, FIELD_MAX_BYTES);
    }
    put_str(&l, "}");
    put_str(&l, ",\"status\":");
    put_u64(&l, r->status > 0 ? (uint64_t)r->status : 0);
    if (r->error != S3_OK)
        put_plain(&l, "error", s3_error_code(r->error));
    put_str(&l, "}");
    if (audit_file.fd >= 0 || access_file.fd >= 0) {
        line_end(&l);
        write_all(audit_file.fd >= 0 ? audit_file.fd : access_file.fd, l.p, l.len);
    } else {
        l.p[MIN(l.len, l.cap)] = '\0';
        log_info("audit %s", l.p);
    }
}
