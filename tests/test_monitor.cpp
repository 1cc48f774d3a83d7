// kwire monitor's metrics over hand-made exchanges: a synthetic capture with
// known messages at known times goes through the same reader and sessions as
// a real one, and each series of the exposition is checked against the value
// worked out by hand from the messages.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "monitor/monitor.hpp"
#include "pipeline/capture_file.hpp"
#include "recorder/pcap_writer.hpp"
#include "tests/test_support.hpp"

using namespace kwire;
using namespace kwire::test;
using namespace std::chrono_literals;

namespace {

// The value of one series of a text exposition (labels as prometheus-cpp
// writes them: sorted by name), or NaN when the series is not there.
double series(const std::string& text, const std::string& name_and_labels) {
  for (const auto& line : lines(text)) {
    if (line.size() > name_and_labels.size() && line.starts_with(name_and_labels) && line[name_and_labels.size()] == ' ')
      return std::stod(line.substr(name_and_labels.size() + 1));
  }
  return std::nan("");
}

size_t count_series(const std::string& text, const std::string& name) {
  size_t n = 0;
  for (const auto& line : lines(text)) n += line.starts_with(name + "{") || line.starts_with(name + " ");
  return n;
}

std::vector<uint8_t> api_versions_request(int corr, const std::string& client) {
  Bytes b = request_header_v2(18, 3, corr, client);
  b.cstr("kwire-test-client").cstr("1.2.3").tags0();
  return b.message();
}

// ApiVersions answers with a v0 header whatever the version.
std::vector<uint8_t> api_versions_response(int corr) {
  Bytes b;
  b.i32(corr).i16(0).carr(0).i32(0).tags0();  // ErrorCode, ApiKeys, ThrottleTimeMs
  return b.message();
}

std::vector<uint8_t> describe_cluster_request(int corr) {
  Bytes b = request_header_v2(60, 0, corr);
  b.boolean(false).tags0();
  return b.message();
}

// Names broker 7 at 10.0.0.9:9092.
std::vector<uint8_t> describe_cluster_response(int corr) {
  Bytes b;
  b.i32(corr).tags0();
  b.i32(0).i16(0).cnull().cstr("cluster-x").i32(7);  // Throttle, Error, Message, ClusterId, ControllerId
  b.carr(1).i32(7).cstr("10.0.0.9").i32(9092).cnull().tags0();
  b.i32(INT32_MIN).tags0();
  return b.message();
}

std::vector<uint8_t> delete_topics_request(int corr) {
  Bytes b = request_header_v2(20, 4, corr);
  b.carr(2).cstr("orders").cstr("audit").i32(30000).tags0();
  return b.message();
}

// Throttled 250 ms; "orders" fails with UNKNOWN_TOPIC_OR_PARTITION (3), "audit" is deleted.
std::vector<uint8_t> delete_topics_response(int corr) {
  Bytes b;
  b.i32(corr).tags0();
  b.i32(250).carr(2).cstr("orders").i16(3).tags0().cstr("audit").i16(0).tags0().tags0();
  return b.message();
}

// A long-poll of up to 500 ms.
std::vector<uint8_t> fetch_request(int corr) {
  Bytes b = request_header_v2(1, 12, corr);
  b.i32(-1).i32(500).i32(1).i32(52428800).i8(0).i32(0).i32(-1);  // Replica, MaxWait, MinBytes, MaxBytes, Isolation, Session, Epoch
  b.carr(0).carr(0).cstr("").tags0();                                // Topics, ForgottenTopicsData, RackId
  return b.message();
}

// orders-0 answers NOT_LEADER_OR_FOLLOWER (6).
std::vector<uint8_t> fetch_response(int corr) {
  Bytes b;
  b.i32(corr).tags0();
  b.i32(0).i16(0).i32(0).carr(1).cstr("orders").carr(1);
  b.i32(0).i16(6).i64(-1).i64(-1).i64(-1).cnull().i32(-1).cnull().tags0();  // ..., Aborted, PreferredReadReplica, Records
  b.tags0().tags0();
  return b.message();
}

class MonitorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() / ("kwire-monitor-" + std::to_string(::getpid()) + ".pcap")).string();
  }
  void TearDown() override { std::filesystem::remove(path_); }

  // Every packet at the same time unless the test moves the clock.
  SyntheticCaptureOptions still() {
    SyntheticCaptureOptions o;
    o.time_step = 0ns;
    return o;
  }

  void read(Monitor& m) {
    KafkaSessions sessions(ProgramSet::release(), {}, m);
    CaptureStats stats;
    std::string error;
    ASSERT_TRUE(read_capture_file(path_, {}, sessions, stats, error)) << error;
    m.session_totals(sessions.stats());
    m.capture_totals({stats.packets, stats.bytes, 0, 0});
  }

  std::string path_;
};

}  // namespace

TEST_F(MonitorTest, CountsTimesErrorsThrottlingAndClients) {
  {
    SyntheticCapture cap(path_, still());
    uint32_t c = cap.connect(make_endpoint("10.0.0.1", 40001), make_endpoint("10.0.0.9", 9092));
    cap.send(c, StreamSide::FromClient, api_versions_request(1, "app-1"));
    cap.send(c, StreamSide::FromServer, api_versions_response(1));
    cap.send(c, StreamSide::FromClient, describe_cluster_request(2));
    cap.advance_time(2ms);
    cap.send(c, StreamSide::FromServer, describe_cluster_response(2));
    cap.send(c, StreamSide::FromClient, delete_topics_request(3));
    cap.advance_time(300ms);
    cap.send(c, StreamSide::FromServer, delete_topics_response(3));
    cap.send(c, StreamSide::FromClient, fetch_request(4));
    cap.advance_time(600ms);
    cap.send(c, StreamSide::FromServer, fetch_response(4));
    cap.send(c, StreamSide::FromClient, heartbeat_request(5, "m", 3));
    cap.advance_time(40ms);
    cap.send(c, StreamSide::FromServer, heartbeat_response(5, "m", 3, 16));  // NOT_COORDINATOR
    cap.close(c);
  }
  Monitor m(ProgramSet::release());
  read(m);
  const std::string t = m.exposition();

  // Until DescribeCluster's answer names node 7, the broker is its address.
  EXPECT_EQ(series(t, R"(kwire_requests_total{api="ApiVersions",api_version="3",broker="10.0.0.9:9092"})"), 1) << t;
  EXPECT_EQ(series(t, R"(kwire_requests_total{api="DescribeCluster",api_version="0",broker="10.0.0.9:9092"})"), 1);
  EXPECT_EQ(series(t, R"(kwire_responses_total{api="DescribeCluster",api_version="0",broker="7"})"), 1);
  EXPECT_EQ(series(t, R"(kwire_requests_total{api="DeleteTopics",api_version="4",broker="7"})"), 1);
  EXPECT_EQ(series(t, R"(kwire_requests_total{api="Fetch",api_version="12",broker="7"})"), 1);
  EXPECT_EQ(series(t, R"(kwire_requests_total{api="StreamsGroupHeartbeat",api_version="1",broker="7"})"), 1);
  EXPECT_EQ(count_series(t, "kwire_requests_total"), 5u);
  EXPECT_EQ(count_series(t, "kwire_responses_total"), 5u);

  // DeleteTopics: 300 ms, in the (0.25, 0.5] bucket.
  EXPECT_EQ(series(t, R"(kwire_response_seconds_bucket{api="DeleteTopics",broker="7",le="0.25"})"), 0);
  EXPECT_EQ(series(t, R"(kwire_response_seconds_bucket{api="DeleteTopics",broker="7",le="0.5"})"), 1);
  EXPECT_NEAR(series(t, R"(kwire_response_seconds_sum{api="DeleteTopics",broker="7"})"), 0.3, 1e-9);
  EXPECT_NEAR(series(t, R"(kwire_response_seconds_sum{api="DescribeCluster",broker="7"})"), 0.002, 1e-9);
  EXPECT_EQ(series(t, R"(kwire_response_seconds_bucket{api="DescribeCluster",broker="7",le="0.001"})"), 0);
  EXPECT_EQ(series(t, R"(kwire_response_seconds_bucket{api="DescribeCluster",broker="7",le="0.0025"})"), 1);
  // The Fetch waited 600 ms of its 500 ms MaxWaitMs: a long-poll that ran
  // out, not service time.
  EXPECT_TRUE(std::isnan(series(t, R"(kwire_response_seconds_count{api="Fetch",broker="7"})")));
  EXPECT_NEAR(series(t, R"(kwire_long_poll_seconds_sum{api="Fetch",broker="7"})"), 0.6, 1e-9);
  EXPECT_EQ(series(t, R"(kwire_long_poll_seconds_bucket{api="Fetch",broker="7",le="0.5"})"), 0);
  EXPECT_EQ(series(t, R"(kwire_long_poll_seconds_bucket{api="Fetch",broker="7",le="1"})"), 1);
  EXPECT_EQ(series(t, R"(kwire_long_poll_expired_total{api="Fetch",broker="7"})"), 1);

  // Throttling: DeleteTopics' 250 ms, on the client the connection named last.
  EXPECT_EQ(series(t, R"(kwire_throttled_responses_total{api="DeleteTopics",broker="7",client_id="kwire-test"})"), 1);
  EXPECT_NEAR(series(t, R"(kwire_throttle_seconds_total{api="DeleteTopics",broker="7",client_id="kwire-test"})"), 0.25,
              1e-9);
  EXPECT_EQ(count_series(t, "kwire_throttled_responses_total"), 1u);

  // Errors: per topic (DeleteTopics' entry, Fetch's partition under its
  // topic) and top level (no topic); the zero codes are not errors.
  EXPECT_EQ(series(t, R"(kwire_errors_total{api="DeleteTopics",broker="7",client_id="kwire-test",code="UNKNOWN_TOPIC_OR_PARTITION",topic="orders"})"), 1) << t;
  EXPECT_EQ(series(t, R"(kwire_errors_total{api="Fetch",broker="7",client_id="kwire-test",code="NOT_LEADER_OR_FOLLOWER",topic="orders"})"), 1);
  EXPECT_EQ(series(t, R"(kwire_errors_total{api="StreamsGroupHeartbeat",broker="7",client_id="kwire-test",code="NOT_COORDINATOR",topic=""})"), 1);
  EXPECT_EQ(count_series(t, "kwire_errors_total"), 3u);

  // Clients: the id of each request, and what ApiVersions v3 announced.
  EXPECT_EQ(series(t, R"(kwire_client_info{client_id="app-1",software_name="kwire-test-client",software_version="1.2.3"})"), 1);
  EXPECT_EQ(series(t, R"(kwire_client_requests_total{api="ApiVersions",client_id="app-1"})"), 1);
  EXPECT_EQ(series(t, R"(kwire_client_requests_total{api="DeleteTopics",client_id="kwire-test"})"), 1);
  // Service time per client: DescribeCluster 2 ms + DeleteTopics 300 ms +
  // StreamsGroupHeartbeat 40 ms on kwire-test (the Fetch long-poll apart).
  double sum = 0, n = 0;
  for (const char* api : {"DescribeCluster", "DeleteTopics", "StreamsGroupHeartbeat"}) {
    sum += series(t, std::string(R"(kwire_client_response_seconds_total{api=")") + api + R"(",client_id="kwire-test"})");
    n += series(t, std::string(R"(kwire_client_responses_total{api=")") + api + R"(",client_id="kwire-test"})");
  }
  EXPECT_NEAR(sum, 0.342, 1e-9);
  EXPECT_EQ(n, 3);

  // Health: one Kafka connection that began in the capture, nothing left undecoded.
  EXPECT_EQ(series(t, "kwire_kafka_connections_total"), 1);
  EXPECT_EQ(series(t, "kwire_midstream_connections_total"), 0);
  EXPECT_EQ(count_series(t, "kwire_undecoded_messages_total"), 0u);
  EXPECT_EQ(series(t, "kwire_unanswered_requests_total"), 0);
  EXPECT_GT(series(t, "kwire_packets_total"), 10);
}

TEST_F(MonitorTest, UnansweredMidstreamAndUndecoded) {
  {
    SyntheticCapture cap(path_, still());
    ConnectOptions mid;
    mid.handshake = false;
    uint32_t c = cap.connect(make_endpoint("10.0.0.1", 40002), make_endpoint("10.0.0.9", 9092), mid);
    cap.send(c, StreamSide::FromClient, heartbeat_request(1, "m", 3));
    cap.send(c, StreamSide::FromServer, heartbeat_response(1, "m", 3));
    cap.send(c, StreamSide::FromServer, heartbeat_response(9, "m", 3));   // its request is not in the capture
    cap.send(c, StreamSide::FromClient, heartbeat_request(2, "m", 3));      // never answered
    cap.close(c);
  }
  Monitor m(ProgramSet::release());
  read(m);
  const std::string t = m.exposition();
  EXPECT_EQ(series(t, "kwire_midstream_connections_total"), 1) << t;
  EXPECT_EQ(series(t, "kwire_unanswered_requests_total"), 1);
  EXPECT_EQ(series(t, R"(kwire_undecoded_messages_total{reason="unmatched_response"})"), 1) << t;
  EXPECT_EQ(series(t, R"(kwire_requests_total{api="StreamsGroupHeartbeat",api_version="1",broker="10.0.0.9:9092"})"), 2);
  EXPECT_EQ(series(t, R"(kwire_responses_total{api="StreamsGroupHeartbeat",api_version="1",broker="10.0.0.9:9092"})"), 1);
}

// Five clients. With room for two client ids, the first two keep theirs
// and the other three are "other"; with room for three series per metric,
// the requests of the fourth and fifth are dropped and counted.
TEST_F(MonitorTest, LabelLimitsFoldIntoOtherAndSeriesLimitsDrop) {
  {
    SyntheticCapture cap(path_, still());
    for (int i = 0; i < 5; ++i) {
      uint32_t c = cap.connect(make_endpoint("10.0.0.1", static_cast<uint16_t>(41000 + i)), make_endpoint("10.0.0.9", 9092));
      cap.send(c, StreamSide::FromClient, api_versions_request(1, "client-" + std::to_string(i)));
      cap.send(c, StreamSide::FromServer, api_versions_response(1));
      cap.close(c);
    }
  }
  MonitorLimits few_ids;
  few_ids.client_ids = 2;
  Monitor m(ProgramSet::release(), few_ids);
  read(m);
  std::string t = m.exposition();
  EXPECT_EQ(series(t, R"(kwire_client_requests_total{api="ApiVersions",client_id="client-0"})"), 1) << t;
  EXPECT_EQ(series(t, R"(kwire_client_requests_total{api="ApiVersions",client_id="client-1"})"), 1);
  EXPECT_EQ(series(t, R"(kwire_client_requests_total{api="ApiVersions",client_id="other"})"), 3);
  EXPECT_EQ(count_series(t, "kwire_client_requests_total"), 3u);
  EXPECT_EQ(count_series(t, "kwire_client_info"), 3u);
  // The client id of client-2..4 is folded once for the request and once
  // for the response.
  EXPECT_EQ(series(t, R"(kwire_label_values_folded_total{label="client_id"})"), 3 * 2);
  EXPECT_EQ(series(t, R"(kwire_series_dropped_total{metric="kwire_client_requests"})"), 0);

  MonitorLimits few_series;
  few_series.series = 3;
  Monitor s3(ProgramSet::release(), few_series);
  read(s3);
  t = s3.exposition();
  EXPECT_EQ(count_series(t, "kwire_client_requests_total"), 3u) << t;
  EXPECT_TRUE(std::isnan(series(t, R"(kwire_client_requests_total{api="ApiVersions",client_id="client-3"})")));
  EXPECT_EQ(series(t, R"(kwire_series_dropped_total{metric="kwire_client_requests"})"), 2);
  EXPECT_EQ(series(t, R"(kwire_series_dropped_total{metric="kwire_client_info"})"), 2);
  EXPECT_EQ(series(t, R"(kwire_label_values_folded_total{label="client_id"})"), 0);
  // One series of all five requests: no limit reached.
  EXPECT_EQ(series(t, R"(kwire_requests_total{api="ApiVersions",api_version="3",broker="10.0.0.9:9092"})"), 5);
}

// A series not seen for the expiry time goes; one seen since stays.
TEST_F(MonitorTest, SeriesExpireByCaptureTime) {
  {
    SyntheticCapture cap(path_, still());
    uint32_t c = cap.connect(make_endpoint("10.0.0.1", 40003), make_endpoint("10.0.0.9", 9092));
    cap.send(c, StreamSide::FromClient, api_versions_request(1, "early"));
    cap.send(c, StreamSide::FromServer, api_versions_response(1));
    cap.advance_time(20s);
    cap.send(c, StreamSide::FromClient, heartbeat_request(2, "m", 3));
    cap.send(c, StreamSide::FromServer, heartbeat_response(2, "m", 3));
    cap.close(c);
  }
  MonitorLimits limits;
  limits.expire_seconds = 10;
  Monitor m(ProgramSet::release(), limits);
  read(m);
  m.expire(m.now());
  const std::string t = m.exposition();
  EXPECT_TRUE(std::isnan(series(t, R"(kwire_requests_total{api="ApiVersions",api_version="3",broker="10.0.0.9:9092"})"))) << t;
  EXPECT_EQ(series(t, R"(kwire_requests_total{api="StreamsGroupHeartbeat",api_version="1",broker="10.0.0.9:9092"})"), 1);
  EXPECT_EQ(count_series(t, "kwire_client_info"), 0u);
  // ApiVersions' requests, responses and response time series, and early's
  // client requests, responses, response time and info.
  EXPECT_EQ(series(t, "kwire_series_expired_total"), 7);
}

namespace {

// tshark's count of Kafka requests per api (named as kwire names the key),
// Kafka decoded on every port a connection opened to; with `keylog`, TLS on
// those ports decrypted first.
std::map<std::string, double> tshark_requests(const std::string& cap, const std::string& keylog = "") {
  std::string decode;
  for (const auto& port :
       lines(shell_output("tshark -r " + cap + " -Y 'tcp.flags.syn==1 && tcp.flags.ack==0' -T fields -e tcp.dstport"))) {
    if (port.empty() || decode.find("==" + port + ",") != std::string::npos) continue;
    decode += keylog.empty() ? " -d tcp.port==" + port + ",kafka"
                             : " -d tcp.port==" + port + ",tls -d tls.port==" + port + ",kafka";
  }
  if (!keylog.empty()) decode += " -o tls.keylog_file:" + keylog;
  std::map<std::string, double> n;
  for (const auto& line :
       lines(shell_output("tshark -n -r " + cap + decode + " -Y kafka.request_key -T fields -e kafka.request_key"))) {
    std::stringstream keys(line);
    std::string key;
    while (std::getline(keys, key, ',')) {
      const MessageProgram* m = ProgramSet::release().find_api(key);
      EXPECT_NE(m, nullptr) << cap << ": api key " << key;
      if (m) ++n[std::string(m->api_name)];
    }
  }
  return n;
}

// kwire_requests_total summed per api.
std::map<std::string, double> requests_per_api(const std::string& exposition) {
  std::map<std::string, double> n;
  const std::regex row(R"re(^kwire_requests_total\{api="([^"]+)",[^}]*\} (\S+)$)re");
  for (const auto& line : lines(exposition)) {
    std::smatch m;
    if (std::regex_match(line, m, row)) n[m[1]] += std::stod(m[2]);
  }
  return n;
}

double sum_of(const std::string& exposition, const std::string& name) {
  double n = 0;
  const std::regex row("^" + name + R"((\{[^}]*\})? (\S+)$)");
  for (const auto& line : lines(exposition)) {
    std::smatch m;
    if (std::regex_match(line, m, row)) n += std::stod(m[2]);
  }
  return n;
}

}  // namespace

// Every bundled capture: the requests per api that `kwire monitor --print`
// counts are the Kafka requests tshark finds per api key in the same file.
TEST(MonitorCapture, RequestsPerApiAgreeWithTshark) {
  for (const char* name : {"admin", "aged-records", "classic-consumer", "cluster", "demo", "go-clients", "old-client",
                           "other-clients", "plugin-failures", "share-group", "stateful", "topology-upgrade",
                           "txn-consumer"}) {
    const std::string cap = std::string(KWIRE_SOURCE_DIR) + "/captures/" + name + ".pcapng";
    const auto want = tshark_requests(cap);
    ASSERT_GT(want.size(), 5u) << name;
    auto r = kwire_cmd("monitor -r " + cap + " --print");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(requests_per_api(r.out), want) << name;
    // Every request is answered, or counted as unanswered.
    double requests = 0;
    for (const auto& [api, n] : want) requests += n;
    EXPECT_EQ(sum_of(r.out, "kwire_responses_total") + sum_of(r.out, "kwire_unanswered_requests_total"), requests)
        << name;
  }
}

// Over TLS: without keys, only the connections kwire could not read; with
// the clients' key log, the requests tshark finds decrypting with the same
// log.
TEST(MonitorCapture, TlsWithTheKeyLogCountsWhatTsharkDecrypts) {
  const std::string dir = std::string(KWIRE_SOURCE_DIR) + "/captures/tls/";
  const std::string cap = dir + "python-etm.pcapng", keys = dir + "python-etm.keys";
  const double hellos = static_cast<double>(
      lines(shell_output("tshark -n -r " + cap + " -Y 'tls.handshake.type == 1' -T fields -e frame.number")).size());
  ASSERT_GT(hellos, 0);

  auto plain = kwire_cmd("monitor -r " + cap + " --print");
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(series(plain.out, R"(kwire_tls_connections_total{state="not_decrypted"})"), hellos) << plain.out;
  EXPECT_TRUE(requests_per_api(plain.out).empty()) << plain.out;

  const auto want = tshark_requests(cap, keys);
  ASSERT_GT(want.size(), 5u);
  auto keyed = kwire_cmd("monitor -r " + cap + " --tls-keylog " + keys + " --print");
  ASSERT_EQ(keyed.status, 0) << keyed.err;
  EXPECT_EQ(requests_per_api(keyed.out), want);
  EXPECT_EQ(series(keyed.out, R"(kwire_tls_connections_total{state="decrypted"})"), hellos);
}

TEST(MonitorCli, UsageErrorsNameTheProblem) {
  const std::string demo = std::string(KWIRE_SOURCE_DIR) + "/captures/demo.pcapng";
  struct Case {
    std::string args, err;
  };
  const std::vector<Case> cases = {
      {"monitor --print", "kwire monitor: give one of -i IFACE or -r FILE\n"},
      {"monitor -r " + demo, "kwire monitor: give --listen ADDR:PORT (or, with -r, --print)\n"},
      {"monitor -i lo --print", "kwire monitor: --print works with -r FILE (a live capture has no end to print at)\n"},
      {"monitor -r " + demo + " --listen 9464",
       "kwire monitor: --listen takes ADDR:PORT (127.0.0.1:9464, [::1]:9464), not '9464'\n"},
      {"monitor -r " + demo + " --listen 127.0.0.1:99999",
       "kwire monitor: --listen takes ADDR:PORT (127.0.0.1:9464, [::1]:9464), not '127.0.0.1:99999'\n"},
  };
  for (const auto& c : cases) {
    auto r = kwire_cmd(c.args);
    EXPECT_EQ(WEXITSTATUS(r.status), 2) << c.args;
    EXPECT_EQ(r.err, c.err) << c.args;
  }
  // A port already taken: the address and what is wrong, before any packet is read.
  const int taken = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(taken, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(taken, 1), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(taken, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string where = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  auto busy = kwire_cmd("monitor -r " + demo + " --listen " + where);
  ::close(taken);
  EXPECT_EQ(WEXITSTATUS(busy.status), 2);
  EXPECT_TRUE(busy.err.starts_with("kwire monitor: cannot listen on " + where + " (the port is taken")) << busy.err;

  auto missing = kwire_cmd("monitor -r /nonexistent.pcap --print");
  EXPECT_EQ(WEXITSTATUS(missing.status), 1);
  EXPECT_NE(missing.err.find("/nonexistent.pcap"), std::string::npos) << missing.err;
}
