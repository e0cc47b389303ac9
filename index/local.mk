# index/ module: the metadata index on LMDB (the only user of <lmdb.h>).
noinst_LTLIBRARIES += index/libindex.la
index_libindex_la_SOURCES = index/index.h index/index_int.h index/keys.h index/keys.c \
	index/record.c index/env.c index/bucket.c index/object.c index/list.c \
	index/upload.c index/upload_list.c index/extref.c index/user.c index/iter.c index/tree.c \
	index/member.c \
	index/bucket_config.c index/version.c
index_libindex_la_CFLAGS = $(AM_CFLAGS) $(XXHASH_CFLAGS)
index_libindex_la_LIBADD = common/libcommon.la $(LMDB_LIBS) $(XXHASH_LIBS)

# Versions: builds a versioned bucket of 1,000,000 versions and times
# ListObjectVersions in the index (bench/versioning.sh drives it).
noinst_PROGRAMS += bench/version_speed
bench_version_speed_SOURCES = bench/version_speed.c
bench_version_speed_LDADD = index/libindex.la
