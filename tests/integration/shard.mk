# Integration tests of libshard and the shard tool (a real shardstore on a
# loopback port; see harness.py). Included from client/local.mk.
TESTS += \
	%D%/test_shard.py \
	%D%/test_shard_faults.py \
	%D%/test_shard_config.py \
	%D%/test_shard_bench.py \
	%D%/test_shard_members.py

EXTRA_DIST += \
	%D%/shard_util.py \
	%D%/test_shard_members.py \
	%D%/test_shard.py \
	%D%/test_shard_faults.py \
	%D%/test_shard_config.py \
	%D%/test_shard_bench.py

# Driver of shard_read_range and shard_reader_read for test_shard.py. It links
# the shared libshard (the installed library, public calls only), so the
# tests also prove that libshard.so exports what client/shard.h declares.
check_PROGRAMS += %D%/shard_read_range
%C%_shard_read_range_SOURCES = %D%/shard_read_range.c
%C%_shard_read_range_LDADD = client/libshard.la
%C%_shard_read_range_LIBTOOLFLAGS =
