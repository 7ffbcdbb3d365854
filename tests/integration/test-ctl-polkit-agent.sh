#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# stablepagesctl's polkit agent, as systemctl's: a caller that is not root, on a terminal
# (script(1) gives it one), gets pkttyagent registered for its process before the call goes
# out, and the call allows interactive authorization; --no-ask-password starts no agent and
# allows none; without a terminal no agent starts (the call still allows interaction, for an
# agent of the user's session); root needs none. Seen on the private system bus with
# `busctl monitor` (the agent's RegisterAuthenticationAgentWithOptions, the flags of
# SetDevicePolicy), with the real polkitd.
#
# polkit uses a --fallback agent only for a subject in a login session, which these callers
# do not have: the call is refused either way here. The systemd guest (tests/vm/boot, base
# scenario, check polkit-prompt) drives the password prompt itself under tmux.
#
# Usage: test-ctl-polkit-agent.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
source "$(dirname "$0")/robust-lib.sh"
robust_setup --bus-polkit "$@"
CTL=$SP_CTL
sp_require setpriv script
[ -x /usr/bin/pkttyagent ] || sp_skip "pkttyagent is missing (polkitd)"
robust_own_loop 16M
robust_daemon_start

mon=$SP_TMP/monitor.txt
busctl --system monitor >"$mon" 2>"$SP_TMP/monitor.err" &
sp_defer "kill $!"
sp_wait_for 5000 "busctl monitor" grep -q "Monitoring" "$SP_TMP/monitor.err" >/dev/null

# What the monitor saw of the calls so far: "register" for each agent registered, "set FLAGS"
# for each SetDevicePolicy call (4: ALLOW_INTERACTIVE_AUTHORIZATION), in their order.
seen() {
        awk '/^‣ Type=method_call/ { for (i = 1; i <= NF; i++) if ($i ~ /^Flags=/) flags = substr($i, 7) }
             /Member=RegisterAuthenticationAgentWithOptions$/ { print "register" }
             /Member=SetDevicePolicy$/ { print "set " flags }' "$mon"
}
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups --)

# call LABEL WANT_EXIT WANT_SEEN TTY|PIPE COMMAND...: runs COMMAND (on a terminal for TTY);
# checks its exit status, and what the bus saw of it (the calls since the previous call).
call() {
        local what=$1 want=$2 want_seen=$3 how=$4 before sets rc=0 out now
        shift 4
        before=$(seen | wc -l)
        sets=$(grep -c 'Member=SetDevicePolicy$' "$mon" || true)
        if [ "$how" = TTY ]; then
                out=$(script -qec "$(printf '%q ' "$@")" /dev/null </dev/null 2>&1) || rc=$?
        else
                out=$("$@" </dev/null 2>&1) || rc=$?
        fi
        [ "$rc" = "$want" ] || sp_fail "$what: exit $rc, want $want: $out"
        sp_wait_for 5000 "$what: SetDevicePolicy on the monitor" \
                sh -c "[ \"\$(grep -c 'Member=SetDevicePolicy$' '$mon')\" -gt $sets ]" >/dev/null
        now=$(seen | tail -n +"$((before + 1))" | tr '\n' ' ' | sed 's/ $//')
        [ "$now" = "$want_seen" ] || sp_fail "$what: the bus saw '$now', want '$want_seen' (output: $out)"
        sp_log "$what: exit $rc; the bus saw: $now"
}

call "nobody on a terminal" 1 "register set 4" TTY "${nobody[@]}" "$CTL" set "$loop" on --runtime
grep -A40 'Member=RegisterAuthenticationAgentWithOptions$' "$mon" | grep -q 'STRING "fallback"' ||
        sp_fail "the agent did not register as a fallback (pkttyagent --fallback)"
if pgrep -u 65534 -x pkttyagent >/dev/null; then
        sp_fail "pkttyagent still runs after stablepagesctl exited: $(pgrep -a -u 65534 -x pkttyagent)"
fi
call "nobody on a terminal, --no-ask-password" 1 "set 0" TTY "${nobody[@]}" "$CTL" --no-ask-password set "$loop" on --runtime
call "nobody without a terminal" 1 "set 4" PIPE "${nobody[@]}" "$CTL" set "$loop" on --runtime
call "root on a terminal" 0 "set 4" TTY "$CTL" set "$loop" on --runtime --apply
[ "$(sp_flag "$loop")" = 1 ] || sp_fail "root's set did not apply: $loop reads $(sp_flag "$loop")"
echo "PASS: the polkit agent starts for a caller that can answer, before the call, and only then"
