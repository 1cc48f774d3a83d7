# Sourced by the testbed scripts. Builds the Maven project when needed and sets
# TESTBED_CP (dependency classpath + the testbed's own classes).
TESTBED_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

testbed_build() {
    local stamp="$TESTBED_DIR/target/classpath.txt"
    if [[ ! -s $stamp || -n $(find "$TESTBED_DIR/pom.xml" "$TESTBED_DIR/src" -newer "$stamp" -print -quit) ]]; then
        echo "testbed: building ($TESTBED_DIR/pom.xml)" >&2
        mvn -q -f "$TESTBED_DIR/pom.xml" package >&2
        touch "$stamp"
    fi
    TESTBED_CP="$TESTBED_DIR/target/classes:$(cat "$stamp")"
}

# The older-client project (Kafka Streams/clients 4.3.1): sets OLD_CLIENT_CP.
testbed_build_old() {
    local dir=$TESTBED_DIR/old-client
    local stamp="$dir/target/classpath.txt"
    if [[ ! -s $stamp || -n $(find "$dir/pom.xml" "$dir/src" -newer "$stamp" -print -quit) ]]; then
        echo "testbed: building ($dir/pom.xml)" >&2
        mvn -q -f "$dir/pom.xml" package >&2
        touch "$stamp"
    fi
    OLD_CLIENT_CP="$dir/target/classes:$(cat "$stamp")"
}

# The Java agent that writes a JVM's TLS secrets to an NSS key log file
# (name.neykov:extract-tls-secrets:4.0.0 from Maven Central, copied into
# testbed/target/agent/): sets TLS_AGENT_JAR. Use: java -javaagent:$TLS_AGENT_JAR=KEYLOGFILE.
TLS_AGENT_VERSION=4.0.0
testbed_tls_agent() {
    TLS_AGENT_JAR=$TESTBED_DIR/target/agent/extract-tls-secrets-$TLS_AGENT_VERSION.jar
    if [[ ! -s $TLS_AGENT_JAR ]]; then
        echo "testbed: fetching name.neykov:extract-tls-secrets:$TLS_AGENT_VERSION" >&2
        mvn -q -f "$TESTBED_DIR/pom.xml" org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy \
            -Dartifact=name.neykov:extract-tls-secrets:$TLS_AGENT_VERSION \
            -DoutputDirectory="$TESTBED_DIR/target/agent" >&2
        [[ -s $TLS_AGENT_JAR ]] || { echo "testbed: $TLS_AGENT_JAR missing after the copy" >&2; return 1; }
    fi
}

# Quiet JVM logging: slf4j-simple at WARN, to stderr.
TESTBED_LOG_OPTS=(-Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dorg.slf4j.simpleLogger.showDateTime=true)

# Prints N free TCP ports on 127.0.0.1, one per line.
free_ports() {
    python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
for s in socks:
    print(s.getsockname()[1])
PY
}

# Prints COUNT distinct TCP ports, one per line, each free on every given address at
# once (for a cluster whose nodes listen on the same port, each on its own address).
# Without SO_REUSEADDR a bind also fails when the port is taken on the wildcard address.
free_ports_on() {  # count addr...
    python3 - "$@" <<'PY'
import socket, sys
count, addrs = int(sys.argv[1]), sys.argv[2:]
held, ports = [], []
for _ in range(200 * count):
    if len(ports) == count:
        break
    first = socket.socket()
    first.bind((addrs[0], 0))
    port = first.getsockname()[1]
    socks = [first]
    try:
        for a in addrs[1:]:
            s = socket.socket()
            socks.append(s)
            s.bind((a, port))
    except OSError:
        for s in socks:
            s.close()
        continue
    held += socks   # kept bound until all are found, so no port is picked twice
    ports.append(port)
if len(ports) < count:
    sys.exit("free_ports_on: found only %d of %d ports free on %s" % (len(ports), count, " ".join(addrs)))
for p in ports:
    print(p)
PY
}

# Makes a throw-away CA (valid 30 days) and a server certificate signed by it, in DIR:
# ca.key and ca.pem (CN kwire-test-ca), broker.key and broker.pem (CN as given, RSA
# 2048, serverAuth, subjectAltName SAN, e.g. "IP:127.0.0.1,DNS:localhost"), the PKCS12
# keystore broker.keystore.p12 (alias broker, with the CA in its chain) and the PKCS12
# truststore truststore.p12 (the CA, alias kwire-test-ca), both with PASSWORD.
# The tools' output goes to DIR/tls.log, printed on failure.
testbed_make_tls() {  # dir password cn san
    local dir=$1 pass=$2 cn=$3 san=$4
    mkdir -p "$dir"
    {
        openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 30 -subj "/CN=kwire-test-ca" \
            -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
            -keyout "$dir/ca.key" -out "$dir/ca.pem"
        openssl req -new -newkey rsa:2048 -nodes -subj "/CN=$cn" \
            -keyout "$dir/broker.key" -out "$dir/broker.csr"
        printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
            "extendedKeyUsage=serverAuth" "subjectAltName=$san" > "$dir/broker.ext"
        openssl x509 -req -sha256 -days 30 -in "$dir/broker.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
            -set_serial "0x$(openssl rand -hex 8)" -extfile "$dir/broker.ext" -out "$dir/broker.pem"
        openssl pkcs12 -export -name broker -in "$dir/broker.pem" -inkey "$dir/broker.key" \
            -certfile "$dir/ca.pem" -passout "pass:$pass" -out "$dir/broker.keystore.p12"
        keytool -J-Xmx64m -importcert -noprompt -alias kwire-test-ca -file "$dir/ca.pem" \
            -keystore "$dir/truststore.p12" -storetype PKCS12 -storepass "$pass"
    } >"$dir/tls.log" 2>&1 || { cat "$dir/tls.log" >&2; echo "testbed: making the TLS certificates in $dir failed" >&2; return 1; }
}

# Asks the broker at HOST:PORT (a PLAINTEXT listener) for cluster metadata (Metadata v4,
# no topics) and prints "cluster_id ID", then "broker NODE_ID HOST:PORT" for every broker
# it lists. A KRaft broker lists only the brokers that are registered and unfenced, so
# this tells whether a node serves requests and which brokers it sees alive. No answer
# within SECONDS (default 5) or a closed connection: status 1, the reason on stderr.
kafka_alive_brokers() {  # host port [seconds]
    python3 - "$1" "$2" "${3:-5}" <<'PY'
import socket, struct, sys
host, port, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
client_id = b"kwire-testbed-probe"
# Request header v1 (api_key 3 = Metadata, version 4, correlation id, client id), then the
# v4 body: an empty topics array (no topics; null would mean all) and
# allow_auto_topic_creation=false.
req = struct.pack(">hhih", 3, 4, 1, len(client_id)) + client_id + struct.pack(">ib", 0, 0)
try:
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(req)) + req)
        def read(n):
            buf = b""
            while len(buf) < n:
                chunk = s.recv(n - len(buf))
                if not chunk:
                    raise EOFError("connection closed by the broker")
                buf += chunk
            return buf
        resp = read(struct.unpack(">i", read(4))[0])
except (OSError, EOFError) as e:
    sys.exit("%s:%d: %s" % (host, port, e))
pos = 0
def take(fmt):
    global pos
    vals = struct.unpack_from(fmt, resp, pos)
    pos += struct.calcsize(fmt)
    return vals[0] if len(vals) == 1 else vals
def string():
    n = take(">h")
    if n < 0:
        return None
    global pos
    pos += n
    return resp[pos - n:pos].decode()
# Response header v0 (correlation id), then v4: throttle_time_ms, brokers, cluster_id, ...
take(">i")
take(">i")
brokers = []
for _ in range(take(">i")):
    node_id = take(">i")
    bhost = string()
    bport = take(">i")
    string()  # rack
    brokers.append((node_id, bhost, bport))
print("cluster_id %s" % string())
for node_id, bhost, bport in sorted(brokers):
    print("broker %d %s:%d" % (node_id, bhost, bport))
PY
}

# ---------------------------------------------------------------------------
# Scenario machinery, used by testbed/scenario. A scenario script calls
# scenario_init, start_broker, start_capture, then run_app / run_app_bg / wait_app,
# and finish_capture. The EXIT trap (scenario_cleanup) stops whatever is still
# running -- apps, the recorder, the broker -- also when a step fails.
#
# The recorder is `kwire record --auto` of the kwire in $KWIRE (default:
# build/kwire; $KWIRE_BIN is still read as an older name for it). --auto keeps
# every connection kwire recognises as Kafka; this includes the broker's own
# connection to its controller listener. A capture filter on the broker's two
# listener ports keeps out the Kafka traffic of other brokers on the same host.

APP_JVM_OPTS=(-Xmx256m -XX:+UseSerialGC "${TESTBED_LOG_OPTS[@]}")
KWIRE=${KWIRE:-${KWIRE_BIN:-$TESTBED_DIR/../build/kwire}}
MAX_CAPTURE_BYTES=$((5 * 1024 * 1024))

# Stops one process: signal, wait up to N seconds, then SIGKILL.
stop_pid() {  # pid signal seconds
    local pid=$1 sig=$2 secs=$3
    [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
    kill "-$sig" "$pid" 2>/dev/null || true
    for _ in $(seq 1 $((secs * 2))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null || true
}

scenario_init() {  # name
    SCENARIO=$1
    WORK=$(mktemp -d /tmp/kwire-scenario.XXXXXX)
    BROKER_SH_PID=
    RECORDER_PID=
    CAPTURE_PARTIAL=
    declare -gA APP_PIDS=()
    trap scenario_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

scenario_cleanup() {
    local rc=$?
    trap - EXIT
    trap '' INT TERM   # a second signal must not cut the clean-up short
    local name
    for name in "${!APP_PIDS[@]}"; do stop_pid "${APP_PIDS[$name]}" TERM 20; done
    stop_pid "$RECORDER_PID" INT 10
    stop_pid "$BROKER_SH_PID" TERM 45
    if (( rc != 0 )); then
        echo "scenario $SCENARIO: FAILED (status $rc)" >&2
        [[ -f $WORK/broker.log ]] && { echo "--- broker log tail" >&2; tail -n 30 "$WORK/broker.log" >&2; }
        local log
        for log in "$WORK"/cluster-logs/*.log; do
            [[ -f $log ]] && { echo "--- $(basename "$log") tail" >&2; tail -n 15 "$log" >&2; }
        done
        [[ -s $WORK/record.err ]] && { echo "--- kwire record" >&2; cat "$WORK/record.err" >&2; }
        [[ -n $CAPTURE_PARTIAL ]] && rm -f "$CAPTURE_PARTIAL"
    fi
    rm -rf "$WORK"
    exit "$rc"
}

# Starts testbed/run-broker in the background and waits until it listens. Sets
# BOOTSTRAP, BROKER_PORT, CONTROLLER_PORT, BROKER_PID, PLUGIN_CONTROL; with
# KWIRE_BROKER_SSL=1 also SSL_PORT, SASL_SSL_PORT, TLS_CA_PEM, TLS_TRUSTSTORE,
# TLS_STORE_PASSWORD, SCRAM_USER, SCRAM_PASSWORD, PLAIN_USER, PLAIN_PASSWORD (all read
# from run-broker's KWIRE_BROKER_INFO file). The KWIRE_BROKER_* variables of run-broker
# pass through.
# BROKER_START_SECONDS bounds the wait for run-broker's info file: run-broker's own
# bound for the listeners (180 s) plus its storage format and certificates. A failure
# bound, not a speed check: a start takes 60 s and more on a loaded machine.
BROKER_START_SECONDS=240
start_broker() {
    local t0=$SECONDS
    echo "== starting broker"
    KWIRE_BROKER_INFO=$WORK/broker.env KWIRE_BROKER_LOG=$WORK/broker.log \
        "$TESTBED_DIR/run-broker" >"$WORK/run-broker.out" 2>&1 &
    BROKER_SH_PID=$!
    while [[ ! -f $WORK/broker.env ]]; do
        kill -0 "$BROKER_SH_PID" 2>/dev/null || { cat "$WORK/run-broker.out" >&2; return 1; }
        if (( SECONDS - t0 >= BROKER_START_SECONDS )); then
            echo "scenario: run-broker wrote no $WORK/broker.env (the broker listening) within $BROKER_START_SECONDS s; its output:" >&2
            cat "$WORK/run-broker.out" >&2
            return 1
        fi
        sleep 0.5
    done
    SSL_PORT= SASL_SSL_PORT= TLS_CA_PEM= TLS_TRUSTSTORE= TLS_STORE_PASSWORD=
    SCRAM_USER= SCRAM_PASSWORD= PLAIN_USER= PLAIN_PASSWORD=
    source "$WORK/broker.env"
    BOOTSTRAP=127.0.0.1:$BROKER_PORT
    echo "   broker 127.0.0.1:$BROKER_PORT (controller 127.0.0.1:$CONTROLLER_PORT, pid $BROKER_PID), ready in $((SECONDS - t0)) s"
    if [[ -n $SSL_PORT ]]; then
        echo "   SSL 127.0.0.1:$SSL_PORT, SASL_SSL 127.0.0.1:$SASL_SSL_PORT (CA $TLS_CA_PEM)"
    fi
}

# Starts testbed/run-cluster with N nodes in the background, as start_broker starts
# run-broker, and waits for its info file. Sets what that file says (BOOTSTRAP of every
# node, BROKER_PORT and CONTROLLER_PORT shared by the nodes, NODE_k_ADDR/PID/LOG,
# PLUGIN_CONTROL, ...); BROKER_SH_PID is run-cluster's, so scenario_cleanup and
# finish_capture stop the whole cluster. The nodes' logs go to $WORK/cluster-logs.
CLUSTER_START_SECONDS=420
start_cluster() {  # nodes
    local t0=$SECONDS n=${1:-3}
    echo "== starting a $n-node cluster"
    mkdir -p "$WORK/cluster-logs"
    KWIRE_CLUSTER_INFO=$WORK/cluster.env KWIRE_CLUSTER_LOG_DIR=$WORK/cluster-logs \
        "$TESTBED_DIR/run-cluster" "$n" >"$WORK/run-cluster.out" 2>&1 &
    BROKER_SH_PID=$!
    while [[ ! -f $WORK/cluster.env ]]; do
        kill -0 "$BROKER_SH_PID" 2>/dev/null || { cat "$WORK/run-cluster.out" >&2; return 1; }
        if (( SECONDS - t0 >= CLUSTER_START_SECONDS )); then
            echo "scenario: run-cluster wrote no $WORK/cluster.env within $CLUSTER_START_SECONDS s; its output:" >&2
            cat "$WORK/run-cluster.out" >&2
            return 1
        fi
        sleep 0.5
    done
    source "$WORK/cluster.env"
    echo "   cluster $BOOTSTRAP (controllers on port $CONTROLLER_PORT), ready in $((SECONDS - t0)) s"
}

# Starts dumpcap -i lo (pcapng) on the given TCP ports, writing to OUT, and waits
# until it captures. For the TLS listeners: `kwire record --auto` keeps only
# connections it recognises as Kafka, and a TLS connection is not one (yet).
start_dumpcap() {  # out port...
    command -v dumpcap >/dev/null || { echo "scenario: dumpcap not found (apt-get install wireshark-common)" >&2; return 1; }
    local out=$1 filter= p i
    shift
    for p in "$@"; do filter+="${filter:+ or }tcp port $p"; done
    echo "== starting dumpcap -i lo -f \"$filter\" -> $out"
    mkdir -p "$(dirname "$out")"
    rm -f "$out"
    # Made before the loop below reads it: the background job's redirect may not have run yet.
    : >"$WORK/dumpcap.err"
    dumpcap -i lo -f "$filter" -w "$out" >"$WORK/dumpcap.out" 2>"$WORK/dumpcap.err" &
    RECORDER_PID=$!
    # A failure bound, not a speed check (240 x 0.25 s).
    for i in $(seq 1 240); do
        grep -q '^Capturing on ' "$WORK/dumpcap.err" && break
        kill -0 "$RECORDER_PID" 2>/dev/null || { echo "scenario: dumpcap exited: $(cat "$WORK/dumpcap.err")" >&2; return 1; }
        (( i == 240 )) && { echo "scenario: dumpcap printed no 'Capturing on' line within 60 s: $(cat "$WORK/dumpcap.err")" >&2; return 1; }
        sleep 0.25
    done
    sleep 0.5
}

# Stops the dumpcap start_dumpcap started (SIGINT: it flushes and closes the file) and
# checks that it lost no packets and that the file is not empty and below MAX (bytes).
finish_dumpcap() {  # out max-bytes
    local out=$1 max=$2 rc=0 i stats dropped size
    sleep 1
    kill -INT "$RECORDER_PID" 2>/dev/null || true
    for i in $(seq 1 120); do kill -0 "$RECORDER_PID" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$RECORDER_PID" 2>/dev/null; then
        echo "scenario: dumpcap did not stop within 60 s of SIGINT" >&2; return 1   # the EXIT trap kills it
    fi
    wait "$RECORDER_PID" || rc=$?
    RECORDER_PID=
    # "Packets received/dropped on interface 'lo': 1234/0 (pcap:0/dumpcap:0/flushed:0/ps_ifdrop:0) (100.0%)"
    stats=$(grep "^Packets received/dropped on interface" "$WORK/dumpcap.err" | tail -n 1 || true)
    echo "   dumpcap: ${stats:-no statistics line}"
    if (( rc != 0 )); then echo "scenario: dumpcap failed (status $rc): $(cat "$WORK/dumpcap.err")" >&2; return 1; fi
    dropped=$(sed -n 's|.*: [0-9]*/\([0-9]*\) (pcap:\([0-9]*\)/dumpcap:\([0-9]*\)/flushed:\([0-9]*\)/ps_ifdrop:\([0-9]*\)).*|\1 \2 \3 \4 \5|p' <<<"$stats")
    if [[ $dropped != "0 0 0 0 0" ]]; then echo "scenario: dumpcap lost packets (${dropped:-no statistics line})" >&2; return 1; fi
    size=$(stat -c %s "$out" 2>/dev/null || echo 0)
    if (( size == 0 )); then echo "scenario: capture $out is empty" >&2; return 1; fi
    if (( size >= max )); then echo "scenario: capture $out is $size bytes (>= $max)" >&2; return 1; fi
    echo "   $(basename "$out"): $size bytes"
}

# Starts `kwire record -i lo --auto` on the ports of the broker start_broker
# started, writing to OUT.partial, and waits until it says it is capturing.
start_capture() {  # out
    if [[ ! -x $KWIRE ]]; then
        echo "scenario: kwire binary '$KWIRE' not found (make build, or set KWIRE=path/to/kwire)" >&2; return 1
    fi
    echo "== starting kwire record -i lo --auto, ports $BROKER_PORT and $CONTROLLER_PORT ($KWIRE)"
    mkdir -p "$(dirname "$1")"
    CAPTURE_PARTIAL=$1.partial
    rm -f "$CAPTURE_PARTIAL"
    # Made before the loop below reads it: the background job's redirect may not have run yet.
    : >"$WORK/record.err"
    "$KWIRE" record -i lo --auto -f "tcp port $BROKER_PORT or tcp port $CONTROLLER_PORT" -q -w "$CAPTURE_PARTIAL" \
        >"$WORK/record.out" 2>"$WORK/record.err" &
    RECORDER_PID=$!
    local i
    # A failure bound, not a speed check (240 x 0.25 s).
    for i in $(seq 1 240); do
        grep -q '^kwire record: capturing on ' "$WORK/record.err" && break
        kill -0 "$RECORDER_PID" 2>/dev/null || { echo "scenario: kwire record exited (capture rights? run as root)" >&2; return 1; }
        (( i == 240 )) && { echo "scenario: kwire record printed no 'kwire record: capturing on' line within 60 s" >&2; return 1; }
        sleep 0.25
    done
    sleep 0.5
}

# Runs a testbed program (class + args) on $APP_CP (default: the 4.4.0 testbed
# classpath) in the background and waits for it, so that a signal to the script is
# handled at once (bash defers traps while a foreground child runs). $APP_JAVA_OPTS
# (word-split on purpose) are extra JVM options for this one app, e.g.
#   APP_JAVA_OPTS="-javaagent:$TLS_AGENT_JAR=$WORK/app.keys -Dkwire.client.config=$WORK/ssl.properties" run_app ...
run_app() {
    run_app_bg fg "$@"
    wait_app fg
}

# Starts a program in the background; its output lines are prefixed with [name].
run_app_bg() {  # name class args...
    local name=$1; shift
    local extra=()
    read -r -a extra <<< "${APP_JAVA_OPTS:-}"
    java "${APP_JVM_OPTS[@]}" "${extra[@]}" -cp "${APP_CP:-$TESTBED_CP}" "$@" > >(sed -u "s/^/   [$name] /") 2>&1 &
    APP_PIDS[$name]=$!
}

wait_app() {  # name
    local name=$1 rc=0
    wait "${APP_PIDS[$name]}" || rc=$?
    unset "APP_PIDS[$name]"
    if (( rc != 0 )); then echo "scenario: $name exited with status $rc" >&2; fi
    return "$rc"
}

# Stops the capture and the broker, checks the file, moves it to OUT, prints kwire's table.
finish_capture() {  # out
    local out=$1
    sleep 1
    echo "== stopping capture"
    # As stop_pid, but the recorder's exit status matters: a write error is a failed capture.
    local rc=0 i
    kill -INT "$RECORDER_PID" 2>/dev/null || true
    for i in $(seq 1 120); do kill -0 "$RECORDER_PID" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$RECORDER_PID" 2>/dev/null; then
        echo "scenario: kwire record did not stop within 60 s of SIGINT" >&2; return 1   # the EXIT trap kills it
    fi
    wait "$RECORDER_PID" || rc=$?
    RECORDER_PID=
    local final dropped
    final=$(grep '^kwire record: received=' "$WORK/record.err" | tail -n 1 || true)
    echo "   $final"
    if (( rc != 0 )); then echo "scenario: kwire record failed (status $rc): $(cat "$WORK/record.err")" >&2; return 1; fi
    # A capture with holes must not pass for a real one.
    dropped=$(sed -n 's/.* kernel_dropped=\([0-9]*\) if_dropped=\([0-9]*\).*/\1 \2/p' <<<"$final")
    if [[ $dropped != "0 0" ]]; then echo "scenario: kwire record lost packets (kernel_dropped/if_dropped: ${dropped:-no final line})" >&2; return 1; fi
    echo "== stopping broker"
    grep -h 'topology-plugin' "$WORK/broker.log" | sed 's/^/   broker: /' || true
    stop_pid "$BROKER_SH_PID" TERM 45
    BROKER_SH_PID=
    local size
    size=$(stat -c %s "$CAPTURE_PARTIAL" 2>/dev/null || echo 0)
    if (( size == 0 )); then echo "scenario: capture is empty" >&2; return 1; fi
    if (( size >= MAX_CAPTURE_BYTES )); then echo "scenario: capture is $size bytes (>= 5 MB)" >&2; return 1; fi
    mv "$CAPTURE_PARTIAL" "$out"
    CAPTURE_PARTIAL=
    chmod 644 "$out"
    echo "== wrote $out ($size bytes); broker port was $BROKER_PORT"
    if [[ -z ${KWIRE_NO_SUMMARY:-} ]]; then
        "$KWIRE" decode -r "$out" --api-table --stats -c 0 | sed 's/^/   /'
    fi
}
