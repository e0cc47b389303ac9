/*
 * config.c: the configuration: embedded defaults, a "key = value" file and
 * the command line. Directives are a table (name, kind, field), so the
 * file parser, the command line and conf/shardstore.conf stay in step.
 */
#include "config.h"

#include "common/common.h"
#include "server/conf.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum directive_kind {
    DIR_STRING,
    DIR_SIZE,
    DIR_SIZE_OFF, /* a size, or off (0) */
    DIR_SIZE32,
    DIR_U32,
    DIR_BOOL,
    DIR_LISTEN,
    DIR_TLS_LISTEN,
    DIR_LOG_LEVEL,
    DIR_METRICS_ACCESS
};

struct directive {
    const char *name;
    enum directive_kind kind;
    size_t offset;
    size_t len; /* for strings: capacity */
};

#define FIELD(f) offsetof(struct config, f)
#define FIELD_LEN(f) sizeof(((struct config *)0)->f)

static const struct directive directives[] = {
    {"listen", DIR_LISTEN, 0, 0},
    {"data", DIR_STRING, FIELD(data_dir), FIELD_LEN(data_dir)},
    {"region", DIR_STRING, FIELD(region), FIELD_LEN(region)},
    {"domains", DIR_STRING, FIELD(domains), FIELD_LEN(domains)},
    {"volume_size", DIR_SIZE, FIELD(volume_size), 0},
    {"prezero_window", DIR_SIZE_OFF, FIELD(prezero_window), 0},
    {"max_volumes", DIR_U32, FIELD(max_volumes), 0},
    {"index_map_size", DIR_SIZE, FIELD(index_map_size), 0},
    {"write_buffer_total", DIR_SIZE, FIELD(write_buffer_total), 0},
    {"group_commit", DIR_BOOL, FIELD(group_commit), 0},
    {"group_commit_max", DIR_U32, FIELD(group_commit_max), 0},
    {"connection_memory", DIR_SIZE32, FIELD(connection_memory), 0},
    {"connection_limit", DIR_U32, FIELD(connection_limit), 0},
    {"connection_timeout", DIR_U32, FIELD(connection_timeout_s), 0},
    {"header_timeout", DIR_U32, FIELD(header_timeout_s), 0},
    {"min_body_rate", DIR_SIZE, FIELD(min_body_rate), 0},
    {"body_rate_window", DIR_U32, FIELD(body_rate_window_s), 0},
    {"send_timeout", DIR_U32, FIELD(send_timeout_s), 0},
    {"connection_limit_per_ip", DIR_U32, FIELD(connection_limit_per_ip), 0},
    {"http_threads", DIR_U32, FIELD(http_threads), 0},
    {"worker_threads_max", DIR_U32, FIELD(worker_threads_max), 0},
    {"thread_per_connection", DIR_BOOL, FIELD(thread_per_connection), 0},
    {"shutdown_grace", DIR_U32, FIELD(shutdown_grace_s), 0},
    {"max_object_size", DIR_SIZE, FIELD(max_object_size), 0},
    {"min_part_size", DIR_SIZE, FIELD(min_part_size), 0},
    {"reserve_max_per_principal", DIR_SIZE, FIELD(reserve_max_per_principal), 0},
    {"max_copy_part_size", DIR_SIZE, FIELD(max_copy_part_size), 0},
    {"inline_max", DIR_U32, FIELD(inline_max), 0},
    {"log_level", DIR_LOG_LEVEL, FIELD(log_level), 0},
    {"index_nosync", DIR_BOOL, FIELD(index_nosync), 0},
    {"test_commit_delay_ms", DIR_U32, FIELD(test_commit_delay_ms), 0},
    {"test_hash_delay_ms", DIR_U32, FIELD(test_hash_delay_ms), 0},
    {"secret_key_file", DIR_STRING, FIELD(secret_key_file), FIELD_LEN(secret_key_file)},
    {"reader_pins_max", DIR_U32, FIELD(reader_pins_max), 0},
    {"reader_pin_timeout", DIR_U32, FIELD(reader_pin_timeout_s), 0},
    {"lifecycle_day_seconds", DIR_U32, FIELD(lifecycle_day_s), 0},
    {"lifecycle_interval_s", DIR_U32, FIELD(lifecycle_interval_s), 0},
    {"lifecycle_max_objects_per_s", DIR_U32, FIELD(lifecycle_max_objects_per_s), 0},
    {"bucket_log_interval_s", DIR_U32, FIELD(bucket_log_interval_s), 0},
    {"lifecycle_max_mib_per_s", DIR_U32, FIELD(lifecycle_max_mib_per_s), 0},
    {"cold_dir", DIR_STRING, FIELD(cold_dir), FIELD_LEN(cold_dir)},
    {"cold_zstd_level", DIR_U32, FIELD(cold_zstd_level), 0},
    {"cold_block_size", DIR_SIZE32, FIELD(cold_block_size), 0},
    {"cold_volume_size", DIR_SIZE, FIELD(cold_volume_size), 0},
    {"cold_max_volumes", DIR_U32, FIELD(cold_max_volumes), 0},
    {"tier_standard_ia", DIR_STRING, FIELD(tier_standard_ia), FIELD_LEN(tier_standard_ia)},
    {"tier_glacier_ir", DIR_STRING, FIELD(tier_glacier_ir), FIELD_LEN(tier_glacier_ir)},
    {"test_tier_crash_at", DIR_U32, FIELD(test_tier_crash_at), 0},
    {"remote_tier_class", DIR_STRING, FIELD(remote_tier_class), FIELD_LEN(remote_tier_class)},
    {"remote_tier_endpoint", DIR_STRING, FIELD(remote_tier_endpoint),
     FIELD_LEN(remote_tier_endpoint)},
    {"remote_tier_bucket", DIR_STRING, FIELD(remote_tier_bucket), FIELD_LEN(remote_tier_bucket)},
    {"remote_tier_prefix", DIR_STRING, FIELD(remote_tier_prefix), FIELD_LEN(remote_tier_prefix)},
    {"remote_tier_access_key", DIR_STRING, FIELD(remote_tier_access_key),
     FIELD_LEN(remote_tier_access_key)},
    {"remote_tier_secret_key", DIR_STRING, FIELD(remote_tier_secret_key),
     FIELD_LEN(remote_tier_secret_key)},
    {"remote_tier_region", DIR_STRING, FIELD(remote_tier_region), FIELD_LEN(remote_tier_region)},
    {"tls_cert_file", DIR_STRING, FIELD(tls_cert_file), FIELD_LEN(tls_cert_file)},
    {"tls_key_file", DIR_STRING, FIELD(tls_key_file), FIELD_LEN(tls_key_file)},
    {"tls_listen", DIR_TLS_LISTEN, 0, 0},
    {"metrics_access", DIR_METRICS_ACCESS, FIELD(metrics_access), 0},
    {"access_log", DIR_STRING, FIELD(access_log), FIELD_LEN(access_log)},
    {"audit_log", DIR_STRING, FIELD(audit_log), FIELD_LEN(audit_log)},
    {"sse_master_key_file", DIR_STRING, FIELD(sse_master_key_file), FIELD_LEN(sse_master_key_file)},
    {"sse_old_key_files", DIR_STRING, FIELD(sse_old_key_files), FIELD_LEN(sse_old_key_files)},
    {"sse_c_allow_http", DIR_BOOL, FIELD(sse_c_allow_http), 0},
    {"rdma", DIR_BOOL, FIELD(rdma), 0},
    {"rdma_provider", DIR_STRING, FIELD(rdma_provider), FIELD_LEN(rdma_provider)},
    {"rdma_address", DIR_STRING, FIELD(rdma_address), FIELD_LEN(rdma_address)},
    {"rdma_buffers", DIR_U32, FIELD(rdma_buffers), 0},
    {"rdma_buffer_size", DIR_SIZE32, FIELD(rdma_buffer_size), 0},
    {"rdma_get_path", DIR_STRING, FIELD(rdma_get_path), FIELD_LEN(rdma_get_path)},
    {"rdma_timeout", DIR_U32, FIELD(rdma_timeout_s), 0},
};

void
config_defaults(struct config *c)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->listen_addr, sizeof(c->listen_addr), "127.0.0.1");
    c->listen_port = 9000;
    snprintf(c->data_dir, sizeof(c->data_dir), "./shardstore-data");
    snprintf(c->region, sizeof(c->region), "us-east-1");
    snprintf(c->domains, sizeof(c->domains), "localhost");
    c->volume_size = 4ull << 30;
    c->max_volumes = 64;
    c->index_map_size = 64ull << 30;
    c->write_buffer_total = 512ull << 20;
    c->group_commit = true;
    c->group_commit_max = 1024;
    c->connection_memory = 64 * 1024;
    c->connection_limit = 4096;
    c->connection_timeout_s = 60;
    c->header_timeout_s = 15;
    c->min_body_rate = 1024;
    c->body_rate_window_s = 30;
    c->send_timeout_s = 60;
    c->connection_limit_per_ip = 256;
    c->http_threads = 0;
    c->worker_threads_max = 512;
    c->thread_per_connection = false;
    c->shutdown_grace_s = 10;
    c->max_object_size = 5ull << 30;
    c->min_part_size = 5ull << 20;
    c->reserve_max_per_principal = 2ull << 30;
    c->max_copy_part_size = 5ull << 30;
    c->inline_max = 0;
    c->log_level = LOG_INFO;
    c->index_nosync = false;
    c->reader_pins_max = 16384;
    c->reader_pin_timeout_s = 60;
    c->prezero_window = 64ull << 20;
    c->lifecycle_day_s = 86400;
    c->lifecycle_interval_s = 3600;
    c->lifecycle_max_objects_per_s = 1000;
    c->bucket_log_interval_s = 60;
    c->lifecycle_max_mib_per_s = 64;
    c->cold_zstd_level = 3;
    c->cold_block_size = 64 * 1024;
    snprintf(c->tier_standard_ia, sizeof(c->tier_standard_ia), "COLD");
    snprintf(c->tier_glacier_ir, sizeof(c->tier_glacier_ir), "COLD");
    snprintf(c->remote_tier_class, sizeof(c->remote_tier_class), "REMOTE");
    snprintf(c->remote_tier_prefix, sizeof(c->remote_tier_prefix), "shardstore-tier/");
    c->metrics_access = METRICS_ACCESS_ADMIN;
    c->rdma = false;
    snprintf(c->rdma_provider, sizeof(c->rdma_provider), "auto");
    c->rdma_buffers = 32;
    c->rdma_buffer_size = 1u << 20;
    snprintf(c->rdma_get_path, sizeof(c->rdma_get_path), "auto");
    c->rdma_timeout_s = 30;
}

/* Parses "ADDR:PORT" into 'addr' (capacity 'cap') and '*port'. Returns 0
 * or -1, leaving both untouched. */
static int
parse_addr_port(const char *addr_port, char *addr, size_t cap, uint16_t *port)
{
    const char *colon = strrchr(addr_port, ':');
    if (!colon || colon == addr_port)
        return -1;
    size_t alen = (size_t)(colon - addr_port);
    if (alen >= cap)
        return -1;
    uint64_t n;
    if (parse_u64(slice_from_cstr(colon + 1), 65535, &n) != 0)
        return -1;
    memcpy(addr, addr_port, alen);
    addr[alen] = '\0';
    *port = (uint16_t)n;
    return 0;
}

int
config_set_listen(struct config *c, const char *addr_port)
{
    return parse_addr_port(addr_port, c->listen_addr, sizeof(c->listen_addr), &c->listen_port);
}

int
config_set(struct config *c, const char *key, const char *value)
{
    for (size_t i = 0; i < ARRAY_LEN(directives); i++) {
        const struct directive *d = &directives[i];
        if (strcmp(d->name, key) != 0)
            continue;
        char *field = (char *)c + d->offset;
        uint64_t v;
        switch (d->kind) {
        case DIR_LISTEN:
            return config_set_listen(c, value);
        case DIR_TLS_LISTEN:
            if (value[0] == '\0') {
                c->tls_listen_addr[0] = '\0';
                return 0;
            }
            return parse_addr_port(value, c->tls_listen_addr, sizeof(c->tls_listen_addr),
                                   &c->tls_listen_port);
        case DIR_STRING:
            if (strlen(value) >= d->len)
                return -1;
            memcpy(field, value, strlen(value) + 1);
            return 0;
        case DIR_SIZE_OFF:
        case DIR_SIZE:
            if (d->kind == DIR_SIZE_OFF && strcmp(value, "off") == 0)
                v = 0;
            else if (parse_size(value, &v) != 0)
                return -1;
            memcpy(field, &v, sizeof(v));
            return 0;
        case DIR_SIZE32: {
            if (parse_size(value, &v) != 0 || v > UINT32_MAX || v < 8192)
                return -1;
            uint32_t u = (uint32_t)v;
            memcpy(field, &u, sizeof(u));
            return 0;
        }
        case DIR_U32: {
            if (parse_u64(slice_from_cstr(value), UINT32_MAX, &v) != 0)
                return -1;
            uint32_t u = (uint32_t)v;
            memcpy(field, &u, sizeof(u));
            return 0;
        }
        case DIR_BOOL: {
            bool b;
            if (!strcmp(value, "on") || !strcmp(value, "true") || !strcmp(value, "yes") ||
                !strcmp(value, "1"))
                b = true;
            else if (!strcmp(value, "off") || !strcmp(value, "false") || !strcmp(value, "no") ||
                     !strcmp(value, "0"))
                b = false;
            else
                return -1;
            memcpy(field, &b, sizeof(b));
            return 0;
        }
        case DIR_LOG_LEVEL: {
            static const char *names[] = {"debug", "info", "warn", "error"};
            for (int l = 0; l < 4; l++)
                if (!strcmp(value, names[l])) {
                    memcpy(field, &l, sizeof(l));
                    return 0;
                }
            return -1;
        }
        case DIR_METRICS_ACCESS: {
            /* In the order of enum metrics_access. */
            static const char *names[] = {"local", "open", "admin"};
            for (int m = 0; m < 3; m++)
                if (!strcmp(value, names[m])) {
                    memcpy(field, &m, sizeof(m));
                    return 0;
                }
            return -1;
        }
        }
    }
    return -1;
}

static char *
trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

int
config_load_file(struct config *c, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "shardstore: cannot open config %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[4096];
    int lineno = 0;
    int rc = 0;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *s = trim(line);
        if (!*s)
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            fprintf(stderr, "shardstore: %s:%d: expected 'key = value'\n", path, lineno);
            rc = -1;
            break;
        }
        *eq = '\0';
        char *key = trim(s);
        char *value = trim(eq + 1);
        if (config_set(c, key, value) != 0) {
            fprintf(stderr, "shardstore: %s:%d: bad directive or value for '%s'\n", path, lineno,
                    key);
            rc = -1;
            break;
        }
    }
    fclose(f);
    return rc;
}
