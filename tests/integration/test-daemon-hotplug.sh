#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Hotplug: with the daemon running, a loop device attached afterwards gets the flag its
# configuration asks for within a second; a hot-added zram device is classified
# "required"; removed devices leave the daemon's state. Also: drift (the flag written
# behind the daemon's back) is logged once and corrected by the periodic rescan;
# READY/STATUS/WATCHDOG notifications; a clean exit on SIGTERM.
#
# Usage: test-daemon-hotplug.sh [STABLEPAGESD]   (root; exit 77 = skipped)
source "$(dirname "$0")/lib.sh"
sp_setup "$@"

n=$(sp_free_loop_number)
loop=loop$n
# Only the test's loop device may be written; zram devices are observed only.
sp_config "[Manager]
Devices=$loop
RescanSec=1

[Device $loop]
StableWrites=on"

SP_DAEMON_ENV="WATCHDOG_USEC=1000000" sp_daemon_start
sp_state_is '.devices | length > 0' true || sp_fail "devices.json lists no devices"
sp_state_is ".devices[] | select(.name == \"$loop\") | .name" "" || sp_fail "$loop exists before the test made it"

# 1. A loop device attached after start: the kernel creates loopN, then binds the file.
sp_loop_attach "$n" 64M
ms=$(sp_wait_for 1000 "$loop stable_writes=1" sp_flag_is "$loop" 1)
sp_log "hotplug: $loop had stable_writes=1 ${ms} ms after losetup returned"
sp_wait_for 1000 "$loop in devices.json as desired on" \
        sp_state_is ".devices[] | select(.name == \"$loop\") | [.desired, .stable_writes, .desired_source] | join(\" \")" "on 1 config" >/dev/null
grep -Eq "$loop: stable writes off -> on" "$SP_TMP/daemon.log" || sp_fail "the change of $loop was not logged"
grep -q "^first=0 later .* stablepagesd$" "$SP_RUNTIME/history/$loop" ||
        sp_fail "the daemon did not record the first sight of $loop (0) in its history: $(cat "$SP_RUNTIME/history/$loop" 2>&1)"
grep -q "^change=1 .* stablepagesd$" "$SP_RUNTIME/history/$loop" || sp_fail "the change of $loop is not in its history"

# 2. Drift: someone else writes the flag; the next rescan logs it once and corrects it.
echo 0 >"/sys/block/$loop/queue/stable_writes"
ms=$(sp_wait_for 3000 "$loop corrected back to 1 by the rescan" sp_flag_is "$loop" 1)
sleep 1.2 # one more rescan: nothing new to log
[ "$(grep -c "$loop: queue/stable_writes changed from 1 to 0 outside this daemon" "$SP_TMP/daemon.log")" = 1 ] ||
        sp_fail "the drift of $loop was not logged exactly once"
grep -q "^change=0 .* other$" "$SP_RUNTIME/history/$loop" || sp_fail "the change by another program is not in the history of $loop"
sp_log "hotplug: drift of $loop logged once and corrected after ${ms} ms"

# 3. A hot-added zram device is classified required (and, unmanaged, left alone).
if [ -w /sys/class/zram-control/hot_add ]; then
        id=$(cat /sys/class/zram-control/hot_add)
        sp_defer "echo $id > /sys/class/zram-control/hot_remove"
        zram=zram$id
        ms=$(sp_wait_for 1000 "$zram classified required" \
                sp_state_is ".devices[] | select(.name == \"$zram\") | .need" required)
        sp_log "hotplug: $zram classified required after ${ms} ms: $(sp_state ".devices[] | select(.name == \"$zram\") | .reasons[0]")"
        sp_state_is ".devices[] | select(.name == \"$zram\") | .desired_source" unmanaged ||
                sp_fail "$zram is not reported as unmanaged"
        echo "$id" >/sys/class/zram-control/hot_remove
        sp_wait_for 1000 "$zram gone from devices.json" \
                sp_state_is "[.devices[] | select(.name == \"$zram\")] | length" 0 >/dev/null
        sp_log "hotplug: $zram removed from the daemon's state"
else
        sp_log "hotplug: no /sys/class/zram-control (zram module not loaded), zram part skipped"
fi

# 4. Detaching and removing the loop device removes it from the state (and its record).
sp_loop_destroy "$n"
sp_wait_for 1000 "$loop gone from devices.json" \
        sp_state_is "[.devices[] | select(.name == \"$loop\")] | length" 0 >/dev/null
[ ! -e "$SP_RUNTIME/history/$loop" ] || sp_fail "the history of removed $loop is still there"
sp_log "hotplug: $loop removed from the daemon's state"

# 5. Service manager protocol.
grep -Eq '^STATUS=[0-9]+ devices, [0-9]+ stable, [0-9]+ pending$' "$SP_TMP/notify.log" ||
        sp_fail "no STATUS= summary was sent"
sp_wait_for 2000 "WATCHDOG=1 with WATCHDOG_USEC=1s" grep -q '^WATCHDOG=1$' "$SP_TMP/notify.log" >/dev/null
sp_daemon_stop
grep -q '^STOPPING=1$' "$SP_TMP/notify.log" || sp_fail "no STOPPING=1 on SIGTERM"
sp_log "hotplug: ok"
