# unit tests of storage/: each links storage/ (and, through it, common/) only.
storage_tests = %D%/test_alloc %D%/test_writer %D%/test_pool %D%/test_pin \
	%D%/test_volume %D%/test_readq %D%/test_prezero
check_PROGRAMS += $(storage_tests)
TESTS += $(storage_tests)
%C%_test_alloc_SOURCES = %D%/test_alloc.c %D%/storage_test.h
%C%_test_alloc_LDADD = storage/libstorage.la tests/lib/libtest.la
%C%_test_writer_SOURCES = %D%/test_writer.c %D%/storage_test.h
%C%_test_writer_LDADD = storage/libstorage.la tests/lib/libtest.la
%C%_test_pool_SOURCES = %D%/test_pool.c %D%/storage_test.h
%C%_test_pool_LDADD = storage/libstorage.la tests/lib/libtest.la
%C%_test_pin_SOURCES = %D%/test_pin.c %D%/storage_test.h
%C%_test_pin_LDADD = storage/libstorage.la tests/lib/libtest.la
%C%_test_volume_SOURCES = %D%/test_volume.c %D%/storage_test.h
%C%_test_volume_LDADD = storage/libstorage.la tests/lib/libtest.la
%C%_test_readq_SOURCES = %D%/test_readq.c %D%/storage_test.h
%C%_test_readq_LDADD = storage/libstorage.la tests/lib/libtest.la
%C%_test_prezero_SOURCES = %D%/test_prezero.c %D%/storage_test.h
%C%_test_prezero_LDADD = storage/libstorage.la tests/lib/libtest.la
