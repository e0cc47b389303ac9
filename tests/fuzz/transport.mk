# Fuzz target of transport/: the x-amz-rdma-token parser (see local.mk for
# the layout). Run the real fuzzer with e.g.
#   tests/fuzz/fuzz_rdma_token -dict=$(srcdir)/tests/fuzz/rdma_token.dict \
#       $(srcdir)/tests/fuzz/corpus/rdma_token
check_PROGRAMS += %D%/replay_rdma_token
TESTS += %D%/replay_rdma_token
%C%_replay_rdma_token_SOURCES = %D%/replay.c %D%/fuzz_rdma_token.c
%C%_replay_rdma_token_CPPFLAGS = $(AM_CPPFLAGS) \
	-DFUZZ_CORPUS_DIR='"$(abs_top_srcdir)/%D%/corpus/rdma_token"'
%C%_replay_rdma_token_LDADD = transport/libtransport.la

if FUZZING
noinst_PROGRAMS += %D%/fuzz_rdma_token
%C%_fuzz_rdma_token_SOURCES = %D%/fuzz_rdma_token.c transport/token.c transport/transport.h
%C%_fuzz_rdma_token_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer,address,undefined
%C%_fuzz_rdma_token_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer,address,undefined
endif

EXTRA_DIST += %D%/rdma_token.dict %D%/corpus/rdma_token
