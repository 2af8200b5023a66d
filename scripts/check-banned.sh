#!/usr/bin/env bash
# check-banned.sh: fail when src/ calls a libc function hull bans (unbounded or unsafe).
set -u
cd "$(dirname "$0")/.."
hits=$(grep -rnE '\b(strcpy|strcat|sprintf|vsprintf|gets|atoi|atol|atoll|strtok|tmpnam|mktemp)\s*\(' src \
        | grep -vE '\b(snprintf|vsnprintf)\s*\(' || true)
scanf=$(grep -rnE '\b(scanf|fscanf|sscanf)\s*\([^)]*%s' src || true)
if [ -n "$hits$scanf" ]; then
        printf 'banned libc calls in src/:\n%s%s\n' "$hits" "$scanf" >&2
        exit 1
fi
exit 0
