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
# Then the whole capture into the same cluster, in fast timing, with no --map: it
# replays clean (exit 0, no regression, nothing unanswered). Every request went
# where its role lives on the target; checked on the wire (--record-out, decoded by
# kwire decode: tshark 4.0 does not decode Produce v13 or Fetch v18) against Kafka's
# Admin (testbed DescribeCluster) asked after the replay: every partition's ISR holds
# all its replicas (nothing kwire sent took a follower's place) and every partition the
# clients wrote to has the high watermark it had when the recording ended
# (tests/live/recorded_ends.py, from the capture's Produce and Fetch answers); each Produce went to the
# leader of its partitions, and so did each Fetch (none names partitions of two
# leaders: a Produce is split by leader, a fetch session becomes one per leader),
# each StreamsGroupHeartbeat of stateful-app to its coordinator; no Fetch carries a
# replica id.
#
# Then the whole capture in recorded timing into a fresh cluster on the same
# addresses, with --target naming node 1: clean too. Then captures of one broker
# (demo, classic-consumer) into that cluster, --target naming node 3: clean.
#
# Then the capture into clusters of other shapes, one broker and five, at once, fast
# timing: clean, and what differs only because the target has another number of
# brokers (broker lists, replica counts, replication factors capped at one broker,
# the controller quorum) is named once per kind in the report's shape section.
#
# Then a differential replay to three one-node clusters alike: clean, with noise.
#
# Then a differential replay: the capture to a fresh baseline cluster and, at once, to a
# candidate cluster with a changed min.insync.replicas: that value is named, nothing else.
#
# Then --map into three fresh clusters at once: naming each recorded broker's target
# broker, on the recorded hosts and on other addresses, and naming only where the
# target's advertised addresses are reached (port-forwards): clean, requests where their
# role lives, and through the forwards only.
#
# Every cluster has the recording's broker setting (captures/MANIFEST.md).
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
    for name in "${!CLUSTERS[@]}"; do drop_cluster "$name" || true; done
    if (( rc != 0 )); then
        [[ -f $WORK/replay.out ]] && { echo "--- kwire replay output" >&2; tail -n 40 "$WORK/replay.out" >&2; }
        [[ -f $WORK/run-cluster.out ]] && { echo "--- run-cluster output" >&2; tail -n 20 "$WORK/run-cluster.out" >&2; }
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT

testbed_build

# A fresh cluster on 127.0.0.41-43, with the recording's brokers' setting
# (captures/MANIFEST.md; the capture's IncrementalAlterConfigs of stateful-app needs
# it). Ready once run-cluster writes its info file (every node answers Metadata
# listing all three brokers unfenced); its own bound is a failure bound.
# start_cluster [SIZE BASE_ADDR NAME]: sets CLUSTER_SH (NAME's run-cluster) and sources
# its info file (default: 3 nodes from 127.0.0.41, "cluster"); launch_cluster starts one
# and wait_cluster waits for it, so that two can start at once.
launch_cluster() {  # SIZE BASE_ADDR NAME [server.properties line]
    rm -f "$WORK/$3.env"
    KWIRE_BROKER_PROPS=group.streams.min.task.offset.interval.ms=1000${4:+$'\n'$4} \
    KWIRE_CLUSTER_BASE_ADDR=$2 KWIRE_CLUSTER_INFO=$WORK/$3.env KWIRE_CLUSTER_LOG_DIR=$WORK/$3 \
        setsid "$REPO/testbed/run-cluster" "$1" >"$WORK/run-$3.out" 2>&1 &
    CLUSTERS[$3]=$!
}
wait_cluster() {  # SIZE NAME
    while [[ ! -s $WORK/$2.env ]] || ! grep -q "^NODE_$1_LOG=" "$WORK/$2.env"; do
        kill -0 "${CLUSTERS[$2]}" 2>/dev/null || fail "run-cluster ($2) exited before the cluster was ready"
        sleep 0.5
    done
}
declare -A CLUSTERS=()
# drop_cluster NAME: stops NAME's run-cluster. Its data goes with it, so its nodes are
# killed rather than shut down in turn (the last one's controlled shutdown has no broker
# left to hand its leaders to, and waits out run-cluster's bound).
drop_cluster() {
    local pid
    for pid in $(sed -n 's/^NODE_[0-9]*_PID=//p' "$WORK/$1.env" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    stop_pid "${CLUSTERS[$1]}" TERM 90
}
start_cluster() {
    launch_cluster 3 127.0.0.41 cluster
    CLUSTER_SH=${CLUSTERS[cluster]}
    wait_cluster 3 cluster
    source "$WORK/cluster.env"
}
start_cluster
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

# The whole capture.
rc=0
"$KWIRE" replay -r "$CAPTURE" --target "$NODE_2_ADDR:$BROKER_PORT" --timing fast -q \
    --report "$WORK/all.json" --record-out "$WORK/all.pcapng" >"$WORK/replay.out" 2>&1 || rc=$?
(( rc <= 1 )) || fail "kwire replay of the whole capture exited $rc"
# Asked until every partition's ISR holds all its replicas (a follower a loaded machine
# slowed may rejoin late), for at most 30 rounds; the check below says what stayed short.
for _ in $(seq 1 30); do
    java -cp "$TESTBED_CP" kwire.testbed.DescribeCluster "$BOOTSTRAP" groups=stateful-app >"$WORK/roles.txt" 2>&1 ||
        { cat "$WORK/roles.txt" >&2; fail "DescribeCluster (Kafka's Admin) failed"; }
    python3 -c 'import re, sys
parts = re.findall(r"leader \S+ \d+ -?\d+ replicas=(\S*) isr=(\S*) ", open(sys.argv[1]).read())
sys.exit(0 if parts and all(sorted(r.split(",")) == sorted(i.split(",")) for r, i in parts) else 1)' "$WORK/roles.txt" && break
    sleep 1
done
"$KWIRE" decode -r "$WORK/all.pcapng" -p "$BROKER_PORT" -T json --api Produce,Fetch,StreamsGroupHeartbeat \
    >"$WORK/all.jsonl" 2>"$WORK/decode.err" || { cat "$WORK/decode.err" >&2; fail "kwire decode of the replay's own traffic failed"; }
# Where each partition ended when recorded (tests/live/recorded_ends.py).
"$KWIRE" decode -r "$CAPTURE" -p "$RECORDED_PORT" -T json --api Produce,Fetch,Metadata,DeleteTopics 2>"$WORK/decode.err" |
    python3 "$HERE/recorded_ends.py" >"$WORK/ends.txt" || { cat "$WORK/decode.err" >&2; fail "the capture's end offsets"; }
python3 - "$WORK" "$rc" <<'EOF3' || fail "see above"
import json, re, sys
work, rc = sys.argv[1], int(sys.argv[2])
admin = open(f"{work}/roles.txt").read()
addr = {n: a.rsplit(":", 1)[0] for n, a in re.findall(r"broker (\d+) (\S+)", admin)}
leader = {}   # (topic name or id, partition) -> address of its leader
for name, p, node, tid in re.findall(r"leader (\S+) (\d+) (-?\d+) .* id=(\S+)", admin):
    if node in addr: leader[(name, int(p))] = leader[(tid, int(p))] = addr[node]
m = re.search(r"coordinator stateful-app (\d+) ", admin)
coordinator = addr.get(m.group(1)) if m else None
report = json.load(open(f"{work}/all.json"))
summary, notes = report["summary"], "\n".join(report["notes"])
errors = []
def need(ok, what):
    if not ok: errors.append(what)
need(rc == 0, f"kwire replay exited {rc}")
need(summary["regressions"] == 0, f"{summary['regressions']} regressions, first: {report['regressions'][:1]}")
need(summary["unanswered"] == 0, f"{summary['unanswered']} unanswered")
need(not summary.get("stopped"), f"the run stopped early: {summary.get('stopped')}")
need(coordinator, f"no coordinator of stateful-app in:\n{admin}")
# The target side: no replica was pushed out of sync (a client posing as a follower,
# or one whose fetches starve a real follower, shows as an ISR short of its replicas).
parts = re.findall(r"leader (\S+) (\d+) -?\d+ replicas=(\S*) isr=(\S*) ", admin)
need(parts, f"no partitions in:\n{admin}")
for name, p, replicas, isr in parts:
    need(sorted(isr.split(",")) == sorted(replicas.split(",")), f"{name}-{p}: isr {isr}, replicas {replicas} (Kafka's Admin)")
# ... and every partition the clients wrote to ends where it ended when recorded: the
# same records, none lost, none twice, and no high watermark a client moved as a follower.
hw = {(name, int(p)): int(h) for name, p, h in re.findall(r"leader (\S+) (\d+) .* hw=(-?\d+)", admin)}
ends = [(t, int(p), int(e)) for t, p, e in (l.split() for l in open(f"{work}/ends.txt"))]
compared = [(t, p, e) for t, p, e in ends if not t.startswith(("__", "?"))]
need(len(compared) >= 12, f"too few partitions with a recorded end: {ends}")
for t, p, e in compared:
    need(hw.get((t, p)) == e, f"{t}-{p}: high watermark {hw.get((t, p))} (Kafka's Admin), {e} when recorded")
# (How many requests went to another node than their session's depends on where
# the fresh cluster put the leaders: in some runs they are the recording's.)
routed = re.search(r"(\d+) requests? went to another target node than their session's", notes)
checked, heartbeats = {"Produce": 0, "Fetch": 0}, 0
for line in open(f"{work}/all.jsonl"):
    o = json.loads(line)
    if o.get("direction") != "request": continue
    body, dst, api = o["body"], o["dst"].rsplit(":", 1)[0], o["apiName"]
    if api == "StreamsGroupHeartbeat":
        heartbeats += 1
        need(dst == coordinator, f"StreamsGroupHeartbeat to {dst}; Admin names the coordinator of stateful-app at {coordinator} (frame {o['frame']})")
        continue
    if api == "Fetch":
        replica = body.get("replicaId", body.get("replicaState", {}).get("replicaId", -1))
        need(replica < 0, f"a Fetch with replica id {replica} reached the target (frame {o['frame']})")
        parts = [(t.get("topic") or t.get("topicId"), p["partition"]) for t in body.get("topics", []) for p in t["partitions"]]
    else:
        parts = [(t.get("name") or t.get("topicId"), p["index"]) for t in body.get("topicData", []) for p in t["partitionData"]]
    want = {leader.get(k) for k in parts}
    if not parts or None in want: continue
    need(len(want) == 1, f"a {api} of {parts} spans the leaders {want} (frame {o['frame']}): it was to be split")
    if len(want) != 1: continue
    checked[api] += 1
    need(dst in want, f"{api} of {parts} went to {dst}; Admin names the leader at {want.pop()} (frame {o['frame']})")
need(checked["Produce"] >= 50 and checked["Fetch"] >= 10, f"too few requests checked against Admin's leaders: {checked}")
need(heartbeats > 0, "no StreamsGroupHeartbeat on the wire")
for e in errors[:20]: print("replay_cluster: FAIL:", e, file=sys.stderr)
if errors: sys.exit(1)
print(f"replay_cluster: {len(compared)} partitions end at their recorded high watermarks, every ISR whole")
print(f"replay_cluster: fast timing clean; {checked['Produce']} Produce and {checked['Fetch']} Fetch went to the leader "
      f"and {heartbeats} StreamsGroupHeartbeat to the coordinator Admin names; "
      f"{routed.group(1) if routed else 0} requests to another node than their session's")
EOF3

# Recorded timing, into a fresh cluster on the same addresses.
drop_cluster cluster
start_cluster
rc=0
"$KWIRE" replay -r "$CAPTURE" --target "$NODE_1_ADDR:$BROKER_PORT" -q --report "$WORK/recorded.json" \
    >"$WORK/replay.out" 2>&1 || rc=$?
python3 - "$WORK/recorded.json" "$rc" <<'EOF4' || fail "see above"
import json, sys
report, rc = json.load(open(sys.argv[1])), int(sys.argv[2])
s = report["summary"]
errors = [e for ok, e in [(rc == 0, f"kwire replay exited {rc}"), (s["regressions"] == 0, f"{s['regressions']} regressions, first: {report['regressions'][:1]}"),
                          (s["unanswered"] == 0, f"{s['unanswered']} unanswered"), (not s.get("stopped"), f"stopped: {s.get('stopped')}")] if not ok]
for e in errors: print("replay_cluster: FAIL (recorded timing):", e, file=sys.stderr)
if errors: sys.exit(1)
print(f"replay_cluster: recorded timing clean: {s['sent']} requests, {s['same']} the same, {s['ignoredOnly']} differing only in ignored fields")
EOF4

# Captures of one broker into the same cluster (their topics and groups are not the
# cluster capture's): their requests go where the roles live (how many go to
# another node than --target depends on where the cluster put them), clean.
for cap in demo classic-consumer; do
    rc=0
    "$KWIRE" replay -r "$REPO/captures/$cap.pcapng" --target "$NODE_3_ADDR:$BROKER_PORT" --timing fast --setup -q \
        --report "$WORK/$cap.json" >"$WORK/replay.out" 2>&1 || rc=$?
    python3 - "$WORK/$cap.json" "$rc" "$cap" <<'EOF5' || fail "see above"
import json, re, sys
report, rc, cap = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3]
s, notes = report["summary"], "\n".join(report["notes"])
errors = [e for ok, e in [(rc == 0, f"kwire replay exited {rc}"), (s["regressions"] == 0, f"{s['regressions']} regressions, first: {report['regressions'][:1]}"),
                          (s["unanswered"] == 0, f"{s['unanswered']} unanswered")] if not ok]
for e in errors: print(f"replay_cluster: FAIL ({cap}.pcapng, one broker, into the cluster):", e, file=sys.stderr)
if errors: sys.exit(1)
routed = re.search(r"(\d+) requests? went to another target node", notes)
print(f"replay_cluster: {cap}.pcapng (one broker) into the cluster clean: {s['sent']} requests, "
      f"{routed.group(1) if routed else 0} of them to another node than --target")
EOF5
done
# Other shapes: the same capture into one broker and into five (run-cluster 1 and 5,
# started together, with the cluster's settings for their size), fast timing, at once.
# Clean both: exit 0, no regression, nothing unanswered; what follows from the shape
# alone is reported once per kind in its own section, with these among them (one
# broker: replication factors of 3 sent as 1, and 3 replicas recorded where the target
# holds 1; five: the broker lists, 3 brokers recorded and 5 now).
drop_cluster cluster
unset "CLUSTERS[cluster]"
CLUSTER_SH=
mkdir -p "$WORK/one" "$WORK/five"
launch_cluster 1 127.0.0.51 one
launch_cluster 5 127.0.0.61 five
wait_cluster 1 one
wait_cluster 5 five
replays=()
for shape in one five; do
    (
        source "$WORK/$shape.env"
        rc=0
        "$KWIRE" replay -r "$CAPTURE" --target "$NODE_1_ADDR:$BROKER_PORT" --timing fast -q --report "$WORK/$shape.json" \
            >"$WORK/replay-$shape.out" 2>&1 || rc=$?
        echo "$rc" >"$WORK/$shape.rc"
    ) &
    replays+=($!)
done
wait "${replays[@]}"
for shape in one five; do
    python3 - "$WORK/$shape.json" "$(cat "$WORK/$shape.rc")" "$shape" <<'EOF6' || { tail -n 40 "$WORK/replay-$shape.out" >&2; fail "see above"; }
import json, sys
report, rc, shape = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3]
s, found = report["summary"], report["shape"]
size = {"one": 1, "five": 5}[shape]
kinds = [(d["what"], d["why"]) for d in found]
want = {"one": ["CreateTopics request Topics.ReplicationFactor 3 sent as 1", "Metadata body.topics.partitions.replicaNodes",
                "Metadata body.brokers", "DescribeConfigs body.results.configs.value"],
        "five": ["Metadata body.brokers", "DescribeCluster body.brokers"]}[shape]
errors = [e for ok, e in [(rc == 0, f"kwire replay exited {rc}"),
                          (s["regressions"] == 0, f"{s['regressions']} regressions, first: {report['regressions'][:3]}"),
                          (s["unanswered"] == 0, f"{s['unanswered']} unanswered"),
                          (report["brokers"] == {"capture": 3, "target": size}, f"brokers {report['brokers']}"),
                          (len(kinds) == len(set(kinds)), f"a shape difference named twice: {kinds}")] if not ok]
errors += [f"no shape difference {w!r} in {[d['what'] for d in found]}" for w in want if not any(d["what"] == w for d in found)]
if shape == "five":
    b = next((d for d in found if d["what"] == "Metadata body.brokers"), None)
    if b and (b["recorded"], b["replayed"]) != ('"3 brokers"', '"5 brokers"'):
        errors.append(f"Metadata brokers: {b}")
for e in errors: print(f"replay_cluster: FAIL (into {size} broker{'s' if size > 1 else ''}):", e, file=sys.stderr)
if errors: sys.exit(1)
print(f"replay_cluster: into {size} broker{'s' if size > 1 else ''} clean: {s['sent']} requests; shape differences: "
      + "; ".join(f"{d['what']} x{d['count']}" for d in found))
EOF6
done
for shape in one five; do drop_cluster "$shape"; unset "CLUSTERS[$shape]"; done

# A differential replay of the capture to three one-node clusters alike (baseline,
# candidate, secondary), fast: exit 0, no candidate regression, a noise table that is
# not empty, and each target's own replay clean against the capture (its shape
# differences named, as above).
for name in base1 cand1 sec1; do mkdir -p "$WORK/$name"; done
launch_cluster 1 127.0.0.51 base1
launch_cluster 1 127.0.0.53 cand1
launch_cluster 1 127.0.0.55 sec1
for name in base1 cand1 sec1; do wait_cluster 1 "$name"; done
addr() { (source "$WORK/$1.env"; echo "$NODE_1_ADDR:$BROKER_PORT"); }
rc=0
"$KWIRE" replay -r "$CAPTURE" --target "$(addr base1)" --candidate "$(addr cand1)" --secondary "$(addr sec1)" \
    --timing fast -q --report "$WORK/alike.json" >"$WORK/replay.out" 2>&1 || rc=$?
python3 - "$WORK/alike.json" "$rc" <<'EOF8' || { cat "$WORK/replay.out" >&2; fail "see above"; }
import json, sys
r, rc = json.load(open(sys.argv[1])), int(sys.argv[2])
noise = [p for p in r["paths"] if p["noise"] > 0]
errors = [e for ok, e in [(rc == 0, f"exit status {rc}"), (r["summary"]["regressions"] == 0, f"{r['summary']['regressions']} candidate regressions"),
                          (r["summary"]["compared"] > 500, f"{r['summary']['compared']} exchanges compared"),
                          (noise, "the noise table is empty")] if not ok]
errors += [f"the {t['role']}'s own replay: {t['drift']}" for t in r["targets"] if t["drift"]["regressions"] or t["drift"]["unanswered"]]
for e in errors: print("replay_cluster: FAIL (differential, three alike):", e, file=sys.stderr)
if errors: sys.exit(1)
print(f"replay_cluster: differential to three brokers alike clean: {r['summary']['compared']} exchanges compared, "
      f"{len(noise)} noisy paths, e.g. " + "; ".join(f"{p['api']} v{p['version']} {p['path']} x{p['noise']}" for p in noise[:3]))
EOF8
for name in base1 cand1 sec1; do drop_cluster "$name"; unset "CLUSTERS[$name]"; done

# A changed cluster as the candidate of a differential replay: three nodes whose brokers
# set min.insync.replicas=4 where the recording's had 1 (above every replication factor;
# Kafka 4.4 takes the smaller of the two (KIP-966), so Produce with acks=all still
# succeeds: the change shows in the configs the brokers hand out), against a fresh
# baseline cluster configured as the recording's (127.0.0.71-73), both started together.
# Fast timing, bounded: exit 1, and the first candidate divergence of the session that
# creates the topics is CreateTopics' config value "1" -> "4", that of the Admin
# describing broker configs DescribeConfigs' "1" -> "4", in text and JSON; no other path
# regresses; both clusters' own replays are clean against the capture but for that value.
launch_cluster 3 127.0.0.41 changed min.insync.replicas=4
launch_cluster 3 127.0.0.71 base
CLUSTER_SH=${CLUSTERS[changed]}
wait_cluster 3 changed
wait_cluster 3 base
CANDIDATE=$(source "$WORK/changed.env"; echo "$NODE_2_ADDR:$BROKER_PORT")
source "$WORK/base.env"
t0=$SECONDS
rc=0
"$KWIRE" replay -r "$CAPTURE" --target "$NODE_2_ADDR:$BROKER_PORT" --candidate "$CANDIDATE" --timing fast -q \
    --report "$WORK/changed.json" >"$WORK/replay.out" 2>&1 || rc=$?
took=$((SECONDS - t0))
span=$(python3 "$HERE/capture_span.py" "$CAPTURE")
(( rc == 1 )) || fail "changed cluster: exit status $rc, expected 1"
(( took < 3 * span + 60 )) || fail "changed cluster: took $took s, more than 3 x $span + 60 s"
python3 - "$WORK/changed.json" <<'EOF7' || fail "see above"
import json, re, sys
r = json.load(open(sys.argv[1]))
firsts = {s["session"]: s["firstDivergence"] for s in r["sessions"]}
norm = lambda p: re.sub(r"\[\d+\]", "[*]", p)
kinds = {(d["api"], norm(d["path"]), d["baseline"], d["candidate"]) for d in firsts.values()}
want = {("CreateTopics", "body.topics[*].configs[*].value", '"1"', '"4"'),
        ("DescribeConfigs", "body.results[*].configs[*].value", '"1"', '"4"')}
regressed = {(p["api"], p["path"]) for p in r["paths"] if p["verdict"] == "regression"}
allowed = {("CreateTopics", "body.topics.configs.value"), ("DescribeConfigs", "body.results.configs.value"),
           ("DescribeConfigs", "body.results.configs.synonyms.value")}
drift = {t["role"]: t["drift"] for t in r["targets"]}
if kinds != want or not regressed <= allowed or drift["baseline"]["regressions"] or drift["candidate"]["unanswered"]:
    for sid, d in sorted(firsts.items()): print(f"  session {sid}: frame {d['frame']} {d['api']} {d['path']}: {d['baseline']} -> {d['candidate']}", file=sys.stderr)
    print(f"replay_cluster: FAIL (changed cluster): first divergences {sorted(kinds)}, regressed paths {sorted(regressed)}, drift {drift}", file=sys.stderr)
    sys.exit(1)
print(f"replay_cluster: changed cluster named: {len(firsts)} sessions start diverging at min.insync.replicas 1 -> 4")
EOF7
grep -Eq '^        body\.topics\[[0-9]+\]\.configs\[[0-9]+\]\.value: baseline "1", candidate "4"  \(baseline as the capture\)$' "$WORK/replay.out" \
    || fail "changed cluster: the text report does not show the config as a first divergence"
note "changed cluster: exit 1 in $took s (the capture lasts $span s)"
for name in changed base; do drop_cluster "$name"; unset "CLUSTERS[$name]"; done
CLUSTER_SH=

# --map, three ways, into three fresh clusters started together, fast timing, at once:
# - hosts: a cluster on the recorded hosts (127.0.0.11-13, another port), --map naming
#   each recorded broker's target broker;
# - other: on other addresses (127.0.0.41-43), the same;
# - forward: on 127.0.0.81-83, reached only through port-forwards on 127.0.0.1
#   (tests/live/tcp_forward.py), --map naming where each address the target
#   advertises is reached, --target a forward.
# --map says where a broker is, never where a request goes: each replay is clean (exit
# 0, no regression, nothing unanswered), and requests went where their role lives
# (the notes count those that left their session's node). The forward replay's own
# traffic (--record-out, read by tshark) connected to the forwards only.
for name in hosts other forward; do mkdir -p "$WORK/$name"; done
launch_cluster 3 127.0.0.11 hosts
launch_cluster 3 127.0.0.41 other
launch_cluster 3 127.0.0.81 forward
for name in hosts other forward; do wait_cluster 3 "$name"; done
map_args() {  # NAME: --map of each recorded broker to the node of its id
    local k
    (source "$WORK/$1.env"; for k in 1 2 3; do a="NODE_${k}_ADDR"; printf -- '--map\n127.0.0.1%s:%s=%s:%s\n' "$k" "$RECORDED_PORT" "${!a}" "$BROKER_PORT"; done)
}
advertised=()
for k in 1 2 3; do advertised+=("$(source "$WORK/forward.env"; a="NODE_${k}_ADDR"; echo "${!a}:$BROKER_PORT")"); done
python3 "$HERE/tcp_forward.py" "$WORK/forwards" "${advertised[@]}" >"$WORK/forward.log" 2>&1 &
FORWARD=$!
t0=$SECONDS
until [[ -s $WORK/forwards ]]; do
    kill -0 "$FORWARD" 2>/dev/null || { cat "$WORK/forward.log" >&2; fail "tcp_forward.py exited"; }
    (( SECONDS - t0 < 30 )) || fail "tcp_forward.py did not listen within 30 s"
    sleep 0.2
done
forward_maps=()
while read -r adv local; do forward_maps+=(--map "$adv=$local"); done <"$WORK/forwards"
forward_target=$(head -1 "$WORK/forwards" | cut -d' ' -f2)
replays=()
for name in hosts other forward; do
    (
        if [[ $name == forward ]]; then
            args=(--target "$forward_target" "${forward_maps[@]}" --record-out "$WORK/forward.pcapng")
        else
            mapfile -t args < <(map_args "$name")
            args+=(--target "$(source "$WORK/$name.env"; echo "$NODE_1_ADDR:$BROKER_PORT")")
        fi
        rc=0
        "$KWIRE" replay -r "$CAPTURE" "${args[@]}" --timing fast -q --report "$WORK/map-$name.json" \
            >"$WORK/replay-map-$name.out" 2>&1 || rc=$?
        echo "$rc" >"$WORK/map-$name.rc"
    ) &
    replays+=($!)
done
wait "${replays[@]}"
kill "$FORWARD" 2>/dev/null || true
for name in hosts other forward; do
    python3 - "$WORK/map-$name.json" "$(cat "$WORK/map-$name.rc")" "$name" <<'EOF9' || { tail -n 40 "$WORK/replay-map-$name.out" >&2; fail "see above"; }
import json, re, sys
r, rc, name = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3]
s, notes = r["summary"], "\n".join(r["notes"])
routed = re.search(r"(\d+) requests? went to another target node", notes)
errors = [e for ok, e in [(rc == 0, f"kwire replay exited {rc}"),
                          (s["regressions"] == 0, f"{s['regressions']} regressions, first: {r['regressions'][:3]}"),
                          (s["unanswered"] == 0, f"{s['unanswered']} unanswered"),
                          (s["sent"] > 500, f"{s['sent']} requests sent"),
                          (r["brokers"] == {"capture": 3, "target": 3}, f"brokers {r['brokers']}")] if not ok]
for e in errors: print(f"replay_cluster: FAIL (--map, {name}):", e, file=sys.stderr)
if errors: sys.exit(1)
print(f"replay_cluster: --map ({name}) clean: {s['sent']} requests, {routed.group(1) if routed else 0} of them to "
      "another node than their session's, where their role lives")
EOF9
done
dests=$(tshark -r "$WORK/forward.pcapng" -Y "tcp.flags.syn == 1 && tcp.flags.ack == 0" -T fields -e ip.dst -e tcp.dstport | sort -u)
want=$(cut -d' ' -f2 "$WORK/forwards" | tr ':' '\t' | sort -u)
[[ $dests == "$want" ]] || fail "--map (forward): the replay connected to $(echo $dests), not only to the forwards $(echo $want)"
note "--map (forward): every connection went through a forward"
note "ok"
