#!/usr/bin/env bash
# check-format.sh: fail when a C file of the tree is not as .clang-format has it; prints the files
# and how to fix them. (clang-format 14, Debian's clang-format package.)
set -u
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "clang-format is missing (apt-get install clang-format)" >&2; exit 1; }
files=$(git ls-files '*.c' '*.h' 2>/dev/null || find src tests fuzz bench -name '*.[ch]')
# shellcheck disable=SC2086 # one process for every file; its messages name the files
bad=$(clang-format --dry-run -Werror $files 2>&1 | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error:.*/\1/p' | sort -u)
if [ -n "$bad" ]; then
        printf 'not formatted (run: clang-format -i FILE):\n%s\n' "$bad" >&2
        exit 1
fi
exit 0
