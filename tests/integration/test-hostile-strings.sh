#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Strings from the kernel and from users that are not valid UTF-8 (issue 15): sd-bus refuses
# to send them, so one such string used to break a whole reply for everyone. On a loop device
# with ext4 mounted with stable writes, its writes throttled (stalls-lib.sh):
#
# 1. stall-writer runs under a command name of invalid UTF-8 ("\xff\xfe-writer") and under one
#    the kernel cuts inside a character (8 x "é" is 16 bytes, a comm keeps 15): GetStalls,
#    `stablepagesctl stats` and DumpJSON (`stablepagesctl --json status`) answer, with the
#    names escaped ("\xff\xfe-writer", "ééééééé\xc3"), and their JSON is valid UTF-8.
# 2. The filesystem is also mounted (bind) at a path with invalid UTF-8 and at a path of about
#    4,000 bytes of "é": ListFilesystems, ListDevices (whose mount summary is cut at 1,024 bytes,
#    on a character boundary), the Mounts property and `stablepagesctl status` answer, escaped.
# 3. A FUSE mount whose source string is /dev/LOOP is not a filesystem on that disk: mounts map
#    to disks by the superblock's device number, never by the source text.
# 4. A loop device whose backing file has a Latin-1 name: `stablepagesd dump --json` prints
#    valid UTF-8 JSON that shows the name escaped; `stablepagesctl set` on it is refused with an
#    error that quotes the name escaped (a [Device] section cannot hold it: no stable id).
#
# Usage: test-hostile-strings.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
set -euo pipefail
SRC=${SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/integration/lib.sh"
sp_setup "${1:-}"
sp_ctl_arg "${2:-}"
[ -x "${STALL_WRITER:-}" ] || sp_skip "stall-writer not built (\$STALL_WRITER)"
sp_require mkfs.ext4 dbus-daemon busctl python3
. "$SRC/tests/integration/stalls-lib.sh"
stalls_setup

stalls_loop_mounted 64M
stalls_throttle "$loop" 10
sp_config "[Manager]
Policy=observe
Devices=$loop
RescanSec=0
StallWindowSec=5"
stalls_daemon_start
probe=$(busctl --system get-property org.stablepages1 /org/stablepages1 org.stablepages1.Manager StallProbe | cut -d'"' -f2)

fails=0
bad() {
        echo "FAIL: $*" >&2
        fails=$((fails + 1))
}
# valid_json WHAT: stdin is valid UTF-8 and valid JSON.
valid_json() {
        python3 -c 'import json, sys; json.loads(sys.stdin.buffer.read().decode("utf-8", "strict"))' ||
                bad "$1: not valid UTF-8 JSON"
}
call() { busctl --system --json=short call org.stablepages1 /org/stablepages1 org.stablepages1.Manager "$@"; }

# 1. Writers with hostile command names.
bad_comm=$'\xff\xfe-writer'
cut_comm=ééééééé # what the kernel keeps of 8 x é: 7 of them and the first byte of the 8th
mkdir -p "$SP_TMP/bin"
ln -s "$STALL_WRITER" "$SP_TMP/bin/$bad_comm"
ln -s "$STALL_WRITER" "$SP_TMP/bin/éééééééé"
if [ "$probe" = unavailable ]; then
        sp_log "the stall probe is unavailable here: the command names are not measured"
else
        STALL_WRITER="$SP_TMP/bin/$bad_comm" stalls_write "$mnt/a" 8 >/dev/null
        STALL_WRITER="$SP_TMP/bin/éééééééé" stalls_write "$mnt/b" 8 >/dev/null
        comms() { call GetStalls s "$loop" | jq -r '.data[9][] | .[0]'; }
        # Both writers' waits counted (StallCount has no string to break), and one more poll.
        sp_wait_for 20000 "the writers' waits counted" sh -c \
                "[ \"\$(busctl --system get-property org.stablepages1 /org/stablepages1/device/$loop \
                org.stablepages1.Device StallCount | cut -d' ' -f2)\" -ge 8 ]" >/dev/null
        sleep 2
        got=$(comms) || bad "GetStalls failed: $got"
        sp_log "GetStalls command names: $(tr '\n' ' ' <<<"$got")"
        grep -qxF '\xff\xfe-writer' <<<"$got" || bad "GetStalls does not show \\xff\\xfe-writer: $got"
        grep -qxF "$cut_comm"'\xc3' <<<"$got" || bad "GetStalls does not show ${cut_comm}\\xc3: $got"
        out=$("$CTL" --no-pager stats "$loop" 2>&1) || bad "stablepagesctl stats failed: $out"
        grep -qF '\xff\xfe-writer' <<<"$out" || bad "stablepagesctl stats does not show \\xff\\xfe-writer: $out"
        out=$("$CTL" --json=short status "$loop") || bad "stablepagesctl --json status failed: $out"
        valid_json "DumpJSON with the writers" <<<"$out"
        jq -e '.[0].stalls.total.comms[] | select(.comm == "\\xff\\xfe-writer")' <<<"$out" >/dev/null ||
                bad "DumpJSON does not show \\xff\\xfe-writer: $out"
fi

# 2. Mount targets: invalid UTF-8, and about 4,000 bytes.
bad_dir=$SP_TMP/$'bad-\xe9\xff'
long_dir=$SP_TMP
comp=$(printf 'é%.0s' $(seq 120)) # 240 bytes
while [ "$(printf %s "$long_dir" | wc -c)" -lt 3760 ]; do long_dir=$long_dir/$comp; done
mkdir -p "$bad_dir" "$long_dir"
for d in "$bad_dir" "$long_dir"; do
        mount --bind "$mnt" "$d" || sp_fail "cannot bind mount on $(printf %q "$d" | cut -c1-80)"
        sp_defer "umount $(printf %q "$d")"
done
sp_log "mounted at $(printf %q "$bad_dir") and at a path of $(printf %s "$long_dir" | wc -c) bytes"
want_bad="$SP_TMP/bad-\\xe9\\xff" # e9 ff: two bytes that are not UTF-8 (é in Latin-1, then ÿ)
sp_wait_for 10000 "the 3 mounts of $loop tracked" sh -c "[ \"\$(jq --arg d $loop \
        '[.filesystems[] | select(.disk == \$d)] | length' '$SP_RUNTIME/devices.json')\" -ge 3 ]" >/dev/null
out=$(call ListFilesystems) || bad "ListFilesystems failed: $out"
valid_json "ListFilesystems" <<<"$out"
jq -e --arg t "$want_bad" '.data[0][] | select(.[0] == $t)' <<<"$out" >/dev/null ||
        bad "ListFilesystems does not show $want_bad: $(jq -c '[.data[0][][0]]' <<<"$out" | cut -c1-300)"
jq -e --arg t "$long_dir" '.data[0][] | select(.[0] == $t)' <<<"$out" >/dev/null ||
        bad "ListFilesystems does not show the long path whole"
out=$(call ListDevices) || bad "ListDevices failed: $out"
summary=$(jq -r --arg d "$loop" '.data[0][] | select(.[0] == $d) | .[5]' <<<"$out")
sp_log "ListDevices mount summary of $loop: $(printf %s "$summary" | wc -c) bytes, ends \"$(printf %s "$summary" | tail -c 20)\""
if [ "$(printf %s "$summary" | wc -c)" -gt 1024 ] || [[ $summary != *… ]]; then
        bad "the mount summary is not cut to 1,024 bytes with …: $(printf %s "$summary" | wc -c) bytes"
fi
out=$(busctl --system --json=short get-property org.stablepages1 "/org/stablepages1/device/$loop" \
        org.stablepages1.Device Mounts) || bad "property Mounts failed: $out"
jq -e --arg t "$want_bad" '.data[] | select(.[0] == $t)' <<<"$out" >/dev/null || bad "Mounts does not show $want_bad"
out=$("$CTL" --no-pager status "$loop" 2>&1) || bad "stablepagesctl status failed: $out"
grep -qF "$want_bad:on" <<<"$out" || bad "stablepagesctl status does not show $want_bad:on: $(head -c 400 <<<"$out")"
out=$("$CTL" --json=short status) || bad "stablepagesctl --json status failed"
valid_json "DumpJSON with the mounts" <<<"$out"

# 3. A FUSE mount whose source says it is /dev/$loop (fusermount -o fsname= lets any user): not a
# filesystem on $loop. A bind mount made after it shows that the daemon read the table since.
fuse_dir=$SP_TMP/fuse
late_dir=$SP_TMP/late
mkdir -p "$fuse_dir" "$late_dir"
"$SP_HELPER" fuse-mount "/dev/$loop" "$fuse_dir" || sp_fail "cannot make the FUSE mount"
sp_defer "umount -l '$fuse_dir'"
mount --bind "$mnt" "$late_dir" || sp_fail "cannot bind mount $late_dir"
sp_defer "umount '$late_dir'"
sp_wait_for 10000 "$late_dir tracked" sh -c "jq -e --arg t '$late_dir' \
        '.filesystems[] | select(.target == \$t)' '$SP_RUNTIME/devices.json'" >/dev/null
fuse=$(jq -c --arg t "$fuse_dir" '[.filesystems[] | select(.target == $t)]' "$SP_RUNTIME/devices.json")
[ "$fuse" = "[]" ] || bad "the FUSE mount with source /dev/$loop is tracked as a filesystem: $fuse"
n_fs=$(jq --arg d "$loop" '[.filesystems[] | select(.disk == $d)] | length' "$SP_RUNTIME/devices.json")
[ "$n_fs" = 4 ] || bad "$n_fs filesystems on $loop, want 4 (ext4 and its 3 bind mounts)"

# 4. A Latin-1 loop backing file name, read with no daemon.
b=$(sp_free_loop_number)
latin=$SP_TMP/$'caf\xe9.img'
truncate -s 16M "$latin"
sp_defer "sp_loop_destroy $b"
losetup "/dev/loop$b" "$latin" || sp_fail "cannot attach loop$b"
out=$("$SP_BIN" --config-dir="$SP_ETC" --runtime-dir="$SP_TMP/run2" dump --json) || bad "dump --json failed"
valid_json "dump --json" <<<"$out"
grep -qF 'caf\\xe9.img' <<<"$out" || bad "dump --json does not show caf\\xe9.img"
# The same disk through the daemon (issue 14 binds persistent overrides to a loop device's
# backing file): a path that is not UTF-8 cannot be written in a [Device] section, so the disk
# has no StableId and `set` is refused, with an error that quotes the path escaped.
dev=/org/stablepages1/device/loop$b
sp_wait_for 10000 "loop$b seen by the daemon" busctl --system get-property org.stablepages1 "$dev" \
        org.stablepages1.Device Name >/dev/null
out=$(busctl --system --json=short get-property org.stablepages1 "$dev" org.stablepages1.Device StableId) ||
        bad "property StableId failed: $out"
[ "$(jq -r .data <<<"$out")" = "" ] || bad "StableId of loop$b: $out, want none"
rc=0
out=$("$CTL" --no-pager set "loop$b" on 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -qF "LOOP_BACKING_FILE=$SP_TMP/caf\\xe9.img cannot be written" <<<"$out" ||
        bad "stablepagesctl set loop$b on: exit $rc, want 1 and the path escaped in the error: $out"
out=$(call ListOverrides) || bad "ListOverrides failed: $out"
valid_json "ListOverrides" <<<"$out"

kill -0 "$SP_PID" 2>/dev/null || bad "the daemon died"
[ "$fails" -eq 0 ] || sp_fail "$fails check(s) failed"
sp_log "hostile-strings: ok"
