#!/usr/bin/env bash
# Runs one test, in the foreground, with its output on the terminal:
#
#   scripts/test-one.sh tests/integration/test_boto3.py            # one Python test file
#   scripts/test-one.sh tests/integration/test_boto3.py test_range_reads  # one case (or more)
#   scripts/test-one.sh tests/unit/server/test_range                # one unit test program
#   scripts/test-one.sh tests/integration/test_curl                 # the libcurl test
#
# TEST is the path as listed in TESTS (a source path for .py/.sh, a program path otherwise;
# a trailing .c is dropped). The build directory (SHARD_BUILD, default build/dev) is
# configured with --enable-werror when it has no Makefile yet, then the programs the test
# needs are built (JOBS=2 parallel jobs). The test gets the environment `make check` gives it
# (SHARDSTORE_BIN, SHARD_SRCDIR, SHARD_BUILDDIR); Python cases go through SHARD_TEST_CASE.
# Exit status is the test's: 0 pass, 77 skip, anything else fails.
set -euo pipefail

usage() {
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
[ $# -ge 1 ] || usage
case "$1" in -h | --help) usage ;; esac

SRC=$(cd "$(dirname "$0")/.." && pwd)
TEST=${1#./}
shift
TEST=${TEST%.c}
BUILD=${SHARD_BUILD:-build/dev}
case "$BUILD" in /*) ;; *) BUILD=$SRC/$BUILD ;; esac
JOBS=${JOBS:-2}

case "$TEST" in
    *.py | *.sh)
        [ -f "$SRC/$TEST" ] || { echo "test-one: no such test file: $SRC/$TEST" >&2; exit 2; } ;;
    *)
        [ -f "$SRC/$TEST.c" ] || { echo "test-one: no test source $SRC/$TEST.c" >&2; exit 2; }
        [ $# -eq 0 ] || { echo "test-one: only Python tests take case names" >&2; exit 2; } ;;
esac

if [ ! -f "$BUILD/Makefile" ]; then
    [ -x "$SRC/configure" ] || "$SRC/scripts/setup.sh" --test
    echo "test-one: configuring $BUILD" >&2
    mkdir -p "$BUILD"
    (cd "$BUILD" && "$SRC/configure" --enable-werror --quiet)
fi
# A Python test may use any check program (e.g. shard_read_range): `make check TESTS=` builds
# them all and runs nothing. A program test needs itself and the server.
case "$TEST" in
    *.py | *.sh) targets="check TESTS=" ;;
    *) targets="all $TEST" ;;
esac
echo "test-one: building in $BUILD (log: $BUILD/test-one.log)" >&2
# shellcheck disable=SC2086
make -C "$BUILD" -j"$JOBS" $targets > "$BUILD/test-one.log" 2>&1 || {
    tail -n 60 "$BUILD/test-one.log" >&2
    echo "test-one: build failed" >&2
    exit 1
}

export SHARDSTORE_BIN=$BUILD/shardstore SHARD_SRCDIR=$SRC SHARD_BUILDDIR=$BUILD
if [ $# -gt 0 ]; then
    SHARD_TEST_CASE="$*"
    export SHARD_TEST_CASE
fi
rc=0
case "$TEST" in
    *.py) (cd "$BUILD" && python3 "$SRC/$TEST") || rc=$? ;;
    *.sh) (cd "$BUILD" && bash "$SRC/$TEST") || rc=$? ;;
    *) (cd "$BUILD" && "$BUILD/$TEST") || rc=$? ;;
esac
case $rc in
    0) echo "test-one: PASS $TEST${SHARD_TEST_CASE:+ ($SHARD_TEST_CASE)}" >&2 ;;
    77) echo "test-one: SKIP $TEST" >&2 ;;
    *) echo "test-one: FAIL $TEST (exit status $rc)" >&2 ;;
esac
exit $rc
