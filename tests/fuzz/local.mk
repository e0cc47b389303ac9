# Fuzz targets (docs/DESIGN.md, "Tests"). Each parser NAME has:
#   tests/fuzz/fuzz_NAME.c       LLVMFuzzerTestOneInput
#   tests/fuzz/corpus/NAME/      checked-in seeds
#   tests/fuzz/NAME.dict         libFuzzer dictionary
# make check runs replay_NAME (replay.c + the target, built with the normal
# CC) over corpus/NAME. With --enable-fuzzing (CC=clang) the real libFuzzer
# binaries fuzz_NAME are built; they compile their module's sources
# themselves so the coverage instrumentation reaches them. Run one with e.g.
#   tests/fuzz/fuzz_aws_chunked -dict=$(srcdir)/tests/fuzz/aws_chunked.dict \
#       -max_total_time=60 corpus-copy/ $(srcdir)/tests/fuzz/corpus/aws_chunked
# To add a target, copy one block below and list its dict and corpus in EXTRA_DIST.

FUZZ_SAN = -fsanitize=fuzzer,address,undefined

# ---- auth/: SigV4 header, SigV4 presigned query, aws-chunked -------------
AUTH_FUZZ_LIBS = common/libcommon.la $(OPENSSL_LIBS) $(ISAL_LIBS)

check_PROGRAMS += %D%/replay_sigv4_header %D%/replay_sigv4_query %D%/replay_aws_chunked
TESTS += %D%/replay_sigv4_header %D%/replay_sigv4_query %D%/replay_aws_chunked

%C%_replay_sigv4_header_SOURCES = %D%/replay.c %D%/fuzz_sigv4_header.c
%C%_replay_sigv4_header_CPPFLAGS = $(AM_CPPFLAGS) \
	-DFUZZ_CORPUS_DIR='"$(abs_top_srcdir)/%D%/corpus/sigv4_header"'
%C%_replay_sigv4_header_LDADD = auth/libauth.la

%C%_replay_sigv4_query_SOURCES = %D%/replay.c %D%/fuzz_sigv4_query.c
%C%_replay_sigv4_query_CPPFLAGS = $(AM_CPPFLAGS) \
	-DFUZZ_CORPUS_DIR='"$(abs_top_srcdir)/%D%/corpus/sigv4_query"'
%C%_replay_sigv4_query_LDADD = auth/libauth.la

%C%_replay_aws_chunked_SOURCES = %D%/replay.c %D%/fuzz_aws_chunked.c
%C%_replay_aws_chunked_CPPFLAGS = $(AM_CPPFLAGS) \
	-DFUZZ_CORPUS_DIR='"$(abs_top_srcdir)/%D%/corpus/aws_chunked"'
%C%_replay_aws_chunked_LDADD = auth/libauth.la

if FUZZING
noinst_PROGRAMS += %D%/fuzz_sigv4_header %D%/fuzz_sigv4_query %D%/fuzz_aws_chunked

%C%_fuzz_sigv4_header_SOURCES = %D%/fuzz_sigv4_header.c $(auth_libauth_la_SOURCES)
%C%_fuzz_sigv4_header_CFLAGS = $(AM_CFLAGS) $(OPENSSL_CFLAGS) $(ISAL_CFLAGS) $(FUZZ_SAN)
%C%_fuzz_sigv4_header_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_SAN)
%C%_fuzz_sigv4_header_LDADD = $(AUTH_FUZZ_LIBS)

%C%_fuzz_sigv4_query_SOURCES = %D%/fuzz_sigv4_query.c $(auth_libauth_la_SOURCES)
%C%_fuzz_sigv4_query_CFLAGS = $(AM_CFLAGS) $(OPENSSL_CFLAGS) $(ISAL_CFLAGS) $(FUZZ_SAN)
%C%_fuzz_sigv4_query_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_SAN)
%C%_fuzz_sigv4_query_LDADD = $(AUTH_FUZZ_LIBS)

%C%_fuzz_aws_chunked_SOURCES = %D%/fuzz_aws_chunked.c $(auth_libauth_la_SOURCES)
%C%_fuzz_aws_chunked_CFLAGS = $(AM_CFLAGS) $(OPENSSL_CFLAGS) $(ISAL_CFLAGS) $(FUZZ_SAN)
%C%_fuzz_aws_chunked_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_SAN)
%C%_fuzz_aws_chunked_LDADD = $(AUTH_FUZZ_LIBS)
endif

EXTRA_DIST += %D%/sigv4_header.dict %D%/sigv4_query.dict %D%/aws_chunked.dict \
	%D%/corpus/sigv4_header %D%/corpus/sigv4_query %D%/corpus/aws_chunked

# ---- auth/md5_mb.c: multi-buffer MD5, differential against OpenSSL --------
check_PROGRAMS += %D%/replay_md5_mb
TESTS += %D%/replay_md5_mb

%C%_replay_md5_mb_SOURCES = %D%/replay.c %D%/fuzz_md5_mb.c
%C%_replay_md5_mb_CPPFLAGS = $(AM_CPPFLAGS) \
	-DFUZZ_CORPUS_DIR='"$(abs_top_srcdir)/%D%/corpus/md5_mb"'
%C%_replay_md5_mb_CFLAGS = $(AM_CFLAGS) $(OPENSSL_CFLAGS)
%C%_replay_md5_mb_LDADD = auth/libauth.la $(OPENSSL_LIBS)

if FUZZING
noinst_PROGRAMS += %D%/fuzz_md5_mb
%C%_fuzz_md5_mb_SOURCES = %D%/fuzz_md5_mb.c auth/md5_mb.c
%C%_fuzz_md5_mb_CFLAGS = $(AM_CFLAGS) $(OPENSSL_CFLAGS) $(FUZZ_SAN)
%C%_fuzz_md5_mb_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_SAN)
%C%_fuzz_md5_mb_LDADD = common/libcommon.la $(OPENSSL_LIBS)
endif

EXTRA_DIST += %D%/corpus/md5_mb

# ---- auth/iam.c: bucket policies (and common/json.c) ---------------------
check_PROGRAMS += %D%/replay_iam_policy
TESTS += %D%/replay_iam_policy

%C%_replay_iam_policy_SOURCES = %D%/replay.c %D%/fuzz_iam_policy.c
%C%_replay_iam_policy_CPPFLAGS = $(AM_CPPFLAGS) \
	-DFUZZ_CORPUS_DIR='"$(abs_top_srcdir)/%D%/corpus/iam_policy"'
%C%_replay_iam_policy_LDADD = auth/libauth.la

if FUZZING
noinst_PROGRAMS += %D%/fuzz_iam_policy
%C%_fuzz_iam_policy_SOURCES = %D%/fuzz_iam_policy.c $(auth_libauth_la_SOURCES)
%C%_fuzz_iam_policy_CFLAGS = $(AM_CFLAGS) $(OPENSSL_CFLAGS) $(ISAL_CFLAGS) $(FUZZ_SAN)
%C%_fuzz_iam_policy_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_SAN)
%C%_fuzz_iam_policy_LDADD = $(AUTH_FUZZ_LIBS)
endif

EXTRA_DIST += %D%/iam_policy.dict %D%/corpus/iam_policy

# ---- common/tar.c: tar headers (server member indexes, libshard's reader) ---
check_PROGRAMS += %D%/replay_tar
TESTS += %D%/replay_tar
%C%_replay_tar_SOURCES = %D%/replay.c %D%/fuzz_tar.c
%C%_replay_tar_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS_DIR='"$(abs_top_srcdir)/%D%/corpus/tar"'
%C%_replay_tar_LDADD = common/libcommon.la

if FUZZING
noinst_PROGRAMS += %D%/fuzz_tar
%C%_fuzz_tar_SOURCES = %D%/fuzz_tar.c common/tar.c common/tar.h
%C%_fuzz_tar_CFLAGS = $(AM_CFLAGS) $(FUZZ_SAN)
%C%_fuzz_tar_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_SAN)
%C%_fuzz_tar_LDADD = common/libcommon.la
endif

EXTRA_DIST += %D%/tar.dict %D%/corpus/tar

# ---- server/ parsers (Range, XML bodies): see server.mk ----------------------
include %D%/server.mk
include %D%/transport.mk
