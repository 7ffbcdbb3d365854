#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A forced setting is bound to a disk, never to a slot: a forced off must never reach another
# disk (stablepagesctl(1), stablepages.conf(5) PERSISTENT OVERRIDES). With the real daemon on
# a private system bus, stablepagesctl, and the one-shot applier (stablepagesd apply, as
# 60-stablepages.rules runs it), on a zram device (need required: its flag is 1) whose udev
# database entry (the test's own --udev-data-dir, written as udevd writes /run/udev/data) gives
# it a slot (ID_PATH) and, later, a serial:
#
# 1. Only a slot: "set zramN off --force" (persistent) is refused with exit 1, naming the disk,
#    the slot and --runtime; no drop-in is written; the flag stays 1. "--force --bind=name" is
#    a usage error (exit 2), and the D-Bus call with both flags is InvalidArgs naming the disk.
# 2. Force=yes written by hand on a slot ([Device ID_PATH=...]) and on a kernel name glob
#    ([Device zram*]): check-config exits 1 with both file:line errors; the applier reports
#    them and refuses (exit 1, flag 1); the daemon started on it reports them and leaves the
#    flag at 1 (refused, not forced).
# 3. The disk's own serial: "set zramN off --force --apply" writes a drop-in bound to the
#    serial with Force=yes and turns the flag off; another disk in that slot and under that
#    name (zramN removed and added again, the same ID_PATH, another serial) reads 1 after the
#    applier and after the daemon ran.
#
# Usage: test-overrides-force.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
source "$(dirname "$0")/robust-lib.sh"
robust_setup --bus "$@"
[ -w /sys/class/zram-control/hot_add ] || sp_skip "no /sys/class/zram-control (zram module not loaded)"

SP_UDEV=$SP_TMP/udev
mkdir -p "$SP_UDEV"
DROPINS=$SP_ETC/stablepages.conf.d
ctl() { "$SP_CTL" --no-pager "$@"; }
apply_now() {
        "$SP_BIN" --config-dir="$SP_ETC" --runtime-dir="$SP_RUNTIME" --udev-data-dir="$SP_UDEV" \
                --log-target=console apply "$@" 2>&1
}
out='' rc=0
dev_is() { sp_state_is ".devices[] | select(.name == \"$1\") | $2" "$3"; }
no_dropin() {
        local f
        for f in "$DROPINS"/90-stablepagesctl-*; do
                [ -e "$f" ] && sp_fail "$1: a drop-in was written: $f: $(cat "$f")"
        done
        return 0
}

declare -A ZRAMS=()
zram_cleanup() {
        local id
        for id in "${!ZRAMS[@]}"; do echo "$id" >/sys/class/zram-control/hot_remove; done
}
sp_defer zram_cleanup
zid=$(cat /sys/class/zram-control/hot_add) || sp_fail "cannot hot-add a zram device"
ZRAMS[$zid]=1
zram=zram$zid
# udev_entry [KEY=value...]: the udev database entry of zramN.
udev_entry() {
        local f
        f="$SP_UDEV/b$(cat "/sys/block/$zram/dev")"
        { printf 'E:%s\n' "DEVNAME=/dev/$zram" "DEVTYPE=disk" "$@"; } >"$f.tmp" && mv "$f.tmp" "$f"
}
slot="ID_PATH=platform-sptest-$$-slot-1"
udev_entry "$slot"

sp_config "[Manager]
Policy=latency
Devices=$zram
RescanSec=0"
robust_daemon_start --udev-data-dir="$SP_UDEV"
sp_wait_for 2000 "$zram in the daemon's view" dev_is "$zram" .name "$zram" >/dev/null
sp_flag_is "$zram" 1 || sp_fail "$zram does not read 1 at start: $(sp_flag "$zram")"

# --- 1. a disk with only a slot: a persistent forced override is refused ------------------
sp_run out ctl set "$zram" off --force --apply
{ [ $rc -eq 1 ] && grep -q "^error: $zram: refusing a persistent forced override" <<<"$out" &&
        grep -qF "$slot names the slot, not the disk" <<<"$out" && grep -q -- "--runtime --force" <<<"$out"; } ||
        sp_fail "set $zram off --force (only a slot): rc=$rc: $out"
sp_flag_is "$zram" 1 || sp_fail "$zram reads $(sp_flag "$zram") after the refused forced set"
no_dropin "set --force on a slot"
sp_log "slot only: set $zram off --force refused: $out"
sp_run out ctl set "$zram" off --force --bind=name --apply
{ [ $rc -eq 2 ] && grep -q "never bound to the kernel name" <<<"$out"; } || sp_fail "set --force --bind=name: rc=$rc: $out"
sp_run out robust_call SetDevicePolicy string:"$zram" string:off uint64:$((2 | 4 | 8))
{ [ $rc -ne 0 ] && grep -q "^Error org.freedesktop.DBus.Error.InvalidArgs: $zram: a forced override is never bound to the kernel name" <<<"$out"; } ||
        sp_fail "SetDevicePolicy with force and bind-name: rc=$rc: $out"
sp_flag_is "$zram" 1 || sp_fail "$zram reads $(sp_flag "$zram") after the refused --bind=name"
no_dropin "set --force --bind=name"
sp_log "bind=name: refused by stablepagesctl (exit 2) and over D-Bus: $out"

# --- 2. Force=yes written by hand on a slot and on a kernel name ---------------------------
sp_daemon_stop
admin=$DROPINS/50-admin.conf
sp_dropin 50-admin.conf "[Device $zram]
StableWrites=off
[Device $slot]
Force=yes
[Device zram*]
Force=yes"
sp_run out "$SP_CTL" --config-dir="$SP_ETC" check-config
{ [ $rc -eq 1 ] && grep -qF "$admin:4: error: Force=yes in [Device $slot]: ID_PATH names a slot" <<<"$out" &&
        grep -qF "$admin:6: error: Force=yes in [Device zram*]: a kernel name goes to whichever disk takes it" <<<"$out"; } ||
        sp_fail "check-config with Force=yes on a slot and a name: rc=$rc: $out"
sp_run out apply_now "$zram"
{ [ $rc -eq 1 ] && grep -qF "$admin:4:" <<<"$out" && grep -qF "$admin:6:" <<<"$out" &&
        grep -q "refusing to turn off stable writes on $zram: need is required" <<<"$out"; } ||
        sp_fail "the applier with Force=yes on a slot: rc=$rc: $out"
sp_flag_is "$zram" 1 || sp_fail "the applier forced $zram off through a slot"
off=$(sp_lines "$SP_TMP/daemon.log")
robust_daemon_start --udev-data-dir="$SP_UDEV"
sp_log_has_since "$off" "$admin:4: Force=yes in \\[Device $slot\\]" || sp_fail "the daemon did not report $admin:4"
sp_log_has_since "$off" "$admin:6: Force=yes in \\[Device zram\\*\\]" || sp_fail "the daemon did not report $admin:6"
dev_is "$zram" '[.desired, .refused, .stable_writes] | map(tostring) | join(" ")' "on true 1" ||
        sp_fail "the daemon's view of $zram with Force=yes on a slot: $(sp_state ".devices[] | select(.name == \"$zram\")")"
sp_flag_is "$zram" 1 || sp_fail "the daemon forced $zram off through a slot"
sp_log "hand-written Force=yes on a slot and a name: reported at $admin:4 and :6, nothing forced (applier and daemon)"

# --- 3. bound to the disk's own serial: forced, and for that disk only --------------------
# (The reload rescans the disks: the daemon reads the serial.)
rm -f "$admin"
udev_entry "$slot" "ID_SERIAL=SP_TEST_ZRAM_A_$$"
sp_run out ctl reload
[ $rc -eq 0 ] || sp_fail "reload without the admin's drop-in: rc=$rc: $out"
sp_run out ctl set "$zram" off --force --apply
dropA="$DROPINS/90-stablepagesctl-serial-SP_TEST_ZRAM_A_$$.conf"
{ [ $rc -eq 0 ] && sp_flag_is "$zram" 0; } || sp_fail "set $zram off --force (its serial): rc=$rc flag=$(sp_flag "$zram"): $out"
{ grep -qx "\\[Device ID_SERIAL=SP_TEST_ZRAM_A_$$\\]" "$dropA" && grep -qx "Force=yes" "$dropA"; } ||
        sp_fail "no forced drop-in bound to the serial: $(ls "$DROPINS"): $out"
sp_log "own serial: $out"
# Another disk in that slot, under that name.
echo "$zid" >/sys/class/zram-control/hot_remove || sp_fail "cannot hot-remove $zram"
unset "ZRAMS[$zid]"
extra=()
while :; do
        n=$(cat /sys/class/zram-control/hot_add) || sp_fail "cannot hot-add a zram device"
        ZRAMS[$n]=1
        [ "$n" = "$zid" ] && break
        ((n < zid)) || sp_fail "$zram was taken by someone else (got zram$n)"
        extra+=("$n")
done
for n in "${extra[@]}"; do echo "$n" >/sys/class/zram-control/hot_remove && unset "ZRAMS[$n]"; done
udev_entry "$slot" "ID_SERIAL=SP_TEST_ZRAM_B_$$"
sp_run out apply_now "$zram"
{ [ $rc -eq 0 ] && sp_flag_is "$zram" 1; } || sp_fail "the applier on another disk in the slot: rc=$rc flag=$(sp_flag "$zram"): $out"
sp_wait_for 2000 "the daemon's view of the new $zram" dev_is "$zram" .diskseq "$(cat "/sys/block/$zram/diskseq")" >/dev/null
sp_run out ctl apply "$zram"
sp_flag_is "$zram" 1 || sp_fail "the daemon turned the other disk in the slot off: $out"
dev_is "$zram" '[.desired, .stable_writes] | map(tostring) | join(" ")' "on 1" ||
        sp_fail "the daemon's view of the other disk: $(sp_state ".devices[] | select(.name == \"$zram\")")"
sp_log "another disk in the slot and the name: 1 after the applier and the daemon"

sp_daemon_stop
sp_log "overrides-force: ok"
