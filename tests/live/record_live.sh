#!/usr/bin/env bash
# Live tests of `kwire record` on loopback (ctest label "live"): kwire-loopgen
# exchanges real Kafka requests and responses (bodies from Kafka's own
# serializers) and writes a manifest of what it sent; the recording is then
# checked against that manifest with tshark, capinfos and `kwire decode`
# (tests/live/check_recording.py).
#
#   tests/live/record_live.sh CASE KWIRE_BINARY LOOPGEN_BINARY
#
# CASE:
#   loopback  -i lo -p PORT, 4 pipelined connections; SIGINT; every message once,
#             final statistics (kernel_dropped=0, written = packets in the file)
#   auto      --auto (no port) while HTTP runs on loopback: only the Kafka
#             connections are in the file, every message once
#   rotation  -C 1: several files, each valid on its own, all messages once together
#   pipe      kwire record -w - | kwire decode -r - --stats
#   errors    no privilege, missing interface, unwritable path, bad BPF, full disk:
#             a message naming the problem, a non-zero exit, no garbage file
#
# Runs as root (capturing and mounting a small tmpfs need it; CI runs the tests
# as root). Missing prerequisites fail the test with a message, never pass it.
# Each case runs in a network namespace of its own (unshare --net), so that its
# lo carries only the test's traffic: no other Kafka on the machine can end up
# in an --auto recording, and the recorder's counters can be checked exactly.
set -euo pipefail

CASE=${1:?usage: record_live.sh CASE KWIRE_BINARY LOOPGEN_BINARY}
KWIRE=${2:?usage: record_live.sh CASE KWIRE_BINARY LOOPGEN_BINARY}
LOOPGEN=${3:?usage: record_live.sh CASE KWIRE_BINARY LOOPGEN_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
CHECK=$HERE/check_recording.py

fail() { echo "record_live $CASE: FAIL: $*" >&2; exit 1; }
note() { echo "record_live $CASE: $*"; }

[[ -x $KWIRE ]] || fail "kwire binary '$KWIRE' is not executable"
[[ -x $LOOPGEN ]] || fail "kwire-loopgen binary '$LOOPGEN' is not executable"
for tool in python3 tshark capinfos mergecap timeout; do
    command -v "$tool" >/dev/null || fail "'$tool' not found (Debian packages: python3, tshark, wireshark-common, coreutils)"
done
(( $(id -u) == 0 )) || fail "must run as root: capturing on lo needs CAP_NET_RAW, the full-disk case mounts a tmpfs (CI runs the tests as root)"
if [[ -z ${KWIRE_LIVE_NETNS:-} ]]; then
    for tool in unshare ip; do
        command -v "$tool" >/dev/null || fail "'$tool' not found (Debian packages util-linux, iproute2)"
    done
    KWIRE_LIVE_NETNS=1 exec unshare --net -- bash -c 'ip link set lo up && exec "$0" "$@"' "$0" "$@"
fi

WORK=$(mktemp -d /tmp/kwire-record-live.XXXXXX)
chmod 755 "$WORK"
PIDS=()
MOUNTS=()
cleanup() {
    local rc=$?
    trap - EXIT
    local pid
    for pid in "${PIDS[@]}"; do { kill -KILL "$pid" && wait "$pid"; } 2>/dev/null || true; done
    local m
    for m in "${MOUNTS[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
    if (( rc != 0 )); then
        for f in "$WORK"/*.err "$WORK"/*.log; do
            [[ -s $f ]] && { echo "--- $(basename "$f") (tail)" >&2; tail -n 20 "$f" >&2; }
        done
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- helpers --------------------------------------------------------------------

# Starts kwire-loopgen (port chosen by the kernel) waiting for $WORK/go; sets
# LOOPGEN_PID and KAFKA_PORT. Arguments are passed on.
start_loopgen() {
    rm -f "$WORK/go"
    # The output file exists before the loop below reads it: the background
    # job's redirect may not have run yet when the loop starts.
    : >"$WORK/loopgen.out"
    "$LOOPGEN" serve+client --port 0 --wait-file "$WORK/go" --quiet "$@" >"$WORK/loopgen.out" 2>"$WORK/loopgen.err" &
    LOOPGEN_PID=$!
    PIDS+=("$LOOPGEN_PID")
    local i
    # A readiness bound, not a speed check: the sanitized loopgen reads its
    # corpus first, which takes seconds while make test's chroot builds run.
    for i in $(seq 1 2400); do
        KAFKA_PORT=$(sed -n 's/^port=\([0-9]*\)$/\1/p' "$WORK/loopgen.out")
        [[ -n $KAFKA_PORT ]] && return 0
        kill -0 "$LOOPGEN_PID" 2>/dev/null || fail "kwire-loopgen exited before listening: $(cat "$WORK/loopgen.err")"
        sleep 0.05
    done
    fail "kwire-loopgen printed no port= line within 120 s"
}

# Lets kwire-loopgen send and waits for it; it checks every response itself.
run_traffic() {
    touch "$WORK/go"
    local rc=0
    wait "$LOOPGEN_PID" || rc=$?
    (( rc == 0 )) || fail "kwire-loopgen failed (exit $rc): $(cat "$WORK/loopgen.err")"
    note "traffic: $(tail -n 1 "$WORK/loopgen.out")"
}

# Starts `kwire record` with the given arguments (stdout to $REC_STDOUT, default
# /dev/null) and waits for its "capturing on" line; sets REC_PID.
start_recorder() {
    : >"$WORK/record.err"
    "$KWIRE" record "$@" >"${REC_STDOUT:-/dev/null}" 2>"$WORK/record.err" &
    REC_PID=$!
    PIDS+=("$REC_PID")
    local i
    # A readiness bound, not a speed check (600 x 0.1 s).
    for i in $(seq 1 600); do
        grep -q '^kwire record: capturing on ' "$WORK/record.err" && return 0
        if ! kill -0 "$REC_PID" 2>/dev/null; then
            local rc=0
            wait "$REC_PID" || rc=$?
            fail "kwire record $* exited ($rc) before capturing: $(cat "$WORK/record.err")"
        fi
        sleep 0.1
    done
    fail "kwire record $* printed no 'kwire record: capturing on' line within 60 s"
}

# SIGINT, then waits up to 60 s; fails unless it exits 0. Sets FINAL to the
# final statistics line.
stop_recorder() {
    sleep 0.5   # the last ACKs reach the capture
    kill -INT "$REC_PID"
    local i
    for i in $(seq 1 600); do kill -0 "$REC_PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$REC_PID" 2>/dev/null && fail "kwire record did not exit within 60 s of SIGINT"
    local rc=0
    wait "$REC_PID" || rc=$?
    (( rc == 0 )) || fail "kwire record exited $rc after SIGINT: $(cat "$WORK/record.err")"
    read_final_line
}

read_final_line() {
    FINAL=$(grep '^kwire record: received=' "$WORK/record.err" | tail -n 1 || true)
    [[ -n $FINAL ]] || fail "no final 'kwire record: received=...' line on stderr: $(tail -n 5 "$WORK/record.err")"
    note "recorder: $FINAL"
}

# The value of one field of the final line.
final() {
    local v
    v=$(sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$FINAL")
    [[ -n $v ]] || fail "the final line has no $1= field: $FINAL"
    echo "$v"
}

expect_final() {  # field value what
    local v
    v=$(final "$1")
    [[ $v == "$2" ]] || fail "final line: $1=$v, expected $2 ($3)"
    echo "ok   final line $1=$v ($3)"
}

# Runs check_recording.py; a failure is reported after the final-line checks,
# so that a drop the recorder itself counted is named as the cause.
CONTENT_FAILED=0
check_content() {
    python3 "$CHECK" --kwire "$KWIRE" --port "$KAFKA_PORT" --manifest "$WORK/manifest.jsonl" "$@" || CONTENT_FAILED=1
}
content_verdict() {
    (( CONTENT_FAILED == 0 )) || fail "the recording does not hold exactly what kwire-loopgen exchanged (FAIL lines above)"
}

manifest_messages() { grep -c . "$WORK/manifest.jsonl"; }

packets_in() { capinfos -c -M "$1" | sed -n 's/^Number of packets: *//p'; }

# ---- cases ----------------------------------------------------------------------

case_loopback() {
    start_loopgen --connections 4 --messages 400 --pipeline 8 --manifest "$WORK/manifest.jsonl"
    start_recorder -i lo -p "$KAFKA_PORT" -w "$WORK/lo.pcapng"
    run_traffic
    stop_recorder
    check_content --exact-connections "$WORK/lo.pcapng"
    expect_final kernel_dropped 0 "nothing lost in the kernel"
    expect_final if_dropped 0 "nothing lost at the interface"
    content_verdict
    expect_final written "$(packets_in "$WORK/lo.pcapng")" "capinfos counts the same packets"
    expect_final kafka_messages "$(manifest_messages)" "the messages kwire-loopgen exchanged"
    expect_final kafka_connections 4 "kwire-loopgen's connections"
    expect_final files 1 "one output file"
}

case_auto() {
    local http_port
    http_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    python3 -m http.server --bind 127.0.0.1 --directory "$WORK" "$http_port" >"$WORK/http.out" 2>&1 &
    PIDS+=("$!")
    local i
    # A readiness bound, not a speed check (600 x 0.1 s).
    for i in $(seq 1 600); do
        curl -s -o /dev/null "http://127.0.0.1:$http_port/" && break
        (( i < 600 )) || fail "python3 -m http.server answered no request on port $http_port within 60 s: $(cat "$WORK/http.out")"
        sleep 0.1
    done
    # Paced to about 1.2 s, as long as the HTTP requests below.
    start_loopgen --connections 4 --messages 300 --pipeline 4 --rate 2000 --manifest "$WORK/manifest.jsonl"
    start_recorder -i lo --auto -w "$WORK/auto.pcapng"
    # HTTP during the whole Kafka exchange: new connections the recorder has to
    # hold back until it knows they are not Kafka.
    (for i in $(seq 1 40); do curl -s -o /dev/null "http://127.0.0.1:$http_port/" && echo ok; sleep 0.02; done) \
        >"$WORK/curl.out" &
    local curl_pid=$!
    run_traffic
    wait "$curl_pid" || true
    local http_ok
    http_ok=$(grep -c ok "$WORK/curl.out" || true)
    (( http_ok >= 30 )) || fail "only $http_ok of 40 HTTP requests succeeded while recording: no unrelated traffic to leave out"
    note "$http_ok HTTP requests on port $http_port while recording"
    stop_recorder
    check_content --absent-port "$http_port" --exact-connections "$WORK/auto.pcapng"
    expect_final kernel_dropped 0 "nothing lost in the kernel"
    content_verdict
    expect_final written "$(packets_in "$WORK/auto.pcapng")" "capinfos counts the same packets"
    expect_final kafka_messages "$(manifest_messages)" "the messages kwire-loopgen exchanged"
    expect_final kafka_connections 4 "kwire-loopgen's connections"
    local conns
    conns=$(final connections)
    (( conns >= 4 + http_ok )) || fail "final line: connections=$conns, expected at least 4 Kafka + $http_ok HTTP"
    echo "ok   final line connections=$conns counts the HTTP connections too"
}

case_rotation() {
    # About 4 MB of Kafka traffic: four or more 1 MB files.
    start_loopgen --connections 4 --messages 1500 --pipeline 8 --manifest "$WORK/manifest.jsonl"
    mkdir "$WORK/rot"
    start_recorder -i lo -p "$KAFKA_PORT" -C 1 -w "$WORK/rot/ring.pcapng"
    run_traffic
    stop_recorder
    expect_final kernel_dropped 0 "nothing lost in the kernel"
    local files=("$WORK"/rot/ring_*.pcapng)
    [[ -e ${files[0]} ]] || fail "no rotated files ring_NNNNN_YYYYmmddHHMMSS.pcapng in $WORK/rot: $(ls "$WORK/rot")"
    note "${#files[@]} files: $(cd "$WORK/rot" && ls -l | tail -n +2 | awk '{print $9 " (" $5 " bytes)"}' | paste -sd' ')"
    (( ${#files[@]} >= 3 )) || fail "only ${#files[@]} file(s) for ~4 MB with -C 1"
    local n=0 f
    for f in "${files[@]}"; do
        n=$((n + 1))
        [[ $(basename "$f") =~ ^ring_$(printf '%05d' "$n")_[0-9]{14}\.pcapng$ ]] ||
            fail "file $n is named $(basename "$f"), expected ring_$(printf '%05d' "$n")_YYYYmmddHHMMSS.pcapng"
        local size
        size=$(stat -c %s "$f")
        # -C counts 1,000,000 bytes; a file closes after the packet that crosses it.
        (( n == ${#files[@]} || (size >= 900000 && size <= 1000000 + 70000) )) ||
            fail "$(basename "$f") is $size bytes; -C 1 should close it near 1,000,000"
    done
    check_content "${files[@]}"
    content_verdict
    expect_final files "${#files[@]}" "the files on disk"
    local total=0
    for f in "${files[@]}"; do total=$((total + $(packets_in "$f"))); done
    expect_final written "$total" "capinfos counts the same packets over all files"
}

case_pipe() {
    start_loopgen --connections 3 --messages 300 --pipeline 8 --manifest "$WORK/manifest.jsonl"
    mkfifo "$WORK/pipe"
    "$KWIRE" decode -r - -p "$KAFKA_PORT" --stats -c 0 <"$WORK/pipe" >"$WORK/decode.out" 2>"$WORK/decode.err" &
    local decode_pid=$!
    PIDS+=("$decode_pid")
    REC_STDOUT=$WORK/pipe start_recorder -i lo -p "$KAFKA_PORT" -w -
    run_traffic
    stop_recorder
    local rc=0
    timeout 60 tail --pid="$decode_pid" -f /dev/null || fail "kwire decode -r - did not finish within 60 s of the recorder's exit"
    wait "$decode_pid" || rc=$?
    (( rc == 0 )) || fail "kwire decode -r - exited $rc: $(cat "$WORK/decode.err")"
    local stats req resp
    stats=$(grep '^stats: ' "$WORK/decode.out" || true)
    note "decode: $stats"
    req=$(grep -c '"direction":"request"' "$WORK/manifest.jsonl")
    resp=$(grep -c '"direction":"response"' "$WORK/manifest.jsonl")
    [[ $stats =~ ^stats:\ frames=$((req + resp))\ requests=$req\ responses=$resp\ unmatched=0\ malformed=0( |$) ]] ||
        fail "kwire decode -r - says '$stats'; the manifest has $req requests and $resp responses"
    echo "ok   the piped decode sees all $req requests and $resp responses, unmatched=0 malformed=0"
    expect_final kernel_dropped 0 "nothing lost in the kernel"
}

# Runs kwire record, expecting it to exit by itself, non-zero, with stderr
# matching a pattern; the output file must not exist afterwards.
expect_refusal() {  # what pattern outfile kwire-record-args...
    local what=$1 pattern=$2 out=$3
    shift 3
    local rc=0
    timeout 60 "$@" >"$WORK/refusal.out" 2>"$WORK/refusal.err" || rc=$?
    (( rc != 0 && rc != 124 )) || fail "$what: exit status $rc (expected a non-zero exit of its own): $(cat "$WORK/refusal.err")"
    grep -Eiq -- "$pattern" "$WORK/refusal.err" ||
        fail "$what: stderr does not name the problem (expected /$pattern/): $(cat "$WORK/refusal.err")"
    [[ ! -e $out ]] || fail "$what: left a file behind: $out ($(stat -c %s "$out") bytes)"
    echo "ok   $what: exit $rc, $(grep -Ei -m1 -- "$pattern" "$WORK/refusal.err")"
    REFUSAL_RC=$rc
}

case_errors() {
    command -v setpriv >/dev/null || fail "'setpriv' not found (Debian package util-linux)"
    mkdir -m 777 "$WORK/out"

    # Capturing needs CAP_NET_RAW: as nobody, without capabilities.
    expect_refusal "no privilege" 'CAP_NET_RAW|root' "$WORK/out/np.pcapng" \
        setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
        "$KWIRE" record -i lo -w "$WORK/out/np.pcapng"
    (( REFUSAL_RC == 2 )) || fail "no privilege: exit $REFUSAL_RC, the documented status is 2"

    expect_refusal "missing interface" 'kwnosuch0' "$WORK/out/if.pcapng" \
        "$KWIRE" record -i kwnosuch0 -w "$WORK/out/if.pcapng"
    (( REFUSAL_RC == 2 )) || fail "missing interface: exit $REFUSAL_RC, the documented status is 2"

    expect_refusal "BPF syntax error" 'filter|BPF|syntax' "$WORK/out/bpf.pcapng" \
        "$KWIRE" record -i lo -f 'tcp port and and' -w "$WORK/out/bpf.pcapng"
    (( REFUSAL_RC == 2 )) || fail "BPF syntax error: exit $REFUSAL_RC, the documented status is 2"

    expect_refusal "unwritable path (/proc)" '/proc/kwire-no/such\.pcapng' /proc/kwire-no/such.pcapng \
        "$KWIRE" record -i lo -w /proc/kwire-no/such.pcapng
    # root ignores permission bits: a read-only mount is what refuses writes.
    mkdir "$WORK/ro"
    mount -t tmpfs -o ro,size=64k tmpfs "$WORK/ro" || fail "cannot mount a read-only tmpfs on $WORK/ro (needs root with CAP_SYS_ADMIN)"
    MOUNTS+=("$WORK/ro")
    expect_refusal "read-only directory" 'read-only|Read-only' "$WORK/ro/x.pcapng" \
        "$KWIRE" record -i lo -w "$WORK/ro/x.pcapng"

    case_disk_full
}

# A 200 KB tmpfs and about 1 MB of Kafka traffic: the recorder must stop by
# itself with "No space left on device", exit 1, and leave a file that reads
# back up to its last whole block.
case_disk_full() {
    mkdir "$WORK/small"
    mount -t tmpfs -o size=200k tmpfs "$WORK/small" || fail "cannot mount a 200k tmpfs on $WORK/small (needs root with CAP_SYS_ADMIN)"
    MOUNTS+=("$WORK/small")
    start_loopgen --connections 4 --messages 400 --pipeline 8
    start_recorder -i lo -p "$KAFKA_PORT" -w "$WORK/small/full.pcapng"
    run_traffic
    local i
    for i in $(seq 1 600); do kill -0 "$REC_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$REC_PID" 2>/dev/null; then
        kill -INT "$REC_PID"
        fail "kwire record still runs 60 s after the traffic that filled the disk (should stop with an error): $(cat "$WORK/record.err")"
    fi
    local rc=0
    wait "$REC_PID" || rc=$?
    (( rc == 1 )) || fail "full disk: exit $rc, expected 1 (runtime failure): $(cat "$WORK/record.err")"
    grep -q 'No space left on device' "$WORK/record.err" ||
        fail "full disk: stderr does not say 'No space left on device': $(cat "$WORK/record.err")"
    echo "ok   full disk: exit 1, $(grep -m1 'No space left on device' "$WORK/record.err")"
    python3 "$HERE/pcapng_blocks.py" "$WORK/small/full.pcapng" >"$WORK/blocks.out" ||
        fail "full disk: the file is not valid pcapng up to its last whole block: $(cat "$WORK/blocks.out")"
    note "$(cat "$WORK/blocks.out")"
    local walked capinfos_n
    walked=$(sed -n 's/.* packets=\([0-9]*\).*/\1/p' "$WORK/blocks.out")
    (( walked > 0 )) || fail "full disk: no packet in the file"
    capinfos_n=$(capinfos -c -M "$WORK/small/full.pcapng" 2>/dev/null | sed -n 's/^Number of packets: *//p' || true)
    [[ $capinfos_n == "$walked" ]] ||
        fail "full disk: capinfos reads ${capinfos_n:-no} packets, the file holds $walked whole packet blocks"
    echo "ok   full disk: capinfos reads all $walked packets written before the disk filled"
}

"case_$CASE"
note "PASS"
