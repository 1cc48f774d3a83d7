// Display filters (-Y) and field extraction (-T fields) over the committed
// captures. What each filter must select is computed here from the real
// binary's `kwire decode -T json` output with a hand-written predicate over
// the JSON, independently of the filter's compiler and its walk over the
// node tape; the filter runs in process (dissector/filter) and through the
// command line.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dissector/filter/filter.hpp"
#include "dissector/protocol/session.hpp"
#include "pipeline/capture_file.hpp"
#include "recorder/capture.hpp"
#include "replay/recording.hpp"
#include "tests/test_support.hpp"

using nlohmann::json;
using namespace kwire;

namespace {

std::string capture(const std::string& name) { return std::string(KWIRE_SOURCE_DIR) + "/captures/" + name; }

// All messages of a capture as `kwire decode -T json` prints them.
const std::vector<json>& messages(const std::string& name) {
  static std::map<std::string, std::vector<json>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  auto r = test::kwire_cmd("decode -r " + capture(name) + " -T json");
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<json> out;
  for (const auto& l : test::lines(r.out)) {
    json j = json::parse(l);
    if (j.contains("message")) out.push_back(std::move(j));
  }
  return cache[name] = std::move(out);
}

// The request each response answers, by the JSON alone: the latest earlier
// request of the opposite direction of the same connection with its
// correlation id.
std::map<uint64_t, const json*> requests_of(const std::vector<json>& all) {
  std::map<uint64_t, const json*> out;
  std::map<std::tuple<std::string, std::string, int64_t>, const json*> open;
  for (const auto& m : all) {
    if (m.contains("notKafka")) continue;
    if (m["direction"] == "request") {
      open[{m["src"], m["dst"], m["correlationId"]}] = &m;
    } else if (!m.contains("unmatched")) {
      auto it = open.find({m["dst"], m["src"], m["correlationId"]});
      if (it != open.end()) { out[m["message"]] = it->second; open.erase(it); }
    }
  }
  return out;
}

// Values at a dotted JSON path; arrays on the way (and at the end) mean any element.
void collect(const json& j, const std::vector<std::string>& parts, size_t k, std::vector<json>& out, bool expand_leaf) {
  if (j.is_array()) {
    if (k == parts.size() && !expand_leaf) { out.push_back(j); return; }
    for (const auto& e : j) collect(e, parts, k, out, expand_leaf);
    return;
  }
  if (k == parts.size()) { out.push_back(j); return; }
  if (!j.is_object() || !j.contains(parts[k])) return;
  collect(j[parts[k]], parts, k + 1, out, expand_leaf);
}
std::vector<json> vals(const json& j, const std::string& path, bool expand_leaf = true) {
  std::vector<std::string> parts;
  std::stringstream in(path);
  std::string p;
  while (std::getline(in, p, '.')) parts.push_back(p);
  std::vector<json> out;
  if (!parts.empty() && parts[0] == "body" && j["body"].is_null()) return out;
  collect(j, parts, 0, out, expand_leaf);
  return out;
}
bool any(const json& j, const std::string& path, const std::function<bool(const json&)>& pred) {
  for (const auto& v : vals(j, path)) if (pred(v)) return true;
  return false;
}
bool present(const json& j, const std::string& path) {
  for (const auto& v : vals(j, path, false)) if (!v.is_null()) return true;
  return false;
}
// Any error code in the message: fields named like Kafka's error code fields.
bool json_error_code(const json& j) {
  if (j.is_array()) { for (const auto& e : j) if (json_error_code(e)) return true; return false; }
  if (!j.is_object()) return false;
  for (const auto& [k, v] : j.items()) {
    const bool code = k == "errorCode" || (k.size() > 9 && k.compare(k.size() - 9, 9, "ErrorCode") == 0);
    if (code && v.is_number_integer() && v.get<int64_t>() != 0) return true;
    if (json_error_code(v)) return true;
  }
  return false;
}

using Pred = std::function<bool(const json& m, const json* request)>;
struct Case {
  std::string capture;
  std::string expr;
  Pred pred;
  size_t at_least = 1;   // the scenario must give the filter something to select
};

// Runs many filters over one capture in one pass, as kwire decode does.
class Collector : public FrameHandler {
 public:
  explicit Collector(std::vector<filter::FilterSelector>& sel) : sel_(sel), got(sel.size()) {}
  void on_frame(const FrameContext& ctx, const Frame& f) override {
    for (size_t i = 0; i < sel_.size(); ++i)
      if (sel_[i].select(ctx, f)) got[i].push_back(ctx.number);
  }
  void on_skip(const FrameContext&, uint64_t, const std::string&) override {}
  void on_capture_error(const PacketMeta&, const std::string&, const std::string&) override {}
  void on_connection_end(const TcpConnection& c) override {
    for (auto& s : sel_) s.connection_end(c.id);
  }
  std::vector<filter::FilterSelector>& sel_;
  std::vector<std::vector<uint64_t>> got;
};

std::vector<std::vector<uint64_t>> run_filters(const std::string& cap, const std::vector<const filter::Filter*>& fs) {
  std::vector<filter::FilterSelector> sel;
  for (const auto* f : fs) sel.emplace_back(*f);
  Collector c(sel);
  KafkaSessions sessions(ProgramSet::release(), SessionOptions{}, c);
  CaptureStats stats;
  std::string error;
  EXPECT_TRUE(read_capture_file(capture(cap), CaptureOptions{}, sessions, stats, error)) << error;
  for (auto& s : sel) EXPECT_EQ(s.remembered(), 0u) << "requests held after every connection ended";
  return c.got;
}

std::vector<uint64_t> expected(const std::string& cap, const Pred& pred) {
  const auto& all = messages(cap);
  auto req = requests_of(all);
  std::vector<uint64_t> out;
  for (const auto& m : all) {
    auto it = req.find(m["message"]);
    const json* r = m["direction"] == "request" ? &m : it == req.end() ? nullptr : it->second;
    if (pred(m, r)) out.push_back(m["message"]);
  }
  return out;
}

int64_t num(const json& v) { return v.is_number_integer() ? v.get<int64_t>() : INT64_MIN; }

const std::vector<Case>& cases() {
  static const std::vector<Case> k = {
      // Top-level fields, every comparison.
      {"demo.pcapng", "apiName == StreamsGroupHeartbeat",
       [](const json& m, const json*) { return m["apiName"] == "StreamsGroupHeartbeat"; }},
      {"demo.pcapng", "apiName == streamsgroupheartbeat && direction == response",
       [](const json& m, const json*) { return m["apiName"] == "StreamsGroupHeartbeat" && m["direction"] == "response"; }},
      {"demo.pcapng", "apiKey == 3", [](const json& m, const json*) { return num(m["apiKey"]) == 3; }},
      {"demo.pcapng", "apiKey == Metadata", [](const json& m, const json*) { return num(m["apiKey"]) == 3; }},
      {"demo.pcapng", "apiKey != 3",
       [](const json& m, const json*) { return !m["apiKey"].is_null() && num(m["apiKey"]) != 3; }},
      {"demo.pcapng", "apiKey < 3", [](const json& m, const json*) { return !m["apiKey"].is_null() && num(m["apiKey"]) < 3; }},
      {"demo.pcapng", "apiKey <= 3", [](const json& m, const json*) { return !m["apiKey"].is_null() && num(m["apiKey"]) <= 3; }},
      {"demo.pcapng", "apiKey gt 60", [](const json& m, const json*) { return !m["apiKey"].is_null() && num(m["apiKey"]) > 60; }},
      {"demo.pcapng", "apiKey >= 88 and apiVersion ge 1",
       [](const json& m, const json*) { return !m["apiKey"].is_null() && num(m["apiKey"]) >= 88 && num(m["apiVersion"]) >= 1; }},
      {"demo.pcapng", "apiKey in {0 1 3}",
       [](const json& m, const json*) { auto k = num(m["apiKey"]); return k == 0 || k == 1 || k == 3; }},
      {"demo.pcapng", "apiKey in {Fetch, 18..19}",
       [](const json& m, const json*) { auto k = num(m["apiKey"]); return k == 1 || k == 18 || k == 19; }},
      {"demo.pcapng", "apiName contains \"Group\" && !(apiName matches \"^Streams\")",
       [](const json& m, const json*) {
         if (!m["apiName"].is_string()) return false;
         std::string n = m["apiName"];
         return n.find("Group") != std::string::npos && n.rfind("Streams", 0) != 0;
       }},
      {"demo.pcapng", "apiName matches \"(?i)^streamsgroup(describe|heartbeat)$\"",
       [](const json& m, const json*) { return m["apiName"] == "StreamsGroupDescribe" || m["apiName"] == "StreamsGroupHeartbeat"; }},
      {"demo.pcapng", "correlationId < 5 or correlationId > 300",
       [](const json& m, const json*) { return num(m["correlationId"]) < 5 || num(m["correlationId"]) > 300; }},
      {"demo.pcapng", "frame <= 40 && direction == request",
       [](const json& m, const json*) { return num(m["frame"]) <= 40 && m["direction"] == "request"; }},
      {"demo.pcapng", "not direction == request", [](const json& m, const json*) { return m["direction"] == "response"; }},
      {"demo.pcapng", "header.clientId contains \"admin\"",
       [](const json& m, const json*) { return any(m, "header.clientId", [](const json& v) { return v.is_string() && v.get<std::string>().find("admin") != std::string::npos; }); }},
      {"demo.pcapng", "body.userEndpoint == null && direction == request",
       [](const json& m, const json*) {
         if (m["direction"] != "request") return false;
         for (const auto& v : vals(m, "body.userEndpoint", false)) if (v.is_null()) return true;
         return false;
       }},
      // Body fields, through arrays, enums and error names.
      {"demo.pcapng", "body.memberEpoch > 0",
       [](const json& m, const json*) { return any(m, "body.memberEpoch", [](const json& v) { return num(v) > 0; }); }},
      {"demo.pcapng", "body.topology", [](const json& m, const json*) { return present(m, "body.topology"); }},
      {"demo.pcapng", "body.topology == null",
       [](const json& m, const json*) { for (const auto& v : vals(m, "body.topology", false)) if (v.is_null()) return true; return false; }},
      {"demo.pcapng", "body.topology.subtopologies.sourceTopics contains \"orders\"",
       [](const json& m, const json*) { return any(m, "body.topology.subtopologies.sourceTopics", [](const json& v) { return v.get<std::string>().find("orders") != std::string::npos; }); }},
      {"topology-upgrade.pcapng", "body.topics.name == \"__consumer_offsets\" || body.topics.name matches \"-changelog$\"",
       [](const json& m, const json*) {
         return any(m, "body.topics.name", [](const json& v) {
           if (!v.is_string()) return false;
           std::string s = v;
           return s == "__consumer_offsets" || (s.size() >= 10 && s.compare(s.size() - 10, 10, "-changelog") == 0);
         });
       }},
      {"demo.pcapng", "body.errorCode == NONE && apiName == StreamsGroupHeartbeat",
       [](const json& m, const json*) { return m["apiName"] == "StreamsGroupHeartbeat" && any(m, "body.errorCode", [](const json& v) { return num(v) == 0; }); }},
      {"demo.pcapng", "body.errorCode != 0",
       [](const json& m, const json*) { auto v = vals(m, "body.errorCode"); return !v.empty() && std::all_of(v.begin(), v.end(), [](const json& x) { return num(x) != 0; }); }},
      {"demo.pcapng", "error", [](const json& m, const json*) { return m.contains("error") || json_error_code(m["body"]); }},
      {"demo.pcapng", "!malformed", [](const json& m, const json*) { return !m.contains("error"); }},
      {"topology-upgrade.pcapng", "body.status.statusCode == STALE_TOPOLOGY",
       [](const json& m, const json*) { return m["apiName"] == "StreamsGroupHeartbeat" && any(m, "body.status.statusCode", [](const json& v) { return num(v) == 0; }); }},
      {"topology-upgrade.pcapng", "error",
       [](const json& m, const json*) { return m.contains("error") || json_error_code(m["body"]); }},
      // Codes from specs/kafka/errors.tsv (Kafka's Errors enum): 14, 15, 42, 135.
      {"plugin-failures.pcapng", "body.errorCode in {STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED invalid_request 14..15}",
       [](const json& m, const json*) { return any(m, "body.errorCode", [](const json& v) { auto c = num(v); return c == 135 || c == 42 || c == 14 || c == 15; }); }},
      {"plugin-failures.pcapng", "body.coordinators.errorCode == COORDINATOR_NOT_AVAILABLE",
       [](const json& m, const json*) { return any(m, "body.coordinators.errorCode", [](const json& v) { return num(v) == 15; }); }},
      {"admin.pcapng", "body.groups.topology.subtopologies",
       [](const json& m, const json*) { return present(m, "body.groups.topology.subtopologies"); }},
      {"admin.pcapng", "error", [](const json& m, const json*) { return m.contains("error") || json_error_code(m["body"]); }},
      {"admin.pcapng", "apiName == DeleteGroups && body.results.errorCode != NONE",
       [](const json& m, const json*) {
         auto v = vals(m, "body.results.errorCode");
         return m["apiName"] == "DeleteGroups" && !v.empty() && std::all_of(v.begin(), v.end(), [](const json& x) { return num(x) != 0; });
       }},
      {"txn-consumer.pcapng", "body.responses.partitions.records.records.value contains \"\"",
       [](const json& m, const json*) { return !vals(m, "body.responses.partitions.records.records.value").empty() &&
                                               any(m, "body.responses.partitions.records.records.value", [](const json& v) { return v.is_string(); }); }},
      {"txn-consumer.pcapng", "body.transactionalId",
       [](const json& m, const json*) { return present(m, "body.transactionalId"); }},
      // Responses by their request.
      {"demo.pcapng", "request.header.clientId contains \"admin\" && direction == response",
       [](const json& m, const json* r) {
         return m["direction"] == "response" && r && any(*r, "header.clientId", [](const json& v) { return v.is_string() && v.get<std::string>().find("admin") != std::string::npos; });
       }},
      {"demo.pcapng", "request.body.memberEpoch == 0",
       [](const json&, const json* r) { return r && any(*r, "body.memberEpoch", [](const json& v) { return num(v) == 0; }); }},
      {"stateful.pcapng", "request.body.groupId == \"stateful-app\" || request.frame < 20",
       [](const json&, const json* r) {
         return r && (any(*r, "body.groupId", [](const json& v) { return v == "stateful-app"; }) || num((*r)["frame"]) < 20);
       }},
      {"stateful.pcapng", "apiName == StreamsGroupHeartbeat && !request.body.activeTasks",
       [](const json& m, const json* r) { return m["apiName"] == "StreamsGroupHeartbeat" && !(r && present(*r, "body.activeTasks")); }},
  };
  return k;
}

}  // namespace

TEST(Filter, SelectsWhatTheJsonSays) {
  const auto& ps = ProgramSet::release();
  std::map<std::string, std::vector<size_t>> by_capture;
  for (size_t i = 0; i < cases().size(); ++i) by_capture[cases()[i].capture].push_back(i);
  for (const auto& [cap, idx] : by_capture) {
    std::vector<filter::Filter> filters;
    for (size_t i : idx) {
      filter::CompileError err;
      auto f = filter::Filter::compile(cases()[i].expr, ps, err);
      ASSERT_TRUE(f) << err.format();
      filters.push_back(std::move(*f));
    }
    std::vector<const filter::Filter*> ptrs;
    for (const auto& f : filters) ptrs.push_back(&f);
    auto got = run_filters(cap, ptrs);
    for (size_t n = 0; n < idx.size(); ++n) {
      const Case& c = cases()[idx[n]];
      auto want = expected(cap, c.pred);
      EXPECT_EQ(got[n], want) << cap << ": " << c.expr;
      EXPECT_GE(want.size(), c.at_least) << cap << ": " << c.expr << " selects nothing here";
    }
  }
}

// -Y through kwire decode selects the same messages, in -T json and in text.
TEST(Filter, DecodeCommandLine) {
  const std::string expr = "apiName == StreamsGroupHeartbeat && (body.memberEpoch >= 2 || request.body.memberEpoch == 0)";
  auto want = expected("demo.pcapng", [](const json& m, const json* r) {
    return m["apiName"] == "StreamsGroupHeartbeat" &&
           (any(m, "body.memberEpoch", [](const json& v) { return num(v) >= 2; }) ||
            (r && any(*r, "body.memberEpoch", [](const json& v) { return num(v) == 0; })));
  });
  ASSERT_FALSE(want.empty());
  auto r = test::kwire_cmd("decode -r " + capture("demo.pcapng") + " -T json -Y '" + expr + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<uint64_t> got;
  for (const auto& l : test::lines(r.out)) got.push_back(json::parse(l)["message"]);
  EXPECT_EQ(got, want);
  auto t = test::kwire_cmd("decode -r " + capture("demo.pcapng") + " -Y '" + expr + "' -c 3");
  EXPECT_EQ(test::lines(t.out).size(), 3u);
  // A filter that selects nothing prints nothing, and says nothing on stderr.
  auto none = test::kwire_cmd("decode -r " + capture("demo.pcapng") + " -Y 'apiKey == 9999'");
  EXPECT_EQ(none.status, 0);
  EXPECT_EQ(none.out, "");
  EXPECT_EQ(none.err, "");
  // kwire record --decode -r prints the same selection, numbered by order.
  auto out = std::filesystem::temp_directory_path() / ("kwire-filter-" + std::to_string(::getpid()) + ".pcapng");
  auto rec = test::kwire_cmd("record -r " + capture("demo.pcapng") + " -w " + out.string() + " -q --auto --decode -T json -Y '" + expr + "'");
  std::filesystem::remove(out);
  ASSERT_EQ(rec.status, 0) << rec.err;
  got.clear();
  for (const auto& l : test::lines(rec.out)) got.push_back(json::parse(l)["message"]);
  EXPECT_EQ(got, want);
}

// Bad expressions: the message, the column of the caret, and the hint.
TEST(Filter, CompileErrors) {
  const auto& ps = ProgramSet::release();
  struct Bad { std::string expr; size_t column; std::string message; std::string hint; };
  const std::vector<Bad> bad = {
      {"", 0, "empty filter", ""},
      {"apiName ==", 10, "expected a value after == at the end of the filter", ""},
      {"apiName == Fetch &&", 19, "expected a field path, error, malformed or ( at the end", ""},
      {"(apiKey == 1", 12, "expected ) to close the ( at column 1", ""},
      {"apiKey == 1 apiKey", 12, "expected && (and), || (or) or the end", ""},
      {"apiName == \"Fetch", 11, "unterminated string", ""},
      {"apiKey == 1 # 2", 12, "unexpected character '#'", ""},
      {"apiKey == 12abc", 10, "bad number", ""},
      {"bodyy.groupId == \"x\"", 0, "unknown path 'bodyy.groupId'", "a path starts with one of: frame, message"},
      {"apiName == StreamsGroupHeartbeat && body.grupId == \"x\"", 36, "unknown path 'body.grupId': no message has it",
       "paths of StreamsGroupHeartbeat requests (all versions):\n  body.groupId\n  body.memberId"},
      {"body.grupId == \"x\"", 0, "unknown path 'body.grupId'", "'kwire specs NAME' lists an api's fields"},
      // A path other apis have, but not the one every match must be.
      {"apiKey == StreamsGroupHeartbeat && body.coordinatorKeys", 35,
       "unknown path 'body.coordinatorKeys': no StreamsGroupHeartbeat message has it",
       "paths of StreamsGroupHeartbeat responses (all versions):\n  body.throttleTimeMs"},
      {"apiName == Fecth", 11, "no API named Fecth", ""},
      {"apiKey == Fecth", 10, "no API named Fecth", ""},
      {"direction == sideways", 13, "direction is request or response, not sideways", ""},
      {"body.errorCode == NO_SUCH_ERROR", 18, "'NO_SUCH_ERROR' is not a value of body.errorCode: it takes an error code name", ""},
      {"body.topology == 3", 0, "body.topology is a struct or array of structs", ""},
      {"body.memberEpoch < null", 19, "null compares only with == and !=", ""},
      {"apiName matches \"(\"", 16, "bad regular expression", ""},
      {"apiKey contains \"1\"", 0, "apiKey is not a string", ""},
      {"apiKey in 1", 10, "expected { after in", ""},
      {"apiKey in {1 2", 14, "expected } to close the { at column 11", ""},
      {"apiKey in {}", 10, "empty set", ""},
      {"error == 1", 0, "error is a shorthand that takes no operator", ""},
      {"apiName contains 5", 17, "contains needs a string", ""},
  };
  for (const auto& b : bad) {
    filter::CompileError err;
    auto f = filter::Filter::compile(b.expr, ps, err);
    ASSERT_FALSE(f) << b.expr;
    EXPECT_EQ(err.column, b.column) << b.expr << ": " << err.message;
    EXPECT_NE(err.message.find(b.message), std::string::npos) << b.expr << ": " << err.message;
    EXPECT_NE(err.hint.find(b.hint), std::string::npos) << b.expr << ": " << err.hint;
    // The rendering: the expression, then a caret under the column.
    EXPECT_EQ(err.format().rfind(err.message + " (column " + std::to_string(b.column + 1) + ")\n  " + b.expr + "\n  " +
                                     std::string(b.column, ' ') + "^", 0), 0u) << err.format();
  }
  // The listing holds every body path of the named api's spec, both directions.
  filter::CompileError err;
  ASSERT_FALSE(filter::Filter::compile("apiKey == 88 && body.nope", ps, err));
  for (const char* p : {"body.topology.subtopologies.sourceTopics", "body.memberEpoch", "body.status.statusCode",
                        "body.activeTasks.partitions", "body.heartbeatIntervalMs"})
    EXPECT_NE(err.hint.find(std::string("  ") + p + "\n"), std::string::npos) << p << "\n" << err.hint;
  // Under || the path may belong to the other side: fine.
  EXPECT_TRUE(filter::Filter::compile("apiKey == 88 || body.coordinatorKeys", ps, err)) << err.format();
  // Anywhere under the and-chain that fixes the api, such a path is a mistake.
  EXPECT_FALSE(filter::Filter::compile("apiKey == 88 && (body.memberEpoch || !body.coordinatorKeys)", ps, err));
  // On the command line: exit status 2, the caret on stderr.
  auto r = test::kwire_cmd("decode -r " + capture("demo.pcapng") + " -Y 'apiKey == 1 ||'");
  EXPECT_EQ(WEXITSTATUS(r.status), 2);
  EXPECT_NE(r.err.find("kwire decode: -Y: expected a field path"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\n  apiKey == 1 ||\n                ^"), std::string::npos) << r.err;
}

// -T fields: the values -T json has, with tshark's -E options.
TEST(Filter, FieldsMatchJson) {
  const std::string cap = "demo.pcapng";
  auto r = test::kwire_cmd("decode -r " + capture(cap) +
                           " -T fields -e frame -e apiName -e body.memberEpoch -e body.topology.subtopologies.sourceTopics"
                           " -e header.clientId -e body.errorCode -Y 'apiName == StreamsGroupHeartbeat || apiKey == 3'"
                           " -E separator=, -E aggregator=/s -E header=y -E quote=d");
  ASSERT_EQ(r.status, 0) << r.err;
  auto got = test::lines(r.out);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got[0], "\"frame\",\"apiName\",\"body.memberEpoch\",\"body.topology.subtopologies.sourceTopics\","
                    "\"header.clientId\",\"body.errorCode\"");
  std::vector<std::string> want;
  auto text = [](const json& v) -> std::string {
    if (v.is_null()) return "";
    if (v.is_string()) return v.get<std::string>();
    return v.dump();
  };
  auto join = [&](const std::vector<json>& vs) {
    std::string s;
    for (size_t i = 0; i < vs.size(); ++i) s += (i ? " " : "") + text(vs[i]);
    return "\"" + s + "\"";
  };
  for (const auto& m : messages(cap)) {
    if (m["apiName"] != "StreamsGroupHeartbeat" && num(m["apiKey"]) != 3) continue;
    want.push_back(join({m["frame"]}) + "," + join({m["apiName"]}) + "," + join(vals(m, "body.memberEpoch")) + "," +
                   join(vals(m, "body.topology.subtopologies.sourceTopics")) + "," + join(vals(m, "header.clientId")) +
                   "," + join(vals(m, "body.errorCode")));
  }
  ASSERT_EQ(got.size(), want.size() + 1);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i + 1], want[i]);
  // Defaults: tab separated, no header, no quotes; structs as their JSON.
  auto d = test::kwire_cmd("decode -r " + capture(cap) + " -T fields -e message -e body.topology -Y body.topology");
  ASSERT_EQ(d.status, 0) << d.err;
  auto dl = test::lines(d.out);
  std::vector<std::pair<uint64_t, json>> dw, dg;
  for (const auto& m : messages(cap))
    if (present(m, "body.topology")) dw.emplace_back(m["message"], m["body"]["topology"]);
  for (const auto& l : dl) {
    auto tab = l.find('\t');
    ASSERT_NE(tab, std::string::npos) << l;
    dg.emplace_back(std::stoull(l.substr(0, tab)), json::parse(l.substr(tab + 1)));
  }
  ASSERT_FALSE(dw.empty());
  EXPECT_EQ(dg, dw);
  // Usage errors.
  EXPECT_EQ(WEXITSTATUS(test::kwire_cmd("decode -r " + capture(cap) + " -e apiName").status), 2);
  EXPECT_EQ(WEXITSTATUS(test::kwire_cmd("decode -r " + capture(cap) + " -T fields").status), 2);
  auto e = test::kwire_cmd("decode -r " + capture(cap) + " -T fields -e body.nope");
  EXPECT_EQ(WEXITSTATUS(e.status), 2);
  EXPECT_NE(e.err.find("unknown path 'body.nope'"), std::string::npos) << e.err;
  EXPECT_EQ(WEXITSTATUS(test::kwire_cmd("decode -r " + capture(cap) + " -T fields -e apiName -E quote=x").status), 2);
}

// The request facts kept for request.* are dropped as responses come: a
// selector run over a long capture holds only requests in flight.
TEST(Filter, RequestMemoryIsBounded) {
  const auto& ps = ProgramSet::release();
  filter::CompileError err;
  auto f = filter::Filter::compile("request.apiKey == 1", ps, err);
  ASSERT_TRUE(f) << err.format();
  EXPECT_TRUE(f->uses_request());
  filter::FilterSelector sel(*f, 4);
  Frame req;
  req.api_key = 1;
  req.direction = Direction::Request;
  FrameContext ctx;
  for (int i = 0; i < 10; ++i) {
    req.correlation_id = i;
    EXPECT_TRUE(sel.select(ctx, req));
  }
  EXPECT_EQ(sel.remembered(), 4u);  // the cap: older ones count as unanswered
  Frame resp;
  resp.direction = Direction::Response;
  resp.api_key = 1;
  resp.correlation_id = 8;
  EXPECT_TRUE(sel.select(ctx, resp));
  EXPECT_EQ(sel.remembered(), 1u);  // 6, 7 (never answered) and 8 dropped; 9 in flight
  resp.correlation_id = 3;          // long gone
  EXPECT_FALSE(sel.select(ctx, resp));
  sel.connection_end(0);
  EXPECT_EQ(sel.remembered(), 0u);
}

// kwire replay -Y: the exchanges whose request or recorded response matches.
TEST(Filter, ReplaySelectsExchanges) {
  const auto& ps = ProgramSet::release();
  const std::string cap = "demo.pcapng";
  replay::Recording rec;
  std::string error;
  ASSERT_TRUE(replay::load_recording(capture(cap), ps, SessionOptions{}, rec, error)) << error;
  const std::string expr = "body.errorCode != NONE || request.body.memberEpoch == 0";
  Pred pred = [](const json& m, const json* r) {
    auto v = vals(m, "body.errorCode");
    bool err = !v.empty() && std::all_of(v.begin(), v.end(), [](const json& x) { return num(x) != 0; });
    return err || (r && any(*r, "body.memberEpoch", [](const json& x) { return num(x) == 0; }));
  };
  filter::CompileError ce;
  auto f = filter::Filter::compile(expr, ps, ce);
  ASSERT_TRUE(f) << ce.format();
  std::set<const replay::Exchange*> sel;
  replay::select_exchanges(ps, *f, rec, sel);
  // Expected, from the JSON: requests by (client, broker, correlation id, frame).
  const auto& all = messages(cap);
  auto req = requests_of(all);
  std::map<std::tuple<std::string, std::string, int64_t, uint64_t>, bool> want;
  for (const auto& m : all) {
    if (m.contains("notKafka")) continue;
    if (m["direction"] == "request") {
      auto& w = want[{m["src"], m["dst"], m["correlationId"], m["frame"]}];
      w = w || pred(m, &m);
    } else if (auto it = req.find(m["message"]); it != req.end()) {
      const json& r = *it->second;
      auto& w = want[{r["src"], r["dst"], r["correlationId"], r["frame"]}];
      w = w || pred(m, &r);
    }
  }
  size_t selected = 0, total = 0;
  for (const auto& s : rec.sessions)
    for (const auto& e : s.exchanges) {
      auto it = want.find({s.client.str(), s.broker.str(), e.correlation_id, e.frame});
      ASSERT_NE(it, want.end()) << "frame " << e.frame;
      EXPECT_EQ(sel.count(&e) > 0, it->second) << "frame " << e.frame;
      selected += it->second;
      ++total;
    }
  EXPECT_GT(selected, 0u);
  EXPECT_LT(selected, total);
  // On the command line a bad filter is a usage error before anything is sent.
  auto r = test::kwire_cmd("replay -r " + capture(cap) + " --target 127.0.0.1:1 -Y 'body.nope'");
  EXPECT_EQ(WEXITSTATUS(r.status), 2);
  EXPECT_NE(r.err.find("kwire replay: -Y: unknown path 'body.nope'"), std::string::npos) << r.err;
}

// The same selections as Wireshark's own kafka dissector (tshark 4.0, which
// knows the request header of every api): requests by api key and client id.
TEST(Filter, AgreesWithTshark) {
  if (std::system("tshark --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no tshark";
  const auto& ps = ProgramSet::release();
  for (const std::string cap : {"demo.pcapng", "admin.pcapng"}) {
    // The broker port: where the first request went.
    std::string port;
    for (const auto& m : messages(cap))
      if (m["direction"] == "request") { std::string d = m["dst"]; port = d.substr(d.rfind(':') + 1); break; }
    ASSERT_FALSE(port.empty());
    std::string cmd = "tshark -r " + capture(cap) + " -d tcp.port==" + port + ",kafka -Y 'tcp.dstport == " + port +
                      "' -T fields -E separator=/t -e frame.number -e kafka.api_key -e kafka.client_id 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string out;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
    // frame -> (api keys, client ids) of the requests it completes
    std::map<uint64_t, std::pair<std::set<int>, std::vector<std::string>>> tshark;
    for (const auto& l : test::lines(out)) {
      std::vector<std::string> cols;
      std::stringstream in(l);
      std::string c;
      while (std::getline(in, c, '\t')) cols.push_back(c);
      if (cols.size() < 2 || cols[1].empty()) continue;
      auto& e = tshark[std::stoull(cols[0])];
      std::stringstream keys(cols[1]);
      while (std::getline(keys, c, ',')) e.first.insert(std::stoi(c));
      if (cols.size() > 2) {
        std::stringstream ids(cols[2]);
        while (std::getline(ids, c, ',')) e.second.push_back(c);
      }
    }
    ASSERT_GT(tshark.size(), 10u) << cmd;
    const std::vector<int> keys = {3, 18, 2, 10, 42, 75};
    std::vector<filter::Filter> filters;
    for (int k : keys) {
      filter::CompileError err;
      filters.push_back(*filter::Filter::compile("apiKey == " + std::to_string(k) + " && direction == request", ps, err));
    }
    filter::CompileError err;
    filters.push_back(*filter::Filter::compile("header.clientId contains \"admin\" && direction == request", ps, err));
    std::vector<const filter::Filter*> ptrs;
    for (const auto& f : filters) ptrs.push_back(&f);
    auto got = run_filters(cap, ptrs);
    // kwire's selections hold message numbers: map them to frames.
    std::map<uint64_t, uint64_t> frame_of;
    for (const auto& m : messages(cap)) frame_of[m["message"]] = m["frame"];
    for (size_t i = 0; i < filters.size(); ++i) {
      std::set<uint64_t> k, t;
      for (uint64_t msg : got[i]) k.insert(frame_of[msg]);
      for (const auto& [frame, e] : tshark) {
        bool yes = i < keys.size() ? e.first.count(keys[i]) > 0
                                   : std::any_of(e.second.begin(), e.second.end(), [](const std::string& s) { return s.find("admin") != std::string::npos; });
        if (yes) t.insert(frame);
      }
      EXPECT_EQ(k, t) << cap << ": " << filters[i].expression();
      EXPECT_FALSE(t.empty()) << cap << ": " << filters[i].expression();
    }
  }
}
