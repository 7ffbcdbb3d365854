#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The stall probe's table of commands is bounded and cannot be filled for everyone (issue 15).
# On a loop device with ext4 mounted with stable writes (not throttled: each wait is one page's
# writeback, well under a millisecond), with the BPF probe:
#
# 1. a writer renames itself before each of 9,000 fdatasync() waits (more names than the
#    table's 8,192 entries; data-integrity waits, which the probe does not list by command);
# 2. then a writer renames itself before each of 9,000 stable-pages waits;
# 3. then "late-writer" waits on stable pages a few times: GetStalls still names it, with its
#    count, and the probe's losses (StallLost, StallCommsLost, stablepagesctl stats --json,
#    devices.json, MetricsFile=) read 0: the table drops the least recently used names.
#
# Usage: test-stalls-comms.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
set -euo pipefail
SRC=${SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/integration/lib.sh"
sp_setup "${1:-}"
sp_ctl_arg "${2:-}"
[ -x "${STALL_WRITER:-}" ] || sp_skip "stall-writer not built (\$STALL_WRITER)"
sp_require mkfs.ext4 dbus-daemon busctl
. "$SRC/tests/integration/stalls-lib.sh"
stalls_setup

stalls_loop_mounted 64M
mkdir -p "$SP_TMP/metrics"
sp_config "[Manager]
Policy=observe
Devices=$loop
RescanSec=0
StallWindowSec=5
MetricsFile=$SP_TMP/metrics/stablepages.prom
MetricsIntervalSec=1"
stalls_daemon_start
probe=$(busctl --system get-property org.stablepages1 /org/stablepages1 org.stablepages1.Manager StallProbe | cut -d'"' -f2)
[ "$probe" = bpf ] || sp_skip "the stall probe is in mode $probe, not bpf: the table of commands is BPF's"

start=$(sp_now_ms)
"$STALL_WRITER" --fsync --comm-cycle --iterations 9000 "$mnt/fsync" >/dev/null || sp_fail "the fsync writer failed"
line=$("$STALL_WRITER" --comm-cycle --iterations 9000 "$mnt/cycle") || sp_fail "the cycling writer failed"
sp_log "9,000 fsyncs and 9,000 rewrites under as many names in $(($(sp_now_ms) - start)) ms: $line"
ln -s "$STALL_WRITER" "$SP_TMP/late-writer"

comms() {
        busctl --system --json=short call org.stablepages1 /org/stablepages1 org.stablepages1.Manager \
                GetStalls s "$loop" | jq -r '.data[9][] | "\(.[0]) \(.[1])"'
}
# A rewrite waits only when its page is still under writeback, which on this fast device may
# already have ended (an ASan build writes slower): late-writer writes 20 pages a round until
# GetStalls names it, for up to 20 rounds. A table that kept its oldest names never would.
rounds=0
until grep -q '^late-writer ' <<<"$(comms)"; do
        [ $rounds -lt 20 ] || sp_fail "GetStalls does not name late-writer after $rounds rounds of 20 rewrites"
        "$SP_TMP/late-writer" --iterations 20 "$mnt/late" >/dev/null || sp_fail "late-writer failed"
        rounds=$((rounds + 1))
        sleep 0.2
done
sp_log "late-writer named after $rounds round(s) of 20 rewrites"
got=$(comms)
sp_log "top commands: $(tr '\n' ' ' <<<"$got")"
grep -q '^late-writer [1-9]' <<<"$got" || sp_fail "GetStalls does not name late-writer after 18,000 other names"
grep -q '^c[0-9]' <<<"$got" || sp_fail "the cycling writer's names are not counted at all"

prop() { busctl --system get-property org.stablepages1 /org/stablepages1 org.stablepages1.Manager "$1" | cut -d' ' -f2; }
if [ "$(prop StallLost)" != 0 ] || [ "$(prop StallCommsLost)" != 0 ]; then
        sp_fail "the probe lost waits or commands: StallLost $(prop StallLost), StallCommsLost $(prop StallCommsLost)"
fi
stats=$("$CTL" --json=short stats "$loop") || sp_fail "stablepagesctl stats failed"
[ "$(jq -r '.[0].stalls.probe_lost, .[0].stalls.probe_lost_comms' <<<"$stats" | tr '\n' ' ')" = "0 0 " ] ||
        sp_fail "stablepagesctl stats --json: $stats"
[ "$(jq -r '.stall_probe_lost, .stall_probe_lost_comms' "$SP_RUNTIME/devices.json" | tr '\n' ' ')" = "0 0 " ] ||
        sp_fail "devices.json does not report the losses as 0"
sp_wait_for 5000 "the losses in MetricsFile=" grep -q '^stablepages_stall_probe_lost_commands_total 0$' \
        "$SP_TMP/metrics/stablepages.prom" >/dev/null
sp_daemon_stop
sp_log "stalls-comms: ok"
