// Kafka sessions over TCP: framing across segments, correlation matching with
// pipelining, Kafka on other ports, and streams that are not Kafka.
#include <gtest/gtest.h>

#include <filesystem>

#include "dissector/output/output.hpp"
#include "dissector/protocol/decoder.hpp"
#include "dissector/protocol/records.hpp"
#include "dissector/protocol/session.hpp"
#include "pipeline/capture_file.hpp"
#include "recorder/pcap_writer.hpp"
#include "tests/test_support.hpp"

using namespace kwire;

namespace {

struct Seen {
  std::string summary;
  bool unmatched;
  bool not_kafka;
  std::string src;
  uint64_t packet;  // the packet that completed the message
};

class Collect : public FrameHandler {
 public:
  void on_frame(const FrameContext& ctx, const Frame& f) override {
    frames.push_back({summarize(ProgramSet::release(), f, &ctx), ctx.unmatched, ctx.not_kafka, ctx.src.str(), ctx.packet.number});
  }
  void on_capture_error(const PacketMeta&, const std::string& where, const std::string& reason) override {
    errors.push_back(where + ": " + reason);
  }
  void on_skip(const FrameContext& ctx, uint64_t length, const std::string& reason) override {
    skips.push_back(ctx.src.str() + " " + std::to_string(ctx.stream_offset) + "+" + std::to_string(length) + ": " + reason);
  }
  std::vector<Seen> frames;
  std::vector<std::string> skips;
  std::vector<std::string> errors;
};

class Sessions : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() / ("kwire-session-" + std::to_string(::getpid()) + ".pcap")).string();
  }
  void TearDown() override { std::filesystem::remove(path_); }

  Collect decode(SessionOptions opts = {}) {
    Collect c;
    KafkaSessions sessions(ProgramSet::release(), opts, c);
    CaptureStats stats;
    std::string error;
    EXPECT_TRUE(read_capture_file(path_, {}, sessions, stats, error)) << error;
    return c;
  }

  static std::vector<uint8_t> join(std::vector<std::vector<uint8_t>> parts) {
    std::vector<uint8_t> out;
    for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
  }

  std::string path_;
};

}  // namespace

TEST_F(Sessions, PipelinedRequestsInOneSegmentAndAResponseInTinySegments) {
  {
    SyntheticCapture cap(path_);
    uint32_t c = cap.connect(make_endpoint("10.1.1.1", 40000), make_endpoint("10.1.1.2", 9092));
    cap.send(c, StreamSide::FromClient, join({test::heartbeat_request(1, "a", 0), test::heartbeat_request(2, "a", 1)}));
    cap.send(c, StreamSide::FromServer, test::heartbeat_response(1, "a", 1), 7);  // 7-byte segments
    cap.send(c, StreamSide::FromServer, test::heartbeat_response(2, "a", 2, 25), 3);
    cap.close(c);
  }
  auto seen = decode();
  ASSERT_EQ(seen.frames.size(), 4u);
  EXPECT_EQ(seen.frames[0].summary, "StreamsGroupHeartbeat v1 Request corr=1 group=orders-app member=a epoch=0");
  EXPECT_EQ(seen.frames[1].summary, "StreamsGroupHeartbeat v1 Request corr=2 group=orders-app member=a epoch=1");
  EXPECT_EQ(seen.frames[2].summary, "StreamsGroupHeartbeat v1 Response corr=1 member=a epoch=1 error=NONE");
  EXPECT_EQ(seen.frames[3].summary, "StreamsGroupHeartbeat v1 Response corr=2 member=a epoch=2 error=UNKNOWN_MEMBER_ID");
  EXPECT_TRUE(seen.errors.empty());
}

TEST_F(Sessions, KafkaOnAnotherPortIsRecognisedFromItsFirstRequest) {
  {
    SyntheticCapture cap(path_);
    uint32_t c = cap.connect(make_endpoint("127.0.0.1", 40001), make_endpoint("127.0.0.1", 19092));
    cap.send(c, StreamSide::FromClient, test::heartbeat_request(5, "b", 0));
    cap.send(c, StreamSide::FromServer, test::heartbeat_response(5, "b", 1));
  }
  auto seen = decode();
  ASSERT_EQ(seen.frames.size(), 2u);
  EXPECT_EQ(seen.frames[1].summary, "StreamsGroupHeartbeat v1 Response corr=5 member=b epoch=1 error=NONE");
  EXPECT_EQ(seen.frames[1].src, "127.0.0.1:19092");
}

TEST_F(Sessions, HandshakeNotCapturedAndTheBrokerSpeaksFirst) {
  {
    SyntheticCapture cap(path_);
    ConnectOptions mid;
    mid.handshake = false;
    // The first packet seen comes from the broker's side.
    uint32_t c = cap.connect(make_endpoint("127.0.0.1", 9092), make_endpoint("127.0.0.1", 40002), mid);
    cap.send(c, StreamSide::FromClient, test::heartbeat_response(3, "c", 4));
    cap.send(c, StreamSide::FromServer, test::heartbeat_request(4, "c", 4));
    cap.send(c, StreamSide::FromClient, test::heartbeat_response(4, "c", 4));
  }
  auto seen = decode();
  ASSERT_EQ(seen.frames.size(), 3u);
  EXPECT_TRUE(seen.frames[0].unmatched);
  EXPECT_EQ(seen.frames[0].summary, "Response corr=3 (unmatched: request not captured)");
  EXPECT_EQ(seen.frames[1].src, "127.0.0.1:40002");
  EXPECT_EQ(seen.frames[2].summary, "StreamsGroupHeartbeat v1 Response corr=4 member=c epoch=4 error=NONE");
}

// A capture that starts mid-connection: the first connection carries only a
// response to a request sent before the capture began, and ends before any
// other connection shows that 127.0.0.1:19092 (no Kafka port) is a broker.
// It is decoded once one does; an HTTP connection that ends just as early
// stays not Kafka.
TEST_F(Sessions, AConnectionEndingBeforeItsBrokerIsKnownIsDecodedOnceItIs) {
  {
    SyntheticCapture cap(path_);
    ConnectOptions mid;
    mid.handshake = false;
    const Endpoint broker = make_endpoint("127.0.0.1", 19092);
    uint32_t a = cap.connect(make_endpoint("127.0.0.1", 40010), broker, mid);
    cap.send(a, StreamSide::FromServer, test::heartbeat_response(7, "d", 3));  // packet 1
    cap.close(a, StreamSide::FromServer);                                       // packets 2-4
    uint32_t web = cap.connect(make_endpoint("127.0.0.1", 40012), make_endpoint("127.0.0.1", 8080));  // 5-7
    const std::string get = "GET / HTTP/1.1\r\nHost: x\r\n\r\n", ok = "HTTP/1.1 204 No Content\r\n\r\n";
    cap.send(web, StreamSide::FromClient, std::span(reinterpret_cast<const uint8_t*>(get.data()), get.size()));
    cap.send(web, StreamSide::FromServer, std::span(reinterpret_cast<const uint8_t*>(ok.data()), ok.size()));
    cap.close(web);
    uint32_t b = cap.connect(make_endpoint("127.0.0.1", 40011), broker);
    cap.send(b, StreamSide::FromClient, test::heartbeat_request(8, "e", 0));
    cap.send(b, StreamSide::FromServer, test::heartbeat_response(8, "e", 1));
  }
  for (bool wait : {true, false}) {
    SessionOptions opts;
    opts.wait_for_broker = wait;
    Collect c;
    KafkaSessions sessions(ProgramSet::release(), opts, c);
    CaptureStats stats;
    std::string error;
    ASSERT_TRUE(read_capture_file(path_, {}, sessions, stats, error)) << error;
    ASSERT_EQ(c.frames.size(), wait ? 3u : 2u) << "wait_for_broker " << wait;
    EXPECT_EQ(c.frames.front().summary, "StreamsGroupHeartbeat v1 Request corr=8 group=orders-app member=e epoch=0");
    EXPECT_EQ(c.frames.back().summary, "StreamsGroupHeartbeat v1 Response corr=8 member=e epoch=1 error=NONE");
    EXPECT_EQ(sessions.stats().not_kafka, wait ? 1u : 2u);
    EXPECT_EQ(sessions.stats().skipped_bytes, 0u);
    if (!wait) continue;
    // Decoded as soon as the request on the other connection shows the broker,
    // with the packet that brought it.
    EXPECT_EQ(c.frames[1].summary, "Response corr=7 (unmatched: request not captured)");
    EXPECT_TRUE(c.frames[1].unmatched);
    EXPECT_EQ(c.frames[1].src, "127.0.0.1:19092");
    EXPECT_EQ(c.frames[1].packet, 1u);
    EXPECT_TRUE(c.skips.empty()) << c.skips.front();
  }
}

TEST_F(Sessions, GuessDecodesAnUnmatchedResponseAndSaysSo) {
  {
    SyntheticCapture cap(path_);
    ConnectOptions mid;
    mid.handshake = false;
    uint32_t c = cap.connect(make_endpoint("127.0.0.1", 40003), make_endpoint("127.0.0.1", 9092), mid);
    cap.send(c, StreamSide::FromServer, test::heartbeat_response(3, "c", 4));
  }
  SessionOptions opts;
  opts.guess = true;
  auto seen = decode(opts);
  ASSERT_EQ(seen.frames.size(), 1u);
  EXPECT_TRUE(seen.frames[0].unmatched);
  EXPECT_NE(seen.frames[0].summary.find("[version guessed: request not captured]"), std::string::npos)
      << seen.frames[0].summary;
}

// ConsumerGroupHeartbeat v1 and ShareGroupHeartbeat v1 responses have the
// same layout: a guess takes the api the client was seen sending.
TEST_F(Sessions, GuessPrefersTheApisTheClientSent) {
  auto request = [](int corr) {
    test::Bytes b = test::request_header_v2(68, 1, corr);
    b.cstr("g").cstr("m").i32(3).cnull().cnull().i32(-1)  // GroupId, MemberId, MemberEpoch, InstanceId, RackId, RebalanceTimeoutMs
        .cnull().cnull().cnull().cnull().tags0();          // SubscribedTopicNames, SubscribedTopicRegex, ServerAssignor, TopicPartitions
    return b.message();
  };
  auto response = [](int corr) {
    test::Bytes b;
    b.i32(corr).tags0();
    b.i32(0).i16(0).cnull().cstr("m").i32(4).i32(5000).i8(-1).tags0();  // ..., MemberEpoch, HeartbeatIntervalMs, Assignment: null
    return b.message();
  };
  {
    SyntheticCapture cap(path_);
    ConnectOptions mid;
    mid.handshake = false;
    uint32_t c = cap.connect(make_endpoint("127.0.0.1", 40020), make_endpoint("127.0.0.1", 9092), mid);
    cap.send(c, StreamSide::FromClient, request(5));
    cap.send(c, StreamSide::FromServer, join({response(4), response(5)}));  // 4's request came before the capture
  }
  SessionOptions opts;
  opts.guess = true;
  auto seen = decode(opts);
  ASSERT_EQ(seen.frames.size(), 3u);
  EXPECT_TRUE(seen.frames[1].unmatched);
  EXPECT_TRUE(seen.frames[1].summary.starts_with("ConsumerGroupHeartbeat v1 Response corr=4 "))
      << seen.frames[1].summary;
  EXPECT_NE(seen.frames[1].summary.find("[version guessed: request not captured]"), std::string::npos);
  EXPECT_FALSE(seen.frames[2].unmatched);
  EXPECT_TRUE(seen.frames[2].summary.starts_with("ConsumerGroupHeartbeat v1 Response corr=5 ")) << seen.frames[2].summary;
}

// A capture that starts inside a request whose record data holds 300 false
// message starts, each claiming 256 MiB (0x10000000 with a Produce v13 head
// and a short client id): the real request behind them is still found.
TEST_F(Sessions, FalseStartsClaimingHugeSizesDoNotHideTheNextRequest) {
  std::vector<uint8_t> junk;
  for (int i = 0; i < 300; ++i) {
    const uint8_t head[20] = {0x10, 0, 0, 0, 0, 0, 0, 13, 0, 0, 0, 1, 0, 3, 'a', 'b', 'c', 0, 0, 0};
    junk.insert(junk.end(), head, head + sizeof head);
  }
  {
    SyntheticCapture cap(path_);
    ConnectOptions mid;
    mid.handshake = false;
    uint32_t c = cap.connect(make_endpoint("127.0.0.1", 40030), make_endpoint("127.0.0.1", 9092), mid);
    cap.send(c, StreamSide::FromClient, junk);
    cap.send(c, StreamSide::FromClient, test::heartbeat_request(9, "z", 2), 7);  // not whole when first seen
    cap.send(c, StreamSide::FromServer, test::heartbeat_response(9, "z", 3));
  }
  auto seen = decode();
  ASSERT_EQ(seen.frames.size(), 2u);
  EXPECT_EQ(seen.frames[0].summary, "StreamsGroupHeartbeat v1 Request corr=9 group=orders-app member=z epoch=2");
  EXPECT_EQ(seen.frames[1].summary, "StreamsGroupHeartbeat v1 Response corr=9 member=z epoch=3 error=NONE");
  ASSERT_EQ(seen.skips.size(), 1u);
  EXPECT_TRUE(seen.skips[0].starts_with("127.0.0.1:40030 0+6000: ")) << seen.skips[0];
}

// The capture starts inside a response, on a segment of 10 bytes that read as
// a whole 6-byte message (size 6, correlation id 2816), followed by bytes
// whose size prefix claims 151 MB. Taking that for a message boundary would
// report a response that never was and swallow the rest of the direction;
// the lone message waits for confirmation, and the ids that follow refute it.
TEST_F(Sessions, ALoneMessageAtTheStartIsNotTakenOnItsSizeAlone) {
  const std::vector<uint8_t> looks_whole = {0, 0, 0, 6, 0, 0, 0x0b, 0, 0, 0};
  const std::vector<uint8_t> rest = {0x09, 0, 0, 0x0c, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0};
  {
    SyntheticCapture cap(path_);
    ConnectOptions mid;
    mid.handshake = false;
    uint32_t c = cap.connect(make_endpoint("127.0.0.1", 40040), make_endpoint("127.0.0.1", 9092), mid);
    cap.send(c, StreamSide::FromServer, looks_whole);
    cap.send(c, StreamSide::FromServer, rest);
    cap.send(c, StreamSide::FromClient, test::heartbeat_request(5, "y", 1));
    cap.send(c, StreamSide::FromServer, test::heartbeat_response(5, "y", 2));
  }
  auto seen = decode();
  ASSERT_EQ(seen.frames.size(), 2u);
  EXPECT_EQ(seen.frames[0].summary, "StreamsGroupHeartbeat v1 Request corr=5 group=orders-app member=y epoch=1");
  EXPECT_EQ(seen.frames[1].summary, "StreamsGroupHeartbeat v1 Response corr=5 member=y epoch=2 error=NONE");
  EXPECT_FALSE(seen.frames[1].unmatched);
  ASSERT_EQ(seen.skips.size(), 1u);
  EXPECT_TRUE(seen.skips[0].starts_with("127.0.0.1:9092 0+24: ")) << seen.skips[0];
}

// Two answers to requests sent before the capture began, in one segment, ids
// 8 then 7: a Java client numbers a request when it queues it, and the
// ApiVersions it sends on connecting overtakes a request queued before. The
// sizes chain and the ids are a client's, so both are messages; ids 8 then
// 9000 are not, and the bytes are skipped.
TEST_F(Sessions, TwoWholeMessagesAtTheStartNeedIdsAClientWouldSend) {
  for (int second : {7, 9000}) {
    {
      SyntheticCapture cap(path_);
      ConnectOptions mid;
      mid.handshake = false;
      uint32_t c = cap.connect(make_endpoint("127.0.0.1", 40050), make_endpoint("127.0.0.1", 9092), mid);
      cap.send(c, StreamSide::FromServer, join({test::heartbeat_response(8, "x", 1), test::heartbeat_response(second, "x", 1)}));
    }
    auto seen = decode();
    if (second == 7) {
      ASSERT_EQ(seen.frames.size(), 2u);
      EXPECT_EQ(seen.frames[0].summary, "Response corr=8 (unmatched: request not captured)");
      EXPECT_EQ(seen.frames[1].summary, "Response corr=7 (unmatched: request not captured)");
      EXPECT_TRUE(seen.skips.empty()) << seen.skips.front();
    } else {
      EXPECT_TRUE(seen.frames.empty()) << seen.frames.front().summary;
      ASSERT_EQ(seen.skips.size(), 1u);
      const size_t both = 2 * test::heartbeat_response(8, "x", 1).size();
      EXPECT_TRUE(seen.skips[0].starts_with("127.0.0.1:9092 0+" + std::to_string(both) + ": ")) << seen.skips[0];
    }
  }
}

// A TLS handshake record holding a ClientHello of one byte, from both sides:
// TLS, and the capture ends before its handshake does.
TEST_F(Sessions, TlsOnAKafkaPortIsReportedNotDecoded) {
  {
    SyntheticCapture cap(path_);
    uint32_t c = cap.connect(make_endpoint("127.0.0.1", 40004), make_endpoint("127.0.0.1", 9093));
    std::vector<uint8_t> hello = {0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00};
    cap.send(c, StreamSide::FromClient, hello);
    cap.send(c, StreamSide::FromServer, hello);
  }
  SessionOptions opts;
  opts.ports = {9093};
  auto seen = decode(opts);
  ASSERT_EQ(seen.frames.size(), 1u);
  EXPECT_TRUE(seen.frames[0].not_kafka);
  EXPECT_EQ(seen.frames[0].summary, "Not Kafka: stream is TLS whose handshake the capture does not finish");
}

TEST_F(Sessions, LostSegmentIsReportedAndDecodingResumesAfterIt) {
  // Two 63-byte heartbeats in 20-byte segments; [20,40) is lost. The first is
  // reported as far as it goes, the gap and the rest of the first message are
  // reported as skipped, and the second decodes.
  {
    SyntheticCapture cap(path_);
    uint32_t c = cap.connect(make_endpoint("127.0.0.1", 40005), make_endpoint("127.0.0.1", 9092));
    auto two = join({test::heartbeat_request(1, "d", 0), test::heartbeat_request(2, "d", 1)});
    ASSERT_EQ(two.size(), 126u);
    cap.send(c, StreamSide::FromClient, two, 20, {0, 2, 3, 4, 5, 6});  // the second segment is lost
    cap.send(c, StreamSide::FromServer, test::heartbeat_response(2, "d", 1));
    cap.close(c);
  }
  auto seen = decode();
  ASSERT_EQ(seen.frames.size(), 3u);
  EXPECT_EQ(seen.frames[0].summary.rfind("StreamsGroupHeartbeat v1 Request corr=1 [malformed at offset 0: message truncated: "
                                         "size prefix says 59 bytes, the capture has 16 (20 bytes at stream offset 20 are "
                                         "missing from the capture)]", 0), 0u)
      << seen.frames[0].summary;
  EXPECT_EQ(seen.frames[1].summary, "StreamsGroupHeartbeat v1 Request corr=2 group=orders-app member=d epoch=1");
  EXPECT_EQ(seen.frames[2].summary, "StreamsGroupHeartbeat v1 Response corr=2 member=d epoch=1 error=NONE");
  EXPECT_EQ(seen.skips, (std::vector<std::string>{
      "127.0.0.1:40005 20+20: missing from the capture; decoding resumes at the next plausible message start",
      "127.0.0.1:40005 40+23: after bytes missing from the capture; skipped to the next plausible message start"}));
}

TEST_F(Sessions, ImplausibleSizePrefixIsSkippedAndDecodingGoesOn) {
  // Garbage between two requests: a size prefix of 0x7fffffff and ten bytes.
  std::vector<uint8_t> garbage = {0x7f, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  {
    SyntheticCapture cap(path_);
    uint32_t c = cap.connect(make_endpoint("127.0.0.1", 40011), make_endpoint("127.0.0.1", 9092));
    cap.send(c, StreamSide::FromClient, join({test::heartbeat_request(1, "g", 0), garbage, test::heartbeat_request(2, "g", 1)}));
    cap.send(c, StreamSide::FromServer, join({test::heartbeat_response(1, "g", 1), test::heartbeat_response(2, "g", 1)}));
    cap.close(c);
  }
  auto seen = decode();
  ASSERT_EQ(seen.frames.size(), 4u);
  EXPECT_EQ(seen.frames[1].summary, "StreamsGroupHeartbeat v1 Request corr=2 group=orders-app member=g epoch=1");
  EXPECT_EQ(seen.frames[3].summary, "StreamsGroupHeartbeat v1 Response corr=2 member=g epoch=1 error=NONE");
  EXPECT_EQ(seen.skips, (std::vector<std::string>{
      "127.0.0.1:40011 63+14: size prefix 2147483647 is not a plausible Kafka message size; "
      "skipped to the next plausible message start"}));
}

TEST_F(Sessions, ResponseCutByTheEndOfTheCaptureKeepsTheApiOfItsRequest) {
  auto response = test::heartbeat_response(7, "h", 3);
  std::vector<uint8_t> half(response.begin(), response.begin() + 30);
  {
    SyntheticCapture cap(path_);
    uint32_t c = cap.connect(make_endpoint("127.0.0.1", 40012), make_endpoint("127.0.0.1", 9092));
    cap.send(c, StreamSide::FromClient, test::heartbeat_request(7, "h", 3));
    cap.send(c, StreamSide::FromServer, half);
  }
  Collect c;
  KafkaSessions sessions(ProgramSet::release(), {}, c);
  CaptureStats stats;
  std::string error;
  ASSERT_TRUE(read_capture_file(path_, {}, sessions, stats, error)) << error;
  ASSERT_EQ(c.frames.size(), 2u);
  // The fields before the cut are kept; the first error says what happened.
  EXPECT_EQ(c.frames[1].summary.rfind("StreamsGroupHeartbeat v1 Response corr=7 member=h epoch=3 error=NONE "
                                      "[malformed at offset 0: message truncated: size prefix says " +
                                      std::to_string(response.size() - 4) +
                                      " bytes, the capture has 26 (the capture ends here)]", 0), 0u)
      << c.frames[1].summary;
  EXPECT_EQ(sessions.stats().unanswered, 0u);
}

TEST_F(Sessions, AConnectionThatStartsWithAWholeResponseOnAnUnknownPortIsDecodedFromItsNextRequest) {
  // An idle consumer's long poll: the capture starts with the broker's
  // answer to a request it did not see, on a port nobody named; then the
  // next request and its response.
  {
    SyntheticCapture cap(path_);
    ConnectOptions mid;
    mid.handshake = false;
    uint32_t c = cap.connect(make_endpoint("127.0.0.1", 40013), make_endpoint("127.0.0.1", 31313), mid);
    cap.send(c, StreamSide::FromServer, test::heartbeat_response(41, "i", 9));
    cap.send(c, StreamSide::FromClient, test::heartbeat_request(42, "i", 9));
    cap.send(c, StreamSide::FromServer, test::heartbeat_response(42, "i", 9));
  }
  SessionOptions opts;
  opts.ports.clear();
  auto seen = decode(opts);
  ASSERT_EQ(seen.frames.size(), 3u);
  EXPECT_EQ(seen.frames[0].summary, "StreamsGroupHeartbeat v1 Request corr=42 group=orders-app member=i epoch=9");
  EXPECT_EQ(seen.frames[0].src, "127.0.0.1:40013");
  EXPECT_TRUE(seen.frames[1].unmatched);
  EXPECT_EQ(seen.frames[1].summary, "Response corr=41 (unmatched: request not captured)");
  EXPECT_EQ(seen.frames[2].summary, "StreamsGroupHeartbeat v1 Response corr=42 member=i epoch=9 error=NONE");
  EXPECT_TRUE(seen.skips.empty());
}

TEST_F(Sessions, WhichSideIsTheClientComesFromTheBytesNotFromWhoSpokeFirst) {
  // No handshake, no known port, and the broker's side starts inside a
  // message: its leftover bytes come first. The client's requests must still
  // be read as requests, and the leftover reported as skipped.
  auto earlier = test::heartbeat_response(50, "j", 2);
  std::vector<uint8_t> leftover(earlier.begin() + 21, earlier.end());
  {
    SyntheticCapture cap(path_);
    ConnectOptions mid;
    mid.handshake = false;
    uint32_t c = cap.connect(make_endpoint("127.0.0.1", 31314), make_endpoint("127.0.0.1", 40014), mid);
    cap.send(c, StreamSide::FromClient, leftover);  // the broker's side, seen first
    cap.send(c, StreamSide::FromServer, test::heartbeat_request(51, "j", 2));
    cap.send(c, StreamSide::FromClient, test::heartbeat_response(51, "j", 3));
  }
  SessionOptions opts;
  opts.ports.clear();
  auto seen = decode(opts);
  ASSERT_EQ(seen.frames.size(), 2u);
  EXPECT_EQ(seen.frames[0].summary, "StreamsGroupHeartbeat v1 Request corr=51 group=orders-app member=j epoch=2");
  EXPECT_EQ(seen.frames[0].src, "127.0.0.1:40014");
  EXPECT_EQ(seen.frames[1].summary, "StreamsGroupHeartbeat v1 Response corr=51 member=j epoch=3 error=NONE");
  EXPECT_EQ(seen.skips, (std::vector<std::string>{"127.0.0.1:31314 0+" + std::to_string(leftover.size()) +
      ": the capture starts inside this connection; skipped to the next plausible message start"}));
}

TEST_F(Sessions, OtherTcpTrafficIsIgnored) {
  {
    SyntheticCapture cap(path_);
    uint32_t c = cap.connect(make_endpoint("127.0.0.1", 40006), make_endpoint("127.0.0.1", 8080));
    std::string http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    cap.send(c, StreamSide::FromClient, std::vector<uint8_t>(http.begin(), http.end()));
  }
  EXPECT_TRUE(decode().frames.empty());
}

TEST_F(Sessions, AMalformedMessageDoesNotStopTheNextOne) {
  // DeleteGroups v1 whose only group name claims a negative length, then a
  // well-formed heartbeat on the same connection.
  test::Bytes bad;
  bad.i16(42).i16(1).i32(1).str("c").i32(1).i16(-7);
  {
    SyntheticCapture cap(path_);
    uint32_t c = cap.connect(make_endpoint("127.0.0.1", 40007), make_endpoint("127.0.0.1", 9092));
    cap.send(c, StreamSide::FromClient, join({bad.message(), test::heartbeat_request(2, "e", 5)}));
    cap.send(c, StreamSide::FromServer, test::heartbeat_response(2, "e", 5));
  }
  auto seen = decode();
  ASSERT_EQ(seen.frames.size(), 3u);
  EXPECT_EQ(seen.frames[0].summary, "DeleteGroups v1 Request corr=1 [malformed at offset 19: GroupsNames: negative length -7]");
  EXPECT_EQ(seen.frames[1].summary, "StreamsGroupHeartbeat v1 Request corr=2 group=orders-app member=e epoch=5");
  EXPECT_EQ(seen.frames[2].summary, "StreamsGroupHeartbeat v1 Response corr=2 member=e epoch=5 error=NONE");
}

TEST_F(Sessions, RawSaslTokensAfterSaslHandshakeV0AreNotDecodedAsKafka) {
  test::Bytes hs_req, hs_resp, token;
  hs_req.i16(17).i16(0).i32(1).str("c").str("PLAIN");
  hs_resp.i32(1).i16(0).i32(1).str("PLAIN");
  token.raw(std::string("\0user\0secret", 12));
  {
    SyntheticCapture cap(path_);
    uint32_t c = cap.connect(make_endpoint("127.0.0.1", 40008), make_endpoint("127.0.0.1", 9092));
    cap.send(c, StreamSide::FromClient, hs_req.message());
    cap.send(c, StreamSide::FromServer, hs_resp.message());
    cap.send(c, StreamSide::FromClient, token.message());
    cap.send(c, StreamSide::FromServer, test::Bytes().message());
  }
  auto seen = decode();
  ASSERT_EQ(seen.frames.size(), 4u);
  EXPECT_EQ(seen.frames[1].summary, "SaslHandshake v0 Response corr=1 error=NONE");
  EXPECT_TRUE(seen.frames[2].not_kafka);
  EXPECT_EQ(seen.frames[2].summary, "Not Kafka: SASL token after SaslHandshake v0");
  EXPECT_TRUE(seen.frames[3].not_kafka);
}

TEST_F(Sessions, KafkaDecodingResumesOnceRawSaslAuthenticationIsOver) {
  // SCRAM over SaslHandshake v0: two token round trips, then ordinary requests.
  test::Bytes hs_req, hs_resp;
  hs_req.i16(17).i16(0).i32(1).str("c").str("SCRAM-SHA-256");
  hs_resp.i32(1).i16(0).i32(1).str("SCRAM-SHA-256");
  auto token = [](const std::string& t) { test::Bytes b; b.raw(t); return b.message(); };
  {
    SyntheticCapture cap(path_);
    uint32_t c = cap.connect(make_endpoint("127.0.0.1", 40015), make_endpoint("127.0.0.1", 9092));
    cap.send(c, StreamSide::FromClient, hs_req.message());
    cap.send(c, StreamSide::FromServer, hs_resp.message());
    cap.send(c, StreamSide::FromClient, token("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"));
    cap.send(c, StreamSide::FromServer, token("r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"));
    cap.send(c, StreamSide::FromClient, token("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="));
    cap.send(c, StreamSide::FromServer, token("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="));
    cap.send(c, StreamSide::FromClient, test::heartbeat_request(2, "k", 0));
    cap.send(c, StreamSide::FromServer, test::heartbeat_response(2, "k", 1));
  }
  Collect c;
  KafkaSessions sessions(ProgramSet::release(), {}, c);
  CaptureStats stats;
  std::string error;
  ASSERT_TRUE(read_capture_file(path_, {}, sessions, stats, error)) << error;
  ASSERT_EQ(c.frames.size(), 8u);
  for (int i = 2; i < 6; ++i) EXPECT_TRUE(c.frames[i].not_kafka) << c.frames[i].summary;
  EXPECT_EQ(c.frames[6].summary, "StreamsGroupHeartbeat v1 Request corr=2 group=orders-app member=k epoch=0");
  EXPECT_EQ(c.frames[7].summary, "StreamsGroupHeartbeat v1 Response corr=2 member=k epoch=1 error=NONE");
  EXPECT_EQ(sessions.stats().sasl_tokens, 4u);
}

TEST_F(Sessions, AnOlderClientsRemovedVersionsDecodeOnAnyPort) {
  // Produce v2 and Fetch v0: versions Kafka 4.0 dropped (KIP-896), as a Kafka
  // 0.10-era client still sends them to a 3.x broker. The second connection
  // is on a port kwire is not told about: found from its first request.
  const std::vector<uint8_t> set = encode_legacy_message(1, 0, 1700000000000, "k", "v");
  test::Bytes produce;
  produce.i16(0).i16(2).i32(5).str("old-producer");
  produce.i16(1).i32(30000).i32(1).str("orders").i32(1).i32(0).i32(static_cast<int64_t>(set.size())).raw(set);
  test::Bytes produced;
  produced.i32(5);
  produced.i32(1).str("orders").i32(1).i32(0).i16(0).i64(100).i64(-1)  // Index, ErrorCode, BaseOffset, LogAppendTimeMs
      .i32(0);                                                          // ThrottleTimeMs
  test::Bytes fetch;
  fetch.i16(1).i16(0).i32(6).str("old-consumer");
  fetch.i32(-1).i32(500).i32(1).i32(1).str("orders").i32(1).i32(0).i64(100).i32(1048576);
  test::Bytes fetched;
  fetched.i32(6).i32(1).str("orders").i32(1).i32(0).i16(1).i64(-1).i32(0);  // OFFSET_OUT_OF_RANGE, no records
  {
    SyntheticCapture cap(path_);
    uint32_t a = cap.connect(make_endpoint("10.1.1.1", 40000), make_endpoint("10.1.1.2", 9092));
    cap.send(a, StreamSide::FromClient, produce.message());
    cap.send(a, StreamSide::FromServer, produced.message());
    cap.close(a);
    uint32_t b = cap.connect(make_endpoint("10.1.1.1", 40001), make_endpoint("10.1.1.3", 29092));
    cap.send(b, StreamSide::FromClient, fetch.message());
    cap.send(b, StreamSide::FromServer, fetched.message());
    cap.close(b);
  }
  auto seen = decode();
  ASSERT_EQ(seen.frames.size(), 4u);
  EXPECT_EQ(seen.frames[0].summary, "Produce v2 Request corr=5");
  EXPECT_EQ(seen.frames[1].summary, "Produce v2 Response corr=5");
  EXPECT_EQ(seen.frames[2].summary, "Fetch v0 Request corr=6");
  EXPECT_EQ(seen.frames[3].summary, "Fetch v0 Response corr=6 Responses.Partitions.ErrorCode=OFFSET_OUT_OF_RANGE");
  for (const auto& f : seen.frames) EXPECT_FALSE(f.unmatched || f.not_kafka) << f.summary;
  EXPECT_TRUE(seen.errors.empty());
}

TEST(ApiVersions, UnsupportedVersionAnswerIsReadInTheV0Layout) {
  // A v4 request the broker cannot serve: it answers UNSUPPORTED_VERSION (35)
  // with the v0 body (ErrorCode, classic ApiKeys array) and header v0.
  test::Bytes b;
  b.i32(3).i16(35).i32(1).i16(18).i16(0).i16(3);
  auto bytes = b.message();
  Frame f;
  FrameDecoder(ProgramSet::release()).decode_response(bytes, 18, 4, f);
  ASSERT_TRUE(f.ok()) << f.errors[0].reason;
  EXPECT_EQ(f.api_version, 0);
  EXPECT_EQ(f.header_version, 0);
  EXPECT_EQ(test::at(f, ProgramSet::release(), "ApiKeys[0].MaxVersion")->v.i, 3);
}

TEST_F(Sessions, SizePrefixInASegmentOfItsOwnOnAnUnusualPort) {
  auto request = test::heartbeat_request(1, "f", 0);
  std::vector<uint8_t> prefix(request.begin(), request.begin() + 4);
  std::vector<uint8_t> rest(request.begin() + 4, request.end());
  {
    SyntheticCapture cap(path_);
    uint32_t c = cap.connect(make_endpoint("127.0.0.1", 40009), make_endpoint("127.0.0.1", 42187));
    cap.send_at(c, StreamSide::FromClient, 0, prefix);
    cap.send_at(c, StreamSide::FromClient, 4, rest);
    cap.send(c, StreamSide::FromServer, test::heartbeat_response(1, "f", 1));
    // A second connection to the same broker whose first request kwire does
    // not know (api key 999): still Kafka, because the broker is.
    uint32_t d = cap.connect(make_endpoint("127.0.0.1", 40010), make_endpoint("127.0.0.1", 42187));
    test::Bytes unknown;
    unknown.i16(999).i16(0).i32(3).str("c");
    cap.send(d, StreamSide::FromClient, unknown.message());
  }
  auto seen = decode();
  ASSERT_EQ(seen.frames.size(), 3u);
  EXPECT_EQ(seen.frames[0].summary, "StreamsGroupHeartbeat v1 Request corr=1 group=orders-app member=f epoch=0");
  EXPECT_EQ(seen.frames[1].summary, "StreamsGroupHeartbeat v1 Response corr=1 member=f epoch=1 error=NONE");
  EXPECT_EQ(seen.frames[2].summary, "ApiKey 999 v0 Request corr=3 [malformed at offset 4: unknown api key 999]");
}
