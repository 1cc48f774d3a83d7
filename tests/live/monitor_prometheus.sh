#!/usr/bin/env bash
# kwire monitor scraped by a real Prometheus server (Debian's prometheus):
# `kwire monitor -r CAPTURE --listen 127.0.0.1:PORT` serves the capture's
# metrics, Prometheus scrapes them every second, and its HTTP API
# (/api/v1/query) must give, per api, as many requests as tshark finds Kafka
# requests with that api key in the same file. Also checks that promtool
# accepts the exposition. Reads a file: no capture privilege, no shared ports
# beyond the two it claims.
#
#   tests/live/monitor_prometheus.sh KWIRE [CAPTURE-NAME]   (default: demo)
set -euo pipefail
kwire=$1
name=${2:-demo}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../../testbed/lib.sh
source "$src/testbed/lib.sh"
cap=$src/captures/$name.pcapng

for tool in prometheus promtool tshark curl; do
    command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing (tools/install-deps test)"; exit 1; }
done

work=$(mktemp -d /tmp/kwire-monitor-prom.XXXXXX)
kwire_pid='' prom_pid=''
cleanup() {
    for p in $kwire_pid $prom_pid; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*"
    for log in "$work"/*.log; do [[ -s $log ]] && { echo "--- $log"; tail -20 "$log"; }; done
    exit 1
}

# poll SECONDS COMMAND...: runs COMMAND every 100 ms until it succeeds; fails after SECONDS.
poll() {
    local deadline=$((SECONDS + $1)); shift
    until "$@"; do
        (( SECONDS < deadline )) || return 1
        sleep 0.1
    done
}

testbed_claim_ports ports 2
metrics_port=${ports[0]} prom_port=${ports[1]}

"$kwire" monitor -r "$cap" --listen "127.0.0.1:$metrics_port" 2>"$work/kwire.log" &
kwire_pid=$!
kwire_served() { kill -0 "$kwire_pid" 2>/dev/null || fail "kwire monitor exited"; grep -q "serving until" "$work/kwire.log"; }
poll 120 kwire_served || fail "kwire monitor did not finish reading $cap"
curl -sf "http://127.0.0.1:$metrics_port/metrics" >"$work/metrics.txt" || fail "GET /metrics failed"
promtool check metrics <"$work/metrics.txt" >"$work/promtool.log" 2>&1 || fail "promtool check metrics"

cat >"$work/prometheus.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: kwire
    static_configs:
      - targets: ['127.0.0.1:$metrics_port']
YML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
    --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
prom_pid=$!

# query PROMQL: the result vector as "label value" lines, sorted.
query() {
    curl -sfG "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1" |
        python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["status"] == "success", r
for s in r["data"]["result"]:
    print(s["metric"].get("api", ""), int(float(s["value"][1])))' | sort
}
scraped() {
    kill -0 "$prom_pid" 2>/dev/null || fail "prometheus exited"
    [[ $(query 'up{job="kwire"} == 1' 2>/dev/null) ]]
}
poll 120 scraped || fail "prometheus did not scrape kwire monitor"
# The scrape that made `up` 1 may still be in flight for the series: wait for them too.
have_counts() { [[ $(query 'sum by (api) (kwire_requests_total)' 2>/dev/null) ]]; }
poll 60 have_counts || fail "no kwire_requests_total in prometheus"
query 'sum by (api) (kwire_requests_total)' >"$work/prometheus-counts"

# tshark: Kafka on every port a connection opened to, then every request's
# api key (a packet with several requests lists them comma-separated).
decode=()
for port in $(tshark -r "$cap" -Y 'tcp.flags.syn==1 && tcp.flags.ack==0' -T fields -e tcp.dstport 2>/dev/null | sort -u); do
    decode+=(-d "tcp.port==$port,kafka")
done
tshark -n -r "$cap" "${decode[@]}" -Y 'kafka.request_key' -T fields -e kafka.request_key \
    >"$work/tshark-keys" 2>"$work/tshark.log" || fail "tshark"
"$kwire" specs >"$work/specs" 2>/dev/null
tr ',' '\n' <"$work/tshark-keys" | awk -v specs="$work/specs" '
    BEGIN { while ((getline l < specs) > 0) { split(l, f, " "); if (f[1] ~ /^[0-9]+$/) name[f[1]] = f[2] } }
    NF { n[name[$1] != "" ? name[$1] : $1]++ }
    END { for (a in n) print a, n[a] }' | sort >"$work/tshark-counts"
[[ -s $work/tshark-counts ]] || fail "tshark found no Kafka requests in $cap"

if ! diff -u "$work/tshark-counts" "$work/prometheus-counts" >"$work/diff.log"; then
    cat "$work/diff.log"
    fail "requests per api: tshark (-) and prometheus (+) differ"
fi
echo "PASS: $name: $(wc -l <"$work/tshark-counts") apis, $(awk '{s += $2} END {print s}' "$work/tshark-counts") requests, tshark = prometheus"
