# Steps of a gate script, each timed, with one summary line each at the end. Sourced by
# validate.sh and scripts/slow_suites.sh.
#   step NAME CMD...              run CMD, record its time and verdict
#   background NAME CMD...        start CMD beside the next step (its output kept)
#   finish_background             wait for it, print its output, record it
#   summary SCRIPT                print the summary; exit 1 when a step failed
# Each summary line has the step's wall time and the machine's busy CPU time meanwhile (all
# cores, from /proc/stat; what ran beside the step counts too): a step whose CPU is well
# under twice its wall time leaves a core idle.
results=()
failed=0

# busy_ticks: the machine's busy CPU time so far, in clock ticks (0 without /proc/stat).
busy_ticks() {
    local _cpu user nice system _idle _iowait irq softirq steal _rest
    if read -r _cpu user nice system _idle _iowait irq softirq steal _rest </proc/stat 2>/dev/null; then
        echo $((user + nice + system + irq + softirq + steal))
    else
        echo 0
    fi
}
TICKS_PER_S=$(getconf CLK_TCK 2>/dev/null || echo 100)

# record NAME STARTED BUSY_AT_START RC: one summary line for a finished step.
record() {
    local verdict=ok tenths=$(( ($(busy_ticks) - $3) * 10 / TICKS_PER_S ))
    if [ "$4" -ne 0 ]; then
        verdict=FAIL
        failed=1
    fi
    results+=("$(printf '%-4s  %4ss  %5d.%d CPU-s  %s' "$verdict" $((SECONDS - $2)) \
        $((tenths / 10)) $((tenths % 10)) "$1")")
}

step() {
    local name=$1
    shift
    echo "==> $name: $*"
    local started=$SECONDS busy rc=0
    busy=$(busy_ticks)
    "$@" || rc=$?
    record "$name" "$started" "$busy" "$rc"
}

# A step started in the background, for a single-process step that can share the two cores
# with the next one; finish_background waits for it, prints its output and records it.
background() {
    bg_name=$1
    shift
    bg_log=$(mktemp)
    bg_started=$SECONDS
    bg_busy=$(busy_ticks)
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
    record "$bg_name (alongside the next step)" "$bg_started" "$bg_busy" "$rc"
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
