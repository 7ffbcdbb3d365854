#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Load (issue 9): 32 concurrent D-Bus clients, each with its own connection, make
# SP_LOAD_CALLS calls each (default 500; tests/bench/bus-load.sh runs the full 10,000) as
# fast as the daemon answers: status reads (ListDevices, GetDevice, a property Get,
# DumpJSON) and, for one call in five, a runtime set (on/off, alternating) or reset of the
# test's own loop device. Every call must be answered without error, the daemon's RSS must
# not grow after warm-up (the first 10% of the calls) by more than SP_LOAD_RSS_SLACK_KIB
# (default 512 KiB: allocator noise, not a per-call leak, which 16,000 calls would show as
# megabytes), and the p50/p99/max latencies are printed.
#
# Usage: test-robust-load.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
source "$(dirname "$0")/robust-lib.sh"
robust_setup --bus "$@"
[ -x "${SP_BUS_LOAD:-}" ] || sp_skip "no bus-load client (\$SP_BUS_LOAD, built by meson)"
CLIENTS=${SP_LOAD_CLIENTS:-32}
CALLS=${SP_LOAD_CALLS:-500}
SLACK=${SP_LOAD_RSS_SLACK_KIB:-512}

n=$(sp_free_loop_number)
loop=loop$n
sp_loop_attach "$n" 16M
sp_config "[Manager]
Devices=$loop
RescanSec=0"
# The runtime directory on a tmpfs, as /run is in production: every set saves the
# overrides and devices.json with fsync(), which on the disk under /tmp would make this a
# test of that disk (SP_LOAD_RUNTIME_ON_DISK=1 keeps it there).
if [ -z "${SP_LOAD_RUNTIME_ON_DISK:-}" ]; then
        mkdir -p "$SP_RUNTIME"
        mount -t tmpfs -o size=16m,mode=0755 tmpfs "$SP_RUNTIME" || sp_fail "cannot mount a tmpfs on $SP_RUNTIME"
        sp_defer "umount '$SP_RUNTIME'"
fi
robust_daemon_start
rss_start=$(robust_rss "$SP_PID")

rc=0
"$SP_BUS_LOAD" --device="$loop" --clients="$CLIENTS" --calls="$CALLS" --writes=20 --pid="$SP_PID" \
        --timeout-sec=60 >"$SP_TMP/load.out" 2>&1 || rc=$?
sed 's/^/# /' "$SP_TMP/load.out"
summary=$(grep '^clients=' "$SP_TMP/load.out") || sp_fail "bus-load printed no summary"
get() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<" $summary"; }
[ "$rc" -eq 0 ] || sp_fail "not every call was answered without error (bus-load exit $rc)"
[ "$(get unanswered)" = 0 ] && [ "$(get failed)" = 0 ] && [ "$(get done)" = $((CLIENTS * CALLS)) ] ||
        sp_fail "calls lost or failed: $summary"
kill -0 "$SP_PID" 2>/dev/null || sp_fail "the daemon died under load"

warm=$(get rss_warm_kib) end=$(get rss_end_kib)
growth=$((end - warm))
sp_log "load: $CLIENTS clients x $CALLS calls: all answered in $(get elapsed_ms) ms ($(get calls_per_s) calls/s);" \
        "latency p50 $(get p50_us) us, p99 $(get p99_us) us, max $(get max_us) us;" \
        "daemon RSS $rss_start KiB at start, $warm KiB after warm-up, $end KiB at the end (max $(get rss_max_kib))"
if grep -q libasan <<<"$(ldd "$SP_BIN" 2>/dev/null)"; then
        # ASan holds freed memory in quarantine (up to 256 MiB): RSS says nothing here; its
        # leak check at the daemon's exit (sp_daemon_stop wants exit status 0) does.
        sp_log "load: RSS growth not checked in an ASan build (LeakSanitizer checks at exit)"
else
        ((growth <= SLACK)) || sp_fail "the daemon's RSS grew by $growth KiB after warm-up (more than $SLACK KiB)"
fi

# The daemon is still consistent: the last call of each client left the override set or
# reset; a reset now must bring the flag back to the policy's off.
busctl --system call org.stablepages1 /org/stablepages1 org.stablepages1.Manager ResetDevicePolicy st "$loop" 1 \
        >/dev/null || sp_fail "reset after the load failed"
sp_wait_for 2000 "$loop back to off" sp_flag_is "$loop" 0 >/dev/null
sp_daemon_stop
sp_log "robust-load: ok"
