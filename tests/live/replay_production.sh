#!/usr/bin/env bash
# Live test of `kwire replay` of a production-shaped cluster (ctest label "live"):
# captures/tls/production-secrets.pcapng, recorded on five nodes at 127.0.0.21-25
# (nodes 1-3 broker+controller, 4-5 broker only, racks r1,r2,r3,r1,r2, follower
# fetching; every client on SASL_SSL with SCRAM-SHA-512; the brokers on a PLAINTEXT
# listener, the controllers on their own; captures/MANIFEST.md), replayed into fresh
# clusters of the same shape on other addresses (127.0.0.51-55) and other ports, with
# --target naming node 1 only:
# - in fast timing: exit 0, no regression, nothing unanswered; and on the wire
#   (--record-out, read by tshark): connections to the target's SASL_SSL port only,
#   none of the brokers' own client ids or apis; every connection the capture holds
#   to the PLAINTEXT and CONTROLLER listeners (tshark) is left out as a broker's, and
#   none to the SASL_SSL one;
# - in recorded timing, into another fresh cluster: exit 0, no regression, nothing
#   unanswered.
# A cluster per replay: transactional ids are not renamed, and a second replay into
# the same cluster would find the first one's producer epochs.
#
#   tests/live/replay_production.sh KWIRE_BINARY
set -euo pipefail

KWIRE=${1:?usage: replay_production.sh KWIRE_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
source "$REPO/testbed/lib.sh"

fail() { echo "replay_production: FAIL: $*" >&2; exit 1; }
note() { echo "replay_production: $*"; }

[[ -x $KWIRE ]] || fail "kwire binary '$KWIRE' is not executable"
for tool in java mvn python3 tshark; do
    command -v "$tool" >/dev/null || fail "'$tool' not found (Java 17, Maven, python3 and tshark are needed)"
done

CAPTURE=$REPO/captures/tls/production-secrets.pcapng
# The capture's listeners (captures/MANIFEST.md): clients, brokers, controllers.
RECORDED_SASL_SSL=46789 RECORDED_PLAINTEXT=35345 RECORDED_CONTROLLER=47749
WORK=$(mktemp -d /tmp/kwire-replay-production.XXXXXX)
CLUSTER_SH=
drop_cluster() {
    local pid
    [[ -n $CLUSTER_SH ]] || return 0
    # Its data goes with it: killed, not shut down in turn.
    for pid in $(sed -n 's/^NODE_[0-9]*_PID=//p' "$WORK/cluster.env" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    stop_pid "$CLUSTER_SH" TERM 90
    CLUSTER_SH=
}
cleanup() {
    local rc=$?
    trap - EXIT
    drop_cluster || true
    if (( rc != 0 )); then
        [[ -f $WORK/replay.out ]] && { echo "--- kwire replay output" >&2; tail -n 60 "$WORK/replay.out" >&2; }
        [[ -f $WORK/run-cluster.out ]] && { echo "--- run-cluster output" >&2; tail -n 20 "$WORK/run-cluster.out" >&2; }
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT

testbed_build

# A fresh cluster of the recording's shape and settings (testbed/scenario production);
# ready once run-cluster writes its info file (every node registered and unfenced).
start_cluster() {
    drop_cluster
    rm -f "$WORK/cluster.env"
    KWIRE_CLUSTER_BASE_ADDR=127.0.0.51 KWIRE_CLUSTER_CONTROLLERS=3 KWIRE_CLUSTER_RACKS=r1,r2,r3,r1,r2 \
    KWIRE_BROKER_SSL=1 KWIRE_BROKER_FEATURES="transaction.version=2 share.version=2" \
    KWIRE_BROKER_PROPS=$'group.consumer.min.heartbeat.interval.ms=1000\ngroup.consumer.heartbeat.interval.ms=2000\nshare.coordinator.state.topic.num.partitions=6' \
    KWIRE_CLUSTER_INFO=$WORK/cluster.env KWIRE_CLUSTER_LOG_DIR=$WORK/cluster \
        setsid "$REPO/testbed/run-cluster" 5 >"$WORK/run-cluster.out" 2>&1 &
    CLUSTER_SH=$!
    while [[ ! -s $WORK/cluster.env ]] || ! grep -q "^PLAIN_PASSWORD=" "$WORK/cluster.env"; do
        kill -0 "$CLUSTER_SH" 2>/dev/null || fail "run-cluster exited before the cluster was ready"
        sleep 0.5
    done
    source "$WORK/cluster.env"
    note "cluster: $SASL_SSL_BOOTSTRAP (SASL_SSL)"
}

# replay LABEL ARGS...: the capture into node 1 of the cluster over SASL_SSL; clean.
replay() {
    local label=$1 rc=0
    shift
    timeout --signal=TERM 300 "$KWIRE" replay -r "$CAPTURE" --target "$NODE_1_ADDR:$SASL_SSL_PORT" --tls-ca "$TLS_CA_PEM" \
        --sasl-scram-512 "$SCRAM_USER:$SCRAM_PASSWORD" --setup -q --report "$WORK/$label.json" "$@" \
        >"$WORK/replay.out" 2>&1 || rc=$?
    cat "$WORK/replay.out"
    (( rc != 124 )) || fail "$label: kwire replay did not finish within 300 s"
    (( rc == 0 )) || fail "$label: exit status $rc"
    python3 - "$WORK/$label.json" "$label" <<'EOF' || fail "$label: see above"
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
bad = [f"{k} {s[k]}" for k in ("regressions", "unanswered") if s[k]]
if bad: sys.exit(print(f"replay_production {sys.argv[2]}: FAIL: " + ", ".join(bad), file=sys.stderr) or 1)
EOF
}

start_cluster
replay fast --timing fast --record-out "$WORK/out.pcapng"

# The capture's connections by server port (tshark, from the SYNs), and the replay's
# requests on the wire: client id and api key (the request header; tshark 4.0 reads it
# for every version).
tshark -r "$CAPTURE" -Y 'tcp.flags.syn == 1 && tcp.flags.ack == 0' -T fields -e tcp.dstport >"$WORK/capture-syns.tsv" 2>/dev/null
tshark -r "$WORK/out.pcapng" -Y 'tcp.flags.syn == 1 && tcp.flags.ack == 0' -T fields -e ip.dst -e tcp.dstport \
    >"$WORK/syns.tsv" 2>/dev/null
tshark -r "$WORK/out.pcapng" -d "tcp.port==$SASL_SSL_PORT,kafka" -Y kafka.request_key -T fields -e kafka.client_id \
    -e kafka.request_key >"$WORK/requests.tsv" 2>/dev/null
python3 - "$WORK" "$SASL_SSL_PORT" "$RECORDED_SASL_SSL" "$RECORDED_PLAINTEXT" "$RECORDED_CONTROLLER" \
    "$NODE_1_ADDR" "$NODE_2_ADDR" "$NODE_3_ADDR" "$NODE_4_ADDR" "$NODE_5_ADDR" <<'EOF' || fail "see above"
import collections, json, re, sys
work, port, rec_sasl, rec_plain, rec_ctl = sys.argv[1:6]
nodes = set(sys.argv[6:11])
errors = []
def need(ok, what):
    if not ok: errors.append(what)
report = json.load(open(f"{work}/fast.json"))

# Connections the capture holds, by the listener they reach; those the capture was
# recording when they opened (a SYN). The others were open before recording began.
syn_ports = collections.Counter(l.strip() for l in open(f"{work}/capture-syns.tsv") if l.strip())
need(syn_ports[rec_plain] > 0 and syn_ports[rec_ctl] > 0, f"the capture's connections by port: {dict(syn_ports)}")
# Every session to the brokers' and controllers' listeners is left out as a broker's, none to the clients'.
by_port = collections.Counter()
for s in report["sessions"]:
    p = s["broker"].rpartition(":")[2]
    if p in (rec_plain, rec_ctl): need("brokerToBroker" in s, f"session {s['session']} to {s['broker']} was not left out")
    if p == rec_sasl: need("brokerToBroker" not in s, f"session {s['session']} to the clients' listener {s['broker']} was left out as a broker's")
    if "brokerToBroker" in s: by_port[p] += 1
need(by_port[rec_plain] >= syn_ports[rec_plain] and by_port[rec_ctl] >= syn_ports[rec_ctl],
     f"left out by listener {dict(by_port)}, the capture opened {dict(syn_ports)}")

# On the wire: the target's SASL_SSL port only, on its five nodes; no broker's request.
syns = collections.Counter(tuple(l.split()) for l in open(f"{work}/syns.tsv") if l.strip())
need(syns and all(p == port and a in nodes for a, p in syns), f"the replay's connections: {dict(syns)}")
brokers_own = {"27", "58", "62", "63", "67", "83", "84", "85", "86", "87"}   # WriteTxnMarkers, Envelope, BrokerRegistration, BrokerHeartbeat, AllocateProducerIds, share state
sent = collections.Counter()
for line in open(f"{work}/requests.tsv"):
    f = line.rstrip("\n").split("\t")
    if len(f) < 2: continue
    cid, key = f[0], f[1]
    sent[key] += 1
    need(not re.match(r"^(\d+|broker-\d+-.*|raft-client-\d+|Persister-client-\d+|AddPartitionsManager-.*)$", cid),
         f"a broker's request on the wire: client id {cid!r}, api key {key}")
    need(key not in brokers_own, f"a broker's api on the wire: api key {key} (client id {cid!r})")
need(sum(sent.values()) >= report["summary"]["sent"], f"{sum(sent.values())} requests on the wire, {report['summary']['sent']} sent")
for e in errors: print("replay_production: FAIL:", e, file=sys.stderr)
if errors: sys.exit(1)
print(f"replay_production: {sum(syns.values())} connections to the target's SASL_SSL port; left out as brokers' {dict(by_port)}; the capture opened {dict(syn_ports)}")
EOF
note "fast timing: clean; no broker's connection or request sent"

start_cluster
replay recorded
note "recorded timing: clean"
note "ok"
