// `kwire record -r`: re-filtering captures into pcapng, offline. The files it
// writes are read back by tshark and capinfos (independent readers) as well
// as by kwire decode. The live cases (an interface, signals, rotation under
// load, privileges, a full disk) are in tests/live/record_live.sh.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "recorder/pcap_writer.hpp"
#include "tests/test_support.hpp"

using namespace kwire;

namespace {

using test::kwire_cmd;
using test::lines;
using test::shell_output;

// The JSON lines of `kwire decode` without the per-line packet times, which
// the pcapng writer keeps at nanoseconds and pcap readers may round.
std::vector<std::string> decoded(const std::string& file) {
  auto r = kwire_cmd("decode -r " + file + " -T json");
  EXPECT_EQ(r.status, 0) << r.err;
  return lines(r.out);
}

class RecordCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("kwire-record-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

}  // namespace

TEST_F(RecordCli, RewritingEveryRealCaptureKeepsEveryPacketAndMessage) {
  for (const char* name : {"demo", "stateful", "admin", "plugin-failures", "old-client", "topology-upgrade"}) {
    const std::string in = std::string(KWIRE_SOURCE_DIR) + "/captures/" + name + ".pcapng";
    const std::string out = path(std::string(name) + ".pcapng");
    auto r = kwire_cmd("record -r " + in + " -w " + out + " -f tcp");
    ASSERT_EQ(r.status, 0) << name << ": " << r.err;
    // tshark reads the same packets, byte for byte, with the same times.
    const std::string fields = " -T fields -e frame.time_epoch -e frame.len -e tcp.stream -e tcp.seq_raw -e data.len";
    EXPECT_EQ(shell_output("tshark -r " + out + fields), shell_output("tshark -r " + in + fields)) << name;
    EXPECT_EQ(decoded(out), decoded(in)) << name;
    EXPECT_NE(shell_output("capinfos " + out).find("kwire " + std::string("0.1.0")), std::string::npos) << name;
  }
}

TEST_F(RecordCli, AutoKeepsExactlyTheKafkaConnectionsWhateverTheirPorts) {
  const std::string in = path("mixed.pcap");
  {
    SyntheticCapture cap(in);
    const std::vector<uint16_t> kafka_ports = {19092, 29093, 39094};
    uint32_t i = 0;
    for (uint16_t port : kafka_ports) {
      uint32_t c = cap.connect(make_endpoint("10.0.0.1", static_cast<uint16_t>(41000 + i)), make_endpoint("10.0.0.2", port));
      cap.send(c, StreamSide::FromClient, test::heartbeat_request(static_cast<int>(10 + i), "m", 0));
      cap.send(c, StreamSide::FromServer, test::heartbeat_response(static_cast<int>(10 + i), "m", 1));
      ++i;
    }
    const std::string get = "GET /index.html HTTP/1.1\r\nHost: example\r\n\r\n";
    const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    uint32_t http = cap.connect(make_endpoint("10.0.0.1", 42000), make_endpoint("10.0.0.3", 8080));
    cap.send(http, StreamSide::FromClient, std::vector<uint8_t>(get.begin(), get.end()));
    cap.send(http, StreamSide::FromServer, std::vector<uint8_t>(ok.begin(), ok.end()));
    cap.close(http);
    std::vector<uint8_t> binary(3000);
    for (size_t k = 0; k < binary.size(); ++k) binary[k] = static_cast<uint8_t>(k * 7919 >> 3);
    uint32_t other = cap.connect(make_endpoint("10.0.0.1", 42001), make_endpoint("10.0.0.4", 5432));
    cap.send(other, StreamSide::FromClient, binary);
    cap.close(other);
    for (uint32_t k = 0; k < 3; ++k) cap.close(k);
  }
  const std::string out = path("auto.pcapng");
  auto r = kwire_cmd("record -r " + in + " --auto -w " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("kafka_connections=3 evicted=0"), std::string::npos) << r.err;
  // Every packet of the Kafka connections, and nothing else, by tshark's count.
  const std::string kafka = "tcp.port == 19092 || tcp.port == 29093 || tcp.port == 39094";
  const std::string want = shell_output("tshark -r " + in + " -Y '" + kafka + "' -T fields -e frame.len -e tcp.seq_raw");
  EXPECT_FALSE(want.empty());
  EXPECT_EQ(shell_output("tshark -r " + out + " -T fields -e frame.len -e tcp.seq_raw"), want);
  auto stats = kwire_cmd("decode -r " + out + " --stats -c 0");
  EXPECT_EQ(stats.out.rfind("stats: frames=6 requests=3 responses=3 unmatched=0 malformed=0", 0), 0u) << stats.out;
}

TEST_F(RecordCli, AnnotateCommentsThePacketThatCompletesEachMessage) {
  const std::string in = std::string(KWIRE_SOURCE_DIR) + "/captures/demo.pcapng";
  const std::string out = path("annotated.pcapng");
  auto r = kwire_cmd("record -r " + in + " -w " + out + " -f tcp --annotate");
  ASSERT_EQ(r.status, 0) << r.err;
  // One comment line per message: the summary kwire decode prints for it,
  // on the packet tshark numbers the same way as in the original.
  auto summary = lines(kwire_cmd("decode -r " + in).out);
  EXPECT_EQ(summary.size(), 206u);
  const std::string all = shell_output("tshark -r " + out + " -Y frame.comment -T fields -e frame.comment");
  for (const auto& line : summary) {
    const std::string text = line.substr(line.find(' ', line.find("\u2192") + 4) + 1);
    EXPECT_NE(all.find(text), std::string::npos) << text;
  }
  EXPECT_NE(shell_output("tshark -r " + out + " -Y 'frame.number == 42' -T fields -e frame.comment"),
            shell_output("tshark -r " + out + " -Y 'frame.number == 41' -T fields -e frame.comment"));
}

TEST_F(RecordCli, ADamagedInputKeepsEverythingBeforeTheDamageAndSaysSo) {
  const std::string in = path("cut.pcapng");
  std::filesystem::copy_file(std::string(KWIRE_SOURCE_DIR) + "/captures/demo.pcapng", in);
  std::filesystem::resize_file(in, std::filesystem::file_size(in) / 2);
  // tshark reads the whole packets before the cut and complains about the rest.
  const size_t whole = lines(shell_output("tshark -r " + in + " -T fields -e frame.number")).size();
  ASSERT_GT(whole, 100u);
  const std::string out = path("from-cut.pcapng");
  auto r = kwire_cmd("record -r " + in + " -w " + out + " -f tcp");
  EXPECT_EQ(r.status, 256) << r.err;
  EXPECT_NE(r.err.find("packet " + std::to_string(whole + 1) + ": "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" written=" + std::to_string(whole) + " "), std::string::npos) << r.err;
  // Every one of them is in a file that capinfos reads without complaint.
  auto info = shell_output("capinfos -c -M " + out + "; echo status=$?");
  EXPECT_NE(info.find("Number of packets:   " + std::to_string(whole) + "\n"), std::string::npos) << info;
  EXPECT_NE(info.find("status=0"), std::string::npos) << info;
}

TEST_F(RecordCli, BadUsageSaysWhatIsWrong) {
  auto neither = kwire_cmd("record -w " + path("x.pcapng"));
  EXPECT_EQ(neither.status, 512);
  EXPECT_NE(neither.err.find("give one of -i IFACE or -r FILE"), std::string::npos) << neither.err;
  auto bpf = kwire_cmd("record -r " + std::string(KWIRE_SOURCE_DIR) + "/captures/demo.pcapng -w " + path("y.pcapng") +
                       " -f 'tcp port'");
  EXPECT_EQ(bpf.status, 512);
  EXPECT_NE(bpf.err.find("invalid BPF filter 'tcp port'"), std::string::npos) << bpf.err;
  EXPECT_FALSE(std::filesystem::exists(path("y.pcapng")));
  auto decode_to_stdout = kwire_cmd("record -r x -w - --decode");
  EXPECT_EQ(decode_to_stdout.status, 512);
  auto bad_a = kwire_cmd("record -i lo -w x -a minutes:3");
  EXPECT_NE(bad_a.err.find("-a takes duration:SECONDS"), std::string::npos) << bad_a.err;
}

TEST_F(RecordCli, RedactSaslOverwritesEverySecretAndTheFileStillDecodes) {
  const std::string secret_plain = std::string("\0alice\0s3cr3t-PLAIN", 19);
  const std::string server_final = "v=SERVER-SIGNATURE-FINAL";
  const std::string raw_token = std::string("\0bob\0raw-v0-token", 17);
  auto bytes = [](const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); };
  // SaslHandshake v1 then SaslAuthenticate v2 (flexible), in 7-byte segments,
  // so that the secrets span packets; then a heartbeat.
  test::Bytes hs_req = test::request_header_v2(17, 1, 1);
  test::Bytes hs_req_v1;
  hs_req_v1.i16(17).i16(1).i32(1).str("c").str("PLAIN");
  test::Bytes hs_resp;
  hs_resp.i32(1).i16(0).i32(1).str("PLAIN");
  test::Bytes auth_req = test::request_header_v2(36, 2, 2);
  auth_req.cbytes(bytes(secret_plain)).tags0();
  test::Bytes auth_resp;
  auth_resp.i32(2).tags0().i16(0).cnull().cbytes(bytes(server_final)).i64(3600000).tags0();
  // SaslHandshake v0 and a raw token on a second connection.
  test::Bytes hs0_req, hs0_resp, token;
  hs0_req.i16(17).i16(0).i32(1).str("c").str("PLAIN");
  hs0_resp.i32(1).i16(0).i32(1).str("PLAIN");
  token.raw(raw_token);
  const std::string in = path("sasl.pcap");
  {
    SyntheticCapture cap(in);
    uint32_t a = cap.connect(make_endpoint("127.0.0.1", 40100), make_endpoint("127.0.0.1", 9092));
    cap.send(a, StreamSide::FromClient, hs_req_v1.message(), 7);
    cap.send(a, StreamSide::FromServer, hs_resp.message(), 7);
    cap.send(a, StreamSide::FromClient, auth_req.message(), 7);
    cap.send(a, StreamSide::FromServer, auth_resp.message(), 7);
    cap.send(a, StreamSide::FromClient, test::heartbeat_request(3, "m", 0), 7);
    cap.send(a, StreamSide::FromServer, test::heartbeat_response(3, "m", 1), 7);
    cap.close(a);
    uint32_t b = cap.connect(make_endpoint("127.0.0.1", 40101), make_endpoint("127.0.0.1", 9092));
    cap.send(b, StreamSide::FromClient, hs0_req.message());
    cap.send(b, StreamSide::FromServer, hs0_resp.message());
    cap.send(b, StreamSide::FromClient, token.message(), 5);
    cap.send(b, StreamSide::FromServer, test::Bytes().message());
    cap.close(b);
  }
  const std::string out = path("redacted.pcapng");
  auto r = kwire_cmd("record -r " + in + " -w " + out + " --redact-sasl");
  ASSERT_EQ(r.status, 0) << r.err;
  // tshark: the same packets with the same lengths, in the same order per connection.
  const std::string fields = " -T fields -e tcp.stream -e tcp.seq_raw -e frame.len";
  EXPECT_EQ(shell_output("tshark -r " + out + fields + " 2>/dev/null | sort -s -n -k1,1"),
            shell_output("tshark -r " + in + fields + " 2>/dev/null | sort -s -n -k1,1"));
  // None of the secrets is left in the file; the rest of the bytes are.
  auto file = shell_output("cat " + out);
  for (const std::string& s : {secret_plain.substr(1), server_final, raw_token.substr(1), std::string("s3cr3t")})
    EXPECT_EQ(file.find(s), std::string::npos) << s;
  EXPECT_NE(file.find("PLAIN"), std::string::npos);
  // Zero bytes of the same length: tshark's reassembled payloads say so.
  const std::string zeros_hex(2 * secret_plain.size(), '0');
  EXPECT_NE(shell_output("tshark -r " + out + " -q -z follow,tcp,raw,0 | grep -v '^[=A-Z]' | tr -d ' \\t\\n'").find(zeros_hex),
            std::string::npos);
  // kwire decodes the redacted file exactly as the original.
  EXPECT_EQ(decoded(out), decoded(in));
}
