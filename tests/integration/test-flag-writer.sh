#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# One writer of queue/stable_writes, and each disk's flag history (issue 30, points 4 and the
# choke point):
#   1. each path that writes the flag goes through the one writer: with the test hook
#      STABLEPAGES_TEST_FLAG_WRITE=refuse the udev applier, the daemon and restore leave the
#      flag as it was and name the hook; without it they write (the unmount + mount cycle's
#      paths are proven in the remount tests);
#   2. restore puts back what the kernel set where stablepages changed it, and nothing else;
#   3. a disk whose flag the kernel declared for a reason sysfs does not show (NVMe/TCP with a
#      data digest, on a captured sysfs tree of a guest) and which another program cleared:
#      required when its history recorded the 1 at its add (the applier writes it back and
#      says the flag moved without it); unknown, never none, when no history says what the
#      kernel set (and turned on); none when the history says the kernel set 0 at its add.
# Root; loop devices it creates; the captured tree is copied to a temp dir.
. "$(dirname "$0")/lib.sh"
sp_setup "$@"
SRC=${SRC:-$(cd "$SP_SRCDIR/../.." && pwd)}

n=$(sp_free_loop_number)
loop=loop$n
sp_loop_attach "$n" 64M
echo 0 >"/sys/block/$loop/queue/stable_writes"
sp_config "[Manager]
Devices=$loop

[Device $loop]
StableWrites=on"
spd() { "$SP_BIN" --config-dir="$SP_ETC" --runtime-dir="$SP_RUNTIME" "$@"; }

# 1. The applier.
out=$(STABLEPAGES_TEST_FLAG_WRITE=refuse spd apply "$loop" 2>&1) && sp_fail "the refused applier exited 0: $out"
sp_flag_is "$loop" 0 || sp_fail "the applier wrote the flag past the one writer"
grep -q "$loop: not writing 1 to queue/stable_writes: refused by the test hook .*(udev-applier)" <<<"$out" ||
        sp_fail "the applier's refusal does not name the hook: $out"
out=$(spd apply --action=add "$loop" 2>&1) || sp_fail "apply: $out"
sp_flag_is "$loop" 1 || sp_fail "the applier did not write the flag"
grep -q "^first=0 add .*" "$SP_RUNTIME/history/$loop" || sp_fail "no first sight at add: $(cat "$SP_RUNTIME/history/$loop")"
grep -q "^change=1 [0-9]* udev-applier$" "$SP_RUNTIME/history/$loop" || sp_fail "the applier's change is not in the history"
sp_log "applier: refused by the hook (flag unchanged), then wrote 1 and recorded it"

# ... the daemon.
echo 0 >"/sys/block/$loop/queue/stable_writes"
SP_DAEMON_ENV="STABLEPAGES_TEST_FLAG_WRITE=refuse" sp_daemon_start
sp_wait_for 3000 "the daemon's refusal in its log" \
        grep -q "$loop: not writing 1 to queue/stable_writes: refused by the test hook .*(stablepagesd)" "$SP_TMP/daemon.log" >/dev/null
sp_flag_is "$loop" 0 || sp_fail "the daemon wrote the flag past the one writer"
sp_daemon_stop
sp_daemon_start
sp_wait_for 3000 "the daemon turned $loop on" sp_flag_is "$loop" 1 >/dev/null
grep -q "^change=1 [0-9]* stablepagesd$" "$SP_RUNTIME/history/$loop" || sp_fail "the daemon's change is not in the history"
sp_daemon_stop
sp_log "daemon: refused by the hook (flag unchanged), then wrote 1 and recorded it"

# 2. restore: the kernel set 0 at the add.
out=$(STABLEPAGES_TEST_FLAG_WRITE=refuse spd restore "$loop" 2>&1) && sp_fail "the refused restore exited 0: $out"
sp_flag_is "$loop" 1 || sp_fail "restore wrote the flag past the one writer"
out=$(spd restore --all 2>&1) || sp_fail "restore --all: $out"
sp_flag_is "$loop" 0 || sp_fail "restore did not put back the kernel's 0: $out"
grep -q "^change=0 [0-9]* restore$" "$SP_RUNTIME/history/$loop" || sp_fail "the restore is not in the history"
out=$(spd -v restore "$loop" 2>&1) || sp_fail "a second restore: $out"
grep -q "$loop: stable writes off, as the kernel set them: nothing to restore" <<<"$out" || sp_fail "second restore: $out"
spd restore 2>/dev/null && sp_fail "restore with neither --all nor a disk exited 0"
sp_log "restore: refused by the hook, then the kernel's 0 put back, then nothing to do"

# 3. NVMe/TCP with a data digest (6.12 guest, captured): the path disk nvme0c0n1 and its
# multipath head nvme0n1, both declared by the kernel.
fake=$SP_TMP/nvme
mkdir -p "$fake"
cp -a "$SRC/tests/fixtures/vm-6.12-nvme-tcp-digest/." "$fake/"
krel=$(cat "$fake/kernel-release")
path=nvme0c0n1
fspd() {
        "$SP_BIN" --config-dir="$SP_TMP/fake-etc" --runtime-dir="$SP_TMP/fake-run" --sysfs-root="$fake/sys" \
                --udev-data-dir="$fake/run/udev/data" --kernel-release="$krel" "$@"
}
need_of() { fspd dump --json "$1" | jq -r '.[0].need'; }
mkdir -p "$SP_TMP/fake-etc"
printf '[Manager]\nPolicy=latency\n' >"$SP_TMP/fake-etc/stablepages.conf"

out=$(fspd apply --action=add "$path" 2>&1) || sp_fail "apply at the add of $path: $out"
echo 0 >"$fake/sys/block/$path/queue/stable_writes" # another program clears it
[ "$(need_of "$path")" = required ] || sp_fail "cleared after a recorded add: need $(need_of "$path"), want required"
out=$(fspd apply --action=change "$path" 2>&1) || sp_fail "apply at a change: $out"
grep -q "$path: queue/stable_writes changed from 1 to 0 outside stablepages" <<<"$out" ||
        sp_fail "the applier did not say the flag moved without it: $out"
[ "$(cat "$fake/sys/block/$path/queue/stable_writes")" = 1 ] || sp_fail "the applier did not write the 1 back"
sp_log "nvme-tcp, history from its add: cleared by another program -> required, said, written back"

rm -rf "$SP_TMP/fake-run"
echo 0 >"$fake/sys/block/$path/queue/stable_writes"
[ "$(need_of "$path")" = unknown ] || sp_fail "cleared, no history: need $(need_of "$path"), want unknown"
fspd dump --json "$path" | jq -r '.[0].reasons[0]' | grep -q "the flag the kernel set when $path appeared was not recorded" ||
        sp_fail "the unknown need does not say why: $(fspd dump --json "$path" | jq -r '.[0].reasons[0]')"
out=$(fspd apply "$path" 2>&1) || sp_fail "apply with no history: $out"
[ "$(cat "$fake/sys/block/$path/queue/stable_writes")" = 1 ] || sp_fail "unknown was not turned on"
sp_log "nvme-tcp, no history, reading 0 -> unknown (not none), turned on"

# The path disk is hidden: it gets no uevent of its own; the add of its multipath head records
# its flag as the kernel's too.
cp -a "$SRC/tests/fixtures/vm-6.12-nvme-tcp/sys/." "$fake/sys/"
rm -rf "$SP_TMP/fake-run"
out=$(fspd apply --action=add nvme0n1 2>&1) || sp_fail "apply at the add of the head nvme0n1 without digest: $out"
grep -q "^first=0 add " "$SP_TMP/fake-run/history/$path" ||
        sp_fail "the add of the head did not record its path's flag as the kernel's: $(cat "$SP_TMP/fake-run/history/$path" 2>&1)"
[ "$(need_of "$path")" = none ] || sp_fail "no digest, 0 at its add: need $(need_of "$path"), want none"
[ "$(need_of nvme0n1)" = none ] || sp_fail "no digest: the head's need $(need_of nvme0n1), want none"
sp_log "nvme-tcp without digest: the head's add records its hidden path's 0 -> none"
