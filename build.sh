#!/bin/sh
# build.sh: hull's set-up and developer commands. Needs nothing but a shell: a fresh, minimal
# Debian 12 (debootstrap --variant=minbase, the debian:12 image) has no make and no compiler, so
# every command first installs what is missing (scripts/install-deps.sh, as root), then builds.
#
#   ./build.sh run [CMD [ARG...]]   hull's main job: run a command in a fresh sandbox
#   ./build.sh check                the whole suite on the normal build and under ASan+UBSan
#   ./build.sh build | asan | test | fuzz [SECONDS] | bench | clean
#   ./build.sh eval [--mock] [TASK...]  the eval tasks (evals/) against the configured model, or
#                                   offline against hull mock-model's scripted answers
#
# Every command is idempotent. BUILD and ASAN_BUILD name the build directories (build,
# build-asan).
set -eu
top=$(cd "$(dirname "$0")" && pwd)
cd "$top"
BUILD=${BUILD:-build}
ASAN_BUILD=${ASAN_BUILD:-build-asan}

deps() { scripts/install-deps.sh; }

build() {
        deps
        [ -f "$BUILD/build.ninja" ] || meson setup "$BUILD" --buildtype=debugoptimized
        ninja -C "$BUILD"
}

asan() {
        deps
        [ -f "$ASAN_BUILD/build.ninja" ] ||
                meson setup "$ASAN_BUILD" --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false
        ninja -C "$ASAN_BUILD"
}

cmd=${1:-build}
[ $# -gt 0 ] && shift
case "$cmd" in
build) build ;;
asan) asan ;;
run)
        build
        if [ $# -eq 0 ]; then
                set -- /usr/bin/python3 -c "import platform, os; print('hello from', platform.node(), 'as uid', os.getuid(), 'in', os.getcwd())"
        fi
        exec "./$BUILD/hull" exec -- "$@"
        ;;
check)
        build
        asan
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
                exec scripts/check.sh "$BUILD" "$ASAN_BUILD"
        ;;
test)
        build
        exec scripts/run-tests.sh "$BUILD"
        ;;
fuzz)
        deps
        exec scripts/fuzz.sh "$@"
        ;;
bench)
        build
        BUILD=$BUILD exec bench/run.sh
        ;;
eval)
        build
        exec /usr/bin/python3 evals/run.py --hull "./$BUILD/hull" "$@"
        ;;
clean) rm -rf "$BUILD" "$ASAN_BUILD" build-fuzz ;;
-h | --help | help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' ;;
*)
        echo "build.sh: unknown command '$cmd' (try: run, check, build, asan, test, fuzz, bench, eval, clean)" >&2
        exit 2
        ;;
esac
