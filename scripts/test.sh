#!/usr/bin/env bash
# Quick start, part 2: install what is needed, build, and run every test:
#   1. -Werror build + `make check` (unit, integration with real clients, fuzz corpus replays)
#   2. ASan+UBSan build + the same `make check`
#   3. each libFuzzer target for FUZZ_SECONDS (clang)
#   4. clang-format, cppcheck, whitespace (git diff --check)
# Ends with "N passed, N failed, N skipped"; exits non-zero if anything failed.
# Knobs: STAGES="release asan fuzz lint" (default all), FUZZ_SECONDS=15, JOBS=2.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
scripts/setup.sh --test || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }

STAGES=${STAGES:-"release asan fuzz lint"}
FUZZ_SECONDS=${FUZZ_SECONDS:-15}
JOBS=${JOBS:-2}
pass=0 fail=0 skip=0
failed_names=()

record() { # record NAME RC
    case "$2" in
        0) pass=$((pass + 1)); echo "PASS: $1" ;;
        77) skip=$((skip + 1)); echo "SKIP: $1" ;;
        *) fail=$((fail + 1)); failed_names+=("$1"); echo "FAIL: $1" ;;
    esac
}

# Adds the counts of an automake test-suite.log and shows the logs of failures.
count_suite() { # count_suite BUILDDIR LABEL
    local log="$1/test-suite.log"
    if [ ! -f "$log" ]; then record "$2: make check produced no test-suite.log" 1; return; fi
    local p f s e x
    p=$(sed -n 's/^# PASS: *//p' "$log"); f=$(sed -n 's/^# FAIL: *//p' "$log")
    s=$(sed -n 's/^# SKIP: *//p' "$log"); e=$(sed -n 's/^# ERROR: *//p' "$log")
    x=$(sed -n 's/^# XPASS: *//p' "$log")
    pass=$((pass + ${p:-0})); skip=$((skip + ${s:-0}))
    fail=$((fail + ${f:-0} + ${e:-0} + ${x:-0}))
    while read -r name; do
        failed_names+=("$2: $name")
        echo "---- $2: $name ----"
        tail -n 40 "$1/$name.log" 2>/dev/null
    done < <(grep -E '^(FAIL|ERROR|XPASS): ' "$1"/test-suite.log 2>/dev/null | sed -E 's/^[A-Z]+: //' | sort -u)
    echo "$2: ${p:-0} passed, $(( ${f:-0} + ${e:-0} )) failed, ${s:-0} skipped"
}

build() { # build DIR LABEL CONFIGURE-ARGS...
    local dir=$1 label=$2; shift 2
    mkdir -p "$dir"
    ( cd "$dir" && { [ -f Makefile ] || "$top/configure" --quiet "$@"; } && make -j"$JOBS" >build.log 2>&1 )
    local rc=$?
    [ $rc -ne 0 ] && tail -n 40 "$dir/build.log"
    record "$label: build" $rc
    return $rc
}

run_check() { # run_check DIR LABEL
    ( cd "$1" && make -j"$JOBS" check >check.log 2>&1 )
    count_suite "$1" "$2"
}

for stage in $STAGES; do
    case $stage in
    release)
        echo "== release build (-Werror) and tests"
        build build/ci-release release --enable-werror && run_check build/ci-release release ;;
    asan)
        echo "== ASan+UBSan build and tests"
        export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
        export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
        build build/ci-asan asan --enable-sanitizers --enable-werror && run_check build/ci-asan asan ;;
    fuzz)
        echo "== libFuzzer targets, ${FUZZ_SECONDS}s each"
        if ! command -v clang >/dev/null; then record "fuzz: clang missing" 77; continue; fi
        if build build/ci-fuzz fuzz CC=clang --enable-fuzzing; then
            for f in build/ci-fuzz/tests/fuzz/fuzz_*; do
                [ -x "$f" ] || continue
                name=$(basename "$f"); corpus="tests/fuzz/corpus/${name#fuzz_}"
                work=$(mktemp -d); cp -r "$corpus"/. "$work"/ 2>/dev/null
                dict=""; [ -f "tests/fuzz/${name#fuzz_}.dict" ] && dict="-dict=tests/fuzz/${name#fuzz_}.dict"
                # libFuzzer's own error exit code is 77, which record() reads as
                # "skipped": ask for 1 so a crash or a leak is a failure.
                "$f" -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -error_exitcode=1 \
                    -timeout_exitcode=1 -artifact_prefix=build/ci-fuzz/ $dict "$work" \
                    >"build/ci-fuzz/$name.log" 2>&1
                rc=$?; [ $rc -ne 0 ] && tail -n 30 "build/ci-fuzz/$name.log"
                record "fuzz: $name" $rc
                rm -rf "$work"
            done
        fi ;;
    lint)
        echo "== clang-format, cppcheck, whitespace"
        files=$(git ls-files '*.c' '*.h' 2>/dev/null)
        if command -v clang-format >/dev/null && [ -n "$files" ]; then
            clang-format --dry-run -Werror $files >build/clang-format.log 2>&1; rc=$?
            [ $rc -ne 0 ] && head -n 30 build/clang-format.log
            record "lint: clang-format" $rc
        fi
        if command -v cppcheck >/dev/null && [ -n "$files" ]; then
            cppcheck --quiet --enable=warning,performance,portability --error-exitcode=1 \
                --inline-suppr -I . $files >build/cppcheck.log 2>&1; rc=$?
            [ $rc -ne 0 ] && head -n 30 build/cppcheck.log
            record "lint: cppcheck" $rc
        fi
        if git rev-parse --git-dir >/dev/null 2>&1; then
            # Whitespace errors in what is committed (the tree against the empty tree).
            empty=$(git hash-object -t tree /dev/null)
            git diff --check "$empty" HEAD >build/gitcheck.log 2>&1; rc=$?
            [ $rc -ne 0 ] && head -n 20 build/gitcheck.log
            record "lint: git diff --check" $rc
        fi ;;
    *) echo "unknown stage $stage"; record "stage $stage" 1 ;;
    esac
done

if [ ${#failed_names[@]} -gt 0 ]; then
    echo "failed:"; printf '  %s\n' "${failed_names[@]}"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
