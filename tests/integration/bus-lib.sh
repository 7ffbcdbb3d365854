# Sourced by root integration tests that need a system bus: starts a private
# dbus-daemon --system (its own socket, the project's bus policy) and the real polkitd on
# it, as DESIGN.md section 5 describes. Sets DBUS_SYSTEM_BUS_ADDRESS. bus_stop undoes all.
# Needs: $tmp (the test's temp dir), $SRC (source root).

bus_pids=()
bus_installed_action=""

# bus_start [--no-polkit]: starts the bus (and polkitd unless --no-polkit).
bus_start() {
        local busdir="$tmp/bus"
        mkdir -p "$busdir/system.d"
        chmod 755 "$tmp" "$busdir"
        sed -e "s|<listen>.*</listen>|<listen>unix:path=$busdir/system_bus_socket</listen>|" \
            -e '/<pidfile>/d' -e '/<user>/d' \
            -e "s|<includedir>system.d</includedir>|<includedir>/usr/share/dbus-1/system.d</includedir>|" \
            /usr/share/dbus-1/system.conf > "$busdir/system.conf"
        cp "$SRC/conf/org.stablepages1.conf" "$busdir/system.d/"
        sed -i "s|</busconfig>|<includedir>$busdir/system.d</includedir></busconfig>|" "$busdir/system.conf"
        dbus-daemon --config-file="$busdir/system.conf" --nofork --nopidfile \
                --print-address=3 3>"$busdir/address" &
        bus_pids+=($!)
        for _ in $(seq 100); do [ -S "$busdir/system_bus_socket" ] && break; sleep 0.05; done
        [ -S "$busdir/system_bus_socket" ] || { echo "private system bus did not start"; return 1; }
        export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$busdir/system_bus_socket"

        [ "${1:-}" = --no-polkit ] && return 0
        local actions=/usr/share/polkit-1/actions
        if [ ! -e "$actions/org.stablepages1.policy" ]; then
                bus_installed_action=$actions/org.stablepages1.policy
        elif ! cmp -s "$SRC/conf/org.stablepages1.policy" "$actions/org.stablepages1.policy"; then
                # Another checkout's version (a test of it running now): ours goes beside it
                # under a name of this test's own; polkitd reads both.
                bus_installed_action=$actions/org.stablepages1.test-$$.policy
        fi
        [ -z "$bus_installed_action" ] || cp "$SRC/conf/org.stablepages1.policy" "$bus_installed_action"
        /usr/lib/polkit-1/polkitd --no-debug >"$busdir/polkitd.log" 2>&1 &
        bus_pids+=($!)
        for _ in $(seq 100); do
                busctl --system status org.freedesktop.PolicyKit1 >/dev/null 2>&1 && return 0
                sleep 0.05
        done
        echo "polkitd did not appear on the private bus"; cat "$busdir/polkitd.log"
        return 1
}

bus_stop() {
        local p
        for p in "${bus_pids[@]}"; do kill "$p" 2>/dev/null; done
        for p in "${bus_pids[@]}"; do wait "$p" 2>/dev/null; done
        bus_pids=()
        [ -n "$bus_installed_action" ] && rm -f "$bus_installed_action"
        bus_installed_action=""
}
