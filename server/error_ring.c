/*
 * error_ring.c: a ring of the last ERROR_RING_SIZE error responses (status
 * >= 400), shown by the console (console.c). Filled from the request
 * completion hook (http.c), so every error is seen once whatever answered
 * it. Invariants: 'next' counts every record ever added; slot next %
 * ERROR_RING_SIZE is the one to overwrite; all access holds 'lock' (an
 * error response is not a hot path, and the copy is a few hundred bytes).
 * Strings are copied, cut to their field, and JSON-escaped only on output.
 */
#include "config.h"

#include "common/common.h"
#include "server/error_ring.h"
#include "server/errors.h"
#include "server/req.h"
#include "server/xml_out.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define KEY_MAX_BYTES 256

struct error_record {
    int64_t time_ns; /* wall clock */
    int status;
    const char *code; /* static: s3_error_code(), or NULL */
    const char *op;   /* static: the route table's name, or NULL */
    char request_id[24];
    char method[8];
    char bucket[64];
    char key[KEY_MAX_BYTES];
    size_t bucket_len;
    size_t key_len;
    bool is_key_cut;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct error_record ring[ERROR_RING_SIZE];
static uint64_t next;

/* Copies slice 's' into 'dst' of 'cap' bytes; returns the bytes copied. */
static size_t
copy_cut(char *dst, size_t cap, struct slice s)
{
    size_t n = MIN(s.len, cap);
    if (n)
        memcpy(dst, s.ptr, n);
    return n;
}

void
error_ring_add(const struct s3_req *r)
{
    if (r->status < 400)
        return;
    struct error_record e = {
        .time_ns = clock_now_ns(),
        .status = r->status,
        .code = r->error != S3_OK ? s3_error_code(r->error) : NULL,
        .op = r->op,
    };
    snprintf(e.request_id, sizeof(e.request_id), "%s", r->request_id);
    e.method[copy_cut(e.method, sizeof(e.method) - 1, r->method)] = '\0';
    e.bucket_len = copy_cut(e.bucket, sizeof(e.bucket), r->bucket);
    e.key_len = copy_cut(e.key, sizeof(e.key), r->key);
    e.is_key_cut = r->key.len > e.key_len;
    pthread_mutex_lock(&lock);
    ring[next % ERROR_RING_SIZE] = e;
    next++;
    pthread_mutex_unlock(&lock);
}

/* Appends "YYYY-MM-DDTHH:MM:SS.mmmZ" of wall-clock 'ns' to 'b'. */
static void
format_time(struct buf *b, int64_t ns)
{
    time_t s = (time_t)(ns / 1000000000);
    struct tm tm;
    gmtime_r(&s, &tm);
    buf_printf(b, "\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"", tm.tm_year + 1900, tm.tm_mon + 1,
               tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ns / 1000000 % 1000));
}

void
error_ring_format_json(struct buf *b, size_t max)
{
    /* Formatted under the lock: a few dozen short records, and only the
     * console asks, every few seconds. */
    pthread_mutex_lock(&lock);
    uint64_t n = MIN(next, (uint64_t)MIN(max, ERROR_RING_SIZE));
    buf_append_str(b, "[");
    for (uint64_t i = 0; i < n; i++) {
        const struct error_record *e = &ring[(next - 1 - i) % ERROR_RING_SIZE];
        buf_append_str(b, i ? ",{\"time\":" : "{\"time\":");
        format_time(b, e->time_ns);
        buf_append_str(b, ",\"request_id\":");
        json_string(b, slice_from_cstr(e->request_id));
        buf_append_str(b, ",\"op\":");
        json_string(b, slice_from_cstr(e->op ? e->op : "Unknown"));
        buf_append_str(b, ",\"method\":");
        json_string(b, slice_from_cstr(e->method));
        buf_append_str(b, ",\"bucket\":");
        json_string(b, (struct slice){e->bucket, e->bucket_len});
        buf_append_str(b, ",\"key\":");
        json_string(b, (struct slice){e->key, e->key_len});
        buf_printf(b, ",\"key_cut\":%s,\"status\":%d,\"code\":", e->is_key_cut ? "true" : "false",
                   e->status);
        if (e->code)
            json_string(b, slice_from_cstr(e->code));
        else
            buf_append_str(b, "null");
        buf_append_str(b, "}");
    }
    buf_append_str(b, "]");
    pthread_mutex_unlock(&lock);
}

void
error_ring_clear(void)
{
    pthread_mutex_lock(&lock);
    next = 0;
    pthread_mutex_unlock(&lock);
}
