# Steps of a gate script, each timed, with one summary line each at the end. Sourced by
# validate.sh and scripts/slow_suites.sh.
#   step NAME CMD...              run CMD, record its time and verdict
#   background NAME CMD...        start CMD beside the next step (its output kept)
#   finish_background             wait for it, print its output, record it
#   summary SCRIPT                print the summary; exit 1 when a step failed
results=()
failed=0

# record NAME STARTED RC: one summary line for a finished step.
record() {
    if [ "$3" -eq 0 ]; then
        results+=("$(printf 'ok    %4ss  %s' $((SECONDS - $2)) "$1")")
    else
        results+=("$(printf 'FAIL  %4ss  %s' $((SECONDS - $2)) "$1")")
        failed=1
    fi
}

step() {
    local name=$1
    shift
    echo "==> $name: $*"
    local started=$SECONDS rc=0
    "$@" || rc=$?
    record "$name" "$started" "$rc"
}

# A step started in the background, for a single-process step that can share the two cores
# with the next one; finish_background waits for it, prints its output and records it.
background() {
    bg_name=$1
    shift
    bg_log=$(mktemp)
    bg_started=$SECONDS
    echo "==> $bg_name (in the background): $*"
    "$@" >"$bg_log" 2>&1 &
    bg_pid=$!
}

finish_background() {
    local rc=0
    wait "$bg_pid" || rc=$?
    echo "==> $bg_name (finished):"
    cat "$bg_log"
    rm -f "$bg_log"
    record "$bg_name (alongside the next step)" "$bg_started" "$rc"
}

summary() {
    echo
    echo "==> summary"
    printf '  %s\n' "${results[@]}"
    if [ "$failed" -ne 0 ]; then
        echo "$1: FAILED after ${SECONDS}s"
        exit 1
    fi
    echo "$1: all green in ${SECONDS}s"
}
