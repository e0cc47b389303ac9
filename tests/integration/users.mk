# Users, access keys, ownership and grants (issue 6): admin API + boto3,
# and the `shardstore admin` CLI with aws-cli profiles and rclone.
TESTS += \
	%D%/test_users.py \
	%D%/test_users_cli.py

EXTRA_DIST += \
	%D%/test_users.py \
	%D%/test_users_cli.py

# Signatures that must not be enough: SigV2/presigned on /_/, SigV2 expiry
# and unsigned parameters, host in SignedHeaders, anonymous overrides.
TESTS += %D%/test_auth_hardening.py
EXTRA_DIST += %D%/test_auth_hardening.py

# Request headers the server cannot honour are refused (501), not ignored.
TESTS += %D%/test_unsupported_headers.py
EXTRA_DIST += %D%/test_unsupported_headers.py
