// `kwire decode` end to end: a capture written from hand-built frames, read
// back by the real binary, compared line by line.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include <nlohmann/json.hpp>

#include "recorder/pcap_writer.hpp"
#include "tests/test_support.hpp"

using namespace kwire;

namespace {

using test::kwire_cmd;
using test::lines;

class DecodeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("kwire-cli-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // One client session: two heartbeat rounds, a response whose request is
  // not in the capture, and a request cut off by the end of the capture.
  std::string write_session() {
    std::string path = (dir_ / "session.pcap").string();
    SyntheticCapture cap(path);
    auto client = make_endpoint("127.0.0.1", 50000);
    auto broker = make_endpoint("127.0.0.1", 9092);
    uint32_t c = cap.connect(client, broker);
    cap.send(c, StreamSide::FromClient, test::heartbeat_request(7, "m1", 0));
    cap.send(c, StreamSide::FromServer, test::heartbeat_response(7, "m1", 1));
    cap.send(c, StreamSide::FromClient, test::heartbeat_request(8, "m1", 1));
    cap.send(c, StreamSide::FromServer, test::heartbeat_response(8, "m1", 1, 132));  // STREAMS_TOPOLOGY_FENCED
    cap.send(c, StreamSide::FromServer, test::heartbeat_response(99, "m1", 1));      // never asked for
    auto cut = test::heartbeat_request(9, "m1", 1);
    cut.resize(cut.size() - 7);
    cap.send(c, StreamSide::FromClient, cut);
    cap.finish();
    // Packets: 1-3 the handshake, then one per message: 4-9.
    return path;
  }

  std::filesystem::path dir_;
};

}  // namespace

TEST_F(DecodeCli, SummaryLinesAndStats) {
  auto r = kwire_cmd("decode -r " + write_session() + " --stats");
  ASSERT_EQ(r.status, 0) << r.err;
  auto got = lines(r.out);
  std::vector<std::string> want = {
    "     4   0.000000 127.0.0.1:50000 \u2192 127.0.0.1:9092 StreamsGroupHeartbeat v1 Request corr=7 group=orders-app member=m1 epoch=0",
    "     5   0.001000 127.0.0.1:9092 \u2192 127.0.0.1:50000 StreamsGroupHeartbeat v1 Response corr=7 member=m1 epoch=1 error=NONE",
    "     6   0.002000 127.0.0.1:50000 \u2192 127.0.0.1:9092 StreamsGroupHeartbeat v1 Request corr=8 group=orders-app member=m1 epoch=1",
    "     7   0.003000 127.0.0.1:9092 \u2192 127.0.0.1:50000 StreamsGroupHeartbeat v1 Response corr=8 member=m1 epoch=1 error=STREAMS_TOPOLOGY_FENCED",
    "     8   0.004000 127.0.0.1:9092 \u2192 127.0.0.1:50000 Response corr=99 (unmatched: request not captured)",
    // Cut by the end of the capture: decoded as far as it goes.
    "     9   0.005000 127.0.0.1:50000 \u2192 127.0.0.1:9092 StreamsGroupHeartbeat v1 Request corr=9 group=orders-app member=m1 epoch=1 "
    "[malformed at offset 0: message truncated: size prefix says 60 bytes, the capture has 53 (the capture ends here)] "
    "[malformed at offset 57: ProcessId: length varint runs past the end]",
    "stats: frames=6 requests=3 responses=3 unmatched=1 malformed=1 resyncs=0 skipped_bytes=0 lost_bytes=0 "
    "unanswered=0 not_kafka=0 sasl_tokens=0 capture_errors=0 tls_connections=0 tls_undecrypted=0 tls_errors=0",
  };
  ASSERT_EQ(got.size(), want.size()) << r.out;
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "line " << i + 1;
}

TEST_F(DecodeCli, JsonLines) {
  auto r = kwire_cmd("decode -r " + write_session() + " -T json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto got = lines(r.out);
  ASSERT_EQ(got.size(), 6u);
  auto first = nlohmann::json::parse(got[0]);
  EXPECT_EQ(first["frame"], 4);    // after the three packets of the handshake
  EXPECT_EQ(first["message"], 1);
  EXPECT_EQ(nlohmann::json::parse(got[5])["frame"], 9);
  EXPECT_EQ(nlohmann::json::parse(got[5])["message"], 6);
  EXPECT_EQ(first["src"], "127.0.0.1:50000");
  EXPECT_EQ(first["dst"], "127.0.0.1:9092");
  EXPECT_EQ(first["direction"], "request");
  EXPECT_EQ(first["apiKey"], 88);
  EXPECT_EQ(first["apiVersion"], 1);
  EXPECT_EQ(first["apiName"], "StreamsGroupHeartbeat");
  EXPECT_EQ(first["correlationId"], 7);
  EXPECT_EQ(first["header"]["clientId"], "kwire-test");
  EXPECT_EQ(first["body"]["groupId"], "orders-app");
  EXPECT_EQ(first["body"]["memberEpoch"], 0);
  EXPECT_TRUE(first["body"]["topology"].is_null());
  EXPECT_TRUE(first["body"]["instanceId"].is_null());
  EXPECT_EQ(first["body"]["rebalanceTimeoutMs"], -1);
  EXPECT_FALSE(first.contains("error"));

  auto resp = nlohmann::json::parse(got[3]);
  EXPECT_EQ(resp["direction"], "response");
  EXPECT_EQ(resp["body"]["errorCode"], 132);
  EXPECT_EQ(resp["body"]["acceptableRecoveryLag"], 10000);
  EXPECT_EQ(resp["body"]["topologyDescriptionRequired"], true);

  auto cut = nlohmann::json::parse(got[5]);
  EXPECT_EQ(cut["error"]["offset"], 0);
  EXPECT_EQ(cut["error"]["reason"], "message truncated: size prefix says 60 bytes, the capture has 53 (the capture ends here)");
  EXPECT_EQ(cut["apiKey"], 88);
  EXPECT_EQ(cut["body"]["memberEpoch"], 1);  // what came before the cut is kept
}

TEST_F(DecodeCli, JsonLineIsExactlyKafkasFieldNamesAndValues) {
  auto r = kwire_cmd("decode -r " + write_session() + " -T json -c 2");
  auto got = lines(r.out);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0],
            "{\"frame\":4,\"message\":1,\"time\":1700000000.003000,\"src\":\"127.0.0.1:50000\",\"dst\":\"127.0.0.1:9092\","
            "\"direction\":\"request\",\"apiKey\":88,\"apiVersion\":1,\"apiName\":\"StreamsGroupHeartbeat\","
            "\"correlationId\":7,\"header\":{\"requestApiKey\":88,\"requestApiVersion\":1,\"correlationId\":7,"
            "\"clientId\":\"kwire-test\"},\"body\":{\"groupId\":\"orders-app\",\"memberId\":\"m1\",\"memberEpoch\":0,"
            "\"endpointInformationEpoch\":0,\"instanceId\":null,\"rackId\":null,\"rebalanceTimeoutMs\":-1,"
            "\"topology\":null,\"activeTasks\":null,\"standbyTasks\":null,\"warmupTasks\":null,\"processId\":null,"
            "\"userEndpoint\":null,\"clientTags\":null,\"taskOffsets\":null,\"taskEndOffsets\":null,"
            "\"shutdownApplication\":false}}");
  EXPECT_EQ(got[1],
            "{\"frame\":5,\"message\":2,\"time\":1700000000.004000,\"src\":\"127.0.0.1:9092\",\"dst\":\"127.0.0.1:50000\","
            "\"direction\":\"response\",\"apiKey\":88,\"apiVersion\":1,\"apiName\":\"StreamsGroupHeartbeat\","
            "\"correlationId\":7,\"header\":{\"correlationId\":7},\"body\":{\"throttleTimeMs\":0,\"errorCode\":0,"
            "\"errorMessage\":null,\"memberId\":\"m1\",\"memberEpoch\":1,\"heartbeatIntervalMs\":5000,"
            "\"taskOffsetIntervalMs\":30000,\"acceptableRecoveryLag\":10000,\"status\":null,\"activeTasks\":null,"
            "\"standbyTasks\":null,\"warmupTasks\":null,\"topologyDescriptionRequired\":true,"
            "\"endpointInformationEpoch\":0,\"partitionsByUserEndpoint\":null}}");
}

TEST_F(DecodeCli, FiltersAndTree) {
  std::string path = write_session();
  auto errors = kwire_cmd("decode -r " + path + " --errors");
  EXPECT_EQ(lines(errors.out).size(), 2u) << errors.out;  // the fenced response and the cut request

  auto limited = kwire_cmd("decode -r " + path + " -c 2 --api 88");
  EXPECT_EQ(lines(limited.out).size(), 2u);

  auto none = kwire_cmd("decode -r " + path + " --api DescribeTopicPartitions --stats");
  EXPECT_EQ(lines(none.out).size(), 1u);

  auto tree = kwire_cmd("decode -r " + path + " -V -c 1");
  EXPECT_NE(tree.out.find("    StreamsGroupHeartbeatRequest v1\n"), std::string::npos) << tree.out;
  EXPECT_NE(tree.out.find("      MemberId: \"m1\"\n"), std::string::npos) << tree.out;
  EXPECT_NE(tree.out.find("      Topology: null\n"), std::string::npos) << tree.out;
}

TEST_F(DecodeCli, CaptureCutMidPacketKeepsEverythingBefore) {
  std::string path = write_session();
  auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 30);
  auto r = kwire_cmd("decode -r " + path + " --stats");
  EXPECT_EQ(r.status, 256) << "exit status 1: the capture file is damaged";
  auto got = lines(r.out);
  ASSERT_GE(got.size(), 5u) << r.out;
  EXPECT_NE(got[3].find("STREAMS_TOPOLOGY_FENCED"), std::string::npos);
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  EXPECT_NE(got.back().find(" capture_errors=1"), std::string::npos) << got.back();
}

TEST_F(DecodeCli, ReadsStandardInputAndPrintsStatsAsJson) {
  auto r = kwire_cmd("decode -r - -T json --stats < " + write_session());
  ASSERT_EQ(r.status, 0) << r.err;
  auto got = lines(r.out);
  ASSERT_EQ(got.size(), 7u) << r.out;
  EXPECT_EQ(nlohmann::json::parse(got[0])["correlationId"], 7);
  auto stats = nlohmann::json::parse(got.back())["stats"];
  EXPECT_EQ(stats["frames"], 6);
  EXPECT_EQ(stats["unmatched"], 1);
  EXPECT_EQ(stats["malformed"], 1);
  EXPECT_EQ(stats["capture_errors"], 0);
}

TEST_F(DecodeCli, BadArgumentsSayWhatIsWrong) {
  auto missing = kwire_cmd("decode -r " + (dir_ / "nope.pcap").string());
  EXPECT_NE(missing.status, 0);
  EXPECT_NE(missing.err.find("nope.pcap"), std::string::npos) << missing.err;
  auto api = kwire_cmd("decode -r x --api NoSuchApi");
  EXPECT_NE(api.err.find("no API named NoSuchApi"), std::string::npos) << api.err;
  auto port = kwire_cmd("decode -r x -p 9092,abc");
  EXPECT_NE(port.err.find("bad port 'abc'"), std::string::npos) << port.err;
}

TEST(DecodeCliApi, NamesInAnyCase) {
  const std::string demo = std::string(KWIRE_SOURCE_DIR) + "/captures/demo.pcapng";
  auto exact = kwire_cmd("decode -r " + demo + " --api Fetch,StreamsGroupHeartbeat");
  auto lower = kwire_cmd("decode -r " + demo + " --api fetch,streamsgroupheartbeat");
  ASSERT_EQ(exact.status, 0) << exact.err;
  ASSERT_EQ(lower.status, 0) << lower.err;
  EXPECT_FALSE(exact.out.empty());
  EXPECT_EQ(lower.out, exact.out);
  EXPECT_EQ(kwire_cmd("decode -r " + demo + " --api FETCH").out, kwire_cmd("decode -r " + demo + " --api 1").out);
}

TEST(SpecsCli, ListsEveryApiAndShowsLayouts) {
  auto list = kwire_cmd("specs");
  ASSERT_EQ(list.status, 0);
  EXPECT_NE(list.out.find("88   StreamsGroupHeartbeat"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("93   StreamsGroupTopologyDescriptionUpdate"), std::string::npos);
  EXPECT_NE(list.out.find("95 APIs."), std::string::npos);
  EXPECT_NE(list.out.find("0    Produce                                      0-13      kafka 4.4.0; v0-2 from kafka 3.9.1"),
            std::string::npos);
  auto layout = kwire_cmd("specs StreamsGroupHeartbeatResponse -v 1");
  ASSERT_EQ(layout.status, 0);
  auto ls = lines(layout.out);
  bool found = false;
  for (const auto& l : ls)
    if (l.find("AcceptableRecoveryLag ") != std::string::npos) {
      found = true;
      EXPECT_NE(l.find("int64"), std::string::npos) << l;
      EXPECT_NE(l.find(" 8 "), std::string::npos) << l;
    }
  EXPECT_TRUE(found) << layout.out;
  auto v0 = kwire_cmd("specs StreamsGroupHeartbeatResponse -v 0");
  EXPECT_NE(v0.out.find("AcceptableRecoveryLagLegacy"), std::string::npos);
  EXPECT_EQ(v0.out.find("AcceptableRecoveryLag "), std::string::npos);
}

// The layout's columns line up however long the paths get: every row's type
// starts where the header's "type" does, and so on, and no line ends in blanks.
TEST(SpecsCli, LayoutColumnsStayAlignedForLongPaths) {
  auto layout = kwire_cmd("specs StreamsGroupDescribeResponse -v 1");
  ASSERT_EQ(layout.status, 0) << layout.err;
  auto ls = lines(layout.out);
  ASSERT_GT(ls.size(), 3u);
  const std::string& head = ls[2];
  ASSERT_EQ(head.rfind("  field ", 0), 0u) << head;
  const size_t type_col = head.find("type"), size_col = head.find("size"), vers_col = head.find("versions");
  size_t rows = 0;
  bool long_path = false;
  for (size_t i = 3; i < ls.size(); ++i) {
    const std::string& l = ls[i];
    ASSERT_NE(l.back(), ' ') << l;
    // A path has no blanks, "<tagged fields>" has one.
    const size_t path_end = l.find(' ', l.rfind("<tagged fields>") != std::string::npos ? l.find('>') : 2);
    long_path |= path_end - 2 > 52;
    EXPECT_LT(path_end, type_col) << l;
    EXPECT_NE(l[type_col], ' ') << l;
    EXPECT_EQ(l[type_col - 1], ' ') << l;
    EXPECT_EQ(l[size_col - 1], ' ') << l;
    EXPECT_NE(l[size_col], ' ') << l;
    if (l.size() > vers_col) { EXPECT_EQ(l[vers_col - 1], ' ') << l; }
    ++rows;
  }
  EXPECT_TRUE(long_path) << "the layout should have paths longer than the old fixed column";
  EXPECT_GT(rows, 40u);
  EXPECT_NE(layout.out.find("Groups.Topology.Subtopologies.StateChangelogTopics.TopicConfigs.Key"), std::string::npos);
}

// Every command's --help names every option the command takes (the lists
// are the options each command's parser accepts) and exits 0.
TEST(HelpCli, EveryCommandListsEveryOption) {
  const std::vector<std::string> spec_and_help = {"--overlay", "--spec-dir", "-h, --help"};
  const std::vector<std::string> output = {"-V", "-T", "--api", "--errors", "--stats", "--api-table", "--latency"};
  std::map<std::string, std::vector<std::string>> options = {
      {"decode", {"-r", "-p", "-f", "-c", "--guess"}},
      {"record", {"-i", "-r", "-w", "-p", "-f", "--auto", "-s", "-B", "--batch-ms", "--immediate-mode", "-c", "-a",
                  "-C", "-G", "-W", "--annotate", "--redact-sasl", "--decode", "-q", "-D"}},
      {"replay", {"-r", "--target", "--map", "--timing", "--speed", "--timeout", "--reconnect-timeout", "--api",
                  "--group", "--conn", "--rename-group", "--rename-topic", "--setup", "--ignore",
                  "--no-default-ignores", "--expect", "--list-rules", "--report", "--junit", "--record-out",
                  "--script", "--sasl-plain", "--sasl-scram-256", "--sasl-scram-512", "--sasl-oauthbearer", "--tls",
                  "--tls-ca", "--tls-cert", "--tls-key", "--tls-server-name", "--tls-insecure"}},
      {"specs", {"--versions", "-v"}},
      {"latency", {"-r", "-p", "-f", "-T", "--api", "-Y", "--top", "--guess"}},
      {"streams", {"-r", "-p", "-f", "-T", "-Y", "--html", "--dot"}},
      {"monitor", {"-i", "-r", "-p", "-f", "--auto", "--tls-keylog", "-s", "-B", "--batch-ms", "--immediate-mode",
                   "--listen", "--print", "--max-client-ids", "--max-topics", "--max-brokers", "--max-series",
                   "--expire"}},
  };
  for (auto& [cmd, list] : options) {
    list.insert(list.end(), spec_and_help.begin(), spec_and_help.end());
    if (cmd == "decode" || cmd == "record") list.insert(list.end(), output.begin(), output.end());
    for (const char* flag : {" --help", " -h"}) {
      auto r = kwire_cmd(cmd + flag);
      ASSERT_EQ(r.status, 0) << cmd << flag << r.err;
      for (const auto& o : list) {
        const std::regex named("(^|[\\s\\[(,])" + std::regex_replace(o, std::regex("[-,]"), "\\$&") + "([\\s,=]|$)");
        EXPECT_TRUE(std::regex_search(r.out, named)) << "kwire " << cmd << " --help does not list " << o << "\n" << r.out;
      }
    }
  }
  auto top = kwire_cmd("--help");
  for (const char* cmd : {"decode", "record", "monitor", "replay", "specs", "latency", "streams"}) EXPECT_NE(top.out.find(std::string("  ") + cmd + " "), std::string::npos) << cmd;
}

TEST(DemoCapture, RealBrokerTrafficDecodesCompletely) {
  // captures/demo.pcapng: Kafka 4.4.0 broker and Kafka Streams client on loopback.
  auto r = kwire_cmd(std::string("decode -r ") + KWIRE_SOURCE_DIR + "/captures/demo.pcapng --stats --api-table -c 0");
  ASSERT_EQ(r.status, 0) << r.err;
  auto got = lines(r.out);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.back(), "stats: frames=206 requests=103 responses=103 unmatched=0 malformed=0 resyncs=0 skipped_bytes=0 "
                        "lost_bytes=0 unanswered=0 not_kafka=0 sasl_tokens=0 capture_errors=0 tls_connections=0 "
                        "tls_undecrypted=0 tls_errors=0");
  for (const char* row : {"88   StreamsGroupHeartbeat                    1        request   13",
                          "89   StreamsGroupDescribe                     1        response  2",
                          "93   StreamsGroupTopologyDescriptionUpdate    0        response  1",
                          "75   DescribeTopicPartitions                  0        response  1",
                          "42   DeleteGroups                             3        response  1"})
    EXPECT_NE(r.out.find(row), std::string::npos) << row;

  auto describe = kwire_cmd(std::string("decode -r ") + KWIRE_SOURCE_DIR + "/captures/demo.pcapng --api 89 -T json");
  auto frames = lines(describe.out);
  ASSERT_EQ(frames.size(), 4u);
  auto live = nlohmann::json::parse(frames[1]);
  const auto& group = live["body"]["groups"][0];
  EXPECT_EQ(group["groupId"], "orders-app");
  EXPECT_EQ(group["groupState"], "Stable");
  EXPECT_EQ(group["topologyDescriptionStatus"], 3);
  EXPECT_EQ(group["assignorName"], "sticky");
  const auto& nodes = group["topologyDescription"]["subtopologies"][0]["nodes"];
  ASSERT_EQ(nodes.size(), 3u);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& n : nodes) by_name[n["name"]] = n;
  EXPECT_EQ(by_name["KSTREAM-SOURCE-0000000000"]["sourceTopics"][0], "orders");
  EXPECT_EQ(by_name["KSTREAM-SOURCE-0000000000"]["successors"][0], "KSTREAM-FILTER-0000000001");
  EXPECT_EQ(by_name["KSTREAM-FILTER-0000000001"]["successors"][0], "KSTREAM-SINK-0000000002");
  EXPECT_EQ(by_name["KSTREAM-SINK-0000000002"]["sinkTopic"], "valid-orders");
  EXPECT_EQ(by_name["KSTREAM-SINK-0000000002"]["nodeType"], 3);
}
