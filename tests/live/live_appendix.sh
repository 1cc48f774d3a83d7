#!/usr/bin/env bash
# Live end-to-end test (ctest "live_appendix"): builds the testbed, starts a real
# single-node Kafka 4.4.0 broker, runs the appendix scenario (the KIP-1331 appendix
# Kafka Streams app, group.protocol=streams) while the kwire under test records it
# with `kwire record -i lo --auto` (no Kafka port given: it finds the Kafka
# connections itself; a capture filter on the broker's two ports only keeps other
# brokers on the host out), stops everything, then decodes the capture with the same
# kwire and checks it (tests/live/check_appendix.py).
#
#   tests/live/live_appendix.sh KWIRE_BINARY
#
# Needs Java 17, Maven (Maven Central reachable, or the artifacts in ~/.m2), python3,
# and root (kwire record captures on lo). Missing prerequisites fail the test with a
# message; they never make it pass. The scenario's own EXIT trap stops the apps,
# the recorder and the broker on failure; this script's trap stops the scenario if it
# is itself interrupted, and removes its temp dir.
set -euo pipefail

KWIRE=${1:?usage: live_appendix.sh KWIRE_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
# A failure bound for the whole scenario, broker start included (up to 240 s on a
# loaded machine): within ctest's 600 s with timeout's --kill-after.
SCENARIO_TIMEOUT=${KWIRE_LIVE_TIMEOUT:-480}

fail() { echo "live_appendix: FAIL: $*" >&2; exit 1; }

[[ -x $KWIRE ]] || fail "kwire binary '$KWIRE' is not executable"
for tool in java mvn python3 timeout; do
    command -v "$tool" >/dev/null || fail "'$tool' not found. The live test needs Java 17 (openjdk-17-jdk-headless), Maven (maven) and python3"
done
java_major=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
(( ${java_major%%.*} >= 17 )) || fail "Java 17 or newer needed, found $java_major"
(( $(id -u) == 0 )) || fail "kwire record needs root (CAP_NET_RAW) to capture on lo; running as $(id -un): run the tests as root (CI does)"

WORK=$(mktemp -d /tmp/kwire-live.XXXXXX)
SCENARIO_PID=
cleanup() {
    local rc=$?
    trap - EXIT
    trap '' INT TERM   # a second signal must not cut the clean-up short
    if [[ -n $SCENARIO_PID ]] && kill -0 "$SCENARIO_PID" 2>/dev/null; then
        kill -TERM "$SCENARIO_PID" 2>/dev/null || true   # its EXIT trap stops broker, apps, recorder
        for _ in $(seq 1 120); do kill -0 "$SCENARIO_PID" 2>/dev/null || break; sleep 0.5; done
        kill -KILL "$SCENARIO_PID" 2>/dev/null || true
    fi
    if (( rc != 0 )) && [[ -f $WORK/scenario.log ]]; then
        echo "--- scenario log (tail)" >&2; tail -n 60 "$WORK/scenario.log" >&2
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

CAP=$WORK/appendix.pcapng
t0=$SECONDS
echo "live_appendix: running testbed/scenario appendix (broker, kwire record --auto, Kafka Streams app) ..."
# timeout sends TERM first, so the scenario's trap still cleans up.
KWIRE=$KWIRE KWIRE_NO_SUMMARY=1 KWIRE_APPENDIX_STAY=${KWIRE_APPENDIX_STAY:-4} \
    timeout --signal=TERM --kill-after=60 "$SCENARIO_TIMEOUT" "$REPO/testbed/scenario" appendix "$CAP" \
    >"$WORK/scenario.log" 2>&1 &
SCENARIO_PID=$!
rc=0
wait "$SCENARIO_PID" || rc=$?
SCENARIO_PID=
(( rc == 0 )) || fail "scenario exited with status $rc$( ((rc == 124)) && echo " (timed out after $SCENARIO_TIMEOUT s)")"
grep -E 'ready in|kwire record: received=|wrote|done in' "$WORK/scenario.log" | sed 's/^/live_appendix: /'
broker_ready=$(sed -n 's/.*ready in \([0-9]*\) s$/\1/p' "$WORK/scenario.log" | head -n1)
# The limit is testbed/lib.sh's BROKER_START_SECONDS: a failure bound, not a speed check
# (a start takes 60 s and more while make test builds in the release chroots beside it).
[[ -n $broker_ready ]] && (( broker_ready <= 240 )) || fail "broker took ${broker_ready:-?} s to start (limit 240 s)"
echo "live_appendix: capture done in $((SECONDS - t0)) s; decoding with $KWIRE"

python3 "$HERE/check_appendix.py" "$KWIRE" "$CAP"
