#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What the unmount + mount cycle leaves alone (issue 7). With ApplyMounted=remount-idle, four
# ext4 filesystems mounted with stable writes on become pending when the policy turns them
# off, and the daemon tries to cycle each at once:
#   - one has a file held open by a process; one has a directory bind-mounted elsewhere;
#     one has a submount; one is listed in NeverRemount=;
# each stays mounted (the same mount, by its unique id), is reported pending with the
# reason it was not cycled, and a RemountFinished signal says so. What is published to every
# user (the pending reason in devices.json, ListFilesystems, the signal) says "busy" and the
# kind of use, never which process or file (another user's business): only the daemon's log
# and the requester's own reply name them. Then, asking explicitly:
#   - a process with its working directory there, then one with a file mapped, are named in
#     the reply;
#   - "/" is refused without being touched (its disk is not even managed here, so nothing is
#     written: the daemon only says it never unmounts "/");
#   - with the process scan disabled (test hook STABLEPAGES_TEST_REMOUNT_FAIL=scan) the
#     unmount itself fails with EBUSY: reported busy, still mounted as before;
#   - once the users are gone, the same filesystems are cycled.
#
# Usage: test-remount-refuse.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
source "$(dirname "$0")/lib.sh"
sp_setup "$@"
source "$SP_SRCDIR/remount-lib.sh"
RM_CTL=${2:-${STABLEPAGESCTL:-stablepagesctl}}
rm_require python3 mkfs.ext4
sp_fs_usable ext4 || sp_skip "no ext4 here"

declare -A LOOP UID0
kinds=(open bind sub never)
devices=
for k in "${kinds[@]}"; do
        n=$(sp_free_loop_number)
        LOOP[$k]=loop$n
        sp_loop_attach "$n" 64M
        devices="$devices loop$n"
done
conf="[Manager]
Devices=$devices
RescanSec=0
ApplyMounted=remount-idle
NeverRemount=$SP_TMP/mnt-never"
for k in "${kinds[@]}"; do
        conf="$conf

[Device ${LOOP[$k]}]
StableWrites=on"
done
sp_config "$conf"
rm_bus_start
sp_daemon_start
rm_wait_bus
rm_monitor_start

# Background processes that use a filesystem; killed at exit.
users=()
start_user() { # DESCRIPTION COMMAND...
        "${@:2}" &
        users+=($!)
        sp_defer "kill $! 2>/dev/null"
        USER_PID=$!
}
stop_user() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null || true; }

for k in "${kinds[@]}"; do
        l=${LOOP[$k]} dir=$SP_TMP/mnt-$k
        sp_wait_for 2000 "$l stable_writes=1" sp_flag_is "$l" 1 >/dev/null
        sp_mkfs ext4 "/dev/$l"
        sp_mount "/dev/$l" "$dir"
        rm_fill "$dir"
done
# The users: an open file, a bind mount of a directory, a submount.
start_user open bash -c 'exec 3<"$1"; exec sleep 600' - "$SP_TMP/mnt-open/data/big"
OPEN_PID=$USER_PID
mkdir -p "$SP_TMP/bind-of-data" "$SP_TMP/mnt-sub/data/below"
mount --bind "$SP_TMP/mnt-bind/data" "$SP_TMP/bind-of-data" || sp_fail "cannot bind-mount"
sp_defer "umount '$SP_TMP/bind-of-data'"
mount -t tmpfs stablepages-test "$SP_TMP/mnt-sub/data/below" || sp_fail "cannot mount the submount"
sp_defer "umount '$SP_TMP/mnt-sub/data/below'"
sp_wait_for 2000 "the open file" test -e "/proc/$OPEN_PID/fd/3" >/dev/null

for k in "${kinds[@]}"; do
        UID0[$k]=$(rm_unique_id "$SP_TMP/mnt-$k") || sp_fail "cannot read the mount id of mnt-$k"
done

# 1. The policy turns them off; remount-idle tries each at once and refuses each.
dropin=
for k in "${kinds[@]}"; do dropin="${dropin}[Device ${LOOP[$k]}]
StableWrites=off
"; done
sp_dropin 50-off.conf "$dropin"
sp_daemon_reload
declare -A WHY=(
        [open]="not cycled: busy: a process has a file open on it (the daemon's log names it)"
        [bind]="not cycled: its directory /data is bind-mounted on $SP_TMP/bind-of-data"
        [sub]="not cycled: it has a submount on $SP_TMP/mnt-sub/data/below"
        [never]="not cycled: $SP_TMP/mnt-never is listed in NeverRemount="
)
for k in "${kinds[@]}"; do
        dir=$SP_TMP/mnt-$k
        sp_wait_for 5000 "mnt-$k pending with the reason it was not cycled" \
                sp_state_is "$(rm_fsq "$dir") | [(.pending | tostring), .reason] | join(\"/\")" \
                "true/takes effect at next mount (${WHY[$k]})" >/dev/null
        sp_wait_for 2000 "RemountFinished (refused) for mnt-$k" \
                grep -qF "remount  $dir on ${LOOP[$k]}: FAILED" "$SP_TMP/monitor.log" >/dev/null
        [ "$(rm_unique_id "$dir")" = "${UID0[$k]}" ] || sp_fail "mnt-$k was unmounted"
        sp_log "mnt-$k: still mounted, pending: $(sp_state "$(rm_fsq "$dir") | .reason")"
done
sp_log_has_since 0 "mnt-open .*not cycled: busy: PID $OPEN_PID \\(sleep\\) has a file open on it: $SP_TMP/mnt-open/data/big" ||
        sp_fail "the refusal was not logged with the process and the file"
# Published: no process, no path (devices.json is world-readable; ListFilesystems and the
# signal are open to every local user).
leak() { grep -E "PID $OPEN_PID|\\(sleep\\)|mnt-open/data" "$@"; }
if leak "$SP_RUNTIME/devices.json" || leak "$SP_TMP/monitor.log" ||
        busctl --system call org.stablepages1 /org/stablepages1 org.stablepages1.Manager ListFilesystems | leak; then
        sp_fail "a published reason names the process or the file that keeps mnt-open busy"
fi
sp_log "published: $(grep -F "mnt-open on ${LOOP[open]}: FAILED" "$SP_TMP/monitor.log" | head -n1)"

# 2. Explicit requests: the reply names the user.
apply_expect() { # DISK REGEX: apply --remount fails (exit 1) and says REGEX
        local out rc=0
        out=$("$RM_CTL" --no-pager apply "$1" --remount 2>&1) || rc=$?
        [ "$rc" = 1 ] || sp_fail "apply $1 --remount: exit $rc, expected 1: $out"
        grep -Eq -- "$2" <<<"$out" || sp_fail "apply $1 --remount does not say '$2': $out"
        sp_log "apply $1 --remount -> $(grep -E -- "$2" <<<"$out")"
}
apply_expect "${LOOP[open]}" "mnt-open \\(ext4 on ${LOOP[open]}\\): not cycled: busy: PID $OPEN_PID \\(sleep\\) has a file open on it"
stop_user "$OPEN_PID"
start_user cwd bash -c 'cd "$1" && exec sleep 600' - "$SP_TMP/mnt-open/data/sub"
CWD_PID=$USER_PID
sp_wait_for 2000 "the cwd user" sh -c "readlink /proc/$CWD_PID/cwd | grep -q mnt-open" >/dev/null
apply_expect "${LOOP[open]}" "not cycled: busy: PID $CWD_PID \\(sleep\\) has its working directory on it"
stop_user "$CWD_PID"
# A mapping without a file descriptor (Python's mmap module keeps one: call mmap(2) itself).
start_user map python3 -c 'import ctypes, os, sys, time
libc = ctypes.CDLL(None); libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
fd = os.open(sys.argv[1], os.O_RDONLY)
assert libc.mmap(None, 4096, 1, 1, fd, 0) not in (None, ctypes.c_void_p(-1).value)  # PROT_READ, MAP_SHARED
os.close(fd); time.sleep(600)' "$SP_TMP/mnt-open/data/big"
MAP_PID=$USER_PID
sp_wait_for 10000 "the mapping" grep -q "mnt-open/data/big" "/proc/$MAP_PID/maps" >/dev/null
apply_expect "${LOOP[open]}" "not cycled: busy: PID $MAP_PID \\(python3\\) has a file mapped from it: $SP_TMP/mnt-open/data/big"
# The signals of these requests (every user receives them) said "busy" only.
grep -F "mnt-open on ${LOOP[open]}: FAILED" "$SP_TMP/monitor.log" | grep -E "PID|sleep|python3|mnt-open/data" &&
        sp_fail "a RemountFinished signal names the process or the file"
grep -qF "not cycled: busy: a process has a file mapped from it (the daemon's log names it)" "$SP_TMP/monitor.log" ||
        sp_fail "no RemountFinished signal says busy with a file mapped"
apply_expect "${LOOP[bind]}" "not cycled: its directory /data is bind-mounted"
apply_expect "${LOOP[sub]}" "not cycled: it has a submount"
apply_expect "${LOOP[never]}" "listed in NeverRemount="
for k in "${kinds[@]}"; do
        [ "$(rm_unique_id "$SP_TMP/mnt-$k")" = "${UID0[$k]}" ] || sp_fail "mnt-$k was unmounted"
done

# 3. "/": refused by its name, nothing touched (not even the flag of its disk).
root_line=$(rm_mountinfo /)
root_dev=$(awk '{ print $3 }' <<<"$root_line")
if [ -e "/sys/dev/block/$root_dev" ]; then
        root_disk=$(basename "$(readlink -f "/sys/dev/block/$root_dev")")
        [ -e "/sys/dev/block/$root_dev/partition" ] &&
                root_disk=$(basename "$(dirname "$(readlink -f "/sys/dev/block/$root_dev")")")
        root_uid=$(rm_unique_id /)
        root_flag=$(sp_flag "$root_disk")
        apply_expect "$root_disk" "^/ \\([a-z0-9]+ on $root_disk\\): not cycled: / is never unmounted \\(the root filesystem\\)"
        [ "$(rm_unique_id /)" = "$root_uid" ] || sp_fail "/ is another mount now"
        [ "$(sp_flag "$root_disk")" = "$root_flag" ] || sp_fail "the flag of $root_disk changed"
else
        sp_log "/ is not on a block device here ($root_dev): its check is covered by test-remount (unit)"
fi

# 4. The unmount's EBUSY is the final check: without the process scan (test hook), a file
#    held open makes the unmount itself fail; the filesystem stays mounted as it was.
stop_user "$MAP_PID"
start_user open2 bash -c 'exec 3<"$1"; exec sleep 600' - "$SP_TMP/mnt-open/data/big"
OPEN2_PID=$USER_PID
sp_wait_for 2000 "the open file" test -e "/proc/$OPEN2_PID/fd/3" >/dev/null
sp_daemon_stop
SP_DAEMON_ENV="$SP_DAEMON_ENV STABLEPAGES_TEST_REMOUNT_FAIL=scan" sp_daemon_start
rm_wait_bus
apply_expect "${LOOP[open]}" "not cycled: the unmount failed: Device or resource busy; still mounted as before"
[ "$(rm_unique_id "$SP_TMP/mnt-open")" = "${UID0[open]}" ] || sp_fail "mnt-open was unmounted"
rm_verify "$SP_TMP/mnt-open"

# 5. Without their users, the same filesystems are cycled.
stop_user "$OPEN2_PID"
umount "$SP_TMP/bind-of-data"
umount "$SP_TMP/mnt-sub/data/below"
for k in open bind sub; do
        out=$("$RM_CTL" --no-pager apply "${LOOP[$k]}" --remount 2>&1) || sp_fail "apply ${LOOP[$k]} --remount: $out"
        grep -q "mnt-$k (ext4 on ${LOOP[$k]}): unmounted and mounted again" <<<"$out" || sp_fail "mnt-$k not cycled: $out"
        [ "$(rm_unique_id "$SP_TMP/mnt-$k")" != "${UID0[$k]}" ] || sp_fail "mnt-$k: still the same mount"
        rm_verify "$SP_TMP/mnt-$k"
        sp_wait_for 2000 "mnt-$k effective off" \
                sp_state_is "$(rm_fsq "$SP_TMP/mnt-$k") | [.effective, (.pending | tostring)] | join(\" \")" "off false" >/dev/null
done
sp_log "once idle, mnt-open, mnt-bind and mnt-sub were cycled; mnt-never stays pending"
sp_state_is "$(rm_fsq "$SP_TMP/mnt-never") | .pending" true || sp_fail "mnt-never is not pending any more"
sp_log "remount refusals: ok"
