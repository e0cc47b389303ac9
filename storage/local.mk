# storage/ module: the io_uring extent store (the only user of <liburing.h>).
noinst_LTLIBRARIES += storage/libstorage.la
storage_libstorage_la_SOURCES = storage/storage.h storage/storage_int.h storage/extent_format.h \
	storage/volume.c storage/alloc.c storage/pin.c storage/ring.c storage/writer.c \
	storage/reader.c storage/readq.c storage/prezero.c
storage_libstorage_la_CFLAGS = $(AM_CFLAGS) $(URING_CFLAGS) $(XXHASH_CFLAGS)
storage_libstorage_la_LIBADD = common/libcommon.la $(URING_LIBS) $(XXHASH_LIBS)

# Throughput of the writer against plain write()+fdatasync, and pin cost.
noinst_PROGRAMS += bench/storage_speed
bench_storage_speed_SOURCES = bench/storage_speed.c
bench_storage_speed_LDADD = storage/libstorage.la
