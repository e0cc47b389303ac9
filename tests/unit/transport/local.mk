# unit tests of transport/: each links transport/ (and common/) only.
transport_tests = %D%/test_token %D%/test_fabric
check_PROGRAMS += $(transport_tests)
TESTS += $(transport_tests)
%C%_test_token_SOURCES = %D%/test_token.c
%C%_test_token_LDADD = transport/libtransport.la tests/lib/libtest.la
%C%_test_fabric_SOURCES = %D%/test_fabric.c
%C%_test_fabric_LDADD = transport/libtransport.la tests/lib/libtest.la
