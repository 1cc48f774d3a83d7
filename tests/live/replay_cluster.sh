#!/usr/bin/env bash
# Live test of `kwire replay` into a cluster (ctest label "live"): captures/cluster.pcapng,
# recorded on three brokers at 127.0.0.11-13 (node ids 1-3, as Kafka's Admin reported
# them; captures/MANIFEST.md), replayed into a fresh three-node cluster of
# testbed/run-cluster on other addresses (127.0.0.41-43) and another port, with
# --target naming node 2 only and no --map.
#
#   tests/live/replay_cluster.sh KWIRE_BINARY
#
# Checked, against facts that do not come from kwire:
# - every replayed session went to the target's node with the recorded node id:
#   recorded address 127.0.0.1K is node K-0 (the MANIFEST's Admin lines), the
#   target's node K is at NODE_K_ADDR (run-cluster's info file);
# - on the wire (--record-out, read by tshark): the replay connected to all three
#   nodes, as many connections to each as sessions recorded to that node, on the
#   client port only, and sent ApiVersions only (--api ApiVersions): nothing to the
#   controller listener, no broker-to-broker request;
# - the broker-to-broker connections it left out, by kind, are those tshark finds in
#   the capture: replica fetchers (client ids broker-N-fetcher-*, raft-client-*) and
#   the other connections to the controller port;
# - exit 0 with 0 regressions, and the notes say where each recorded node went.
#
# Then the group apis (and ApiVersions, FindCoordinator) into the same cluster: a
# client's coordinator connection goes where its group's coordinator lives on the
# target, whatever node it was recorded to. Checked against Kafka's Admin
# (testbed DescribeCluster) asked after the replay: every StreamsGroupHeartbeat of
# stateful-app on the wire (tshark) went to the node Admin names, none was
# answered NOT_COORDINATOR, and the run ended on its own with nothing unanswered
# (NOT_COORDINATOR is charged to the retry budget, not waited out).
#
# The other requests go to their session's recorded node id (docs/replay.md, "A
# cluster as the target"): a partition's leader on a fresh cluster is usually
# another node than in the recording, so a whole replay is not clean yet.
set -euo pipefail

KWIRE=${1:?usage: replay_cluster.sh KWIRE_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
source "$REPO/testbed/lib.sh"

fail() { echo "replay_cluster: FAIL: $*" >&2; exit 1; }
note() { echo "replay_cluster: $*"; }

[[ -x $KWIRE ]] || fail "kwire binary '$KWIRE' is not executable"
for tool in java mvn python3 tshark; do
    command -v "$tool" >/dev/null || fail "'$tool' not found (Java 17, Maven, python3 and tshark are needed)"
done

CAPTURE=$REPO/captures/cluster.pcapng
RECORDED_PORT=60287       # the capture's client port (captures/MANIFEST.md)
RECORDED_CONTROLLER=37365 # and its controller port
WORK=$(mktemp -d /tmp/kwire-replay-cluster.XXXXXX)
CLUSTER_SH=
cleanup() {
    local rc=$?
    trap - EXIT
    if [[ -n $CLUSTER_SH ]]; then stop_pid "$CLUSTER_SH" TERM 90; fi
    if (( rc != 0 )); then
        [[ -f $WORK/replay.out ]] && { echo "--- kwire replay output" >&2; tail -n 40 "$WORK/replay.out" >&2; }
        [[ -f $WORK/run-cluster.out ]] && { echo "--- run-cluster output" >&2; tail -n 20 "$WORK/run-cluster.out" >&2; }
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT

testbed_build

# The cluster: ready once run-cluster writes its info file (every node answers
# Metadata listing all three brokers unfenced); its own bound is a failure bound.
KWIRE_CLUSTER_BASE_ADDR=127.0.0.41 KWIRE_CLUSTER_INFO=$WORK/cluster.env KWIRE_CLUSTER_LOG_DIR=$WORK \
    setsid "$REPO/testbed/run-cluster" 3 >"$WORK/run-cluster.out" 2>&1 &
CLUSTER_SH=$!
while [[ ! -s $WORK/cluster.env ]] || ! grep -q '^NODE_3_LOG=' "$WORK/cluster.env"; do
    kill -0 "$CLUSTER_SH" 2>/dev/null || fail "run-cluster exited before the cluster was ready"
    sleep 0.5
done
source "$WORK/cluster.env"
note "cluster: $BOOTSTRAP"
[[ $BROKER_PORT != "$RECORDED_PORT" ]] || fail "the cluster took the recorded port $RECORDED_PORT; the test wants another"

rc=0
"$KWIRE" replay -r "$CAPTURE" --target "$NODE_2_ADDR:$BROKER_PORT" --api ApiVersions --timing fast -q \
    --report "$WORK/report.json" --record-out "$WORK/out.pcapng" >"$WORK/replay.out" 2>&1 || rc=$?
(( rc == 0 )) || fail "kwire replay exited $rc"

# The capture's facts, read by tshark: per connection its first request's client id
# and destination.
tshark -r "$CAPTURE" -d "tcp.port==$RECORDED_PORT,kafka" -d "tcp.port==$RECORDED_CONTROLLER,kafka" \
    -Y kafka.request_key -T fields -e tcp.stream -e ip.dst -e tcp.dstport -e kafka.client_id \
    >"$WORK/capture.tsv" 2>/dev/null
# The replay's connections: one SYN each.
tshark -r "$WORK/out.pcapng" -Y 'tcp.flags.syn == 1 && tcp.flags.ack == 0' -T fields -e ip.dst -e tcp.dstport \
    >"$WORK/syns.tsv" 2>/dev/null
tshark -r "$WORK/out.pcapng" -d "tcp.port==$BROKER_PORT,kafka" -Y 'kafka.request_key' -T fields -e kafka.request_key \
    >"$WORK/requests.tsv" 2>/dev/null

python3 - "$WORK" "$RECORDED_PORT" "$RECORDED_CONTROLLER" "$BROKER_PORT" \
    "$NODE_1_ADDR" "$NODE_2_ADDR" "$NODE_3_ADDR" <<'EOF' || fail "see above"
import collections, json, re, sys
work, rec_port, rec_ctl, port = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
node_addr = {1: sys.argv[5], 2: sys.argv[6], 3: sys.argv[7]}
recorded_node = {"127.0.0.11": 1, "127.0.0.12": 2, "127.0.0.13": 3}   # captures/MANIFEST.md (Kafka's Admin)
errors = []
def need(ok, what):
    if not ok: errors.append(what)

report = json.load(open(f"{work}/report.json"))
summary = report["summary"]
need(summary["regressions"] == 0, f"{summary['regressions']} regressions")
need(summary["unanswered"] == 0, f"{summary['unanswered']} unanswered")

# Connections of the capture, by kind, from tshark.
first = {}
for line in open(f"{work}/capture.tsv"):
    f = line.rstrip("\n").split("\t")
    if len(f) >= 4 and f[0] not in first: first[f[0]] = (f[1], f[2], f[3])
replica = sum(1 for d, p, cid in first.values() if re.match(r"broker-\d+-fetcher-|raft-client-", cid))
controller = sum(1 for d, p, cid in first.values() if p == rec_ctl and not re.match(r"raft-client-", cid))
clients = collections.Counter(d for d, p, cid in first.values() if p == rec_port and not re.match(r"broker-\d+-fetcher-", cid))
need(summary.get("brokerToBroker") == {"replica fetch": replica, "controller": controller},
     f"broker-to-broker connections left out: kwire {summary.get('brokerToBroker')}, tshark replica fetch {replica}, controller {controller}")

# Every replayed session went to the target's node of its recorded node id.
replayed = [s for s in report["sessions"] if not s.get("skipped")]
need(len(replayed) == sum(clients.values()), f"{len(replayed)} sessions replayed, tshark finds {sum(clients.values())} client connections")
for s in replayed:
    host, _, p = s["broker"].rpartition(":")
    want = f"{node_addr[recorded_node[host]]}:{port}"
    need(s["target"] == want, f"session {s['session']} recorded to {s['broker']} went to {s['target']}, not node {recorded_node[host]} at {want}")

# On the wire: as many connections to each node as client connections were recorded to it.
syns = collections.Counter(tuple(l.split()) for l in open(f"{work}/syns.tsv") if l.strip())
want = collections.Counter({(node_addr[recorded_node[h]], port): n for h, n in clients.items()})
need(syns == want, f"the replay's connections {dict(syns)}, want {dict(want)}")
keys = collections.Counter(l.strip() for l in open(f"{work}/requests.tsv") if l.strip())
need(set(keys) == {"18"}, f"requests on the wire by api key: {dict(keys)}; only ApiVersions (18) was to be sent")

notes = "\n".join(report["notes"])
line = "the capture holds 3 brokers; the target has 3: " + "; ".join(
    f"node {n} 127.0.0.1{n}:{rec_port} -> node {n} {node_addr[n]}:{port}" for n in (1, 2, 3))
need(line in notes, f"no note '{line}' in:\n{notes}")

for e in errors: print("replay_cluster: FAIL:", e, file=sys.stderr)
if errors: sys.exit(1)
print(f"replay_cluster: {len(replayed)} sessions to nodes {dict(sorted(want.items()))}; left out: replica fetch {replica}, controller {controller}")
EOF

# The group apis.
rc=0
"$KWIRE" replay -r "$CAPTURE" --target "$NODE_2_ADDR:$BROKER_PORT" --timing fast -q \
    --api ApiVersions,FindCoordinator,StreamsGroupHeartbeat,ConsumerGroupHeartbeat,JoinGroup,SyncGroup,Heartbeat,OffsetFetch,OffsetCommit,LeaveGroup \
    --report "$WORK/groups.json" --record-out "$WORK/groups.pcapng" >"$WORK/replay.out" 2>&1 || rc=$?
(( rc <= 1 )) || fail "kwire replay of the group apis exited $rc"
java -cp "$TESTBED_CP" kwire.testbed.DescribeCluster "$BOOTSTRAP" groups=stateful-app >"$WORK/roles.txt" 2>&1 ||
    { cat "$WORK/roles.txt" >&2; fail "DescribeCluster (Kafka's Admin) failed"; }
tshark -r "$WORK/groups.pcapng" -d "tcp.port==$BROKER_PORT,kafka" -Y 'kafka.request_key == 88' -T fields -e ip.dst \
    >"$WORK/heartbeats.tsv" 2>/dev/null
python3 - "$WORK" "$BROKER_PORT" <<'EOF2' || fail "see above"
import json, re, sys
work, port = sys.argv[1], sys.argv[2]
roles = open(f"{work}/roles.txt").read()
brokers = dict(re.findall(r"broker (\d+) (\S+)", roles))
m = re.search(r"coordinator stateful-app (\d+) ", roles)
if not m or m.group(1) not in brokers: sys.exit(f"replay_cluster: FAIL: no coordinator of stateful-app in:\n{roles}")
want = brokers[m.group(1)].rsplit(":", 1)[0]
sent = [l.strip() for l in open(f"{work}/heartbeats.tsv") if l.strip()]
errors = []
if not sent: errors.append("no StreamsGroupHeartbeat on the wire")
elsewhere = sorted(set(d for d in sent if d != want))
if elsewhere: errors.append(f"StreamsGroupHeartbeat sent to {elsewhere}; the coordinator of stateful-app is node {m.group(1)} at {want}")
report = json.load(open(f"{work}/groups.json"))
summary = report["summary"]
if summary["unanswered"]: errors.append(f"{summary['unanswered']} unanswered")
if summary.get("stopped"): errors.append(f"the run stopped early: {summary['stopped']}")
wrong = [r for r in report["regressions"] if r["api"] == "StreamsGroupHeartbeat" and r.get("replayedName") == "NOT_COORDINATOR"]
if wrong: errors.append(f"{len(wrong)} StreamsGroupHeartbeat answered NOT_COORDINATOR, first frame {wrong[0]['frame']}")
notes = "\n".join(report["notes"])
if "coordinator connections" not in notes: errors.append(f"no note on coordinator connections in:\n{notes}")
for e in errors: print("replay_cluster: FAIL:", e, file=sys.stderr)
if errors: sys.exit(1)
print(f"replay_cluster: {len(sent)} StreamsGroupHeartbeat to node {m.group(1)} ({want}), the coordinator Admin names")
EOF2
note "ok"
