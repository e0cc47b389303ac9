/*
 * cli_util.h: what the `shard` subcommands share: exit codes, error
 * messages ("shard: ..." on stderr), a progress bar for terminals.
 */
#ifndef SHARD_CLI_UTIL_H
#define SHARD_CLI_UTIL_H

#include "client/shard.h"

#include <stdbool.h>
#include <stdint.h>

/* Exit codes a script can rely on. */
enum cli_exit {
    CLI_OK = 0,
    CLI_S3 = 1,     /* S3/HTTP/network error */
    CLI_USAGE = 2,  /* bad URL, bad option */
    CLI_CONFIG = 3, /* missing credentials or configuration */
    CLI_IO = 4,     /* local I/O error */
};

/* Prints "shard: <fmt>" and a newline on stderr. */
void cli_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "shard: <what>: <Code>: <message> (HTTP n)" and returns the exit code of 'err'. */
int cli_fail(const char *what, const struct shard_error *err);
/* Exit code for an error kind. */
int cli_exit_of(const struct shard_error *err);

/* A progress bar on stderr, drawn only when stderr is a terminal and not quiet. */
struct cli_progress {
    bool is_on;
    const char *label;
    uint64_t total; /* UINT64_MAX when unknown */
    int64_t start_ns, last_ns;
};
void cli_progress_init(struct cli_progress *p, const char *label, uint64_t total, bool quiet);
/* shard_progress_fn-compatible update. */
void cli_progress_update(void *ctx, uint64_t done, uint64_t total);
/* Erases the bar. */
void cli_progress_end(struct cli_progress *p);

/* Every option of every subcommand (one getopt table). */
struct cli_opts {
    struct shard_config_in cfg;
    struct shard_options opts;
    bool is_recursive, is_quiet, has_range;
    const char *range;
    /* shard bench */
    const char *bucket, *prefix, *delimiter, *json_path;
    uint64_t size, range_size;
    uint64_t objects, count;
    unsigned fanout, concurrency, max_keys;
    double duration_s;
    bool is_first_page, is_no_prepare, has_size;
    /* tar members and batch GET */
    const char *member;
    bool is_members, is_continue_on_error;
    bool is_versions;   /* ls --versions */
    bool has_transport; /* --transport given */
    bool is_verify;     /* bench --verify */
};

/*
 * `shard admin ...` (cli_admin.c): argv[0] is "admin"; 'prog' names the tool
 * in messages ("shard admin", or "shardstore admin" when the server binary
 * ran it); 'cfg' carries the --endpoint-url/--region given before "admin".
 * Returns the exit code: 0, or 1 after an error on stderr.
 */
int cli_admin(const char *prog, const struct shard_config_in *cfg, int argc, char **argv);

/* `shard ls --members s3://b/k` (cli_member.c): prints "OFFSET SIZE NAME"
 * per member of the tar object; 'what' names it in messages. Returns the
 * exit code. */
int cli_ls_members(struct shard_client *c, const char *bucket, const char *key, const char *what);
/* `shard batch s3://b [FILE|-]` (cli_member.c): entries one per line
 * (KEY[TAB MEMBER[TAB RANGE]]), the tar answer to stdout. Returns the exit
 * code. */
int cli_batch(struct shard_client *c, const struct cli_opts *o, int nargs, char **args);

/* `shard bench OP`: args[0] is the op. Returns the exit code. */
int cli_bench(struct shard_client *c, const struct cli_opts *o, int nargs, char **args);

#endif
