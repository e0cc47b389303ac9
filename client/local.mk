# client/: libshard (the S3 client library on libcurl) and the `shard` tool.
# libshard shares only the SigV4 signer (and checksums) with auth/.
LIBSHARD_SOURCES = client/shard.h client/shard_int.h client/client.c \
	client/config.c client/ini.c client/url.c client/request.c client/xml.c \
	client/version_scan.c client/list_versions.c client/ops.c client/reader.c client/upload.c \
	client/member.c client/rdma.c client/tar.c

# The installed library: libshard.so, built from its own sources and from
# the auth/ and common/ code it uses, compiled again as PIC with
# -fvisibility=hidden so that only the SHARD_API calls of client/shard.h are
# exported (tests/unit/client/test_exports.sh checks that). Shared only.
lib_LTLIBRARIES += client/libshard.la
client_libshard_la_SOURCES = $(LIBSHARD_SOURCES) $(auth_libauth_la_SOURCES) \
	$(transport_libtransport_la_SOURCES) \
	$(common_libcommon_la_SOURCES)
client_libshard_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(LIBCURL_CFLAGS) \
	$(EXPAT_CFLAGS) $(OPENSSL_CFLAGS) $(ISAL_CFLAGS) $(LIBFABRIC_CFLAGS)
client_libshard_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0 -no-undefined
client_libshard_la_LIBADD = $(LIBCURL_LIBS) $(EXPAT_LIBS) $(OPENSSL_LIBS) $(ISAL_LIBS)
client_libshard_la_LIBTOOLFLAGS = --tag=disable-static
# Object names of their own (so-*.lo): objects of the static libshard of
# older trees must not be taken for PIC ones in an existing build dir.
client_libshard_la_SHORTNAME = so
include_HEADERS = client/shard.h
pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = client/shard.pc
EXTRA_DIST += client/shard.pc.in
DISTCLEANFILES = client/shard.pc

# The same objects as a static convenience library, for what links libshard
# into itself: the `shard` tool (whose bench uses the client__ internals, and
# which then runs without an installed libshard.so) and the unit tests.
noinst_LTLIBRARIES += client/libshard_core.la
client_libshard_core_la_SOURCES = $(LIBSHARD_SOURCES)
client_libshard_core_la_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS) $(EXPAT_CFLAGS)
client_libshard_core_la_LIBADD = auth/libauth.la transport/libtransport.la $(LIBCURL_LIBS) \
	$(EXPAT_LIBS)

# shard: cp, cat, ls, rm, mb, rb, bench, admin (installed by make install).
bin_PROGRAMS += shard
shard_SOURCES = client/cli.c client/cli_util.c client/cli_util.h client/cli_bench.c \
	client/cli_admin.c client/cli_member.c
shard_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS)
shard_LDADD = client/libshard_core.la -lm

# Tests of client/ live in their own fragments (unit, integration, fuzz).
include tests/unit/client/local.mk
include tests/integration/shard.mk
include tests/fuzz/client.mk
EXTRA_DIST += bench/client.sh

# The Python package on libshard.so (ctypes; not installed by make install:
# put python/ on PYTHONPATH, or set SHARDSTORE_LIBSHARD to the library).
EXTRA_DIST += python/shardstore/__init__.py python/shardstore/_lib.py \
	python/shardstore/samples.py python/shardstore/torch.py
