#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# MetricsFile= as administrators consume it: scraped by a real prometheus-node-exporter
# (Debian's, textfile collector, on a loopback port) and alerted on by the shipped rules
# (conf/stablepages.rules.yml), checked by `promtool check rules` and exercised by
# `promtool test rules` with series taken from the scrapes of three real states:
#   healthy  a required zram device (ext4 mounted) with stable writes on and a loop device,
#            the daemon managing both with its BPF stall probe;
#   breach   stall-writer on the zram filesystem, writeback throttled to 10 IOPS, budget 1 ms:
#            the daemon's window is over the budget (stablepages_stall_over_budget 1);
#   hazard   the daemon restarted observing only and without the probe (forced unavailable),
#            the zram device's stable_writes cleared by hand: required, not in force.
# Asserted on every scrape: node_textfile_scrape_error 0, every family of the file present in
# /metrics with the daemon's device labels; then rules-test-from-scrapes.py turns the scrapes
# into promtool tests in which each alert fires exactly in its state, after its `for:`.
# Root only; creates and removes its zram and loop devices, mount, cgroup, private bus and
# node exporter.
set -euo pipefail
SRC=${SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/integration/lib.sh"
sp_setup "${1:-}"
[ -x "${STALL_WRITER:-}" ] || sp_skip "stall-writer not built (\$STALL_WRITER)"
[ -e /sys/class/zram-control/hot_add ] || sp_skip "no zram-control in this kernel"
sp_require mkfs.ext4 dbus-daemon busctl prometheus-node-exporter promtool
# Debian's python3 has the parser (python3-prometheus-client) and python3-yaml.
py=/usr/bin/python3
$py -c 'import prometheus_client.parser, yaml' 2>/dev/null ||
        sp_skip "$py lacks prometheus_client or yaml (python3-prometheus-client, python3-yaml)"

. "$SRC/tests/integration/stalls-lib.sh"
stalls_setup

stalls_zram_throttled
n=$(sp_free_loop_number)
loop=loop$n
sp_loop_attach "$n" 64M

textdir=$SP_TMP/textfile
mkdir -p "$textdir"
chmod 755 "$SP_TMP" "$textdir"
metrics=$textdir/stablepages.prom
config() {
        sp_config "[Manager]
Policy=$1
Devices=$zram $loop
RescanSec=0
StallBudgetMSec=1
StallWindowSec=3
StallCalmSec=0
MetricsFile=$metrics
MetricsIntervalSec=1"
}
config balanced
stalls_daemon_start
probe=$(busctl --system get-property org.stablepages1 /org/stablepages1 org.stablepages1.Manager StallProbe | cut -d'"' -f2)
[ "$probe" = bpf ] || sp_skip "the stall probe is in mode $probe, not bpf"

# The node exporter: only the textfile collector, on a free loopback port.
port=$($py -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
prometheus-node-exporter --web.listen-address="127.0.0.1:$port" --collector.disable-defaults \
        --collector.textfile --collector.textfile.directory="$textdir" >"$SP_TMP/node-exporter.log" 2>&1 &
exporter=$!
sp_defer "kill $exporter; wait $exporter"
fetch() { $py -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "$1"; }
sp_wait_for 10000 "node exporter on 127.0.0.1:$port" fetch "http://127.0.0.1:$port/metrics" >/dev/null
sp_log "$(prometheus-node-exporter --version 2>&1 | head -n1) on 127.0.0.1:$port"

# scrape NAME: /metrics into $SP_TMP/scrape-NAME.txt, checked against the file it scraped. The
# daemon rewrites the file every second (the stall counts are live), so a scrape is kept only
# when the file is the same before and after it: else the exporter may have read the next one.
scrape() {
        local out=$SP_TMP/scrape-$1.txt file=$SP_TMP/file-$1.prom try
        for try in 1 2 3 4 5 6 7 8 9 10; do
                cp "$metrics" "$file"
                fetch "http://127.0.0.1:$port/metrics" >"$out" || sp_fail "cannot scrape 127.0.0.1:$port"
                cmp -s "$metrics" "$file" && break
                [ "$try" = 10 ] && sp_fail "$1: the metrics file changed during each of 10 scrapes"
        done
        grep -qx 'node_textfile_scrape_error 0' "$out" ||
                sp_fail "$1: node_textfile_scrape_error is not 0: $(grep node_textfile_scrape_error "$out")"
        $py - "$1" "$file" "$out" "$zram" "$loop" <<'EOF' || sp_fail "$1: the scrape does not carry the metrics file"
import sys
from prometheus_client.parser import text_string_to_metric_families as parse
name, file, out, devices = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
fams = {f.name: f for f in parse(open(out).read())}
# The exporter re-renders histogram bounds ("0.000001" becomes "1e-06"): compare their values.
def key(s):
    return (s.name, tuple(sorted((k, float(v) if k == "le" else v) for k, v in s.labels.items())), s.value)
for f in parse(open(file).read()):
    if not f.samples:
        continue  # a family with no sample (HELP and TYPE only) is not exposed
    assert f.name in fams, f"family {f.name} of the file is not in /metrics"
    got = {key(s) for s in fams[f.name].samples}
    for s in f.samples:
        assert key(s) in got, f"{key(s)} of the file is not in /metrics"
for d in devices:
    assert any(s.labels.get("device") == d for s in fams["stablepages_need"].samples), f"no {d} in /metrics"
print("# %s: %d stablepages_ families in /metrics, every sample of the file, devices %s"
      % (name, sum(n.startswith("stablepages_") for n in fams), " ".join(devices)))
EOF
}
# has REGEX: the metrics file has a line matching it (the daemon rewrites it every second).
has() { grep -Eq -- "$1" "$metrics"; }

# 1. Healthy.
sp_wait_for 5000 "metrics with $zram in force" has "^stablepages_in_force\{device=\"$zram\"\} 1$" >/dev/null
sp_wait_for 5000 "metrics with the stall judgement" has "^stablepages_stall_over_budget\{device=\"$zram\"\} 0$" >/dev/null
scrape healthy

# 2. A budget breach on a required disk (stable writes stay on whatever they cost).
line=$(stalls_write "$mnt/a.dat" 30)
sp_log "writer on $zram: $line"
slow=$(stalls_field "$line" slow)
[ "$slow" -ge 10 ] || sp_skip "the throttle did not make $zram's writers wait ($slow slow rewrites)"
sp_wait_for 10000 "metrics with $zram over the budget" has "^stablepages_stall_over_budget\{device=\"$zram\"\} 1$" >/dev/null
scrape breach

# 3. Required, not in force; the probe unavailable. The daemon only observes now: it must not
# put the flag back (that is what it does in any other mode). The flag is cleared before it
# starts: a write to sysfs sends no uevent, the daemon would see it at its next rescan only.
sp_daemon_stop
config observe
echo 0 >"/sys/block/$zram/queue/stable_writes"
SP_DAEMON_ENV=STABLEPAGES_STALLS_FORCE_UNAVAILABLE=1 stalls_daemon_start
sp_wait_for 10000 "metrics with $zram not in force" has "^stablepages_in_force\{device=\"$zram\"\} 0$" >/dev/null
sp_wait_for 5000 "metrics with the probe unavailable" has '^stablepages_stall_probe_info\{mode="unavailable"\} 1$' >/dev/null
scrape hazard
echo 1 >"/sys/block/$zram/queue/stable_writes"

# The rules: valid, and each alert fires in its state only.
rules=$SRC/conf/stablepages.rules.yml
promtool check rules "$rules" | sed 's/^/# /'
$py "$SRC/tests/integration/rules-test-from-scrapes.py" "$rules" "127.0.0.1:$port" "$zram,$loop" \
        "$SP_TMP/scrape-healthy.txt" "$SP_TMP/scrape-breach.txt" "$SP_TMP/scrape-hazard.txt" \
        >"$SP_TMP/rules-test.yml" || sp_fail "cannot make the promtool tests from the scrapes"
out=$(promtool test rules "$SP_TMP/rules-test.yml" 2>&1) || {
        echo "$out" >&2
        sp_fail "promtool test rules failed"
}
sp_log "promtool test rules: $(grep -c '"alertname"' "$SP_TMP/rules-test.yml") alert checks on" \
        "$(grep -c '"series"' "$SP_TMP/rules-test.yml") series from 3 scrapes: $(tail -n1 <<<"$out" | xargs)"
sp_daemon_stop
echo "PASS: the metrics file through node exporter, and the alerting rules"
