#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Overrides follow disks, not kernel names (issue 14, item 5), with the real daemon on a
# private system bus with the real polkitd, stablepagesctl, and the one-shot udev applier
# (stablepagesd apply, as 60-stablepages.rules runs it):
#
# 1. zram, runtime: "set zramN off --force --runtime" turns it off and is shown bound to the
#    disk's diskseq; zramN hot-removed and hot-added under the same name (the kernel hands
#    out the lowest free number) reads stable_writes 1 after the applier and after the
#    daemon ran; the daemon logged the override as dropped with its disk. Again with the
#    daemon killed (kill -9) before the removal, so that the stale override is still in
#    /run when the applier meets the new disk: still 1, and the restarted daemon drops it.
# 2. loop, persistent, bound to what a loop device is (its backing file: udev 252 gives loop
#    devices no ID_SERIAL or other ID, the sysfs attribute loop/backing_file is the one
#    identity it has): "set loopN off" writes a drop-in bound to the file; loopN re-attached
#    to another file reads 1 (the name-bound baseline of the admin's own [Device loopN]) after
#    the applier and the daemon; the file attached as loopM takes its override with it, and
#    "reset loopM" removes that drop-in, says so, and a second reset fails.
# 3. loop, persistent, bound by serial: udev database entries with ID_SERIAL (the test's
#    own --udev-data-dir, written as udevd writes /run/udev/data: no udevd runs here) make
#    two loop devices two serial disks A and B. A at loopP gets "set off"; A moves to loopQ,
#    B takes loopP: B reads 1, A reads 0 (applier and daemon); "set loopP on" for B writes B's
#    own drop-in, replaces the one an earlier version wrote for B under its old kernel name,
#    and leaves A's byte for byte; reset of a disk without override exits 1.
# 4. A disk with no stable identity (zram): a persistent set is refused, exit 1, and says
#    what to do; --bind=name binds it to the kernel name on purpose; --bind=name --runtime
#    is a usage error (exit 2).
#
# Usage: test-overrides-identity.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
source "$(dirname "$0")/robust-lib.sh"
robust_setup --bus-polkit "$@"
[ -w /sys/class/zram-control/hot_add ] || sp_skip "no /sys/class/zram-control (zram module not loaded)"

SP_UDEV=$SP_TMP/udev
mkdir -p "$SP_UDEV"
ctl() { "$SP_CTL" --no-pager "$@"; }
# The one-shot applier, as the udev rule runs it, on the test's state and udev database.
apply_now() {
        "$SP_BIN" --config-dir="$SP_ETC" --runtime-dir="$SP_RUNTIME" --udev-data-dir="$SP_UDEV" \
                --log-target=console apply "$@" 2>&1
}
# run VAR CMD...: runs CMD, its output (stdout and stderr) in VAR and its exit status in rc.
out='' rc=0
run() {
        local -n _out=$1
        shift
        rc=0
        _out=$("$@" 2>&1) || rc=$?
}
dev() { sp_state ".devices[] | select(.name == \"$1\") | $2"; }
dev_is() { sp_state_is ".devices[] | select(.name == \"$1\") | $2" "$3"; }
diskseq() { cat "/sys/block/$1/diskseq"; }

# --- zram devices: only the ones this test holds are ever removed ------------------------
# (No subshells here: ZRAMS must see every device the test holds, or cleanup would leave it.)
declare -A ZRAMS=()
ZRAM_ADDED=
# zram_add: hot-adds a zram device; its number in ZRAM_ADDED.
zram_add() {
        ZRAM_ADDED=$(cat /sys/class/zram-control/hot_add) || sp_fail "cannot hot-add a zram device"
        ZRAMS[$ZRAM_ADDED]=1
}
zram_remove() {
        echo "$1" >/sys/class/zram-control/hot_remove || sp_fail "cannot hot-remove zram$1"
        unset "ZRAMS[$1]"
}
zram_cleanup() {
        local id
        for id in "${!ZRAMS[@]}"; do echo "$id" >/sys/class/zram-control/hot_remove; done
}
sp_defer zram_cleanup
# zram_readd ID: hot-adds until the kernel hands out ID again (it gives the lowest free
# number: numbers below ID that are free now are held meanwhile, then given back).
zram_readd() {
        local want=$1 extra=() id
        while :; do
                zram_add
                [ "$ZRAM_ADDED" = "$want" ] && break
                extra+=("$ZRAM_ADDED")
                ((ZRAM_ADDED < want)) || sp_fail "zram$want was taken by someone else (got zram$ZRAM_ADDED)"
        done
        for id in "${extra[@]}"; do zram_remove "$id"; done
}

# --- loop devices ---------------------------------------------------------------------
declare -A LOOPS=()
# attach N FILE: attaches FILE as loopN (created when needed), detached and removed at exit.
attach() {
        [ -n "${LOOPS[$1]:-}" ] || { LOOPS[$1]=1; sp_defer "sp_loop_destroy $1"; }
        losetup "/dev/loop$1" "$2" || sp_fail "cannot attach $2 as loop$1"
}
detach() { losetup -d "/dev/loop$1" || sp_fail "cannot detach loop$1"; }
# udev_entry N [KEY=value...]: the udev database entry of loopN, as udevd writes it (none
# without properties).
udev_entry() {
        local n=$1 f="$SP_UDEV/b7:$1"
        shift
        rm -f "$f"
        [ $# -gt 0 ] || return 0
        { printf 'E:%s\n' "DEVNAME=/dev/loop$n" "DEVTYPE=disk" "$@"; } >"$f.tmp" && mv "$f.tmp" "$f"
}
for f in A B C D; do truncate -s 32M "$SP_TMP/file$f.img"; done

zram_add
zid=$ZRAM_ADDED
zram=zram$zid
n1=$(sp_free_loop_number)
attach "$n1" "$SP_TMP/fileA.img"
n2=$(sp_free_loop_number)
attach "$n2" "$SP_TMP/fileC.img" # a placeholder, so that the number stays ours
detach "$n2"
n3=$(sp_free_loop_number)
udev_entry "$n3" "ID_SERIAL=SP_TEST_DISK_A_$$"
attach "$n3" "$SP_TMP/fileC.img"
n4=$(sp_free_loop_number)
udev_entry "$n4" "ID_SERIAL=SP_TEST_DISK_B_$$"
attach "$n4" "$SP_TMP/fileD.img"
l1=loop$n1 l2=loop$n2 l3=loop$n3 l4=loop$n4

# Policy latency: zram (required) on, loops (need none) off; the admin's own baseline turns
# loopN1 and loopN3 on by name (what a careful admin may write by hand).
sp_config "[Manager]
Policy=latency
Devices=$zram $l1 $l2 $l3 $l4
RescanSec=0"
sp_dropin 50-admin.conf "[Device $l1]
StableWrites=on

[Device $l3]
StableWrites=on"
robust_daemon_start --udev-data-dir="$SP_UDEV"
sp_wait_for 2000 "$zram and $l4 in the daemon's view" dev_is "$l4" .name "$l4" >/dev/null

# --- 1. zram, runtime override --------------------------------------------------------
seq1=$(diskseq "$zram")
run out ctl set "$zram" off --force --runtime --apply
{ [ $rc -eq 0 ] && sp_flag_is "$zram" 0; } || sp_fail "set $zram off --force --runtime --apply: rc=$rc flag=$(sp_flag "$zram"): $out"
grep -q "runtime: until the disk goes away, bound to diskseq $seq1" <<<"$out" || sp_fail "set does not say what it is bound to: $out"
run out ctl status "$zram"
grep -Eq "^$zram +off \(force\) +runtime +diskseq $seq1 +$SP_RUNTIME/overrides$" <<<"$out" ||
        sp_fail "status does not show the binding: $out"
run out ctl explain "$zram"
grep -q "binding: runtime, bound to this disk (diskseq $seq1) until it goes away" <<<"$out" ||
        sp_fail "explain does not show the binding: $out"
[ "$(busctl --system get-property org.stablepages1 "/org/stablepages1/device/$zram" org.stablepages1.Device OverrideBinding)" = "s \"diskseq $seq1\"" ] ||
        sp_fail "the D-Bus property OverrideBinding is not diskseq $seq1"
[ "$(ctl --json=short status "$zram" | jq -r '.[0].override | [.scope, .bound_to, .setting, .force] | map(tostring) | join(" ")')" = "runtime diskseq $seq1 off true" ] ||
        sp_fail "status --json does not show the binding: $(ctl --json=short status "$zram")"
sp_log "zram: $zram (diskseq $seq1) off by a runtime override bound to diskseq $seq1"

zram_remove "$zid"
sp_wait_for 2000 "the daemon dropping the override of the removed $zram" \
        grep -q "$zram: runtime override off (force) dropped: the disk it was set on (diskseq $seq1) is gone" "$SP_TMP/daemon.log" >/dev/null
grep -q "diskseq=$seq1 " "$SP_RUNTIME/overrides" && sp_fail "the override of the removed disk is still in $SP_RUNTIME/overrides"
zram_readd "$zid"
seq2=$(diskseq "$zram")
[ "$seq2" != "$seq1" ] || sp_fail "the new $zram has the old diskseq"
run out apply_now "$zram"
{ [ $rc -eq 0 ] && sp_flag_is "$zram" 1; } || sp_fail "applier on the new $zram: rc=$rc flag=$(sp_flag "$zram"): $out"
sp_wait_for 2000 "the daemon's view of the new $zram (diskseq $seq2)" dev_is "$zram" .diskseq "$seq2" >/dev/null
dev_is "$zram" '[.desired, .stable_writes, .override] | map(tostring) | join(" ")' "on 1 null" ||
        sp_fail "the daemon's view of the new $zram: $(dev "$zram" .)"
sp_flag_is "$zram" 1 || sp_fail "the new $zram reads $(sp_flag "$zram") after the daemon ran"
sp_log "zram: removed and added again as $zram (diskseq $seq2): stable_writes 1 after the applier and the daemon"

# The same with the daemon dead when the disk goes: the stale override stays in /run.
run out ctl set "$zram" off --force --runtime --apply
{ [ $rc -eq 0 ] && sp_flag_is "$zram" 0; } || sp_fail "second set: rc=$rc: $out"
kill -KILL "$SP_PID"
wait "$SP_PID" 2>/dev/null || true
grep -q "^diskseq=$seq2 $zram off force$" "$SP_RUNTIME/overrides" || sp_fail "no override bound to diskseq $seq2 in /run"
zram_remove "$zid"
zram_readd "$zid"
seq3=$(diskseq "$zram")
run out apply_now "$zram"
{ [ $rc -eq 0 ] && sp_flag_is "$zram" 1; } || sp_fail "applier with the stale override: rc=$rc flag=$(sp_flag "$zram"): $out"
grep -q "on -> off" <<<"$out" && sp_fail "the applier turned the new $zram off: $out"
off=$(sp_lines "$SP_TMP/daemon.log")
robust_daemon_start --udev-data-dir="$SP_UDEV"
sp_log_has_since "$off" "$zram: runtime override off \\(force\\) dropped: the disk it was set on \\(diskseq $seq2\\) is gone; $zram is another disk now \\(diskseq $seq3\\)" ||
        sp_fail "the restarted daemon did not drop the stale override"
{ sp_flag_is "$zram" 1 && dev_is "$zram" '.override' null; } || sp_fail "the new $zram after the restart: $(dev "$zram" .)"
grep -q " $zram " "$SP_RUNTIME/overrides" && sp_fail "the stale override is still in /run"
sp_log "zram: with the daemon killed: the applier left the new $zram (diskseq $seq3) at 1; the restarted daemon dropped the stale override"

# --- 2. loop, persistent, bound to the backing file ------------------------------------
sp_flag_is "$l1" 1 || sp_fail "$l1 is not on by the admin's [Device $l1]"
run out ctl set "$l1" off --apply
{ [ $rc -eq 0 ] && sp_flag_is "$l1" 0; } || sp_fail "set $l1 off --apply: rc=$rc: $out"
fileA=$SP_TMP/fileA.img
dropA="$SP_ETC/stablepages.conf.d/90-stablepagesctl-loop-${fileA//\//%2F}.conf"
grep -qx "\\[Device LOOP_BACKING_FILE=$SP_TMP/fileA.img\\]" "$dropA" ||
        sp_fail "no drop-in bound to the backing file: $(ls "$SP_ETC/stablepages.conf.d"): $out"
grep -q "persistent: bound to \\[Device LOOP_BACKING_FILE=$SP_TMP/fileA.img\\] in $dropA" <<<"$out" || sp_fail "set does not say what it is bound to: $out"
detach "$n1"
attach "$n1" "$SP_TMP/fileB.img"
run out apply_now "$l1"
{ [ $rc -eq 0 ] && sp_flag_is "$l1" 1; } || sp_fail "applier on $l1 re-attached to another file: rc=$rc flag=$(sp_flag "$l1"): $out"
sp_wait_for 2000 "the daemon's view of $l1 on fileB" dev_is "$l1" .facts.loop_backing_file "$SP_TMP/fileB.img" >/dev/null
dev_is "$l1" '[.desired, .override.bound_to] | join(" ")' "on kernel name $l1" || sp_fail "the daemon's view of $l1: $(dev "$l1" .)"
sp_flag_is "$l1" 1 || sp_fail "$l1 on another file reads $(sp_flag "$l1") after the daemon ran"
sp_log "loop: $l1 re-attached to another file: 1 after the applier and the daemon (the admin's [Device $l1], not the file's override)"
attach "$n2" "$SP_TMP/fileA.img"
echo 1 >"/sys/block/$l2/queue/stable_writes"
run out apply_now "$l2"
{ [ $rc -eq 0 ] && sp_flag_is "$l2" 0; } || sp_fail "the override did not follow fileA to $l2: rc=$rc: $out"
sp_wait_for 2000 "the daemon's view of $l2" dev_is "$l2" .override.bound_to "LOOP_BACKING_FILE=$SP_TMP/fileA.img" >/dev/null
run out ctl reset "$l2"
{ [ $rc -eq 0 ] && [ "$out" = "$l2: removed persistent override $dropA" ]; } || sp_fail "reset $l2: rc=$rc: $out"
[ ! -e "$dropA" ] || sp_fail "reset left $dropA"
run out ctl reset "$l2"
{ [ $rc -eq 1 ] && grep -q "^error: $l2: no override to remove" <<<"$out"; } || sp_fail "second reset $l2: rc=$rc: $out"
sp_log "loop: fileA took its override to $l2; reset $l2 removed it, a second reset exited 1"

# --- 3. loop, persistent, bound by serial -------------------------------------------------
sp_flag_is "$l3" 1 || sp_fail "$l3 (disk A) is not on by the admin's [Device $l3]"
run out ctl set "$l3" off --apply
{ [ $rc -eq 0 ] && sp_flag_is "$l3" 0; } || sp_fail "set $l3 off: rc=$rc: $out"
dropSA="$SP_ETC/stablepages.conf.d/90-stablepagesctl-serial-SP_TEST_DISK_A_$$.conf"
grep -qx "\\[Device ID_SERIAL=SP_TEST_DISK_A_$$\\]" "$dropSA" || sp_fail "no drop-in bound to serial A: $out"
sumA=$(md5sum <"$dropSA")
# A moves to loopN4's number and B to loopN3's, as disks do between boots.
udev_entry "$n3"
udev_entry "$n4"
detach "$n3"
detach "$n4"
udev_entry "$n3" "ID_SERIAL=SP_TEST_DISK_B_$$"
attach "$n3" "$SP_TMP/fileD.img"
udev_entry "$n4" "ID_SERIAL=SP_TEST_DISK_A_$$"
attach "$n4" "$SP_TMP/fileC.img"
echo 1 >"/sys/block/$l4/queue/stable_writes"
run out apply_now "$l3" "$l4"
{ [ $rc -eq 0 ] && sp_flag_is "$l3" 1 && sp_flag_is "$l4" 0; } ||
        sp_fail "applier after the move: rc=$rc $l3=$(sp_flag "$l3") (want 1) $l4=$(sp_flag "$l4") (want 0): $out"
sp_wait_for 2000 "the daemon's view of A on $l4" dev_is "$l4" .override.bound_to "ID_SERIAL=SP_TEST_DISK_A_$$" >/dev/null
sp_wait_for 2000 "the daemon's view of B on $l3" dev_is "$l3" .override.bound_to "kernel name $l3" >/dev/null
{ sp_flag_is "$l3" 1 && sp_flag_is "$l4" 0; } || sp_fail "after the daemon ran: $l3=$(sp_flag "$l3") $l4=$(sp_flag "$l4")"
# An earlier version named its drop-in after the kernel name B had then (loopN4): set
# replaces it, says so, and leaves A's alone.
legacyB="$SP_ETC/stablepages.conf.d/90-stablepagesctl-$l4.conf"
printf '# Written by stablepagesctl set %s off; removed by stablepagesctl reset.\n[Device ID_SERIAL=SP_TEST_DISK_B_%s]\nStableWrites=off\n' \
        "$l4" "$$" >"$legacyB"
run out ctl set "$l3" on --apply
{ [ $rc -eq 0 ] && sp_flag_is "$l3" 1; } || sp_fail "set $l3 (disk B) on: rc=$rc: $out"
{ grep -q "replaced persistent override $legacyB" <<<"$out" && [ ! -e "$legacyB" ]; } ||
        sp_fail "set for disk B did not replace the drop-in an earlier version wrote for it: $out"
[ "$(md5sum <"$dropSA")" = "$sumA" ] || sp_fail "set for disk B changed disk A's drop-in"
grep -qx "\\[Device ID_SERIAL=SP_TEST_DISK_B_$$\\]" "$SP_ETC/stablepages.conf.d/90-stablepagesctl-serial-SP_TEST_DISK_B_$$.conf" ||
        sp_fail "no drop-in of its own for disk B: $(ls "$SP_ETC/stablepages.conf.d")"
sp_flag_is "$l4" 0 || sp_fail "disk A ($l4) lost its override"
run out ctl reset "$l4"
{ [ $rc -eq 0 ] && [ "$out" = "$l4: removed persistent override $dropSA" ]; } || sp_fail "reset $l4 (disk A, set as $l3): rc=$rc: $out"
run out ctl reset "$l4"
{ [ $rc -eq 1 ] && grep -q "^error: $l4: no override to remove: no runtime override is bound to this disk (diskseq $(diskseq "$l4")) and no drop-in of stablepagesctl matches it" <<<"$out"; } ||
        sp_fail "reset of $l4 without override: rc=$rc: $out"
run out ctl reset "$l4" --runtime
{ [ $rc -eq 1 ] && grep -q "^error: $l4: no override to remove" <<<"$out"; } || sp_fail "reset --runtime of $l4 without override: rc=$rc: $out"
sp_log "serial: A moved from $l3 to $l4 kept its off, B on $l3 read 1; set for B left A's drop-in as it was; reset of A removed it, again exited 1"

# --- 4. no stable identity --------------------------------------------------------------
run out ctl set "$zram" on
{ [ $rc -eq 1 ] && grep -q "^error: $zram: no stable identity to bind a persistent override to" <<<"$out" &&
        grep -q -- "--bind=name" <<<"$out"; } || sp_fail "persistent set on $zram: rc=$rc: $out"
for f in "$SP_ETC/stablepages.conf.d"/*"$zram"*; do [ -e "$f" ] && sp_fail "a drop-in was written for $zram: $f"; done
run out ctl set "$zram" on --bind=name --runtime
[ $rc -eq 2 ] || sp_fail "--bind=name --runtime: rc=$rc, want 2: $out"
run out ctl set "$zram" on --bind=name
dropZ="$SP_ETC/stablepages.conf.d/90-stablepagesctl-name-$zram.conf"
{ [ $rc -eq 0 ] && grep -qx "\\[Device $zram\\]" "$dropZ"; } || sp_fail "set --bind=name: rc=$rc: $out"
run out ctl status
grep -Eq "^$zram +on +config +kernel name $zram +$dropZ:3$" <<<"$out" || sp_fail "status after --bind=name: $out"
run out ctl reset "$zram"
{ [ $rc -eq 0 ] && [ ! -e "$dropZ" ]; } || sp_fail "reset $zram: rc=$rc: $out"
sp_log "no identity: persistent set on $zram refused (exit 1); --bind=name written and reset"

sp_daemon_stop
sp_log "overrides-identity: ok"
