# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# Helpers of the unmount + mount cycle scenarios (remount, remount-conf, remount-kill), on top
# of lib.sh. The disks: vdb (fstab, /mnt/sptest), vdd (mounted by hand: no unit file), vde
# (fstab, /srv/pof), each ext4 with stable writes set by the drop-in $dropin, one section
# "[Device NAME]" per disk.

dropin=/etc/stablepages.conf.d/50-sptest.conf
mkdir -p /run/sptest

# The superblock's identity: the inode of /sys/fs/ext4/DISK changes with each new superblock
# (mount ids are reused at once, they tell nothing).
sb_id() { stat -c %i "/sys/fs/ext4/$1" 2>/dev/null || echo none; }
# What is mounted on a path, "" if nothing (the last mount there).
source_at() { findmnt -n -o SOURCE --mountpoint "$1" 2>/dev/null | tail -n1; }
# How many mounts there are on a path (a stacked mount makes 2).
mounts_at() { awk -v t="$1" '$5 == t { n++ } END { print n + 0 }' /proc/self/mountinfo; }
# Where DEV is mounted, one line each.
where_mounted() { findmnt -n -o TARGET --source "$1" 2>/dev/null; }

# fill DIR: files of random data, their checksums kept outside the filesystem.
fill() {
        mkdir -p "$1/data"
        head -c 1M /dev/urandom >"$1/data/big"
        seq 1 20000 >"$1/data/text"
        head -c 4096 /dev/urandom >"$1/data/page"
        (cd "$1" && sha256sum data/*) >"/run/sptest/$(basename "$1").sha256"
        sync -f "$1/data/big"
}
# verify_files DIR [NAME]: true when every file that fill wrote to a directory named NAME
# (default: DIR's) is in DIR with its checksum.
verify_files() { (cd "$1" 2>/dev/null && sha256sum --quiet -c "/run/sptest/${2:-$(basename "$1")}.sha256" 2>/dev/null); }

# The MOUNTS column of stablepagesctl status for DISK ("/srv/cyc:on(pending)").
status_mounts() { stablepagesctl --no-pager --no-legend status "$1" | awk -v d="$1" '$1 == d { print $5 }'; }
# The state the daemon tracks for the filesystem on TARGET: "on", "off", "on(pending)"...
tracked() { status_mounts "$2" | tr ',' '\n' | sed -n "s|^$1:||p"; }

# set_policy DISK on|off: the drop-in's StableWrites= of DISK, and a reload.
set_policy() {
        sed -i "/^\[Device $1\]/,/^StableWrites=/ s/^StableWrites=.*/StableWrites=$2/" "$dropin"
        systemctl reload stablepagesd.service
}

# Waits up to $1 seconds for a command to succeed.
wait_for() {
        local i
        for ((i = 0; i < $1 * 10; i++)); do
                "${@:2}" && return 0
                sleep 0.1
        done
        return 1
}

# apply_remount DISK: stablepagesctl apply --remount DISK; its output in $out, exit in $rc.
apply_remount() {
        out=$(stablepagesctl --no-pager apply --remount "$1" 2>&1)
        rc=$?
        info "apply --remount $1: exit $rc:"
        while IFS= read -r line; do info "  $line"; done <<<"$out"
}

# The journal files of cycles in flight.
journals() { find /run/stablepages/cycles -maxdepth 1 -type f ! -name '*.lock' -printf '%f\n' 2>/dev/null; }
