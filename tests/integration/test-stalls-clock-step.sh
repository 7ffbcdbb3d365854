#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Stall windows are timed by CLOCK_BOOTTIME (issue 15): a step of the wall clock neither
# stretches nor empties StallWindowSec=. The daemon runs with realtime-shift.so, which steps
# its CLOCK_REALTIME on demand (the machine's clock is not touched). On a loop device with
# ext4 mounted with stable writes, writes throttled to 10 IOPS, StallWindowSec=5:
#
# 1. waits, seen in StallWindowCount; the wall clock goes back one hour: the window still
#    empties once the waits are 5 s old (with the wall clock it did too, after one window of
#    snapshots piled up: a regression check, not the case that failed);
# 2. waits again, seen; the wall clock goes forward one hour (back to the real time): 1.5 s
#    later the window still counts all of them (with the wall clock it dropped them at once:
#    2 of 10 left).
#
# Usage: test-stalls-clock-step.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
set -euo pipefail
SRC=${SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/integration/lib.sh"
sp_setup "${1:-}"
[ -x "${STALL_WRITER:-}" ] || sp_skip "stall-writer not built (\$STALL_WRITER)"
[ -f "${REALTIME_SHIFT:-}" ] || sp_skip "realtime-shift.so not built (\$REALTIME_SHIFT)"
sp_require mkfs.ext4 dbus-daemon busctl
. "$SRC/tests/integration/stalls-lib.sh"
stalls_setup

stalls_loop_mounted 256M
stalls_throttle "$loop" 10
sp_config "[Manager]
Policy=observe
Devices=$loop
RescanSec=0
StallWindowSec=5"

shift_file=$SP_TMP/realtime-shift
echo 0 >"$shift_file"
# The library steps the clock it is given (a control: date(1) through it).
echo -3600 >"$shift_file"
real=$(date +%s)
shifted=$(LD_PRELOAD=$REALTIME_SHIFT SP_REALTIME_SHIFT_FILE=$shift_file date +%s)
(((real - shifted) >= 3590 && (real - shifted) <= 3610)) || sp_fail "realtime-shift.so does not step the clock: $real vs $shifted"
echo 0 >"$shift_file"

# An ASan build wants its runtime first among the preloaded libraries.
preload=$REALTIME_SHIFT
asan=$(ldd "$SP_BIN" | awk '$1 ~ /^libasan/ { print $3 }')
[ -z "$asan" ] || preload="$asan:$preload"
SP_DAEMON_ENV="LD_PRELOAD=$preload SP_REALTIME_SHIFT_FILE=$shift_file" stalls_daemon_start
probe=$(busctl --system get-property org.stablepages1 /org/stablepages1 org.stablepages1.Manager StallProbe | cut -d'"' -f2)
[ "$probe" != unavailable ] || sp_skip "the stall probe is unavailable here"
window() { stalls_dev_prop "$loop" StallWindowCount; }
has_waits() { [ "$(window)" -gt 0 ]; }
no_waits() { [ "$(window)" = 0 ]; }

# 1. The wall clock goes back one hour.
stalls_write "$mnt/a" 10 >/dev/null
sp_wait_for 10000 "the waits in the window" has_waits >/dev/null
seen=$(window)
echo -3600 >"$shift_file"
took=$(sp_wait_for 12000 "the window empty again after the wall clock went back an hour" no_waits)
sp_log "step back: $seen waits in the window, empty again $took ms after the step"

# 2. The wall clock goes forward one hour.
stalls_write "$mnt/b" 10 >/dev/null
sp_wait_for 10000 "the new waits in the window" has_waits >/dev/null
seen=$(window)
echo 0 >"$shift_file"
sleep 1.5
after=$(window)
sp_log "step forward: $seen waits in the window before, $after 1.5 s after the step"
[ "$after" -ge "$seen" ] || sp_fail "the window lost waits when the wall clock went forward an hour: $seen before, $after after"
sp_daemon_stop
sp_log "stalls-clock-step: ok"
