# Benchmarks of the running server (bench/core.sh drives them; asserts nothing).
EXTRA_DIST += bench/core.sh bench/lib.sh bench/versioning.sh
# Multipart (checkpoint) upload client: bench/mpload -e ENDPOINT -b BUCKET -k KEY -f FILE -z PARTSIZE ...
noinst_PROGRAMS += bench/mpload
bench_mpload_SOURCES = bench/mpload.c
bench_mpload_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS)
bench_mpload_LDADD = $(LIBCURL_LIBS)
EXTRA_DIST += bench/multipart.sh
EXTRA_DIST += bench/listing.sh
EXTRA_DIST += bench/sse.sh
EXTRA_DIST += bench/cors.sh
EXTRA_DIST += bench/ml.sh
EXTRA_DIST += bench/policy.sh
EXTRA_DIST += bench/rdma.sh
EXTRA_DIST += bench/startup.sh
EXTRA_DIST += bench/lifecycle.sh
EXTRA_DIST += bench/tls.sh
EXTRA_DIST += bench/access_log.sh
# The copy ceilings of RDMA over shm (process_vm_readv, memcpy): bench/copy_speed [MiB]
noinst_PROGRAMS += bench/copy_speed
bench_copy_speed_SOURCES = bench/copy_speed.c
bench_copy_speed_LDADD = -lpthread
