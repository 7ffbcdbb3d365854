#!/bin/sh
# Benchmark scenario (not a test; tests/bench/probe-startup-vm boots it): the stall probe's
# start-up right after boot (the kernel's CO-RE candidate cache and everything else cold) and
# once more (warm), in mode $MODE (fentry: what the kernel supports best; tp: the raw
# tracepoints, forced) of the build $DUMP_BUILD. Prints "probe-startup MODE cold|warm
# cpu_us=... wall_us=...".
set -eu
: "${DUMP_BUILD:?}" "${MODE:?}"
mountpoint -q /sys/kernel/tracing || mount -t tracefs none /sys/kernel/tracing
[ "$MODE" = tp ] && export STABLEPAGES_STALLS_FORCE_TRACEPOINTS=1
for run in cold warm; do
        line=$("$DUMP_BUILD/tests/stall-probe-dump" --duration 0 2>&1 >/dev/null | grep 'start-up:')
        echo "probe-startup $MODE $run ${line#*start-up: }"
done
