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

# ---------------------------------------------------------------------------
# Scenario machinery, used by testbed/scenario. A scenario script calls
# scenario_init, start_broker, start_capture, then run_app / run_app_bg / wait_app,
# and finish_capture. The EXIT trap (scenario_cleanup) stops whatever is still
# running -- apps, dumpcap, the broker -- also when a step fails.

APP_JVM_OPTS=(-Xmx256m -XX:+UseSerialGC "${TESTBED_LOG_OPTS[@]}")
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
    DUMPCAP_PID=
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
    stop_pid "$DUMPCAP_PID" INT 10
    stop_pid "$BROKER_SH_PID" TERM 45
    if (( rc != 0 )); then
        echo "scenario $SCENARIO: FAILED (status $rc)" >&2
        [[ -f $WORK/broker.log ]] && { echo "--- broker log tail" >&2; tail -n 30 "$WORK/broker.log" >&2; }
        [[ -s $WORK/dumpcap.err ]] && { echo "--- dumpcap" >&2; cat "$WORK/dumpcap.err" >&2; }
        [[ -n $CAPTURE_PARTIAL ]] && rm -f "$CAPTURE_PARTIAL"
    fi
    rm -rf "$WORK"
    exit "$rc"
}

# Starts testbed/run-broker in the background and waits until it listens. Sets
# BOOTSTRAP, BROKER_PORT, CONTROLLER_PORT, BROKER_PID, PLUGIN_CONTROL. The
# KWIRE_BROKER_* variables of run-broker pass through.
start_broker() {
    local t0=$SECONDS
    echo "== starting broker"
    KWIRE_BROKER_INFO=$WORK/broker.env KWIRE_BROKER_LOG=$WORK/broker.log \
        "$TESTBED_DIR/run-broker" >"$WORK/run-broker.out" 2>&1 &
    BROKER_SH_PID=$!
    local i
    for i in $(seq 1 240); do
        [[ -f $WORK/broker.env ]] && break
        kill -0 "$BROKER_SH_PID" 2>/dev/null || { cat "$WORK/run-broker.out" >&2; return 1; }
        (( i == 240 )) && { echo "scenario: broker not ready after 120 s" >&2; return 1; }
        sleep 0.5
    done
    source "$WORK/broker.env"
    BOOTSTRAP=127.0.0.1:$BROKER_PORT
    echo "   broker 127.0.0.1:$BROKER_PORT (controller 127.0.0.1:$CONTROLLER_PORT, pid $BROKER_PID), ready in $((SECONDS - t0)) s"
}

# Starts dumpcap on lo for the broker port, writing to OUT.partial.
start_capture() {  # out
    if ! command -v dumpcap >/dev/null; then
        echo "scenario: dumpcap not found (Debian package wireshark-common / tshark)" >&2; return 1
    fi
    echo "== starting dumpcap on lo, filter 'tcp port $BROKER_PORT'"
    mkdir -p "$(dirname "$1")"
    CAPTURE_PARTIAL=$1.partial
    rm -f "$CAPTURE_PARTIAL"
    dumpcap -q -i lo -f "tcp port $BROKER_PORT" -w "$CAPTURE_PARTIAL" >"$WORK/dumpcap.out" 2>"$WORK/dumpcap.err" &
    DUMPCAP_PID=$!
    local i
    for i in $(seq 1 40); do
        [[ -s $CAPTURE_PARTIAL ]] && break
        kill -0 "$DUMPCAP_PID" 2>/dev/null || { echo "scenario: dumpcap exited (capture rights? run as root)" >&2; return 1; }
        (( i == 40 )) && { echo "scenario: dumpcap did not start" >&2; return 1; }
        sleep 0.25
    done
    sleep 0.5
}

# Runs a testbed program (class + args) on $APP_CP (default: the 4.4.0 testbed
# classpath) in the background and waits for it, so that a signal to the script is
# handled at once (bash defers traps while a foreground child runs).
run_app() {
    run_app_bg fg "$@"
    wait_app fg
}

# Starts a program in the background; its output lines are prefixed with [name].
run_app_bg() {  # name class args...
    local name=$1; shift
    java "${APP_JVM_OPTS[@]}" -cp "${APP_CP:-$TESTBED_CP}" "$@" > >(sed -u "s/^/   [$name] /") 2>&1 &
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
    stop_pid "$DUMPCAP_PID" INT 10
    DUMPCAP_PID=
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
    local kwire=${KWIRE_BIN:-$TESTBED_DIR/../build/kwire}
    if [[ -x $kwire && -z ${KWIRE_NO_SUMMARY:-} ]]; then
        "$kwire" decode -r "$out" --api-table --stats -c 0 | sed 's/^/   /'
    fi
}
