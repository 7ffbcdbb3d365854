#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# stablepagesctl show-config through the bus (GetConfig on a private system bus): the
# configuration in force in the daemon, each key with its file:line; a reload with errors
# keeps the last good configuration, and show-config shows that one, not the files; after a
# good reload, the new one; an unprivileged caller may read it; --json carries the same; with
# the daemon stopped, show-config reads the files itself and says so.
#
# Usage: test-ctl-show-config.sh [STABLEPAGESD [STABLEPAGESCTL]]   (root; exit 77 = skipped)
source "$(dirname "$0")/robust-lib.sh"
robust_setup --bus "$@"
sp_require jq setpriv

robust_own_loop 16M
sp_dropin 50-test.conf "[Manager]
Policy=latency

[Device $loop]
StableWrites=on"
robust_daemon_start
main=$SP_ETC/stablepages.conf
dropin=$SP_ETC/stablepages.conf.d/50-test.conf

# show ARGS...: show-config's standard output (standard error in $SP_TMP/stderr); fails unless
# it exits 0.
show() {
        local rc=0 out
        out=$("$SP_CTL" --no-pager show-config "$@" 2>"$SP_TMP/stderr") || rc=$?
        [ "$rc" -eq 0 ] || sp_fail "show-config $*: exit $rc: $(cat "$SP_TMP/stderr")"
        printf '%s\n' "$out"
}
# has TEXT LINES...: TEXT holds these lines, one after the other.
has() {
        local text=$1 want
        shift
        want=$(printf '%s\n' "$@")
        [[ $text == *"$want"* ]] ||
                sp_fail "show-config does not show, in this order: $(printf '[%s] ' "$@")
$text"
}

# 1. The configuration in force, with where each key comes from.
out=$(show)
[ ! -s "$SP_TMP/stderr" ] || sp_fail "show-config with the daemon wrote to stderr: $(cat "$SP_TMP/stderr")"
has "$out" "# The configuration in force in stablepagesd (its last good one), read from:" "#   $main" "#   $dropin"
has "$out" "# $dropin:2" "Policy=latency"
has "$out" "# $main:2" "Devices=$loop"
has "$out" "# default" "ApplyMounted=next-mount"
has "$out" "# $main:3" "RescanSec=0"
has "$out" "# $dropin:4" "[Device $loop]" "# $dropin:5" "StableWrites=on"
[ "$(setpriv --reuid=65534 --regid=65534 --clear-groups -- "$SP_CTL" --no-pager show-config 2>&1)" = "$out" ] ||
        sp_fail "an unprivileged caller is not shown the same"
sp_log "show-config: $(grep -c '^[A-Za-z]*=' <<<"$out") keys, from the daemon"

# 2. A reload with errors keeps the last good configuration: so does show-config.
sp_dropin 50-test.conf "[Manager]
Policy=observe
RescanSec=sideways"
rc=0
"$SP_CTL" reload 2>"$SP_TMP/reload.err" || rc=$?
[ "$rc" -eq 1 ] || sp_fail "reload of a configuration with errors: exit $rc, want 1"
out=$(show)
has "$out" "# $dropin:2" "Policy=latency"
has "$out" "# $dropin:4" "[Device $loop]"
sp_log "a reload with errors: show-config still shows Policy=latency from $dropin:2"

# 3. A good reload: the new one. --json holds the same.
sp_dropin 50-test.conf "[Manager]
Policy=observe"
"$SP_CTL" reload || sp_fail "reload of a good configuration failed"
out=$(show)
has "$out" "# $dropin:2" "Policy=observe"
! grep -q "^\[Device" <<<"$out" || sp_fail "the [Device] section of the old drop-in is still shown"
json=$(show --json)
jq -e --arg d "$dropin" --arg m "$main" '.from == "stablepagesd" and .files == [$m, $d]
        and (.sections[0].keys[] | select(.key == "Policy")) == {key: "Policy", value: "observe", note: null,
             default: false, sources: [{file: $d, line: 2}]}
        and (.sections[0].keys[] | select(.key == "Devices")).sources == [{file: $m, line: 2}]
        and (.sections[0].keys[] | select(.key == "StallWindowSec")).default == true' <<<"$json" >/dev/null ||
        sp_fail "show-config --json: $json"

# 4. Without the daemon: the files, said so.
sp_daemon_stop
out=$(show --config-dir="$SP_ETC")
grep -q "stablepagesd is not running: reading the configuration files directly" "$SP_TMP/stderr" ||
        sp_fail "show-config without the daemon does not say so: $(cat "$SP_TMP/stderr")"
has "$out" "# The configuration the files give (not stablepagesd's), read from:"
has "$out" "# $dropin:2" "Policy=observe"
echo "PASS: show-config shows the daemon's configuration in force, its sources, and the files without it"
