#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The unmount + mount cycle happens in the host's mount namespace, not the daemon's (issue
# 7). The daemon runs as a sandboxed service would: in a mount namespace of its own
# (unshare -m --propagation slave, as PrivateMounts=yes), with ApplyMounted=remount-idle.
# Everything is checked from the host's namespace (the test's):
#   - fs A is mounted below a shared mount point before the daemon starts (systemd makes /
#     shared; the daemon's namespace then holds a slave copy of it): when the policy turns
#     its disk off, the daemon cycles it by itself; the host sees a new mount (another unique
#     id) with the same options and intact files, the daemon reports the new state, and the
#     new mount propagated into the daemon's namespace too;
#   - fs B is mounted below a private mount point before the daemon starts: the daemon's
#     namespace holds a private copy, which keeps the superblock alive whatever the host
#     does; the daemon sees that and leaves B mounted, pending, "busy" in another mount
#     namespace (published to everyone: where and whose only in the daemon's log).
#
# Usage: test-remount-namespace.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
source "$(dirname "$0")/lib.sh"
sp_setup "$@"
source "$SP_SRCDIR/remount-lib.sh"
RM_CTL=${2:-${STABLEPAGESCTL:-stablepagesctl}}
rm_require python3 unshare nsenter mkfs.ext4
sp_fs_usable ext4 || sp_skip "no ext4 here"
unshare -m --propagation slave true 2>/dev/null || sp_skip "unshare -m does not work here"

# The daemon, in a mount namespace of its own.
real=$(readlink -f "$SP_BIN")
printf '#!/bin/sh\nexec unshare -m --propagation slave %q "$@"\n' "$real" >"$SP_TMP/stablepagesd-unshared"
chmod +x "$SP_TMP/stablepagesd-unshared"
SP_BIN=$SP_TMP/stablepagesd-unshared

# A shared mount point, as systemd's /; the test's other directories stay private.
mkdir -p "$SP_TMP/shared"
mount --bind "$SP_TMP/shared" "$SP_TMP/shared" || sp_fail "cannot bind-mount $SP_TMP/shared"
sp_defer "umount '$SP_TMP/shared'"
mount --make-shared "$SP_TMP/shared" || sp_fail "cannot make $SP_TMP/shared shared"

declare -A LOOP DIR UID0 OPTS
DIR[a]=$SP_TMP/shared/mnt-a
DIR[b]=$SP_TMP/mnt-b
devices=
for k in a b; do
        n=$(sp_free_loop_number)
        LOOP[$k]=loop$n
        sp_loop_attach "$n" 64M
        devices="$devices loop$n"
        echo 1 >"/sys/block/loop$n/queue/stable_writes"
        sp_mkfs ext4 "/dev/loop$n"
        sp_mount "/dev/loop$n" "${DIR[$k]}"
        rm_fill "${DIR[$k]}"
done
sp_config "[Manager]
Devices=$devices
RescanSec=0
ApplyMounted=remount-idle

[Device ${LOOP[a]}]
StableWrites=on

[Device ${LOOP[b]}]
StableWrites=on"
rm_bus_start
sp_daemon_start
rm_wait_bus
rm_monitor_start
[ "$(readlink "/proc/$SP_PID/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] ||
        sp_fail "the daemon is not in a mount namespace of its own"
sp_log "daemon PID $SP_PID in $(readlink "/proc/$SP_PID/ns/mnt"), the test in $(readlink /proc/self/ns/mnt)"
for k in a b; do
        sp_wait_for 2000 "mnt-$k tracked, on" sp_state_is "$(rm_fsq "${DIR[$k]}") | .effective" on >/dev/null
        UID0[$k]=$(rm_unique_id "${DIR[$k]}")
        OPTS[$k]=$(rm_options "${DIR[$k]}")
done

# The policy turns both off: remount-idle cycles what it safely can, by itself.
sp_dropin 50-off.conf "[Device ${LOOP[a]}]
StableWrites=off

[Device ${LOOP[b]}]
StableWrites=off"
sp_daemon_reload

# A: cycled in the host's namespace.
a=${DIR[a]}
sp_wait_for 5000 "mnt-a cycled (RemountFinished ok)" grep -q "^remount  $a on ${LOOP[a]}: ok" "$SP_TMP/monitor.log" >/dev/null
rm_is_mounted "$a" || sp_fail "$a is not mounted in the host's namespace"
uid=$(rm_unique_id "$a")
[ "$uid" != "${UID0[a]}" ] || sp_fail "the host still sees the old mount on $a: the cycle happened elsewhere"
[ "$(rm_options "$a")" = "${OPTS[a]}" ] || sp_fail "options changed: '${OPTS[a]}' -> '$(rm_options "$a")'"
rm_verify "$a"
sp_wait_for 2000 "mnt-a effective off, observed" \
        sp_state_is "$(rm_fsq "$a") | [.effective, .origin, (.pending | tostring)] | join(\" \")" "off observed false" >/dev/null
nsenter -t "$SP_PID" -m awk -v t="$a" '$5 == t { found = 1 } END { exit !found }' /proc/self/mountinfo ||
        sp_fail "the new mount did not propagate into the daemon's namespace"
via=$(sed -n "s|^remount  $a on ${LOOP[a]}: ok.*, in \\(.*\\); stable writes now off.*|\\1|p" "$SP_TMP/monitor.log")
sp_log "mnt-a: cycled by the daemon itself (remount-idle); host mount unique id ${UID0[a]} -> $uid, options kept, files intact"
sp_log "mnt-a: done in: $via"

# B: its private copy in the daemon's namespace keeps the superblock: left alone.
b=${DIR[b]}
sp_wait_for 5000 "mnt-b refused, busy in another namespace" \
        sp_state_is "$(rm_fsq "$b") | [(.pending | tostring), .reason] | join(\" \")" "true takes effect at next mount (not cycled: busy: it is also mounted in another mount namespace, which an unmount here does not reach (the daemon's log says where))" >/dev/null
[ "$(rm_unique_id "$b")" = "${UID0[b]}" ] || sp_fail "mnt-b was unmounted"
sp_log_has_since 0 "mnt-b .*not cycled: busy: it is also mounted on $b in another mount namespace \\(that of PID $SP_PID \\(stablepagesd\\)\\)" ||
        sp_fail "the daemon's log does not name the other namespace"
sp_log "mnt-b: $(sp_state "$(rm_fsq "$b") | .reason")"
sp_log "remount namespaces: ok"
