/*
 * cli_util.c: messages, exit codes and the progress bar of `shard`. The bar
 * is redrawn at most 10 times a second, only on a terminal: when stderr is a
 * pipe or a file the tool stays quiet unless something fails.
 */
#include "config.h"

#include "client/cli_util.h"
#include "common/common.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

void
cli_msg(const char *fmt, ...)
{
    va_list ap;
    fputs("shard: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int
cli_exit_of(const struct shard_error *err)
{
    switch (err->kind) {
    case SHARD_OK:
        return CLI_OK;
    case SHARD_ERR_CONFIG:
        return CLI_CONFIG;
    case SHARD_ERR_IO:
        return CLI_IO;
    case SHARD_ERR_ARG:
        return err->http_status != 0 ? CLI_S3 : CLI_USAGE;
    case SHARD_ERR_S3:
    case SHARD_ERR_NET:
    case SHARD_ERR_PROTO:
    case SHARD_ERR_FORMAT:
        return CLI_S3;
    }
    return CLI_S3;
}

int
cli_fail(const char *what, const struct shard_error *err)
{
    if (err->http_status != 0)
        cli_msg("%s: %s: %s (HTTP %ld)", what, err->code, err->message, err->http_status);
    else if (err->code[0] != '\0')
        cli_msg("%s: %s: %s", what, err->code, err->message);
    else
        cli_msg("%s: %s", what, err->message);
    return cli_exit_of(err);
}

static void
human(uint64_t n, char out[32])
{
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(out, 32, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

void
cli_progress_init(struct cli_progress *p, const char *label, uint64_t total, bool quiet)
{
    p->is_on = !quiet && isatty(STDERR_FILENO);
    p->label = label;
    p->total = total;
    p->start_ns = p->last_ns = clock_mono_ns();
}

void
cli_progress_update(void *ctx, uint64_t done, uint64_t total)
{
    struct cli_progress *p = ctx;
    if (!p->is_on)
        return;
    int64_t now = clock_mono_ns();
    if (now - p->last_ns < 100000000 && done != total)
        return;
    p->last_ns = now;
    if (total != UINT64_MAX)
        p->total = total;
    char d[32], t[32], r[32];
    double secs = (double)(now - p->start_ns) / 1e9;
    human(done, d);
    human(secs > 0 ? (uint64_t)((double)done / secs) : 0, r);
    if (p->total != UINT64_MAX && p->total > 0) {
        human(p->total, t);
        int pct = (int)(100.0 * (double)done / (double)p->total);
        int bar = pct / 5;
        fprintf(stderr, "\r%s [%-20.*s] %3d%% %s / %s  %s/s ", p->label, bar,
                "####################", pct, d, t, r);
    } else {
        fprintf(stderr, "\r%s %s  %s/s ", p->label, d, r);
    }
    fflush(stderr);
}

void
cli_progress_end(struct cli_progress *p)
{
    if (p->is_on)
        fprintf(stderr, "\r\033[K");
}
