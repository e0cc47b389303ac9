# auth/ module: SigV4, aws-chunked decoding, payload checksums.
# OpenSSL (libcrypto) and ISA-L (libisal, the CRCs) are used here and nowhere else.
noinst_LTLIBRARIES += auth/libauth.la
auth_libauth_la_SOURCES = auth/auth.h auth/auth_int.h auth/sigv4.c auth/chunked.c \
	auth/checksum.c auth/md5_mb.c auth/sigv2.c auth/digest.c auth/policy.c auth/secret.c \
	auth/sse.c auth/iam.c auth/post.c
auth_libauth_la_CFLAGS = $(AM_CFLAGS) $(OPENSSL_CFLAGS) $(ISAL_CFLAGS)
auth_libauth_la_LIBADD = common/libcommon.la $(OPENSSL_LIBS) $(ISAL_LIBS)

# Checksum throughput (GiB/s per core, per algorithm): bench/checksum_speed
noinst_PROGRAMS += bench/checksum_speed
bench_checksum_speed_SOURCES = bench/checksum_speed.c
bench_checksum_speed_CFLAGS = $(AM_CFLAGS) $(OPENSSL_CFLAGS)
bench_checksum_speed_LDADD = auth/libauth.la $(OPENSSL_LIBS)
