#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Mount storm: 1,000 tmpfs mount/umount pairs, paced over a few seconds (a burst of
# another 1,000 as fast as possible follows). The daemon coalesces mount table changes
# (at most one table read per 100 ms), stays responsive (it tracks a real mount made
# right after the storm within a second and answers a reload) and its CPU time for the
# storm stays small; the figures are printed.
#
# Usage: test-daemon-mount-storm.sh [STABLEPAGESD]   (root; exit 77 = skipped)
source "$(dirname "$0")/lib.sh"
sp_setup "$@"
command -v mkfs.ext4 >/dev/null || sp_skip "mkfs.ext4 is not installed"

PAIRS=1000
CPU_BUDGET_MS=${SP_STORM_CPU_BUDGET_MS:-500}

n=$(sp_free_loop_number)
loop=loop$n
sp_loop_attach "$n" 64M
mkfs.ext4 -q "/dev/$loop"
sp_config "[Manager]
Devices=$loop
RescanSec=0"
sp_daemon_start

# CPU time of the daemon in ms: the scheduler's exact runtime when /proc/PID/sched has it,
# else user+system time in clock ticks.
tck=$(getconf CLK_TCK)
cpu_ms() {
        if grep -q '^se.sum_exec_runtime' "/proc/$SP_PID/sched" 2>/dev/null; then
                awk '/^se.sum_exec_runtime/ { printf "%.1f\n", $3 }' "/proc/$SP_PID/sched"
        else
                awk -v t="$tck" '{ print ($14 + $15) * 1000 / t }' "/proc/$SP_PID/stat"
        fi
}

mkdir -p "$SP_TMP/storm"
sp_defer "umount '$SP_TMP/storm'"
storm() { # PAUSE_US: runs the storm, prints the daemon's CPU ms for it
        local c0 c1 out
        c0=$(cpu_ms)
        out=$("$SP_HELPER" mount-storm "$SP_TMP/storm" "$PAIRS" "$1") || sp_fail "the mount storm failed"
        sleep 0.3 # the last coalesced pass
        c1=$(cpu_ms)
        kill -0 "$SP_PID" || sp_fail "stablepagesd died in the storm"
        sp_log "storm: $out (pause ${1} us): stablepagesd used $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.1f", b - a }') ms CPU" >&2
        awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%d\n", b - a + 0.5 }'
}
paced=$(storm 3000)
burst=$(storm 0)
used=$((paced + burst))

# Still responsive: a real mount right after the storm is tracked within a second.
sp_mount "/dev/$loop" "$SP_TMP/mnt"
ms=$(sp_wait_for 1000 "the mount after the storm to be tracked" \
        sp_state_is ".filesystems[] | select(.target == \"$SP_TMP/mnt\") | .disk" "$loop")
sp_log "storm: a mount right after the storm was tracked after ${ms} ms"
sp_daemon_reload
sp_state_is '[.filesystems[] | select(.fstype == "tmpfs")] | length' 0 || sp_fail "tmpfs mounts were tracked"
((used <= CPU_BUDGET_MS)) || sp_fail "stablepagesd used $used ms CPU in the storm (budget $CPU_BUDGET_MS ms)"
sp_daemon_stop
sp_log "mount-storm: ok"
