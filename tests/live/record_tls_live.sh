#!/usr/bin/env bash
# `kwire record -i lo --auto --tls-keylog` on a live Kafka session over TLS
# (ctest record_tls_live, label live): a Kafka 4.4.0 broker of the testbed with
# an SSL listener, and a Java client (Admin, producer, KIP-848 consumer) whose
# key log the extract-tls-secrets agent writes while kwire follows it. tcpdump
# records the same traffic beside it. Checks:
#   - kwire's file decodes with no option (its secrets blocks) to every message
#     that tcpdump's capture decodes to with the key log, each once;
#   - tshark finds the same Kafka PDUs in kwire's file with no key log (the
#     secrets blocks) as in tcpdump's with it;
#   - the final report counts the TLS connections and leaves none out.
#
#   tests/live/record_tls_live.sh KWIRE_BINARY
set -euo pipefail
KWIRE=$(realpath "${1:?usage: record_tls_live.sh KWIRE_BINARY}")
REPO=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "record_tls_live: FAIL: $*" >&2; exit 1; }
for tool in tcpdump tshark python3 java mvn; do command -v "$tool" >/dev/null || fail "'$tool' not found (tools/install-deps test)"; done
(( $(id -u) == 0 )) || fail "must run as root (capturing on lo)"

source "$REPO/testbed/lib.sh"
testbed_build
testbed_tls_agent
scenario_init record-tls
KWIRE_BROKER_SSL=1 start_broker

printf '%s\n' security.protocol=SSL ssl.truststore.type=PKCS12 "ssl.truststore.location=$TLS_TRUSTSTORE" \
    "ssl.truststore.password=$TLS_STORE_PASSWORD" > "$WORK/ssl.properties"
KEYS=$WORK/app.keys
echo "== tcpdump and kwire record --auto --tls-keylog on 127.0.0.1:$SSL_PORT"
# Made before the loop below reads them: the background jobs' redirects may not have run yet.
: >"$WORK/tcpdump.err"
: >"$WORK/record.err"
tcpdump -i lo -U -w "$WORK/ref.pcap" "tcp port $SSL_PORT" >"$WORK/tcpdump.out" 2>"$WORK/tcpdump.err" &
TCPDUMP_PID=$!
# scenario_cleanup stops it if a step fails (APP_PIDS: scenario_init's associative array).
# shellcheck disable=SC2034
APP_PIDS["tcpdump"]=$TCPDUMP_PID
"$KWIRE" record -i lo --auto -f "tcp port $SSL_PORT" --tls-keylog "$KEYS" -q -w "$WORK/rec.pcapng" \
    >"$WORK/record.out" 2>"$WORK/record.err" &
RECORDER_PID=$!
# A readiness bound, not a speed check (240 x 0.25 s).
for i in $(seq 1 240); do
    grep -q '^kwire record: capturing on ' "$WORK/record.err" && grep -q 'listening on' "$WORK/tcpdump.err" && break
    kill -0 "$RECORDER_PID" 2>/dev/null && kill -0 "$TCPDUMP_PID" 2>/dev/null || i=240
    (( i == 240 )) && fail "kwire record ('kwire record: capturing on') and tcpdump ('listening on') did not both start within 60 s, or one exited: $(cat "$WORK/record.err" "$WORK/tcpdump.err")"
    sleep 0.25
done
sleep 0.5
echo "== a client over TLS: Admin, a producer of 5 records, a consumer group (agent key log $KEYS)"
APP_JAVA_OPTS="-javaagent:$TLS_AGENT_JAR=$KEYS -Dkwire.client.config=$WORK/ssl.properties" \
    run_app_bg client kwire.testbed.ClientSession "127.0.0.1:$SSL_PORT" client-id=kwire-record-tls \
    topic=record-tls create-topic=true produce=5 group=record-tls-group
wait_app client
sleep 1
kill -INT "$RECORDER_PID"; wait "$RECORDER_PID" || fail "kwire record exited $?: $(cat "$WORK/record.err")"
RECORDER_PID=
# tcpdump is handed the packets by the kernel in blocks, up to 1 s (libpcap's timeout)
# after they were captured, and at SIGINT it stops without reading what it has not been
# handed: the session's last packets could be missing from its file. So it is stopped
# once its file holds as many packets as kwire record captured (the same filter on lo;
# kwire reads what the kernel still holds before it exits), or after 60 s (a failure
# bound: the comparison below then says what is missing).
captured=$(sed -n 's/^kwire record: received=[0-9]* captured=\([0-9]*\) .*/\1/p' "$WORK/record.err" | tail -n 1)
[[ -n $captured ]] || fail "no final 'kwire record: received=... captured=...' line: $(cat "$WORK/record.err")"
# pcap_packets FILE: the whole packet records in a pcap file still being written.
pcap_packets() {
    python3 - "$1" <<'PY'
import struct, sys
try:
    data = open(sys.argv[1], "rb").read()
except FileNotFoundError:
    data = b""
n, pos = 0, 24
e = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
while len(data) >= 24 and pos + 16 <= len(data):
    incl, = struct.unpack_from(e + "I", data, pos + 8)
    if pos + 16 + incl > len(data):
        break
    n, pos = n + 1, pos + 16 + incl
print(n)
PY
}
t0=$SECONDS
while true; do
    in_ref=$(pcap_packets "$WORK/ref.pcap" || true)
    (( ${in_ref:-0} >= captured )) && break
    if (( SECONDS - t0 >= 60 )); then
        echo "record_tls_live: tcpdump's file holds ${in_ref:-0} packets 60 s after the session, kwire record captured $captured"
        break
    fi
    sleep 0.25
done
kill -INT "$TCPDUMP_PID"; wait "$TCPDUMP_PID" || true
unset 'APP_PIDS[tcpdump]'
cat "$WORK/record.err"
[[ -s $KEYS ]] || fail "the agent wrote no key log"

python3 - "$KWIRE" "$WORK" "$SSL_PORT" <<'PY'
import collections, json, subprocess, sys
kwire, work, port = sys.argv[1], sys.argv[2], sys.argv[3]
def fail(msg):
    sys.exit("record_tls_live: FAIL: " + msg)
def messages(*args):
    p = subprocess.run([kwire, "decode", "-T", "json", "--stats", *args], capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"kwire decode {args} exited {p.returncode}: {p.stderr}")
    msgs, stats = collections.Counter(), None
    for line in p.stdout.splitlines():
        o = json.loads(line)
        if "stats" in o:
            stats = o["stats"]
        elif "notKafka" not in o:
            client = o["src"] if o["direction"] == "request" else o["dst"]
            msgs[(client, o["direction"], o["apiKey"], o["apiVersion"], o["correlationId"])] += 1
    return msgs, stats
rec, rstats = messages("-r", f"{work}/rec.pcapng")
ref, fstats = messages("-r", f"{work}/ref.pcap", "--tls-keylog", f"{work}/app.keys")
if sum(ref.values()) < 20 or fstats["tls_undecrypted"] or fstats["unmatched"]:
    fail(f"tcpdump's capture decodes to {sum(ref.values())} messages with the key log: {fstats}")
if rec != ref:
    fail(f"kwire's file lacks {sorted((ref - rec).elements())[:5]} and has extra {sorted((rec - ref).elements())[:5]}")
apis = {k[2] for k in ref}
if not {0, 1, 3, 18, 68} <= apis:   # Produce, Fetch, Metadata, ApiVersions, ConsumerGroupHeartbeat
    fail(f"the session lacks expected apis: {sorted(apis)}")
def tshark_pdus(path, *extra):
    out = subprocess.run(["tshark", "-n", "-r", path, *extra, "-d", f"tls.port=={port},kafka", "-Y", "kafka",
                          "-T", "fields", "-e", "kafka.correlation_id", "-E", "occurrence=a"],
                         capture_output=True, text=True).stdout
    return sum(len(l.split(",")) for l in out.splitlines() if l)
with_keys = tshark_pdus(f"{work}/ref.pcap", "-o", f"tls.keylog_file:{work}/app.keys")
embedded = tshark_pdus(f"{work}/rec.pcapng")
if with_keys != sum(ref.values()) or embedded != with_keys:
    fail(f"tshark: {with_keys} PDUs in tcpdump's capture with the key log, {embedded} in kwire's with its secrets blocks, "
         f"kwire {sum(ref.values())}")
hellos = len(subprocess.run(["tshark", "-n", "-r", f"{work}/ref.pcap", "-Y", "tls.handshake.type == 1", "-T", "fields",
                             "-e", "frame.number"], capture_output=True, text=True).stdout.split())
final = [l for l in open(f"{work}/record.err") if l.startswith("kwire record: received=")][-1]
if f"tls_connections={hellos} tls_not_kept=0" not in final or rstats["tls_connections"] != hellos:
    fail(f"{hellos} TLS connections in tcpdump's capture; kwire record says: {final.strip()}")
print(f"record_tls_live: {sum(rec.values())} messages in {hellos} TLS connections, each once in kwire's file, "
      f"decrypted from its own secrets blocks; tshark agrees ({embedded} PDUs)")
PY
