/*
 * log.c: one line per message on stderr: "TIME LEVEL message". A single
 * write() per line keeps lines from different threads whole.
 */
#include "common/common.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static enum log_level g_level = LOG_INFO;

void
log_set_level(enum log_level lvl)
{
    g_level = lvl;
}

void
log_msg(enum log_level lvl, const char *fmt, ...)
{
    if (lvl < g_level)
        return;
    static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    char line[2048];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, names[lvl]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : MIN((size_t)m, sizeof(line) - (size_t)n - 2));
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

int
common_corrupt(const char *file, int line, const char *what)
{
    log_msg(LOG_ERROR, "corruption detected at %s:%d: %s", file, line, what);
    return -EIO;
}

int64_t
clock_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t
clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
