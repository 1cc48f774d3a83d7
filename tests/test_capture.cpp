// read_capture_file end to end: SyntheticCapture writes a capture into a
// temporary directory, read_capture_file reads it back into a RecordingSink,
// and the tests check the bytes of each direction and the events.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "pipeline/capture_file.hpp"
#include "recorder/capture.hpp"
#include "recorder/pcap_writer.hpp"

namespace kwire {
namespace {

namespace fs = std::filesystem;
using Events = std::vector<std::string>;

constexpr StreamSide kClient = StreamSide::FromClient;
constexpr StreamSide kServer = StreamSide::FromServer;

// A payload of `n` recognisable bytes; different seeds give different bytes.
std::vector<uint8_t> payload(size_t n, uint8_t seed = 0) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(i * 7 + seed + i / 251);
  return out;
}

::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

::testing::AssertionResult starts_with(const std::string& text, const std::string& prefix) {
  if (text.starts_with(prefix)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not start with \"" << prefix << "\"";
}

std::vector<uint8_t> slice(const std::vector<uint8_t>& v, size_t from, size_t to) {
  return {v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(to)};
}

// Records what read_capture_file reports. `events` is a readable log in which
// consecutive data of one direction is merged:
//   "open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn"
//   "data 1 client [0,300)"    "gap 1 server [100,200)"
//   "close 1"                  "error packet 7"
// It also checks the StreamSink contract: offsets continue exactly where the
// previous data or gap of the direction ended, and each connection opens and
// closes once.
class RecordingSink : public StreamSink {
 public:
  struct Direction {
    std::vector<uint8_t> bytes;  // the data delivered, gaps left out
    uint64_t next = 0;           // offset after the last data or gap
  };
  struct Connection {
    TcpConnection info;
    Direction side[2];
    bool closed = false;
  };
  struct Delivery {
    uint32_t conn;
    StreamSide side;
    uint64_t offset;
    uint64_t length;
    uint64_t packet;  // PacketMeta::number
    int64_t ts_sec;
    int32_t ts_usec;
  };
  struct Error {
    PacketMeta meta;
    std::string where;
    std::string reason;
  };

  std::vector<std::string> events;
  std::map<uint32_t, Connection> connections;
  std::vector<Delivery> deliveries;  // every on_data call
  std::vector<Error> errors;

  const std::vector<uint8_t>& bytes(uint32_t conn, StreamSide side) {
    return connections.at(conn).side[static_cast<size_t>(side)].bytes;
  }
  const TcpConnection& info(uint32_t conn) { return connections.at(conn).info; }

  void on_open(const TcpConnection& c) override {
    EXPECT_EQ(connections.count(c.id), 0u) << "connection " << c.id << " opened twice";
    connections[c.id].info = c;
    events.push_back("open " + std::to_string(c.id) + " " + c.client.str() + " > " + c.server.str() +
                     (c.saw_syn ? " syn" : " no-syn"));
  }
  void on_data(const TcpConnection& c, StreamSide side, uint64_t offset, std::span<const uint8_t> data,
               const PacketMeta& meta) override {
    Direction& d = direction(c, side, offset);
    EXPECT_FALSE(data.empty());
    d.bytes.insert(d.bytes.end(), data.begin(), data.end());
    d.next = offset + data.size();
    deliveries.push_back({c.id, side, offset, data.size(), meta.number, meta.ts_sec, meta.ts_usec});
    log_range("data", c, side, offset, d.next);
  }
  void on_gap(const TcpConnection& c, StreamSide side, uint64_t offset, uint64_t length,
              const PacketMeta&) override {
    Direction& d = direction(c, side, offset);
    EXPECT_GT(length, 0u);
    d.next = offset + length;
    log_range("gap", c, side, offset, d.next);
  }
  void on_close(const TcpConnection& c) override {
    ASSERT_EQ(connections.count(c.id), 1u);
    EXPECT_FALSE(connections[c.id].closed) << "connection " << c.id << " closed twice";
    connections[c.id].closed = true;
    events.push_back("close " + std::to_string(c.id));
  }
  void on_error(const PacketMeta& meta, const std::string& where, const std::string& reason) override {
    errors.push_back({meta, where, reason});
    events.push_back("error " + where);
  }

 private:
  Direction& direction(const TcpConnection& c, StreamSide side, uint64_t offset) {
    Connection& conn = connections[c.id];
    EXPECT_FALSE(conn.closed) << "data after close on connection " << c.id;
    Direction& d = conn.side[static_cast<size_t>(side)];
    EXPECT_EQ(offset, d.next) << "connection " << c.id << " skipped or repeated stream bytes";
    return d;
  }
  void log_range(const char* what, const TcpConnection& c, StreamSide side, uint64_t from, uint64_t to) {
    const std::string head = std::string(what) + " " + std::to_string(c.id) +
                             (side == kClient ? " client [" : " server [");
    // Merge with the previous event when it is the same kind on the same direction.
    if (!events.empty() && events.back().starts_with(head) && last_end_ == from) {
      events.back() = head + std::to_string(last_start_) + "," + std::to_string(to) + ")";
    } else {
      events.push_back(head + std::to_string(from) + "," + std::to_string(to) + ")");
      last_start_ = from;
    }
    last_end_ = to;
  }
  uint64_t last_start_ = 0;
  uint64_t last_end_ = 0;
};

struct ReadResult {
  bool ok = false;
  std::string error;
  CaptureStats stats;
  RecordingSink sink;
};

ReadResult read(const fs::path& file, const CaptureOptions& opts = {}) {
  ReadResult r;
  r.ok = read_capture_file(file.string(), opts, r.sink, r.stats, r.error);
  return r;
}

class CaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "_" + info->name();
    for (char& ch : name) {
      if (ch == '/') ch = '_';
    }
    dir_ = fs::temp_directory_path() / ("kwire_test_capture_" + std::to_string(getpid())) / name;
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (std::getenv("KWIRE_KEEP_TEST_CAPTURES")) {  // to look at them with tshark
      std::cout << "captures kept in " << dir_.string() << "\n";
      return;
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
    fs::remove(dir_.parent_path(), ec);  // once empty
  }
  fs::path file(const std::string& name) const { return dir_ / name; }

  fs::path dir_;
  const Endpoint client_ = make_endpoint("10.0.0.1", 40000);
  const Endpoint server_ = make_endpoint("10.0.0.2", 9092);
  const Endpoint client6_ = make_endpoint("2001:db8::1", 40000);
  const Endpoint server6_ = make_endpoint("2001:db8::2", 9092);
};

TEST(EndpointTest, FormatsAddressAndPort) {
  EXPECT_EQ(make_endpoint("127.0.0.1", 9092).str(), "127.0.0.1:9092");
  EXPECT_EQ(make_endpoint("::1", 9092).str(), "[::1]:9092");
  EXPECT_EQ(make_endpoint("2001:db8::17", 443).str(), "[2001:db8::17]:443");
  EXPECT_THROW(make_endpoint("10.0.0.300", 1), std::invalid_argument);
}

// The basic case: handshake, a request, a response, FIN both ways.
TEST_F(CaptureTest, Ipv4ConversationOverEthernet) {
  const auto request = payload(3000, 1);
  const auto response = payload(5000, 2);
  {
    SyntheticCapture cap(file("basic.pcap").string());
    uint32_t c = cap.connect(client_, server_);
    cap.send(c, kClient, request);
    cap.send(c, kServer, response);
    cap.close(c);
  }
  ReadResult r = read(file("basic.pcap"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "data 1 client [0,3000)",
                                   "data 1 server [0,5000)",
                                   "close 1"}));
  EXPECT_EQ(r.sink.bytes(1, kClient), request);
  EXPECT_EQ(r.sink.bytes(1, kServer), response);
  EXPECT_EQ(r.sink.info(1).client, client_);
  EXPECT_EQ(r.sink.info(1).server, server_);
  EXPECT_TRUE(r.sink.info(1).saw_syn);
  // 3 handshake + 3 request + 4 response + 3 closing packets.
  EXPECT_EQ(r.stats.packets, 13u);
  EXPECT_EQ(r.stats.tcp_packets, 13u);
  EXPECT_EQ(r.stats.connections, 1u);
  EXPECT_EQ(r.stats.errors, 0u);
  // The first data is packet 4, stamped 3 ms after the first packet.
  ASSERT_FALSE(r.sink.deliveries.empty());
  EXPECT_EQ(r.sink.deliveries[0].packet, 4u);
  EXPECT_EQ(r.sink.deliveries[0].ts_sec, 1'700'000'000);
  EXPECT_EQ(r.sink.deliveries[0].ts_usec, 3000);
}

TEST_F(CaptureTest, Ipv6Conversation) {
  const auto request = payload(2000, 3);
  const auto response = payload(100, 4);
  {
    SyntheticCapture cap(file("v6.pcap").string());
    uint32_t c = cap.connect(client6_, server6_);
    cap.send(c, kClient, request);
    cap.send(c, kServer, response);
    cap.close(c, kServer);
  }
  ReadResult r = read(file("v6.pcap"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.sink.events, (Events{"open 1 [2001:db8::1]:40000 > [2001:db8::2]:9092 syn",
                                   "data 1 client [0,2000)",
                                   "data 1 server [0,100)",
                                   "close 1"}));
  EXPECT_EQ(r.sink.bytes(1, kClient), request);
  EXPECT_EQ(r.sink.bytes(1, kServer), response);
}

TEST_F(CaptureTest, IpOptionsAndExtensionHeadersAreSkipped) {
  const auto request = payload(700, 5);
  {
    SyntheticCaptureOptions o;
    o.ipv4_options = true;            // a 24-byte IPv4 header
    o.ipv6_extension_headers = true;  // hop-by-hop and destination options before TCP
    SyntheticCapture cap(file("options.pcap").string(), o);
    uint32_t c4 = cap.connect(client_, server_);
    uint32_t c6 = cap.connect(client6_, server6_);
    cap.send(c4, kClient, request, 300);
    cap.send(c6, kClient, request, 300);
    cap.close(c4);
    cap.close(c6);
  }
  ReadResult r = read(file("options.pcap"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.sink.info(1).client, client_);
  EXPECT_EQ(r.sink.info(2).client, client6_);
  EXPECT_EQ(r.sink.bytes(1, kClient), request);
  EXPECT_EQ(r.sink.bytes(2, kClient), request);
  EXPECT_EQ(r.stats.errors, 0u);
}

// Short Ethernet frames carry padding after the IP datagram; it is not payload.
TEST_F(CaptureTest, EthernetPaddingIsIgnored) {
  const std::vector<uint8_t> request = {'k', 'a', 'f', 'k', 'a'};
  {
    SyntheticCaptureOptions o;
    o.ethernet_padding = true;
    o.tcp_options = false;  // 14 + 20 + 20 + 1 = 55 bytes, padded to 60
    SyntheticCapture cap(file("padded.pcap").string(), o);
    uint32_t c = cap.connect(client_, server_);
    cap.send(c, kClient, request, 1);
    cap.close(c);
  }
  ReadResult r = read(file("padded.pcap"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "data 1 client [0,5)",
                                   "close 1"}));
  EXPECT_EQ(r.sink.bytes(1, kClient), request);
}

// Every supported link-layer type, IPv4 and IPv6, pcap and pcapng.
struct LinkCase {
  const char* name;
  LinkLayer link;
  bool v6;
  CaptureFormat format;
  std::vector<uint16_t> vlans = {};
  bool null_swapped = false;
  uint32_t v6_family = 24;
  int linktype_override = -1;
};

class LinkTypeTest : public CaptureTest, public ::testing::WithParamInterface<LinkCase> {};

TEST_P(LinkTypeTest, DeliversBothDirections) {
  const LinkCase& lc = GetParam();
  SyntheticCaptureOptions o;
  o.link = lc.link;
  o.format = lc.format;
  o.vlan_ids = lc.vlans;
  o.null_family_swapped = lc.null_swapped;
  o.loopback_ipv6_family = lc.v6_family;
  o.linktype_override = lc.linktype_override;
  const auto request = payload(2500, 6);
  const auto response = payload(1200, 7);
  const fs::path path = file(std::string("link") + (lc.format == CaptureFormat::Pcap ? ".pcap" : ".pcapng"));
  {
    SyntheticCapture cap(path.string(), o);
    uint32_t c = lc.v6 ? cap.connect(client6_, server6_) : cap.connect(client_, server_);
    cap.send(c, kClient, request, 1000);
    cap.send(c, kServer, response, 1000);
    cap.close(c);
  }
  ReadResult r = read(path);
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.sink.connections.size(), 1u);
  EXPECT_EQ(r.sink.info(1).client, lc.v6 ? client6_ : client_);
  EXPECT_EQ(r.sink.bytes(1, kClient), request);
  EXPECT_EQ(r.sink.bytes(1, kServer), response);
  EXPECT_EQ(r.sink.events.back(), "close 1");
  EXPECT_EQ(r.stats.errors, 0u);
}

const LinkCase kLinkCases[] = {
    {"Ethernet_v4_pcap", LinkLayer::Ethernet, false, CaptureFormat::Pcap},
    {"Ethernet_v6_pcapng", LinkLayer::Ethernet, true, CaptureFormat::PcapNg},
    {"Vlan_v4_pcap", LinkLayer::Ethernet, false, CaptureFormat::Pcap, {100}},
    {"QinQ_v6_pcap", LinkLayer::Ethernet, true, CaptureFormat::Pcap, {10, 200}},
    {"QinQ_v4_pcapng", LinkLayer::Ethernet, false, CaptureFormat::PcapNg, {10, 200}},
    {"LinuxSll_v4_pcap", LinkLayer::LinuxSll, false, CaptureFormat::Pcap},
    {"LinuxSll_v6_pcapng", LinkLayer::LinuxSll, true, CaptureFormat::PcapNg},
    {"LinuxSll2_v4_pcap", LinkLayer::LinuxSll2, false, CaptureFormat::Pcap},
    {"LinuxSll2_v6_pcap", LinkLayer::LinuxSll2, true, CaptureFormat::Pcap},
    {"Null_v4_pcap", LinkLayer::Null, false, CaptureFormat::Pcap},
    {"Null_v4_swapped_pcap", LinkLayer::Null, false, CaptureFormat::Pcap, {}, true},
    {"Null_v6_linux_pcap", LinkLayer::Null, true, CaptureFormat::Pcap, {}, false, 10},
    {"Null_v6_bsd_pcapng", LinkLayer::Null, true, CaptureFormat::PcapNg, {}, false, 24},
    {"Null_v6_freebsd_swapped_pcap", LinkLayer::Null, true, CaptureFormat::Pcap, {}, true, 28},
    {"Loop_v4_pcap", LinkLayer::Loop, false, CaptureFormat::Pcap},
    {"Loop_v6_macos_pcap", LinkLayer::Loop, true, CaptureFormat::Pcap, {}, false, 30},
    {"Raw_v4_pcap", LinkLayer::Raw, false, CaptureFormat::Pcap},
    {"Raw_v6_pcapng", LinkLayer::Raw, true, CaptureFormat::PcapNg},
    {"Raw12_v4_pcapng", LinkLayer::Raw, false, CaptureFormat::PcapNg, {}, false, 24, 12},
    {"Raw14_v6_pcapng", LinkLayer::Raw, true, CaptureFormat::PcapNg, {}, false, 24, 14},
    {"Ipv4_pcap", LinkLayer::Ipv4, false, CaptureFormat::Pcap},
    {"Ipv6_pcapng", LinkLayer::Ipv6, true, CaptureFormat::PcapNg},
};

INSTANTIATE_TEST_SUITE_P(AllLinkTypes, LinkTypeTest, ::testing::ValuesIn(kLinkCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(CaptureTest, UnsupportedLinkTypeIsNamed) {
  {
    SyntheticCaptureOptions o;
    o.format = CaptureFormat::PcapNg;
    o.linktype_override = 105;  // IEEE 802.11
    SyntheticCapture cap(file("wifi.pcapng").string(), o);
    cap.connect(client_, server_);
  }
  ReadResult r = read(file("wifi.pcapng"));
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(contains(r.error, "unsupported link-layer type"));
  EXPECT_TRUE(contains(r.error, "IEEE802_11"));
  EXPECT_TRUE(contains(r.error, "105"));
  EXPECT_TRUE(contains(r.error, "wifi.pcapng"));
}

// Nanosecond files are read with microsecond timestamps.
TEST_F(CaptureTest, NanosecondTimestampsAreScaled) {
  for (CaptureFormat format : {CaptureFormat::Pcap, CaptureFormat::PcapNg}) {
    SCOPED_TRACE(format == CaptureFormat::Pcap ? "pcap" : "pcapng");
    const fs::path path = file(format == CaptureFormat::Pcap ? "ns.pcap" : "ns.pcapng");
    {
      SyntheticCaptureOptions o;
      o.format = format;
      o.nanosecond = true;
      o.start_time = std::chrono::seconds(1'650'000'000) + std::chrono::nanoseconds(123'456'789);
      o.time_step = std::chrono::microseconds(250);
      SyntheticCapture cap(path.string(), o);
      uint32_t c = cap.connect(client_, server_);
      cap.send(c, kClient, payload(10));     // packet 4: 3 steps after the start
      cap.set_time_step(std::chrono::seconds(2));
      cap.send(c, kServer, payload(10));     // packet 5
      cap.send(c, kClient, payload(10));     // packet 6, two seconds later
    }
    ReadResult r = read(path);
    ASSERT_TRUE(r.ok) << r.error;
    ASSERT_EQ(r.sink.deliveries.size(), 3u);
    EXPECT_EQ(r.sink.deliveries[0].ts_sec, 1'650'000'000);
    EXPECT_EQ(r.sink.deliveries[0].ts_usec, 123'456 + 750);
    EXPECT_EQ(r.sink.deliveries[2].ts_sec, 1'650'000'002);
    EXPECT_EQ(r.sink.deliveries[2].ts_usec, 123'456 + 1000);
  }
}

TEST_F(CaptureTest, OutOfOrderSegmentsAreReordered) {
  const auto request = payload(400, 8);
  {
    SyntheticCapture cap(file("ooo.pcap").string());
    uint32_t c = cap.connect(client_, server_);
    // Four 100-byte segments; the third and fourth arrive before the second.
    cap.send(c, kClient, request, 100, {0, 2, 3, 1});
    cap.close(c);
  }
  ReadResult r = read(file("ooo.pcap"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "data 1 client [0,400)",
                                   "close 1"}));
  EXPECT_EQ(r.sink.bytes(1, kClient), request);
  // Bytes 100..400 are delivered with packet 7, the one that filled the hole.
  ASSERT_EQ(r.sink.deliveries.size(), 4u);
  EXPECT_EQ(r.sink.deliveries[0].packet, 4u);
  EXPECT_EQ(r.sink.deliveries[1].packet, 7u);
  EXPECT_EQ(r.sink.deliveries[3].packet, 7u);
}

TEST_F(CaptureTest, RetransmissionsAreDeliveredOnce) {
  const auto request = payload(300, 9);
  {
    SyntheticCapture cap(file("retx.pcap").string());
    uint32_t c = cap.connect(client_, server_);
    // The second segment is sent twice, and the whole request once more later.
    cap.send(c, kClient, request, 100, {0, 1, 1, 2, 0, 1, 2});
    cap.close(c);
  }
  ReadResult r = read(file("retx.pcap"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "data 1 client [0,300)",
                                   "close 1"}));
  EXPECT_EQ(r.sink.bytes(1, kClient), request);
}

TEST_F(CaptureTest, OverlappingSegmentsAreTrimmed) {
  const auto request = payload(1000, 10);
  {
    SyntheticCapture cap(file("overlap.pcap").string());
    uint32_t c = cap.connect(client_, server_);
    // In order, each overlapping the previous one.
    cap.send_at(c, kClient, 0, slice(request, 0, 300));
    cap.send_at(c, kClient, 200, slice(request, 200, 500));
    // Out of order and overlapping each other: [700,900) then [600,800),
    // then [450,650) fills the hole and overlaps both sides.
    cap.send_at(c, kClient, 700, slice(request, 700, 900));
    cap.send_at(c, kClient, 600, slice(request, 600, 800));
    cap.send_at(c, kClient, 450, slice(request, 450, 650));
    // A segment covering everything, then the tail.
    cap.send_at(c, kClient, 0, slice(request, 0, 950));
    cap.send_at(c, kClient, 850, slice(request, 850, 1000));
    cap.close(c);
  }
  ReadResult r = read(file("overlap.pcap"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "data 1 client [0,1000)",
                                   "close 1"}));
  EXPECT_EQ(r.sink.bytes(1, kClient), request);
}

TEST_F(CaptureTest, DroppedSegmentBecomesGap) {
  const auto request = payload(500, 11);
  const auto response = payload(50, 12);
  {
    SyntheticCapture cap(file("drop.pcap").string());
    uint32_t c = cap.connect(client_, server_);
    cap.send(c, kClient, request, 100, {0, 1, 3, 4});  // bytes 200..300 never captured
    cap.send(c, kServer, response);
    cap.close(c);
  }
  ReadResult r = read(file("drop.pcap"));
  ASSERT_TRUE(r.ok) << r.error;
  // The server's response acknowledges all 500 bytes: the hole reached the
  // server, so it will never be captured, and it is given up before the
  // response is delivered.
  EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "data 1 client [0,200)",
                                   "gap 1 client [200,300)",
                                   "data 1 client [300,500)",
                                   "data 1 server [0,50)",
                                   "close 1"}));
  std::vector<uint8_t> expected = slice(request, 0, 200);
  const auto tail = slice(request, 300, 500);
  expected.insert(expected.end(), tail.begin(), tail.end());
  EXPECT_EQ(r.sink.bytes(1, kClient), expected);
  EXPECT_EQ(r.sink.bytes(1, kServer), response);
}

TEST_F(CaptureTest, LostTailBeforeFinBecomesGap) {
  {
    SyntheticCapture cap(file("tail.pcap").string());
    uint32_t c = cap.connect(client_, server_);
    cap.send(c, kClient, payload(300), 100, {0});  // the last 200 bytes are lost
    cap.close(c);
  }
  ReadResult r = read(file("tail.pcap"));
  ASSERT_TRUE(r.ok) << r.error;
  // The FIN's sequence number tells how much is missing.
  EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "data 1 client [0,100)",
                                   "gap 1 client [100,300)",
                                   "close 1"}));
}

TEST_F(CaptureTest, ResetClosesAndGivesUpHoles) {
  {
    SyntheticCapture cap(file("rst.pcap").string());
    uint32_t c = cap.connect(client_, server_);
    cap.send(c, kClient, payload(300), 100, {0, 2});
    cap.reset(c, kServer);
    cap.send(c, kClient, payload(100));  // after the reset: not decoded, and said so
  }
  ReadResult r = read(file("rst.pcap"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "data 1 client [0,100)",
                                   "gap 1 client [100,200)",
                                   "data 1 client [200,300)",
                                   "close 1",
                                   "error packet 7"}));
  ASSERT_EQ(r.sink.errors.size(), 1u);
  EXPECT_EQ(r.sink.errors[0].reason,
            "100 bytes after the end of TCP connection 10.0.0.1:40000 - 10.0.0.2:9092 (FIN or RST seen) are not decoded");
}

TEST_F(CaptureTest, OutOfOrderBufferIsBounded) {
  const auto request = payload(1000, 13);
  {
    SyntheticCapture cap(file("bounded.pcap").string());
    uint32_t c = cap.connect(client_, server_);
    cap.send(c, kClient, request, 100, {0, 2, 3, 4, 5, 6, 7, 8, 9});  // segment 1 is lost
    cap.send(c, kServer, payload(10));
    cap.close(c);
  }
  CaptureOptions opts;
  opts.max_buffered_per_direction = 250;
  ReadResult r = read(file("bounded.pcap"), opts);
  ASSERT_TRUE(r.ok) << r.error;
  // Holding a third segment would exceed 250 bytes, so the hole is given up
  // early, before the server's data rather than at close.
  EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "data 1 client [0,100)",
                                   "gap 1 client [100,200)",
                                   "data 1 client [200,1000)",
                                   "data 1 server [0,10)",
                                   "close 1"}));
  ASSERT_GE(r.sink.deliveries.size(), 2u);
  EXPECT_EQ(r.sink.deliveries[1].packet, 7u);  // the third held segment
}

// Without the handshake the first side to send payload is taken as the client.
TEST_F(CaptureTest, MissingHandshakeFirstSenderIsClient) {
  const auto response = payload(120, 14);
  const auto request = payload(80, 15);
  {
    SyntheticCapture cap(file("midstream.pcap").string());
    ConnectOptions co;
    co.handshake = false;
    uint32_t c = cap.connect(client_, server_, co);
    cap.send(c, kServer, response);  // the capture starts with the server talking
    cap.send(c, kClient, request);
  }
  ReadResult r = read(file("midstream.pcap"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.2:9092 > 10.0.0.1:40000 no-syn",
                                   "data 1 client [0,120)",
                                   "data 1 server [0,80)",
                                   "close 1"}));  // at end of capture
                                   EXPECT_FALSE(r.sink.info(1).saw_syn);
                                   EXPECT_EQ(r.sink.info(1).client, server_);
                                   EXPECT_EQ(r.sink.bytes(1, kClient), response);
                                   EXPECT_EQ(r.sink.bytes(1, kServer), request);
                                   }
                                   
                                   TEST_F(CaptureTest, SequenceNumbersWrapAround) {
                                   const auto request = payload(1000, 16);
                                   const auto response = payload(1000, 17);
                                   {
                                   SyntheticCapture cap(file("wrap.pcap").string());
                                   ConnectOptions co;
                                   co.client_isn = 0xFFFFFF00u;  // the request crosses 2^32 at byte 255
                                   co.server_isn = 0xFFFFFFFFu;  // the response starts at sequence number 0
                                   uint32_t c = cap.connect(client_, server_, co);
                                   cap.send(c, kClient, request, 100, {0, 1, 3, 2, 4, 5, 6, 7, 8, 9});
                                   cap.send(c, kServer, response, 300, {1, 0, 2, 3});
                                   cap.close(c);
                                   }
                                   ReadResult r = read(file("wrap.pcap"));
                                   ASSERT_TRUE(r.ok) << r.error;
                                   EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "data 1 client [0,1000)",
                                   "data 1 server [0,1000)",
                                   "close 1"}));
  EXPECT_EQ(r.sink.bytes(1, kClient), request);
  EXPECT_EQ(r.sink.bytes(1, kServer), response);
}

TEST_F(CaptureTest, HandshakeRetransmissionsAreIgnored) {
  {
    SyntheticCapture cap(file("resend.pcap").string());
    uint32_t c = cap.connect(client_, server_);
    cap.connect(client_, server_);  // the same SYN, SYN-ACK and ACK once more
    cap.send(c, kClient, payload(10));
    cap.close(c);
  }
  ReadResult r = read(file("resend.pcap"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "data 1 client [0,10)",
                                   "close 1"}));
}

// When the capture misses the SYN, the SYN-ACK still tells who the client is.
TEST_F(CaptureTest, HandshakeWithoutSynUsesSynAck) {
  {
    SyntheticCapture cap(file("synack.pcap").string());
    uint32_t c = cap.connect(client_, server_);
    cap.send(c, kServer, payload(30, 1));  // a server that speaks first
    cap.send(c, kClient, payload(20, 2));
    cap.close(c);
  }
  CaptureOptions opts;
  opts.bpf_filter = "tcp[tcpflags] != tcp-syn";  // drop the SYN
  ReadResult r = read(file("synack.pcap"), opts);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "data 1 server [0,30)",
                                   "data 1 client [0,20)",
                                   "close 1"}));
  EXPECT_TRUE(r.sink.info(1).saw_syn);
  EXPECT_EQ(r.sink.bytes(1, kServer), payload(30, 1));
}

TEST_F(CaptureTest, TwoConnectionsOnDifferentPorts) {
  const Endpoint other_client = make_endpoint("10.0.0.1", 40001);
  const Endpoint other_server = make_endpoint("10.0.0.3", 9093);
  {
    SyntheticCapture cap(file("two.pcap").string());
    uint32_t a = cap.connect(client_, server_);
    uint32_t b = cap.connect(other_client, other_server);
    cap.send(a, kClient, payload(100, 1));
    cap.send(b, kClient, payload(200, 2));
    cap.send(b, kServer, payload(20, 3));
    cap.send(a, kServer, payload(10, 4));
    cap.close(b);
    cap.close(a);
  }
  ReadResult r = read(file("two.pcap"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "open 2 10.0.0.1:40001 > 10.0.0.3:9093 syn",
                                   "data 1 client [0,100)",
                                   "data 2 client [0,200)",
                                   "data 2 server [0,20)",
                                   "data 1 server [0,10)",
                                   "close 2",
                                   "close 1"}));
  EXPECT_EQ(r.sink.bytes(2, kClient), payload(200, 2));
  EXPECT_EQ(r.sink.bytes(1, kServer), payload(10, 4));
  EXPECT_EQ(r.stats.connections, 2u);
}

TEST_F(CaptureTest, ReusedFourTupleIsANewConnection) {
  {
    SyntheticCapture cap(file("reuse.pcap").string());
    uint32_t first = cap.connect(client_, server_);
    cap.send(first, kClient, payload(50, 1));
    cap.close(first);
    ConnectOptions co;
    co.client_isn = 777777;
    uint32_t second = cap.connect(client_, server_, co);  // same ports
    cap.send(second, kClient, payload(60, 2));
    cap.close(second, kServer);
  }
  ReadResult r = read(file("reuse.pcap"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "data 1 client [0,50)",
                                   "close 1",
                                   "open 2 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "data 2 client [0,60)",
                                   "close 2"}));
  EXPECT_EQ(r.sink.bytes(2, kClient), payload(60, 2));
}

// The end of the first connection was not captured; a SYN with another
// initial sequence number still starts a new one.
TEST_F(CaptureTest, SynOnOpenFourTupleStartsNewConnection) {
  {
    SyntheticCapture cap(file("resyn.pcap").string());
    uint32_t first = cap.connect(client_, server_);
    cap.send(first, kClient, payload(50, 1));
    ConnectOptions co;
    co.client_isn = 123456789;
    uint32_t second = cap.connect(client_, server_, co);
    cap.send(second, kClient, payload(60, 2));
  }
  ReadResult r = read(file("resyn.pcap"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "data 1 client [0,50)",
                                   "close 1",
                                   "open 2 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "data 2 client [0,60)",
                                   "close 2"}));
}

// The capture missed the new connection's handshake: payload beyond the end
// of the closed stream is a new connection, not a late packet of the old one.
TEST_F(CaptureTest, ReusedFourTupleWithoutSynIsANewConnection) {
  {
    SyntheticCapture cap(file("reuse-nosyn.pcap").string());
    uint32_t first = cap.connect(client_, server_);
    cap.send(first, kClient, payload(50, 1));
    cap.close(first);
    cap.send_at(first, kClient, 10, payload(20, 1));  // a late retransmission: still the old stream
    ConnectOptions co;
    co.client_isn = 3000000000u;  // a new random initial sequence number
    co.handshake = false;
    uint32_t second = cap.connect(client_, server_, co);
    cap.send(second, kClient, payload(60, 2));
    cap.send(second, kServer, payload(30, 3));
  }
  ReadResult r = read(file("reuse-nosyn.pcap"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "data 1 client [0,50)",
                                   "close 1",
                                   "open 2 10.0.0.1:40000 > 10.0.0.2:9092 no-syn",
                                   "data 2 client [0,60)",
                                   "data 2 server [0,30)",
                                   "close 2"}));
  EXPECT_EQ(r.sink.bytes(2, kClient), payload(60, 2));
}

// One side's FIN was captured, then payload past it on the same 4-tuple: a
// new connection (the rest of the old one was missed), not dropped bytes.
TEST_F(CaptureTest, PayloadAfterAFinIsANewConnection) {
  {
    SyntheticCapture cap(file("after-fin.pcap").string());
    uint32_t first = cap.connect(client_, server_);
    cap.send(first, kClient, payload(50, 1));
    cap.send(first, kServer, payload(20, 4));
    cap.fin(first, kClient);
    ConnectOptions co;
    co.client_isn = 2000000000u;
    co.handshake = false;
    uint32_t second = cap.connect(client_, server_, co);
    cap.send(second, kClient, payload(60, 2));
  }
  ReadResult r = read(file("after-fin.pcap"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "data 1 client [0,50)",
                                   "data 1 server [0,20)",
                                   "close 1",
                                   "open 2 10.0.0.1:40000 > 10.0.0.2:9092 no-syn",
                                   "data 2 client [0,60)",
                                   "close 2"}));
  EXPECT_EQ(r.sink.bytes(2, kClient), payload(60, 2));
}

TEST_F(CaptureTest, SnaplenCutPayloadBecomesGap) {
  const auto request = payload(1000, 18);
  {
    SyntheticCaptureOptions o;
    o.snaplen = 14 + 20 + 32 + 100;  // Ethernet, IPv4, TCP with timestamps, 100 payload bytes
    SyntheticCapture cap(file("snap.pcap").string(), o);
    uint32_t c = cap.connect(client_, server_);
    cap.send(c, kClient, request, 400);
    cap.close(c);
  }
  ReadResult r = read(file("snap.pcap"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "data 1 client [0,100)",
                                   "gap 1 client [100,400)",
                                   "data 1 client [400,500)",
                                   "gap 1 client [500,800)",
                                   "data 1 client [800,900)",
                                   "gap 1 client [900,1000)",
                                   "close 1"}));
  EXPECT_EQ(r.stats.errors, 0u);
}

// A capture file that ends in the middle of a packet (a crashed tcpdump, a
// partial copy): what came before is delivered, then the error, then close.
TEST_F(CaptureTest, FileCutMidPacket) {
  for (CaptureFormat format : {CaptureFormat::Pcap, CaptureFormat::PcapNg}) {
    SCOPED_TRACE(format == CaptureFormat::Pcap ? "pcap" : "pcapng");
    const fs::path path = file(format == CaptureFormat::Pcap ? "cut.pcap" : "cut.pcapng");
    const auto request = payload(3000, 19);
    {
      SyntheticCaptureOptions o;
      o.format = format;
      SyntheticCapture cap(path.string(), o);
      uint32_t c = cap.connect(client_, server_);
      cap.send(c, kClient, request, 1000);  // packets 4, 5, 6
    }
    fs::resize_file(path, fs::file_size(path) - 300);  // cuts packet 6
    ReadResult r = read(path);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                     "data 1 client [0,2000)",
                                     "error packet 6",
                                     "close 1"}));
    EXPECT_EQ(r.sink.bytes(1, kClient), slice(request, 0, 2000));
    ASSERT_EQ(r.sink.errors.size(), 1u);
    EXPECT_EQ(r.sink.errors[0].meta.number, 6u);
    EXPECT_TRUE(contains(r.sink.errors[0].reason, "truncated"));
    EXPECT_EQ(r.stats.packets, 5u);
    EXPECT_EQ(r.stats.errors, 1u);
  }
}

TEST_F(CaptureTest, UnopenableFileIsAnError) {
  ReadResult r = read(file("does-not-exist.pcap"));
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(contains(r.error, "does-not-exist.pcap"));
  EXPECT_TRUE(contains(r.error, "No such file"));
  EXPECT_TRUE(r.sink.events.empty());

  std::ofstream(file("notes.txt")) << "this is not a capture file\n";
  r = read(file("notes.txt"));
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(contains(r.error, "notes.txt"));
  EXPECT_TRUE(contains(r.error, "unknown file format"));
}

TEST_F(CaptureTest, BpfFilterSelectsOnePort) {
  const Endpoint other_server = make_endpoint("10.0.0.2", 9093);
  const Endpoint other_client = make_endpoint("10.0.0.1", 40001);
  {
    SyntheticCapture cap(file("filter.pcap").string());
    uint32_t a = cap.connect(client_, server_);
    uint32_t b = cap.connect(other_client, other_server);
    cap.send(a, kClient, payload(100, 1));
    cap.send(b, kClient, payload(200, 2));
    cap.close(a);
    cap.close(b);
  }
  CaptureOptions opts;
  opts.bpf_filter = "tcp port 9093";
  ReadResult r = read(file("filter.pcap"), opts);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40001 > 10.0.0.2:9093 syn",
                                   "data 1 client [0,200)",
                                   "close 1"}));
  EXPECT_EQ(r.sink.bytes(1, kClient), payload(200, 2));
  // Packet numbers stay those of the file: the 9093 data is packet 8.
  ASSERT_EQ(r.sink.deliveries.size(), 1u);
  EXPECT_EQ(r.sink.deliveries[0].packet, 8u);
  EXPECT_EQ(r.stats.packets, 14u);     // read
  EXPECT_EQ(r.stats.tcp_packets, 7u);  // matched the filter
}

TEST_F(CaptureTest, InvalidBpfFilterIsAnError) {
  { SyntheticCapture cap(file("empty.pcap").string()); }
  CaptureOptions opts;
  opts.bpf_filter = "tcp port ninety";
  ReadResult r = read(file("empty.pcap"), opts);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(starts_with(r.error, "invalid BPF filter 'tcp port ninety': "));
}

TEST_F(CaptureTest, IpFragmentsAreReportedOnce) {
  for (bool v6 : {false, true}) {
    SCOPED_TRACE(v6 ? "IPv6" : "IPv4");
    const fs::path path = file(v6 ? "frag6.pcap" : "frag4.pcap");
    {
      SyntheticCapture cap(path.string());
      uint32_t c = v6 ? cap.connect(client6_, server6_) : cap.connect(client_, server_);
      cap.send(c, kClient, payload(100, 1));
      cap.send_fragmented(c, kClient, payload(1000, 2), 500);  // packets 5 and 6
      cap.send(c, kClient, payload(100, 3));
      cap.close(c);
    }
    ReadResult r = read(path);
    ASSERT_TRUE(r.ok) << r.error;
    const std::string open_line = v6 ? "open 1 [2001:db8::1]:40000 > [2001:db8::2]:9092 syn"
                                     : "open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn";
    // The fragmented segment is not reassembled: it is a gap in the stream.
    EXPECT_EQ(r.sink.events, (Events{open_line,
                                     "data 1 client [0,100)",
                                     "error packet 5",
                                     "gap 1 client [100,1100)",
                                     "data 1 client [1100,1200)",
                                     "close 1"}));
    ASSERT_EQ(r.sink.errors.size(), 1u);
    EXPECT_TRUE(contains(r.sink.errors[0].reason, "fragment"));
  }
}

TEST_F(CaptureTest, OtherProtocolsAreSkippedSilently) {
  {
    SyntheticCapture cap(file("udp.pcap").string());
    uint32_t c = cap.connect(client_, server_);
    cap.send_udp(make_endpoint("10.0.0.9", 7000), make_endpoint("10.0.0.1", 7001), payload(40));
    cap.send_udp(make_endpoint("::1", 7000), make_endpoint("::2", 7001), payload(40));
    cap.write_frame(std::vector<uint8_t>{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x08, 0x06,
                                         0, 1, 8, 0, 6, 4, 0, 1});  // an ARP request (cut short)
    cap.send(c, kClient, payload(10));
    cap.close(c);
  }
  ReadResult r = read(file("udp.pcap"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "data 1 client [0,10)",
                                   "close 1"}));
  EXPECT_EQ(r.stats.packets, 10u);
  EXPECT_EQ(r.stats.tcp_packets, 7u);
  EXPECT_EQ(r.stats.errors, 0u);
}

TEST_F(CaptureTest, MalformedPacketsAreReported) {
  {
    SyntheticCapture cap(file("bad.pcap").string());
    uint32_t c = cap.connect(client_, server_);
    // Packet 4: IPv4 with a header length of 12 bytes.
    std::vector<uint8_t> frame = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00};
    std::vector<uint8_t> ip(40, 0);
    ip[0] = 0x43;
    ip[9] = 6;
    frame.insert(frame.end(), ip.begin(), ip.end());
    cap.write_frame(frame);
    // Packet 5: a 6-byte Ethernet frame.
    cap.write_frame(std::vector<uint8_t>{1, 2, 3, 4, 5, 6});
    cap.send(c, kClient, payload(10));
    cap.close(c);
  }
  ReadResult r = read(file("bad.pcap"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.sink.events, (Events{"open 1 10.0.0.1:40000 > 10.0.0.2:9092 syn",
                                   "error packet 4",
                                   "error packet 5",
                                   "data 1 client [0,10)",
                                   "close 1"}));
  ASSERT_EQ(r.sink.errors.size(), 2u);
  EXPECT_TRUE(contains(r.sink.errors[0].reason, "IPv4 header length"));
  EXPECT_TRUE(contains(r.sink.errors[1].reason, "Ethernet"));
  EXPECT_EQ(r.stats.errors, 2u);
}

// Many connections, each closed: the reader keeps going and every byte arrives.
TEST_F(CaptureTest, ManyConnections) {
  constexpr int kConnections = 300;
  {
    SyntheticCapture cap(file("many.pcap").string());
    for (int i = 0; i < kConnections; ++i) {
      uint32_t c = cap.connect(make_endpoint("10.1.0.1", static_cast<uint16_t>(20000 + i)), server_);
      cap.send(c, kClient, payload(3000, static_cast<uint8_t>(i)), 1448, {0, 2, 1});
      cap.send(c, kServer, payload(100, static_cast<uint8_t>(i + 1)));
      cap.close(c, i % 2 ? kClient : kServer);
    }
  }
  ReadResult r = read(file("many.pcap"));
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.sink.connections.size(), static_cast<size_t>(kConnections));
  for (int i = 0; i < kConnections; ++i) {
    const uint32_t id = static_cast<uint32_t>(i + 1);
    EXPECT_EQ(r.sink.info(id).client.port, 20000 + i);
    EXPECT_EQ(r.sink.bytes(id, kClient), payload(3000, static_cast<uint8_t>(i)));
    EXPECT_EQ(r.sink.bytes(id, kServer), payload(100, static_cast<uint8_t>(i + 1)));
    EXPECT_TRUE(r.sink.connections.at(id).closed);
  }
}

}  // namespace
}  // namespace kwire
