#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The adaptive balanced policy end to end (issue 5), on the setup of test-stalls-crossval.sh:
# a loop device with stable_writes=1 carries ext4, its writes throttled to 10 IOPS through the
# blkio v1 controller, and stall-writer rewrites a page under writeback (~100 ms waits).
# The config makes the loop "recommended" (Need=recommended), Policy=balanced, a 10 ms budget
# and a 3 s window. Asserted:
#   1. the BPF probe runs (StallProbe=bpf; skip otherwise) and the disk reads as measured, 0 waits;
#      a learned off keyed by the kernel name (written by an earlier version, for whichever disk
#      had the name) is not applied: desired on, one log line naming it, dropped at the next save;
#   2. after the writer, the daemon learned off: desired off with source "stalls", the flag 0,
#      the log quotes the p99 and the budget, the BudgetExceeded signal carried the figures
#      (and stablepagesctl monitor printed it),
#      the mount is reported pending (stablepagesctl --json and the Pending property), the
#      learned file exists under --state-dir, explain says when and why it was learned;
#   3. GetStalls / stablepagesctl stats show the waits: count close to the writer's slow
#      rewrites, p99 over the budget; the text histogram has bars;
#   4. MetricsFile= parses with prometheus_client's parser: flag, desired, need, pending,
#      learned match sysfs and the daemon, the stall histogram is cumulative up to +Inf ==
#      _count == the probe's count, _sum in seconds;
#   5. after unmount + mount the writer's own timing shows no slow rewrite any more;
#   6. the one-shot applier (stablepagesd apply, as the udev rule runs it at boot) reads the
#      learned state: with the flag set back to 1 by hand it writes 0 again;
#   7. everyone may read the figures, only root (or polkit) may ResetStalls, which forgets them;
#   8. with a 2 s StallCalmSec=, the daemon learns on again (no window over the budget since the
#      filesystem was mounted without stable writes), writes the flag 1 and records it.
# Root only; creates and removes its loop device, mount, cgroup, private bus.
set -euo pipefail
SRC=${SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/integration/lib.sh"
sp_setup "${1:-}"
sp_ctl_arg "${2:-}"
[ -x "${STALL_WRITER:-}" ] || sp_skip "stall-writer not built (\$STALL_WRITER)"
sp_require mkfs.ext4 dbus-daemon busctl python3
# Debian's python3-prometheus-client is for /usr/bin/python3, which another python3 may shadow.
PY=""
for p in python3 /usr/bin/python3; do
        "$p" -c 'import prometheus_client.parser' 2>/dev/null && { PY=$p; break; }
done
[ -n "$PY" ] || sp_skip "python3-prometheus-client is missing"

. "$SRC/tests/integration/stalls-lib.sh"
stalls_setup

n=$(sp_free_loop_number)
loop=loop$n
sp_loop_attach "$n" 256M
mnt=$SP_TMP/mnt
stalls_mount_flag1 "$loop" "$mnt"
stalls_throttle "$loop" 10

sp_config "[Manager]
Policy=balanced
Devices=$loop
RescanSec=0
StallBudgetMSec=10
StallWindowSec=3
StallCalmSec=3600
MetricsFile=$SP_TMP/metrics/stablepages.prom
MetricsIntervalSec=1

[Device $loop]
Need=recommended"
mkdir -p "$SP_TMP/metrics" "$SP_TMP/state"
printf 'name:%s\t%s\toff\t1764730000000000\t131071\t38\t10000\tlearned on whichever disk had the name\n' \
        "$loop" "$loop" >"$SP_TMP/state/learned"

stalls_daemon_start
probe=$(busctl --system get-property org.stablepages1 /org/stablepages1 org.stablepages1.Manager StallProbe | cut -d'"' -f2)
[ "$probe" = bpf ] || sp_skip "the stall probe is in mode $probe, not bpf: $(grep 'Stall probe' "$SP_TMP/daemon.log")"
dev() { jq -r --arg d "$loop" ".devices[] | select(.name == \$d) | $1" "$SP_RUNTIME/devices.json"; }

# 1. Measured, nothing yet; recommended by config, balanced keeps it on.
[ "$(dev .need)" = recommended ] || sp_fail "Need=recommended not applied: need $(dev .need)"
[ "$(dev .desired)" = on ] || sp_fail "desired $(dev .desired) before any stall, want on"
[ "$(dev .learned)" = null ] || sp_fail "the record keyed name:$loop was applied: learned $(dev .learned)"
grep -q "state/learned: ignoring what was learned for name:$loop: a kernel name is not a disk's identity" \
        "$SP_TMP/daemon.log" || sp_fail "no log line naming the record keyed by the kernel name"
[ "$(stalls_dev_prop "$loop" StallMeasured)" = true ] || sp_fail "StallMeasured is not true"
[ "$(stalls_dev_prop "$loop" StallCount)" = 0 ] || sp_fail "StallCount is not 0 before the writer"
# Shadow waits are measured only while a disk that may need stable writes runs without them. The
# loop's flag is 1 now, but its own page cache took the 0 it had when it appeared: they are.
[ "$("$CTL" --json status "$loop" | jq -r '.[0].consumers[] | select(.kind == "page-cache") | .captured')" = off ] ||
        sp_fail "the loop's page cache did not take its flag at the add: $("$CTL" --json status "$loop")"
shadows_measured() { [ "$(stalls_dev_prop "$loop" StallShadowMeasured)" = true ]; }
sp_wait_for 3000 "StallShadowMeasured true" shadows_measured >/dev/null
grep -Eq "Stall probe: shadow waits measured from now on: [a-z0-9]+ \(need (recommended|required|unknown)\) runs without stable writes\." \
        "$SP_TMP/daemon.log" || sp_fail "no log line saying why shadow waits are measured"
[ "$(stalls_dev_prop "$loop" StallShadowReason)" = '""' ] || sp_fail "StallShadowReason is not empty while they are measured"

busctl --system monitor --match "type='signal',member='BudgetExceeded'" >"$SP_TMP/signals" 2>&1 &
sp_defer "kill $!"
"$CTL" --no-pager monitor >"$SP_TMP/monitor" 2>&1 &
sp_defer "kill $!"
sleep 0.5

# 2. The writer stalls; the daemon learns off.
line=$(stalls_write "$mnt/a.dat" 40)
sp_log "writer, flag 1: $line"
slow=$(stalls_field "$line" slow)
[ "$slow" -ge 20 ] || sp_fail "only $slow of 40 rewrites were slow: the throttle did not bite"
took=$(sp_wait_for 10000 "desired off" sh -c "[ \"\$(jq -r --arg d $loop '.devices[] | select(.name == \$d) | .desired' $SP_RUNTIME/devices.json)\" = off ]")
sp_log "desired off (seen ${took} ms after the writer ended; learned at the first poll with waits)"
[ "$(dev .desired_source)" = stalls ] || sp_fail "desired_source $(dev .desired_source), want stalls"
sp_flag_is "$loop" 0 || sp_fail "the flag is $(sp_flag "$loop"), want 0 after learning off"
grep -E "$loop: Policy=balanced learned off: p99 wait [0-9.]+ ms over the last 3 s \([0-9]+ waits, max [0-9.]+ ms\) exceeds StallBudgetMSec=10.0 ms" \
        "$SP_TMP/daemon.log" || sp_fail "no log line quoting the figures"
sp_wait_for 3000 "BudgetExceeded signal" grep -q BudgetExceeded "$SP_TMP/signals" >/dev/null
grep -A8 BudgetExceeded "$SP_TMP/signals" | grep -q "\"$loop\"" || sp_fail "BudgetExceeded without the device"
grep -A8 BudgetExceeded "$SP_TMP/signals" | grep -q "UINT64 10000" || sp_fail "BudgetExceeded without the budget"
sp_wait_for 3000 "stablepagesctl monitor: budget" grep -q "^budget   $loop: p99 wait [0-9.]* ms over the budget of 10.0 ms" "$SP_TMP/monitor" >/dev/null
json=$("$CTL" --json status "$loop")
[ "$(jq -r '.[0].mounts[0].pending' <<<"$json")" = true ] || sp_fail "mount not pending: $json"
[ "$(jq -r '.[0].learned' <<<"$json")" = off ] || sp_fail "status --json: learned is not off"
[ "$(stalls_dev_prop "$loop" Pending)" = true ] || sp_fail "Pending property is not true"
grep -qP "^loop:$SP_TMP/loop$n.img\t$loop\toff\t" "$SP_TMP/state/learned" || sp_fail "no learned record: $(cat "$SP_TMP/state/learned" 2>&1)"
grep -q "^name:" "$SP_TMP/state/learned" && sp_fail "the record keyed by the kernel name was kept: $(cat "$SP_TMP/state/learned")"
explain=$("$CTL" --no-pager explain "$loop")
sp_log "explain:"; sed 's/^/#   /' <<<"$explain"
grep -Eq "learned: +off since [0-9-]+ [0-9:]+.*: p99 wait .* exceeds StallBudgetMSec=10.0 ms" <<<"$explain" ||
        sp_fail "explain does not say when and why it was learned"
grep -q "pending" <<<"$explain" || sp_fail "explain does not show the pending mount"

# 3. The figures, once the daemon polled the probe after the writer's last rewrite.
sleep 1.5
stats=$("$CTL" --no-pager --json stats "$loop")
count=$(jq -r '.[0].stalls.total.count' <<<"$stats")
p99=$(jq -r '.[0].stalls.total.p99_usec' <<<"$stats")
sp_log "GetStalls: count $count, p99 <= $p99 us, writer's slow rewrites $slow"
[ "$count" -ge $((slow - 2)) ] && [ "$count" -le 40 ] || sp_fail "probe count $count vs writer's slow rewrites $slow"
[ "$p99" -gt 10000 ] || sp_fail "p99 $p99 us is not over the 10 ms budget"
[ "$(jq -r '.[0].stalls.total.hist | add' <<<"$stats")" = "$count" ] || sp_fail "histogram does not add up to count"
text=$("$CTL" --no-pager stats "$loop")
sed 's/^/#   /' <<<"$text"
grep -q "stall-writer" <<<"$text" || sp_fail "stats: no top command"
grep -Eq '65536 -> 131071 +: +[0-9]+ +\|\*+' <<<"$text" || sp_fail "stats: no bar in the 64-128 ms bucket"
grep -q "^DEVICE.*P99" <<<"$("$CTL" --no-pager status)" || sp_fail "status has no p99 column"
grep -q "^Stall probe: bpf" <<<"$("$CTL" --no-pager status)" || sp_fail "status does not show the probe mode"

# 4. MetricsFile= through a real Prometheus text parser.
sp_wait_for 5000 "metrics file" test -s "$SP_TMP/metrics/stablepages.prom" >/dev/null
sleep 1.2 # one more interval: the file shows the state after the decision
"$PY" - "$SP_TMP/metrics/stablepages.prom" "$loop" "$(sp_flag "$loop")" \
        "$(stalls_dev_prop "$loop" StallCount)" <<'PY' || sp_fail "metrics check failed"
import sys
from prometheus_client.parser import text_string_to_metric_families
path, dev, flag, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
fams = {f.name: f for f in text_string_to_metric_families(open(path).read())}
samples = [s for f in fams.values() for s in f.samples]
def value(name, **labels):
    got = [s.value for s in samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(got) == 1, (fam, labels, got)
    return got[0]
assert value("stablepages_stable_writes", device=dev) == flag, "flag"
assert value("stablepages_desired", device=dev) == 0, "desired"
assert value("stablepages_need", device=dev, need="recommended") == 1, "need"
assert value("stablepages_pending_mounts", device=dev) >= 1, "pending"
assert value("stablepages_learned", device=dev) == 0, "learned"
assert value("stablepages_stall_probe_info", mode="bpf") == 1, "mode"
h = fams["stablepages_stall_wait_seconds"]
assert h.type == "histogram", h.type
buckets = [(s.labels["le"], s.value) for s in h.samples if s.name.endswith("_bucket") and s.labels["device"] == dev]
les = [float(le) for le, _ in buckets]
assert les == sorted(les) and les[-1] == float("inf"), les
vals = [v for _, v in buckets]
assert vals == sorted(vals), "not cumulative"
n = value("stablepages_stall_wait_seconds_count", device=dev)
s = value("stablepages_stall_wait_seconds_sum", device=dev)
assert vals[-1] == n == count, (vals[-1], n, count)
assert 0.010 * n < s < 1.0 * n, ("sum in seconds", s, n)
fast = max([v for le, v in zip(les, vals) if le < 0.065] or [0])
print("# metrics: %d waits, sum %.3f s, %d of them under 65 ms, flag %d" % (n, s, fast, flag))
PY

# 5. After unmount + mount the filesystem runs without stable writes: no more slow rewrites.
umount "$mnt" && mount "/dev/$loop" "$mnt" || sp_fail "remount"
line=$(stalls_write "$mnt/b.dat" 40)
sp_log "writer, after unmount + mount: $line"
[ "$(stalls_field "$line" slow)" -le 1 ] || sp_fail "the writer still stalls after the mount: $line"
sp_wait_for 5000 "pending cleared" sh -c "[ \"\$('$CTL' --json status $loop | jq -r '.[0].mounts[0].pending')\" = false ]" >/dev/null

# 7. ResetStalls. The figures are open to everyone; forgetting them is not.
if command -v setpriv >/dev/null; then
        nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
        [ "$(nobody "$CTL" --json stats "$loop" | jq -r '.[0].stalls.measured')" = true ] ||
                sp_fail "an unprivileged user cannot read the stall figures"
        out=$(nobody busctl --system call org.stablepages1 /org/stablepages1 org.stablepages1.Manager \
                ResetStalls s "$loop" 2>&1) && sp_fail "an unprivileged user reset the stall figures"
        # Refused by the daemon's polkit check (polkit is not on this bus), not by the bus policy.
        grep -Eq "polkit (is not running|could not decide)" <<<"$out" || sp_fail "ResetStalls as nobody: $out"
fi
busctl --system call org.stablepages1 /org/stablepages1 org.stablepages1.Manager ResetStalls s "$loop" ||
        sp_fail "ResetStalls failed"
[ "$(stalls_dev_prop "$loop" StallCount)" = 0 ] || sp_fail "StallCount not 0 after ResetStalls"

# 6. The one-shot applier at the next boot: the learned state, from the state dir.
sp_daemon_stop # SIGTERM: exit status 0 (and no leak under ASan)
echo 1 >"/sys/block/$loop/queue/stable_writes"
"$SP_BIN" --config-dir="$SP_ETC" --runtime-dir="$SP_RUNTIME" --state-dir="$SP_TMP/state" apply "$loop" ||
        sp_fail "stablepagesd apply failed"
sp_flag_is "$loop" 0 || sp_fail "the applier did not apply the learned off (flag $(sp_flag "$loop"))"

# 8. Calm: restarted with StallCalmSec=2, the disk (mounted without stable writes since step 5)
#    has no window over the budget: the daemon learns on again, writes the flag 1, records it.
sed -i 's/^StallCalmSec=3600$/StallCalmSec=2/' "$SP_ETC/stablepages.conf"
stalls_daemon_start
sp_wait_for 10000 "learned on again" sh -c "[ \"\$(jq -r --arg d $loop '.devices[] | select(.name == \$d) | .learned' $SP_RUNTIME/devices.json)\" = on ]" >/dev/null
grep -E "$loop: Policy=balanced learned on: no window over StallBudgetMSec=10.0 ms for [0-9.]+ s \(StallCalmSec=2 s\), shadow waits included: stable writes on again" \
        "$SP_TMP/daemon.log" || sp_fail "no log line for the return to on"
sp_wait_for 3000 "flag 1" sp_flag_is "$loop" 1 >/dev/null
[ "$(dev .desired)" = on ] || sp_fail "desired $(dev .desired) after the calm period"
grep -qP "^loop:$SP_TMP/loop$n.img\t$loop\ton\t" "$SP_TMP/state/learned" || sp_fail "learned on not recorded"
sp_daemon_stop
echo PASS
