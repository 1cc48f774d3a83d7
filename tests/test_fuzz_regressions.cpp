// Inputs the fuzzers (fuzz/) found, minimized, with what must happen instead.
// Each names the target that found it; the bytes are inline.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "dissector/codegen/compiler.hpp"
#include "dissector/spec/spec_model.hpp"
#include "tests/test_support.hpp"

using namespace kwire;

namespace {

// parse_spec must turn any text into a spec or errors; it may not throw.
void expect_rejected(const std::string& text, const std::string& what) {
  std::vector<spec::SpecError> errors;
  std::optional<spec::MessageSpec> m;
  EXPECT_NO_THROW(m = spec::parse_spec(text, "fuzz.json", errors)) << what;
  EXPECT_FALSE(m.has_value()) << what;
  EXPECT_FALSE(errors.empty()) << what;
}

std::string data_spec(const std::string& top, const std::string& field) {
  return R"({"name": "X", "type": "data", "validVersions": "0", "flexibleVersions": "none", )" + top +
         R"("fields": [{"name": "A", "type": "int8", "versions": "0+")" + field + "}]}";
}

}  // namespace

// fuzz_spec: "ignorable", "mapKey" and "latestVersionUnstable" were read with
// json::value(key, false), which throws nlohmann::type_error when the value is
// not a boolean; `kwire decode --spec-dir` then died in std::terminate.
TEST(FuzzRegression, SpecFlagsThatAreNotBooleansAreErrors) {
  expect_rejected(data_spec("", R"(, "ignorable": "0+")"), "ignorable as a string");
  expect_rejected(data_spec("", R"(, "mapKey": [])"), "mapKey as an array");
  expect_rejected(data_spec(R"("latestVersionUnstable": "yes", )", ""), "latestVersionUnstable as a string");
}

// fuzz_spec: a number too large for a double makes nlohmann's parser throw
// out_of_range (406), which parse_spec did not catch (it caught parse_error).
// fuzz_spec: a field with "name": "" was skipped by validation as if its
// missing name had been reported, so its unknown type ("response", neither
// a primitive nor a struct of the spec) reached the compiler, which bound a
// reference to the null struct lookup.
TEST(FuzzRegression, AnEmptyFieldNameIsAnError) {
  std::vector<spec::SpecError> errors;
  auto m = spec::parse_spec(data_spec("", "}, {\"name\": \"\", \"type\": \"response\", \"versions\": \"0+\""),
                            "fuzz.json", errors);
  EXPECT_FALSE(m.has_value());
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors.front().reason.find("empty field name"), std::string::npos) << errors.front().reason;
}

TEST(FuzzRegression, SpecNumberOverflowIsAnError) {
  expect_rejected(R"({"name": "X", "type": "data", "validVersions": "0", "x": 7e888888800000000000000, "fields": []})",
                  "number overflow");
}

// fuzz_spec (with fuzz/spec.dict): a struct type that contains itself, by a
// common struct or by an inline struct's name, sent SpecCompiler into
// unbounded recursion (stack overflow; `kwire decode --spec-dir` crashed).
// Such a spec must be rejected by the loader, or at least compile without
// crashing. Run in a child process: the failure mode is a crash.
TEST(FuzzRegression, RecursiveStructTypesDoNotCrashTheCompiler) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string specs[] = {
    R"({"apiKey": 200, "type": "request", "name": "LoopRequest", "validVersions": "0", "flexibleVersions": "0+",
        "fields": [{"name": "A", "type": "Node", "versions": "0+"}],
        "commonStructs": [{"name": "Node", "versions": "0+", "fields": [
          {"name": "Next", "type": "Node", "versions": "0+", "nullableVersions": "0+"}]}]})",
    R"({"apiKey": 200, "type": "request", "name": "LoopRequest", "validVersions": "0", "flexibleVersions": "0+",
        "fields": [{"name": "A", "type": "[]Node", "versions": "0+", "fields": [
          {"name": "Kids", "type": "[]Node", "versions": "0+"}]}]})",
  };
  for (const auto& text : specs) {
    EXPECT_EXIT(
        {
          std::vector<spec::SpecError> errors;
          auto m = spec::parse_spec(text, "loop.json", errors);
          if (m) {
            SpecCompiler c("overlay fuzz", true);
            c.add(*m);
          }
          std::exit(0);
        },
        ::testing::ExitedWithCode(0), "")
        << text;
  }
}

// fuzz_frame (KWIRE_FUZZ_EXACT=1): a varint in a non-minimal form (here the
// request header's tagged-field count 0 written as 0x80 0x00) decodes, as in
// Kafka's ByteUtils.readUnsignedVarint. The frame says it is not canonical,
// and re-encoding writes the minimal form.
// CreateAcls v3 request: api 30, version 3, correlation id, client id "",
// header tags 0x80 0x00, Creations [] (compact: 0x01), body tags 0x00.
TEST(FuzzRegression, NonMinimalVarintsDecodeAndReencodeMinimal) {
  const ProgramSet& ps = ProgramSet::release();
  test::Bytes b;
  b.raw(std::vector<uint8_t>{0x00, 0x1e, 0x00, 0x03, 0xd8, 0x00, 0x00, 0x10, 0x00, 0x00, 0x80, 0x00, 0x01, 0x00});
  const auto message = b.message();
  Frame f;
  FrameDecoder(ps).decode_request(message, f);
  ASSERT_TRUE(f.ok()) << f.errors.front().reason;
  EXPECT_FALSE(f.canonical);
  std::vector<uint8_t> again;
  std::string error;
  ASSERT_TRUE(FrameEncoder(ps).encode(f, again, error)) << error;
  test::Bytes minimal;
  minimal.raw(std::vector<uint8_t>{0x00, 0x1e, 0x00, 0x03, 0xd8, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x01, 0x00});
  EXPECT_EQ(again, minimal.message());

  Frame canonical;
  FrameDecoder(ps).decode_request(again, canonical);
  EXPECT_TRUE(canonical.canonical);
}

// Same class, found by reading the decoder after the case above: a nullable
// struct's marker byte is "any negative is null, anything else present" (as
// in Kafka's readers), and is re-encoded as -1 / 1. StreamsGroupHeartbeat v1
// request whose Topology marker is -2 (null).
TEST(FuzzRegression, NullableStructMarkersAreReencodedAsTheyCame) {
  const ProgramSet& ps = ProgramSet::release();
  test::Bytes b = test::request_header_v2(88, 1, 7);
  b.cstr("orders-app").cstr("member").i32(3).i32(0)  // GroupId, MemberId, MemberEpoch, EndpointInformationEpoch
      .cnull().cnull().i32(-1)                       // InstanceId, RackId, RebalanceTimeoutMs
      .i8(-2)                                        // Topology: null, marker -2
      .cnull().cnull().cnull()                       // Active/Standby/WarmupTasks
      .cnull().i8(-1).cnull().cnull().cnull()        // ProcessId, UserEndpoint, ClientTags, TaskOffsets, TaskEndOffsets
      .i8(0).tags0();                                // ShutdownApplication
  const auto message = b.message();
  Frame f;
  FrameDecoder(ps).decode_request(message, f);
  ASSERT_TRUE(f.ok()) << f.errors.front().reason;
  std::vector<uint8_t> again;
  std::string error;
  ASSERT_TRUE(FrameEncoder(ps).encode(f, again, error)) << error;
  EXPECT_EQ(again, message);
}
