/*
 * bucket_log.c: S3 server access logging. A request on a bucket that logs
 * appends one line in S3's server access log format to that bucket's spool
 * file (DATA/bucketlogs/ID.log, one write() under the spool lock) when it
 * completes. Every bucket_log_interval_s the delivery thread renames each
 * spool to ID-NS.batch (under the lock, so no line is lost or split) and
 * PUTs each batch as one object, TargetPrefix + YYYY-mm-DD-HH-MM-SS-HEX
 * (a name fixed by the batch, so a redelivery after a crash overwrites
 * rather than duplicates), then unlinks it. Spool and batch files outlive
 * a restart and are delivered by the next pass.
 */
#include "config.h"

#include "auth/auth.h"
#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/body.h"
#include "server/bucket_access.h"
#include "server/bucket_log.h"
#include "server/commit.h"
#include "server/errors.h"
#include "server/extents.h"
#include "server/meta.h"
#include "server/ops.h"
#include "server/req.h"
#include "server/server.h"
#include "server/util.h"
#include "server/xml_in.h"
#include "server/xml_out.h"
#include "storage/storage.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SPOOL_DIR "bucketlogs"
/* A batch larger than this is delivered in the next pass's share: bound
 * what one delivery reads into memory. */
#define BATCH_MAX (64u << 20)

struct bucket_log {
    struct server *srv;
    char dir[4200];
    pthread_mutex_t spool_mu; /* appends and renames of spool files */
    pthread_rwlock_t ids_lock;
    uint64_t *ids; /* buckets that log, sorted */
    size_t n_ids;
    atomic_size_t n_logged; /* n_ids, read without the lock */
    pthread_mutex_t stop_mu;
    pthread_cond_t stop_cv;
    bool is_stopping;
    bool has_thread;
    pthread_t thread;
};

/* ======================================================================
 * Which buckets log
 * ====================================================================== */

struct ids_ctx {
    struct buf ids;
};

static int
collect_id(void *ctx, uint64_t bucket_id, const void *val, size_t len)
{
    (void)val;
    (void)len;
    buf_append(&((struct ids_ctx *)ctx)->ids, &bucket_id, sizeof(bucket_id));
    return 0;
}

static int
id_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void
bucket_log_reload(struct bucket_log *bl)
{
    struct ids_ctx c;
    buf_init(&c.ids);
    if (index_bucket_config_list(bl->srv->index, INDEX_BUCKET_CONFIG_LOGGING, collect_id, &c) < 0)
        log_warn("bucket logging: cannot list the configurations");
    size_t n = c.ids.len / sizeof(uint64_t);
    uint64_t *ids = n ? xmalloc(c.ids.len) : NULL;
    if (n) {
        memcpy(ids, c.ids.ptr, c.ids.len);
        qsort(ids, n, sizeof(*ids), id_cmp);
    }
    buf_cleanup(&c.ids);
    pthread_rwlock_wrlock(&bl->ids_lock);
    free(bl->ids);
    bl->ids = ids;
    bl->n_ids = n;
    atomic_store(&bl->n_logged, n);
    pthread_rwlock_unlock(&bl->ids_lock);
}

static bool
is_logged(struct bucket_log *bl, uint64_t bucket_id)
{
    pthread_rwlock_rdlock(&bl->ids_lock);
    bool is_found =
        bl->n_ids && bsearch(&bucket_id, bl->ids, bl->n_ids, sizeof(uint64_t), id_cmp) != NULL;
    pthread_rwlock_unlock(&bl->ids_lock);
    return is_found;
}

/* ======================================================================
 * Records
 * ====================================================================== */

/* Appends 's' to 'b' as a log field: "-" when empty, spaces and control
 * bytes %-escaped so a field never splits. */
static void
field(struct buf *b, struct slice s)
{
    if (!s.len) {
        buf_append_str(b, "-");
        return;
    }
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (c <= ' ' || c == 0x7f || c == '"')
            buf_printf(b, "%%%02X", c);
        else
            buf_append(b, &s.ptr[i], 1);
    }
}

/* A quoted field ("..." with quotes and control bytes escaped). */
static void
quoted(struct buf *b, struct slice s)
{
    buf_append_str(b, "\"");
    if (!s.len)
        buf_append_str(b, "-");
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (c < ' ' || c == 0x7f || c == '"' || c == '\\')
            buf_printf(b, "\\x%02X", c);
        else
            buf_append(b, &s.ptr[i], 1);
    }
    buf_append_str(b, "\"");
}

static void
remote_addr(const struct s3_req *r, char *out, size_t cap)
{
    snprintf(out, cap, "-");
    const union MHD_ConnectionInfo *ci =
        r->conn ? MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS) : NULL;
    if (!ci || !ci->client_addr)
        return;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, out,
                  (socklen_t)cap);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, out,
                  (socklen_t)cap);
}

/* S3's operation name: REST.METHOD.WHAT, WHAT the sub-resource or OBJECT /
 * BUCKET. */
static void
operation(struct buf *b, const struct s3_req *r)
{
    static const char *const named[] = {"acl",     "attributes", "cors",     "lifecycle",
                                        "logging", "tagging",    "location", "versioning"};
    const char *what = r->key.len ? "OBJECT" : "BUCKET";
    struct slice sub = SLICE_NULL;
    for (size_t i = 0; i < r->n_params && !sub.len; i++) {
        struct slice n = r->params[i].name;
        if (slice_eq(n, SLICE_LIT("uploadId")))
            what = slice_eq(r->method, SLICE_LIT("PUT")) ? "PART" : "UPLOAD";
        else if (slice_eq(n, SLICE_LIT("uploads")))
            what = "UPLOADS";
        else if (slice_eq(n, SLICE_LIT("delete")))
            what = "MULTI_OBJECT_DELETE";
        for (size_t k = 0; k < ARRAY_LEN(named); k++)
            if (slice_eq(n, slice_from_cstr(named[k])))
                sub = n;
    }
    buf_append_str(b, "REST.");
    buf_append(b, r->method.ptr, r->method.len);
    buf_append_str(b, ".");
    if (!sub.len) {
        buf_append_str(b, what);
        return;
    }
    for (size_t k = 0; k < sub.len; k++) {
        char c = sub.ptr[k];
        c = c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
        buf_append(b, &c, 1);
    }
}

/* Formats the record of 'r' (S3's field order) into 'b'. */
static void
record_format(struct buf *b, const struct s3_req *r, int64_t end_ns)
{
    char tbuf[64], addr[64];
    time_t now = (time_t)(clock_now_ns() / 1000000000);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(tbuf, sizeof(tbuf), "[%d/%b/%Y:%H:%M:%S +0000]", &tm);
    bool is_signed = r->is_authenticated && !r->principal.is_anonymous;
    const char *owner =
        r->has_bucket ? s3_bucket_owner_id((struct s3_req *)r, &r->bucket_rec) : "-";
    remote_addr(r, addr, sizeof(addr));
    field(b, slice_from_cstr(owner));
    buf_append_str(b, " ");
    field(b, r->bucket);
    buf_printf(b, " %s %s ", tbuf, addr);
    field(b, slice_from_cstr(is_signed ? (r->user_id[0] ? r->user_id : r->srv->owner_id) : ""));
    buf_printf(b, " %s ", r->request_id);
    operation(b, r);
    buf_append_str(b, " ");
    if (r->key.len) {
        struct buf enc;
        buf_init(&enc);
        uri_encode(&enc, r->key.ptr, r->key.len, true);
        field(b, (struct slice){enc.ptr ? enc.ptr : "", enc.len});
        buf_cleanup(&enc);
    } else {
        buf_append_str(b, "-");
    }
    buf_append_str(b, " ");
    char *line = arena_sprintf(r->arena, "%.*s %.*s HTTP/1.1", (int)r->method.len, r->method.ptr,
                               (int)r->raw_uri.len, r->raw_uri.ptr);
    quoted(b, slice_from_cstr(line));
    buf_printf(b, " %d ", r->status);
    field(b, slice_from_cstr(r->error != S3_OK ? s3_error_code(r->error) : ""));
    int64_t total_ms = (end_ns - r->start_ns) / 1000000;
    int64_t turn_ms = r->respond_ns ? (r->respond_ns - r->start_ns) / 1000000 : total_ms;
    if (r->resp_bytes)
        buf_printf(b, " %" PRIu64, r->resp_bytes);
    else
        buf_append_str(b, " -");
    /* Object size: of the object written or read, "-" for the rest. */
    if (r->key.len && r->payload_len)
        buf_printf(b, " %" PRIu64, r->payload_len);
    else if (r->key.len && r->resp_bytes)
        buf_printf(b, " %" PRIu64, r->resp_bytes);
    else
        buf_append_str(b, " -");
    buf_printf(b, " %" PRId64 " %" PRId64 " ", total_ms, turn_ms);
    quoted(b, s3_req_header(r, "referer"));
    buf_append_str(b, " ");
    quoted(b, s3_req_header(r, "user-agent"));
    buf_printf(b, " - %s ", r->request_id);
    const char *sig = !is_signed                                                          ? "-"
                      : s3_req_param(r, "AWSAccessKeyId") || s3_req_param(r, "Signature") ? "SigV2"
                                                                                          : "SigV4";
    buf_printf(b, "%s - %s ", sig,
               !is_signed             ? "-"
               : r->auth.is_presigned ? "QueryString"
                                      : "AuthHeader");
    field(b, s3_req_header(r, "host"));
    buf_append_str(b, " - - -\n");
}

void
bucket_log_request(struct bucket_log *bl, const struct s3_req *r, int64_t end_ns)
{
    if (!bl || atomic_load_explicit(&bl->n_logged, memory_order_relaxed) == 0)
        return;
    if (!r->has_bucket || !r->method.ptr || r->is_admin || !is_logged(bl, r->bucket_rec.id))
        return;
    struct buf b;
    buf_init(&b);
    record_format(&b, r, end_ns);
    char path[4300];
    snprintf(path, sizeof(path), "%s/%016" PRIx64 ".log", bl->dir, r->bucket_rec.id);
    pthread_mutex_lock(&bl->spool_mu);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, b.ptr, b.len) != (ssize_t)b.len)
        log_warn("bucket logging: cannot append to %s: %s", path, strerror(errno));
    if (fd >= 0)
        close(fd);
    pthread_mutex_unlock(&bl->spool_mu);
    buf_cleanup(&b);
}

/* ======================================================================
 * Delivery
 * ====================================================================== */

/* Stores 'len' bytes at 'data' as object 'key' of bucket 'bucket_id'
 * (text/plain), as a PUT does: storage written, then one commit. Returns
 * 0 or -errno. */
static int
put_object(struct bucket_log *bl, uint64_t bucket_id, struct slice key, const char *data,
           size_t len, struct arena *a)
{
    struct server *srv = bl->srv;
    struct storage_writer *w = NULL;
    struct index_object obj;
    struct auth_checksum md5;
    uint8_t dig[AUTH_CK_MAX_DIGEST];
    int rc = 0;

    memset(&obj, 0, sizeof(obj));
    auth_checksum_init(&md5, AUTH_CK_MD5);
    auth_checksum_update(&md5, data, len);
    auth_checksum_final(&md5, dig);
    memcpy(obj.etag, dig, 16);
    obj.size = len;
    obj.mtime_ns = clock_now_ns();
    struct meta_entry e = {SLICE_LIT("content-type"), SLICE_LIT("text/plain")};
    struct meta m = {&e, 1};
    meta_encode(a, &m, &obj.meta, &obj.meta_len);
    if (len <= srv->cfg.inline_max) {
        obj.inline_data = (const uint8_t *)data;
        obj.inline_len = len;
    } else {
        const struct storage_extent *se;
        if ((rc = storage_writer_create(srv->storage, len, &w)) < 0 ||
            (rc = storage_writer_write(w, data, len)) < 0 || (rc = storage_writer_finish(w)) < 0)
            goto fail;
        size_t n = storage_writer_extents(w, &se);
        obj.extents = extents_to_index(a, se, n);
        obj.n_extents = (uint32_t)n;
        obj.sums = storage_writer_sums(w, &obj.sums_len);
    }
    struct index_op op = {
        .kind = INDEX_OP_PUT, .bucket_id = bucket_id, .key = key, .object = &obj, .arena = a};
    rc = committer_run(srv->committer, &op, 1);
    if (rc == 0)
        rc = op.result;

fail:
    storage_writer_destroy(w, rc == 0);
    return rc;
}

struct name_by_id {
    uint64_t id;
    char name[INDEX_MAX_BUCKET + 1];
};

static int
match_bucket_id(void *ctx, const struct index_bucket *b)
{
    struct name_by_id *nb = ctx;
    if (b->id != nb->id)
        return 0;
    snprintf(nb->name, sizeof(nb->name), "%s", b->name);
    return 1;
}

/* Delivers batch file 'name' (SOURCE-NS.batch) and unlinks it when done
 * (or when nothing can take it: logging off, target gone, or the target no
 * longer lets log delivery write, as AWS delivers only while it does). */
static void
deliver_batch(struct bucket_log *bl, const char *name)
{
    struct index *ix = bl->srv->index;
    uint64_t source_id, ns;
    char path[4300];
    struct arena *a = arena_create(4096);
    char *data = NULL;
    int fd = -1;
    bool is_done = false;

    if (sscanf(name, "%16" SCNx64 "-%16" SCNx64 ".batch", &source_id, &ns) != 2)
        goto out;
    snprintf(path, sizeof(path), "%s/%s", bl->dir, name);
    const void *val;
    size_t vlen;
    struct xml_logging_request cfg;
    struct index_bucket dst;
    if (index_bucket_config_get(ix, source_id, INDEX_BUCKET_CONFIG_LOGGING, a, &val, &vlen) != 0 ||
        xml_parse_logging(val, vlen, a, &cfg) != XML_IN_OK || !cfg.is_enabled ||
        index_bucket_get(ix, cfg.target_bucket, &dst) != 0) {
        is_done = true; /* logging was turned off or its target is gone */
        goto out;
    }
    struct stat st;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0)
        goto out;
    size_t len = (size_t)MIN((uint64_t)st.st_size, BATCH_MAX);
    data = xmalloc(len + 1);
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, data + got, len - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (got == 0) {
        is_done = true;
        goto out;
    }
    time_t t = (time_t)(ns / 1000000000);
    struct tm tm;
    char when[40];
    gmtime_r(&t, &tm);
    strftime(when, sizeof(when), "%Y-%m-%d-%H-%M-%S", &tm);
    uint8_t h[32];
    auth_sha256(name, strlen(name), h);
    char hex[17];
    for (int i = 0; i < 8; i++)
        snprintf(hex + 2 * i, 3, "%02X", h[i]);
    char *key = arena_sprintf(a, "%.*s%s-%s", (int)cfg.target_prefix.len,
                              cfg.target_prefix.ptr ? cfg.target_prefix.ptr : "", when, hex);
    struct name_by_id src = {.id = source_id};
    if (index_bucket_list(ix, match_bucket_id, &src) < 0 || !src.name[0] ||
        !bucket_access_allows_log_delivery(bl->srv->access, &dst, slice_from_cstr(key),
                                           slice_from_cstr(src.name))) {
        log_warn("bucket logging: %s does not let log delivery write %s: %s dropped", dst.name, key,
                 name);
        is_done = true;
        goto out;
    }
    int rc = put_object(bl, dst.id, slice_from_cstr(key), data, got, a);
    if (rc < 0) {
        log_warn("bucket logging: delivery of %s to %s failed: %d (kept for the next pass)", name,
                 dst.name, rc);
        goto out;
    }
    is_done = true;

out:
    if (fd >= 0)
        close(fd);
    if (is_done && unlink(path) != 0 && errno != ENOENT)
        log_warn("bucket logging: cannot remove %s: %s", path, strerror(errno));
    free(data);
    arena_destroy(a);
}

/* One pass: every spool becomes a batch (under the lock), then every batch
 * (this pass's and any an earlier run left) is delivered. */
static void
deliver_all(struct bucket_log *bl)
{
    int64_t now = clock_now_ns();
    DIR *d = opendir(bl->dir);
    if (!d)
        return;
    struct dirent *de;
    pthread_mutex_lock(&bl->spool_mu);
    while ((de = readdir(d)) != NULL) {
        uint64_t id;
        char from[4300], to[4300];
        size_t nl = strlen(de->d_name);
        if (nl != 20 || strcmp(de->d_name + 16, ".log") != 0 ||
            sscanf(de->d_name, "%16" SCNx64, &id) != 1)
            continue;
        snprintf(from, sizeof(from), "%s/%s", bl->dir, de->d_name);
        snprintf(to, sizeof(to), "%s/%016" PRIx64 "-%016" PRIx64 ".batch", bl->dir, id,
                 (uint64_t)now);
        if (rename(from, to) != 0)
            log_warn("bucket logging: cannot rename %s: %s", from, strerror(errno));
    }
    pthread_mutex_unlock(&bl->spool_mu);
    rewinddir(d);
    while ((de = readdir(d)) != NULL) {
        size_t nl = strlen(de->d_name);
        if (nl > 6 && strcmp(de->d_name + nl - 6, ".batch") == 0)
            deliver_batch(bl, de->d_name);
    }
    closedir(d);
}

static void *
delivery_main(void *arg)
{
    struct bucket_log *bl = arg;
    uint32_t interval = bl->srv->cfg.bucket_log_interval_s;
    pthread_mutex_lock(&bl->stop_mu);
    while (!bl->is_stopping) {
        pthread_mutex_unlock(&bl->stop_mu);
        deliver_all(bl);
        pthread_mutex_lock(&bl->stop_mu);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += interval;
        while (!bl->is_stopping && pthread_cond_timedwait(&bl->stop_cv, &bl->stop_mu, &ts) == 0)
            ;
    }
    pthread_mutex_unlock(&bl->stop_mu);
    return NULL;
}

struct bucket_log *
bucket_log_create(struct server *srv)
{
    struct bucket_log *bl = xcalloc(1, sizeof(*bl));
    bl->srv = srv;
    snprintf(bl->dir, sizeof(bl->dir), "%s/%s", srv->cfg.data_dir, SPOOL_DIR);
    pthread_mutex_init(&bl->spool_mu, NULL);
    pthread_rwlock_init(&bl->ids_lock, NULL);
    pthread_mutex_init(&bl->stop_mu, NULL);
    pthread_cond_init(&bl->stop_cv, NULL);
    if (mkdir(bl->dir, 0700) != 0 && errno != EEXIST) {
        log_error("bucket logging: cannot create %s: %s", bl->dir, strerror(errno));
        goto fail;
    }
    if (dir_sync_parent(bl->dir) != 0)
        log_warn("bucket logging: cannot sync the directory of %s", bl->dir);
    bucket_log_reload(bl);
    if (srv->cfg.bucket_log_interval_s) {
        if (server_thread_start(&bl->thread, "shard-bucketlog", 256 * 1024, delivery_main, bl) !=
            0) {
            log_error("bucket logging: cannot start the delivery thread");
            goto fail;
        }
        bl->has_thread = true;
    }
    return bl;

fail:
    bucket_log_destroy(bl);
    return NULL;
}

void
bucket_log_destroy(struct bucket_log *bl)
{
    if (!bl)
        return;
    if (bl->has_thread) {
        pthread_mutex_lock(&bl->stop_mu);
        bl->is_stopping = true;
        pthread_cond_signal(&bl->stop_cv);
        pthread_mutex_unlock(&bl->stop_mu);
        pthread_join(bl->thread, NULL);
    }
    free(bl->ids);
    pthread_mutex_destroy(&bl->spool_mu);
    pthread_rwlock_destroy(&bl->ids_lock);
    pthread_mutex_destroy(&bl->stop_mu);
    pthread_cond_destroy(&bl->stop_cv);
    free(bl);
}

/* ======================================================================
 * Put/GetBucketLogging
 * ====================================================================== */

static void
put_logging_end(struct s3_req *r)
{
    struct index_bucket bk, target;
    struct xml_logging_request req;
    if (!s3_bucket_lookup(r, &bk))
        return;
    if (xml_parse_logging(r->xml_body.ptr ? r->xml_body.ptr : "", r->xml_body.len, r->arena,
                          &req) != XML_IN_OK) {
        s3_respond_error(r, S3_ERR_MALFORMED_XML, NULL);
        return;
    }
    int rc;
    if (!req.is_enabled) {
        rc = index_bucket_config_delete(r->srv->index, bk.id, INDEX_BUCKET_CONFIG_LOGGING);
        bucket_log_reload(r->srv->bucket_log);
        if (rc < 0 && rc != -ENOENT)
            s3_respond_error(r, s3_error_from_errno(rc), NULL);
        else
            s3_respond_empty(r, 200);
        return;
    }
    /* As S3: the target must exist in this region and have the same owner
     * (whose permission delivery then uses). */
    if (index_bucket_get(r->srv->index, req.target_bucket, &target) != 0) {
        s3_respond_error(r, S3_ERR_INVALID_TARGET_BUCKET_FOR_LOGGING,
                         "The target bucket for logging does not exist");
        return;
    }
    if (strcmp(s3_bucket_owner_id(r, &target), s3_bucket_owner_id(r, &bk)) != 0) {
        s3_respond_error(r, S3_ERR_INVALID_TARGET_BUCKET_FOR_LOGGING,
                         "The owner for the bucket to be logged and the target bucket must be "
                         "the same.");
        return;
    }
    /* ... and let the logging service write there: a bucket policy allowing
     * Service logging.s3.amazonaws.com s3:PutObject, or with ACLs on a
     * WRITE grant to the LogDelivery group. */
    if (!bucket_access_allows_log_delivery(r->srv->access, &target, req.target_prefix,
                                           slice_from_cstr(bk.name))) {
        s3_respond_error(r, S3_ERR_INVALID_TARGET_BUCKET_FOR_LOGGING,
                         "You must either provide the necessary permissions to the logging "
                         "service using a bucket policy or give the log-delivery group WRITE and "
                         "READ_ACP permissions to the target bucket");
        return;
    }
    struct buf b;
    buf_init(&b);
    xml_begin(&b, "BucketLoggingStatus");
    buf_append_str(&b, "<LoggingEnabled>");
    xml_elem(&b, "TargetBucket", req.target_bucket);
    xml_elem(&b, "TargetPrefix", req.target_prefix);
    buf_append_str(&b, "</LoggingEnabled>");
    xml_end(&b, "BucketLoggingStatus");
    rc = index_bucket_config_put(r->srv->index, bk.id, INDEX_BUCKET_CONFIG_LOGGING, b.ptr, b.len);
    buf_cleanup(&b);
    bucket_log_reload(r->srv->bucket_log);
    if (rc < 0) {
        s3_respond_error(r, rc == -ENOENT ? S3_ERR_NO_SUCH_BUCKET : s3_error_from_errno(rc), NULL);
        return;
    }
    log_info("bucket %s: access logging to %s (by %s)", bk.name, target.name, r->user_name);
    s3_respond_empty(r, 200);
}

void
op_put_bucket_logging(struct s3_req *r)
{
    s3_req_expect_xml(r, 64 * 1024, put_logging_end);
}

void
op_get_bucket_logging(struct s3_req *r)
{
    struct index_bucket bk;
    const void *val;
    size_t len;
    if (!s3_bucket_lookup(r, &bk))
        return;
    int rc = index_bucket_config_get(r->srv->index, bk.id, INDEX_BUCKET_CONFIG_LOGGING, r->arena,
                                     &val, &len);
    if (rc == -ENOENT) {
        static const char body[] =
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<BucketLoggingStatus "
            "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"/>";
        s3_respond_body(r, 200, "application/xml", body, sizeof(body) - 1);
    } else if (rc < 0) {
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
    } else {
        s3_respond_body(r, 200, "application/xml", val, len);
    }
}
