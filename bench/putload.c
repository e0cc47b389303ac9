/*
 * putload.c: small-object PUT load generator for an S3 endpoint.
 *
 * Keeps CONC libcurl easy handles busy on one multi handle (keep-alive
 * connections, SigV4 signed by libcurl with UNSIGNED-PAYLOAD), each PUTting
 * SIZE-byte objects under distinct keys, until N objects are done or SECS
 * seconds have passed. Prints one "putload ..." line of key=value figures:
 * PUT/s, errors and latency percentiles (time from adding the request to its
 * completion, in ms).
 *
 * Usage: bench/putload -e http://127.0.0.1:PORT -b BUCKET [-a ACCESS] [-s SECRET]
 *                      [-c CONC] [-n COUNT] [-t SECS] [-z SIZE] [-p KEYPREFIX]
 * The bucket must exist. ACCESS/SECRET default to $AWS_ACCESS_KEY_ID /
 * $AWS_SECRET_ACCESS_KEY. Exit status 0 if every PUT answered 200, 1 otherwise.
 */
#include <curl/curl.h>

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct putload_slot {
    CURL *easy;
    size_t off; /* bytes of the body already handed to libcurl */
    int64_t start_ns;
    char url[1024];
};

static const unsigned char *body;
static size_t body_len;

static int64_t
clock_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *
xcalloc(size_t n, size_t len)
{
    void *p = calloc(n, len);
    if (!p) {
        fprintf(stderr, "putload: out of memory\n");
        exit(2);
    }
    return p;
}

static size_t
read_body(char *dst, size_t size, size_t nitems, void *userdata)
{
    struct putload_slot *slot = userdata;
    size_t want = size * nitems;
    size_t left = body_len - slot->off;
    if (want > left)
        want = left;
    memcpy(dst, body + slot->off, want);
    slot->off += want;
    return want;
}

static int
seek_body(void *userdata, curl_off_t offset, int origin)
{
    struct putload_slot *slot = userdata;
    if (origin != SEEK_SET || offset < 0 || (size_t)offset > body_len)
        return CURL_SEEKFUNC_FAIL;
    slot->off = (size_t)offset;
    return CURL_SEEKFUNC_OK;
}

static size_t
discard(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    (void)ptr;
    (void)userdata;
    return size * nmemb;
}

static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double
pct_ms(const int64_t *sorted, size_t n, double pct)
{
    if (n == 0)
        return 0.0;
    size_t i = (size_t)(pct / 100.0 * (double)(n - 1) + 0.5);
    return (double)sorted[i] / 1e6;
}

/* Start one PUT of key PREFIX-N on slot s. */
static void
slot_start(CURLM *multi, struct putload_slot *s, const char *endpoint, const char *bucket,
           const char *prefix, long n)
{
    snprintf(s->url, sizeof s->url, "%s/%s/%s-%ld", endpoint, bucket, prefix, n);
    s->off = 0;
    curl_easy_setopt(s->easy, CURLOPT_URL, s->url);
    s->start_ns = clock_now_ns();
    curl_multi_add_handle(multi, s->easy);
}

static void
usage(void)
{
    fprintf(stderr, "usage: putload -e ENDPOINT -b BUCKET [-a ACCESS] [-s SECRET] [-c CONC] "
                    "[-n COUNT] [-t SECS] [-z SIZE] [-p KEYPREFIX]\n");
    exit(2);
}

int
main(int argc, char **argv)
{
    const char *endpoint = NULL, *bucket = NULL, *prefix = "putload";
    const char *access = getenv("AWS_ACCESS_KEY_ID"), *secret = getenv("AWS_SECRET_ACCESS_KEY");
    long conc = 16, count = 20000, size = 4096;
    double secs = 10.0;
    int opt;
    while ((opt = getopt(argc, argv, "e:b:a:s:c:n:t:z:p:")) != -1) {
        switch (opt) {
        case 'e':
            endpoint = optarg;
            break;
        case 'b':
            bucket = optarg;
            break;
        case 'a':
            access = optarg;
            break;
        case 's':
            secret = optarg;
            break;
        case 'c':
            conc = atol(optarg);
            break;
        case 'n':
            count = atol(optarg);
            break;
        case 't':
            secs = atof(optarg);
            break;
        case 'z':
            size = atol(optarg);
            break;
        case 'p':
            prefix = optarg;
            break;
        default:
            usage();
        }
    }
    if (!endpoint || !bucket || !access || !secret || conc < 1 || count < 1 || size < 0 ||
        secs <= 0)
        usage();
    if (conc > count)
        conc = count;

    /* One random body shared by all PUTs (the server hashes it; content does not matter). */
    unsigned char *buf = xcalloc(1, (size_t)size + 1);
    uint64_t x = 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid();
    for (long i = 0; i < size; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (unsigned char)x;
    }
    body = buf;
    body_len = (size_t)size;

    char userpwd[512];
    snprintf(userpwd, sizeof userpwd, "%s:%s", access, secret);

    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, conc);
    struct curl_slist *hdrs = NULL;
    hdrs = curl_slist_append(hdrs, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    hdrs = curl_slist_append(hdrs, "Expect:");
    hdrs = curl_slist_append(hdrs, "Content-Type: application/octet-stream");

    struct putload_slot *slots = xcalloc((size_t)conc, sizeof *slots);
    int64_t *lat_ns = xcalloc((size_t)count, sizeof *lat_ns);
    long issued = 0, done = 0, ok = 0, errors = 0;
    long status_hist[6] = {0}; /* 0: transport error, 1..5: status class */

    int64_t t0 = clock_now_ns();
    int64_t deadline = t0 + (int64_t)(secs * 1e9);
    for (long i = 0; i < conc; i++) {
        struct putload_slot *s = &slots[i];
        s->easy = curl_easy_init();
        curl_easy_setopt(s->easy, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(s->easy, CURLOPT_READFUNCTION, read_body);
        curl_easy_setopt(s->easy, CURLOPT_READDATA, s);
        curl_easy_setopt(s->easy, CURLOPT_SEEKFUNCTION, seek_body);
        curl_easy_setopt(s->easy, CURLOPT_SEEKDATA, s);
        curl_easy_setopt(s->easy, CURLOPT_INFILESIZE_LARGE, (curl_off_t)size);
        curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(s->easy, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(s->easy, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3");
        curl_easy_setopt(s->easy, CURLOPT_USERPWD, userpwd);
        curl_easy_setopt(s->easy, CURLOPT_TCP_NODELAY, 1L);
        curl_easy_setopt(s->easy, CURLOPT_TIMEOUT, 60L);
        curl_easy_setopt(s->easy, CURLOPT_PRIVATE, s);
    }

    for (long i = 0; i < conc; i++)
        slot_start(multi, &slots[i], endpoint, bucket, prefix, issued++);
    long active = conc;

    while (active > 0) {
        int running = 0;
        curl_multi_perform(multi, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(multi, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            struct putload_slot *s;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
            int64_t now = clock_now_ns();
            long code = 0;
            curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &code);
            if (msg->data.result != CURLE_OK) {
                status_hist[0]++;
                if (errors < 5)
                    fprintf(stderr, "putload: %s: %s\n", s->url,
                            curl_easy_strerror(msg->data.result));
                errors++;
            } else if (code != 200) {
                status_hist[code / 100 >= 1 && code / 100 <= 5 ? code / 100 : 0]++;
                if (errors < 5)
                    fprintf(stderr, "putload: %s: HTTP %ld\n", s->url, code);
                errors++;
            } else {
                ok++;
            }
            lat_ns[done++] = now - s->start_ns;
            curl_multi_remove_handle(multi, s->easy);
            active--;
            if (issued < count && now < deadline) {
                slot_start(multi, s, endpoint, bucket, prefix, issued++);
                active++;
            }
        }
        if (active > 0)
            curl_multi_poll(multi, NULL, 0, 100, NULL);
    }
    int64_t t1 = clock_now_ns();
    double elapsed = (double)(t1 - t0) / 1e9;

    qsort(lat_ns, (size_t)done, sizeof *lat_ns, cmp_i64);
    printf("putload n=%ld ok=%ld errors=%ld conc=%ld size=%ld secs=%.3f put_s=%.1f "
           "p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f status_4xx=%ld status_5xx=%ld "
           "transport_errors=%ld\n",
           done, ok, errors, conc, size, elapsed, (double)ok / elapsed,
           pct_ms(lat_ns, (size_t)done, 50), pct_ms(lat_ns, (size_t)done, 90),
           pct_ms(lat_ns, (size_t)done, 99), done ? (double)lat_ns[done - 1] / 1e6 : 0.0,
           status_hist[4], status_hist[5], status_hist[0]);

    for (long i = 0; i < conc; i++)
        curl_easy_cleanup(slots[i].easy);
    curl_multi_cleanup(multi);
    curl_slist_free_all(hdrs);
    curl_global_cleanup();
    free(slots);
    free(lat_ns);
    free(buf);
    return errors ? 1 : 0;
}
