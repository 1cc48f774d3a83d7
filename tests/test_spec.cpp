// The spec model: Kafka's JSON (with // comments) loads, and bad specs fail
// with the file, the field and the reason. Overlays replace messages.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "dissector/codegen/compiler.hpp"
#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/overlays.hpp"
#include "dissector/spec/spec_model.hpp"
#include "tests/test_support.hpp"

using namespace kwire;

namespace {

std::vector<spec::SpecError> errors_of(const std::string& text) {
  std::vector<spec::SpecError> errors;
  EXPECT_FALSE(spec::parse_spec(text, "Test.json", errors).has_value());
  return errors;
}

const char* kGood = R"({
  // comments as in Kafka's own files
  "apiKey": 88, "type": "request", "name": "StreamsGroupHeartbeatRequest",
  "validVersions": "0-1", "flexibleVersions": "0+",
  "fields": [
    { "name": "GroupId", "type": "string", "versions": "0+", "entityType": "groupId" },
    { "name": "Topology", "type": "Topology", "versions": "0+", "nullableVersions": "0+", "fields": [
      { "name": "Epoch", "type": "int32", "versions": "0+" } ]},
    { "name": "Extra", "type": "int64", "versions": "1+", "taggedVersions": "1+", "tag": 3 }
  ]
})";

}  // namespace

TEST(SpecModel, VersionRanges) {
  EXPECT_TRUE(spec::parse_versions("0+")->contains(12));
  EXPECT_TRUE(spec::parse_versions("1-3")->contains(3));
  EXPECT_FALSE(spec::parse_versions("1-3")->contains(4));
  EXPECT_TRUE(spec::parse_versions("none")->empty());
  EXPECT_EQ(spec::parse_versions("5")->str(), "5");
  EXPECT_FALSE(spec::parse_versions("3-1"));
  EXPECT_FALSE(spec::parse_versions("x+"));
}

TEST(SpecModel, LoadsKafkaJsonWithComments) {
  std::vector<spec::SpecError> errors;
  auto m = spec::parse_spec(kGood, "Test.json", errors);
  ASSERT_TRUE(m) << (errors.empty() ? "" : errors[0].str());
  EXPECT_EQ(m->api_key, 88);
  EXPECT_EQ(m->fields.size(), 3u);
  EXPECT_EQ(m->fields[1].fields[0].name, "Epoch");
  EXPECT_EQ(m->fields[2].tag, 3);
}

TEST(SpecModel, ErrorsNameFileFieldAndReason) {
  auto e = errors_of(R"({"apiKey": 1, "type": "request", "name": "X", "validVersions": "0",
      "fields": [{"name": "A", "type": "int33", "versions": "0+"}]})");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].str(), "Test.json: field A: type \"int33\" is neither a primitive nor a struct defined in this spec");

  e = errors_of(R"({"apiKey": 1, "type": "request", "name": "X", "validVersions": "0",
      "fields": [{"name": "A", "type": "int32", "versions": "0+", "nullableVersions": "0+"}]})");
  EXPECT_EQ(e.at(0).str(), "Test.json: field A: type \"int32\" cannot be nullable");

  e = errors_of(R"({"apiKey": 1, "type": "request", "name": "X", "validVersions": "0", "flexibleVersions": "0+",
      "fields": [{"name": "A", "type": "int32", "versions": "0+", "taggedVersions": "0+"}]})");
  EXPECT_EQ(e.at(0).str(), "Test.json: field A: taggedVersions without a \"tag\"");

  e = errors_of(R"({"apiKey": 1, "type": "request", "name": "X", "validVersions": "0",
      "fields": [{"name": "A", "type": "[]S", "versions": "0+", "fields": [{"name": "B", "type": "string", "versions": "zero"}]}]})");
  EXPECT_EQ(e.at(0).str(), "Test.json: field A.B: bad version range \"zero\" in versions");

  e = errors_of("{\"apiKey\": 1,\n \"type\": \"request\" \"name\": \"X\"}");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].str().find("Test.json: invalid JSON at line 2"), std::string::npos) << e[0].str();

  e = errors_of(R"({"type": "request", "name": "X", "validVersions": "0", "fields": []})");
  EXPECT_EQ(e.at(0).str(), "Test.json: request spec has no apiKey");
}

TEST(SpecModel, EveryReleaseSpecLoads) {
  auto r = spec::load_spec_dir(std::string(KWIRE_SOURCE_DIR) + "/specs/kafka");
  EXPECT_TRUE(r.ok()) << r.errors[0].str();
  EXPECT_EQ(r.messages.size(), 203u);
}

TEST(SpecModel, EveryOlderReleaseSpecLoads) {
  auto r = spec::load_spec_dir(std::string(KWIRE_SOURCE_DIR) + "/specs/kafka-older");
  EXPECT_TRUE(r.ok()) << r.errors[0].str();
  EXPECT_EQ(r.messages.size(), 186u);
}

TEST(SpecModel, IntegersWrittenAsStringsAreReadAsKafkaReadsThem) {
  // Kafka 3.9.1's BrokerHeartbeatRequest has "tag": "0"; Kafka's spec reader
  // (Jackson) takes a string of digits for an integer, and so does kwire.
  std::vector<spec::SpecError> errors;
  auto m = spec::parse_spec(R"({"apiKey": "63", "type": "request", "name": "X", "validVersions": "0-1",
      "flexibleVersions": "0+", "fields": [
        {"name": "A", "type": "[]uuid", "versions": "1+", "taggedVersions": "1+", "tag": "0"}]})",
                            "Test.json", errors);
  ASSERT_TRUE(m.has_value()) << errors.at(0).str();
  EXPECT_EQ(m->api_key, 63);
  EXPECT_EQ(m->fields.at(0).tag, 0);

  auto e = errors_of(R"({"apiKey": 1, "type": "request", "name": "X", "validVersions": "0", "flexibleVersions": "0+",
      "fields": [{"name": "A", "type": "int32", "versions": "0+", "taggedVersions": "0+", "tag": "zero"}]})");
  EXPECT_EQ(e.at(0).str(), "Test.json: field A: \"tag\" is not a non-negative integer");
  e = errors_of(R"({"apiKey": "1x", "type": "request", "name": "X", "validVersions": "0", "fields": []})");
  EXPECT_EQ(e.at(0).str(), "Test.json: apiKey is not an integer");
}

TEST(SpecModel, FieldLevelFlexibleVersionsOverrideTheMessage) {
  // The request header's ClientId stays a classic string in flexible v2.
  const auto& ps = ProgramSet::release();
  const FieldDesc& root = ps.field(ps.request_header(2));
  const StructProgram& sp = ps.structure(static_cast<uint32_t>(root.sub));
  const FieldDesc& client = ps.field(sp.first_field + 3);
  EXPECT_EQ(client.name, "ClientId");
  EXPECT_FALSE(client.compact());
  EXPECT_TRUE(client.nullable());
  EXPECT_TRUE(sp.flexible);
}

TEST(Overlays, ShippedDraftReplacesTheReleasedMessages) {
  ProgramSet ps = ProgramSet::release();
  ASSERT_TRUE(enable_builtin_overlay(ps, "kip-1331-draft"));
  const MessageProgram* update = ps.find(93, 0, Direction::Request);
  ASSERT_NE(update, nullptr);
  EXPECT_EQ(update->api_name, "UpdateStreamsGroupTopologyDescription");
  EXPECT_TRUE(update->overlay);
  const MessageProgram* hb = ps.find(88, 1, Direction::Response);
  EXPECT_TRUE(hb->overlay);
  // Untouched APIs stay as released.
  EXPECT_FALSE(ps.find(89, 1, Direction::Response)->overlay);

  // A draft push: GroupId, TopologyDescriptionId, an empty description.
  test::Bytes b = test::request_header_v2(93, 0, 4);
  b.cstr("orders-app").uuid(0xab).carr(0).carr(0).tags0().tags0();
  auto message = b.message();
  Frame f;
  FrameDecoder(ps).decode_request(message, f);
  ASSERT_TRUE(f.ok()) << f.errors[0].reason;
  EXPECT_EQ(test::at(f, ps, "TopologyDescriptionId")->v.p[0], 0xab);
  // The same bytes are not a valid released request.
  FrameDecoder(ProgramSet::release()).decode_request(message, f);
  EXPECT_FALSE(f.ok());
}

TEST(Overlays, SpecDirAtRunTime) {
  auto dir = std::filesystem::temp_directory_path() / ("kwire-overlay-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "DeleteGroupsResponse.json") << R"({"apiKey": 42, "type": "response",
    "name": "DeleteGroupsResponse", "validVersions": "0-4", "flexibleVersions": "2+",
    "fields": [ {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
      {"name": "Results", "type": "[]Result", "versions": "0+", "fields": [
        {"name": "GroupId", "type": "string", "versions": "0+"},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "Retry", "type": "bool", "versions": "4+"} ]} ]})";
  ProgramSet ps = ProgramSet::release();
  std::string error;
  ASSERT_TRUE(load_overlay_dir(ps, dir.string(), error)) << error;
  ASSERT_NE(ps.find(42, 4, Direction::Response), nullptr);
  EXPECT_TRUE(ps.find(42, 4, Direction::Response)->overlay);

  std::ofstream(dir / "Broken.json") << R"({"apiKey": 1, "type": "request", "name": "Broken", "validVersions": "0",
    "fields": [{"name": "A", "type": "Nope", "versions": "0+"}]})";
  ProgramSet ps2 = ProgramSet::release();
  EXPECT_FALSE(load_overlay_dir(ps2, dir.string(), error));
  EXPECT_NE(error.find("Broken.json: field A: type \"Nope\""), std::string::npos) << error;
  EXPECT_EQ(ps2.find(42, 4, Direction::Response), nullptr);  // nothing half-loaded
  std::filesystem::remove_all(dir);
}
