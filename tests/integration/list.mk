# Listing at scale: ListObjects v1/v2 against a model, paging through real clients.
TESTS += \
	%D%/test_list_model.py \
	%D%/test_list_clients.py \
	%D%/test_list_keys.py

EXTRA_DIST += \
	%D%/test_list_model.py \
	%D%/test_list_clients.py \
	%D%/test_list_keys.py
