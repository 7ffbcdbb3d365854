#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Benchmark (not a test), in a qemu guest: Policy=balanced on a steady writer on a throttled md
# raid1 mirror, this build's daemon beside another build's (BASELINE, e.g. main before shadow
# waits) in one boot, each on its own md raid1 of two legs: two virtio disks whose writes qemu
# throttles (vm-run --disk, four of them: sp-disk0 and 1 for the baseline, 2 and 3 for this
# build), else two loop devices whose writes dm-delay holds 50 ms. ext4 on it; a writer rewrites
# pages right after their writeback started (stall-writer, 5 per batch, a batch every 0.2 s)
# for ROUND seconds, and the filesystem is then mounted again so that it takes the flag the
# daemon wrote (as ApplyMounted=remount-idle or the next boot would). The pause of that
# remount (1-2 s under TCG) is a real calm: CALM is kept above it, so that only the policy's
# own blindness (no waits while stable writes are off) can make a calm period. Over
# 10 x StallCalmSec= (CALM) it counts the changes of the learned state each daemon logs and
# prints the window p99 of the real waits (stable writes on) and of the shadow waits (off)
# from the daemon's devices.json. This build's run starts with REF_ROUNDS rounds of the same
# writer under Policy=integrity (stable writes on at every mount): the real waits that the
# shadow waits are compared with (median window p99 of each).
# Usage (host, root):
#   tests/vm/vm-run --kernel 6.12 --timeout 900 --disk 64M,iops=20 --disk 64M,iops=20 \
#       --disk 64M,iops=20 --disk 64M,iops=20 --env BUILD="$PWD/build" \
#       --env BASELINE=/path/to/main/build [--env CALM=4 --env ROUND=6] \
#       tests/bench/balanced-steady-guest.sh
. "$VM_REPO/tests/vm/scenarios/lib.sh"
CALM=${CALM:-4}
ROUND=${ROUND:-6}
WINDOW=${WINDOW:-2}
REF_ROUNDS=${REF_ROUNDS:-3}

bus_start

virtio_leg() { # N: the virtio disk of serial sp-diskN, or nothing
        local d
        for d in /sys/block/vd*; do
                [ "$(cat "$d/serial" 2> /dev/null)" = "sp-disk$1" ] && { echo "${d##*/}"; return 0; }
        done
        return 1
}

median() { tr ' ' '\n' <<< "$1" | grep -v '^0*$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# daemon POLICY STATE: that build's ($SPD) daemon managing $md under POLICY with the state dir STATE.
daemon() {
        config "[Manager]
Policy=$1
Devices=$md
RescanSec=0
StallBudgetMSec=10
StallWindowSec=$WINDOW
StallMinWaits=3
StallCalmSec=$CALM"
        STATE=$2
        rm -rf "${RUNTIME:?}"/* "$STATE"
        spd() { "$SPD" --config-dir="$ETC" --runtime-dir="$RUNTIME" --state-dir="$STATE" "$@"; }
        daemon_start
}

# rounds SECONDS: mounts $md, writes for ROUND seconds, reads the last window's p99 (real when
# the mount took stable writes, shadow when not) into ON or OFF, unmounts; again until SECONDS
# have passed. The pause from one round's writer to the next one's goes into PAUSES.
rounds() {
        local end=$((SECONDS + $1)) pause_start="" flag w_end j
        while [ "$SECONDS" -lt "$end" ]; do
                fresh_mount "/dev/$md" /mnt/m
                flag=$(flag "$md")
                [ -n "$pause_start" ] && PAUSES="$PAUSES $((($(date +%s%N) - pause_start) / 1000000))"
                w_end=$((SECONDS + ROUND))
                while [ "$SECONDS" -lt "$w_end" ]; do
                        "$STALL_WRITER" --iterations 5 --slow-usec 10000 /mnt/m/w > /dev/null || die "stall-writer"
                        sleep 0.2
                done
                pause_start=$(date +%s%N)
                # The last whole window of the writer, before the remount's pause.
                j=$(jq -c --arg d "$md" '.devices[] | select(.name == $d) | .stalls.window' "$RUNTIME/devices.json")
                umount /mnt/m || die "umount"
                if [ "$flag" = 1 ]; then
                        ON="$ON $(jq -r '.p99_usec // 0' <<< "$j")"
                else
                        OFF="$OFF $(jq -r '.shadow_p99_usec // 0' <<< "$j")"
                fi
        done
}

run() { # NAME BUILDDIR MD FIRST: that build's daemon on a new mirror MD (virtio disks FIRST and
        # FIRST+1, else delayed loops); prints the changes and the window figures. A new mirror
        # each: what a daemon saw of a disk (its flag history) is not the next one's to inherit.
        local name=$1 legs="" i leg kind ref="" changes
        md=$3 SPD=$2/daemon/stablepagesd
        for i in 0 1; do
                if leg=$(virtio_leg $(($4 + i))); then
                        kind="virtio disks throttled by qemu ($(cat "/sys/block/$leg/size") sectors)"
                else
                        kind="loop devices behind dm-delay 50 ms"
                        leg=$(delayed "sp-$md-leg$i" "$(newloop 64)" 50)
                fi
                legs="$legs /dev/$leg"
        done
        say "$name: md raid1 on$legs: $kind"
        # shellcheck disable=SC2086
        mkmd_on "$md" 1 "" $legs > /dev/null
        mkfs.ext4 -q -F "/dev/$md" || die "mkfs.ext4 $md"
        if [ "$name" = this ]; then
                # The reference: the same writer with stable writes on at every mount
                # (Policy=integrity), REF_ROUNDS rounds, its real waits' window p99. Then the
                # flag the kernel gave the new mirror is put back: a daemon that first sees a 1
                # it cannot explain treats the disk as requiring it.
                local declared
                declared=$(flag "$md")
                daemon integrity "/run/sp/state-$name-reference"
                ON="" OFF="" PAUSES=""
                rounds $((REF_ROUNDS * (ROUND + 2)))
                daemon_stop
                ref=$ON
                echo "$declared" > "/sys/block/$md/queue/stable_writes"
        fi
        daemon balanced "/run/sp/state-$name"
        ON="" OFF="" PAUSES=""
        rounds $((10 * CALM))
        daemon_stop
        changes=$(grep -c "$md: Policy=balanced learned" /run/sp/daemon.log)
        say "$name: changes=$changes over $((10 * CALM)) s (StallCalmSec=$CALM)"
        grep "$md: Policy=balanced learned" /run/sp/daemon.log | cut -c1-160 | sed 's/^/    /' | tee -a "$RESULT"
        say "    window p99 with stable writes on (real, us):$ON"
        say "    window p99 with stable writes off (shadow, us):$OFF"
        say "    remount pauses, writer to writer (ms):$PAUSES"
        if [ -n "$ref" ] && [ -n "$(median "$OFF")" ]; then
                say "    reference, Policy=integrity, window p99 (real, us):$ref"
                say "    median window p99: real $(median "$ref") us (reference), shadow $(median "$OFF") us," \
                        "shadow/real $(awk -v a="$(median "$OFF")" -v b="$(median "$ref")" 'BEGIN {printf "%.2f", a / b}')"
        fi
        [ -n "${VERBOSE:-}" ] && say "    probe: $(jq -r '.stall_probe + ": " + .stall_probe_reason' "$RUNTIME/devices.json" | cut -c1-200)"
        [ -n "${VERBOSE:-}" ] && grep "$md" /run/sp/daemon.log | tail -15 | cut -c1-220 | sed 's/^/    daemon: /' | tee -a "$RESULT"
        return 0
}
[ -n "${BASELINE:-}" ] && run baseline "$BASELINE" md1 0
run this "$BUILD" md2 2
sp_done
