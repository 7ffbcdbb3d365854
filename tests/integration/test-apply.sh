#!/bin/bash
# The one-shot applier on real devices (issue 2): a declaring loop device is turned off by
# StableWrites=off; a zram device is protected by the interlock unless Force=yes (bound to
# the disk itself); a
# malformed configuration is reported with file:line and its valid lines still apply.
# Root only; creates and removes its own loop and zram devices.
set -uo pipefail
SPD=${1:-${STABLEPAGESD:-stablepagesd}}

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to create loop and zram devices"; exit 77; }
[ -e /sys/class/zram-control/hot_add ] || { echo "SKIP: no zram-control in this kernel"; exit 77; }
command -v losetup >/dev/null || { echo "SKIP: losetup missing"; exit 77; }

tmp=$(mktemp -d /tmp/stablepages-apply.XXXXXX)
loop="" zram=""
cleanup() {
        [ -n "$loop" ] && losetup -d "/dev/$loop" 2>/dev/null
        [ -n "$zram" ] && echo "${zram#zram}" > /sys/class/zram-control/hot_remove 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
flag() { cat "/sys/block/$1/queue/stable_writes"; }

mkdir -p "$tmp/etc/stablepages.conf.d" "$tmp/run"
truncate -s 64M "$tmp/backing"
loop=$(basename "$(losetup --find --show "$tmp/backing")") || { echo "losetup failed"; exit 1; }
zram=zram$(cat /sys/class/zram-control/hot_add) || { echo "zram hot_add failed"; exit 1; }
echo 64M > "/sys/block/$zram/disksize"

run_apply() { "$SPD" --config-dir="$tmp/etc" --runtime-dir="$tmp/run" apply "$@"; }

# 1. A loop device declaring stable writes (as a declaring driver would) is turned off.
echo 1 > "/sys/block/$loop/queue/stable_writes"
printf '[Manager]\nDevices=%s %s\n\n[Device %s]\nStableWrites=off\n' "$loop" "$zram" "$loop" \
        > "$tmp/etc/stablepages.conf.d/50-test.conf"
out=$(run_apply "$loop" 2>&1); rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "apply $loop exited $rc"
[ "$(flag "$loop")" = 0 ] || fail "$loop stable_writes reads $(flag "$loop"), want 0"
grep -q "$loop: stable writes on -> off" <<<"$out" || fail "no change logged for $loop"
# Idempotent: a second apply changes nothing and logs nothing.
out=$(run_apply "$loop" 2>&1); rc=$?
[ $rc -eq 0 ] && [ -z "$out" ] || fail "second apply: rc=$rc output: $out"

# 2. zram needs stable writes: the same config without Force=yes is refused.
printf '[Manager]\nDevices=%s %s\n\n[Device zram*]\nStableWrites=off\n' "$loop" "$zram" \
        > "$tmp/etc/stablepages.conf.d/50-test.conf"
out=$(run_apply "$zram" 2>&1); rc=$?
echo "$out"
[ $rc -ne 0 ] || fail "apply $zram without force exited 0"
grep -q "refusing to turn off stable writes on $zram: need is required" <<<"$out" ||
        fail "no interlock error for $zram"
[ "$(flag "$zram")" = 1 ] || fail "$zram stable_writes reads $(flag "$zram") after refusal, want 1"

# 3. With Force=yes in a section bound to the disk itself (a serial, in a udev database of the
# test's own, as udevd writes /run/udev/data) it changes, and the change is logged as a warning.
mkdir -p "$tmp/udev"
printf 'E:ID_SERIAL=SP_TEST_ZRAM_%s\n' "$$" >"$tmp/udev/b$(cat "/sys/block/$zram/dev")"
printf '[Manager]\nDevices=%s %s\n\n[Device zram*]\nStableWrites=off\n[Device ID_SERIAL=SP_TEST_ZRAM_%s]\nForce=yes\n' \
        "$loop" "$zram" "$$" > "$tmp/etc/stablepages.conf.d/50-test.conf"
out=$(run_apply --udev-data-dir="$tmp/udev" "$zram" 2>&1); rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "forced apply $zram exited $rc"
[ "$(flag "$zram")" = 0 ] || fail "$zram stable_writes reads $(flag "$zram") after force, want 0"
grep -q "^warning: $zram: stable writes on -> off.*FORCED" <<<"$out" || fail "forced change not warned"

# 4. A malformed configuration: every problem reported as file:line, valid lines apply.
echo 1 > "/sys/block/$loop/queue/stable_writes"
conf="$tmp/etc/stablepages.conf.d/50-test.conf"
cat > "$conf" <<CONF
[Manager]
Devices=$loop $zram
Policy=sometimes
[Nonsense]
Key=1
this line has no equals sign
[Device $loop]
StableWrites=maybe
StableWrites=off
CONF
ln -s /nonexistent/target "$tmp/etc/stablepages.conf.d/60-dangling.conf"
out=$(run_apply "$loop" 2>&1); rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "apply with malformed config exited $rc"
for want in "$conf:3:" "$conf:4:" "$conf:6:" "$conf:8:" "60-dangling.conf"; do
        grep -qF "$want" <<<"$out" || fail "no diagnostic mentioning $want"
done
[ "$(flag "$loop")" = 0 ] || fail "valid StableWrites=off line did not apply to $loop"

# 5. A name that is no block device: exit 4 and a message naming it.
out=$(run_apply nosuchdisk0 2>&1); rc=$?
[ $rc -eq 4 ] && grep -q "nosuchdisk0: no such block device" <<<"$out" || fail "unknown device: rc=$rc: $out"

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"
