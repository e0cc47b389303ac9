/*
 * cli.c: the `shard` command line tool on libshard: cp, cat, ls, rm, mb, rb,
 * batch and ls --members (cli_member.c), bench (cli_bench.c) and admin
 * (cli_admin.c, which keeps the options and
 * exit codes of `shardstore admin`). Options may come before or after the
 * subcommand. Exit codes (cli_util.h): 0 ok, 1 S3/HTTP error, 2 usage, 3
 * credentials or configuration, 4 local I/O. Every message starts with
 * "shard: ".
 */
#include "config.h"

#include "client/cli_util.h"
#include "common/common.h"
#include "shard_version.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char USAGE[] =
    "usage: shard [options] COMMAND ARGS\n"
    "  cp SRC DST [-r]           copy local <-> s3://bucket/key (- is stdin/stdout)\n"
    "  cat s3://b/k [--range A-B] write an object (or bytes A..B) to stdout\n"
    "      [--member NAME]        ... or that member of a tar object\n"
    "  ls [s3://b[/prefix]] [-r] list buckets, or keys under a prefix\n"
    "  ls --members s3://b/k     list the members of a tar object (offset size name)\n"
    "  ls --versions s3://b[/prefix] [-r]  every version, newest first per key: date time\n"
    "                            size|DEL (delete marker) version-id latest|- key\n"
    "  batch s3://b [FILE|-] [--continue-on-error]  batch GET: one line per entry,\n"
    "                            KEY[<TAB>MEMBER[<TAB>RANGE]]; the tar answer to stdout\n"
    "  rm s3://b/k [-r]          delete a key, or every key under a prefix\n"
    "  mb s3://b | rb s3://b     make / remove a bucket\n"
    "  bench put|get|range|list|head|mixed --bucket B [...]  load generator\n"
    "  admin ...                 users, keys, grants of a shardstore (shard admin --help)\n"
    "options: --endpoint-url URL --profile P --region R --parallel N (8) --part-size SIZE (8M)\n"
    "         --chunk-size SIZE (1M) --retries N -r/--recursive -q/--quiet\n"
    "         --transport auto|http|rdma (auto: RDMA when a provider is configured and the\n"
    "         endpoint serves it) --rdma-provider shm|tcp|verbs|efa|auto ($AWS_RDMA_PROVIDER)\n"
    "         -h/--help, -V/--version (print and exit)\n"
    "bench:   --prefix P --size N --objects N --fanout F --concurrency N --duration S\n"
    "         --count N --range-size N --delimiter D --max-keys N --first-page\n"
    "         --no-prepare --json FILE   (prints one RESULT line per operation)\n"
    "         --verify (with --transport: check every byte read)\n"
    "environment and files, as aws-cli: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,\n"
    "         AWS_SESSION_TOKEN, AWS_PROFILE, AWS_REGION, AWS_ENDPOINT_URL(_S3),\n"
    "         AWS_CA_BUNDLE, ~/.aws/credentials and ~/.aws/config (or\n"
    "         AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE); flags win\n"
    "exit codes: 0 ok, 1 S3 error, 2 usage, 3 credentials/config, 4 local I/O\n";

enum {
    OPT_ENDPOINT = 256,
    OPT_PROFILE,
    OPT_REGION,
    OPT_PARALLEL,
    OPT_PART_SIZE,
    OPT_CHUNK_SIZE,
    OPT_RANGE,
    OPT_BUCKET,
    OPT_PREFIX,
    OPT_SIZE,
    OPT_OBJECTS,
    OPT_FANOUT,
    OPT_CONCURRENCY,
    OPT_DURATION,
    OPT_COUNT,
    OPT_RANGE_SIZE,
    OPT_DELIMITER,
    OPT_MAX_KEYS,
    OPT_FIRST_PAGE,
    OPT_NO_PREPARE,
    OPT_JSON,
    OPT_RETRIES,
    OPT_MEMBER,
    OPT_MEMBERS,
    OPT_VERSIONS,
    OPT_CONTINUE,
    OPT_TRANSPORT,
    OPT_RDMA_PROVIDER,
    OPT_VERIFY,
};

static const struct option LONG_OPTS[] = {
    {"endpoint-url", required_argument, NULL, OPT_ENDPOINT},
    {"profile", required_argument, NULL, OPT_PROFILE},
    {"region", required_argument, NULL, OPT_REGION},
    {"parallel", required_argument, NULL, OPT_PARALLEL},
    {"part-size", required_argument, NULL, OPT_PART_SIZE},
    {"chunk-size", required_argument, NULL, OPT_CHUNK_SIZE},
    {"range", required_argument, NULL, OPT_RANGE},
    {"recursive", no_argument, NULL, 'r'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {"bucket", required_argument, NULL, OPT_BUCKET},
    {"prefix", required_argument, NULL, OPT_PREFIX},
    {"size", required_argument, NULL, OPT_SIZE},
    {"objects", required_argument, NULL, OPT_OBJECTS},
    {"fanout", required_argument, NULL, OPT_FANOUT},
    {"concurrency", required_argument, NULL, OPT_CONCURRENCY},
    {"duration", required_argument, NULL, OPT_DURATION},
    {"count", required_argument, NULL, OPT_COUNT},
    {"range-size", required_argument, NULL, OPT_RANGE_SIZE},
    {"delimiter", required_argument, NULL, OPT_DELIMITER},
    {"max-keys", required_argument, NULL, OPT_MAX_KEYS},
    {"first-page", no_argument, NULL, OPT_FIRST_PAGE},
    {"no-prepare", no_argument, NULL, OPT_NO_PREPARE},
    {"json", required_argument, NULL, OPT_JSON},
    {"retries", required_argument, NULL, OPT_RETRIES},
    {"member", required_argument, NULL, OPT_MEMBER},
    {"members", no_argument, NULL, OPT_MEMBERS},
    {"versions", no_argument, NULL, OPT_VERSIONS},
    {"continue-on-error", no_argument, NULL, OPT_CONTINUE},
    {"transport", required_argument, NULL, OPT_TRANSPORT},
    {"rdma-provider", required_argument, NULL, OPT_RDMA_PROVIDER},
    {"verify", no_argument, NULL, OPT_VERIFY},
    {NULL, 0, NULL, 0},
};

static int
usage_error(const char *fmt, const char *arg)
{
    fputs("shard: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\n", stderr);
    fputs(USAGE, stderr);
    return CLI_USAGE;
}

static int
parse_count(const char *s, uint64_t max, uint64_t *out)
{
    return parse_size(s, out) == 0 && *out <= max ? 0 : -1;
}

/* Parses argv into 'o'; positional arguments are left in argv[optind..]. */
static int
parse_options(int argc, char **argv, struct cli_opts *o)
{
    int ch;
    uint64_t v;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "+rqhV", LONG_OPTS, NULL)) != -1) {
        switch (ch) {
        case 'r':
            o->is_recursive = true;
            break;
        case 'q':
            o->is_quiet = true;
            break;
        case 'h':
            fputs(USAGE, stdout);
            exit(0);
        case 'V':
            printf("shard %s\n", SHARD_VERSION);
            exit(0);
        case OPT_ENDPOINT:
            o->cfg.endpoint_url = optarg;
            break;
        case OPT_PROFILE:
            o->cfg.profile = optarg;
            break;
        case OPT_REGION:
            o->cfg.region = optarg;
            break;
        case OPT_PARALLEL:
            if (parse_count(optarg, 256, &v) != 0 || v == 0)
                return usage_error("--parallel wants 1..256, not '%s'", optarg);
            o->opts.parallel = (unsigned)v;
            break;
        case OPT_PART_SIZE:
            if (parse_size(optarg, &v) != 0 || v < (5u << 20) || v > (5ull << 30))
                return usage_error("--part-size wants 5M..5G, not '%s'", optarg);
            o->opts.part_size = v;
            break;
        case OPT_CHUNK_SIZE:
            if (parse_size(optarg, &v) != 0 || v == 0 || v > (1u << 30))
                return usage_error("--chunk-size wants 1..1G, not '%s'", optarg);
            o->opts.chunk_size = v;
            break;
        case OPT_RETRIES:
            if (parse_count(optarg, 100, &v) != 0)
                return usage_error("--retries wants 0..100, not '%s'", optarg);
            o->opts.max_retries = v ? (unsigned)v : 1;
            break;
        case OPT_TRANSPORT:
            if (strcmp(optarg, "auto") == 0)
                o->opts.transport = SHARD_TRANSPORT_AUTO;
            else if (strcmp(optarg, "http") == 0)
                o->opts.transport = SHARD_TRANSPORT_HTTP;
            else if (strcmp(optarg, "rdma") == 0)
                o->opts.transport = SHARD_TRANSPORT_RDMA;
            else
                return usage_error("--transport wants auto, http or rdma, not '%s'", optarg);
            o->has_transport = true;
            break;
        case OPT_RDMA_PROVIDER:
            o->opts.rdma_provider = optarg;
            break;
        case OPT_VERIFY:
            o->is_verify = true;
            break;
        case OPT_RANGE:
            o->range = optarg;
            o->has_range = true;
            break;
        case OPT_BUCKET:
            o->bucket = optarg;
            break;
        case OPT_PREFIX:
            o->prefix = optarg;
            break;
        case OPT_SIZE:
            if (parse_size(optarg, &o->size) != 0)
                return usage_error("bad --size '%s'", optarg);
            o->has_size = true;
            break;
        case OPT_RANGE_SIZE:
            if (parse_size(optarg, &o->range_size) != 0 || o->range_size == 0)
                return usage_error("bad --range-size '%s'", optarg);
            break;
        case OPT_OBJECTS:
            if (parse_count(optarg, 100000000, &o->objects) != 0)
                return usage_error("bad --objects '%s'", optarg);
            break;
        case OPT_COUNT:
            if (parse_count(optarg, UINT64_MAX, &o->count) != 0)
                return usage_error("bad --count '%s'", optarg);
            break;
        case OPT_FANOUT:
            if (parse_count(optarg, 100000000, &v) != 0)
                return usage_error("bad --fanout '%s'", optarg);
            o->fanout = (unsigned)v;
            break;
        case OPT_CONCURRENCY:
            if (parse_count(optarg, 4096, &v) != 0 || v == 0)
                return usage_error("--concurrency wants 1..4096, not '%s'", optarg);
            o->concurrency = (unsigned)v;
            break;
        case OPT_MAX_KEYS:
            if (parse_count(optarg, 1000000, &v) != 0 || v == 0)
                return usage_error("bad --max-keys '%s'", optarg);
            o->max_keys = (unsigned)v;
            break;
        case OPT_DURATION: {
            char *end;
            errno = 0;
            o->duration_s = strtod(optarg, &end);
            if (errno != 0 || *end != '\0' || end == optarg || o->duration_s < 0)
                return usage_error("bad --duration '%s'", optarg);
            break;
        }
        case OPT_DELIMITER:
            o->delimiter = optarg;
            break;
        case OPT_FIRST_PAGE:
            o->is_first_page = true;
            break;
        case OPT_NO_PREPARE:
            o->is_no_prepare = true;
            break;
        case OPT_JSON:
            o->json_path = optarg;
            break;
        case OPT_MEMBER:
            if (optarg[0] == '\0')
                return usage_error("--member wants a name%s", "");
            o->member = optarg;
            break;
        case OPT_MEMBERS:
            o->is_members = true;
            break;
        case OPT_VERSIONS:
            o->is_versions = true;
            break;
        case OPT_CONTINUE:
            o->is_continue_on_error = true;
            break;
        default:
            return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* cat and downloads                                                          */
/* ------------------------------------------------------------------------ */

static int
write_all(int fd, const void *p, size_t len)
{
    const char *c = p;
    while (len > 0) {
        ssize_t n = write(fd, c, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        c += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The RDMA way of download_to_fd: windows of the object land in one
 * registered buffer (shard_read_range), then go to 'fd'. */
static int
download_windows(struct shard_client *c, const struct cli_opts *o, const char *bucket,
                 const char *key, uint64_t off, uint64_t len, int fd, const char *what)
{
    struct shard_error err;
    struct shard_object_info info;
    if (shard_head(c, bucket, key, &info, &err) != 0)
        return cli_fail(what, &err);
    if (off > info.size) {
        cli_msg("%s: offset %llu is past the end of the object", what, (unsigned long long)off);
        return CLI_S3;
    }
    len = MIN(len, info.size - off);
    size_t window = (size_t)MIN(len, 64u << 20);
    char *buf = xmalloc(MAX(window, 1));
    struct cli_progress prog;
    cli_progress_init(&prog, "download", len, o->is_quiet || len < (8u << 20));
    int rc = CLI_OK;
    for (uint64_t done = 0; done < len && rc == CLI_OK;) {
        size_t n = (size_t)MIN(window, len - done);
        if (shard_read_range(c, bucket, key, off + done, n, buf, &err) != 0) {
            cli_progress_end(&prog);
            rc = cli_fail(what, &err);
        } else if (write_all(fd, buf, n) != 0) {
            int e = errno;
            cli_progress_end(&prog);
            cli_msg("%s: write: %s", what, strerror(e));
            rc = CLI_IO;
        }
        done += n;
        cli_progress_update(&prog, done, len);
    }
    if (rc == CLI_OK)
        cli_progress_end(&prog);
    free(buf);
    return rc;
}

/* Streams [off, off+len) of the object (of its member o->member, when
 * set) to 'fd'. 'what' names it in messages. */
static int
download_to_fd(struct shard_client *c, const struct cli_opts *o, const char *bucket,
               const char *key, uint64_t off, uint64_t len, int fd, const char *what)
{
    if (o->opts.transport != SHARD_TRANSPORT_HTTP)
        return download_windows(c, o, bucket, key, off, len, fd, what);
    struct shard_error err;
    struct shard_reader *r =
        o->member ? shard_member_reader_open(c, bucket, key, o->member, off, len, &o->opts, &err)
                  : shard_reader_open(c, bucket, key, off, len, &o->opts, &err);
    if (r == NULL)
        return cli_fail(what, &err);
    struct cli_progress prog;
    cli_progress_init(&prog, "download", shard_reader_length(r),
                      o->is_quiet || shard_reader_length(r) < (8u << 20));
    uint64_t done = 0;
    int rc = CLI_OK;
    for (;;) {
        const void *p;
        size_t n;
        int got = shard_reader_next(r, &p, &n, &err);
        if (got < 0) {
            cli_progress_end(&prog);
            rc = cli_fail(what, &err);
            break;
        }
        if (got == 0)
            break;
        if (write_all(fd, p, n) != 0) {
            int e = errno;
            cli_progress_end(&prog);
            cli_msg("%s: write: %s", what, strerror(e));
            rc = CLI_IO;
            break;
        }
        done += n;
        cli_progress_update(&prog, done, shard_reader_length(r));
    }
    if (rc == CLI_OK)
        cli_progress_end(&prog);
    shard_reader_close(r);
    return rc;
}

/* Parses "A-B", "A-" or "-N" (last N bytes) into an offset and a length
 * (UINT64_MAX: to the end; for "-N" '*is_suffix' is set and len = N). */
static int
parse_range(const char *s, uint64_t *off, uint64_t *len, bool *is_suffix)
{
    const char *dash = strchr(s, '-');
    uint64_t a = 0, b = 0;
    *is_suffix = false;
    if (dash == NULL)
        return -1;
    if (dash == s) {
        if (parse_u64(slice_from_cstr(dash + 1), UINT64_MAX, &b) != 0 || b == 0)
            return -1;
        *is_suffix = true;
        *off = 0;
        *len = b;
        return 0;
    }
    if (parse_u64((struct slice){s, (size_t)(dash - s)}, UINT64_MAX, &a) != 0)
        return -1;
    *off = a;
    if (dash[1] == '\0') {
        *len = UINT64_MAX;
        return 0;
    }
    if (parse_u64(slice_from_cstr(dash + 1), UINT64_MAX - 1, &b) != 0 || b < a)
        return -1;
    *len = b - a + 1;
    return 0;
}

static int
cmd_cat(struct shard_client *c, const struct cli_opts *o, int nargs, char **args)
{
    char bucket[64], key[1025];
    if (nargs != 1)
        return usage_error("cat wants one s3://bucket/key%s", "");
    if (shard_parse_s3_url(args[0], bucket, key) != 0 || key[0] == '\0')
        return usage_error("invalid S3 URL '%s' (want s3://bucket/key)", args[0]);
    uint64_t off = 0, len = UINT64_MAX;
    if (o->has_range) {
        bool is_suffix;
        if (parse_range(o->range, &off, &len, &is_suffix) != 0)
            return usage_error("invalid --range '%s' (want A-B, A- or -N)", o->range);
        if (is_suffix) {
            struct shard_object_info info;
            struct shard_error err;
            int hrc = o->member ? shard_member_head(c, bucket, key, o->member, &info, &err)
                                : shard_head(c, bucket, key, &info, &err);
            if (hrc != 0)
                return cli_fail(args[0], &err);
            off = info.size > len ? info.size - len : 0;
        }
    }
    return download_to_fd(c, o, bucket, key, off, len, STDOUT_FILENO, args[0]);
}

/* Creates the parent directories of 'path'. Returns 0 or -1 (errno set). */
static int
mkdir_parents(const char *path)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return 0;
}

static int
download_to_path(struct shard_client *c, const struct cli_opts *o, const char *bucket,
                 const char *key, const char *path)
{
    char what[1200];
    snprintf(what, sizeof(what), "s3://%s/%s", bucket, key);
    if (strcmp(path, "-") == 0)
        return download_to_fd(c, o, bucket, key, 0, UINT64_MAX, STDOUT_FILENO, what);
    if (mkdir_parents(path) != 0) {
        cli_msg("%s: %s", path, strerror(errno));
        return CLI_IO;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        cli_msg("%s: %s", path, strerror(errno));
        return CLI_IO;
    }
    int rc = download_to_fd(c, o, bucket, key, 0, UINT64_MAX, fd, what);
    if (close(fd) != 0 && rc == CLI_OK) {
        cli_msg("%s: %s", path, strerror(errno));
        rc = CLI_IO;
    }
    if (rc != CLI_OK)
        unlink(path);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* uploads                                                                    */
/* ------------------------------------------------------------------------ */

static int
upload_path(struct shard_client *c, const struct cli_opts *o, const char *path, const char *bucket,
            const char *key)
{
    struct shard_error err;
    char what[1200];
    snprintf(what, sizeof(what), "s3://%s/%s", bucket, key);
    int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cli_msg("%s: %s", path, strerror(errno));
        return CLI_IO;
    }
    struct stat st;
    uint64_t size = UINT64_MAX;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        size = (uint64_t)st.st_size;
    else if (fd != STDIN_FILENO && S_ISDIR(st.st_mode)) {
        close(fd);
        cli_msg("%s: is a directory (use --recursive)", path);
        return CLI_USAGE;
    }
    struct cli_progress prog;
    cli_progress_init(&prog, "upload", size, o->is_quiet || size < (8u << 20));
    int rc = shard_put_fd(c, bucket, key, fd, size, &o->opts, cli_progress_update, &prog, &err);
    cli_progress_end(&prog);
    if (fd != STDIN_FILENO)
        close(fd);
    return rc == 0 ? CLI_OK : cli_fail(what, &err);
}

/* nftw has no context pointer: the recursive upload keeps its state here. */
static struct {
    struct shard_client *c;
    const struct cli_opts *o;
    const char *bucket;
    const char *prefix;
    size_t root_len;
    int rc;
} walk;

static int
walk_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type != FTW_F)
        return 0;
    const char *rel = path + walk.root_len;
    while (*rel == '/')
        rel++;
    char key[2048];
    if (snprintf(key, sizeof(key), "%s%s", walk.prefix, rel) >= 1025) {
        cli_msg("%s: key too long", path);
        walk.rc = CLI_USAGE;
        return 1;
    }
    int rc = upload_path(walk.c, walk.o, path, walk.bucket, key);
    if (rc != CLI_OK) {
        walk.rc = rc;
        return 1;
    }
    if (!walk.o->is_quiet)
        printf("upload: %s to s3://%s/%s\n", path, walk.bucket, key);
    return 0;
}

/* "dir" -> "dir/", "" stays "" (the keys go under this prefix). */
static void
dir_prefix(const char *key, char out[1100])
{
    size_t n = strlen(key);
    snprintf(out, 1100, "%s%s", key, n > 0 && key[n - 1] != '/' ? "/" : "");
}

struct download_walk {
    struct shard_client *c;
    const struct cli_opts *o;
    const char *bucket, *prefix, *dir;
    int rc;
};

static int
download_one(void *ctx, const struct shard_list_entry *e)
{
    struct download_walk *w = ctx;
    const char *rel = e->key + strlen(w->prefix);
    if (rel[0] == '\0' || e->is_prefix)
        return 0;
    if (strstr(rel, "../") != NULL || strncmp(rel, "..", 3) == 0 || rel[0] == '/') {
        cli_msg("s3://%s/%s: refusing a key that leaves the target directory", w->bucket, e->key);
        w->rc = CLI_IO;
        return 1;
    }
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s/%s", w->dir, rel) >= (int)sizeof(path)) {
        cli_msg("%s/%s: path too long", w->dir, rel);
        w->rc = CLI_IO;
        return 1;
    }
    int rc = download_to_path(w->c, w->o, w->bucket, e->key, path);
    if (rc != CLI_OK) {
        w->rc = rc;
        return 1;
    }
    if (!w->o->is_quiet)
        printf("download: s3://%s/%s to %s\n", w->bucket, e->key, path);
    return 0;
}

static bool
is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static const char *
base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int
cmd_cp(struct shard_client *c, const struct cli_opts *o, int nargs, char **args)
{
    char bucket[64], key[1025], prefix[1100];
    if (nargs != 2)
        return usage_error("cp wants SRC and DST%s", "");
    const char *src = args[0], *dst = args[1];
    bool src_s3 = strncmp(src, "s3://", 5) == 0, dst_s3 = strncmp(dst, "s3://", 5) == 0;
    if (src_s3 == dst_s3)
        return usage_error("cp copies between a local path and s3://bucket/key ('%s')",
                           src_s3 ? "s3 to s3 is not supported" : "no S3 URL given");
    if (shard_parse_s3_url(src_s3 ? src : dst, bucket, key) != 0)
        return usage_error("invalid S3 URL '%s' (want s3://bucket/key)", src_s3 ? src : dst);

    if (dst_s3) {
        if (o->is_recursive) {
            if (!is_dir(src)) {
                cli_msg("%s: not a directory", src);
                return CLI_IO;
            }
            dir_prefix(key, prefix);
            walk.c = c;
            walk.o = o;
            walk.bucket = bucket;
            walk.prefix = prefix;
            walk.root_len = strlen(src);
            walk.rc = CLI_OK;
            if (nftw(src, walk_one, 16, FTW_PHYS) < 0 && walk.rc == CLI_OK) {
                cli_msg("%s: %s", src, strerror(errno));
                return CLI_IO;
            }
            return walk.rc;
        }
        size_t kl = strlen(key);
        if (kl == 0 || key[kl - 1] == '/') {
            if (strcmp(src, "-") == 0)
                return usage_error("uploading stdin needs a key: '%s'", dst);
            if (kl + strlen(base_name(src)) > 1024)
                return usage_error("key too long: '%s'", dst);
            strcat(key, base_name(src));
        }
        return upload_path(c, o, src, bucket, key);
    }

    if (o->is_recursive) {
        dir_prefix(key, prefix);
        struct download_walk w = {c, o, bucket, prefix, dst, CLI_OK};
        struct shard_error err;
        int rc = shard_list(c, bucket, prefix, NULL, download_one, &w, &err);
        if (rc < 0)
            return cli_fail(src, &err);
        return w.rc;
    }
    if (key[0] == '\0')
        return usage_error("cp needs a key in '%s' (or --recursive)", src);
    char path[PATH_MAX];
    size_t dl = strlen(dst);
    if (strcmp(dst, "-") != 0 && (is_dir(dst) || (dl > 0 && dst[dl - 1] == '/'))) {
        if (snprintf(path, sizeof(path), "%s%s%s", dst, dst[dl - 1] == '/' ? "" : "/",
                     base_name(key)) >= (int)sizeof(path))
            return usage_error("path too long: '%s'", dst);
        dst = path;
    }
    return download_to_path(c, o, bucket, key, dst);
}

/* ------------------------------------------------------------------------ */
/* ls, rm, mb, rb                                                              */
/* ------------------------------------------------------------------------ */

struct ls_ctx {
    size_t strip; /* bytes of the key not printed (the listed "directory") */
};

static int
print_bucket(void *ctx, const struct shard_list_entry *e)
{
    (void)ctx;
    char date[20] = "";
    snprintf(date, sizeof(date), "%.10s %.8s", e->info.last_modified,
             strlen(e->info.last_modified) > 11 ? e->info.last_modified + 11 : "");
    printf("%s %s\n", date, e->key);
    return 0;
}

static int
print_entry(void *ctx, const struct shard_list_entry *e)
{
    struct ls_ctx *l = ctx;
    const char *name = strlen(e->key) >= l->strip ? e->key + l->strip : e->key;
    if (e->is_prefix) {
        printf("%30s %s\n", "PRE", name);
    } else {
        const char *m = e->info.last_modified;
        printf("%.10s %.8s %10llu %s\n", m, strlen(m) > 11 ? m + 11 : "",
               (unsigned long long)e->info.size, name);
    }
    return ferror(stdout) ? 1 : 0;
}

/* Copies at most 'max' bytes of 's' to 'o' ("%.*s"); returns the end. */
static char *
put_str(char *o, const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    memcpy(o, s, n);
    return o + n;
}

/* 's' right-aligned in 'width' columns ("%*s"). */
static char *
put_right(char *o, const char *s, size_t len, size_t width)
{
    for (; width > len; width--)
        *o++ = ' ';
    memcpy(o, s, len);
    return o + len;
}

/* One line of `ls --versions`: the columns of print_entry with the version
 * id and the latest flag before the name; "DEL" for a delete marker's size.
 * Laid out by hand, not by printf: a listing prints a million of these
 * (bench/versioning.sh), and printf's format parsing cost more than the
 * page scan. */
static int
print_version(void *ctx, const struct shard_version_entry *e)
{
    struct ls_ctx *l = ctx;
    size_t key_len = strlen(e->key);
    const char *name = key_len >= l->strip ? e->key + l->strip : e->key;
    size_t name_len = key_len >= l->strip ? key_len - l->strip : key_len;
    if (e->is_prefix) {
        printf("%30s %s\n", "PRE", name);
        return ferror(stdout) ? 1 : 0;
    }
    size_t vid_len = strlen(e->version_id);
    char line[256], size[24];
    size_t size_len = e->is_delete_marker ? 3 : u64_format(e->info.size, size);
    if (e->is_delete_marker)
        memcpy(size, "DEL", 3);
    if (vid_len > 128) {
        /* No version id is that long (shardstore's and AWS's are 32): let stdio lay it out. */
        const char *m = e->info.last_modified;
        printf("%.10s %.8s %10.*s %s %s %s\n", m, strlen(m) > 11 ? m + 11 : "", (int)size_len, size,
               e->version_id, e->is_latest ? "latest" : "-", name);
        return ferror(stdout) ? 1 : 0;
    }
    const char *m = e->info.last_modified;
    char *o = put_str(line, m, 10);
    *o++ = ' ';
    o = put_str(o, strlen(m) > 11 ? m + 11 : "", 8);
    *o++ = ' ';
    o = put_right(o, size, size_len, 10);
    *o++ = ' ';
    memcpy(o, e->version_id, vid_len);
    o += vid_len;
    o = put_str(o, e->is_latest ? " latest " : " - ", 8);
    fwrite(line, 1, (size_t)(o - line), stdout);
    fwrite(name, 1, name_len, stdout);
    putchar('\n');
    return ferror(stdout) ? 1 : 0;
}

static int
cmd_ls(struct shard_client *c, const struct cli_opts *o, int nargs, char **args)
{
    struct shard_error err;
    char bucket[64], key[1025];
    if (nargs > 1)
        return usage_error("ls wants at most one s3://bucket[/prefix]%s", "");
    if (nargs == 0) {
        if (shard_list_buckets(c, print_bucket, NULL, &err) < 0)
            return cli_fail("ls", &err);
        return CLI_OK;
    }
    if (shard_parse_s3_url(args[0], bucket, key) != 0)
        return usage_error("invalid S3 URL '%s' (want s3://bucket[/prefix])", args[0]);
    if (o->is_members)
        return cli_ls_members(c, bucket, key, args[0]);
    struct ls_ctx l = {0};
    if (!o->is_recursive) {
        const char *slash = strrchr(key, '/');
        l.strip = slash ? (size_t)(slash - key) + 1 : 0;
    }
    const char *delimiter = o->is_recursive ? NULL : "/";
    /* Large writes for a long listing into a pipe or file (whose default
     * buffer is 4 KiB); a terminal keeps its line buffering. */
    if (!isatty(STDOUT_FILENO))
        setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    int rc = o->is_versions
                 ? shard_list_versions(c, bucket, key, delimiter, print_version, &l, &err)
                 : shard_list(c, bucket, key, delimiter, print_entry, &l, &err);
    if (rc < 0)
        return cli_fail(args[0], &err);
    if (rc > 0) {
        cli_msg("stdout: %s", strerror(errno));
        return CLI_IO;
    }
    return CLI_OK;
}

struct rm_ctx {
    char **keys;
    size_t n, cap;
};

static int
collect_key(void *ctx, const struct shard_list_entry *e)
{
    struct rm_ctx *r = ctx;
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 1024;
        r->keys = xrealloc(r->keys, r->cap * sizeof(*r->keys));
    }
    r->keys[r->n++] = xstrdup(e->key);
    return 0;
}

static int
cmd_rm(struct shard_client *c, const struct cli_opts *o, int nargs, char **args)
{
    struct shard_error err;
    char bucket[64], key[1025];
    if (nargs != 1)
        return usage_error("rm wants one s3://bucket/key%s", "");
    if (shard_parse_s3_url(args[0], bucket, key) != 0)
        return usage_error("invalid S3 URL '%s' (want s3://bucket/key)", args[0]);
    if (!o->is_recursive) {
        if (key[0] == '\0')
            return usage_error("rm needs a key in '%s' (or --recursive)", args[0]);
        if (shard_delete(c, bucket, key, &err) != 0)
            return cli_fail(args[0], &err);
        if (!o->is_quiet)
            printf("delete: %s\n", args[0]);
        return CLI_OK;
    }
    char prefix[1100];
    dir_prefix(key, prefix);
    struct rm_ctx r = {0};
    int rc = shard_list(c, bucket, prefix, NULL, collect_key, &r, &err);
    int exit_code = CLI_OK;
    if (rc < 0) {
        exit_code = cli_fail(args[0], &err);
    } else if (r.n > 0) {
        rc = shard_delete_many(c, bucket, (const char *const *)r.keys, r.n, &err);
        if (rc != 0)
            exit_code = cli_fail(args[0], &err);
        else if (!o->is_quiet)
            for (size_t i = 0; i < r.n; i++)
                printf("delete: s3://%s/%s\n", bucket, r.keys[i]);
    }
    for (size_t i = 0; i < r.n; i++)
        free(r.keys[i]);
    free(r.keys);
    return exit_code;
}

static int
cmd_bucket(struct shard_client *c, const struct cli_opts *o, int nargs, char **args, bool is_make)
{
    struct shard_error err;
    char bucket[64], key[1025];
    if (nargs != 1 || shard_parse_s3_url(args[0], bucket, key) != 0 || key[0] != '\0')
        return usage_error("%s wants one s3://bucket", is_make ? "mb" : "rb");
    int rc = is_make ? shard_bucket_create(c, bucket, &err) : shard_bucket_delete(c, bucket, &err);
    if (rc != 0)
        return cli_fail(args[0], &err);
    if (!o->is_quiet)
        printf("%s: %s\n", is_make ? "make_bucket" : "remove_bucket", args[0]);
    return CLI_OK;
}

int
main(int argc, char **argv)
{
    struct cli_opts o = {0};
    signal(SIGPIPE, SIG_IGN);
    /* Options may follow the subcommand: parse around it. */
    if (argc < 2) {
        fputs(USAGE, stderr);
        return CLI_USAGE;
    }
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc;
    if (optind >= argc)
        return usage_error("no command given%s", "");
    const char *cmd = argv[optind];
    /* admin has options of its own (those `shardstore admin` always took). */
    if (strcmp(cmd, "admin") == 0) {
        const char *base = strrchr(argv[0], '/');
        bool is_server = strcmp(base ? base + 1 : argv[0], "shardstore") == 0;
        return cli_admin(is_server ? "shardstore admin" : "shard admin", &o.cfg, argc - optind,
                         argv + optind);
    }
    /* Everything after the command: options again, then the arguments. */
    int sub_argc = argc - optind;
    char **sub_argv = argv + optind;
    char *pos[16];
    int npos = 0;
    optind = 0; /* reinitialize getopt; it starts again at sub_argv[1] */
    while (optind < sub_argc) {
        rc = parse_options(sub_argc, sub_argv, &o);
        if (rc != 0)
            return rc;
        if (optind < sub_argc) {
            if (npos == (int)ARRAY_LEN(pos))
                return usage_error("too many arguments%s", "");
            pos[npos++] = sub_argv[optind++];
        }
    }
    static const char *const COMMANDS[] = {"cp", "cat", "ls", "rm", "mb", "rb", "bench", "batch"};
    bool is_known = false;
    for (size_t i = 0; i < ARRAY_LEN(COMMANDS); i++)
        is_known |= strcmp(cmd, COMMANDS[i]) == 0;
    if (!is_known)
        return usage_error("unknown command '%s'", cmd);
    /* Argument errors are reported before credentials are looked up. */
    if (strcmp(cmd, "cat") == 0 || strcmp(cmd, "rm") == 0 || strcmp(cmd, "mb") == 0 ||
        strcmp(cmd, "rb") == 0 || strcmp(cmd, "batch") == 0 ||
        (strcmp(cmd, "ls") == 0 && npos == 1)) {
        char bucket[64], key[1025];
        if (npos < 1 || shard_parse_s3_url(pos[0], bucket, key) != 0)
            return usage_error("invalid S3 URL '%s' (want s3://bucket[/key])", npos ? pos[0] : "");
    }
    /* auto (the default) tries RDMA only where a provider is configured. */
    const char *prov = o.opts.rdma_provider ? o.opts.rdma_provider : getenv("AWS_RDMA_PROVIDER");
    if (!o.has_transport && prov && *prov)
        o.opts.transport = SHARD_TRANSPORT_AUTO;
    struct shard_error err;
    struct shard_client *c = shard_client_create(&o.cfg, &o.opts, &err);
    if (c == NULL)
        return cli_fail(cmd, &err);
    if (strcmp(cmd, "cp") == 0)
        rc = cmd_cp(c, &o, npos, pos);
    else if (strcmp(cmd, "cat") == 0)
        rc = cmd_cat(c, &o, npos, pos);
    else if (strcmp(cmd, "ls") == 0)
        rc = cmd_ls(c, &o, npos, pos);
    else if (strcmp(cmd, "rm") == 0)
        rc = cmd_rm(c, &o, npos, pos);
    else if (strcmp(cmd, "batch") == 0)
        rc = cli_batch(c, &o, npos, pos);
    else if (strcmp(cmd, "mb") == 0 || strcmp(cmd, "rb") == 0)
        rc = cmd_bucket(c, &o, npos, pos, strcmp(cmd, "mb") == 0);
    else
        rc = cli_bench(c, &o, npos, pos);
    if (fflush(stdout) != 0 && rc == CLI_OK) {
        cli_msg("stdout: %s", strerror(errno));
        rc = CLI_IO;
    }
    shard_client_destroy(c);
    return rc;
}
