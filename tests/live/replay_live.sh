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
#   other       captures/other-clients.pcapng (kafka-python, kcat): exit 0, 0 regressions;
#               the broker's DescribeConfigs (listener endpoints mapped) differs only in
#               ignored fields;
#   other-fast  the same in --timing fast.
#   go          captures/go-clients.pcapng (franz-go: classic and KIP-848 groups, four codecs,
#               kadm admin calls; Sarama at two protocol versions): exit 0, 0 regressions,
#               0 unanswered;
#   go-fast     the same in --timing fast.
#   plugin      demo against a broker whose description plugin fails permanently: exit 1,
#               the report names StreamsGroupTopologyDescriptionUpdate body.errorCode, the
#               first divergence of the member's session (0 NONE -> 135).
#   standby     stateful against a broker that allows no standby replicas
#               (group.streams.max.standby.replicas=0): exit 1, the group config change
#               and the standby assignment are reported.
#   kill        demo, the broker killed mid-replay: exit 1, unanswered requests in the
#               report, no hang (reconnect gives up after 3 s).
#   script      a Lua hook raises CreateTopics numPartitions to 3: the broker (asked with a
#               hand-written Metadata v1 request) has 3 partitions for the topic, and tshark
#               reads the edited request in the replay's own traffic (--record-out).
#   filters     --map to the broker with an unreachable default --target; --conn with
#               --rename-topic (the renamed topic is created; the renamed recorded
#               answer compares the same), --expect met and missed, --group with --api (any
#               case), the progress line on a terminal.
#   stall       the broker stopped (SIGSTOP) near the end: requests time out (--timeout 1),
#               exit 1, the report says so, no hang.
#   stop        SIGTERM mid-run: exit 1 at once, the text, JSON and JUnit reports written
#               with what was done; progress lines on a non-terminal stderr; --budget 4
#               ends a run the same way.
#   unreachable a target where nothing listens: exit 2 naming the target.
#   maxbytes    stateful against a broker with message.max.bytes=500, no --setup: exit 1
#               within 3 x the capture's duration + 60 s; the first divergence of the
#               producing sessions is Produce errorCode 0 NONE -> 10 MESSAGE_TOO_LARGE
#               (text and JSON reports); that of the session creating the topics is their
#               max.message.bytes config (500, not 1048588).
#   partitions  classic-consumer without its CreateTopics (classic-in, 4 partitions), against
#               a broker that auto-creates topics with num.partitions=1, no --setup: exit 1
#               within the same bound (the session retry budget); the first divergence is
#               the partition count in Metadata.
#   sequence    an idempotent producer (kcat, recorded here) whose pipelined batch the
#               relay tests/live/produce_fault_proxy.py answers CONCURRENT_TRANSACTIONS:
#               the later batches, refused as out of order, go again behind it; clean,
#               and kcat reads the 300 records back in the order they were sent.
#   aged        captures/aged-records.pcapng (records dated 30 days before they were sent)
#               into a broker with the default retention (7 days) that runs its retention
#               pass every second from its start: in recorded timing, as kwire replays by
#               default (timestamps moved), exit 0 and clean, the report's timeShiftMs over
#               30 days, and kcat (librdkafka) reads back the 20 records dated within the
#               replay's run; then with --keep-timestamps into other names: the retention
#               warning names that topic on stderr and in the report's notes, and the broker
#               deletes its records (kcat reads none, waited for) while the first topic
#               still holds all 20.
#   clean-NAME  captures/NAME.pcapng against two brokers configured as its own was, started
#               together: --timing recorded on one and fast on the other at once; both exit
#               0, 0 regressions, 0 unanswered. At the same time, fast, into a three-node
#               cluster (below).
#   tls-scram   captures/tls/scram-secrets.pcapng (SASL_SSL, SCRAM-SHA-256, TLS 1.3, read from
#               its secrets blocks) against a fresh SASL_SSL broker, --tls-ca and
#               --sasl-scram-256: exit 0, 0 regressions, every SaslAuthenticate the same;
#               a wrong password, and no --tls-ca, each exit 2 naming the reason.
#   tls-relogin captures/tls/scram-secrets.pcapng against a SASL_SSL broker that closes
#               connections idle for 1 s (connections.max.idle.ms=1000), at --speed 0.2:
#               its gaps of up to 0.45 s become 2.25 s, so logged-in sessions lose their
#               connections between requests; kwire logs each new one in before anything
#               else is sent on it: exit 0, clean, sessions reconnected, and the broker
#               logged no "Unexpected Kafka request ... during SASL handshake" (sent
#               without that login, 4 requests went unanswered so).
#   tls-clean   the captures of scenario tls, in the order they were recorded, over TLS
#               (--tls-ca) against two SSL brokers configured as theirs was (started together):
#               streams-tls13 and tls12 on the SSL listener in recorded timing on one broker;
#               the same and scram (SASL_SSL, SCRAM-SHA-256) in fast timing on the other, at
#               once; each exits 0 with 0 regressions and 0 unanswered.
#   tls-python-clean  the captures of scenario tls-python the same way, in recorded timing on
#               one broker and fast on the other: python-tls13 and python-tls12-cbc on the SSL
#               listener of brokers whose JSSE updates its TLS 1.3 keys every 16 KiB (as
#               recorded), python-etm through testbed/other-clients/etm_relay.py (the OpenSSL
#               TLS 1.2 endpoint it was recorded through) in front of the PLAINTEXT listener.
#   tls-mtls-oauth captures/demo.pcapng (plaintext, no login) against a SASL_SSL listener
#               that requires a client certificate (made at test time, signed by the
#               broker's test CA) and logs in with OAUTHBEARER (Kafka's unsecured JWS
#               validator): --tls-cert/--tls-key and --sasl-oauthbearer @FILE: exit 0, 0
#               regressions, every session logs in first; without --tls-cert, and with an
#               expired token, each exit 2 naming the reason.
#   tls-listeners captures/tls/listeners-secrets.pcapng (one broker's SSL and SASL_SSL
#               listeners used in one run, SCRAM-SHA-512) against two fresh brokers with both
#               listeners, at once: fast with --target naming both listeners (no protocol
#               given: kwire asks each whether it wants SASL), recorded timing with --map per
#               recorded listener; each in one run, --sasl-scram-512 given once: exit 0, 0
#               regressions, 0 unanswered, every session on the target listener of its own
#               protocol, every SaslAuthenticate the same, logins only on SASL_SSL. Then, on
#               the used broker, no credentials: exit 2 naming the listener that asks for a
#               login and the options that give one.
#
# Into a cluster: clean-NAME, other-fast, go-fast, tls-clean, tls-python-clean and
# tls-listeners also replay their captures (all recorded on one broker) in fast timing
# into a fresh three-node cluster (testbed/run-cluster on 127.0.0.91-93), started with
# their brokers and configured as they are, with --target naming node 1 only: each exits
# 0 with 0 regressions and 0 unanswered, the report counts 1 broker recorded and 3 on the
# target, and what follows from that alone (broker lists, replica counts) is named once
# per kind in its shape section.
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
BROKER_SH2=
MORE_BROKERS=()
CLUSTER_SH=
BG=
RELAYS=()
cleanup() {
    local rc=$?
    trap - EXIT
    # (if, not &&: a kill of a process that has already exited must not end the clean-up
    # under set -e, leaving the brokers running)
    if [[ -n $BG ]]; then kill "$BG" 2>/dev/null || true; fi
    local relay
    for relay in "${RELAYS[@]}"; do stop_pid "$relay" TERM 5; done
    if [[ -n $BROKER_SH ]]; then stop_pid "$BROKER_SH" TERM 40; fi
    if [[ -n $BROKER_SH2 ]]; then stop_pid "$BROKER_SH2" TERM 40; fi
    for relay in "${MORE_BROKERS[@]}"; do stop_pid "$relay" TERM 40; done
    if [[ -n $CLUSTER_SH ]]; then
        # Its data goes with it: the nodes are killed, not shut down in turn (the last
        # one's controlled shutdown has no broker left to hand its leaders to).
        local pid
        for pid in $(sed -n 's/^NODE_[0-9]*_PID=//p' "$WORK/cluster.env" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
        stop_pid "$CLUSTER_SH" TERM 90
    fi
    if (( rc != 0 )); then
        [[ -f $WORK/run-cluster.out ]] && { echo "--- run-cluster output" >&2; tail -n 20 "$WORK/run-cluster.out" >&2; }
        [[ -f $WORK/replay.out ]] && { echo "--- kwire replay output" >&2; tail -n 60 "$WORK/replay.out" >&2; }
        [[ -f $WORK/broker.log ]] && { echo "--- broker log tail" >&2; tail -n 20 "$WORK/broker.log" >&2; }
        [[ -f $WORK/broker2.log ]] && { echo "--- second broker log tail" >&2; tail -n 20 "$WORK/broker2.log" >&2; }
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT

testbed_build

# The three-node cluster a case replays into as well when WITH_CLUSTER=1 (testbed/run-cluster
# on 127.0.0.91-93, each node on its own address): started with the case's brokers and
# configured as they are (the same server.properties lines, plugin control and
# KWIRE_BROKER_* settings), with the recording broker's own partition counts of the
# offsets and transaction state topics (run-broker's, where run-cluster has others), so
# that a clean replay into it differs from the capture only in what follows from the shape.
CLUSTER_PROPS=("offsets.topic.num.partitions=1" "transaction.state.log.num.partitions=50")
launch_cluster() {  # server.properties lines...
    [[ -n ${CONTROL:-} ]] && printf '%s\n' "${CONTROL[@]}" >"$WORK/control-cluster.properties"
    KWIRE_CLUSTER_BASE_ADDR=127.0.0.91 KWIRE_CLUSTER_INFO=$WORK/cluster.env KWIRE_CLUSTER_LOG_DIR=$WORK/cluster \
        KWIRE_BROKER_PROPS="$(printf '%s\n' "${CLUSTER_PROPS[@]}" "$@")" \
        KWIRE_PLUGIN_CONTROL=${CONTROL:+$WORK/control-cluster.properties} \
        setsid "$REPO/testbed/run-cluster" 3 >"$WORK/run-cluster.out" 2>&1 &
    CLUSTER_SH=$!
}
# Waits until it is ready (run-cluster writes its info file once every node lists all
# three brokers; its own bound is a failure bound); sets CL_ADDR (node 1's), CL_PORT and,
# with KWIRE_BROKER_SSL=1, CL_SSL_PORT, CL_SASL_SSL_PORT and CL_CA.
wait_cluster() {
    until grep -qs '^NODE_3_LOG=' "$WORK/cluster.env"; do
        kill -0 "$CLUSTER_SH" 2>/dev/null || { tail -n 30 "$WORK/run-cluster.out" >&2; fail "the cluster did not start"; }
        sleep 0.5
    done
    eval "$(source "$WORK/cluster.env"
            echo "CL_ADDR=$NODE_1_ADDR CL_PORT=$BROKER_PORT CL_SSL_PORT=${SSL_PORT:-} CL_SASL_SSL_PORT=${SASL_SSL_PORT:-} CL_CA=${TLS_CA_PEM:-}")"
    note "cluster: node 1 of 3 on $CL_ADDR:$CL_PORT (ready $SECONDS s into the test)"
}
# cluster_replay LABEL CAPTURE ARGS...: kwire replay of CAPTURE in fast timing (ARGS name the
# target); its output, reports and exit status in $WORK/LABEL.*.
cluster_replay() {
    local label=$1 cap=$2 rc=0
    shift 2
    timeout --signal=TERM 300 "$KWIRE" replay -r "$cap" -q --timing fast --report "$WORK/$label.json" \
        --junit "$WORK/$label.xml" "$@" >"$WORK/$label.out" 2>&1 || rc=$?
    echo "$rc" >"$WORK/$label.rc"
}
# expect_cluster_clean LABEL...: each of those replays exited 0 with 0 regressions and 0
# unanswered, sent enough, the JUnit report has no failure, the report counts 1 broker in
# the capture and 3 on the target, and names each shape difference once.
expect_cluster_clean() {
    local label
    for label in "$@"; do echo "--- $label (into the cluster)"; cat "$WORK/$label.out"; done
    python3 - "$WORK" "$CASE" "$@" <<'PY' || fail "see above"
import json, re, sys, xml.etree.ElementTree as ET
work, case, labels = sys.argv[1], sys.argv[2], sys.argv[3:]
bad = []
for label in labels:
    rc = int(open(f"{work}/{label}.rc").read())
    try:
        r = json.load(open(f"{work}/{label}.json"))
        s = r["summary"]
    except (OSError, ValueError, KeyError) as e:
        bad.append(f"{label}: exit status {rc}, no report ({e})"); continue
    kinds = [(d["what"], d["why"]) for d in r.get("shape", [])]
    suite = ET.parse(f"{work}/{label}.xml").getroot().find("testsuite")
    for ok, what in [(rc == 0, f"exit status {rc}, expected 0"),
                     (s["regressions"] == 0, f"{s['regressions']} regressions, first: {r['regressions'][:2]}"),
                     (s["unanswered"] == 0, f"{s['unanswered']} unanswered"),
                     (s["sent"] > 30, f"too few requests sent ({s['sent']})"),
                     (int(suite.get("tests")) > 0 and int(suite.get("failures")) == 0, f"JUnit report {suite.attrib}"),
                     (r.get("brokers") == {"capture": 1, "target": 3}, f"brokers {r.get('brokers')}, expected 1 in the capture, 3 on the target"),
                     (len(kinds) == len(set(kinds)), f"a shape difference named twice: {kinds}")]:
        if not ok: bad.append(f"{label}: {what}")
    routed = re.search(r"(\d+) requests? went to another target node", "\n".join(r["notes"]))
    print(f"replay_live {case}: {label} into 3 brokers: exit {rc}, {s['sent']} sent, {s['regressions']} regressions, "
          f"{routed.group(1) if routed else 0} requests to another node than --target; shape: "
          + ("; ".join(f"{d['what']} x{d['count']}" for d in r.get("shape", [])) or "none"))
for b in bad: print(f"replay_live {case}: FAIL (into the cluster): {b}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}

# start_broker [server.properties lines...]: a fresh broker; sets PORT, BROKER_PID.
start_broker() {
    if [[ -n ${WITH_CLUSTER:-} ]]; then launch_cluster "$@"; fi
    KWIRE_BROKER_INFO=$WORK/broker.env KWIRE_BROKER_LOG=$WORK/broker.log KWIRE_BROKER_PROPS="$(printf '%s\n' "$@")" \
        "$REPO/testbed/run-broker" >"$WORK/run-broker.out" 2>&1 &
    BROKER_SH=$!
    # BROKER_START_SECONDS (testbed/lib.sh): a failure bound, not a speed check.
    local t0=$SECONDS
    while [[ ! -f $WORK/broker.env ]]; do
        kill -0 "$BROKER_SH" 2>/dev/null || { cat "$WORK/run-broker.out" >&2; fail "the broker did not start"; }
        (( SECONDS - t0 < BROKER_START_SECONDS )) || { cat "$WORK/run-broker.out" >&2
            fail "run-broker wrote no broker.env (the broker listening) within $BROKER_START_SECONDS s"; }
        sleep 0.5
    done
    source "$WORK/broker.env"
    PORT=$BROKER_PORT
    note "broker on 127.0.0.1:$PORT"
    if [[ -n ${WITH_CLUSTER:-} ]]; then wait_cluster; fi
}

# start_two_brokers [server.properties lines...]: two fresh brokers configured alike,
# started together (start-up dominates a short replay); sets PORT and PORT2.
start_two_brokers() { start_brokers 2 "$@"; }

# start_brokers N [server.properties lines...]: N fresh brokers configured alike, started
# together; sets PORT, PORT2, ... PORTN. Broker n also gets the server.properties lines
# in the array PROPS_n, the plugin control lines in CONTROL_n (after CONTROL's) and runs
# the Kafka release VERSION_n (testbed/run-broker's KWIRE_KAFKA_VERSION), where set.
start_brokers() {
    local count=$1 props n extra control version pids=() t0=$SECONDS
    shift
    props="$(printf '%s\n' "$@")"
    if [[ -n ${WITH_CLUSTER:-} ]]; then launch_cluster "$@"; fi
    for (( n = 1; n <= count; n++ )); do
        extra="PROPS_$n[@]" control="CONTROL_$n[@]" version="VERSION_$n"
        if [[ -n ${CONTROL:-} || -n ${!control:-} ]]; then
            printf '%s\n' ${CONTROL[@]+"${CONTROL[@]}"} ${!control+"${!control}"} >"$WORK/control$n.properties"
        fi
        KWIRE_BROKER_INFO=$WORK/broker$n.env KWIRE_BROKER_LOG=$WORK/broker${n/#1/}.log \
            KWIRE_BROKER_PROPS="$props${!extra:+$'\n'$(printf '%s\n' "${!extra}")}" \
            KWIRE_PLUGIN_CONTROL=$([[ -f $WORK/control$n.properties ]] && echo "$WORK/control$n.properties") \
            KWIRE_KAFKA_VERSION=${!version:-${KWIRE_KAFKA_VERSION:-4.4.0}} \
            "$REPO/testbed/run-broker" >"$WORK/run-broker$n.out" 2>&1 &
        pids+=($!)
    done
    BROKER_SH=${pids[0]} BROKER_SH2=${pids[1]:-}
    MORE_BROKERS=("${pids[@]:2}")
    # BROKER_START_SECONDS (testbed/lib.sh): a failure bound, not a speed check.
    for (( n = 1; n <= count; n++ )); do
        until [[ -f $WORK/broker$n.env ]]; do
            kill -0 "${pids[n-1]}" 2>/dev/null || { cat "$WORK/run-broker$n.out" >&2; fail "broker $n did not start"; }
            (( SECONDS - t0 < BROKER_START_SECONDS )) || { cat "$WORK/run-broker$n.out" >&2
                fail "run-broker wrote no broker$n.env (broker $n listening) within $BROKER_START_SECONDS s"; }
            sleep 0.5
        done
    done
    for (( n = count; n >= 1; n-- )); do
        source "$WORK/broker$n.env"
        if (( n == 1 )); then PORT=$BROKER_PORT; else printf -v "PORT$n" %s "$BROKER_PORT"; fi
        # With KWIRE_BROKER_SSL=1 each broker has its own listeners and CA.
        if (( n > 1 )); then
            printf -v "SSL_PORT$n" %s "${SSL_PORT:-}"
            printf -v "SASL_SSL_PORT$n" %s "${SASL_SSL_PORT:-}"
            printf -v "TLS_CA_PEM$n" %s "${TLS_CA_PEM:-}"
        fi
    done
    note "$count brokers on 127.0.0.1, ports $PORT${PORT2:+ $PORT2}${PORT3:+ $PORT3}${PORT4:+ $PORT4}${PORT5:+ $PORT5} (ready $SECONDS s into the test)"
    if [[ -n ${WITH_CLUSTER:-} ]]; then wait_cluster; fi
}

# diff_replay LABEL CAPTURE BASELINE_PORT CANDIDATE SECONDARY_PORT [ARGS...]: a
# differential kwire replay of CAPTURE in fast timing; output, reports and exit status in
# $WORK/LABEL.*. CANDIDATE: a port on 127.0.0.1, or an address as --candidate takes it;
# SECONDARY_PORT "-": none.
diff_replay() {
    local label=$1 cap=$2 b=$3 c=$4 s=$5 rc=0 secondary=()
    shift 5
    [[ $s == - ]] || secondary=(--secondary "127.0.0.1:$s")
    timeout --signal=TERM 300 "$KWIRE" replay -r "$cap" -q --timing fast --target "127.0.0.1:$b" \
        --candidate "$([[ $c == *:* ]] && echo "$c" || echo "127.0.0.1:$c")" "${secondary[@]}" --report "$WORK/$label.json" --junit "$WORK/$label.xml" "$@" >"$WORK/$label.out" 2>&1 || rc=$?
    echo "$rc" >"$WORK/$label.rc"
}
# expect_diff_clean LABEL: the differential replay exited 0 with no candidate regression,
# the noise table (baseline against secondary) is not empty, each target's own replay was
# clean against the capture (no regression, nothing unanswered: fast timing, as a single
# replay), and the JUnit report has test cases and no failure.
expect_diff_clean() {
    echo "--- $1 (differential)"; cat "$WORK/$1.out"
    python3 - "$WORK" "$CASE" "$1" <<'PY' || fail "differential replay, see above"
import json, sys, xml.etree.ElementTree as ET
work, case, label = sys.argv[1:4]
rc = int(open(f"{work}/{label}.rc").read())
r = json.load(open(f"{work}/{label}.json"))
noise = [p for p in r["paths"] if p["noise"] > 0]
suite = ET.parse(f"{work}/{label}.xml").getroot().find("testsuite")
bad = [what for ok, what in [
    (rc == 0, f"exit status {rc}, expected 0"),
    (r["summary"]["regressions"] == 0, f"{r['summary']['regressions']} candidate regressions: "
        + str([p for p in r["paths"] if p["verdict"] == "regression"][:3])),
    (r["summary"]["compared"] > 30, f"too few exchanges compared ({r['summary']['compared']})"),
    (len(noise) > 0, "the noise table is empty"),
    (int(suite.get("tests")) > 0 and int(suite.get("failures")) == 0, f"JUnit report {suite.attrib}")]
    if not ok]
for t in r["targets"]:
    d = t["drift"]
    if not t["ran"] or d["regressions"] or d["unanswered"]:
        bad.append(f"the {t['role']}'s own replay: {d} {t.get('error', '')}")
print(f"replay_live {case}: {label}: exit {rc}, {r['summary']['compared']} exchanges compared, "
      f"{r['summary']['regressions']} candidate regressions, {len(noise)} noisy paths, e.g. "
      + "; ".join(f"{p['api']} v{p['version']} {p['path']} x{p['noise']}" for p in noise[:4]))
for b in bad: print(f"replay_live {case}: FAIL ({label}): {b}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
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

# json EXPR: evaluates a Python expression over the report (as r); $REPORT, if set, names it.
json() { python3 -c "import json,sys; r=json.load(open('${REPORT:-$WORK/report.json}')); print($1)"; }

# Whether $BG, or a process below it (java may be a wrapper script), has a connection to the broker.
describe_connected() {
    local pid
    for pid in $(ss -tnp state established "( dport = :$PORT )" 2>/dev/null | grep -o 'pid=[0-9]*' | cut -d= -f2); do
        while [[ -n $pid ]] && (( pid > 1 )); do
            (( pid == BG )) && return 0
            pid=$(ps -o ppid= -p "$pid" 2>/dev/null | tr -d ' ' || true)
        done
    done
    return 1
}

# describe GROUP MEMBERS: in the background, Admin waits for the group to be Stable.
# Returns once that Admin client is connected to the broker: the group is Stable only
# while the replayed member is in it (about 14 s of demo.pcapng), so the describing must
# be under way when the replay starts, however long the JVM takes to start.
describe_bg() {
    command -v ss >/dev/null || fail "'ss' not found (Debian package iproute2)"
    java -cp "$TESTBED_CP" "${TESTBED_LOG_OPTS[@]}" kwire.testbed.DescribeGroup "127.0.0.1:$PORT" group="$1" \
        wait-members="$2" wait-seconds=180 >"$WORK/describe.out" 2>&1 &
    BG=$!
    local t0=$SECONDS
    until describe_connected; do
        kill -0 "$BG" 2>/dev/null || { cat "$WORK/describe.out" >&2; fail "DescribeGroup exited before it connected to the broker"; }
        # A failure bound, not a speed check.
        (( SECONDS - t0 < 120 )) || { cat "$WORK/describe.out" >&2
            fail "DescribeGroup (pid $BG) had no connection to 127.0.0.1:$PORT within 120 s"; }
        sleep 0.2
    done
}

expect_clean() {
    (( RC == 0 )) || fail "exit status $RC, expected 0"
    [[ $(json "r['summary']['regressions']") == 0 ]] || fail "regressions in the report"
    [[ $(json "r['summary']['unanswered']") == 0 ]] || fail "unanswered requests in the report"
    (( $(json "r['summary']['sent']") > ${MIN_SENT:-50} )) || fail "too few requests sent"
    python3 - "${JUNIT:-$WORK/report.xml}" <<'PY' || fail "JUnit report"
import sys, xml.etree.ElementTree as ET
suite = ET.parse(sys.argv[1]).getroot().find("testsuite")
assert int(suite.get("tests")) > 0 and int(suite.get("failures")) == 0, suite.attrib
PY
}

# broker_timings CAPTURE: captures/CAPTURE into a fresh broker, in recorded timing (CASE
# without -fast) or in fast timing and, at once, into a fresh cluster and as a
# differential replay to three more brokers alike (CASE-fast); clean.
broker_timings() {
    local cap=$REPO/captures/$1 pid dpid
    if [[ $CASE != *-fast ]]; then
        start_broker
        replay -r "$cap" -q
    else
        WITH_CLUSTER=1 start_brokers 4
        cluster_replay cluster "$cap" --target "$CL_ADDR:$CL_PORT" &
        pid=$!
        diff_replay diff "$cap" "$PORT2" "$PORT3" "$PORT4" &
        dpid=$!
        replay -r "$cap" -q --timing fast
        wait "$pid"
        wait "$dpid"
        expect_cluster_clean cluster
        expect_diff_clean diff
    fi
    expect_clean
}

# expect_first_divergence API PATH RECORDED REPLAYED [RECORDED_NAME REPLAYED_NAME]: some
# session's first divergence (JSON sessions[].firstDivergence, the text report's "first
# divergence per session") is API at PATH (indices as [*]) with these values (* for any).
expect_first_divergence() {
    python3 - "${REPORT:-$WORK/report.json}" "$@" <<'PY' || fail "first divergence: expected $1 $2 $3 -> $4"
import json, re, sys
report, api, path, rec, rep = sys.argv[1:6]
names = sys.argv[6:8]
r = json.load(open(report))
norm = lambda p: re.sub(r"\[\d+\]", "[*]", p)
def is_it(d):
    return (d["api"] == api and norm(d["path"]) == "body." + path and rec in ("*", str(d["recorded"]))
            and rep in ("*", str(d["replayed"])) and (not names or [d.get("recordedName"), d.get("replayedName")] == names))
firsts = {s["session"]: s["firstDivergence"] for s in r["sessions"] if "firstDivergence" in s}
hit = [sid for sid, d in firsts.items() if is_it(d)]
print("sessions whose first divergence is %s %s: %s" % (api, path, hit))
for sid, d in sorted(firsts.items()):
    print("  session %d: frame %d %s %s: %s -> %s" % (sid, d["frame"], d["api"], d["path"], d["recorded"], d["replayed"]))
assert hit, "no session starts diverging there"
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
aged)
    command -v kcat >/dev/null || fail "'kcat' not found (apt-get install kcat)"
    start_broker "log.retention.check.interval.ms=1000" "log.initial.task.delay.ms=0"
    cap=$REPO/captures/aged-records.pcapng
    # The records of a topic as kcat reads them to its end: "partition offset timestamp".
    records() { timeout 60 kcat -C -b "127.0.0.1:$PORT" -t "$1" -o beginning -e -q -f '%p %o %T\n' -X client.id=kwire-test-kcat; }
    t_start=$(date +%s%3N)
    replay -r "$cap" --setup -q --rename-topic shifted- --rename-group shifted-
    t_end=$(date +%s%3N)
    MIN_SENT=40 expect_clean
    shift_ms=$(json "r['timeShiftMs']")
    (( shift_ms > 30 * 86400000 - 60000 )) || fail "timeShiftMs $shift_ms: the records were 30 days old when sent"
    records shifted-aged > "$WORK/shifted.txt"
    python3 - "$WORK/shifted.txt" "$t_start" "$t_end" <<'PY' || fail "the replayed records, read back by kcat"
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
lo, hi = int(sys.argv[2]), int(sys.argv[3])
assert len(rows) == 20, f"{len(rows)} records, expected 20: {rows}"
assert sorted((int(p), int(o)) for p, o, t in rows) == sorted((i % 2, i // 2) for i in range(20)), rows
# Dated within the replay's run (with the minute before it: the youngest batch is
# moved to its send time, older ones keep their distance), not 30 days back.
bad = [r for r in rows if not lo - 60000 <= int(r[2]) <= hi]
assert not bad, f"timestamps outside [{lo - 60000}, {hi}]: {bad}"
print(f"kcat: 20 records on shifted-aged, timestamps {min(int(r[2]) for r in rows) - lo} to {max(int(r[2]) for r in rows) - lo} ms after the replay started")
PY
    replay -r "$cap" --setup -q --rename-topic kept- --rename-group kept- --keep-timestamps
    grep -q "^kwire replay: WARNING: retention: the target deletes records of topic kept-aged older than 7 d" "$WORK/replay.out" \
        || fail "no retention warning on stderr for kept-aged"
    [[ $(json "any(n.startswith('retention: ') and 'kept-aged' in n for n in r['notes'])") == True ]] \
        || fail "no retention note in the report"
    # The broker's retention pass (every second) deletes what was sent as recorded: waited
    # for, with a failure bound.
    t0=$SECONDS
    until [[ -z $(records kept-aged) ]]; do
        (( SECONDS - t0 < 90 )) || fail "kept-aged still holds records after 90 s: $(records kept-aged | head -3)"
        sleep 1
    done
    note "kept-aged emptied by the broker's retention $((SECONDS - t0)) s after the replay"
    [[ $(records shifted-aged | wc -l) == 20 ]] || fail "shifted-aged lost records to the same retention passes"
    note "ok"
    ;;
sequence)
    # An idempotent producer's pipelined batches, one of them retried. kcat (librdkafka)
    # sends 300 records, one batch each, with idempotence on, while tcpdump records it;
    # the replay goes through tests/live/produce_fault_proxy.py, which answers one
    # Produce with CONCURRENT_TRANSACTIONS itself (it never reaches the broker) once
    # another Produce is pipelined behind it. The broker refuses that one and the later
    # ones in flight as OUT_OF_ORDER_SEQUENCE_NUMBER; kwire must send them again behind
    # the retried batch, as Kafka's producers do: clean, and kcat reads back all 300 in
    # the order they were sent.
    command -v kcat >/dev/null || fail "'kcat' not found (apt-get install kcat)"
    command -v tcpdump >/dev/null || fail "'tcpdump' not found (apt-get install tcpdump)"
    start_broker
    tcpdump -i lo -U -w "$WORK/seq.pcap" "tcp port $PORT" 2>"$WORK/tcpdump.err" &
    TCPDUMP=$!
    RELAYS+=("$TCPDUMP")
    t0=$SECONDS
    until grep -q "listening on" "$WORK/tcpdump.err"; do
        kill -0 "$TCPDUMP" 2>/dev/null || { cat "$WORK/tcpdump.err" >&2; fail "tcpdump exited"; }
        (( SECONDS - t0 < 30 )) || fail "tcpdump did not listen within 30 s"
        sleep 0.1
    done
    java -cp "$TESTBED_CP" "${TESTBED_LOG_OPTS[@]}" kwire.testbed.CreateTopics "127.0.0.1:$PORT" seq:1:1 >"$WORK/create.out" 2>&1 \
        || { cat "$WORK/create.out" >&2; fail "CreateTopics"; }
    seq 1 300 | timeout 60 kcat -P -b "127.0.0.1:$PORT" -t seq -X enable.idempotence=true -X linger.ms=0 \
        -X batch.num.messages=1 -X client.id=kwire-seq-producer 2>"$WORK/kcat.err" || { cat "$WORK/kcat.err" >&2; fail "kcat -P"; }
    # tcpdump writes what the kernel handed it so far: a last request, after the
    # producer's, is in the file once everything before it is.
    timeout 60 kcat -L -b "127.0.0.1:$PORT" -t seq -X client.id=kwire-seq-end >/dev/null
    t0=$SECONDS
    until "$KWIRE" decode -r "$WORK/seq.pcap" -Y 'header.clientId == "kwire-seq-end"' 2>/dev/null | grep -q Request; do
        (( SECONDS - t0 < 60 )) || fail "tcpdump had not written the last request after 60 s"
        sleep 0.2
    done
    stop_pid "$TCPDUMP" INT 10
    python3 "$HERE/produce_fault_proxy.py" "$WORK/proxy.ready" "$WORK/proxy.log" "127.0.0.1:$PORT" &
    RELAYS+=("$!")
    t0=$SECONDS
    until [[ -f $WORK/proxy.ready ]]; do
        (( SECONDS - t0 < 30 )) || fail "produce_fault_proxy.py did not listen within 30 s"
        sleep 0.1
    done
    broker_port=$PORT
    PORT=$(cut -d: -f2 "$WORK/proxy.ready")
    replay -r "$WORK/seq.pcap" --timing fast --rename-topic re-
    PORT=$broker_port
    cat "$WORK/proxy.log"
    grep -q "^answered correlation id [0-9]* with 51; relayed the pipelined Produce" "$WORK/proxy.log" \
        || fail "the relay found no Produce pipelined behind the held one"
    MIN_SENT=20 expect_clean  # kcat sends 300 batches in 40 to 300 requests
    [[ $(json "any('in sequence order' in n for n in r['notes'])") == True ]] || fail "no batch was sent again in sequence order"
    timeout 60 kcat -C -b "127.0.0.1:$PORT" -t re-seq -o beginning -e -q -f '%o %s\n' -X client.id=kwire-test-kcat >"$WORK/read.txt"
    python3 - "$WORK/read.txt" <<'PY' || fail "the replayed records, read back by kcat"
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
assert [(int(o), int(v)) for o, v in rows] == [(i, i + 1) for i in range(300)], f"{len(rows)} records: {rows[:8]} ..."
print("kcat: 300 records on re-seq, offsets 0-299 holding 1-300 in the order sent")
PY
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
other|other-fast)
    # captures/other-clients.pcapng (kafka-python and kcat/librdkafka: classic groups,
    # gzip/snappy/lz4/zstd producers, admin calls) against a fresh broker configured like
    # the one it was recorded against: no regression, in recorded and in fast timing.
    broker_timings other-clients.pcapng
    # kpy-admin's DescribeConfigs of the broker: listeners and controller endpoints
    # hold the recorded ports; mapped to the target's, they differ only in ignored
    # host values (log.dirs). Races are counted apart, never as regressions.
    [[ $(json "[(a['ignoredOnly'], a['regressions']) for a in r['apis'] if a['api'].startswith('DescribeConfigs')]") == "[(1, 0)]" ]] \
        || fail "DescribeConfigs listener endpoints were not mapped to the target's"
    [[ $(json "r['summary']['races'] == len(r['races'])") == True ]] || fail "races counted and listed differently"
    for client in kpy-admin kpy-consumer kcat-consumer kcat-zstd; do
        [[ $(json "any(s['clientId']=='$client' and 'skipped' not in s for s in r['sessions'])") == True ]] \
            || fail "no replayed session of $client"
    done
    note "ok"
    ;;
go|go-fast)
    # captures/go-clients.pcapng (franz-go 1.22.3 and kadm: classic group go-classic, KIP-848
    # group go-848, gzip/snappy/lz4/zstd producers, admin calls; Sarama 1.61.1 at 2.8.0 and
    # at 4.3.1) against a fresh broker configured like the one it was recorded against: no
    # regression, in both timings.
    broker_timings go-clients.pcapng
    for client in kgo-admin kgo-classic kgo-848 kgo-producer-zstd sarama-default-consumer sarama-max-producer; do
        [[ $(json "any(s['clientId']=='$client' and 'skipped' not in s for s in r['sessions'])") == True ]] \
            || fail "no replayed session of $client"
    done
    note "ok"
    ;;
plugin)
    KWIRE_BROKER_JAVA_OPTS=-Dkwire.plugin.setTopology=permanent start_broker
    replay -r "$REPO/captures/demo.pcapng" --setup -q
    (( RC == 1 )) || fail "exit status $RC, expected 1"
    [[ $(json "any(x['api']=='StreamsGroupTopologyDescriptionUpdate' and x['path']=='body.errorCode' and x['recorded']==0 and x['replayed']!=0 for x in r['regressions'])") == True ]] \
        || fail "the failing push is not reported as a regression of body.errorCode"
    # ... as the first divergence of the member's session (text and JSON reports).
    expect_first_divergence StreamsGroupTopologyDescriptionUpdate errorCode 0 135 NONE STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED
    grep -Eq "^    frame [0-9]+ StreamsGroupTopologyDescriptionUpdate v0 \(recorded response frame [0-9]+\)$" "$WORK/replay.out" \
        && grep -q "^        body.errorCode: recorded 0 NONE, replayed 135 STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED$" "$WORK/replay.out" \
        || fail "the text report does not show the failing push as a first divergence"
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
filters)
    start_broker
    # --conn 2 (the session that creates the topics) with --rename-topic: only it is sent,
    # the broker makes t2-orders, and the recorded answer, renamed, compares the same.
    replay -r "$REPO/captures/demo.pcapng" --conn 2 --rename-topic t2- --timing fast -q \
        --expect 'CreateTopics:body.topics[0].errorCode=NONE'
    (( RC == 0 )) || fail "--conn 2 --rename-topic: exit status $RC, expected 0"
    [[ $(json "[s['session'] for s in r['sessions'] if 'skipped' not in s]") == "[2]" ]] || fail "--conn 2 replayed other sessions"
    # Session 2 is ApiVersions, DescribeCluster, CreateTopics (orders, valid-orders).
    [[ $(json "sorted(a['api'] for a in r['apis'])") == "['ApiVersions v5', 'CreateTopics v7', 'DescribeCluster v2']" ]] \
        || fail "--conn 2 sent other requests: $(json "[a['api'] for a in r['apis']]")"
    [[ $(json "[a['same'] for a in r['apis'] if a['api'] == 'CreateTopics v7']") == "[1]" ]] \
        || fail "the renamed CreateTopics answer does not compare the same"
    [[ $(python3 "$HERE/kafka_topic_partitions.py" "127.0.0.1:$PORT" t2-orders) == 1 ]] || fail "t2-orders was not created"
    # --map: the recorded broker (127.0.0.1:42721 in demo.pcapng) goes to this broker; the
    # default --target, where nothing listens, is never contacted.
    testbed_claim_ports nothing 1 || fail "no free port"
    replay -r "$REPO/captures/demo.pcapng" --target "127.0.0.1:$nothing" --map "127.0.0.1:42721=127.0.0.1:$PORT" \
        --conn 1 --timing fast -q
    (( RC == 0 )) || fail "--map: exit status $RC, expected 0"
    [[ $(json "[s['target'] for s in r['sessions'] if s['session'] == 1]") == "['127.0.0.1:$PORT']" ]] \
        || fail "--map: session 1 did not go to the mapped broker"
    # An expectation the broker does not meet is a regression.
    replay -r "$REPO/captures/demo.pcapng" --conn 2 --rename-topic t3- --timing fast -q \
        --expect 'CreateTopics:body.topics[0].numPartitions=7'
    (( RC == 1 )) || fail "a failed --expect: exit status $RC, expected 1"
    [[ $(json "[(x['path'], x['recorded'], x['replayed']) for x in r['regressions']]") == "[('body.topics[0].numPartitions', '7', 1)]" ]] \
        || fail "the failed expectation is not reported as expected: $(json "r['regressions']")"
    # --group with --api: only the sessions that name the group, only their StreamsGroupDescribe
    # requests; on a terminal, the progress line.
    script -qefc "$KWIRE replay -r $REPO/captures/demo.pcapng --target 127.0.0.1:$PORT --group orders-app \
        --api streamsgroupdescribe --timing fast --timeout 3 --report $WORK/report.json" /dev/null > "$WORK/tty.out" 2>&1 || true
    cat "$WORK/tty.out"
    [[ $(json "r['summary']['sent']") == 2 ]] || fail "--group orders-app --api StreamsGroupDescribe did not send the 2 describes"
    # The sessions with a groupId-entity field of orders-app: the member's heartbeats (9), the
    # live describe (15), the admin scenario (17); FindCoordinator keys carry no entity type.
    [[ $(json "[s['session'] for s in r['sessions'] if 'skipped' not in s]") == "[9, 15, 17]" ]] \
        || fail "--group: the sessions chosen: $(json "[(s['session'], s.get('skipped')) for s in r['sessions']]")"
    grep -q "kwire replay: 2/2 requests, .* regressions" "$WORK/tty.out" || fail "no progress line on a terminal"
    note "ok"
    ;;
stall)
    start_broker
    # The broker stops answering (SIGSTOP) near the end of the replay: its connections stay
    # open, so only the per-request timeout can end the waits.
    ( sleep 18; kill -STOP "$BROKER_PID" ) &
    BG=$!
    t0=$SECONDS
    replay -r "$REPO/captures/demo.pcapng" --setup -q --timeout 1 --reconnect-timeout 2
    kill -CONT "$BROKER_PID" 2>/dev/null || true
    (( RC == 1 )) || fail "exit status $RC, expected 1"
    (( SECONDS - t0 < 150 )) || fail "took $((SECONDS - t0)) s with a stalled broker"
    [[ $(json "any('timeout' in x['reason'] for x in r['unanswered'])") == True ]] \
        || fail "no request reported as timed out: $(json "r['unanswered'][:3]")"
    BG=
    note "ok"
    ;;
stop)
    start_broker
    # SIGTERM mid-run (recorded timing: demo.pcapng lasts about 25 s): the run ends at
    # once and still writes its reports; stderr is not a terminal, so progress comes
    # as a line every 5 s.
    set +e
    "$KWIRE" replay --target "127.0.0.1:$PORT" -r "$REPO/captures/demo.pcapng" --setup --report "$WORK/report.json" \
        --junit "$WORK/report.xml" >"$WORK/replay.out" 2>"$WORK/replay.err" &
    pid=$!
    sleep 12
    kill -TERM "$pid"
    t0=$SECONDS
    wait "$pid"
    RC=$?
    set -e
    cat "$WORK/replay.out" "$WORK/replay.err"
    (( RC == 1 )) || fail "exit status $RC after SIGTERM, expected 1"
    (( SECONDS - t0 < 5 )) || fail "took $((SECONDS - t0)) s to stop after SIGTERM"
    [[ $(json "r['summary']['stopped']") == "interrupted by a signal" ]] || fail "the report does not say it was interrupted"
    (( $(json "r['summary']['sent']") > 5 )) || fail "the report lost what was sent before the signal"
    (( $(json "r['summary']['unanswered']") > 0 )) || fail "what was not done is not counted"
    python3 - "$WORK/report.xml" <<'PY' || fail "JUnit report after SIGTERM"
import sys, xml.etree.ElementTree as ET
suite = ET.parse(sys.argv[1]).getroot().find("testsuite")
assert int(suite.get("tests")) > 0, suite.attrib
PY
    grep -q "^stopped early: interrupted by a signal" "$WORK/replay.out" || fail "the text report does not say it stopped"
    grep -Eq "^kwire replay: [0-9]+/[0-9]+ requests, [0-9]+ regressions" "$WORK/replay.err" \
        || fail "no progress line on a non-terminal stderr"
    grep -q $'\r' "$WORK/replay.err" && fail "carriage returns on a non-terminal stderr"
    # A budget shorter than the capture ends the run the same way.
    t0=$SECONDS
    replay -r "$REPO/captures/demo.pcapng" -q --budget 4
    (( RC == 1 )) || fail "exit status $RC with a spent budget, expected 1"
    (( SECONDS - t0 < 20 )) || fail "a 4 s budget took $((SECONDS - t0)) s"
    [[ $(json "r['summary']['stopped']") == "budget spent" ]] || fail "the report does not say the budget was spent"
    note "ok"
    ;;
tls-relogin)
    KWIRE_BROKER_SSL=1 start_broker "group.consumer.min.heartbeat.interval.ms=1000" "group.consumer.heartbeat.interval.ms=2000" \
        "connections.max.idle.ms=1000"
    replay -r "$REPO/captures/demo.pcapng" --api FindCoordinator --timing fast -q   # __consumer_offsets, as in tls-scram
    PORT=$SASL_SSL_PORT
    replay -r "$REPO/captures/tls/scram-secrets.pcapng" --setup -q --speed 0.2 --tls-ca "$TLS_CA_PEM" \
        --sasl-scram-256 "$SCRAM_USER:$SCRAM_PASSWORD"
    MIN_SENT=40 expect_clean
    reconnects=$(json "sum(s['reconnects'] for s in r['sessions'])")
    (( reconnects > 0 )) || fail "no session lost its connection: the test checks nothing"
    note "$reconnects reconnects, each logged in first"
    ! grep -q "during SASL handshake\|Unexpected Kafka request" "$WORK/broker.log" \
        || fail "the broker saw a request before a login: $(grep -m1 'Unexpected Kafka request' "$WORK/broker.log")"
    note "ok"
    ;;
tls-scram)
    # As the scenario's broker: SSL listeners, consumer heartbeats every 2 s.
    KWIRE_BROKER_SSL=1 start_broker "group.consumer.min.heartbeat.interval.ms=1000" "group.consumer.heartbeat.interval.ms=2000"
    # The recorded broker had served consumer groups before this session (the scenario's
    # earlier captures), so its Metadata lists __consumer_offsets: a FindCoordinator from
    # demo.pcapng, replayed on the plaintext listener, makes this broker create it too.
    replay -r "$REPO/captures/demo.pcapng" --api FindCoordinator --timing fast -q
    PORT=$SASL_SSL_PORT
    cap=$REPO/captures/tls/scram-secrets.pcapng
    replay -r "$cap" --setup -q --tls-ca "$TLS_CA_PEM" --sasl-scram-256 "$SCRAM_USER:$SCRAM_PASSWORD"
    expect_clean
    [[ $(json "sum(a['same'] for a in r['apis'] if a['api'].startswith('SaslAuthenticate'))") == 14 ]] \
        || fail "the 14 SaslAuthenticate exchanges (7 logins) are not all the same"
    grep -q "SCRAM-SHA-256 login to 127.0.0.1:$PORT as $SCRAM_USER: accepted" "$WORK/replay.out" || fail "no login note"
    grep -q "TLS to 127.0.0.1:$PORT: TLSv1.3 .*certificate verified" "$WORK/replay.out" || fail "no TLS note"
    replay -r "$cap" -q --tls-ca "$TLS_CA_PEM" --sasl-scram-256 "$SCRAM_USER:not-the-password"
    (( RC == 2 )) || fail "a wrong password: exit status $RC, expected 2"
    grep -q "refused the SASL SCRAM-SHA-256 login as $SCRAM_USER: 58 SASL_AUTHENTICATION_FAILED" "$WORK/replay.out" \
        || fail "a wrong password: the reason is not given"
    replay -r "$cap" -q --tls --sasl-scram-256 "$SCRAM_USER:$SCRAM_PASSWORD"
    (( RC == 2 )) || fail "an unknown CA: exit status $RC, expected 2"
    grep -q "certificate does not verify (self-signed certificate in certificate chain)" "$WORK/replay.out" \
        || fail "an unknown CA: the reason is not given"
    note "ok"
    ;;
tls-listeners)
    # As the scenario's broker: SSL and SASL_SSL listeners, consumer heartbeats every 2 s.
    WITH_CLUSTER=1 KWIRE_BROKER_SSL=1 start_two_brokers "group.consumer.min.heartbeat.interval.ms=1000" \
        "group.consumer.heartbeat.interval.ms=2000"
    cap=$REPO/captures/tls/listeners-secrets.pcapng
    # The capture's listeners (captures/MANIFEST.md).
    rec_ssl=127.0.0.1:36643 rec_sasl=127.0.0.1:48977
    listeners_replay() {  # LABEL ARGS...
        local label=$1 rc=0
        shift
        timeout --signal=TERM 300 "$KWIRE" replay -r "$cap" -q --report "$WORK/$label.json" --junit "$WORK/$label.xml" \
            --sasl-scram-512 "$SCRAM_USER:$SCRAM_PASSWORD" "$@" >"$WORK/$label.out" 2>&1 || rc=$?
        echo "$rc" >"$WORK/$label.rc"
    }
    listeners_replay fast --timing fast --tls-ca "$TLS_CA_PEM" --target "127.0.0.1:$SSL_PORT,127.0.0.1:$SASL_SSL_PORT" &
    fast=$!
    listeners_replay recorded --tls-ca "$TLS_CA_PEM2" --target "127.0.0.1:$SSL_PORT2" \
        --map "$rec_ssl=127.0.0.1:$SSL_PORT2" --map "$rec_sasl=127.0.0.1:$SASL_SSL_PORT2" &
    recorded=$!
    cluster_replay cluster "$cap" --tls-ca "$CL_CA" --sasl-scram-512 "$SCRAM_USER:$SCRAM_PASSWORD" \
        --target "$CL_ADDR:$CL_SSL_PORT,$CL_ADDR:$CL_SASL_SSL_PORT" &
    into_cluster=$!
    wait "$fast" "$recorded" "$into_cluster" || true
    expect_cluster_clean cluster
    for label in fast recorded; do
        cat "$WORK/$label.out"
        if [[ $label == fast ]]; then ssl=$SSL_PORT sasl=$SASL_SSL_PORT; else ssl=$SSL_PORT2 sasl=$SASL_SSL_PORT2; fi
        RC=$(cat "$WORK/$label.rc") REPORT=$WORK/$label.json JUNIT=$WORK/$label.xml
        expect_clean
        # Each session on the target listener of its recorded one: recorded SSL on SSL,
        # recorded SASL_SSL on SASL_SSL (7 sessions logged in when recorded, 10 not).
        [[ $(json "sorted(set((s['broker'], s['target']) for s in r['sessions']))") == \
           "[('$rec_ssl', '127.0.0.1:$ssl'), ('$rec_sasl', '127.0.0.1:$sasl')]" ]] \
            || fail "$label: sessions not on the listener of their own: $(json "sorted(set((s['broker'], s['target']) for s in r['sessions']))")"
        [[ $(json "sum(a['same'] for a in r['apis'] if a['api'].startswith('SaslAuthenticate'))") == 14 ]] \
            || fail "$label: the 14 SaslAuthenticate exchanges (7 logins) are not all the same"
        [[ $(json "sum(a['sent'] for a in r['apis'])") == 93 ]] || fail "$label: not every one of the 93 requests was sent"
        grep -q "logs\? in first" "$WORK/$label.out" && fail "$label: a session recorded without a login logged in"
    done
    grep -q "listeners: recorded SASL_SSL $rec_sasl -> SASL_SSL 127.0.0.1:$SASL_SSL_PORT (SCRAM-SHA-512 login); recorded SSL $rec_ssl -> SSL 127.0.0.1:$SSL_PORT" \
        "$WORK/fast.out" || fail "fast: the listener note is missing"
    # No credentials: the SASL_SSL listener asks for a login, and says which options give one.
    PORT=$SASL_SSL_PORT
    replay -r "$cap" -q --tls-ca "$TLS_CA_PEM" --target "127.0.0.1:$SSL_PORT"
    (( RC == 2 )) || fail "no credentials: exit status $RC, expected 2"
    grep -q "target 127.0.0.1:$SASL_SSL_PORT asks for a SASL login (it offers .*SCRAM-SHA-512.*): give .*--sasl-scram-512 USER:PASSWORD" \
        "$WORK/replay.out" || fail "no credentials: the reason is not given"
    note "ok"
    ;;
tls-clean|tls-python-clean)
    # The TLS captures (captures/tls, -secrets: key logs from their secrets blocks), against
    # two brokers configured as the one they were recorded against (captures/MANIFEST.md,
    # testbed/scenario tls and tls-python), over TLS: recorded timing on the first broker,
    # fast on the second, both at once. One broker served all captures of a scenario, one
    # after another, so each replays them in the same order: a capture finds what the
    # earlier ones left (topics, __consumer_offsets, groups), as it did when recorded.
    # The same sequence in fast timing goes into a three-node cluster (node 3 below) at once,
    # python-etm there on the SSL listener: what a client had to go through the relay
    # for, kwire's own TLS does not.
    if [[ $CASE == tls-clean ]]; then
        # Brokers 3, 4, 5: the same sequence in fast timing as a differential replay
        # (baseline, candidate, secondary, each over TLS with its own CA).
        WITH_CLUSTER=1 KWIRE_BROKER_SSL=1 start_brokers 5 "group.consumer.min.heartbeat.interval.ms=1000" \
            "group.consumer.heartbeat.interval.ms=2000"
    else
        printf '%s\n' "jdk.tls.keyLimits=AES/GCM/NoPadding KeyUpdate 2^14, ChaCha20-Poly1305 KeyUpdate 2^14" \
            >"$WORK/keylimits.security"
        WITH_CLUSTER=1 KWIRE_BROKER_SSL=1 KWIRE_BROKER_JAVA_OPTS="-Djava.security.properties=$WORK/keylimits.security" \
            start_brokers 5
    fi
    declare -A ssl=([1]=127.0.0.1:$SSL_PORT [2]=127.0.0.1:$SSL_PORT2 [3]=$CL_ADDR:$CL_SSL_PORT)
    declare -A sasl=([1]=127.0.0.1:$SASL_SSL_PORT [2]=127.0.0.1:$SASL_SSL_PORT2 [3]=$CL_ADDR:$CL_SASL_SSL_PORT)
    declare -A ca=([1]=$TLS_CA_PEM [2]=$TLS_CA_PEM2 [3]=$CL_CA)
    declare -A plain=([1]=$PORT [2]=$PORT2) relay=()
    # tls_replay LABEL TIMING CAPTURE TARGET CA [ARGS...]: one replay, its output, reports
    # and exit status in $WORK/LABEL.*.
    tls_replay() {
        local label=$1 timing=$2 cap=$3 target=$4 ca=$5 rc=0 t0=$SECONDS
        shift 5
        timeout --signal=TERM 300 "$KWIRE" replay --target "$target" -r "$REPO/captures/tls/$cap-secrets.pcapng" \
            --setup -q --timing "$timing" --tls-ca "$ca" --report "$WORK/$label.json" --junit "$WORK/$label.xml" \
            "$@" >"$WORK/$label.out" 2>&1 || rc=$?
        echo "$rc" >"$WORK/$label.rc"
        echo "$((SECONDS - t0))" >"$WORK/$label.s"
    }
    if [[ $CASE == tls-clean ]]; then
        runs=(1:recorded:streams-tls13 1:recorded:tls12 2:fast:streams-tls13 2:fast:tls12 2:fast:scram
              3:fast:streams-tls13 3:fast:tls12 3:fast:scram)
    else
        # python-etm was recorded through an OpenSSL TLS 1.2 endpoint (encrypt_then_mac) in
        # front of the PLAINTEXT listener, which rewrote the broker's advertised port to its
        # own: that endpoint is the server the capture talked to, so it stands in front of
        # each broker again, with the broker's certificate and the recorded cipher.
        command -v python3 >/dev/null || fail "python3 not found"
        # Relays 3-5 stand in front of brokers 3-5, the differential replay's.
        plain+=([3]=$PORT3 [4]=$PORT4 [5]=$PORT5)
        declare -A cert=([1]=$TLS_CA_PEM [2]=$TLS_CA_PEM2 [3]=$TLS_CA_PEM3 [4]=$TLS_CA_PEM4 [5]=$TLS_CA_PEM5)
        for n in 1 2 3 4 5; do
            testbed_claim_ports relay_claim 1 || fail "no free port"
            relay[$n]=$relay_claim
            python3 "$REPO/testbed/other-clients/etm_relay.py" "${relay[$n]}" "${plain[$n]}" \
                "$(dirname "${cert[$n]}")/broker.pem" "$(dirname "${cert[$n]}")/broker.key" ECDHE-RSA-AES256-SHA \
                >"$WORK/relay$n.out" 2>&1 &
            RELAYS+=($!)
        done
        for n in 1 2 3 4 5; do
            # A failure bound, not a speed check (480 x 0.25 s); the file may not exist yet.
            for _ in $(seq 1 480); do
                grep -qs '^relay: listening' "$WORK/relay$n.out" && break
                kill -0 "${RELAYS[n - 1]}" 2>/dev/null || break
                sleep 0.25
            done
            grep -qs '^relay: listening' "$WORK/relay$n.out" || { cat "$WORK/relay$n.out" >&2
                fail "the TLS relay $n printed no 'relay: listening' line within 120 s, or exited"; }
        done
        runs=(1:recorded:python-tls13 1:recorded:python-tls12-cbc 1:recorded:python-etm
              2:fast:python-tls13 2:fast:python-tls12-cbc 2:fast:python-etm
              3:fast:python-tls13 3:fast:python-tls12-cbc 3:fast:python-etm)
    fi
    # run_label RUN: the label of a run (its files in $WORK); run_target RUN: its target.
    run_label() { IFS=: read -r b timing cap <<<"$1"; if (( b == 3 )); then echo "cluster-$cap"; else echo "$timing-$cap"; fi; }
    run_target() {
        IFS=: read -r b timing cap <<<"$1"
        case $cap in
        scram) echo "${sasl[$b]}" ;;
        python-etm) if (( b == 3 )); then echo "${ssl[$b]}"; else echo "127.0.0.1:${relay[$b]}"; fi ;;
        *) echo "${ssl[$b]}" ;;
        esac
    }
    # One sequence per broker, and one into the cluster, all at once.
    t0=$SECONDS
    pids=()
    for n in 1 2 3; do
        (
            for run in "${runs[@]}"; do
                IFS=: read -r b timing cap <<<"$run"
                [[ $b == "$n" ]] || continue
                args=()
                [[ $cap == scram ]] && args=(--sasl-scram-256 "$SCRAM_USER:$SCRAM_PASSWORD")
                tls_replay "$(run_label "$run")" "$timing" "$cap" "$(run_target "$run")" "${ca[$n]}" "${args[@]}"
            done
        ) &
        pids+=($!)
    done
    # The same sequence in fast timing as a differential replay to brokers 3, 4 and 5
    # (baseline, candidate, secondary), each over TLS with its own CA (python-etm through
    # each one's relay).
    if [[ $CASE == tls-clean ]]; then diff_caps=(streams-tls13 tls12 scram); else diff_caps=(python-tls13 python-tls12-cbc python-etm); fi
    (
        for cap in "${diff_caps[@]}"; do
            args=()
            case $cap in
            scram) ports=("$SASL_SSL_PORT3" "$SASL_SSL_PORT4" "$SASL_SSL_PORT5")
                   args=(--sasl-scram-256 "$SCRAM_USER:$SCRAM_PASSWORD") ;;
            python-etm) ports=("${relay[3]}" "${relay[4]}" "${relay[5]}") ;;
            *) ports=("$SSL_PORT3" "$SSL_PORT4" "$SSL_PORT5") ;;
            esac
            diff_replay "diff-$cap" "$REPO/captures/tls/$cap-secrets.pcapng" "${ports[0]}" "127.0.0.1:${ports[1]}" \
                "${ports[2]}" --setup --tls-ca "$TLS_CA_PEM3" --candidate-tls-ca "$TLS_CA_PEM4" \
                --secondary-tls-ca "$TLS_CA_PEM5" "${args[@]}"
        done
    ) &
    pids+=($!)
    wait "${pids[@]}"
    note "all replays done in $((SECONDS - t0)) s"
    for cap in "${diff_caps[@]}"; do expect_diff_clean "diff-$cap"; done
    clusters=()
    for run in "${runs[@]}"; do
        IFS=: read -r b timing cap <<<"$run"
        label=$(run_label "$run")
        if (( b == 3 )); then clusters+=("$label"); continue; fi  # printed by expect_cluster_clean
        echo "--- $cap, $timing timing ($(cat "$WORK/$label.s") s)"
        cat "$WORK/$label.out"
    done
    # Each replay as expect_clean checks one, all in one python3 (it starts slowly on a
    # loaded machine): exit 0, 0 regressions, 0 unanswered, enough sent, no session skipped,
    # the JUnit report without failures, the TLS note of its target.
    checks=()
    for run in "${runs[@]}"; do checks+=("$(run_label "$run")" "$(run_target "$run")"); done
    python3 - "$WORK" "$CASE" "${checks[@]}" <<'PY' || fail "see above"
import json, re, sys, xml.etree.ElementTree as ET
work, case, args = sys.argv[1], sys.argv[2], sys.argv[3:]
bad = []
for label, target in zip(args[0::2], args[1::2]):
    rc = int(open(f"{work}/{label}.rc").read())
    out = open(f"{work}/{label}.out").read()
    if rc == 124:
        bad.append(f"{label}: kwire replay did not finish within 300 s"); continue
    try:
        r = json.load(open(f"{work}/{label}.json"))
        s = r["summary"]
    except (OSError, ValueError, KeyError) as e:
        bad.append(f"{label}: exit status {rc}, no report ({e})"); continue
    print(f"replay_live {case}: {label}: exit {rc}, {s.get('sent')} sent, {s.get('regressions')} regressions, "
          f"{s.get('unanswered')} unanswered, {s.get('races')} races")
    # python-etm is one short session of 37 requests; the others send 53 to 113.
    least = 30 if label.endswith("python-etm") else 50
    suite = ET.parse(f"{work}/{label}.xml").getroot().find("testsuite")
    for ok, what in [(rc == 0, f"exit status {rc}, expected 0"),
                     (s["regressions"] == 0, "regressions in the report"),
                     (s["unanswered"] == 0, "unanswered requests in the report"),
                     (s["sent"] > least, f"too few requests sent ({s['sent']})"),
                     (int(suite.get("tests")) > 0 and int(suite.get("failures")) == 0, f"JUnit report {suite.attrib}"),
                     (not [x for x in r["sessions"] if "skipped" in x],
                      f"sessions skipped: {[(x['session'], x.get('skipped')) for x in r['sessions'] if 'skipped' in x]}"),
                     (re.search(rf"TLS to {re.escape(target)}: TLSv1\.[23] .*certificate verified", out), f"no TLS note for {target}")]:
        if not ok:
            bad.append(f"{label}: {what}")
    if label in ("fast-scram", "cluster-scram") and sum(a["same"] for a in r["apis"] if a["api"].startswith("SaslAuthenticate")) != 14:
        bad.append("fast-scram: the 14 SaslAuthenticate exchanges (7 logins) are not all the same")
    # The relay's OpenSSL speaks TLS 1.2 with the one recorded cipher.
    if label in ("recorded-python-etm", "fast-python-etm") and f"TLS to {target}: TLSv1.2 ECDHE-RSA-AES256-SHA," not in out:
        bad.append(f"{label}: not replayed over the relay's TLS 1.2 ECDHE-RSA-AES256-SHA")
for b in bad:
    print(f"replay_live {case}: FAIL: {b}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
    expect_cluster_clean "${clusters[@]}"
    note "ok"
    ;;
tls-mtls-oauth)
    KWIRE_BROKER_SSL=1 start_broker "listener.name.sasl_ssl.ssl.client.auth=required" \
        "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN,OAUTHBEARER" \
        "listener.name.sasl_ssl.sasl.enabled.mechanisms=OAUTHBEARER" \
        "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
    PORT=$SASL_SSL_PORT
    ca_dir=$(dirname "$TLS_CA_PEM")
    openssl req -new -newkey rsa:2048 -nodes -subj "/CN=kwire-replay" -keyout "$WORK/client.key" \
        -out "$WORK/client.csr" 2>/dev/null
    openssl x509 -req -sha256 -days 1 -in "$WORK/client.csr" -CA "$TLS_CA_PEM" -CAkey "$ca_dir/ca.key" \
        -set_serial "0x$(openssl rand -hex 8)" -out "$WORK/client.pem" 2>/dev/null
    # An unsecured JWS (alg none) with the claims the broker's default validator checks.
    jws() { python3 -c 'import base64,json,sys,time
b=lambda o: base64.urlsafe_b64encode(json.dumps(o).encode()).rstrip(b"=").decode()
t=int(time.time()); d=int(sys.argv[1])
print(b({"alg":"none"}) + "." + b({"sub":"alice","iat":min(t,t+d)-60,"exp":t+d}) + ".")' "$1"; }
    jws 3600 >"$WORK/token"
    cap=$REPO/captures/demo.pcapng
    replay -r "$cap" --setup -q --tls-ca "$TLS_CA_PEM" --tls-cert "$WORK/client.pem" --tls-key "$WORK/client.key" \
        --sasl-oauthbearer "@$WORK/token"
    expect_clean
    grep -q "OAUTHBEARER login to 127.0.0.1:$PORT: accepted" "$WORK/replay.out" || fail "no login note"
    sessions=$(json "sum(1 for s in r['sessions'] if 'skipped' not in s)")
    grep -q "^  $sessions sessions recorded without a SASL login log in with OAUTHBEARER first" "$WORK/replay.out" \
        || fail "not every one of the $sessions sessions logs in first"
    replay -r "$cap" -q --tls-ca "$TLS_CA_PEM" --sasl-oauthbearer "@$WORK/token"
    (( RC == 2 )) || fail "no client certificate: exit status $RC, expected 2"
    grep -q "alert bad certificate (the broker wants a client certificate: give --tls-cert FILE)" "$WORK/replay.out" \
        || fail "no client certificate: the reason is not given"
    replay -r "$cap" -q --tls-ca "$TLS_CA_PEM" --tls-cert "$WORK/client.pem" --tls-key "$WORK/client.key" \
        --sasl-oauthbearer "$(jws -60)"
    (( RC == 2 )) || fail "an expired token: exit status $RC, expected 2"
    grep -q "SASL OAUTHBEARER: the broker rejected the token" "$WORK/replay.out" || fail "an expired token: no reason"
    note "ok"
    ;;
maxbytes)
    # stateful.pcapng against a broker that takes record batches of at most 500 bytes
    # (message.max.bytes; 1048588 by default), without --setup: Produce answers
    # MESSAGE_TOO_LARGE, a regression that is no retriable error, and the first divergence
    # of the sessions that produce. The run must stay bounded (the session retry budget).
    start_broker "group.streams.min.task.offset.interval.ms=1000" "message.max.bytes=500"
    t0=$SECONDS
    replay -r "$REPO/captures/stateful.pcapng" -q
    took=$((SECONDS - t0))
    span=$(python3 "$HERE/capture_span.py" "$REPO/captures/stateful.pcapng")
    note "replayed in $took s (the capture lasts $span s)"
    (( RC == 1 )) || fail "exit status $RC, expected 1"
    (( took < 3 * span + 60 )) || fail "took $took s, more than 3 x $span + 60 s"
    # The producer of the input topic: its first Produce is refused.
    expect_first_divergence Produce "responses[*].partitionResponses[*].errorCode" 0 10 NONE MESSAGE_TOO_LARGE
    # The Admin client that creates the topics: CreateTopics v7 returns each new topic's
    # configs, max.message.bytes now the broker's 500 (recorded: the default 1048588).
    expect_first_divergence CreateTopics "topics[*].configs[*].value" 1048588 500
    [[ $(json "all(s['retrySeconds'] <= 5.5 for s in r['sessions'])") == True ]] \
        || fail "a session retried for longer than its budget: $(json "[(s['session'], s['retrySeconds']) for s in r['sessions']]")"
    grep -Eq "^        body\.responses\[[0-9]+\]\.partitionResponses\[[0-9]+\]\.errorCode: recorded 0 NONE, replayed 10 MESSAGE_TOO_LARGE$" \
        "$WORK/replay.out" || fail "the text report does not show MESSAGE_TOO_LARGE as a first divergence"
    note "ok"
    ;;
partitions)
    # classic-consumer.pcapng creates classic-in with 4 partitions (CreateTopics v7); left
    # out (-Y), the topic is made by the broker when the producer's Metadata asks for it
    # (auto.create.topics.enable), with its default count, num.partitions=1: partitions 1-3
    # are missing. No --setup. Metadata shows 1 partition where the capture has 4 (the first
    # divergence of the sessions that ask for the topic), Produce to a missing partition
    # answers UNKNOWN_TOPIC_OR_PARTITION, retriable, so only the session retry budget keeps
    # the run bounded.
    start_broker "auto.create.topics.enable=true" "num.partitions=1"
    t0=$SECONDS
    replay -r "$REPO/captures/classic-consumer.pcapng" -q -Y 'apiKey != CreateTopics'
    took=$((SECONDS - t0))
    span=$(python3 "$HERE/capture_span.py" "$REPO/captures/classic-consumer.pcapng")
    note "replayed in $took s (the capture lasts $span s)"
    (( RC == 1 )) || fail "exit status $RC, expected 1"
    (( took < 3 * span + 60 )) || fail "took $took s, more than 3 x $span + 60 s"
    # (Asked after the replay: Metadata v1 would auto-create the topic itself, so this
    # says its count, not who made it; the first divergences below say that.)
    [[ $(python3 "$HERE/kafka_topic_partitions.py" "127.0.0.1:$PORT" classic-in) == 1 ]] \
        || fail "classic-in does not have the broker's default of 1 partition"
    # The producer's first Metadata: partition 1 of classic-in recorded, absent here.
    expect_first_divergence Metadata "topics[*].partitions[*]" '*' '(absent)'
    grep -Eq '^        body\.topics\[0\]\.partitions\[1\]: recorded \{"errorCode":0,"partitionIndex":1,.*\}, replayed "\(absent\)"$' \
        "$WORK/replay.out" || fail "the text report does not show the missing partition 1 as a first divergence"
    # A Produce to the missing partitions: UNKNOWN_TOPIC_OR_PARTITION, retriable, retried
    # until the session's retry budget was spent, then the session's first divergence.
    expect_first_divergence Produce "responses[*].partitionResponses[*].errorCode" 0 3 NONE UNKNOWN_TOPIC_OR_PARTITION
    (( $(json "r['summary']['retryBudgetSpent']") > 0 )) || fail "no session spent its retry budget"
    grep -Eq "^  session [0-9]+: retry budget spent \([0-9]+ retries, [0-9.]+ s\)" "$WORK/replay.out" \
        || fail "the text report does not say the retry budget was spent"
    note "ok"
    ;;
clean-*)
    # Every bundled capture, against brokers configured as the one it was recorded
    # against (captures/MANIFEST.md, testbed/scenario): exit 0, 0 regressions, 0
    # unanswered, in recorded timing (broker 1) and in fast timing as a differential
    # replay (brokers 2, 3, 4: baseline, candidate and secondary, all alike: no candidate
    # regression, some noise, each target clean against the capture), and into a
    # three-node cluster; all at once.
    cap=${CASE#clean-}
    [[ -f $REPO/captures/$cap.pcapng ]] || fail "no capture captures/$cap.pcapng"
    props=()
    CONTROL=()
    case $cap in
    stateful) props=("group.streams.min.task.offset.interval.ms=1000") ;;
    # The first deleteStreamsGroups fails in the plugin, the next succeeds.
    admin) CONTROL=("deleteTopology.orders-app=fail:1") ;;
    plugin-failures) CONTROL=("setTopology.orders-app-permanent=permanent" "setTopology.orders-app-transient=transient:1") ;;
    txn-consumer)
        export KWIRE_BROKER_FEATURES="transaction.version=1"
        props=("group.consumer.min.heartbeat.interval.ms=1000" "group.consumer.heartbeat.interval.ms=2000") ;;
    # Its records were 30 days old when sent; the brokers keep the default retention
    # (the recording broker's first retention pass came after the recording). 53 sent.
    aged-records) MIN_SENT=40 ;;
    esac
    WITH_CLUSTER=1 start_brokers 4 "${props[@]}"
    t0=$SECONDS
    cluster_replay cluster "$REPO/captures/$cap.pcapng" --setup --target "$CL_ADDR:$CL_PORT" &
    cluster_pid=$!
    diff_replay diff "$REPO/captures/$cap.pcapng" "$PORT2" "$PORT3" "$PORT4" --setup &
    diff_pid=$!
    set +e
    timeout --signal=TERM 300 "$KWIRE" replay --target "127.0.0.1:$PORT" -r "$REPO/captures/$cap.pcapng" --setup -q \
        --report "$WORK/recorded.json" --junit "$WORK/recorded.xml" >"$WORK/recorded.out" 2>&1
    RC=$?
    wait "$diff_pid"
    wait "$cluster_pid"
    set -e
    note "recorded timing, the differential replay and the cluster done in $((SECONDS - t0)) s"
    echo "--- recorded timing"; cat "$WORK/recorded.out"
    cp "$WORK/recorded.out" "$WORK/replay.out"
    (( RC != 124 )) || fail "recorded timing: kwire replay did not finish within 300 s"
    note "recorded timing: exit $RC"
    REPORT=$WORK/recorded.json JUNIT=$WORK/recorded.xml expect_clean
    expect_diff_clean diff
    expect_cluster_clean cluster
    note "ok"
    ;;
diff-candidates)
    # Differential replays of captures/demo.pcapng (fast timing) with a candidate that
    # really differs, both at once: (a) the candidate's group.streams.heartbeat.interval.ms
    # is 3000 where the baseline's and the secondary's are 2000: exit 1, and each session
    # that diverges does so first at StreamsGroupHeartbeat's heartbeatIntervalMs (2000
    # against 3000), a regression beyond the (empty) noise at that path; (b) the
    # candidate's topology description plugin fails every setTopology permanently: exit
    # 1, and StreamsGroupTopologyDescriptionUpdate's error code is named (NONE on the
    # baseline, STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED on the candidate). (b)'s
    # candidate is reached over TLS with its own CA (--candidate SSL://...,
    # --candidate-tls-ca), the baseline in plaintext. (a) runs a --script that skips
    # DescribeCluster: no target is sent one, so no DescribeCluster row is compared.
    PROPS_3=("group.streams.heartbeat.interval.ms=3000")
    CONTROL_5=("setTopology=permanent")
    KWIRE_BROKER_SSL=1 start_brokers 5
    cap=$REPO/captures/demo.pcapng
    cat > "$WORK/skip.lua" <<'LUA'
function on_request(msg)
  if msg.apiName == "DescribeCluster" then return false end
end
LUA
    diff_replay interval "$cap" "$PORT" "$PORT3" "$PORT2" --setup --script "$WORK/skip.lua" &
    pid=$!
    diff_replay plugin "$cap" "$PORT4" "SSL://127.0.0.1:$SSL_PORT5" - --setup --candidate-tls-ca "$TLS_CA_PEM5"
    wait "$pid"
    for label in interval plugin; do echo "--- $label"; cat "$WORK/$label.out"; done
    python3 - "$WORK" <<'PY' || fail "see above"
import json, re, sys
work = sys.argv[1]
def load(label):
    return int(open(f"{work}/{label}.rc").read()), json.load(open(f"{work}/{label}.json"))
norm = lambda p: re.sub(r"\[\d+\]", "", p)
rc, r = load("interval")
firsts = [s["firstDivergence"] for s in r["sessions"]]
print("interval: exit", rc, "first divergences:", [(f["frame"], f["api"], f["path"], f["baseline"], f["candidate"]) for f in firsts])
assert rc == 1, f"exit status {rc}, expected 1"
assert firsts, "no session diverges"
for f in firsts:
    assert (f["api"], norm(f["path"]), f["baseline"], f["candidate"]) == \
        ("StreamsGroupHeartbeat", "body.heartbeatIntervalMs", "2000", "3000"), f"first divergence {f}"
rows = [p for p in r["paths"] if p["verdict"] == "regression"]
assert any(p["path"] == "body.heartbeatIntervalMs" and p["noise"] == 0 for p in rows), rows
assert not [p for p in r["paths"] if p["api"] == "DescribeCluster"], "a DescribeCluster was sent despite the script"
rc, r = load("plugin")
hit = [s["firstDivergence"] for s in r["sessions"] if s["firstDivergence"]["api"] == "StreamsGroupTopologyDescriptionUpdate"]
print("plugin: exit", rc, "first divergences:", [(s["firstDivergence"]["api"], s["firstDivergence"]["path"]) for s in r["sessions"]])
assert rc == 1, f"exit status {rc}, expected 1"
assert r["targets"][1]["target"].startswith("SSL://"), r["targets"][1]
assert r["targets"][1]["drift"]["sent"] > 50, r["targets"][1]
assert any(norm(f["path"]) == "body.errorCode" and f["baseline"] == "0 NONE"
           and f["candidate"] == "135 STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED" for f in hit), hit
PY
    grep -q "^        body.errorCode: baseline 0 NONE, candidate 135 STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED" "$WORK/plugin.out" \
        || fail "the text report does not name the plugin's error"
    note "ok"
    ;;
diff-upgrade)
    # Baseline Kafka 4.3.1 (and a 4.3.1 secondary), candidate 4.4.0, replaying
    # captures/old-client.pcapng (Kafka Streams and clients 4.3.1 against a 4.4.0
    # broker, and the scenario's own 4.4.0 admin tools): what 4.4.0 answers otherwise
    # than 4.3.1 is named, and nothing else (the README's "Test an upgrade"):
    # - ApiVersions v4: the api ranges (two new apis, higher maxVersions) and the
    #   feature levels (finalized and supported);
    # - ApiVersions v5 and StreamsGroupDescribe v1: versions 4.3.1 does not support;
    # - CreateTopics v7: four topic configs 4.4.0 has and 4.3.1 lacks, in each created
    #   topic's configs (errors.deadletterqueue.group.enable, max.decompressed.message.bytes,
    #   remote.copy.lag.bytes, remote.copy.lag.ms);
    # - StreamsGroupHeartbeat v0: taskOffsetIntervalMs, 0 from 4.3.1, 60000 from 4.4.0.
    VERSION_1=4.3.1 VERSION_3=4.3.1
    start_brokers 3
    diff_replay upgrade "$REPO/captures/old-client.pcapng" "$PORT" "$PORT2" "$PORT3" --setup
    echo "--- upgrade"; cat "$WORK/upgrade.out"
    python3 - "$WORK" <<'PY' || fail "see above"
import json, sys
work = sys.argv[1]
rc = int(open(f"{work}/upgrade.rc").read())
r = json.load(open(f"{work}/upgrade.json"))
got = sorted((p["api"], p["version"], p["path"]) for p in r["paths"] if p["verdict"] == "regression")
print("upgrade: exit", rc, "regressed paths:", got)
expected = sorted([("ApiVersions", 4, "body.apiKeys"), ("ApiVersions", 4, "body.apiKeys.maxVersion"),
                   ("ApiVersions", 4, "body.finalizedFeatures.maxVersionLevel"),
                   ("ApiVersions", 4, "body.finalizedFeatures.minVersionLevel"),
                   ("ApiVersions", 4, "body.supportedFeatures.maxVersion"), ("ApiVersions", 5, "(version)"),
                   ("CreateTopics", 7, "body.topics.configs"), ("StreamsGroupDescribe", 1, "(version)"),
                   ("StreamsGroupHeartbeat", 0, "body.taskOffsetIntervalMs")])
rows = {(p["api"], p["version"], p["path"]): p for p in r["paths"]}
def example(key):
    p = rows.get(key, {}).get("example", {})
    return p.get("baseline"), p.get("candidate"), p.get("asTheCapture")
checks = [(example(("StreamsGroupHeartbeat", 0, "body.taskOffsetIntervalMs")), ("0", "60000", "candidate")),
          (example(("StreamsGroupDescribe", 1, "(version)")), ('"v0-v0"', '"v0-v1"', "candidate")),
          (example(("ApiVersions", 5, "(version)")), ('"v0-v4"', '"v0-v5"', "candidate"))]
for got_value, want in checks:
    assert got_value == want, f"example {got_value}, expected {want}"
# A topic config of 4.4.0's that 4.3.1 lacks (there are several; the first one the answer lists).
baseline, candidate, side = example(("CreateTopics", 7, "body.topics.configs"))
assert (baseline, side) == ('"(absent)"', "candidate") and candidate.startswith('{"name":'), (baseline, candidate, side)
# All of them: the topic configs of every CreateTopics divergence (the same four per topic).
names = set()
for sess in r["sessions"]:
    for d in [sess["firstDivergence"]] + sess["later"]:
        if d["api"] == "CreateTopics":
            assert d["baseline"] == '"(absent)"', d
            names.add(json.loads(d["candidate"])["name"])
want = {"errors.deadletterqueue.group.enable", "max.decompressed.message.bytes", "remote.copy.lag.bytes", "remote.copy.lag.ms"}
assert names == want, f"new topic configs {sorted(names)}, expected {sorted(want)}"
assert got == expected, f"regressed paths {got}, expected {expected}"
assert rc == (1 if expected else 0), f"exit status {rc}"
PY
    note "ok"
    ;;
unreachable)
    testbed_claim_ports PORT 1 || fail "no free port"
    replay -r "$REPO/captures/demo.pcapng"
    (( RC == 2 )) || fail "exit status $RC, expected 2"
    grep -q "127.0.0.1:$PORT" "$WORK/replay.out" || fail "the message does not name the target"
    note "ok"
    ;;
*) fail "unknown case $CASE" ;;
esac
