# Benchmarks of the running server (bench/core.sh drives them; asserts nothing).
# Small-object PUT load generator: bench/putload -e ENDPOINT -b BUCKET ...
noinst_PROGRAMS += bench/putload
bench_putload_SOURCES = bench/putload.c
bench_putload_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS)
bench_putload_LDADD = $(LIBCURL_LIBS)
EXTRA_DIST += bench/core.sh
