noinst_LTLIBRARIES += common/libcommon.la
common_libcommon_la_SOURCES = common/common.h common/alloc.c common/arena.c common/buf.c \
	common/log.c common/codec.c common/slice.c common/date.c common/uri.c common/json.c
common_libcommon_la_SOURCES += common/file.c
