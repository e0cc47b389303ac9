# Integration tests of libshard and the shard tool (a real shardstore on a
# loopback port; see harness.py). Included from client/local.mk.
TESTS += \
	%D%/test_shard.py \
	%D%/test_shard_faults.py \
	%D%/test_shard_config.py \
	%D%/test_shard_bench.py \
	%D%/test_shard_members.py \
	%D%/test_shard_versions.py \
	%D%/test_rdma.py

EXTRA_DIST += \
	%D%/shard_util.py \
	%D%/test_shard_members.py \
	%D%/test_shard.py \
	%D%/test_shard_faults.py \
	%D%/test_shard_config.py \
	%D%/test_shard_bench.py \
	%D%/test_shard_versions.py \
	%D%/test_rdma.py

# The RDMA fast path at the request level (test_rdma.py): it uses the
# client__ internals, so it links the static libshard_core.
check_PROGRAMS += %D%/rdma_driver
%C%_rdma_driver_SOURCES = %D%/rdma_driver.c
%C%_rdma_driver_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS)
%C%_rdma_driver_LDADD = client/libshard_core.la

# Driver of shard_read_range and shard_reader_read for test_shard.py. It links
# the shared libshard (the installed library, public calls only), so the
# tests also prove that libshard.so exports what client/shard.h declares.
check_PROGRAMS += %D%/shard_read_range
%C%_shard_read_range_SOURCES = %D%/shard_read_range.c
%C%_shard_read_range_LDADD = client/libshard.la
%C%_shard_read_range_LIBTOOLFLAGS =

# Driver of the ListObjectVersions paging (pipelined and sequential) for
# test_shard_versions.py; it calls client__list_versions, so it links the
# static libshard_core.
check_PROGRAMS += %D%/list_versions_driver
%C%_list_versions_driver_SOURCES = %D%/list_versions_driver.c
%C%_list_versions_driver_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS)
%C%_list_versions_driver_LDADD = client/libshard_core.la
