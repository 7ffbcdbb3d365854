#!/bin/bash
# Scenario 7 (issue 6): boot order. No daemon: the host's systemd-udevd runs in the guest with
# the project's rule (units/60-stablepages.rules, its applier being the built stablepagesd).
# A disk appears (a plain scsi_debug disk; its ext4 is made on a first appearance, then the
# disk is removed and added again: the "boot"). On that add event the rule alone sets the flag as the
# configuration says, before the filesystem is mounted; the mounted filesystem then behaves
# accordingly: with the disk slowed down (scsi_debug delay, about 100 ms per command) the
# writer's own rewrite timing shows every rewrite waiting for writeback when the rule set
# StableWrites=on, and none waiting when it set off.
. "$VM_REPO/tests/vm/scenarios/lib.sh"

SD=/sys/bus/pseudo/drivers/scsi_debug
udevd_start

# boot SETTING: (re)adds the scsi_debug disk with StableWrites=SETTING in the configuration,
# lets udev process the add, and sets DISK
boot() {
        config "[Manager]
Devices=sd*
[Device sd*]
StableWrites=$1"
        udev_mark # the disk may get the same name as the last one
        if [ -e "$SD/add_host" ]; then
                echo 1 > "$SD/add_host"
        else
                modprobe scsi_debug dev_size_mb=64 || die "modprobe scsi_debug"
        fi
        DISK=""
        for ((i = 0; i < 100; i++)); do
                for b in "$SD"/adapter*/host*/target*/*/block/*; do [ -e "$b" ] && DISK=${b##*/}; done
                [ -n "$DISK" ] && break
                sleep 0.1
        done
        [ -n "$DISK" ] || die "no scsi_debug disk"
        udevadm settle -t 30 || bad "udevadm settle"
        show "$DISK"
}
unplug() { # removes the scsi_debug host (and its disk)
        echo -1 > "$SD/add_host"
        udevadm settle -t 30
}

boot on
mkfs.ext4 -q -F "/dev/$DISK" || die "mkfs.ext4"
unplug

for setting in on off; do
        say "StableWrites=$setting:"
        boot "$setting"
        want=$([ "$setting" = on ] && echo 1 || echo 0)
        for ((i = 0; i < 100; i++)); do udev_ran "$DISK" > /dev/null && break; sleep 0.1; done
        check "the rule ran the applier on the add of $DISK" udev_ran "$DISK" > /dev/null ||
                tail -n +"$((UDEV_MARK + 1))" /run/sp/udevd.log | grep -a "^$DISK: " | tail -n 5
        udev_ran "$DISK" | grep "(err)" | tail -n 1 | sed 's/^/  udevd: /' | tee -a "$RESULT"
        check "StableWrites=$setting: the flag of $DISK reads $want before mount" flag_is "$DISK" "$want"
        check "no filesystem of $DISK was mounted yet" [ -z "$(grep "^/dev/$DISK " /proc/mounts)" ]
        fresh_mount "/dev/$DISK" /mnt/t
        echo 25 > "$SD/delay"
        probe_start
        stalls /mnt/t/stall 10
        probe_stop "$(cat "/sys/block/$DISK/dev")"
        echo 1 > "$SD/delay"
        if [ "$setting" = on ]; then
                check "StableWrites=on: the rewrites waited for writeback (slow=$STALL_SLOW of 10)" \
                        [ "$STALL_SLOW" -ge 8 ]
                check "StableWrites=on: the probe saw the waits ($PROBE_WAITS, slow rewrites $STALL_SLOW)" \
                        [ "$PROBE_WAITS" -ge "$((STALL_SLOW - 1))" ]
        else
                # The probe's count is the measure; the wall clock of a TCG guest under load is not.
                say "  StableWrites=off: $STALL_SLOW of 10 rewrites took over 10 ms of wall clock"
                check "StableWrites=off: no rewrite waited for writeback (the probe saw $PROBE_WAITS waits)" \
                        [ "$PROBE_WAITS" -eq 0 ]
        fi
        umount /mnt/t
        unplug
done
sp_done
