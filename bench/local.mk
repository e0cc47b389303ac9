# Benchmarks of the running server (bench/core.sh drives them; asserts nothing).
EXTRA_DIST += bench/core.sh
# Multipart (checkpoint) upload client: bench/mpload -e ENDPOINT -b BUCKET -k KEY -f FILE -z PARTSIZE ...
noinst_PROGRAMS += bench/mpload
bench_mpload_SOURCES = bench/mpload.c
bench_mpload_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS)
bench_mpload_LDADD = $(LIBCURL_LIBS)
EXTRA_DIST += bench/multipart.sh
# ListObjectsV2 page loop (profiling the page path): bench/listload -e ENDPOINT -b BUCKET ...
noinst_PROGRAMS += bench/listload
bench_listload_SOURCES = bench/listload.c
bench_listload_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS) -pthread
bench_listload_LDADD = $(LIBCURL_LIBS)
EXTRA_DIST += bench/listing.sh
