/*
 * mpload.c: one multipart upload ("checkpoint write") against an S3 endpoint.
 *
 * CreateMultipartUpload, then NPARTS UploadPart PUTs of PARTSIZE bytes each kept
 * CONC at a time on one libcurl multi handle (keep-alive connections, SigV4 signed
 * by libcurl with UNSIGNED-PAYLOAD, the body sent without waiting for 100-continue), then
 * CompleteMultipartUpload with the ETags the server returned; optionally a HEAD
 * and a 1-byte range GET of the new object right after Complete's 200.
 * Part i (0-based) is bytes [i*PARTSIZE, (i+1)*PARTSIZE) of FILE (mmap'd and
 * pre-faulted before the clock starts), wrapping around at the end of the file
 * when NPARTS*PARTSIZE is larger than it; without -f the body is a generated
 * pseudo-random buffer of PARTSIZE bytes (-n parts of it, all the same).
 *
 * Prints one "mpload ..." line of key=value figures (times in ms unless _s):
 *   create_ms   CreateMultipartUpload round trip
 *   parts_s     first UploadPart started .. last part's 200
 *   complete_ms CompleteMultipartUpload round trip (sent right after the last part's 200)
 *   total_s     CreateMultipartUpload sent .. Complete's 200; MiB_s = bytes / total_s
 *   head_ms get1_ms  (-H) HEAD, then GET Range: bytes=0-0, each its own round trip
 *   visible_ms  (-H) last part's 200 .. first 200 of the HEAD (Complete + HEAD)
 *   part_p50_ms part_max_ms  UploadPart latencies
 *   client_cpu_s  this process's user+system CPU from Create to Complete's 200
 *   etag        the object's ETag from Complete's body (etag_from=complete), or from the HEAD
 *               when Complete's is empty (Ceph RGW 16: etag_from=head)
 * With -E FILE, writes "PARTNUMBER ETAG" lines (part ETags as returned).
 *
 * Usage: bench/mpload -e ENDPOINT -b BUCKET -k KEY [-a ACCESS] [-s SECRET]
 *                     [-f FILE] -z PARTSIZE [-n NPARTS] [-c CONC] [-H] [-E ETAGFILE]
 * NPARTS defaults to ceil(size of FILE / PARTSIZE). ACCESS/SECRET default to
 * $AWS_ACCESS_KEY_ID / $AWS_SECRET_ACCESS_KEY. Exit status 0 if every request
 * succeeded (the upload is aborted on a failed part), 1 otherwise.
 */
#define _GNU_SOURCE /* strcasestr */
#include <curl/curl.h>

#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct mp_part {
    long number; /* 1-based */
    size_t off;  /* bytes of this part already handed to libcurl */
    int64_t start_ns, lat_ns;
    char etag[40]; /* unquoted */
};

struct mp_slot {
    CURL *easy;
    struct mp_part *part;
    char url[2048];
};

/* A growable byte buffer for response bodies. */
struct mp_buf {
    char *p;
    size_t len, cap;
};

static const unsigned char *src; /* file mapping or generated buffer */
static size_t src_len;
static size_t part_size;
static const char *endpoint, *bucket, *key;
static char userpwd[512];
static struct curl_slist *hdrs;

static int64_t
clock_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* user + system CPU seconds of this process so far */
static double
cpu_now_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void *
xcalloc(size_t n, size_t len)
{
    void *p = calloc(n, len);
    if (!p) {
        fprintf(stderr, "mpload: out of memory\n");
        exit(2);
    }
    return p;
}

static void
buf_add(struct mp_buf *b, const char *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            fprintf(stderr, "mpload: out of memory\n");
            exit(2);
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static size_t
collect(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    buf_add(userdata, ptr, size * nmemb);
    return size * nmemb;
}

static size_t
discard(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    (void)ptr;
    (void)userdata;
    return size * nmemb;
}

/* Part i's bytes start at (i * part_size) mod src_len and wrap around the source. */
static size_t
part_base(long number)
{
    if (src_len == part_size)
        return 0;
    return (size_t)(((unsigned long long)(number - 1) * part_size) % src_len);
}

static size_t
read_part(char *dst, size_t size, size_t nitems, void *userdata)
{
    struct mp_slot *s = userdata;
    struct mp_part *p = s->part;
    size_t want = size * nitems, done = 0;
    if (want > part_size - p->off)
        want = part_size - p->off;
    while (done < want) {
        size_t at = (part_base(p->number) + p->off) % src_len;
        size_t n = want - done;
        if (n > src_len - at)
            n = src_len - at;
        memcpy(dst + done, src + at, n);
        done += n;
        p->off += n;
    }
    return done;
}

static int
seek_part(void *userdata, curl_off_t offset, int origin)
{
    struct mp_slot *s = userdata;
    if (origin != SEEK_SET || offset < 0 || (size_t)offset > part_size)
        return CURL_SEEKFUNC_FAIL;
    s->part->off = (size_t)offset;
    return CURL_SEEKFUNC_OK;
}

/* Header callback of UploadPart: keep the ETag (without quotes). */
static size_t
part_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct mp_slot *s = userdata;
    size_t n = size * nmemb;
    if (n > 5 && strncasecmp(ptr, "etag:", 5) == 0) {
        size_t i = 5, j = 0;
        while (i < n && (ptr[i] == ' ' || ptr[i] == '"'))
            i++;
        while (i < n && ptr[i] != '"' && ptr[i] != '\r' && ptr[i] != '\n' &&
               j + 1 < sizeof s->part->etag)
            s->part->etag[j++] = ptr[i++];
        s->part->etag[j] = '\0';
    }
    return n;
}

/* Copy the text of the first <TAG>...</TAG> in xml into out; 0 if found. */
static int
xml_get(const char *xml, const char *tag, char *out, size_t outlen)
{
    char open[64], close[64];
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    const char *a = xml ? strstr(xml, open) : NULL;
    if (!a)
        return -1;
    a += strlen(open);
    const char *b = strstr(a, close);
    if (!b || (size_t)(b - a) >= outlen)
        return -1;
    memcpy(out, a, (size_t)(b - a));
    out[b - a] = '\0';
    /* &quot; around ETags */
    char *q;
    while ((q = strstr(out, "&quot;")))
        memmove(q, q + 6, strlen(q + 6) + 1);
    while ((q = strstr(out, "&#34;")))
        memmove(q, q + 5, strlen(q + 5) + 1);
    while ((q = strchr(out, '"')))
        memmove(q, q + 1, strlen(q + 1) + 1);
    return 0;
}

static void
easy_common(CURL *e)
{
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(e, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3");
    curl_easy_setopt(e, CURLOPT_USERPWD, userpwd);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 600L);
}

/* One request on the shared control handle; returns the HTTP status (0: transport
 * error), the body in *body, the round trip in *ms. */
static struct mp_buf resp_headers; /* of the last request() */

static long
request(CURL *e, const char *method, const char *url, const char *post, struct mp_buf *body,
        double *ms)
{
    curl_easy_reset(e);
    easy_common(e);
    body->len = 0;
    if (body->p)
        body->p[0] = '\0';
    resp_headers.len = 0;
    if (resp_headers.p)
        resp_headers.p[0] = '\0';
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, collect);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &resp_headers);
    if (!strcmp(method, "POST")) {
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, post ? post : "");
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(post ? strlen(post) : 0));
    } else if (!strcmp(method, "HEAD")) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (!strcmp(method, "GET1")) {
        curl_easy_setopt(e, CURLOPT_RANGE, "0-0");
    } else if (!strcmp(method, "DELETE")) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
    }
    int64_t t0 = clock_now_ns();
    CURLcode rc = curl_easy_perform(e);
    *ms = (double)(clock_now_ns() - t0) / 1e6;
    long code = 0;
    if (rc != CURLE_OK) {
        fprintf(stderr, "mpload: %s %s: %s\n", method, url, curl_easy_strerror(rc));
        return 0;
    }
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
    return code;
}

static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void
usage(void)
{
    fprintf(stderr, "usage: mpload -e ENDPOINT -b BUCKET -k KEY [-a ACCESS] [-s SECRET] "
                    "[-f FILE] -z PARTSIZE [-n NPARTS] [-c CONC] [-H] [-E ETAGFILE]\n");
    exit(2);
}

int
main(int argc, char **argv)
{
    const char *access = getenv("AWS_ACCESS_KEY_ID"), *secret = getenv("AWS_SECRET_ACCESS_KEY");
    const char *file = NULL, *etag_file = NULL;
    long conc = 16, nparts = 0;
    long long zsize = 0;
    int do_head = 0, opt;
    while ((opt = getopt(argc, argv, "e:b:k:a:s:f:z:n:c:HE:")) != -1) {
        switch (opt) {
        case 'e':
            endpoint = optarg;
            break;
        case 'b':
            bucket = optarg;
            break;
        case 'k':
            key = optarg;
            break;
        case 'a':
            access = optarg;
            break;
        case 's':
            secret = optarg;
            break;
        case 'f':
            file = optarg;
            break;
        case 'z':
            zsize = atoll(optarg);
            break;
        case 'n':
            nparts = atol(optarg);
            break;
        case 'c':
            conc = atol(optarg);
            break;
        case 'H':
            do_head = 1;
            break;
        case 'E':
            etag_file = optarg;
            break;
        default:
            usage();
        }
    }
    if (!endpoint || !bucket || !key || !access || !secret || zsize < 1 || conc < 1 || nparts < 0 ||
        nparts > 10000)
        usage();
    part_size = (size_t)zsize;

    if (file) {
        int fd = open(file, O_RDONLY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0) {
            fprintf(stderr, "mpload: cannot open %s\n", file);
            return 2;
        }
        src_len = (size_t)st.st_size;
        /* pre-faulted so the clock measures the upload, not page faults */
        void *m = mmap(NULL, src_len, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
        if (m == MAP_FAILED) {
            fprintf(stderr, "mpload: mmap %s failed\n", file);
            return 2;
        }
        close(fd);
        src = m;
        if (nparts == 0)
            nparts = (long)((src_len + part_size - 1) / part_size);
        if (src_len < part_size && nparts > 1) {
            fprintf(stderr, "mpload: file smaller than one part\n");
            return 2;
        }
    } else {
        if (nparts == 0)
            usage();
        unsigned char *b = xcalloc(1, part_size);
        uint64_t x = 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid();
        for (size_t i = 0; i < part_size; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            b[i] = (unsigned char)x;
        }
        src = b;
        src_len = part_size;
    }
    if (nparts > 10000) {
        fprintf(stderr, "mpload: more than 10000 parts\n");
        return 2;
    }
    /* the last part of a file that is not a multiple of the part size is shorter */
    size_t last_size = part_size;
    if (file && (size_t)nparts * part_size > src_len && (size_t)(nparts - 1) * part_size < src_len)
        last_size = src_len - (size_t)(nparts - 1) * part_size;
    if (conc > nparts)
        conc = nparts;

    snprintf(userpwd, sizeof userpwd, "%s:%s", access, secret);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    hdrs = curl_slist_append(hdrs, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    /* No "Expect:" line to suppress 100-continue: libcurl 7.88 then signs an empty "expect"
     * header it does not send, and RGW rejects the signature. The body goes out at once
     * instead (CURLOPT_EXPECT_100_TIMEOUT_MS 0 on the part handles). */
    hdrs = curl_slist_append(hdrs, "Content-Type: application/octet-stream");

    CURL *ctl = curl_easy_init();
    struct mp_buf body = {0};
    char url[4096], upload_id[1024];
    double create_ms = 0, complete_ms = 0, head_ms = -1, get1_ms = -1, ms;
    int errors = 0;

    double cpu0 = cpu_now_s();
    int64_t t0 = clock_now_ns();
    snprintf(url, sizeof url, "%s/%s/%s?uploads=", endpoint, bucket, key);
    long code = request(ctl, "POST", url, NULL, &body, &create_ms);
    if (code != 200 || xml_get(body.p, "UploadId", upload_id, sizeof upload_id) != 0) {
        fprintf(stderr, "mpload: CreateMultipartUpload answered %ld: %s\n", code,
                body.p ? body.p : "");
        return 1;
    }
    char *esc_id = curl_easy_escape(ctl, upload_id, 0);

    /* UploadPart, CONC at a time */
    struct mp_part *parts = xcalloc((size_t)nparts, sizeof *parts);
    struct mp_slot *slots = xcalloc((size_t)conc, sizeof *slots);
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, conc);
    for (long i = 0; i < conc; i++) {
        CURL *e = slots[i].easy = curl_easy_init();
        easy_common(e);
        curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, read_part);
        curl_easy_setopt(e, CURLOPT_READDATA, &slots[i]);
        curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, seek_part);
        curl_easy_setopt(e, CURLOPT_SEEKDATA, &slots[i]);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, part_header);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, &slots[i]);
        curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, 512L * 1024);
        curl_easy_setopt(e, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);
        curl_easy_setopt(e, CURLOPT_PRIVATE, &slots[i]);
    }
    long issued = 0, done = 0, active = 0;
#define START_PART(s)                                                                              \
    do {                                                                                           \
        struct mp_part *p_ = &parts[issued];                                                       \
        p_->number = issued + 1;                                                                   \
        (s)->part = p_;                                                                            \
        snprintf((s)->url, sizeof(s)->url, "%s/%s/%s?partNumber=%ld&uploadId=%s", endpoint,        \
                 bucket, key, p_->number, esc_id);                                                 \
        curl_easy_setopt((s)->easy, CURLOPT_URL, (s)->url);                                        \
        curl_easy_setopt((s)->easy, CURLOPT_INFILESIZE_LARGE,                                      \
                         (curl_off_t)(p_->number == nparts ? last_size : part_size));              \
        p_->start_ns = clock_now_ns();                                                             \
        curl_multi_add_handle(multi, (s)->easy);                                                   \
        issued++;                                                                                  \
        active++;                                                                                  \
    } while (0)
    int64_t tp0 = clock_now_ns();
    for (long i = 0; i < conc; i++)
        START_PART(&slots[i]);
    while (active > 0) {
        int running = 0;
        curl_multi_perform(multi, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(multi, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            struct mp_slot *s;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
            long c = 0;
            curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &c);
            s->part->lat_ns = clock_now_ns() - s->part->start_ns;
            if (msg->data.result != CURLE_OK || c != 200 || !s->part->etag[0]) {
                if (errors < 5)
                    fprintf(stderr, "mpload: part %ld: %s HTTP %ld etag '%s'\n", s->part->number,
                            curl_easy_strerror(msg->data.result), c, s->part->etag);
                errors++;
            }
            done++;
            curl_multi_remove_handle(multi, s->easy);
            active--;
            if (issued < nparts && !errors)
                START_PART(s);
        }
        if (active > 0)
            curl_multi_poll(multi, NULL, 0, 100, NULL);
    }
    int64_t tp1 = clock_now_ns();

    if (errors) {
        snprintf(url, sizeof url, "%s/%s/%s?uploadId=%s", endpoint, bucket, key, esc_id);
        request(ctl, "DELETE", url, NULL, &body, &ms);
        fprintf(stderr, "mpload: %d part(s) failed; upload aborted\n", errors);
        return 1;
    }

    /* CompleteMultipartUpload with the returned ETags */
    struct mp_buf xml = {0};
    buf_add(&xml, "<CompleteMultipartUpload>", 25);
    for (long i = 0; i < nparts; i++) {
        char line[160];
        int n = snprintf(line, sizeof line,
                         "<Part><PartNumber>%ld</PartNumber><ETag>\"%s\"</ETag></Part>",
                         parts[i].number, parts[i].etag);
        buf_add(&xml, line, (size_t)n);
    }
    buf_add(&xml, "</CompleteMultipartUpload>", 26);
    snprintf(url, sizeof url, "%s/%s/%s?uploadId=%s", endpoint, bucket, key, esc_id);
    code = request(ctl, "POST", url, xml.p, &body, &complete_ms);
    int64_t tc = clock_now_ns();
    double cpu_tc = cpu_now_s();
    char etag[128] = "";
    const char *etag_from = "complete";
    if (code != 200 || strstr(body.p ? body.p : "", "<Error>") ||
        xml_get(body.p, "ETag", etag, sizeof etag) != 0) {
        fprintf(stderr, "mpload: CompleteMultipartUpload answered %ld: %.500s\n", code,
                body.p ? body.p : "");
        return 1;
    }

    double visible_ms = -1;
    if (do_head) {
        snprintf(url, sizeof url, "%s/%s/%s", endpoint, bucket, key);
        code = request(ctl, "HEAD", url, NULL, &body, &head_ms);
        if (code != 200) {
            fprintf(stderr, "mpload: HEAD after Complete answered %ld\n", code);
            errors++;
        } else {
            visible_ms = (double)(clock_now_ns() - tp1) / 1e6;
            /* Ceph RGW 16 answers Complete with an empty <ETag/>: take HEAD's then */
            const char *h = resp_headers.p ? strcasestr(resp_headers.p, "\netag:") : NULL;
            if (!etag[0] && h) {
                size_t j = 0;
                h += 6;
                while (*h == ' ' || *h == '"')
                    h++;
                while (*h && *h != '"' && *h != '\r' && *h != '\n' && j + 1 < sizeof etag)
                    etag[j++] = *h++;
                etag[j] = '\0';
                etag_from = "head";
            }
        }
        code = request(ctl, "GET1", url, NULL, &body, &get1_ms);
        if (code != 206 || body.len != 1) {
            fprintf(stderr, "mpload: GET bytes=0-0 after Complete answered %ld (%zu bytes)\n", code,
                    body.len);
            errors++;
        }
    }

    if (etag_file) {
        FILE *f = fopen(etag_file, "w");
        if (!f) {
            fprintf(stderr, "mpload: cannot write %s\n", etag_file);
            return 1;
        }
        for (long i = 0; i < nparts; i++)
            fprintf(f, "%ld %s\n", parts[i].number, parts[i].etag);
        fclose(f);
    }

    int64_t *lat = xcalloc((size_t)nparts, sizeof *lat);
    for (long i = 0; i < nparts; i++)
        lat[i] = parts[i].lat_ns;
    qsort(lat, (size_t)nparts, sizeof *lat, cmp_i64);
    double cpu_s = cpu_tc - cpu0;
    unsigned long long bytes = (unsigned long long)(nparts - 1) * part_size + last_size;
    double total_s = (double)(tc - t0) / 1e9;
    printf("mpload parts=%ld part_size=%zu conc=%ld bytes=%llu create_ms=%.3f parts_s=%.3f "
           "complete_ms=%.3f total_s=%.3f MiB_s=%.1f head_ms=%.3f get1_ms=%.3f visible_ms=%.3f "
           "part_p50_ms=%.1f part_max_ms=%.1f client_cpu_s=%.2f errors=%d etag=%s etag_from=%s\n",
           nparts, part_size, conc, bytes, create_ms, (double)(tp1 - tp0) / 1e9, complete_ms,
           total_s, (double)bytes / 1048576.0 / total_s, head_ms, get1_ms, visible_ms,
           (double)lat[(size_t)(nparts - 1) / 2] / 1e6, (double)lat[nparts - 1] / 1e6, cpu_s,
           errors, etag[0] ? etag : "-", etag_from);

    for (long i = 0; i < conc; i++)
        curl_easy_cleanup(slots[i].easy);
    curl_multi_cleanup(multi);
    curl_free(esc_id);
    curl_easy_cleanup(ctl);
    curl_slist_free_all(hdrs);
    curl_global_cleanup();
    return errors ? 1 : 0;
}
