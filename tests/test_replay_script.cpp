// The Lua hooks of `kwire replay --script`: real requests from the committed
// captures edited by scripts, encoded and decoded again; dropped requests;
// expectations on responses; and the message of every way a script can fail.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/encoder.hpp"
#include "dissector/protocol/session.hpp"
#include "pipeline/capture_file.hpp"
#include "replay/script.hpp"
#include "tests/test_support.hpp"
#include "wire/wire.hpp"

using namespace kwire;
using kwire::replay::Expectation;
using kwire::replay::HookContext;
using kwire::replay::Script;

namespace {

const ProgramSet& programs() { return ProgramSet::release(); }

// One whole message of a capture, as its bytes.
struct Captured {
  std::vector<uint8_t> bytes;
  Direction direction;
  int16_t api_key;
  int16_t api_version;
  int32_t correlation_id;
  uint64_t number;
  std::string src, dst;
};

class Keep : public FrameHandler {
 public:
  void on_frame(const FrameContext& ctx, const Frame& f) override {
    if (!f.ok() || !f.program) return;
    messages.push_back({{f.message.begin(), f.message.end()}, f.direction, f.api_key, f.api_version,
                        f.correlation_id, ctx.number, ctx.src.str(), ctx.dst.str()});
  }
  void on_skip(const FrameContext&, uint64_t, const std::string&) override {}
  void on_capture_error(const PacketMeta&, const std::string& where, const std::string& reason) override {
    ADD_FAILURE() << where << ": " << reason;
  }
  std::vector<Captured> messages;
};

// The cleanly decoded messages of a committed capture, in capture order.
// The helpers that return references into long-lived data take their names
// as string_view: a std::string temporary made from a literal argument makes
// GCC 14's -Wdangling-reference take the result for a reference into it.
const std::vector<Captured>& capture(std::string_view name) {
  static std::map<std::string, std::vector<Captured>, std::less<>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  Keep keep;
  KafkaSessions sessions(programs(), {}, keep);
  CaptureStats stats;
  std::string error;
  EXPECT_TRUE(read_capture_file(std::string(KWIRE_SOURCE_DIR) + "/captures/" + std::string(name), {}, sessions, stats,
                                error)) << error;
  return cache[std::string(name)] = std::move(keep.messages);
}

// A message and its Frame (which points into the bytes).
struct Decoded {
  std::vector<uint8_t> bytes;
  Frame frame;
};

std::unique_ptr<Decoded> decode(const Captured& m) { 
  auto d = std::make_unique<Decoded>();
  d->bytes = m.bytes;
  FrameDecoder dec(programs());
  dec.set_nested(false);  // as replay decodes: payloads inside bytes fields are sent as recorded
  if (m.direction == Direction::Request) dec.decode_request(d->bytes, d->frame);
  else dec.decode_response(d->bytes, m.api_key, m.api_version, d->frame);
  EXPECT_TRUE(d->frame.ok());
  return d;
}

std::unique_ptr<Decoded> decode_request(const std::vector<uint8_t>& bytes) {
  auto d = std::make_unique<Decoded>();
  d->bytes = bytes;
  FrameDecoder dec(programs());
  dec.set_nested(false);  // as replay decodes
  dec.decode_request(d->bytes, d->frame);
  EXPECT_TRUE(d->frame.ok()) << (d->frame.ok() ? "" : d->frame.errors.front().reason);
  return d;
}

std::vector<uint8_t> encode(const Frame& f) {
  std::vector<uint8_t> out;
  std::string error;
  EXPECT_TRUE(FrameEncoder(programs()).encode(f, out, error)) << error;
  return out;
}

// The first request of `api` in the capture for which `pick` holds.
template <class Pick>
std::unique_ptr<Decoded> first_request(const std::string& file, int api, Pick pick) {
  for (const Captured& m : capture(file)) {
    if (m.direction != Direction::Request || m.api_key != api) continue;
    auto d = decode(m);
    if (pick(d->frame)) return d;
  }
  ADD_FAILURE() << "no such request of api " << api << " in " << file;
  return nullptr;
}

const Node& field(const Frame& f, std::string_view path) {
  const Node* n = test::at(f, programs(), std::string(path));
  EXPECT_NE(n, nullptr) << path;
  static const Node none{};
  return n ? *n : none;
}
const Node& header_field(const Frame& f, std::string_view name) {
  const Node* n = find_field(f, programs(), 0, name);
  EXPECT_NE(n, nullptr) << name;
  static const Node none{};
  return n ? *n : none;
}

// A StreamsGroupHeartbeat v1 request that carries the member's topology.
std::unique_ptr<Decoded> heartbeat() {
  return first_request("demo.pcapng", 88, [](const Frame& f) {
    const Node* t = test::at(f, programs(), "Topology");
    return t && !t->is_null();
  });
}
std::unique_ptr<Decoded> create_topics() {
  return first_request("demo.pcapng", 19, [](const Frame& f) {
    const Node* t = test::at(f, programs(), "Topics");
    return t && t->aux == 2;
  });
}
std::unique_ptr<Decoded> produce() {
  return first_request("demo.pcapng", 0, [](const Frame& f) {
    const Node* r = test::at(f, programs(), "TopicData[0].PartitionData[0].Records");
    return r && !r->is_null() && r->aux > 0;
  });
}

class ReplayScript : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kwire-lua-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::unique_ptr<Script> load(const std::string& text, const std::string& name = "hook.lua") {
    path_ = write(name, text);
    std::string error;
    auto s = Script::load(path_, programs(), error);
    EXPECT_NE(s, nullptr) << error;
    EXPECT_TRUE(error.empty()) << error;
    return s;
  }
  std::string load_error(const std::string& text, const std::string& name = "hook.lua") {
    path_ = write(name, text);
    std::string error;
    EXPECT_EQ(Script::load(path_, programs(), error), nullptr);
    return error;
  }
  // Runs on_request; expects it to work.
  bool request(Script& s, Frame& f, HookContext ctx = {}) {
    bool skip = true;
    std::string error;
    EXPECT_TRUE(s.on_request(f, ctx, skip, error)) << error;
    EXPECT_TRUE(error.empty()) << error;
    return skip;
  }
  // Runs on_request; expects it to fail, leaving the frame as it was.
  std::string request_error(const std::string& text, Decoded& d) {
    auto s = load(text);
    if (!s) return "";
    bool skip = false;
    std::string error;
    EXPECT_FALSE(s->on_request(d.frame, {}, skip, error));
    EXPECT_FALSE(skip);
    EXPECT_EQ(encode(d.frame), d.bytes) << "a failed hook left edits behind";
    return error;
  }

  std::filesystem::path dir_;
  std::string path_;  // of the last script written
};

}  // namespace

TEST_F(ReplayScript, CapturedMessagesReencodeToTheirBytes) {
  // What every byte comparison below relies on.
  auto h = heartbeat();
  auto c = create_topics();
  auto p = produce();
  ASSERT_TRUE(h && c && p);
  EXPECT_EQ(encode(h->frame), h->bytes);
  EXPECT_EQ(encode(c->frame), c->bytes);
  EXPECT_EQ(encode(p->frame), p->bytes);
}

TEST_F(ReplayScript, AnIntEditChangesOnlyItsFourBytes) {
  auto d = heartbeat();
  ASSERT_NE(d, nullptr);
  auto s = load(
      "function on_request(msg, ctx)\n"
      "  msg.body.rebalanceTimeoutMs = 45000\n"
      "end\n");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->has_on_request());
  EXPECT_FALSE(s->has_on_response());
  const uint32_t at = field(d->frame, "RebalanceTimeoutMs").offset;
  EXPECT_FALSE(request(*s, d->frame));

  std::vector<uint8_t> out = encode(d->frame);
  ASSERT_EQ(out.size(), d->bytes.size());
  const uint8_t want[4] = {0x00, 0x00, 0xaf, 0xc8};  // 45000 = 0xafc8, big-endian
  for (size_t i = 0; i < out.size(); ++i) {
    if (i >= at && i < at + 4) EXPECT_EQ(out[i], want[i - at]) << "byte " << i;
    else EXPECT_EQ(out[i], d->bytes[i]) << "byte " << i;
  }
  auto back = decode_request(out);
  EXPECT_EQ(field(back->frame, "RebalanceTimeoutMs").v.i, 45000);
}

TEST_F(ReplayScript, StringNestedAndNullEditsSurviveEncodeAndDecode) {
  auto d = heartbeat();
  ASSERT_NE(d, nullptr);
  const std::string client(header_field(d->frame, "ClientId").str());
  const std::string group(field(d->frame, "GroupId").str());
  const std::string member(field(d->frame, "MemberId").str());
  const Node& process = field(d->frame, "ProcessId");
  ASSERT_FALSE(process.is_null());
  const size_t process_len = process.aux;
  ASSERT_TRUE(field(d->frame, "InstanceId").is_null());
  ASSERT_EQ(field(d->frame, "Topology.Subtopologies[0].SourceTopics[0]").str(), "orders");
  ASSERT_FALSE(field(d->frame, "ShutdownApplication").v.i);

  auto s = load(
      "function on_request(msg, ctx)\n"
      "  msg.header.clientId = msg.header.clientId .. '-replayed'\n"
      "  local sub = msg.body.topology.subtopologies[1]\n"
      "  sub.sourceTopics[1] = 'orders-replayed'\n"
      "  msg.body.processId = kwire.null\n"
      "  msg.body.instanceId = 'instance-1'\n"
      "  msg.body.shutdownApplication = true\n"
      "  msg.body.memberEpoch = -1\n"
      "  msg.body.topology.epoch = msg.body.topology.epoch + 2\n"
      "end\n");
  ASSERT_NE(s, nullptr);
  const int64_t epoch = field(d->frame, "Topology.Epoch").v.i;
  EXPECT_FALSE(request(*s, d->frame));

  std::vector<uint8_t> out = encode(d->frame);
  // clientId (int16 length) +9, the topic +9 (its compact length stays one
  // byte), processId from 1+len to the one byte of null, instanceId from that
  // byte to 1+10.
  EXPECT_EQ(out.size(), d->bytes.size() + 9 + 9 - process_len + 10);
  auto back = decode_request(out);
  const Frame& f = back->frame;
  EXPECT_EQ(header_field(f, "ClientId").str(), client + "-replayed");
  EXPECT_EQ(f.correlation_id, d->frame.correlation_id);
  EXPECT_EQ(field(f, "GroupId").str(), group);
  EXPECT_EQ(field(f, "MemberId").str(), member);
  EXPECT_EQ(field(f, "Topology.Subtopologies[0].SourceTopics[0]").str(), "orders-replayed");
  EXPECT_EQ(field(f, "Topology.Subtopologies[0].SubtopologyId").str(), "0");
  EXPECT_EQ(field(f, "Topology.Epoch").v.i, epoch + 2);
  EXPECT_TRUE(field(f, "ProcessId").is_null());
  EXPECT_EQ(field(f, "InstanceId").str(), "instance-1");
  EXPECT_EQ(field(f, "ShutdownApplication").v.i, 1);
  EXPECT_EQ(field(f, "MemberEpoch").v.i, -1);
  EXPECT_EQ(field(f, "RebalanceTimeoutMs").v.i, field(d->frame, "RebalanceTimeoutMs").v.i);
}

TEST_F(ReplayScript, NullableStructsAndArraysCanBeSetToNull) {
  auto d = heartbeat();
  ASSERT_NE(d, nullptr);
  const Node& topology = field(d->frame, "Topology");
  const Node& active = field(d->frame, "ActiveTasks");
  ASSERT_FALSE(active.is_null());
  ASSERT_EQ(active.aux, 0u);  // the member owns no tasks yet: an empty compact array, one byte
  const uint32_t topology_length = topology.length;  // marker byte included
  auto s = load(
      "function on_request(msg)\n"
      "  msg.body.topology = kwire.null\n"
      "  msg.body.activeTasks = kwire.null\n"
      "  if msg.body.topology ~= kwire.null then error('still there') end\n"
      "end\n");
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(request(*s, d->frame));
  std::vector<uint8_t> out = encode(d->frame);
  // The struct shrinks to its marker byte (-1); null and empty arrays are both one byte.
  EXPECT_EQ(out.size(), d->bytes.size() - topology_length + 1);
  auto back = decode_request(out);
  EXPECT_TRUE(field(back->frame, "Topology").is_null());
  EXPECT_TRUE(field(back->frame, "ActiveTasks").is_null());
  EXPECT_EQ(field(back->frame, "RebalanceTimeoutMs").v.i, field(d->frame, "RebalanceTimeoutMs").v.i);
}

TEST_F(ReplayScript, ArrayElementsAreWalkedAndEditedInPlace) {
  auto d = create_topics();
  ASSERT_NE(d, nullptr);
  const std::string first(field(d->frame, "Topics[0].Name").str());
  const std::string second(field(d->frame, "Topics[1].Name").str());
  auto s = load(
      "function on_request(msg)\n"
      "  local names = {}\n"
      "  for i, t in ipairs(msg.body.topics) do names[i] = t.name end\n"
      "  local keys = {}\n"
      "  for k, v in pairs(msg.body) do keys[#keys + 1] = k end\n"
      "  msg.header.clientId = table.concat(names, '+') .. '|' .. table.concat(keys, ',')\n"
      "  msg.body.topics[2].numPartitions = 6\n"
      "  msg.body.topics[1].replicationFactor = 3\n"
      "  msg.body.timeoutMs = #msg.body.topics * 1000\n"
      "  msg.body.validateOnly = true\n"
      "end\n");
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(request(*s, d->frame));
  std::vector<uint8_t> out = encode(d->frame);
  auto back = decode_request(out);
  const Frame& f = back->frame;
  EXPECT_EQ(header_field(f, "ClientId").str(), first + "+" + second + "|topics,timeoutMs,validateOnly");
  EXPECT_EQ(field(f, "Topics[1].NumPartitions").v.i, 6);
  EXPECT_EQ(field(f, "Topics[0].NumPartitions").v.i, field(d->frame, "Topics[0].NumPartitions").v.i);
  EXPECT_EQ(field(f, "Topics[0].ReplicationFactor").v.i, 3);
  EXPECT_EQ(field(f, "timeoutMs").v.i, 2000);
  EXPECT_EQ(field(f, "validateOnly").v.i, 1);
  EXPECT_EQ(field(f, "Topics[1].Name").str(), second);
}

TEST_F(ReplayScript, RecordsReadLikeTheJsonAndAUuidEditLeavesThemAsRecorded) {
  auto d = produce();
  ASSERT_NE(d, nullptr);
  const Node& records = field(d->frame, "TopicData[0].PartitionData[0].Records");
  uint32_t batches = 0;
  for (uint32_t c : Children(d->frame, static_cast<uint32_t>(&records - d->frame.nodes.data()))) { (void)c; ++batches; }
  const int64_t count = field(d->frame, "TopicData[0].PartitionData[0].Records[0].RecordCount").v.i;
  const std::string value = wire::base64(field(d->frame, "TopicData[0].PartitionData[0].Records[0].Records[0].Value").bytes());
  const uint32_t uuid_at = field(d->frame, "TopicData[0].TopicId").offset;

  auto s = load(
      "function on_request(msg)\n"
      "  local p = msg.body.topicData[1].partitionData[1]\n"
      "  local batch = p.records[1]\n"
      "  msg.body.topicData[1].topicId = 'AAECAwQFBgcICQoLDA0ODw'\n"
      "  msg.header.clientId = string.format('%d:%d:%s', #p.records, batch.recordCount, batch.records[1].value)\n"
      "end\n");
  ASSERT_NE(s, nullptr);
  const size_t client_len = header_field(d->frame, "ClientId").aux;
  EXPECT_FALSE(request(*s, d->frame));
  const std::string client = std::to_string(batches) + ":" + std::to_string(count) + ":" + value;
  std::vector<uint8_t> out = encode(d->frame);
  ASSERT_EQ(out.size(), d->bytes.size() - client_len + client.size());
  auto back = decode_request(out);
  const Frame& f = back->frame;
  EXPECT_EQ(header_field(f, "ClientId").str(), client);
  // 'AAECAwQFBgcICQoLDA0ODw' is the URL-safe base64 of the bytes 0, 1, ..., 15.
  const Node& id = field(f, "TopicData[0].TopicId");
  for (int i = 0; i < 16; ++i) EXPECT_EQ(id.v.p[i], i);
  // Everything after the uuid (the records included) is as recorded.
  const ptrdiff_t shift = static_cast<ptrdiff_t>(client.size()) - static_cast<ptrdiff_t>(client_len);
  ASSERT_GT(d->bytes.size(), uuid_at + 16);
  EXPECT_TRUE(std::equal(d->bytes.begin() + uuid_at + 16, d->bytes.end(), out.begin() + (uuid_at + 16 + shift)));
  EXPECT_EQ(wire::base64(field(f, "TopicData[0].PartitionData[0].Records[0].Records[0].Value").bytes()), value);
}

TEST_F(ReplayScript, ReturningFalseDropsTheRequestAndNothingElseDoes) {
  auto d = heartbeat();
  ASSERT_NE(d, nullptr);
  auto s = load(
      "local calls = 0\n"
      "function on_request(msg)\n"
      "  calls = calls + 1\n"
      "  if calls == 1 then return false end\n"
      "  if calls == 2 then return nil end\n"
      "  if calls == 3 then return true end\n"
      "  if calls == 4 then return 0 end\n"
      "  return msg.body.memberEpoch ~= msg.body.memberEpoch\n"
      "end\n");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(request(*s, d->frame));
  EXPECT_FALSE(request(*s, d->frame));
  EXPECT_FALSE(request(*s, d->frame));
  EXPECT_FALSE(request(*s, d->frame));
  EXPECT_TRUE(request(*s, d->frame));
  EXPECT_EQ(encode(d->frame), d->bytes);
}

TEST_F(ReplayScript, ExpectationsHaveTheTextFormsOfTheJsonAndResponsesStayReadOnly) {
  // CreateTopics and its response, from the same connection.
  const Captured* req = nullptr;
  const Captured* resp = nullptr;
  for (const Captured& m : capture("demo.pcapng")) {
    if (m.api_key != 19) continue;
    if (m.direction == Direction::Request && !req) req = &m;
    else if (req && m.direction == Direction::Response && m.correlation_id == req->correlation_id && m.src == req->dst) resp = &m;
    if (resp) break;
  }
  ASSERT_TRUE(req && resp);
  auto live = decode(*resp);
  auto recorded = decode(*resp);
  const Frame& f = recorded->frame;
  const Node& topic_id = field(f, "Topics[0].TopicId");
  ASSERT_TRUE(field(f, "Topics[0].ErrorMessage").is_null());
  const int64_t throttle = field(f, "ThrottleTimeMs").v.i;

  auto s = load(
      "function on_response(live, recorded, ctx)\n"
      "  local t = recorded.body.topics[1]\n"
      "  kwire.expect('body.topics[0].errorCode', t.errorCode)\n"
      "  kwire.expect('body.topics[0].topicId', t.topicId)\n"
      "  kwire.expect('body.topics[0].errorMessage', t.errorMessage)\n"
      "  kwire.expect('body.topics[1].name', live.body.topics[2].name)\n"
      "  live.body.throttleTimeMs = 12345\n"
      "  live.body.topics[1].name = 'x'\n"
      "  kwire.expect('body.throttleTimeMs', live.body.throttleTimeMs)\n"
      "  kwire.expect('apiKey', live.apiKey)\n"
      "  kwire.expect('apiName', live.apiName)\n"
      "  kwire.expect('apiVersion', recorded.apiVersion)\n"
      "  kwire.expect('direction', live.direction)\n"
      "  kwire.expect('correlationId', live.correlationId)\n"
      "  kwire.expect('frame', ctx.frame)\n"
      "  kwire.expect('connection', ctx.connection)\n"
      "  kwire.expect('a', true)\n"
      "  kwire.expect('b', false)\n"
      "  kwire.expect('c', 1.5)\n"
      "  kwire.expect('d', 2.0)\n"
      "  kwire.expect('e', math.maxinteger)\n"
      "  kwire.expect('f', math.mininteger)\n"
      "  kwire.expect('g', -7)\n"
      "  kwire.expect('h', kwire.null)\n"
      "  kwire.expect('i', 0/0)\n"
      "  kwire.expect('j', -1/0)\n"
      "  kwire.expect('k', tostring(kwire.null))\n"
      "end\n");
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->has_on_request());
  EXPECT_TRUE(s->has_on_response());
  std::vector<Expectation> add{{"kept", "1"}};
  std::string error;
  HookContext ctx{4242, "127.0.0.1:51234->127.0.0.1:9092"};
  ASSERT_TRUE(s->on_response(live->frame, recorded->frame, ctx, add, error)) << error;
  const std::vector<std::pair<std::string, std::string>> want = {
      {"kept", "1"},
      {"body.topics[0].errorCode", "0"},
      {"body.topics[0].topicId", wire::uuid_to_string(topic_id.v.p)},
      {"body.topics[0].errorMessage", "null"},
      {"body.topics[1].name", std::string(field(f, "Topics[1].Name").str())},
      {"body.throttleTimeMs", std::to_string(throttle)},
      {"apiKey", "19"},
      {"apiName", "CreateTopics"},
      {"apiVersion", std::to_string(resp->api_version)},
      {"direction", "response"},
      {"correlationId", std::to_string(resp->correlation_id)},
      {"frame", "4242"},
      {"connection", "127.0.0.1:51234->127.0.0.1:9092"},
      {"a", "true"},
      {"b", "false"},
      {"c", "1.5"},
      {"d", "2.0"},
      {"e", "9223372036854775807"},
      {"f", "-9223372036854775808"},
      {"g", "-7"},
      {"h", "null"},
      {"i", "NaN"},
      {"j", "-Infinity"},
      {"k", "null"},
  };
  ASSERT_EQ(add.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(add[i].path, want[i].first) << i;
    EXPECT_EQ(add[i].value, want[i].second) << want[i].first;
  }
  EXPECT_EQ(encode(live->frame), resp->bytes);
}

TEST_F(ReplayScript, AFailingResponseHookAddsNoExpectations) {
  auto d = create_topics();
  ASSERT_NE(d, nullptr);
  auto s = load(
      "function on_response(live, recorded)\n"
      "  kwire.expect('body.errorCode', 0)\n"
      "  kwire.expect('body.errorCode', {})\n"
      "end\n");
  ASSERT_NE(s, nullptr);
  std::vector<Expectation> add;
  std::string error;
  EXPECT_FALSE(s->on_response(d->frame, d->frame, {}, add, error));
  EXPECT_TRUE(add.empty());
  EXPECT_EQ(error, path_ + ":3: kwire.expect: body.errorCode: the value must be a number, boolean, string or kwire.null, got table");

  s = load("function on_request(msg)\n  kwire.expect('body.errorCode', 0)\nend\n");
  ASSERT_NE(s, nullptr);
  bool skip = false;
  EXPECT_FALSE(s->on_request(d->frame, {}, skip, error));
  EXPECT_EQ(error, path_ + ":2: kwire.expect: only on_response can add expectations");
}

TEST_F(ReplayScript, BadEditsNameTheLineAndThePathAndAreUndone) {
  struct Case {
    std::string line;   // the second line of on_request; the first edits memberEpoch
    std::string error;  // after "FILE:2: "
  };
  const std::vector<Case> heartbeat_cases = {
      {"msg.body.rebalanceTimeoutMs = 'soon'", "body.rebalanceTimeoutMs: expected an integer (int32), got string"},
      {"msg.body.rebalanceTimeoutMs = 2^31", "body.rebalanceTimeoutMs: 2147483648 is out of range for int32 (-2147483648..2147483647)"},
      {"msg.body.rebalanceTimeoutMs = 1.5", "body.rebalanceTimeoutMs: 1.5 is not an integer"},
      {"msg.body.shutdownApplication = 1", "body.shutdownApplication: expected a boolean (bool), got number"},
      {"msg.body.groupId = kwire.null", "body.groupId: not nullable"},
      {"msg.body.groupId = nil", "body.groupId: cannot be nil: fields and elements cannot be removed (kwire.null is null)"},
      {"msg.body.groupId = 7", "body.groupId: expected a string (string), got number"},
      {"msg.body.rebalanceTimeOutMs = 1", "body.rebalanceTimeOutMs: no such field in StreamsGroupHeartbeatRequest"},
      {"msg.body.topology = {}", "body.topology: a struct cannot be replaced; assign to its fields (or kwire.null)"},
      {"msg.body.topology.subtopologies[1].sourceTopics[2] = 'more'",
       "body.topology.subtopologies[0].sourceTopics: no element at Lua index 2 (it has 1); elements cannot be added or removed"},
      {"table.insert(msg.body.topology.subtopologies, {})",
       "body.topology.subtopologies: no element at Lua index 2 (it has 1); elements cannot be added or removed"},
      {"table.remove(msg.body.topology.subtopologies[1].sourceTopics)",
       "body.topology.subtopologies[0].sourceTopics[0]: cannot be nil: fields and elements cannot be removed (kwire.null is null)"},
      {"msg.body.topology.subtopologies[1].sourceTopics[1] = kwire.null",
       "body.topology.subtopologies[0].sourceTopics[0]: not nullable"},
      {"msg.header.requestApiVersion = 0",
       "header.requestApiVersion: the api key and version decide the body's layout and cannot be edited"},
      {"msg.body.topology = kwire.null; msg.body.topology = nil", "body.topology: cannot be nil: fields and elements cannot be removed (kwire.null is null)"},
      {"local t = msg.body.topology; msg.body.topology = kwire.null; t.epoch = 9", "body.topology.epoch: in body.topology, which was set to null"},
      {"error('gave up on ' .. msg.body.groupId)", "gave up on orders-app"},
      {"local t = nil; t.x = 1", "attempt to index a nil value (local 't')"},
      {"debug.getmetatable(msg.body).__index({}, 'groupId')", "not a kwire message"},
  };
  for (const Case& c : heartbeat_cases) {
    auto d = heartbeat();
    ASSERT_NE(d, nullptr);
    std::string error = request_error("function on_request(msg)\n  msg.body.memberEpoch = 99; " + c.line + "\nend\n", *d);
    EXPECT_EQ(error, path_ + ":2: " + c.error) << c.line;
  }

  const std::vector<Case> create_cases = {
      {"msg.body.topics[2].replicationFactor = 40000",
       "body.topics[1].replicationFactor: 40000 is out of range for int16 (-32768..32767)"},
      {"msg.body.topics[1].numPartitions = -2147483649",
       "body.topics[0].numPartitions: -2147483649 is out of range for int32 (-2147483648..2147483647)"},
      {"msg.body.topics[1] = msg.body.topics[2]", "body.topics[0]: a struct cannot be replaced; assign to its fields"},
      {"msg.body.topics = kwire.null", "body.topics: not nullable"},
      {"msg.body.topics.x = 1", "body.topics: an array is indexed by integers"},
      {"msg.body.timeoutMs = '1000'", "body.timeoutMs: expected an integer (int32), got string"},
      {"msg.header.clientId = string.rep('x', 32768)", "header.clientId: 32768 bytes is longer than a string can be (32767)"},
  };
  for (const Case& c : create_cases) {
    auto d = create_topics();
    ASSERT_NE(d, nullptr);
    std::string error = request_error("function on_request(msg)\n  msg.body.timeoutMs = 1; " + c.line + "\nend\n", *d);
    EXPECT_EQ(error, path_ + ":2: " + c.error) << c.line;
  }

  const std::vector<Case> produce_cases = {
      {"msg.body.topicData[1].partitionData[1].records[1].baseOffset = 5",
       "body.topicData[0].partitionData[0].records[0].baseOffset: inside records, which are sent as recorded"},
      {"msg.body.topicData[1].partitionData[1].records[1].records[1].value = 'AAAA'",
       "body.topicData[0].partitionData[0].records[0].records[0].value: inside records, which are sent as recorded"},
      {"msg.body.topicData[1].partitionData[1].records[1] = 1",
       "body.topicData[0].partitionData[0].records: inside records, which are sent as recorded"},
      {"table.insert(msg.body.topicData[1].partitionData[1].records[1].records, 1)",
       "body.topicData[0].partitionData[0].records[0].records: inside records, which are sent as recorded"},
      {"msg.body.topicData[1].partitionData[1].records = kwire.null",
       "body.topicData[0].partitionData[0].records: records cannot be edited; they are sent as recorded"},
      {"msg.body.topicData[1].topicId = 'not-a-uuid'",
       "body.topicData[0].topicId: not a uuid (22 characters of URL-safe base64): \"not-a-uuid\""},
      {"msg.body.topicData[1].topicId = 'AAECAwQFBgcICQoLDA0ODx'",
       "body.topicData[0].topicId: not a uuid (22 characters of URL-safe base64): \"AAECAwQFBgcICQoLDA0ODx\""},
  };
  for (const Case& c : produce_cases) {
    auto d = produce();
    ASSERT_NE(d, nullptr);
    std::string error = request_error("function on_request(msg)\n  msg.body.timeoutMs = 1; " + c.line + "\nend\n", *d);
    EXPECT_EQ(error, path_ + ":2: " + c.error) << c.line;
  }
}

TEST_F(ReplayScript, LoadErrorsNameTheFileAndLine) {
  std::string error = load_error("function on_request(msg)\n  msg.body.x = = 1\nend\n");
  EXPECT_EQ(error, path_ + ":2: unexpected symbol near '='");
  error = load_error("local n = 1\nerror('no config for ' .. n)\n");
  EXPECT_EQ(error, path_ + ":2: no config for 1");
  error = load_error("x = 1\n");
  EXPECT_EQ(error, path_ + ": defines neither on_request nor on_response");
  error = load_error("on_request = 5\n");
  EXPECT_EQ(error, path_ + ": on_request is a number, not a function");
  const std::string missing = (dir_ / "missing.lua").string();
  EXPECT_EQ(Script::load(missing, programs(), error), nullptr);
  EXPECT_EQ(error, missing + ": cannot open: No such file or directory");
  // Lua shortens long file names in its messages; the whole name comes back.
  error = load_error("\n\nlocal x = \n", std::string(80, 'n') + ".lua");
  EXPECT_EQ(error, path_ + ":4: unexpected symbol near <eof>");
}

TEST_F(ReplayScript, RuntimeErrorsInLongNamedFilesNameTheWholeFile) {
  auto d = heartbeat();
  ASSERT_NE(d, nullptr);
  auto s = load("function on_request(msg)\n  msg.body.memberEpoch = 'x'\nend\n", std::string(90, 'h') + ".lua");
  ASSERT_NE(s, nullptr);
  bool skip = false;
  std::string error;
  EXPECT_FALSE(s->on_request(d->frame, {}, skip, error));
  EXPECT_EQ(error, path_ + ":2: body.memberEpoch: expected an integer (int32), got string");
}

TEST_F(ReplayScript, AMessageKeptPastItsCallCannotBeUsed) {
  auto d = heartbeat();
  ASSERT_NE(d, nullptr);
  auto s = load(
      "function on_request(msg)\n"
      "  if kept then return kept.groupId end\n"
      "  kept = msg.body\n"
      "end\n");
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(request(*s, d->frame));
  bool skip = false;
  std::string error;
  EXPECT_FALSE(s->on_request(d->frame, {}, skip, error));
  EXPECT_EQ(error, path_ + ":2: a message can only be used during the hook call that received it");
}

TEST_F(ReplayScript, BytesUnknownTaggedAndSensitiveFields) {
  // SyncGroup v5 with one assignment (bytes 01 02 03) and an unknown tag 99.
  test::Bytes b = test::request_header_v2(14, 5, 7);
  const uint8_t assignment[] = {1, 2, 3};
  const uint8_t tag_data[] = {0xab, 0xcd};
  b.cstr("g").i32(3).cstr("m").cnull().cstr("consumer").cstr("range")
      .carr(1).cstr("m").cbytes(assignment).tags0()
      .uvarint(1).uvarint(99).uvarint(2).raw(std::span<const uint8_t>(tag_data));
  auto d = decode_request(b.message());
  auto s = load(
      "function on_request(msg)\n"
      "  local a = msg.body.assignments[1]\n"
      "  local u = msg.body._unknownTaggedFields[1]\n"
      "  local keys = {}\n"
      "  for k in pairs(msg.body) do keys[#keys + 1] = k end\n"
      "  msg.header.clientId = a.assignment .. '|' .. u.tag .. '|' .. u.data .. '|' .. table.concat(keys, ',') ..\n"
      "      '|' .. tostring(msg.body.groupInstanceId)\n"
      "  a.assignment = '3q2+7w=='\n"
      "  msg.body.groupInstanceId = 'i'\n"
      "end\n");
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(request(*s, d->frame));
  auto back = decode_request(encode(d->frame));
  const Frame& f = back->frame;
  EXPECT_EQ(header_field(f, "ClientId").str(),
            "AQID|99|q80=|groupId,generationId,memberId,groupInstanceId,protocolType,protocolName,assignments,"
            "_unknownTaggedFields|null");
  const Node& a = field(f, "Assignments[0].Assignment");
  ASSERT_EQ(a.aux, 4u);
  EXPECT_EQ(a.v.p[0], 0xde);
  EXPECT_EQ(a.v.p[1], 0xad);
  EXPECT_EQ(a.v.p[2], 0xbe);
  EXPECT_EQ(a.v.p[3], 0xef);
  EXPECT_EQ(field(f, "GroupInstanceId").str(), "i");
  const Node& tag = f.nodes[f.nodes[f.body].end - 1];
  ASSERT_EQ(tag.desc, kDescUnknownTag);
  EXPECT_EQ(tag.tag, 99u);
  EXPECT_EQ(tag.aux, 2u);

  d = decode_request(b.message());
  std::string error = request_error("function on_request(msg)\n  msg.body.assignments[1].assignment = 'AQI*'\nend\n", *d);
  EXPECT_EQ(error, path_ + ":2: body.assignments[0].assignment: not base64: \"AQI*\"");
  error = request_error("function on_request(msg)\n  msg.body._unknownTaggedFields = {}\nend\n", *d);
  EXPECT_EQ(error, path_ + ":2: body._unknownTaggedFields: unknown tagged fields cannot be edited");

  // SaslAuthenticate v2: the token reads as the JSON shows it and cannot be edited.
  test::Bytes sasl = test::request_header_v2(36, 2, 8);
  const uint8_t token[] = {0, 'u', 0, 'p'};
  sasl.cbytes(token).tags0();
  auto t = decode_request(sasl.message());
  s = load("function on_request(msg)\n  msg.header.clientId = msg.body.authBytes\nend\n");
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(request(*s, t->frame));
  EXPECT_EQ(header_field(t->frame, "ClientId").str(), "<redacted>");
  t = decode_request(sasl.message());
  error = request_error("function on_request(msg)\n  msg.body.authBytes = 'AAAA'\nend\n", *t);
  EXPECT_EQ(error, path_ + ":2: body.authBytes: a sensitive field cannot be edited");
}

TEST_F(ReplayScript, AHookThatDoesNothingLeavesTheMessageAsItCame) {
  // Many calls: the per-call state (proxies, their cache) does not pile up or leak.
  auto d = produce();
  ASSERT_NE(d, nullptr);
  auto s = load(
      "function on_request(msg, ctx) end\n"
      "function on_response(live, recorded, ctx) end\n");
  ASSERT_NE(s, nullptr);
  std::vector<Expectation> add;
  for (int i = 0; i < 20000; ++i) {
    EXPECT_FALSE(request(*s, d->frame));
    std::string error;
    ASSERT_TRUE(s->on_response(d->frame, d->frame, {}, add, error)) << error;
  }
  EXPECT_TRUE(add.empty());
  EXPECT_EQ(encode(d->frame), d->bytes);
}
