#!/bin/bash
# stablepagesd dump --json on this machine's real sysfs: zram devices are required, virtio
# disks none, every disk appears once, and dump writes nothing (issue 2). The zram device
# it checks is one it hot-adds itself (removed afterwards); vda is only read.
set -uo pipefail
SPD=${1:-${STABLEPAGESD:-stablepagesd}}

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to hot-add a zram device"; exit 77; }
[ -e /sys/class/zram-control/hot_add ] || { echo "SKIP: no zram-control in this kernel"; exit 77; }

tmp=$(mktemp -d /tmp/stablepages-dump.XXXXXX)
zram=""
cleanup() {
        [ -n "$zram" ] && echo "${zram#zram}" > /sys/class/zram-control/hot_remove 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT

zram=zram$(cat /sys/class/zram-control/hot_add) || exit 1
before=$(for f in /sys/block/*/queue/stable_writes; do echo "$f $(cat "$f")"; done)

"$SPD" --config-dir="$tmp/etc" --runtime-dir="$tmp/run" dump --json=pretty > "$tmp/dump.json" || {
        echo "FAIL: dump exited $?"; exit 1; }
after=$(for f in /sys/block/*/queue/stable_writes; do echo "$f $(cat "$f")"; done)
[ "$before" = "$after" ] || { echo "FAIL: dump changed a flag"; exit 1; }
[ ! -e "$tmp/run" ] || { echo "FAIL: dump wrote runtime state"; exit 1; }

python3 - "$tmp/dump.json" "$zram" <<'PY'
import json, os, sys
devices = json.load(open(sys.argv[1]))
ours = sys.argv[2]
names = [d["name"] for d in devices]
assert sorted(names) == sorted(os.listdir("/sys/block")), (names, os.listdir("/sys/block"))
by = {d["name"]: d for d in devices}
for name, d in by.items():
    if name.startswith("zram"):
        assert d["need"] == "required", (name, d["need"], d["reasons"])
        assert "zram compresses" in d["reasons"][0], d["reasons"]
    if name.startswith("vd"):
        assert d["need"] == "none", (name, d["need"])
    for key in ("devnum", "kind", "stable_writes", "in_force", "need", "reasons", "desired", "facts"):
        assert key in d, (name, key)
assert ours in by, ours
assert by[ours]["stable_writes"] == 1 and by[ours]["in_force"] is True
if "vda" in by:
    assert by["vda"]["need"] == "none" and by["vda"]["kind"] == "virtio"
print("dump: %d disks; %s required; vda %s" % (len(devices), ours, by.get("vda", {}).get("need")))
PY
