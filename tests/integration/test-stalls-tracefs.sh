#!/bin/bash
# The stall probe's tracefs fallback on the setup of test-stalls-crossval.sh: forced with
# STABLEPAGES_STALLS_FORCE_TRACEFS=1 (test only), it counts the waits (without durations),
# cleans up its tracefs instance, and mode "unavailable" reports no figures.
# Usage: test-stalls-tracefs.sh [BUILDDIR]. Root only; exit 77 when a facility is missing.
STALLS_MODE=tracefs exec "$(dirname "$0")/test-stalls-crossval.sh" "$@"
