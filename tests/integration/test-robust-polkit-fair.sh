#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The polkit slots are fair per user (bus-polkit.h, org.stablepages1(5)): four users whose
# polkit agents never answer cannot lock a fifth user out. On the private system bus with the
# real polkitd, four unprivileged users of every Debian system (daemon, bin, sys, games: dbus-daemon
# refuses connections of uids without a passwd entry, so none is made up) each send 40
# SetDevicePolicy calls at once over 4 connections, each with a polkit agent of its own that
# never answers (bus-load --hostile=storm --agent), so that polkit keeps the checks it hands to
# the agents pending. Then:
#
# - each flooding user holds at most 16 checks, and all of them together at most
#   64 - 16 + 4 (the last 16 of the 64 are for the first check of a user with none waiting);
# - a fifth user (man) gets polkit's own answer (not authorized: no agent of its own) within 1 s,
#   not LimitsExceeded; the daemon logged that the flooders' further calls were refused while
#   another user's first call is still taken;
# - once the agents go away, every call of the storms is answered.
#
# Usage: test-robust-polkit-fair.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
source "$(dirname "$0")/robust-lib.sh"
robust_setup --bus-polkit "$@"
sp_require setpriv
[ -x "${SP_BUS_LOAD:-}" ] || sp_skip "no bus-load client (\$SP_BUS_LOAD, built by meson)"
FLOODERS=(daemon bin sys games)
FIFTH="man"
for u in "${FLOODERS[@]}" "$FIFTH"; do
        getent passwd "$u" >/dev/null || sp_skip "no user $u (Debian's base-passwd has it)"
done
PER_USER=16 RESERVED=16 TOTAL=64
ANSWER_MS=1000
asan=false
grep -q libasan <<<"$(ldd "$SP_BIN" 2>/dev/null)" && asan=true

robust_own_loop 16M
robust_daemon_start
as_user() {
        local u=$1
        shift
        setpriv --reuid="$u" --regid="$u" --clear-groups -- "$@"
}
field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2" | head -n1; }

storms=()
for u in "${FLOODERS[@]}"; do
        as_user "$u" "$SP_BUS_LOAD" --device="$loop" --timeout-sec=120 --hostile=storm --count=40 \
                --connections=4 --agent --stop-file="$SP_TMP/release" >"$SP_TMP/storm-$u.out" 2>&1 &
        storms+=($!)
        sp_defer "touch '$SP_TMP/release'; kill $!"
done
for u in "${FLOODERS[@]}"; do
        sp_wait_for 60000 "the held line of $u's storm" grep -q held= "$SP_TMP/storm-$u.out" >/dev/null
done
total=0
for u in "${FLOODERS[@]}"; do
        line=$(grep '^storm calls=' "$SP_TMP/storm-$u.out") || sp_fail "no summary of $u's storm: $(cat "$SP_TMP/storm-$u.out")"
        held=$(field held "$line")
        sp_log "$u: $line"
        [ -n "$held" ] && ((held >= 1 && held <= PER_USER)) || sp_fail "$u holds ${held:-?} checks, want 1 to $PER_USER"
        total=$((total + held))
done
sp_log "the ${#FLOODERS[@]} flooding users hold $total checks"

start=$(sp_now_ms)
out=$(as_user "$FIFTH" busctl --system --timeout=30 call org.stablepages1 /org/stablepages1 \
        org.stablepages1.Manager SetDevicePolicy sst "$loop" on 1 2>&1) || true
ms=$(($(sp_now_ms) - start))
sp_log "$FIFTH during the storms: $ms ms: $out"
grep -q "not authorized for org.stablepages1" <<<"$out" ||
        sp_fail "$FIFTH's call was not decided by polkit while ${#FLOODERS[@]} users held $total checks: $out"
$asan || ((ms <= ANSWER_MS)) || sp_fail "$FIFTH's call took $ms ms (more than $ANSWER_MS)"
((total <= TOTAL - RESERVED + ${#FLOODERS[@]})) ||
        sp_fail "the ${#FLOODERS[@]} users hold $total checks, more than $((TOTAL - RESERVED + ${#FLOODERS[@]}))"
grep -q "the first call of another user is still taken" "$SP_TMP/daemon.log" ||
        sp_fail "the daemon did not log why the flooders' further calls were refused"

touch "$SP_TMP/release"
for i in "${!storms[@]}"; do
        rc=0
        wait "${storms[$i]}" || rc=$?
        u=${FLOODERS[$i]}
        [ "$rc" -eq 0 ] && grep -qx "storm unanswered=0" "$SP_TMP/storm-$u.out" ||
                sp_fail "$u's storm: exit $rc, not every call answered: $(cat "$SP_TMP/storm-$u.out")"
done
robust_call ListDevices >/dev/null || sp_fail "the daemon does not answer after the storms"
sp_daemon_stop
sp_log "robust-polkit-fair: ok"
