# Integration tests: a real shardstore on a random loopback port.
# The Python scripts run through PY_LOG_COMPILER (python3) and find
# harness.py through SHARD_SRCDIR; the C test drives the server with libcurl.
TESTS += \
	%D%/test_boto3.py \
	%D%/test_awscli.py \
	%D%/test_s3cmd.py \
	%D%/test_rclone.py \
	%D%/test_hostile.py \
	%D%/test_crash.py \
	%D%/test_concurrency.py \
	%D%/test_event_loop.py \
	%D%/test_tagging.py \
	%D%/test_tar_members.py \
	%D%/test_versioning.py \
	%D%/test_object_lock.py \
	%D%/test_versioning_model.py \
	%D%/test_versioning_crash.py \
	%D%/test_access_control.py \
	%D%/test_post_object.py \
	%D%/test_prezero.py

EXTRA_DIST += \
	%D%/harness.py \
	%D%/test_boto3.py \
	%D%/test_awscli.py \
	%D%/test_s3cmd.py \
	%D%/test_rclone.py \
	%D%/test_hostile.py \
	%D%/test_crash.py \
	%D%/test_concurrency.py \
	%D%/test_event_loop.py \
	%D%/test_tagging.py \
	%D%/test_tar_members.py \
	%D%/test_versioning.py \
	%D%/test_object_lock.py \
	%D%/test_versioning_model.py \
	%D%/test_versioning_crash.py \
	%D%/test_access_control.py \
	%D%/test_post_object.py \
	%D%/test_prezero.py

check_PROGRAMS += %D%/test_curl
TESTS += %D%/test_curl
%C%_test_curl_SOURCES = %D%/test_curl.c
%C%_test_curl_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS)
%C%_test_curl_LDADD = tests/lib/libtest.la $(LIBCURL_LIBS)

# Slow and hostile clients (slowloris, slow uploads and readers, per-address
# cap, bounded shutdown, accept() out of descriptors).
TESTS += %D%/test_slow_clients.py
EXTRA_DIST += %D%/test_slow_clients.py

# HTTPS: versions, every client, certificate reload, over-size bodies.
TESTS += %D%/test_tls.py
EXTRA_DIST += %D%/test_tls.py

# Encryption at rest: SSE-S3, SSE-C, bucket defaults, tampering, key rotation.
TESTS += %D%/test_sse.py
EXTRA_DIST += %D%/test_sse.py
TESTS += %D%/test_sse_tiers.py
EXTRA_DIST += %D%/test_sse_tiers.py

# Admin endpoints: health, metrics, scrub.
TESTS += %D%/test_admin.py
EXTRA_DIST += %D%/test_admin.py

# Bucket lifecycle and tagging configuration, the lifecycle worker.
TESTS += %D%/test_lifecycle.py
EXTRA_DIST += %D%/test_lifecycle.py

# Storage classes, the cold tier, lifecycle transitions, crashes during moves.
TESTS += %D%/test_tiers.py
EXTRA_DIST += %D%/test_tiers.py

TESTS += %D%/test_metrics.py
EXTRA_DIST += %D%/test_metrics.py

# Uploads hashed on the hashing threads: multi-buffer lanes, paused uploads.
TESTS += %D%/test_hasher.py
EXTRA_DIST += %D%/test_hasher.py
include %D%/mp.mk
include %D%/users.mk

# ListBuckets paging (max-buckets, continuation-token, prefix, bucket-region).
TESTS += %D%/test_list_buckets.py
EXTRA_DIST += %D%/test_list_buckets.py
include %D%/list.mk

# Uploads hold space only for the bytes they sent (reserve_max_per_principal).
TESTS += %D%/test_reserve.py
EXTRA_DIST += %D%/test_reserve.py

# Large objects laid out and served as one span (issue 19).
TESTS += %D%/test_get_layout.py
EXTRA_DIST += %D%/test_get_layout.py

# Slow readers: what a stalled GET may hold back (issue 16, item 5).
TESTS += %D%/test_slow_reader.py
EXTRA_DIST += %D%/test_slow_reader.py

# The status console in headless Chromium (skips without chromium); leaves
# console.png, a screenshot of the logged-in page, beside its log.
TESTS += %D%/test_console.py
EXTRA_DIST += %D%/test_console.py
CLEANFILES += %D%/console.png

# make install DESTDIR=...: programs, libshard, config, systemd unit, manual
# pages; the unit through systemd-analyze verify when it exists.
TESTS += %D%/test_install.py
EXTRA_DIST += %D%/test_install.py
# Answers that used to be wrong (issue 13): DeleteBucket with uploads,
# repeated completion, partNumber, checksums, conditional PUT, listing
# tokens, metadata, Content-Encoding, presigned expiry, bucket re-creation.
TESTS += %D%/test_s3_answers.py
EXTRA_DIST += %D%/test_s3_answers.py

# Bucket CORS: configuration, preflight, headers, a headless Chromium.
TESTS += %D%/test_cors.py
EXTRA_DIST += %D%/test_cors.py

# Server access logging: configuration, records, delivery after a restart.
TESTS += %D%/test_bucket_logging.py
EXTRA_DIST += %D%/test_bucket_logging.py
# Batch GET (POST /bucket?batch): one streamed tar of objects, ranges, members.
TESTS += %D%/test_batch_get.py
EXTRA_DIST += %D%/test_batch_get.py

# The Python package (python/shardstore, ctypes on libshard.so) and its
# PyTorch datasets; torch_checks.py runs in the Python that has torch.
TESTS += %D%/test_python_shardstore.py
EXTRA_DIST += %D%/test_python_shardstore.py %D%/torch_checks.py
