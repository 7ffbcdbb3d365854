#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What the daemon reports when the stall probe cannot measure durations, or anything (issue
# 5): never zeros that look measured, and nothing learned from figures it does not have.
#   1. Probe forced "unavailable" (STABLEPAGES_STALLS_FORCE_UNAVAILABLE=1, test only):
#      StallProbe=unavailable with its reason in status; StallMeasured false and every figure
#      UINT64_MAX; GetStalls says measured false, stats --json has no figures; stats says
#      there are no figures; devices.json has no figures; MetricsFile= has no stall series;
#      ResetStalls fails with NotSupported.
#   2. Probe forced "tracefs" (counts only), the throttled writer of test-stalls-adaptive.sh
#      on a "recommended" loop with a 1 ms budget: the waits are counted, StallP99USec is
#      UINT64_MAX, MetricsFile= has the counter but no histogram, and nothing is learned
#      (desired stays on, no learned file).
# Root only; creates and removes its loop device, mount, cgroup, private bus.
set -euo pipefail
SRC=${SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/integration/lib.sh"
sp_setup "${1:-}"
sp_ctl_arg "${2:-}"
[ -x "${STALL_WRITER:-}" ] || sp_skip "stall-writer not built (\$STALL_WRITER)"
sp_require mkfs.ext4 dbus-daemon busctl

. "$SRC/tests/integration/stalls-lib.sh"
stalls_setup

n=$(sp_free_loop_number)
loop=loop$n
sp_loop_attach "$n" 256M
mnt=$SP_TMP/mnt
stalls_mount_flag1 "$loop" "$mnt"
stalls_throttle "$loop" 10
metrics=$SP_TMP/stablepages.prom
sp_config "[Manager]
Policy=balanced
Devices=$loop
RescanSec=0
StallBudgetMSec=1
StallWindowSec=3
StallCalmSec=0
MetricsFile=$metrics
MetricsIntervalSec=1

[Device $loop]
Need=recommended"
dev() { jq -r --arg d "$loop" ".devices[] | select(.name == \$d) | $1" "$SP_RUNTIME/devices.json"; }
max=18446744073709551615

# 1. Nothing measures.
SP_DAEMON_ENV=STABLEPAGES_STALLS_FORCE_UNAVAILABLE=1 stalls_daemon_start
mode=$(busctl --system get-property org.stablepages1 /org/stablepages1 org.stablepages1.Manager StallProbe | cut -d'"' -f2)
[ "$mode" = unavailable ] || sp_fail "StallProbe $mode, want unavailable"
status=$("$CTL" --no-pager status "$loop")
sed 's/^/#   /' <<<"$status"
grep -q "^Stall probe: unavailable (" <<<"$status" || sp_fail "status does not name the probe mode"
[ "$(awk -v d="$loop" '$1 == d { print $NF }' <<<"$status")" = - ] || sp_fail "status shows a p99"
[ "$(stalls_dev_prop "$loop" StallMeasured)" = false ] || sp_fail "StallMeasured is not false"
for p in StallCount StallP99USec StallMaxUSec StallWindowCount StallWindowP99USec; do
        [ "$(stalls_dev_prop "$loop" $p)" = $max ] || sp_fail "$p is $(stalls_dev_prop "$loop" $p), want UINT64_MAX"
done
json=$("$CTL" --json stats "$loop")
[ "$(jq -c '.[0].stalls | [.measured, has("total"), has("window"), .probe_lost]' <<<"$json")" = '[false,false,false,null]' ] ||
        sp_fail "stats --json reports figures: $json"
grep -q "^No stall figures: the probe is unavailable" <<<"$("$CTL" --no-pager stats)" || sp_fail "stats without figures"
[ "$(dev '.stalls | [.measured, has("total"), has("window")] | @csv')" = 'false,false,false' ] ||
        sp_fail "devices.json has figures: $(dev .stalls)"
sp_wait_for 5000 "metrics file" test -s "$metrics" >/dev/null
grep -q '^stablepages_stall_probe_info{mode="unavailable"} 1$' "$metrics" || sp_fail "metrics: no probe mode"
grep -q "^stablepages_desired{device=\"$loop\"} 1$" "$metrics" || sp_fail "metrics: no desired for $loop"
! grep -E "^stablepages_(stall_waits_total|stall_wait_seconds|writeback_other)" "$metrics" ||
        sp_fail "metrics report stall figures nothing measured"
out=$(busctl --system call org.stablepages1 /org/stablepages1 org.stablepages1.Manager ResetStalls s "" 2>&1) &&
        sp_fail "ResetStalls succeeded without a probe"
grep -qi "no stall probe is running" <<<"$out" || sp_fail "ResetStalls: $out"
sp_daemon_stop

# 2. Counts only.
SP_DAEMON_ENV=STABLEPAGES_STALLS_FORCE_TRACEFS=1 stalls_daemon_start
mode=$(busctl --system get-property org.stablepages1 /org/stablepages1 org.stablepages1.Manager StallProbe | cut -d'"' -f2)
[ "$mode" = tracefs ] || sp_skip "the probe could not run in tracefs mode: $mode"
line=$(stalls_write "$mnt/a.dat" 20)
sp_log "writer: $line"
[ "$(stalls_field "$line" slow)" -ge 10 ] || sp_fail "the throttle did not bite: $line"
sleep 2.5 # two polls
count=$(stalls_dev_prop "$loop" StallCount)
sp_log "tracefs mode: StallCount $count, StallP99USec $(stalls_dev_prop "$loop" StallP99USec)"
[ "$count" -ge 10 ] && [ "$count" != $max ] || sp_fail "StallCount $count in tracefs mode"
[ "$(stalls_dev_prop "$loop" StallP99USec)" = $max ] || sp_fail "a p99 without durations"
[ "$(stalls_dev_prop "$loop" StallMaxUSec)" = $max ] || sp_fail "a max without durations"
grep -q "counts only, no durations" <<<"$("$CTL" --no-pager stats "$loop")" || sp_fail "stats does not say counts only"
grep -q "^stablepages_stall_waits_total{device=\"$loop\"} [1-9]" "$metrics" || sp_fail "metrics: no wait counter"
! grep -q "^stablepages_stall_wait_seconds_bucket{device=\"$loop\"" "$metrics" ||
        sp_fail "metrics: a histogram without durations"
[ "$(dev .desired)" = on ] || sp_fail "desired $(dev .desired): learned from counts without durations"
[ "$(dev .learned)" = null ] || sp_fail "learned $(dev .learned) without durations"
[ ! -e "$SP_TMP/state/learned" ] || sp_fail "a learned file was written"
sp_daemon_stop
echo PASS
