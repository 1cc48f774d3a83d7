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
