// kwire latency against tshark: tshark frames the Kafka messages of a real
// capture and gives each one's packet number, time, TCP stream and
// correlation id; the test pairs requests with responses itself and works
// out count, nearest-rank p50/p90/p99 and max per api version, and the
// slowest exchanges. kwire's report must agree.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "dissector/output/latency.hpp"
#include "tests/test_support.hpp"

using namespace kwire;
using namespace kwire::test;

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> v;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, sep)) v.push_back(item);
  if (!s.empty() && s.back() == sep) v.push_back("");
  return v;
}

struct Exchange {
  int64_t micros;
  uint64_t request_frame, response_frame;
  int api, version;
};

// "1795983902.000635145" -> microseconds, truncated as libpcap does.
int64_t epoch_micros(const std::string& t) {
  const size_t dot = t.find('.');
  std::string frac = t.substr(dot + 1);
  frac.resize(6, '0');
  return std::stoll(t.substr(0, dot)) * 1000000 + std::stoll(frac.substr(0, 6));
}

std::vector<Exchange> tshark_exchanges(const std::string& cap) {
  const std::string port = shell_output("tshark -r " + cap + " -Y 'tcp.flags.syn==1 && tcp.flags.ack==0' -T fields -e tcp.dstport -c 1");
  EXPECT_FALSE(port.empty());
  const std::string rows = shell_output("tshark -r " + cap + " -d tcp.port==" + port.substr(0, port.find('\n')) +
                              ",kafka -Y kafka -T fields -E separator=/t -e frame.number -e frame.time_epoch -e tcp.stream"
                              " -e kafka.correlation_id -e kafka.request_key -e kafka.request.version");
  struct Req { int64_t micros; uint64_t frame; int api, version; };
  std::map<std::pair<int, int>, Req> pending;
  std::vector<Exchange> out;
  for (const auto& line : lines(rows)) {
    auto f = split(line, '\t');
    if (f.size() < 6) continue;
    const uint64_t frame = std::stoull(f[0]);
    const int64_t t = epoch_micros(f[1]);
    const int stream = std::stoi(f[2]);
    auto corrs = split(f[3], ','), keys = split(f[4], ','), versions = split(f[5], ',');
    for (size_t i = 0; i < corrs.size(); ++i) {
      const int corr = std::stoi(corrs[i]);
      if (!f[4].empty()) {  // requests carry their api key
        pending[{stream, corr}] = Req{t, frame, std::stoi(keys.at(i)), std::stoi(versions.at(i))};
      } else if (auto it = pending.find({stream, corr}); it != pending.end()) {
        out.push_back({t - it->second.micros, it->second.frame, frame, it->second.api, it->second.version});
        pending.erase(it);
      }
    }
  }
  return out;
}

int64_t nearest_rank(std::vector<int64_t> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t rank = std::max<size_t>(1, static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size()))));
  return v[rank - 1];
}

int64_t json_micros(const nlohmann::json& ms) { return std::llround(ms.get<double>() * 1000.0); }

// kwire reports a bucket's lower bound above 8.192 ms: at most 0.013% (and
// the microsecond lost in truncation) under the true value.
void expect_close(int64_t got, int64_t want, const std::string& what) {
  EXPECT_LE(got, want + 1) << what;
  EXPECT_GE(got, want - 1 - (want >= 8192 ? want / 7000 : 0)) << what;
}

}  // namespace

TEST(Latency, AgreesWithTsharkFramingAndTimestamps) {
  for (const char* name : {"demo", "stateful", "plugin-failures"}) {
    const std::string cap = std::string(KWIRE_SOURCE_DIR) + "/captures/" + name + ".pcapng";
    const auto ex = tshark_exchanges(cap);
    ASSERT_GT(ex.size(), 50u) << name;
    auto r = kwire_cmd("latency -r " + cap + " -T json --top 5");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out)["latency"];

    std::map<std::pair<int, int>, std::vector<int64_t>> by_api;
    for (const auto& e : ex) by_api[{e.api, e.version}].push_back(e.micros);
    ASSERT_EQ(j["apis"].size(), by_api.size()) << name << r.out;
    for (const auto& row : j["apis"]) {
      const auto key = std::make_pair(row["apiKey"].get<int>(), row["apiVersion"].get<int>());
      ASSERT_TRUE(by_api.count(key)) << name << " " << row.dump();
      const auto& v = by_api[key];
      const std::string what = std::string(name) + " " + row.dump();
      EXPECT_EQ(row["count"].get<size_t>(), v.size()) << what;
      EXPECT_EQ(row["unanswered"].get<int>(), 0) << what;
      expect_close(json_micros(row["p50Ms"]), nearest_rank(v, 50), what + " p50");
      expect_close(json_micros(row["p90Ms"]), nearest_rank(v, 90), what + " p90");
      expect_close(json_micros(row["p99Ms"]), nearest_rank(v, 99), what + " p99");
      const int64_t max = *std::max_element(v.begin(), v.end());
      EXPECT_NEAR(json_micros(row["maxMs"]), max, 1) << what;
    }

    // The five slowest, with their frames, in order.
    auto sorted = ex;
    std::stable_sort(sorted.begin(), sorted.end(), [](const Exchange& a, const Exchange& b) { return a.micros > b.micros; });
    ASSERT_EQ(j["slowest"].size(), 5u);
    for (size_t i = 0; i < 5; ++i) {
      const auto& s = j["slowest"][i];
      EXPECT_NEAR(json_micros(s["latencyMs"]), sorted[i].micros, 1) << name << " " << s.dump();
      // Ties aside, the same exchange.
      if (i + 1 < sorted.size() && sorted[i].micros != sorted[i + 1].micros && (i == 0 || sorted[i - 1].micros != sorted[i].micros)) {
        EXPECT_EQ(s["requestFrame"].get<uint64_t>(), sorted[i].request_frame) << name << " " << s.dump();
        EXPECT_EQ(s["responseFrame"].get<uint64_t>(), sorted[i].response_frame) << name << " " << s.dump();
        EXPECT_EQ(s["apiKey"].get<int>(), sorted[i].api) << name;
      }
    }
    size_t conn_count = 0;
    for (const auto& c : j["connections"]) conn_count += c["count"].get<size_t>();
    EXPECT_EQ(conn_count, ex.size()) << name;
  }
}

// captures/cluster.pcapng, three brokers: the exchanges per broker address
// as tshark frames and pairs them, and the node ids Kafka's Admin reported
// for the addresses (captures/MANIFEST.md); the controller listener is named
// by no client's Metadata.
TEST(Latency, PerBrokerAgreesWithTsharkAndTheNodeIdsAdminReported) {
  const std::string cap = std::string(KWIRE_SOURCE_DIR) + "/captures/cluster.pcapng";
  const std::string rows = shell_output("tshark -r " + cap + " -d tcp.port==60287,kafka -d tcp.port==37365,kafka -Y kafka"
                                        " -T fields -E separator=/t -e frame.time_epoch -e tcp.stream -e ip.dst -e tcp.dstport"
                                        " -e kafka.correlation_id -e kafka.request_key");
  struct Req { int64_t micros; std::string server; };
  std::map<std::pair<int, int>, Req> pending;
  std::map<std::string, std::vector<int64_t>> by_broker;
  for (const auto& line : lines(rows)) {
    auto f = split(line, '\t');
    if (f.size() < 6 || f[4].empty()) continue;
    const int64_t t = epoch_micros(f[0]);
    const int stream = std::stoi(f[1]);
    auto corrs = split(f[4], ',');
    for (const auto& c : corrs) {
      const int corr = std::stoi(c);
      if (!f[5].empty()) {
        pending[{stream, corr}] = Req{t, f[2] + ":" + f[3]};
      } else if (auto it = pending.find({stream, corr}); it != pending.end()) {
        by_broker[it->second.server].push_back(t - it->second.micros);
        pending.erase(it);
      }
    }
  }
  ASSERT_EQ(by_broker.size(), 4u) << rows.substr(0, 2000);
  auto r = kwire_cmd("latency -r " + cap + " -T json --top 0");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto brokers = nlohmann::json::parse(r.out)["latency"]["brokers"];
  const std::map<std::string, int> node = {{"127.0.0.11:60287", 1}, {"127.0.0.12:60287", 2}, {"127.0.0.13:60287", 3}};
  ASSERT_EQ(brokers.size(), by_broker.size()) << brokers.dump();
  std::vector<std::string> order;
  for (const auto& b : brokers) {
    const std::string address = b["broker"];
    order.push_back(address);
    ASSERT_TRUE(by_broker.count(address)) << address;
    const auto& v = by_broker[address];
    EXPECT_EQ(b["count"].get<size_t>(), v.size()) << address;
    expect_close(json_micros(b["p50Ms"]), nearest_rank(v, 50), address + " p50");
    expect_close(json_micros(b["p99Ms"]), nearest_rank(v, 99), address + " p99");
    EXPECT_NEAR(json_micros(b["maxMs"]), *std::max_element(v.begin(), v.end()), 1) << address;
    if (node.count(address)) EXPECT_EQ(b["nodeId"], node.at(address)) << address;
    else EXPECT_TRUE(b["nodeId"].is_null()) << address << ": the controller listener is no client's broker";
  }
  // By node id, the address no answer named last.
  EXPECT_EQ(order, (std::vector<std::string>{"127.0.0.11:60287", "127.0.0.12:60287", "127.0.0.13:60287", "127.0.0.13:37365"}));
  // The text report's table says the same.
  auto text = kwire_cmd("latency -r " + cap + " --top 0");
  ASSERT_NE(text.out.find("per broker:\nbroker  "), std::string::npos) << text.out;
  for (const auto& [address, n] : node)
    EXPECT_NE(text.out.find("\nnode " + std::to_string(n) + " " + address + " "), std::string::npos) << address;
}

// The text report and --latency on decode say the same as the JSON.
TEST(Latency, TextAndDecodeOptionAgreeWithJson) {
  const std::string cap = std::string(KWIRE_SOURCE_DIR) + "/captures/demo.pcapng";
  auto text = kwire_cmd("latency -r " + cap);
  auto decode = kwire_cmd("decode -r " + cap + " -c 0 --latency");
  auto json = kwire_cmd("decode -r " + cap + " -T json -c 0 --latency");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_EQ(decode.out, text.out);
  // kwire record --decode --latency ends its output with the same report.
  const std::string written = ::testing::TempDir() + "kwire-latency-record.pcapng";
  auto record = kwire_cmd("record -r " + cap + " -w " + written + " --auto --decode --latency");
  ASSERT_EQ(record.status, 0) << record.err;
  const size_t at = record.out.find("latency: request to response");
  ASSERT_NE(at, std::string::npos) << record.out;
  EXPECT_EQ(record.out.substr(at), text.out);
  std::remove(written.c_str());
  const auto j = nlohmann::json::parse(json.out)["latency"];
  // "StreamsGroupHeartbeat  1  count p50 p90 p99 max unanswered"
  for (const auto& row : j["apis"]) {
    std::string name = row["apiName"], want;
    bool found = false;
    for (const auto& l : lines(text.out)) {
      std::istringstream in(l);
      std::string api, version, count, p50, p90, p99, max, unanswered;
      in >> api >> version >> count >> p50 >> p90 >> p99 >> max >> unanswered;
      if (api != name || version != std::to_string(row["apiVersion"].get<int>())) continue;
      found = true;
      EXPECT_EQ(count, std::to_string(row["count"].get<int>())) << l;
      EXPECT_NEAR(std::stod(p50), row["p50Ms"].get<double>(), 1e-9) << l;
      EXPECT_NEAR(std::stod(max), row["maxMs"].get<double>(), 1e-9) << l;
    }
    EXPECT_TRUE(found) << name;
  }
  // -Y: an api's row is the unfiltered one; a filter on responses counts the
  // exchanges of the responses it selects.
  auto hb = nlohmann::json::parse(kwire_cmd("latency -r " + cap + " -T json -Y 'apiName == StreamsGroupHeartbeat'").out)["latency"];
  ASSERT_EQ(hb["apis"].size(), 1u);
  for (const auto& row : j["apis"])
    if (row["apiName"] == "StreamsGroupHeartbeat") { EXPECT_EQ(hb["apis"][0], row); }
  const std::string busy = "body.errorCode == COORDINATOR_LOAD_IN_PROGRESS";
  const auto responses = lines(kwire_cmd("decode -r " + cap + " -T json -Y '" + busy + "'").out);
  ASSERT_FALSE(responses.empty());
  auto by_error = nlohmann::json::parse(kwire_cmd("latency -r " + cap + " -T json -Y '" + busy + "'").out)["latency"];
  size_t counted = 0;
  for (const auto& row : by_error["apis"]) counted += row["count"].get<size_t>();
  EXPECT_EQ(counted, responses.size());
  // --api narrows the report to those APIs.
  auto fetch = nlohmann::json::parse(kwire_cmd("latency -r " + cap + " -T json --api fetch").out)["latency"];
  ASSERT_EQ(fetch["apis"].size(), 1u);
  EXPECT_EQ(fetch["apis"][0]["apiName"], "Fetch");
}

TEST(Latency, UsageErrors) {
  EXPECT_EQ(WEXITSTATUS(kwire_cmd("latency").status), 2);
  EXPECT_EQ(WEXITSTATUS(kwire_cmd("latency -r x.pcap --top -1").status), 2);
  auto missing = kwire_cmd("latency -r /nonexistent.pcap");
  EXPECT_EQ(WEXITSTATUS(missing.status), 1);
  EXPECT_NE(missing.err.find("/nonexistent.pcap"), std::string::npos) << missing.err;
}

// The histogram: exact below 8.192 ms, within 1/8192 above; nearest rank.
TEST(LatencyHistogram, NearestRankAndBuckets) {
  LatencyHistogram h;
  for (int64_t v : {5, 1, 4, 2, 3}) h.add(v);
  EXPECT_EQ(h.percentile(50), 3);   // rank ceil(2.5) = 3
  EXPECT_EQ(h.percentile(90), 5);   // rank ceil(4.5) = 5
  EXPECT_EQ(h.percentile(20), 1);   // rank 1
  EXPECT_EQ(h.percentile(21), 2);   // rank ceil(1.05) = 2
  EXPECT_EQ(h.max(), 5);
  LatencyHistogram big;
  big.add(8191);
  big.add(16'385);      // 2^14..2^15: buckets 2 µs wide, [16384, 16386)
  big.add(1'000'003);   // 2^19..2^20: buckets 64 µs wide, [999'936, 1'000'000) + 64
  big.add(5'000'000);
  EXPECT_EQ(big.percentile(25), 8191);
  EXPECT_EQ(big.percentile(50), 16'384);
  EXPECT_EQ(big.percentile(75), 1'000'000);
  EXPECT_EQ(big.percentile(100), 5'000'000);  // the extremes are exact
}
