/*
 * console.h: the read-only status console under /_/console (console.c).
 * The page, its script and style sheet are files of server/console/,
 * embedded at build time as console_assets[] (console_assets.c, written
 * by server/console/embed.sh). They are served to anyone; everything they
 * show comes from the JSON API under /_/console/api/, which needs SigV4
 * with an admin key, signed by the page itself (see app.js).
 */
#ifndef SHARD_SERVER_CONSOLE_H
#define SHARD_SERVER_CONSOLE_H

#include "common/common.h"

#include <stdbool.h>
#include <stddef.h>

struct s3_req;

/* One embedded file: its name under server/console/ and its bytes. */
struct console_asset {
    const char *name;
    const char *content_type;
    const unsigned char *data;
    size_t len;
};
extern const struct console_asset console_assets[];
extern const size_t console_n_assets;

/* Objects counted per bucket at most, and over all buckets of one
 * /_/console/api/buckets answer; buckets listed at most. */
#define CONSOLE_SCAN_MAX_PER_BUCKET 100000
#define CONSOLE_SCAN_MAX_TOTAL 1000000
#define CONSOLE_BUCKETS_MAX 1000

/* Answers a GET or HEAD of a static console file when 'path' (the
 * request path after "/_/") names one: "console", "console/" (the page)
 * or "console/NAME". Returns whether it responded (false: not a console
 * file; nothing was sent). Needs no authentication. */
bool console_serve_static(struct s3_req *r, struct slice path);
/* Answers the console API request 'r' for 'what' (the path after
 * "/_/console/api/"): "summary" (health, version, uptime, counters,
 * storage, lifecycle, recent errors) or "buckets" (bounded counts; may
 * block: the router runs it on a worker). 'r' must be authenticated and
 * authorized for admin reads. */
void console_api(struct s3_req *r, struct slice what);

#endif
