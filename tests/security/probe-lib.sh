# probe-lib.sh: judging a probe's result, shared by the containment suites. A run sets RC (hull's
# exit status), LINE (the probe's result line) and ERR (hull's stderr file) before expect().

# why: the last run, in one line, for a failure message.
why() { printf 'exit=%s line=[%s] stderr=[%s]' "$RC" "$LINE" "$(head -c 400 "$ERR" | tr '\n' ' ')"; }

# expect NAME REGEX: the last run exited 0 and its result line matches REGEX.
# HULL_TEST_VERBOSE=1 also shows each result line (as a comment the runner ignores).
expect() {
        [ -n "${HULL_TEST_VERBOSE:-}" ] && printf '#   %s\n' "$LINE"
        if [ "$RC" -eq 0 ] && [[ $LINE =~ $2 ]]; then pass "$1"; else fail "$1" "$(why)"; fi
}

DENIED='^DENIED( |$)'                         # failed with the errno the policy names
CONTAINED='^(DENIED|BLOCKED|CONTAINED)( |$)'  # failed or found nothing wrong
