#!/bin/bash
# Scenario 3 (issue 6): md raid5 over three loop devices, with the project's udev rule run by
# the host's systemd-udevd in the guest, Policy=latency (so that a "none" turns the flag off).
# - skip_copy=0: classified "none", the kernel flag reads 0 after the rule ran on add/change;
# - skip_copy=1: the kernel sets the flag itself (reads 1) and the need is "required";
# - drift: the flag is cleared behind the engine's back; a udev "change" event of md0 runs the
#   rule, whose applier puts it back to 1 (a "none" there would leave it at 0);
# - skip_copy=0 again: the kernel clears the flag and the udev path keeps it off.
. "$VM_REPO/tests/vm/scenarios/lib.sh"

config "[Manager]
Policy=latency
Devices=md*"
udevd_start
md=$(mkmd md0 5 3 0)
udevadm settle -t 30
show md0
check "the rule ran the applier for md0 on its events" udev_ran md0 > /dev/null
check "skip_copy=0: need of md0 is none" need_is md0 none
check "skip_copy=0: the kernel flag reads 0" flag_is md0 0

echo 1 > /sys/block/md0/md/skip_copy
show md0
check "skip_copy=1: the kernel set the flag (reads 1)" flag_is md0 1
check "skip_copy=1: need of md0 is required" need_is md0 required
say "  reasons: $(reasons md0 | head -1)"

echo 0 > /sys/block/md0/queue/stable_writes
check "drift: the flag was cleared by hand (reads 0)" flag_is md0 0
runs=$(udev_ran md0 | wc -l)
udevadm trigger --action=change /sys/block/md0 || bad "udevadm trigger"
udevadm settle -t 30
check "the change event ran the applier again" [ "$(udev_ran md0 | wc -l)" -gt "$runs" ]
udev_ran md0 | tail -n 2 | sed 's/^/  udevd: /' | tee -a "$RESULT"
check "skip_copy=1: the udev path re-applied stable writes (flag reads 1)" flag_is md0 1

echo 0 > /sys/block/md0/md/skip_copy
check "skip_copy=0 again: the kernel cleared the flag" flag_is md0 0
udevadm trigger --action=change /sys/block/md0
udevadm settle -t 30
check "skip_copy=0 again: the udev path leaves it off" flag_is md0 0
check "skip_copy=0 again: need of md0 is none" need_is md0 none
mdadm --stop /dev/md0 > /dev/null 2>&1
sp_done
