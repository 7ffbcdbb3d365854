#!/bin/bash
# The udev rule runs the one-shot applier for block add/change events of disks and
# partitions (issue 2), and imports what udev-facts records of a loop device (the device under
# its backing file). No udevd runs on this machine, so the rule is evaluated with
# `udevadm test` (which prints the RUN list without running it) from a temporary rules
# file in /run/udev/rules.d, and the command it would run is then run, proving that the
# flag is set as the configuration asks. Everything the test creates is removed.
set -uo pipefail
SPD=${1:-${STABLEPAGESD:-stablepagesd}}
# udev runs an IMPORT{program} with a relative path from its own directory: make it absolute.
[[ $SPD != */* ]] || SPD=$(realpath "$SPD")
SRC=${SRC:-$(cd "$(dirname "$0")/../.." && pwd)}

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (loop devices, /run/udev/rules.d)"; exit 77; }
command -v udevadm >/dev/null || { echo "SKIP: udevadm missing"; exit 77; }
if [ -e /run/udev/control ]; then
        echo "SKIP: systemd-udevd runs here: the rule would act on every device for real"
        exit 77
fi

tmp=$(mktemp -d /tmp/stablepages-udev.XXXXXX)
loop=""
had_run_udev=0; [ -d /run/udev ] && had_run_udev=1
rules=/run/udev/rules.d/60-stablepages-test-$$.rules
cleanup() {
        rm -f "$rules"
        [ $had_run_udev -eq 0 ] && rm -rf /run/udev
        [ -n "$loop" ] && losetup -d "/dev/$loop" 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

truncate -s 64M "$tmp/backing"
loop=$(basename "$(losetup --find --show "$tmp/backing")") || exit 1
backing_dev=$(stat -c '%Hd:%Ld' "$tmp/backing")
mkdir -p /run/udev/rules.d "$tmp/etc"
# The installed rule runs @SBINDIR@/stablepagesd; here it runs the built binary with the
# test's configuration and runtime directory.
sed "s|@SBINDIR@/stablepagesd|$SPD --config-dir=$tmp/etc --runtime-dir=$tmp/run|" \
        "$SRC/units/60-stablepages.rules" > "$rules"
printf '[Manager]\nDevices=%s\n[Device %s]\nStableWrites=on\n' "$loop" "$loop" > "$tmp/etc/stablepages.conf"

for action in add change; do
        out=$(udevadm test --action=$action "/sys/block/$loop" 2>&1)
        # Only this test's rule: an installed 60-stablepages.rules (scripts/run) runs too.
        run=$(grep -F -- "--config-dir=$tmp/etc " <<<"$out" | sed -n "s/^run: '\(.*stablepagesd.* apply --action=$action $loop\)'$/\1/p")
        [ -n "$run" ] || { fail "rule does not run the applier for $action of $loop"; echo "$out" | tail -5; continue; }
        # A loop device: the rule imports the device under its backing file, for its diskseq
        # (the import of a device-mapper table is tested in tests/vm: dm-integrity).
        grep -q "udev-facts $loop" <<<"$out" || fail "the rule does not import udev-facts for $action of $loop"
        grep -qx "STABLEPAGES_LOOP_BACKING_DEVNUM=$backing_dev" <<<"$out" &&
                grep -qx "STABLEPAGES_LOOP_DISKSEQ=$(cat "/sys/block/$loop/diskseq")" <<<"$out" ||
                fail "$action: udev did not import the device $backing_dev under $loop's backing file: $(grep STABLEPAGES_ <<<"$out")"
        echo 0 > "/sys/block/$loop/queue/stable_writes"
        # shellcheck disable=SC2086
        log=$($run 2>&1) || fail "the rule's command exited $?: $run: $log"
        [ "$(cat /sys/block/$loop/queue/stable_writes)" = 1 ] || fail "$action: flag not set by the rule's command"
        # The flag found at the add is the kernel's own (the disk's history); the 0 written
        # before the change is another program's, said and recorded.
        if [ $action = add ]; then
                grep -q "^first=0 add " "$tmp/run/history/$loop" ||
                        fail "add: the history does not record the flag at the add: $(cat "$tmp/run/history/$loop" 2>&1)"
        else
                grep -q "$loop: queue/stable_writes changed from 1 to 0 outside stablepages" <<<"$log" ||
                        fail "change: the applier did not say the flag changed without it: $log"
                grep -q "^change=0 .* other$" "$tmp/run/history/$loop" || fail "change: the other program's 0 is not in the history"
        fi
done
# Events of other subsystems do not run it.
out=$(udevadm test --action=add /sys/class/mem/null 2>&1)
grep -q "stablepagesd" <<<"$out" && fail "the rule runs for a non-block device"

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"
