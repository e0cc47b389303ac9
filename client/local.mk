# client/: libshard (the S3 client library on libcurl) and the `shard` tool.
# libshard shares only the SigV4 signer (and checksums) with auth/.
noinst_LTLIBRARIES += client/libshard.la
client_libshard_la_SOURCES = client/shard.h client/shard_int.h client/client.c \
	client/config.c client/ini.c client/url.c client/request.c client/xml.c \
	client/ops.c client/reader.c client/upload.c
client_libshard_la_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS) $(EXPAT_CFLAGS)
client_libshard_la_LIBADD = auth/libauth.la $(LIBCURL_LIBS) $(EXPAT_LIBS)
include_HEADERS = client/shard.h

# shard: cp, cat, ls, rm, mb, rb, bench (installed by make install).
bin_PROGRAMS += shard
shard_SOURCES = client/cli.c client/cli_util.c client/cli_util.h client/cli_bench.c
shard_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS)
shard_LDADD = client/libshard.la -lm

# Tests of client/ live in their own fragments (unit, integration, fuzz).
include tests/unit/client/local.mk
include tests/integration/shard.mk
include tests/fuzz/client.mk
EXTRA_DIST += bench/client.sh
