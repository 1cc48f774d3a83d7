// kwire reads the records of a classic pcap file in place, through a memory
// map, and everything else (pcapng, standard input) through libpcap. Here
// libpcap is the reference: the same bytes read from the file and from
// standard input must give the same decode, messages and errors alike.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "recorder/pcap_writer.hpp"
#include "tests/test_support.hpp"

namespace fs = std::filesystem;
using namespace kwire;

namespace {

std::vector<uint8_t> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void spill(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

uint32_t u32(const std::vector<uint8_t>& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

// The same capture written by a machine of the other byte order: every
// header field swapped, packet bytes as they were.
std::vector<uint8_t> byte_swapped(const std::vector<uint8_t>& pcap) {
  std::vector<uint8_t> out = pcap;
  auto swap = [&](size_t at, size_t width) { std::reverse(out.begin() + static_cast<long>(at), out.begin() + static_cast<long>(at + width)); };
  swap(0, 4);   // magic
  swap(4, 2);   // version major
  swap(6, 2);   // version minor
  for (size_t at : {8, 12, 16, 20}) swap(at, 4);
  for (size_t at = 24; at + 16 <= pcap.size();) {
    const uint32_t caplen = u32(pcap, at + 8);
    for (size_t k = 0; k < 4; ++k) swap(at + 4 * k, 4);
    at += 16 + caplen;
  }
  return out;
}

// Offsets of the records: where each 16-byte record header starts.
std::vector<size_t> records(const std::vector<uint8_t>& pcap) {
  std::vector<size_t> at;
  for (size_t p = 24; p + 16 <= pcap.size(); p += 16 + u32(pcap, p + 8)) at.push_back(p);
  return at;
}

class PcapReader : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kwire-pcap-reader-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `kwire decode ARGS` of the file against the same of its bytes on standard input.
  // Messages name the file where the other says "standard input".
  void same_as_libpcap(const fs::path& file, const std::string& args = "-T json", bool has_packets = true) {
    SCOPED_TRACE(file.filename().string() + " " + args);
    auto mapped = test::kwire_cmd("decode -r " + file.string() + " " + args);
    auto piped = test::kwire_cmd("decode -r - " + args + " < " + file.string());
    EXPECT_EQ(mapped.status, piped.status);
    EXPECT_EQ(mapped.out.empty(), !has_packets);
    EXPECT_EQ(mapped.out, piped.out);
    for (size_t at; (at = mapped.err.find(file.string())) != std::string::npos;)
      mapped.err.replace(at, file.string().size(), "standard input");
    EXPECT_EQ(mapped.err, piped.err);
  }

  fs::path dir_;
};

}  // namespace

// Real captures, converted by Wireshark's editcap to classic pcap with
// microsecond and nanosecond time stamps, in both byte orders.
TEST_F(PcapReader, RealCapturesInEveryClassicFormat) {
  for (std::string name : {"demo", "stateful", "txn-consumer"}) {
    const std::string src = std::string(KWIRE_SOURCE_DIR) + "/captures/" + name + ".pcapng";
    for (std::string format : {"pcap", "nsecpcap"}) {
      const fs::path out = dir_ / (name + "-" + format + ".pcap");
      ASSERT_EQ(std::system(("editcap -F " + format + " " + src + " " + out.string()).c_str()), 0);
      same_as_libpcap(out);
      const fs::path swapped = dir_ / (name + "-" + format + "-swapped.pcap");
      spill(swapped, byte_swapped(slurp(out)));
      same_as_libpcap(swapped);
    }
  }
  // And the time stamps as the original pcapng gives them.
  const fs::path us = dir_ / "demo-pcap.pcap";
  auto from_ng = test::kwire_cmd("decode -r " + std::string(KWIRE_SOURCE_DIR) + "/captures/demo.pcapng -T json");
  auto from_pcap = test::kwire_cmd("decode -r " + us.string() + " -T json");
  EXPECT_EQ(from_ng.out, from_pcap.out);
}

// A file cut right after the file header (an empty capture), inside a record
// header, and inside a packet: what was read is decoded, a break is named.
TEST_F(PcapReader, CutFilesBreakWhereLibpcapSaysTheyBreak) {
  const fs::path whole = dir_ / "whole.pcap";
  ASSERT_EQ(std::system(("editcap -F pcap " + std::string(KWIRE_SOURCE_DIR) + "/captures/stateful.pcapng " +
                         whole.string()).c_str()), 0);
  const auto bytes = slurp(whole);
  const auto at = records(bytes);
  ASSERT_GT(at.size(), 100u);
  const size_t cuts[] = {24, 30, at[50] + 7, at[80] + 16 + 5, bytes.size() - 1};
  for (size_t cut : cuts) {
    const fs::path f = dir_ / ("cut-" + std::to_string(cut) + ".pcap");
    spill(f, std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<long>(cut)));
    same_as_libpcap(f, "-T json", cut > at[20]);
    same_as_libpcap(f, "--stats -c 0");
    if (cut == 24) continue;  // a whole file header and no packets: nothing is cut
    // The break is named by its packet: the first one cut.
    auto r = test::kwire_cmd("decode -r " + f.string() + " -c 0");
    EXPECT_EQ(r.status >> 8, 1) << r.err;
    const size_t packet = static_cast<size_t>(std::upper_bound(at.begin(), at.end(), cut - 1) - at.begin());
    EXPECT_NE(r.err.find(": packet " + std::to_string(std::max<size_t>(packet, 1)) + ": truncated dump file"),
              std::string::npos) << r.err;
  }
}

// A capture larger than the reader's 8 MiB window, with packets of odd
// sizes, so that records straddle the window's edges.
TEST_F(PcapReader, RecordsAcrossTheMappedWindow) {
  const fs::path f = dir_ / "big.pcap";
  {
    SyntheticCapture cap(f.string());
    const uint32_t c = cap.connect(make_endpoint("10.0.0.1", 40000), make_endpoint("10.0.0.2", 9092));
    std::vector<uint8_t> payload(10u << 20);
    for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i * 7 + i / 977);
    cap.send(c, StreamSide::FromClient, payload, 1337);
  }
  ASSERT_GT(fs::file_size(f), 9u << 20);
  same_as_libpcap(f, "--stats -c 0");
  same_as_libpcap(f, "-T json -c 3");
}
