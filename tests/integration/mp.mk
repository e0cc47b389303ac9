# Multipart upload integration tests (boto3, real clients, kill -9).
TESTS += \
	%D%/test_multipart.py \
	%D%/test_multipart_clients.py \
	%D%/test_multipart_crash.py \
	%D%/test_copy_share.py

EXTRA_DIST += \
	%D%/mp_util.py \
	%D%/test_multipart.py \
	%D%/test_multipart_clients.py \
	%D%/test_multipart_crash.py \
	%D%/test_copy_share.py
