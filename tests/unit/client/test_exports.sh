#!/usr/bin/env bash
# test_exports.sh: the shared libshard exports exactly the SHARD_API calls
# of client/shard.h: every one of them, and no other symbol (the auth/ signer,
# common/ helpers and client__ internals built into it stay hidden).
set -euo pipefail
so="${SHARD_BUILDDIR:?}/client/.libs/libshard.so"
hdr="${SHARD_SRCDIR:?}/client/shard.h"
if [ ! -e "$so" ]; then
    echo "FAIL: $so not built" >&2
    exit 1
fi
exported=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVW]$/ { print $3 }' | sort -u)
# The names declared after SHARD_API (a declaration may wrap its line).
declared=$(grep -v '^#define' "$hdr" | tr '\n' ' ' | grep -o 'SHARD_API[^;(]*(' |
    sed -E 's/.*[ *]([a-z_0-9]+)\($/\1/' | sort -u)
if [ -z "$declared" ] || [ -z "$exported" ]; then
    echo "FAIL: nothing declared or nothing exported" >&2
    exit 1
fi
rc=0
extra=$(comm -23 <(echo "$exported") <(echo "$declared"))
missing=$(comm -13 <(echo "$exported") <(echo "$declared"))
if [ -n "$extra" ]; then
    echo "FAIL: exported but not SHARD_API:" $extra >&2
    rc=1
fi
if [ -n "$missing" ]; then
    echo "FAIL: SHARD_API but not exported:" $missing >&2
    rc=1
fi
[ $rc -eq 0 ] && echo "ok: $(echo "$declared" | wc -l) calls exported, nothing else"
exit $rc
