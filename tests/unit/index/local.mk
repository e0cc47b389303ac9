# unit tests of index/: each links index/ (and, through it, common/) only.
index_tests = %D%/test_bucket %D%/test_object %D%/test_list %D%/test_upload %D%/test_extref %D%/test_user \
	%D%/test_set_meta %D%/test_bucket_config %D%/test_member %D%/test_version %D%/test_set_extents
check_PROGRAMS += $(index_tests)
TESTS += $(index_tests)
%C%_test_bucket_LDADD = index/libindex.la tests/lib/libtest.la
%C%_test_object_LDADD = index/libindex.la tests/lib/libtest.la
%C%_test_list_LDADD = index/libindex.la tests/lib/libtest.la
%C%_test_upload_LDADD = index/libindex.la tests/lib/libtest.la
%C%_test_extref_LDADD = index/libindex.la tests/lib/libtest.la
%C%_test_user_LDADD = index/libindex.la tests/lib/libtest.la
%C%_test_member_LDADD = index/libindex.la tests/lib/libtest.la
%C%_test_set_meta_LDADD = index/libindex.la tests/lib/libtest.la
%C%_test_bucket_config_LDADD = index/libindex.la tests/lib/libtest.la
%C%_test_version_LDADD = index/libindex.la tests/lib/libtest.la
%C%_test_set_extents_LDADD = index/libindex.la tests/lib/libtest.la

# Index throughput (prints figures, asserts nothing): bench/index_speed
noinst_PROGRAMS += bench/index_speed
bench_index_speed_SOURCES = bench/index_speed.c
bench_index_speed_LDADD = index/libindex.la tests/lib/libtest.la
