#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The daemon once under valgrind memcheck (issue 9): a short but complete session on a
# private system bus — start-up, every read method and property, set/reset with apply,
# bad input, a reload with a broken and then a fixed drop-in (SIGHUP and D-Bus), a disk
# that appears and goes away, a filesystem mounted and unmounted, SIGTERM — must end with
# zero definite leaks and zero invalid accesses (--errors-for-leak-kinds=definite
# --error-exitcode), and exit status 0.
#
# Usage: test-robust-valgrind.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped,
# also for an ASan build, which valgrind cannot run)
source "$(dirname "$0")/robust-lib.sh"
robust_setup --bus "$@"
command -v valgrind >/dev/null || sp_skip "valgrind is not installed"
command -v mkfs.ext4 >/dev/null || sp_skip "mkfs.ext4 is not installed"
if grep -q 'libasan\|libubsan' <<<"$(ldd "$SP_BIN" 2>/dev/null)"; then
        sp_skip "$SP_BIN is built with sanitizers; valgrind cannot run it (the regular build runs this test)"
fi

n=$(sp_free_loop_number)
loop=loop$n
sp_loop_attach "$n" 64M
mkfs.ext4 -q "/dev/$loop"
sp_config "[Manager]
Devices=$loop
RescanSec=1"

# The daemon under valgrind: a wrapper in place of the binary for sp_daemon_start.
daemon=$SP_BIN
cat >"$SP_TMP/valgrind-daemon" <<EOF
#!/bin/sh
exec valgrind --tool=memcheck --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99 \\
        --suppressions="$SP_SRCDIR/libbpf.supp" \\
        --track-origins=yes --num-callers=30 --log-file="$SP_TMP/valgrind.log" "$daemon" "\$@"
EOF
chmod +x "$SP_TMP/valgrind-daemon"
SP_BIN=$SP_TMP/valgrind-daemon
# Start-up under valgrind is ~50 times slower (the stall probe loads its BPF programs).
SP_READY_TIMEOUT_MS=60000
robust_daemon_start
sp_wait_for 10000 "$loop in the daemon's view" sp_state_is ".devices[] | select(.name == \"$loop\") | .name" "$loop" >/dev/null

ctl() { "$SP_CTL" --no-pager "$@" >/dev/null 2>&1; }
# Reads.
ctl status || sp_fail "status failed"
ctl --json=pretty status || sp_fail "status --json failed"
ctl explain "$loop" || sp_fail "explain failed"
robust_call ListFilesystems >/dev/null || sp_fail "ListFilesystems failed"
robust_call ListConsumers >/dev/null || sp_fail "ListConsumers failed"
busctl --system get-property org.stablepages1 "/org/stablepages1/device/$loop" org.stablepages1.Device \
        Name DevNum Kind Need Reasons KernelFlag InForce Desired DesiredSource DecisionReason Setting Managed \
        Mounts Consumers Pending >/dev/null || sp_fail "device properties failed"
busctl --system get-property org.stablepages1 /org/stablepages1 org.stablepages1.Manager \
        Version Policy ApplyMounted StallBudgetUSec ConfigProblems NDevices >/dev/null || sp_fail "manager properties failed"
busctl --system introspect org.stablepages1 "/org/stablepages1/device/$loop" >/dev/null || sp_fail "introspect failed"
busctl --system call org.stablepages1 /org/stablepages1 org.freedesktop.DBus.ObjectManager GetManagedObjects \
        >/dev/null || sp_fail "GetManagedObjects failed"
# Changes.
ctl set "$loop" on --runtime --apply || sp_fail "set --runtime --apply failed"
sp_flag_is "$loop" 1 || sp_fail "$loop not on"
ctl reset "$loop" --runtime || sp_fail "reset --runtime failed"
ctl set "$loop" off --apply || sp_fail "persistent set failed"
ctl reset "$loop" || sp_fail "reset failed"
ctl reset "$loop" && sp_fail "reset of a disk without an override succeeded"
ctl apply || sp_fail "apply failed"
# Bad input.
robust_call GetDevice string:../x >/dev/null && sp_fail "a bad name was accepted"
robust_call SetDevicePolicy string:"$loop" string:sideways uint64:0 >/dev/null && sp_fail "a bad mode was accepted"
robust_call GetDevice string:nosuch9 >/dev/null && sp_fail "an unknown disk was accepted"
# Reloads: broken (kept), then fixed.
sp_dropin 50-bad.conf "[Device $loop]
StableWrites=sideways"
robust_call Reload >/dev/null && sp_fail "a broken configuration was accepted"
sp_daemon_reload
rm "$SP_ETC/stablepages.conf.d/50-bad.conf"
robust_call Reload >/dev/null || sp_fail "Reload failed"
# A disk that comes and goes, a filesystem mounted and unmounted.
m=$(sp_free_loop_number)
sp_loop_attach "$m" 16M
sp_wait_for 10000 "loop$m in the daemon's view" sp_state_is ".devices[] | select(.name == \"loop$m\") | .name" "loop$m" >/dev/null
sp_loop_destroy "$m"
sp_mount "/dev/$loop" "$SP_TMP/mnt"
sp_wait_for 10000 "the mount tracked" sp_state_is ".filesystems[] | select(.target == \"$SP_TMP/mnt\") | .target" "$SP_TMP/mnt" >/dev/null
umount "$SP_TMP/mnt"
sp_wait_for 10000 "the unmount seen" sh -c "! jq -e '.filesystems[] | select(.target == \"$SP_TMP/mnt\")' '$SP_RUNTIME/devices.json'" >/dev/null
sleep 1.5 # one periodic rescan (RescanSec=1)

# SIGTERM: memcheck's verdict is the exit status (99 on any error or definite leak).
kill -TERM "$SP_PID"
rc=0
for ((i = 0; i < 1000; i++)); do
        kill -0 "$SP_PID" 2>/dev/null || break
        sleep 0.02
done
wait "$SP_PID" || rc=$?
SP_PID=
grep -E 'in use at exit|definitely lost|indirectly lost|ERROR SUMMARY' "$SP_TMP/valgrind.log" | sed 's/^==[0-9]*== */# valgrind: /'
if [ "$rc" -ne 0 ]; then
        cat "$SP_TMP/valgrind.log" >&2
        sp_fail "the daemon under valgrind exited with status $rc (99: memcheck found errors or definite leaks)"
fi
grep -q 'ERROR SUMMARY: 0 errors' "$SP_TMP/valgrind.log" || sp_fail "memcheck reported errors"
if grep -q 'definitely lost: [1-9]' "$SP_TMP/valgrind.log"; then sp_fail "memcheck found definite leaks"; fi
sp_log "robust-valgrind: ok"
