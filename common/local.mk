noinst_LTLIBRARIES += common/libcommon.la
common_libcommon_la_SOURCES = common/common.h common/alloc.c common/arena.c common/buf.c \
	common/log.c common/codec.c common/slice.c common/date.c common/uri.c common/json.c
common_libcommon_la_SOURCES += common/file.c
# The streaming tar header parser: the server's member indexes and libshard's
# tar member reader (shard_tar_*) both use it.
common_libcommon_la_SOURCES += common/tar.c common/tar.h
