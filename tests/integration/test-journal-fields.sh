#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What the journal receives from stablepagesd: in a mount namespace of its own, the journal's
# socket (/run/systemd/journal/socket) is a listener of this test, and `stablepagesd apply`
# (--log-target=journal) turns a loop device that "needs" stable writes (Need=required) off
# by force: the entry carries MESSAGE_ID= of a forced off (the catalog's entry), the disk in
# STABLEPAGES_DEVICE=, priority warning, and the caller's CODE_FILE=; a change that is not
# forced carries the disk but no MESSAGE_ID=. The systemd guest (tests/vm/boot, base scenario)
# checks an entry in a real journal, and journalctl -x's text for it.
#
# Usage: test-journal-fields.sh [STABLEPAGESD]   (root; exit 77 = skipped)
source "$(dirname "$0")/lib.sh"
sp_setup "$@"
sp_require unshare python3
[ -d /run/systemd ] || sp_skip "no /run/systemd to hide the journal's socket under"
forced_id=$(sed -n 's/^#define SP_MESSAGE_FORCED "\(.*\)"$/\1/p' "$SP_SRCDIR/../../daemon/shared/message-id.h")
[ -n "$forced_id" ] || sp_fail "no SP_MESSAGE_FORCED in message-id.h"

n=$(sp_free_loop_number)
loop=loop$n
sp_loop_attach "$n" 16M
echo 0 >"/sys/block/$loop/queue/stable_writes"

# journal CONFIG: runs the applier on $loop with CONFIG, its journal datagrams into
# $SP_TMP/datagrams (one per line, fields separated by '|').
journal() {
        sp_config "$1"
        unshare -m sh -c '
                mount -t tmpfs -o mode=755 tmpfs /run/systemd && mkdir /run/systemd/journal || exit 1
                python3 -c "
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(\"/run/systemd/journal/socket\")
s.settimeout(1)
print(\"ready\", flush=True)
out = open(sys.argv[1], \"w\")
try:
    while True:
        out.write(s.recv(1 << 16).decode(errors=\"replace\").strip(\"\\n\").replace(\"\\n\", \"|\") + \"\\n\")
        out.flush()
except socket.timeout:
    pass
" "$1" | { read -r _ && "$2" --config-dir="$3" --runtime-dir="$4" --log-target=journal apply "$5"; }
        ' sh "$SP_TMP/datagrams" "$SP_BIN" "$SP_ETC" "$SP_RUNTIME" "$loop" ||
                sp_fail "the applier failed under the test's journal socket"
}

# 1. A change that is not forced: the disk's field, no MESSAGE_ID.
journal "[Device $loop]
StableWrites=on"
[ "$(sp_flag "$loop")" = 1 ] || sp_fail "$loop was not turned on"
grep -q "^MESSAGE=$loop: stable writes off -> on: .*|PRIORITY=6|.*|STABLEPAGES_DEVICE=$loop" "$SP_TMP/datagrams" ||
        sp_fail "the change is not in the journal with its device field: $(cat "$SP_TMP/datagrams")"
! grep -q "MESSAGE_ID=" "$SP_TMP/datagrams" || sp_fail "a change that is not forced has a MESSAGE_ID: $(cat "$SP_TMP/datagrams")"

# 2. Forced off on a disk that needs stable writes: the catalog's MESSAGE_ID. Force= is bound to
# the disk itself (a loop device is its backing file), never to its kernel name.
journal "[Device LOOP_BACKING_FILE=$SP_TMP/loop$n.img]
Need=required
StableWrites=off
Force=yes"
[ "$(sp_flag "$loop")" = 0 ] || sp_fail "$loop was not turned off by force"
line=$(grep "^MESSAGE=$loop: stable writes on -> off: .*(FORCED)" "$SP_TMP/datagrams") ||
        sp_fail "the forced change is not in the journal: $(cat "$SP_TMP/datagrams")"
for field in "PRIORITY=4" "MESSAGE_ID=$forced_id" "STABLEPAGES_DEVICE=$loop" "CODE_FILE=[^|]*/engine-apply\.c"; do
        grep -Eq "\|$field(\||\$)" <<<"$line" || sp_fail "the forced change's entry lacks $field: $line"
done
[ "$(grep -o '|CODE_FILE=' <<<"$line" | wc -l)" = 1 ] || sp_fail "CODE_FILE= twice (log.c's and the caller's): $line"
sp_log "journal entry: $line"
echo "PASS: the journal gets the MESSAGE_ID and the fields of a forced off, none for an ordinary change"
