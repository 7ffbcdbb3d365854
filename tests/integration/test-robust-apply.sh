#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The one-shot applier on a fake sysfs root with faults (issue 9): `stablepagesd apply
# --sysfs-root=...` for disks whose queue/stable_writes cannot be written (a directory, a
# FIFO, a planted symlink, a read-only file for an unprivileged caller), cannot be read (a value
# the kernel never writes), or that do not exist. Each failure is one error line that names
# the disk and the reason; the other disks named on the same command line are still
# applied; nothing blocks; the exit code is 0 (all as desired), 1 (a disk failed), 2 (bad
# usage) or 4 (no such disk, which wins over 1).
#
# (Write errors that need fault injection, EIO, EINVAL, EBUSY, and a disk removed in the
# middle of its apply, are in tests/unit/test-device.c.)
#
# Usage: test-robust-apply.sh [STABLEPAGESD]   (runs as any user; the unprivileged-user
# check needs root and is skipped otherwise)
set -uo pipefail
SPD=${1:-${STABLEPAGESD:-stablepagesd}}

tmp=$(mktemp -d /tmp/stablepages-robust-apply.XXXXXX)
trap 'rm -rf --one-file-system "$tmp"' EXIT
chmod 755 "$tmp"
root=$tmp/sys
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# A loop disk without a backing file (need none) whose flag reads 0.
mkdisk() { # NAME MINOR
        mkdir -p "$root/block/$1/queue" "$root/block/$1/loop" "$root/block/$1/holders" "$root/block/$1/slaves"
        echo "7:$2" >"$root/block/$1/dev"
        echo 0 >"$root/block/$1/queue/stable_writes"
        echo 0 >"$root/block/$1/loop/dio"
}
mkdisk loop1 1   # fine
mkdisk loop2 2   # a directory in place of the flag
rm "$root/block/loop2/queue/stable_writes" && mkdir "$root/block/loop2/queue/stable_writes"
mkdisk loop3 3   # a FIFO in place of the flag: no writer, no reader: must not block
rm "$root/block/loop3/queue/stable_writes" && mkfifo "$root/block/loop3/queue/stable_writes"
mkdisk loop4 4   # a value the kernel never writes
echo "maybe" >"$root/block/loop4/queue/stable_writes"
mkdisk loop5 5   # read-only attribute (for an unprivileged caller)
chmod 444 "$root/block/loop5/queue/stable_writes"
mkdisk loop6 6   # no switch at all (kernel < 5.10)
rm "$root/block/loop6/queue/stable_writes"
mkdisk loop7 7   # a symlink planted in place of the flag: never followed
rm "$root/block/loop7/queue/stable_writes" && echo 0 >"$tmp/victim" &&
        ln -s "$tmp/victim" "$root/block/loop7/queue/stable_writes"
mkdir -p "$tmp/etc" "$tmp/run"
chmod 777 "$tmp/run"
printf '[Manager]\nRescanSec=0\n[Device loop*]\nStableWrites=on\n' >"$tmp/etc/stablepages.conf"

apply() { # EXPECTED_RC PATTERN DISK...: runs apply, checks exit code and message
        local want=$1 pattern=$2 out rc
        shift 2
        out=$(timeout 10 "$SPD" --sysfs-root="$root" --config-dir="$tmp/etc" --runtime-dir="$tmp/run" \
                --udev-data-dir="" --kernel-release=6.18.0 --log-target=console apply "$@" 2>&1)
        rc=$?
        [ $rc -eq 124 ] && { fail "apply $*: blocked (killed after 10 s)"; return; }
        [ $rc -eq "$want" ] || fail "apply $*: exit $rc, want $want: $out"
        [ -z "$pattern" ] || grep -Eq -- "$pattern" <<<"$out" || fail "apply $*: no /$pattern/ in: $out"
        echo "# apply $* -> $rc: $(tr '\n' ' ' <<<"$out")"
}

apply 0 "" loop1
[ "$(cat "$root/block/loop1/queue/stable_writes")" = 1 ] || fail "loop1 was not written"
echo 0 >"$root/block/loop1/queue/stable_writes"
apply 1 '^error: loop2: queue/stable_writes: Is a directory$' loop2
apply 1 '^error: loop3: queue/stable_writes: unparsable value ""$' loop3
apply 1 '^error: loop4: queue/stable_writes: unparsable value "maybe"$' loop4
apply 1 '^error: loop6: the kernel has no queue/stable_writes for this device$' loop6
apply 1 '^error: loop7: cannot write 1 to queue/stable_writes: Too many levels of symbolic links$' loop7
[ "$(cat "$tmp/victim")" = 0 ] || fail "the write followed the planted symlink"
apply 4 '^error: nosuch9: no such block device under ' nosuch9
apply 2 '^error: Invalid device name "\.\./loop1"' ../loop1
apply 2 'apply needs at least one device name'
# One bad disk does not stop the others; no such disk wins over a failure.
apply 1 'loop3: queue/stable_writes: unparsable value' loop2 loop1 loop3
[ "$(cat "$root/block/loop1/queue/stable_writes")" = 1 ] || fail "loop1 was not written after loop2 failed"
echo 0 >"$root/block/loop1/queue/stable_writes"
apply 4 'nosuch9: no such block device' loop2 nosuch9 loop1
[ "$(cat "$root/block/loop1/queue/stable_writes")" = 1 ] || fail "loop1 was not written next to a missing disk"
# A sysfs root without block/ at all: nothing to apply, a clear error, exit 4.
mkdir -p "$tmp/empty"
out=$("$SPD" --sysfs-root="$tmp/empty" --config-dir="$tmp/etc" --runtime-dir="$tmp/run" --udev-data-dir="" \
        --kernel-release=6.18.0 apply loop1 2>&1); rc=$?
[ $rc -eq 4 ] || fail "apply on an empty root: exit $rc: $out"

if [ "$(id -u)" -eq 0 ]; then
        if command -v setpriv >/dev/null; then
                out=$(setpriv --reuid=65534 --regid=65534 --clear-groups -- "$SPD" --sysfs-root="$root" \
                        --config-dir="$tmp/etc" --runtime-dir="$tmp/run" --udev-data-dir="" \
                        --kernel-release=6.18.0 --log-target=console apply loop5 2>&1); rc=$?
                [ $rc -eq 1 ] && grep -q '^error: loop5: cannot write 1 to queue/stable_writes: Permission denied$' <<<"$out" ||
                        fail "unprivileged apply of a read-only flag: exit $rc: $out"
                echo "# apply loop5 as nobody -> $rc: $out"
        fi
else
        echo "# not root: skipping the unprivileged-user check"
fi

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"
