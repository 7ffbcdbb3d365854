#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Benchmark (not a test), in a qemu guest: Policy=balanced on a steady writer on a throttled md
# raid1 mirror, this build's daemon beside another build's (BASELINE, e.g. main before shadow
# waits) in one boot, each on its own md raid1 of two loop devices whose writes dm-delay holds
# 50 ms; ext4 on it; a writer rewrites pages right after their writeback started (stall-writer, 5 per batch,
# a batch every 0.2 s), and the filesystem is mounted again every ROUND seconds so that it
# takes the flag the daemon wrote. Over 10 x StallCalmSec= (CALM) it counts the changes of the
# learned state each daemon logs and prints the window p99 of the real waits (stable writes
# on) and of the shadow waits (off) from the daemon's devices.json.
# Usage (host, root):
#   tests/vm/vm-run --kernel 6.12 --timeout 900 --env BUILD="$PWD/build" \
#       --env BASELINE=/path/to/main/build [--env CALM=4] tests/bench/balanced-steady-guest.sh
. "$VM_REPO/tests/vm/scenarios/lib.sh"
CALM=${CALM:-4}
ROUND=${ROUND:-2}

bus_start

run() { # NAME BUILDDIR MD: that build's daemon on a new mirror MD; prints the changes and the
        # window figures. A new mirror each: what a daemon saw of a disk (its flag history)
        # is not the next one's to inherit.
        local name=$1 dir=$2 md=$3 end on="" off="" legs="" i
        for i in 0 1; do
                legs="$legs /dev/$(delayed "sp-$md-leg$i" "$(newloop 64)" 50)"
        done
        # shellcheck disable=SC2086
        mkmd_on "$md" 1 "" $legs > /dev/null
        mkfs.ext4 -q -F "/dev/$md" || die "mkfs.ext4 $md"
        config "[Manager]
Policy=balanced
Devices=$md
RescanSec=0
StallBudgetMSec=10
StallWindowSec=$ROUND
StallMinWaits=3
StallCalmSec=$CALM"
        rm -rf "$RUNTIME"/* "/run/sp/state-$name"
        SPD=$dir/daemon/stablepagesd
        spd() { "$SPD" --config-dir="$ETC" --runtime-dir="$RUNTIME" --state-dir="/run/sp/state-$name" "$@"; }
        daemon_start
        local pid=$!
        end=$((SECONDS + 10 * CALM))
        while [ "$SECONDS" -lt "$end" ]; do
                fresh_mount "/dev/$md" /mnt/m
                local flag w_end
                flag=$(flag "$md")
                w_end=$((SECONDS + ROUND))
                while [ "$SECONDS" -lt "$w_end" ]; do
                        "$STALL_WRITER" --iterations 5 --slow-usec 10000 /mnt/m/w > /dev/null || die "stall-writer"
                        sleep 0.2
                done
                sleep 1.2 # one poll after the writer
                umount /mnt/m || die "umount"
                local j
                j=$(jq -c --arg d "$md" '.devices[] | select(.name == $d) | .stalls.window' "$RUNTIME/devices.json")
                if [ "$flag" = 1 ]; then
                        on="$on $(jq -r '.p99_usec // 0' <<< "$j")"
                else
                        off="$off $(jq -r '.shadow_p99_usec // 0' <<< "$j")"
                fi
        done
        kill "$pid"
        wait "$pid"
        local changes
        changes=$(grep -c "$md: Policy=balanced learned" /run/sp/daemon.log)
        say "$name: changes=$changes over $((10 * CALM)) s (StallCalmSec=$CALM)"
        grep "$md: Policy=balanced learned" /run/sp/daemon.log | cut -c1-160 | sed 's/^/    /' | tee -a "$RESULT"
        say "    window p99 with stable writes on (real, us):$on"
        say "    window p99 with stable writes off (shadow, us):$off"
        [ -n "${VERBOSE:-}" ] && grep "$md" /run/sp/daemon.log | tail -15 | cut -c1-220 | sed 's/^/    daemon: /' | tee -a "$RESULT"
        return 0
}
[ -n "${BASELINE:-}" ] && run baseline "$BASELINE" md1
run this "$BUILD" md2
sp_done
