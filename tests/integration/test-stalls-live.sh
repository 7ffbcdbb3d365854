#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The stall counts are live (issue 16): an administrator who just reproduced a stall sees it at
# once, not at the daemon's next poll of the probe. A loop device with stable_writes=1 at mount
# carries ext4, throttled to 10 write IOPS; the daemon polls its probe every 5 s
# (StallWindowSec=3600). Twice, stall-writer makes 12 rewrites wait (~1.2 s), and right after it
# (well within the 5 s between two polls) `stablepagesctl stats --json`, GetStalls, the
# StallCount property and `stablepagesctl explain` must all show the waits the writer measured
# (its rewrites over 1 ms, within 1), and the second time the total must have grown by as many.
# Root only; creates and removes its loop device, mount, cgroup, private bus.
set -euo pipefail
SRC=${SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/integration/lib.sh"
sp_setup "${1:-}"
sp_ctl_arg "${2:-}"
[ -x "${STALL_WRITER:-}" ] || sp_skip "stall-writer not built (\$STALL_WRITER)"
sp_require mkfs.ext4 dbus-daemon busctl jq

. "$SRC/tests/integration/stalls-lib.sh"
stalls_setup

n=$(sp_free_loop_number)
loop=loop$n
sp_loop_attach "$n" 256M
mnt=$SP_TMP/mnt
stalls_mount_flag1 "$loop" "$mnt"
stalls_throttle "$loop" 10

sp_config "[Manager]
Policy=observe
Devices=$loop
RescanSec=0
StallWindowSec=3600"
stalls_daemon_start
probe=$(busctl --system get-property org.stablepages1 /org/stablepages1 org.stablepages1.Manager StallProbe | cut -d'"' -f2)
[ "$probe" = bpf ] || sp_skip "the stall probe is in mode $probe, not bpf"

# The programs of shadow waits (what stable writes would cost) are attached only while a disk that
# may need stable writes (need not none) runs without them: its flag, or a consumer that took off.
# The loop needs none; whether another disk of the machine does is read from devices.json.
sp_wait_for 3000 "the daemon's word on shadow waits" \
        grep -Eq "Stall probe: shadow waits (not measured|measured from now on)" "$SP_TMP/daemon.log" >/dev/null
wanting=$(jq -r '[.devices[] | select(.need != "none") |
                  select(.in_force == false or any(.consumers[]?; .in_force == false)) | .name] | join(" ")' \
        "$SP_RUNTIME/devices.json")
measured=$(stalls_dev_prop "$loop" StallShadowMeasured)
if [ -z "$wanting" ]; then
        [ "$measured" = false ] || sp_fail "shadow waits measured, though no disk that may need stable writes runs without them"
        grep -q "Stall probe: shadow waits not measured: no disk that may need stable writes runs without them" \
                "$SP_TMP/daemon.log" || sp_fail "no log line saying shadow waits are not measured"
        "$CTL" --no-pager explain "$loop" | grep -q "^  shadows: *not measured: shadow waits are measured only while a disk that may need stable writes runs without them, and none does now$" ||
                sp_fail "explain does not say why shadow waits are not measured: $("$CTL" --no-pager explain "$loop")"
else
        sp_log "disks of this machine that want shadow waits: $wanting"
        [ "$measured" = true ] || sp_fail "shadow waits not measured, though $wanting may need stable writes and run without them"
fi

# The waits of the disk as each reader shows them, one per line.
readers() {
        "$CTL" --no-pager --json stats "$loop" | jq -r '.[0].stalls.total.count'
        busctl --system call org.stablepages1 /org/stablepages1 org.stablepages1.Manager GetStalls s "$loop" |
                cut -d' ' -f5
        stalls_dev_prop "$loop" StallCount
        "$CTL" --no-pager explain "$loop" | sed -n 's/^ *stalls: *\([0-9]*\) waits since the probe started.*/\1/p'
}

total=0
for round in 1 2; do
        line=$(stalls_write "$mnt/f$round" 12)
        t=$(sp_now_ms)
        seen=$(readers)
        t=$(($(sp_now_ms) - t))
        slow=$(stalls_field "$line" slow)
        sp_log "round $round: writer $line; read within $t ms: $(tr '\n' ' ' <<<"$seen")"
        [ "$slow" -ge 6 ] || sp_skip "the throttle did not make $loop's writers wait ($slow slow rewrites)"
        total=$((total + slow))
        [ "$(wc -l <<<"$seen")" = 4 ] || sp_fail "not every reader answered: $seen"
        while read -r count; do
                [ -n "$count" ] || sp_fail "a reader showed no count"
                ((count >= total - round && count <= total + 2 * round)) ||
                        sp_fail "round $round: a reader shows $count waits, the writer measured $total slow rewrites"
        done <<<"$seen"
done
sp_daemon_stop
echo PASS
