#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The unmount + mount cycle applies a decision to a mounted filesystem (issue 7), for ext4,
# xfs and btrfs on loop devices, with ApplyMounted=next-mount (the default):
#   - ext4 and xfs are mounted while stable_writes=1, btrfs while 0; files with checksums
#     are written; a writer rewriting a page under writeback (throttled to 20 write IOPS
#     with the blkio controller) stalls tens of ms per rewrite on ext4 and xfs;
#   - the policy turns ext4/xfs off and btrfs on: the daemon writes the flags, reports the
#     three mounts pending and, in next-mount mode, leaves them mounted;
#   - "stablepagesctl apply DEVS --remount" cycles each one: the host's mount table shows a
#     new mount (another unique mount id) on the same path with the same options, the
#     checksums match, the daemon reports the new state in effect (observed at mount), the
#     RemountFinished signal says ok for each, with its duration;
#   - the stall is gone on ext4 and xfs (microseconds). btrfs waits for writeback before it
#     modifies a page whatever the flag (measured here: tens of ms with the flag 0 and with
#     nodatasum), so for btrfs the proof is the daemon's effective state only.
#
# Usage: test-remount-cycle.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
source "$(dirname "$0")/lib.sh"
sp_setup "$@"
source "$SP_SRCDIR/remount-lib.sh"
RM_CTL=${2:-${STABLEPAGESCTL:-stablepagesctl}}
rm_require python3 sha256sum

sp_cg_setup
declare -A LOOP WANT BEFORE AFTER UID0 UID1 OPTS
fss=()
for fs in ext4 xfs btrfs; do
        if sp_fs_usable "$fs"; then fss+=("$fs"); else sp_log "$fs cannot be made here, skipped"; fi
done
[ ${#fss[@]} -gt 0 ] || sp_skip "none of ext4, xfs, btrfs can be made here"

devices=
for fs in "${fss[@]}"; do
        n=$(sp_free_loop_number)
        LOOP[$fs]=loop$n
        sp_loop_attach "$n" 512M # xfs wants at least 300 MB
        devices="$devices loop$n"
        # Mounted with the opposite of what the policy will want.
        if [ "$fs" = btrfs ]; then WANT[$fs]=on; else WANT[$fs]=off; fi
done

conf="[Manager]
Devices=$devices
RescanSec=0"
for fs in "${fss[@]}"; do
        conf="$conf

[Device ${LOOP[$fs]}]
StableWrites=$([ "${WANT[$fs]}" = on ] && echo off || echo on)"
done
sp_config "$conf"
rm_bus_start
sp_daemon_start
rm_wait_bus

for fs in "${fss[@]}"; do
        l=${LOOP[$fs]} dir=$SP_TMP/mnt-$fs
        sp_wait_for 2000 "$l flag set" sp_flag_is "$l" "$([ "${WANT[$fs]}" = on ] && echo 0 || echo 1)" >/dev/null
        sp_mkfs "$fs" "/dev/$l"
        sp_mount "/dev/$l" "$dir"
        rm_fill "$dir"
        sp_cg_throttle "$(cat "/sys/block/$l/dev")" "$RM_IOPS"
done

# 1. Before: the state the filesystems captured at mount.
for fs in "${fss[@]}"; do
        dir=$SP_TMP/mnt-$fs
        want_before=$([ "${WANT[$fs]}" = on ] && echo off || echo on)
        sp_wait_for 2000 "$fs tracked as effective $want_before" \
                sp_state_is "$(rm_fsq "$dir") | [.effective, .pending] | map(tostring) | join(\" \")" "$want_before false" >/dev/null
        BEFORE[$fs]=$(sp_measure "$dir/page" "$RM_REWRITES")
        sp_log "$fs, mounted with stable writes $want_before: ${BEFORE[$fs]}"
done

# 2. The policy changes its mind: flags written, mounts pending, and left mounted.
dropin=
for fs in "${fss[@]}"; do
        dropin="${dropin}[Device ${LOOP[$fs]}]
StableWrites=${WANT[$fs]}
"
done
sp_dropin 50-flip.conf "$dropin"
sp_daemon_reload
for fs in "${fss[@]}"; do
        dir=$SP_TMP/mnt-$fs
        sp_wait_for 2000 "${LOOP[$fs]} flag flipped" sp_flag_is "${LOOP[$fs]}" "$([ "${WANT[$fs]}" = on ] && echo 1 || echo 0)" >/dev/null
        sp_wait_for 2000 "$fs pending" \
                sp_state_is "$(rm_fsq "$dir") | [(.pending | tostring), .reason] | join(\"/\")" "true/takes effect at next mount" >/dev/null
        UID0[$fs]=$(rm_unique_id "$dir") || sp_fail "cannot read the mount id of $dir"
        OPTS[$fs]=$(rm_options "$dir")
done
sleep 0.5
for fs in "${fss[@]}"; do
        [ "$(rm_unique_id "$SP_TMP/mnt-$fs")" = "${UID0[$fs]}" ] ||
                sp_fail "$fs was cycled although ApplyMounted=next-mount and nobody asked"
done

# 3. The administrator asks for the cycle.
rm_monitor_start
names=()
for fs in "${fss[@]}"; do names+=("${LOOP[$fs]}"); done
start=$(sp_now_ms)
out=$("$RM_CTL" --no-pager apply "${names[@]}" --remount 2>&1) || sp_fail "apply --remount failed: $out"
sp_log "apply --remount took $(($(sp_now_ms) - start)) ms:"
sed 's/^/#   /' <<<"$out"

fail=0
for fs in "${fss[@]}"; do
        dir=$SP_TMP/mnt-$fs
        grep -q "^$dir ($fs on ${LOOP[$fs]}): unmounted and mounted again in .*stable writes now ${WANT[$fs]}" <<<"$out" ||
                sp_fail "apply --remount did not report the cycle of $dir"
        rm_is_mounted "$dir" || sp_fail "$dir is not mounted after its cycle"
        UID1[$fs]=$(rm_unique_id "$dir")
        [ "${UID1[$fs]}" != "${UID0[$fs]}" ] || sp_fail "$dir: still the same mount (unique id ${UID0[$fs]})"
        [ "$(rm_options "$dir")" = "${OPTS[$fs]}" ] ||
                sp_fail "$dir: options changed: '${OPTS[$fs]}' -> '$(rm_options "$dir")'"
        rm_verify "$dir"
        sp_wait_for 2000 "$fs effective ${WANT[$fs]}, observed, not pending" \
                sp_state_is "$(rm_fsq "$dir") | [.effective, .origin, (.pending | tostring)] | join(\" \")" "${WANT[$fs]} observed false" >/dev/null
        sp_wait_for 2000 "RemountFinished for $dir" grep -q "^remount  $dir on ${LOOP[$fs]}: ok" "$SP_TMP/monitor.log" >/dev/null
        dur=$(sed -n "s|^remount  $dir on ${LOOP[$fs]}: ok (\\([0-9.]*\\) ms).*|\\1|p" "$SP_TMP/monitor.log")
        sp_log "$fs: mount unique id ${UID0[$fs]} -> ${UID1[$fs]}, options '${OPTS[$fs]}' kept, checksums match, cycle $dur ms"
done
sp_log_has_since 0 "unmounted and mounted again in .* ms" || sp_fail "the cycles were not logged"

# 4. After: the new state is the one in force.
for fs in "${fss[@]}"; do
        AFTER[$fs]=$(sp_measure "$SP_TMP/mnt-$fs/page" "$RM_REWRITES")
        sp_log "$fs, after the cycle (stable writes ${WANT[$fs]}): ${AFTER[$fs]}"
done
for fs in "${fss[@]}"; do
        b=$(sp_field rewrite_avg_us "${BEFORE[$fs]}")
        a=$(sp_field rewrite_avg_us "${AFTER[$fs]}")
        w=$(sp_field inflight_avg_us "${AFTER[$fs]}")
        sp_log "$fs: average stall per rewrite $b us before the cycle, $a us after (writeback still in flight for $w us)"
        [ "$fs" = btrfs ] && continue
        ((b >= 10000)) || { echo "FAIL: $fs: no stall measured with stable writes on ($b us)" >&2; fail=1; }
        ((a < 2000)) || { echo "FAIL: $fs: still stalling after the cycle ($a us)" >&2; fail=1; }
        ((w >= 10000)) || { echo "FAIL: $fs: the page was not under writeback when rewritten ($w us)" >&2; fail=1; }
done
((fail == 0)) || sp_fail "stall measurements do not show the new state after the cycle"
sp_log "remount cycle: ok"
