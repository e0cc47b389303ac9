include server/parse.mk

bin_PROGRAMS += shardstore
shardstore_SOURCES = server/main.c server/server.h server/s3_errors.def server/config.c \
	server/errors.c server/util.c server/xml_out.c server/meta.c server/commit.c server/offload.c server/listener.c \
	server/http.c server/op_bucket.c server/op_list.c server/op_put.c server/op_get.c \
	server/op_copy.c server/op_delete.c server/op_multipart.c server/admin.c server/creds.c \
	server/creds.h server/access.c server/admin_users.c server/op_versions.c \
	server/admin_cli.c server/admin_cli.h
shardstore_CFLAGS = $(AM_CFLAGS) $(MHD_CFLAGS) $(EXPAT_CFLAGS) $(LIBCURL_CFLAGS)
shardstore_LDADD = server/libs3parse.la auth/libauth.la index/libindex.la storage/libstorage.la \
	common/libcommon.la $(MHD_LIBS) $(EXPAT_LIBS) $(OPENSSL_LIBS) $(URING_LIBS) $(LMDB_LIBS) \
	$(XXHASH_LIBS) $(LIBCURL_LIBS) -lz -lpthread
# Request headers refused because the server does not do what they ask.
shardstore_SOURCES += server/unsupported.c server/unsupported.h
