include server/parse.mk

bin_PROGRAMS += shardstore
shardstore_SOURCES = server/main.c server/server.h server/conf.h server/config.c \
	server/errors.h server/s3_errors.def server/errors.c server/util.h server/util.c \
	server/xml_out.h server/xml_out.c server/meta.h server/meta.c server/commit.h server/commit.c \
	server/offload.h server/offload.c server/hasher.h server/hasher.c \
	server/listener.h server/listener.c server/http.h \
	server/http.c server/req.h server/req.c server/router.h server/router.c server/body.h \
	server/body.c server/ops.h server/access.h server/access.c server/op_bucket.c \
	server/op_list.c server/op_put.c server/op_get.c server/op_copy.c server/op_delete.c \
	server/op_member.c server/op_batch.c \
	server/op_multipart.c server/op_tagging.c server/admin.c server/creds.c server/creds.h server/admin_users.c \
	server/op_versions.c server/admin_cli.c server/admin_cli.h server/reserve.h server/reserve.c \
	server/part_layout.h server/part_layout.c \
	server/extents.h server/extents.c server/guard.h server/guard.c \
	server/unsupported.h server/unsupported.c \
	server/versioning.h server/versioning.c \
	server/lifecycle_versions.h server/lifecycle_versions.c \
	server/lifecycle.h server/lifecycle.c server/op_lifecycle.c \
	server/bucket_access.h server/bucket_access.c server/op_access.c server/acl.h server/acl.c server/op_post.c \
	server/rdma.h server/rdma.c \
	server/tier.h server/tier.c server/tier_cold.c server/op_tier.c server/tier_remote.c server/tier_stream.h server/tier_stream.c server/cold_format.h server/cold_format.c \
	server/tls.h server/tls.c server/sse.h server/sse.c server/sse_bucket.c \
	server/metrics.h server/metrics.c server/access_log.h server/access_log.c \
	server/error_ring.h server/error_ring.c server/console.h server/console.c

# The console's files, embedded into the binary by a shell script (od and
# sed): no tool beyond make and POSIX sh.
CONSOLE_FILES = server/console/index.html server/console/app.js server/console/app.css \
	server/console/favicon.svg
nodist_shardstore_SOURCES = server/console_assets.c
CLEANFILES += server/console_assets.c
EXTRA_DIST += $(CONSOLE_FILES) server/console/embed.sh
server/console_assets.c: $(CONSOLE_FILES) $(srcdir)/server/console/embed.sh
	$(AM_V_GEN)$(MKDIR_P) server && \
	sh $(srcdir)/server/console/embed.sh $@ $(srcdir) $(CONSOLE_FILES)
# GetObjectAttributes; CORS; server access logging (issue 13).
shardstore_SOURCES += server/op_attributes.c server/op_cors.c server/bucket_log.h \
	server/bucket_log.c
# libshard (the S3 client) is linked for the remote tier only (tier_remote.c).
shardstore_CFLAGS = $(AM_CFLAGS) $(MHD_CFLAGS) $(GNUTLS_CFLAGS) $(EXPAT_CFLAGS) $(ZSTD_CFLAGS)
shardstore_LDADD = server/libs3parse.la client/libshard_core.la auth/libauth.la index/libindex.la storage/libstorage.la \
	transport/libtransport.la \
	common/libcommon.la $(MHD_LIBS) $(GNUTLS_LIBS) $(EXPAT_LIBS) $(OPENSSL_LIBS) $(URING_LIBS) $(LMDB_LIBS) \
	$(XXHASH_LIBS) $(ZSTD_LIBS) $(LIBCURL_LIBS) -lpthread
