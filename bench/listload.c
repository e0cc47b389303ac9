/*
 * listload.c: ListObjectsV2 page loop for profiling the server's page path.
 *
 * CONC threads, each with one libcurl easy handle (a kept-alive connection,
 * SigV4 signed by libcurl), walk the bucket under PREFIX in MAXKEYS-key
 * pages with continuation tokens, starting over at the end, for SECS
 * seconds (or only the first page, with -1). Keys are counted by their
 * <Key> elements; no other XML parsing, so the client costs little next to
 * the server. Prints one "listload ..." line: pages/s, keys/s, MB/s of XML
 * and the page latency p50/p99 in ms. The project's load generator is
 * `shard bench list`; this is the smallest loop that drives the same path.
 *
 * Usage: bench/listload -e http://127.0.0.1:PORT -b BUCKET [-a ACCESS] [-s SECRET]
 *                       [-c CONC] [-t SECS] [-p PREFIX] [-d DELIM] [-m MAXKEYS] [-1]
 * Exit status 0 if every page answered 200, 1 otherwise.
 */
#include <curl/curl.h>

#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LISTLOAD_MAX_LAT 4000000

struct listload_body {
    char *ptr;
    size_t len, cap;
};

struct listload_worker {
    pthread_t thread;
    uint64_t pages, keys, bytes, errors;
    double *lat_ms;
    size_t n_lat;
};

static const char *endpoint, *bucket, *access_key, *secret_key;
static const char *prefix = "", *delim = "";
static int max_keys = 1000, secs = 10, is_first_page;
static int64_t deadline_ns;

static int64_t
clock_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static size_t
on_body(char *p, size_t size, size_t n, void *ctx)
{
    struct listload_body *b = ctx;
    size_t len = size * n;
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->len + len + 1)
            cap *= 2;
        char *q = realloc(b->ptr, cap);
        if (!q)
            return 0;
        b->ptr = q;
        b->cap = cap;
    }
    memcpy(b->ptr + b->len, p, len);
    b->len += len;
    b->ptr[b->len] = '\0';
    return len;
}

/* Copies the text of the first <name> element of 'xml' into 'out' (size
 * 'cap'); returns its length, or -1 when absent or too long. */
static long
elem_text(const char *xml, const char *name, char *out, size_t cap)
{
    char open[64];
    snprintf(open, sizeof open, "<%s>", name);
    const char *s = strstr(xml, open);
    if (!s)
        return -1;
    s += strlen(open);
    const char *e = strchr(s, '<');
    if (!e || (size_t)(e - s) >= cap)
        return -1;
    memcpy(out, s, (size_t)(e - s));
    out[e - s] = '\0';
    return e - s;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void *
worker_main(void *arg)
{
    struct listload_worker *w = arg;
    struct listload_body body = {0};
    char userpwd[512], token[4096] = "", url[8192];
    CURL *c = curl_easy_init();
    char *ep = curl_easy_escape(c, prefix, 0), *ed = curl_easy_escape(c, delim, 0);

    snprintf(userpwd, sizeof userpwd, "%s:%s", access_key, secret_key);
    struct curl_slist *hdrs = curl_slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    curl_easy_setopt(c, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3");
    curl_easy_setopt(c, CURLOPT_USERPWD, userpwd);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
    while (clock_now_ns() < deadline_ns) {
        char *et = token[0] ? curl_easy_escape(c, token, 0) : NULL;
        /* Parameters in canonical (sorted) order, as SigV4 wants them. */
        snprintf(url, sizeof url, "%s/%s?%s%s%slist-type=2&max-keys=%d&prefix=%s", endpoint, bucket,
                 et ? "continuation-token=" : "", et ? et : "", et ? "&" : "", max_keys, ep);
        if (delim[0])
            snprintf(url, sizeof url, "%s/%s?%s%s%sdelimiter=%s&list-type=2&max-keys=%d&prefix=%s",
                     endpoint, bucket, et ? "continuation-token=" : "", et ? et : "", et ? "&" : "",
                     ed, max_keys, ep);
        curl_free(et);
        curl_easy_setopt(c, CURLOPT_URL, url);
        body.len = 0;
        int64_t t0 = clock_now_ns();
        CURLcode rc = curl_easy_perform(c);
        long status = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        if (rc != CURLE_OK || status != 200 || !body.ptr) {
            w->errors++;
            token[0] = '\0';
            continue;
        }
        if (w->n_lat < LISTLOAD_MAX_LAT)
            w->lat_ms[w->n_lat++] = (double)(clock_now_ns() - t0) / 1e6;
        w->pages++;
        w->bytes += body.len;
        for (const char *p = body.ptr; (p = strstr(p, "<Key>")) != NULL; p += 5)
            w->keys++;
        for (const char *p = body.ptr; (p = strstr(p, "<CommonPrefixes>")) != NULL; p += 16)
            w->keys++;
        if (is_first_page || elem_text(body.ptr, "NextContinuationToken", token, sizeof token) < 0)
            token[0] = '\0';
    }
    curl_free(ep);
    curl_free(ed);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    free(body.ptr);
    return NULL;
}

int
main(int argc, char **argv)
{
    int conc = 1, opt;
    access_key = getenv("AWS_ACCESS_KEY_ID");
    secret_key = getenv("AWS_SECRET_ACCESS_KEY");
    while ((opt = getopt(argc, argv, "e:b:a:s:c:t:p:d:m:1")) != -1) {
        switch (opt) {
        case 'e':
            endpoint = optarg;
            break;
        case 'b':
            bucket = optarg;
            break;
        case 'a':
            access_key = optarg;
            break;
        case 's':
            secret_key = optarg;
            break;
        case 'c':
            conc = atoi(optarg);
            break;
        case 't':
            secs = atoi(optarg);
            break;
        case 'p':
            prefix = optarg;
            break;
        case 'd':
            delim = optarg;
            break;
        case 'm':
            max_keys = atoi(optarg);
            break;
        case '1':
            is_first_page = 1;
            break;
        default:
            fprintf(stderr, "usage: listload -e URL -b BUCKET [-c CONC] [-t SECS] [-p PREFIX] "
                            "[-d DELIM] [-m MAXKEYS] [-1]\n");
            return 2;
        }
    }
    if (!endpoint || !bucket || !access_key || !secret_key || conc < 1 || conc > 256) {
        fprintf(stderr, "listload: -e, -b and credentials are required\n");
        return 2;
    }
    curl_global_init(CURL_GLOBAL_ALL);
    struct listload_worker *ws = calloc((size_t)conc, sizeof(*ws));
    if (!ws)
        return 2;
    int64_t t0 = clock_now_ns();
    deadline_ns = t0 + (int64_t)secs * 1000000000;
    for (int i = 0; i < conc; i++) {
        ws[i].lat_ms = malloc(sizeof(double) * LISTLOAD_MAX_LAT / (size_t)conc);
        if (!ws[i].lat_ms)
            return 2;
        pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]);
    }
    uint64_t pages = 0, keys = 0, bytes = 0, errors = 0;
    size_t n_lat = 0;
    double *lat = malloc(sizeof(double) * LISTLOAD_MAX_LAT);
    for (int i = 0; i < conc; i++) {
        pthread_join(ws[i].thread, NULL);
        pages += ws[i].pages;
        keys += ws[i].keys;
        bytes += ws[i].bytes;
        errors += ws[i].errors;
        memcpy(lat + n_lat, ws[i].lat_ms, ws[i].n_lat * sizeof(double));
        n_lat += ws[i].n_lat;
        free(ws[i].lat_ms);
    }
    double el = (double)(clock_now_ns() - t0) / 1e9;
    qsort(lat, n_lat, sizeof(double), cmp_double);
    printf("listload pages=%llu secs=%.2f pages_per_s=%.1f keys_per_s=%.0f MBps=%.1f p50_ms=%.3f "
           "p99_ms=%.3f errors=%llu\n",
           (unsigned long long)pages, el, pages / el, keys / el, bytes / el / 1e6,
           n_lat ? lat[n_lat / 2] : 0.0, n_lat ? lat[n_lat * 99 / 100] : 0.0,
           (unsigned long long)errors);
    free(lat);
    free(ws);
    curl_global_cleanup();
    return errors ? 1 : 0;
}
