#!/usr/bin/env bash
# Live tests of `kwire replay` (ctest label "live"): the committed captures,
# recorded against one Kafka 4.4.0 broker, are replayed against a fresh broker of
# the testbed (testbed/run-broker) and the report is checked.
#
#   tests/live/replay_live.sh CASE KWIRE_BINARY
#
# CASE:
#   demo        captures/demo.pcapng (KIP-1331 appendix app): exit 0, 0 regressions,
#               0 unanswered; while it runs, Admin's describeStreamsGroups must see the
#               group Stable with its member at the group epoch; the topology push
#               (StreamsGroupTopologyDescriptionUpdate) is answered and compared same.
#   stateful    captures/stateful.pcapng (two instances, standby tasks): as demo, two members.
#   txn         captures/txn-consumer.pcapng (transactional producer, KIP-848 consumer):
#               producer ids, topic ids and fetch sessions substituted; 0 regressions.
#   plugin      demo against a broker whose description plugin fails permanently: exit 1,
#               the report names StreamsGroupTopologyDescriptionUpdate body.errorCode.
#   standby     stateful against a broker that allows no standby replicas
#               (group.streams.max.standby.replicas=0): exit 1, the group config change
#               and the standby assignment are reported.
#   kill        demo, the broker killed mid-replay: exit 1, unanswered requests in the
#               report, no hang (reconnect gives up after 3 s).
#   script      a Lua hook raises CreateTopics numPartitions to 3: the broker (asked with a
#               hand-written Metadata v1 request) has 3 partitions for the topic, and tshark
#               reads the edited request in the replay's own traffic (--record-out).
#   unreachable a target where nothing listens: exit 2 naming the target.
#
# Needs Java 17 and Maven (the broker), python3. Missing prerequisites fail the test.
set -euo pipefail

CASE=${1:?usage: replay_live.sh CASE KWIRE_BINARY}
KWIRE=${2:?usage: replay_live.sh CASE KWIRE_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
source "$REPO/testbed/lib.sh"

fail() { echo "replay_live $CASE: FAIL: $*" >&2; exit 1; }
note() { echo "replay_live $CASE: $*"; }

[[ -x $KWIRE ]] || fail "kwire binary '$KWIRE' is not executable"
for tool in java mvn python3 timeout; do
    command -v "$tool" >/dev/null || fail "'$tool' not found (Java 17, Maven and python3 are needed)"
done

WORK=$(mktemp -d /tmp/kwire-replay-live.XXXXXX)
BROKER_SH=
BG=
cleanup() {
    local rc=$?
    trap - EXIT
    [[ -n $BG ]] && kill "$BG" 2>/dev/null
    if [[ -n $BROKER_SH ]]; then stop_pid "$BROKER_SH" TERM 40; fi
    if (( rc != 0 )); then
        [[ -f $WORK/replay.out ]] && { echo "--- kwire replay output" >&2; tail -n 60 "$WORK/replay.out" >&2; }
        [[ -f $WORK/broker.log ]] && { echo "--- broker log tail" >&2; tail -n 20 "$WORK/broker.log" >&2; }
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT

testbed_build

# start_broker [server.properties lines...]: a fresh broker; sets PORT, BROKER_PID.
start_broker() {
    KWIRE_BROKER_INFO=$WORK/broker.env KWIRE_BROKER_LOG=$WORK/broker.log KWIRE_BROKER_PROPS="$(printf '%s\n' "$@")" \
        "$REPO/testbed/run-broker" >"$WORK/run-broker.out" 2>&1 &
    BROKER_SH=$!
    for _ in $(seq 1 240); do
        [[ -f $WORK/broker.env ]] && break
        kill -0 "$BROKER_SH" 2>/dev/null || { cat "$WORK/run-broker.out" >&2; fail "the broker did not start"; }
        sleep 0.5
    done
    [[ -f $WORK/broker.env ]] || fail "the broker was not ready after 120 s"
    source "$WORK/broker.env"
    PORT=$BROKER_PORT
    note "broker on 127.0.0.1:$PORT"
}

# replay ARGS...: runs kwire replay with a report; sets RC.
replay() {
    set +e
    timeout --signal=TERM 300 "$KWIRE" replay --target "127.0.0.1:$PORT" --report "$WORK/report.json" \
        --junit "$WORK/report.xml" "$@" >"$WORK/replay.out" 2>&1
    RC=$?
    set -e
    cat "$WORK/replay.out"
    (( RC != 124 )) || fail "kwire replay did not finish within 300 s"
}

# json EXPR: evaluates a Python expression over the report (as r).
json() { python3 -c "import json,sys; r=json.load(open('$WORK/report.json')); print($1)"; }

# describe GROUP MEMBERS: in the background, Admin waits for the group to be Stable.
describe_bg() {
    java -cp "$TESTBED_CP" "${TESTBED_LOG_OPTS[@]}" kwire.testbed.DescribeGroup "127.0.0.1:$PORT" group="$1" \
        wait-members="$2" wait-seconds=60 >"$WORK/describe.out" 2>&1 &
    BG=$!
}

expect_clean() {
    (( RC == 0 )) || fail "exit status $RC, expected 0"
    [[ $(json "r['summary']['regressions']") == 0 ]] || fail "regressions in the report"
    [[ $(json "r['summary']['unanswered']") == 0 ]] || fail "unanswered requests in the report"
    (( $(json "r['summary']['sent']") > 50 )) || fail "too few requests sent"
    python3 - "$WORK/report.xml" <<'PY' || fail "JUnit report"
import sys, xml.etree.ElementTree as ET
suite = ET.parse(sys.argv[1]).getroot().find("testsuite")
assert int(suite.get("tests")) > 0 and int(suite.get("failures")) == 0, suite.attrib
PY
}

case $CASE in
demo|stateful)
    if [[ $CASE == demo ]]; then cap=demo.pcapng group=orders-app members=1; start_broker
    else cap=stateful.pcapng group=stateful-app members=2; start_broker "group.streams.min.task.offset.interval.ms=1000"; fi
    describe_bg "$group" "$members"
    replay -r "$REPO/captures/$cap" --setup -q
    expect_clean
    wait "$BG" || { cat "$WORK/describe.out" >&2; fail "the group never was Stable with $members members at the group epoch"; }
    BG=
    grep -q "state=STABLE\|Stable\|STABLE" "$WORK/describe.out" || { cat "$WORK/describe.out"; fail "describe output"; }
    if [[ $CASE == demo ]]; then
        [[ $(json "sum(a['same'] for a in r['apis'] if a['api'].startswith('StreamsGroupTopologyDescriptionUpdate'))") == 1 ]] \
            || fail "the topology description push was not answered as recorded"
    fi
    note "ok"
    ;;
txn)
    # As the scenario's broker: transaction.version=1 (clients send AddPartitionsToTxn and
    # AddOffsetsToTxn), heartbeats every 2 s for consumer groups too.
    KWIRE_BROKER_FEATURES="transaction.version=1" start_broker "group.consumer.min.heartbeat.interval.ms=1000" "group.consumer.heartbeat.interval.ms=2000"
    replay -r "$REPO/captures/txn-consumer.pcapng" --setup -q
    expect_clean
    grep -q "learned" "$WORK/replay.out" || fail "nothing learned from the target"
    note "ok"
    ;;
plugin)
    KWIRE_BROKER_JAVA_OPTS=-Dkwire.plugin.setTopology=permanent start_broker
    replay -r "$REPO/captures/demo.pcapng" --setup -q
    (( RC == 1 )) || fail "exit status $RC, expected 1"
    [[ $(json "any(x['api']=='StreamsGroupTopologyDescriptionUpdate' and x['path']=='body.errorCode' and x['recorded']==0 and x['replayed']!=0 for x in r['regressions'])") == True ]] \
        || fail "the failing push is not reported as a regression of body.errorCode"
    note "ok"
    ;;
standby)
    start_broker "group.streams.min.task.offset.interval.ms=1000" "group.streams.max.standby.replicas=0"
    replay -r "$REPO/captures/stateful.pcapng" --setup -q
    (( RC == 1 )) || fail "exit status $RC, expected 1"
    (( $(json "r['summary']['regressions']") > 0 )) || fail "no regressions reported"
    [[ $(json "any(x['api']=='StreamsGroupHeartbeat' and x['path'].startswith('body.standbyTasks') for x in r['regressions'])") == True ]] \
        || fail "the standby assignment is not reported"
    note "ok"
    ;;
kill)
    start_broker
    ( sleep 8; kill -KILL "$BROKER_PID" ) &
    BG=$!
    t0=$SECONDS
    replay -r "$REPO/captures/demo.pcapng" --setup -q --reconnect-timeout 3
    (( RC == 1 )) || fail "exit status $RC, expected 1"
    (( SECONDS - t0 < 60 )) || fail "took $((SECONDS - t0)) s after the broker died"
    (( $(json "r['summary']['unanswered']") > 0 )) || fail "no unanswered requests reported"
    [[ $(json "any('unreachable' in x['reason'] or 'closed' in x['reason'] for x in r['unanswered'])") == True ]] \
        || fail "the unanswered requests do not say why"
    BG=
    note "ok"
    ;;
script)
    start_broker
    cat > "$WORK/hooks.lua" <<'LUA'
function on_request(msg)
  if msg.apiName == "CreateTopics" then
    for _, t in ipairs(msg.body.topics) do
      if t.name == "orders" then t.numPartitions = 3 end
    end
  end
end
LUA
    replay -r "$REPO/captures/demo.pcapng" --api CreateTopics --timing fast -q --script "$WORK/hooks.lua" \
        --record-out "$WORK/replayed.pcapng"
    n=$(python3 "$HERE/kafka_topic_partitions.py" "127.0.0.1:$PORT" orders)
    [[ $n == 3 ]] || fail "the broker has $n partitions for 'orders', expected 3 from the hook"
    [[ $(json "any(x['path'].endswith('numPartitions') and x['replayed']==3 for x in r['regressions'])") == True ]] \
        || fail "the edited field is not in the report"
    # --record-out: the replay's own connection, as tshark's Kafka dissector reads it: the
    # edited CreateTopics request (numPartitions 3) and its response.
    command -v tshark >/dev/null || fail "tshark not found (Debian package tshark)"
    # (tshark 4.0 warns that it knows CreateTopics only up to v5 but reads these fields.)
    got=$(tshark -r "$WORK/replayed.pcapng" -d "tcp.port==$PORT,kafka" -Y "kafka.api_key == 19 && kafka.num_partitions" \
          -T fields -e kafka.topic_name -e kafka.num_partitions 2>/dev/null | head -1)
    [[ $got == $'orders,valid-orders\t3,1' ]] || fail "tshark reads '$got' in the --record-out capture, not orders with 3 partitions"
    note "ok"
    ;;
unreachable)
    PORT=$(free_ports 1)
    replay -r "$REPO/captures/demo.pcapng"
    (( RC == 2 )) || fail "exit status $RC, expected 2"
    grep -q "127.0.0.1:$PORT" "$WORK/replay.out" || fail "the message does not name the target"
    note "ok"
    ;;
*) fail "unknown case $CASE" ;;
esac
