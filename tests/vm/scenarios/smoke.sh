#!/bin/sh
# Self-test of the harness: the host's tools run, devices appear, output
# reaches the host.  tests/vm/vm-run tests/vm/scenarios/smoke.sh
set -eu
echo "kernel $(uname -r)"
modprobe loop
f=$(mktemp /tmp/smoke.XXXXXX)
truncate -s 16M "$f"
dev=$(losetup --find --show "$f")
mkfs.ext4 -q "$dev"
mkdir -p /mnt/smoke
mount "$dev" /mnt/smoke
echo hello > /mnt/smoke/hello
umount /mnt/smoke
losetup -d "$dev"
dmsetup version > /dev/null
mdadm --version 2>/dev/null || true
uname -r > "$VM_OUT/uname"
echo ok
