# Steps of a gate script, each timed, with one summary line each at the end. Sourced by
# validate.sh and scripts/slow_suites.sh.
#   step NAME CMD...              run CMD, record its time and verdict
#   background NAME CMD...        start CMD beside the next step (its output kept)
#   finish_background             wait for each one started, print its output, record it
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

# Steps started in the background, for single-process steps that can share the two cores
# with the next step (several may run at once); finish_background waits for each in the
# order they started, prints its output and records it.
bg_names=()
bg_logs=()
bg_pids=()
bg_starts=()
bg_busys=()
background() {
    local name=$1 log
    shift
    log=$(mktemp)
    bg_names+=("$name")
    bg_logs+=("$log")
    bg_starts+=("$SECONDS")
    bg_busys+=("$(busy_ticks)")
    echo "==> $name (in the background): $*"
    "$@" >"$log" 2>&1 &
    bg_pids+=("$!")
}

finish_background() {
    local i rc
    for i in "${!bg_pids[@]}"; do
        rc=0
        wait "${bg_pids[$i]}" || rc=$?
        echo "==> ${bg_names[$i]} (finished):"
        cat "${bg_logs[$i]}"
        rm -f "${bg_logs[$i]}"
        record "${bg_names[$i]} (alongside the next step)" "${bg_starts[$i]}" "${bg_busys[$i]}" "$rc"
    done
    bg_names=()
    bg_logs=()
    bg_pids=()
    bg_starts=()
    bg_busys=()
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
