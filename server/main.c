/*
 * main.c: shardstore [--config FILE] [--listen ADDR:PORT] [--data DIR]
 *
 * Startup order: config -> data dir -> credentials -> index -> storage
 * (free space rebuilt from the extents the index references, so a crash
 * can never leak space) -> committer -> HTTP. SIGHUP reloads the
 * TLS certificate (http_reload). SIGTERM/SIGINT stop
 * accepting, let in-flight requests finish (bounded), and close in the
 * reverse order. SIGHUP reopens the access and audit logs (logrotate).
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/access_log.h"
#include "server/bucket_access.h"
#include "server/bucket_log.h"
#include "server/lifecycle.h"
#include "server/rdma.h"
#include "server/admin_cli.h"
#include "server/commit.h"
#include "server/conf.h"
#include "server/creds.h"
#include "server/extents.h"
#include "server/http.h"
#include "server/part_layout.h"
#include "server/reserve.h"
#include "server/server.h"
#include "shard_version.h"
#include "server/sse.h"
#include "server/tier.h"
#include "storage/storage.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* The --help text, laid out like a manual page. */
static const char USAGE[] =
    "NAME\n"
    "    shardstore - S3-compatible object store server\n"
    "\n"
    "SYNOPSIS\n"
    "    shardstore [--config FILE] [--listen ADDR:PORT] [--data DIR]\n"
    "    shardstore admin COMMAND ...\n"
    "    shardstore --help | --version\n"
    "\n"
    "DESCRIPTION\n"
    "    Serves the S3 API (path- and virtual-hosted-style, SigV4) over HTTP, or\n"
    "    HTTPS with tls_cert_file/tls_key_file. Objects live in preallocated volume\n"
    "    files under DIR/volumes, their index in an LMDB database under DIR/index.\n"
    "    Without arguments it listens on 127.0.0.1:9000 with data in\n"
    "    ./shardstore-data. Every directive of the config file is described in\n"
    "    shardstore.conf (installed in SYSCONFDIR/shardstore/).\n"
    "\n"
    "OPTIONS\n"
    "    -c, --config FILE      read directives (\"key = value\") from FILE first;\n"
    "                           the options below override it\n"
    "    -l, --listen ADDR:PORT listen address (port 0: any free port, printed\n"
    "                           on stdout)\n"
    "    -d, --data DIR         data directory (created if missing)\n"
    "    -h, --help             print this text and exit\n"
    "    -V, --version          print the version and exit\n"
    "\n"
    "COMMANDS\n"
    "    admin ...              manage users, access keys, grants and bucket flags\n"
    "                           of a running server (runs `shard admin`; see\n"
    "                           `shardstore admin --help`)\n"
    "\n"
    "ENDPOINTS\n"
    "    /_/health              200 when serving, 503 while stopping (no auth)\n"
    "    /_/metrics             Prometheus metrics (see metrics_access)\n"
    "    /_/console             read-only status console (admin login)\n"
    "    /_/admin/, /_/scrub, /_/lifecycle/   admin API (SigV4, admin keys)\n"
    "\n"
    "SIGNALS\n"
    "    SIGTERM, SIGINT        stop accepting, let requests in flight finish for\n"
    "                           up to shutdown_grace seconds (10), then exit 0\n"
    "    SIGHUP                 reload the TLS certificate and key, reopen the\n"
    "                           access and audit logs (for logrotate)\n"
    "\n"
    "ENVIRONMENT\n"
    "    SHARDSTORE_ACCESS_KEY, SHARDSTORE_SECRET_KEY\n"
    "                           root credentials; without them they are read from\n"
    "                           DIR/credentials, generated (mode 0600) on first start\n"
    "\n"
    "FILES\n"
    "    DIR/index/             the LMDB index (back it up with mdb_copy)\n"
    "    DIR/volumes/           object data\n"
    "    DIR/credentials        root access key and secret (0600)\n"
    "    DIR/secret.key         key sealing users' secrets (0600; secret_key_file)\n"
    "\n"
    "EXIT STATUS\n"
    "    0 after a clean stop, 1 when start-up fails, 2 on a usage or config error\n";

/* A usage error: the synopsis only, on stderr. */
static int
usage_error(void)
{
    fputs("usage: shardstore [--config FILE] [--listen ADDR:PORT] [--data DIR]\n"
          "       shardstore admin ...  |  --help  |  --version\n",
          stderr);
    return 2;
}

/* Creates 'path' and its missing parents; each directory it creates is
 * made durable in its parent. Returns 0 or -errno. */
static int
mkdir_p(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", path);
    size_t len = strlen(tmp);
    for (char *p = tmp + 1; p <= tmp + len; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(tmp, 0700) == 0) {
            int rc = dir_sync_parent(tmp);
            if (rc < 0)
                return rc;
        } else if (errno != EEXIST) {
            return -errno;
        }
        *p = c;
    }
    return 0;
}

static void
mark_extent(void *ctx, const struct index_extent *e)
{
    int *rc = ctx;
    struct storage_extent se;
    extents_from_index(e, 1, &se);
    extern struct storage *g_storage_for_scan;
    extern struct tier_set *g_tiers_for_scan;
    int mrc = TIER_OF(e->flags) == TIER_HOT ? storage_mark_used(g_storage_for_scan, &se)
                                            : tier_mark_used(g_tiers_for_scan, e);
    if (*rc == 0 && mrc != 0) {
        log_error("index references an invalid extent (volume %u flags %u offset %llu len %llu)",
                  e->volume, e->flags, (unsigned long long)e->offset, (unsigned long long)e->len);
        *rc = -EINVAL;
    }
}

struct storage *g_storage_for_scan;
struct tier_set *g_tiers_for_scan;

static int
open_stores(struct server *srv)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/index", srv->cfg.data_dir);
    int rc = mkdir_p(path);
    if (rc == 0)
        rc = index_open(&srv->index, path, srv->cfg.index_map_size, srv->cfg.index_nosync);
    if (rc < 0) {
        log_error("cannot open index in %s: %s", path, strerror(-rc));
        return rc;
    }
    snprintf(path, sizeof(path), "%s/volumes", srv->cfg.data_dir);
    rc = mkdir_p(path);
    struct storage_config sc = {
        .dir = path,
        .volume_size = srv->cfg.volume_size,
        .max_volumes = srv->cfg.max_volumes,
        .write_buffer_total = srv->cfg.write_buffer_total,
        .is_direct = true,
        .max_pins = srv->cfg.reader_pins_max,
        .pin_timeout_ms = MIN(srv->cfg.reader_pin_timeout_s, UINT32_MAX / 1000) * 1000,
        .prezero_window = srv->cfg.prezero_window,
    };
    if (rc == 0)
        rc = storage_open(&srv->storage, &sc);
    if (rc < 0) {
        log_error("cannot open storage in %s: %s", path, strerror(-rc));
        return rc;
    }
    if ((rc = tier_set_open(srv)) < 0)
        return rc;
    g_storage_for_scan = srv->storage;
    g_tiers_for_scan = srv->tiers;
    int scan_rc = 0;
    rc = index_extents_scan(srv->index, mark_extent, &scan_rc);
    if (rc == 0)
        rc = scan_rc;
    if (rc == 0)
        rc = storage_ready(srv->storage);
    if (rc == 0)
        rc = tier_set_ready(srv->tiers);
    if (rc < 0) {
        log_error("cannot rebuild free space: %s", strerror(-rc));
        return rc;
    }
    struct storage_stats st;
    storage_stats_get(srv->storage, &st);
    log_info("storage: %u volume(s), %llu MiB free of %llu MiB", st.n_volumes,
             (unsigned long long)(st.free_bytes >> 20), (unsigned long long)(st.total_bytes >> 20));
    return 0;
}

int
main(int argc, char **argv)
{
    static struct server srv;
    /* The admin client talks to a running server; it starts nothing. */
    if (argc >= 2 && !strcmp(argv[1], "admin"))
        return admin_cli_main(argc - 1, argv + 1);
    srv.start_mono_ns = clock_mono_ns();
    config_defaults(&srv.cfg);
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'}, {"listen", required_argument, NULL, 'l'},
        {"data", required_argument, NULL, 'd'},   {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},      {NULL, 0, NULL, 0},
    };
    /* The config file is applied first, so command-line flags win. */
    const char *config_path = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "c:l:d:hV", opts, NULL)) != -1)
        if (c == 'c')
            config_path = optarg;
    if (config_path && config_load_file(&srv.cfg, config_path) != 0)
        return 2;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:l:d:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            break;
        case 'l':
            if (config_set_listen(&srv.cfg, optarg) != 0) {
                fprintf(stderr, "shardstore: bad --listen '%s' (want ADDR:PORT)\n", optarg);
                return 2;
            }
            break;
        case 'd':
            config_set(&srv.cfg, "data", optarg);
            break;
        case 'h':
            fputs(USAGE, stdout);
            return 0;
        case 'V':
            printf("shardstore %s\n", SHARD_VERSION);
            return 0;
        default:
            return usage_error();
        }
    }
    if (optind < argc)
        return usage_error();
    log_set_level((enum log_level)srv.cfg.log_level);

    /* Signals are taken synchronously by the main thread; every other
     * thread inherits the blocked mask. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP); /* reload the TLS certificate, reopen the logs */
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    int rc = mkdir_p(srv.cfg.data_dir);
    if (rc < 0) {
        log_error("cannot create data dir %s: %s", srv.cfg.data_dir, strerror(-rc));
        return 1;
    }
    rc = creds_load(srv.cfg.data_dir, srv.access_key, sizeof(srv.access_key), srv.secret_key,
                    sizeof(srv.secret_key));
    if (rc < 0) {
        log_error("cannot load credentials: %s", strerror(-rc));
        return 1;
    }
    uint8_t h[32];
    auth_sha256(srv.access_key, strlen(srv.access_key), h);
    hex_encode(h, 32, srv.owner_id);
    rc = creds_load_seal_key(srv.cfg.data_dir, srv.cfg.secret_key_file, srv.secret_seal_key);
    if (rc < 0) {
        log_error("cannot load the secret key: %s", strerror(-rc));
        return 1;
    }
    int exit_code = 1;
    if (sse_keys_open(&srv.cfg, &srv.sse_keys) != 0)
        goto out;
    if (access_log_open(srv.cfg.access_log, srv.cfg.audit_log) != 0)
        goto out;
    if (open_stores(&srv) != 0)
        goto out;
    srv.committer = committer_create(&srv, srv.cfg.group_commit, srv.cfg.group_commit_max);
    if (!srv.committer)
        goto out;
    srv.reserves = reserve_table_create(srv.cfg.reserve_max_per_principal);
    srv.access = bucket_access_cache_create(srv.index);
    if (!srv.access)
        goto out;
    srv.part_layout = part_layout_create();
    srv.lifecycle = lifecycle_create(&srv);
    if (!srv.lifecycle)
        goto out;
    srv.bucket_log = bucket_log_create(&srv);
    if (!srv.bucket_log)
        goto out;
    if (rdma_server_open(&srv.cfg, srv.storage, &srv.rdma) != 0)
        log_warn("rdma: off");
    if (http_start(&srv) != 0)
        goto out;
    int sig = 0;
    /* SIGHUP reloads what can change under a running server: the TLS
     * certificate, and the log files (logrotate). */
    while (sigwait(&sigs, &sig) == 0 && sig == SIGHUP) {
        log_info("SIGHUP: reloading the certificate, reopening the log files");
        http_reload(&srv);
        access_log_reopen();
    }
    log_info("signal %d: stopping", sig);
    atomic_store(&srv.is_stopping, true);
    http_stop(&srv);
    exit_code = 0;
out:
    bucket_log_destroy(srv.bucket_log);
    lifecycle_destroy(srv.lifecycle);
    bucket_access_cache_destroy(srv.access);
    rdma_server_close(srv.rdma);
    committer_destroy(srv.committer);
    reserve_table_destroy(srv.reserves);
    part_layout_destroy(srv.part_layout);
    tier_set_close(srv.tiers);
    storage_close(srv.storage);
    index_close(srv.index);
    access_log_close();
    sse_keys_close(srv.sse_keys);
    log_info("stopped");
    return exit_code;
}
