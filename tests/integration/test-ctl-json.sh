#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# stablepagesctl --json, verb by verb (issue 18): every verb that prints prints JSON that jq
# parses, in both --json=short and --json=pretty, with the members stablepagesctl(1)
# documents and the values the situation calls for; reload prints nothing; the exit codes and
# the "error:" lines on stderr are those of the text output. Without the daemon (explain,
# check-config) and against the real daemon on a private system bus (status, explain, stats,
# set, reset, apply, a refused apply, monitor).
#
# Usage: test-ctl-json.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
source "$(dirname "$0")/robust-lib.sh"
robust_setup --bus "$@"
command -v jq >/dev/null || sp_skip "jq is not installed"

checks=0
# json RC FILTER CTL-ARGS...: runs stablepagesctl --json=short and --json=pretty with CTL-ARGS,
# checks the exit status is RC, that stdout is one JSON document and that jq -e FILTER holds.
json() {
        local want=$1 filter=$2 mode out rc
        shift 2
        for mode in short pretty; do
                rc=0
                out=$("$SP_CTL" --no-pager --json=$mode "$@" 2>"$SP_TMP/stderr" </dev/null) || rc=$?
                checks=$((checks + 1))
                [ "$rc" -eq "$want" ] ||
                        sp_fail "stablepagesctl --json=$mode $*: exit $rc, want $want: $out $(cat "$SP_TMP/stderr")"
                jq -e . >/dev/null <<<"$out" || sp_fail "stablepagesctl --json=$mode $*: not JSON: $out"
                [ "$(jq -s length <<<"$out")" -eq 1 ] || sp_fail "stablepagesctl --json=$mode $*: not one document: $out"
                jq -e "$filter" >/dev/null <<<"$out" ||
                        sp_fail "stablepagesctl --json=$mode $*: $filter does not hold: $out"
                if [ "$mode" = short ]; then
                        [ "$(wc -l <<<"$out")" -eq 1 ] || sp_fail "stablepagesctl --json=short $*: not one line: $out"
                fi
        done
}

# $loop, and $prot that "needs" stable writes (Need=required).
robust_loop_pair
printf '[Manager]\nPolicy=balanced\nPolicy=sideways\n' >"$SP_TMP/bad.conf"
# A third loop device with one partition (an MBR written by hand: 1 MiB in, to the end), for
# explain --json PARTITION: the record of its disk, with and without the daemon.
p=$(sp_free_loop_number)
truncate -s 32M "$SP_TMP/part.img"
printf '\x00\x00\x00\x00\x83\x00\x00\x00\x00\x08\x00\x00\x00\xf8\x00\x00' |
        dd of="$SP_TMP/part.img" bs=1 seek=446 conv=notrunc status=none
printf '\x55\xaa' | dd of="$SP_TMP/part.img" bs=1 seek=510 conv=notrunc status=none
sp_defer "sp_loop_destroy $p"
losetup -P "/dev/loop$p" "$SP_TMP/part.img" || sp_fail "cannot attach /dev/loop$p with partitions"
part=
for _ in $(seq 50); do
        [ -e "/sys/class/block/loop${p}p1" ] && part=loop${p}p1 && break
        sleep 0.02
done
# A kernel without CONFIG_MSDOS_PARTITION (this sandbox's) makes no partition: said, not failed.
[ -n "$part" ] || sp_log "note: no loop${p}p1 (the kernel reads no MBR): explain --json PARTITION not checked"

# 1. No daemon: explain reads sysfs; check-config reads files.
json 0 "length == 1 and .[0].name == \"$loop\" and .[0].kind == \"loop\" and (.[0].reasons | length) > 0
        and (.[0].desired | type) == \"string\" and .[0].setting == \"auto\" and .[0].override == null" \
        --config-dir="$SP_ETC" explain "$loop"
[ -z "$part" ] || json 0 "length == 1 and .[0].name == \"loop$p\"" --config-dir="$SP_ETC" explain "$part"
json 0 '.diagnostics == [] and .errors == 0 and .warnings == 0' check-config --config-dir="$SP_ETC"
json 1 ".errors == 1 and .warnings == 0 and (.diagnostics | length) == 1 and .diagnostics[0].file == \"$SP_TMP/bad.conf\"
        and .diagnostics[0].line == 3 and .diagnostics[0].level == \"error\"
        and (.diagnostics[0].message | test(\"invalid Policy= value .sideways.\"))" check-config "$SP_TMP/bad.conf"

# 2. The daemon.
# shellcheck disable=SC2119 # no extra arguments for the daemon
robust_daemon_start
json 0 "length == 1 and .[0].name == \"$loop\" and (.[0].stalls | type) == \"object\" and (.[0].mounts | type) == \"array\"" \
        status "$loop"
json 0 "length == 1 and .[0].name == \"$prot\" and .[0].need == \"required\"" explain "$prot"
[ -z "$part" ] || json 0 "length == 1 and .[0].name == \"loop$p\"" explain "$part"
json 0 'type == "array"' stats
json 0 "length == 1 and .[0].name == \"$loop\" and (.[0] | keys) == [\"cost\", \"mirror\", \"name\", \"stalls\"]
        and .[0].stalls.measured == true and (.[0].stalls.total.hist | length) == 32
        and (.[0].cost.on | type) == \"string\" and (.[0].cost.off | type) == \"string\"
        and .[0].mirror == null" stats "$loop"
# --json=off undoes an earlier --json: the text of status, as without either.
checks=$((checks + 1))
[ "$("$SP_CTL" --no-pager --json --json=off status "$loop" 2>&1)" = "$("$SP_CTL" --no-pager status "$loop" 2>&1)" ] ||
        sp_fail "--json --json=off status is not the text of status: $("$SP_CTL" --no-pager --json --json=off status "$loop" 2>&1)"
# One schema of stall figures: stats --json holds the "stalls" of status --json, member for member.
stall_paths() { "$SP_CTL" --json "$@" | jq -c '[.[0].stalls | paths | map(tostring) | join(".")] | sort'; }
checks=$((checks + 1))
[ "$(stall_paths stats "$loop")" = "$(stall_paths status "$loop")" ] ||
        sp_fail "stats --json and status --json hold stall figures in two shapes: $(stall_paths stats "$loop") vs $(stall_paths status "$loop")"
json 0 ".device == \"$loop\" and .setting == \"on\" and (.message | startswith(\"$loop\"))" set "$loop" on --runtime --apply
[ "$(cat "/sys/block/$loop/queue/stable_writes")" = 1 ] ||
        sp_fail "set --json $loop on --apply: stable writes not on"
json 0 "length == 1 and .[0].device == \"$loop\" and .[0].ok == true and .[0].changed == false
        and .[0].stable_writes == true and (.[0].message | startswith(\"$loop\"))" apply "$loop"
# reset --json removes the runtime override once: the second run has nothing to remove.
out=$("$SP_CTL" --json reset "$loop" --runtime 2>&1) || sp_fail "reset --json $loop --runtime: $out"
checks=$((checks + 1))
jq -e ".device == \"$loop\" and (.removed | length) == 1 and (.removed[0] | test(\"runtime\"))" <<<"$out" >/dev/null ||
        sp_fail "reset --json: $out"
rc=0
out=$("$SP_CTL" --json reset "$loop" --runtime 2>/dev/null) || rc=$?
checks=$((checks + 1))
{ [ "$rc" -eq 1 ] && [ -z "$out" ]; } || sp_fail "reset --json with nothing to remove: exit $rc, stdout \"$out\""
# A failure prints no JSON, only its error: the exit code says what failed.
for args in "explain nosuchdisk9" "set nosuchdisk9 on" "apply nosuchdisk9"; do
        rc=0
        # shellcheck disable=SC2086 # the words of args
        out=$("$SP_CTL" --json $args 2>/dev/null) || rc=$?
        checks=$((checks + 1))
        { [ "$rc" -eq 4 ] && [ -z "$out" ]; } || sp_fail "--json $args: exit $rc, stdout \"$out\""
done
# A refused apply: in the array with ok false, said on stderr, exit 1.
sp_dropin 50-refused.conf "[Device $prot]
StableWrites=off"
out=$("$SP_CTL" --json reload 2>&1) || sp_fail "reload --json: $out"
[ -z "$out" ] || sp_fail "reload --json printed \"$out\""
checks=$((checks + 1))
json 1 "length == 1 and .[0].device == \"$prot\" and .[0].ok == false and .[0].stable_writes == true" apply "$prot"
grep -q "error: $prot" "$SP_TMP/stderr" || sp_fail "refused apply --json: no error: on stderr: $(cat "$SP_TMP/stderr")"
rm "$SP_ETC/stablepages.conf.d/50-refused.conf"

# monitor --json: one JSON object per line and event, while a set --apply and a reload happen.
"$SP_CTL" --json monitor >"$SP_TMP/monitor" 2>"$SP_TMP/monitor.err" &
mon=$!
sp_wait_for 3000 "stablepagesctl --json monitor" grep -q Monitoring "$SP_TMP/monitor.err" >/dev/null
before=$(cat "/sys/block/$loop/queue/stable_writes")
if [ "$before" = 1 ]; then want=off after=false before=true; else want=on after=true before=false; fi
"$SP_CTL" set "$loop" "$want" --runtime --apply >/dev/null || sp_fail "set $loop $want --runtime --apply failed"
"$SP_CTL" reload || sp_fail "reload failed"
monitor_saw() { jq -e -s "$1" "$SP_TMP/monitor" >/dev/null 2>&1; }
applied="any(.event == \"applied\" and .device == \"$loop\" and .before == $before and .after == $after
        and (.message | type) == \"string\")"
reloaded='any(.event == "reloaded" and .ok == true)'
sp_wait_for 3000 "the applied and reloaded events" monitor_saw "$applied and $reloaded" >/dev/null ||
        sp_fail "monitor --json: no applied event for $loop ($before -> $after) or no reloaded event: $(cat "$SP_TMP/monitor")"
kill -INT "$mon"
wait "$mon" || sp_fail "monitor --json: exit $? on SIGINT"
checks=$((checks + 1))
while read -r line; do
        jq -e 'type == "object" and (.event | type) == "string"' >/dev/null <<<"$line" ||
                sp_fail "monitor --json: not an event object: $line"
done <"$SP_TMP/monitor"
"$SP_CTL" reset "$loop" --runtime >/dev/null || true

sp_daemon_stop
sp_log "ctl-json: $checks invocations, each verb's JSON parsed and its members checked"
