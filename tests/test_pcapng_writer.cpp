// PcapngWriter, checked by tools that are not kwire: libpcap reads the
// packets back, tshark and capinfos (Wireshark 4.0) judge the files, and a
// small block walker written from the pcapng spec reads the options that
// neither shows (shb_userappl values, if_filter bytes, isb_* counters).
#include "recorder/pcapng_writer.hpp"

#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

namespace kwire {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kSecond = 1'000'000'000;
// 2026-11-30 11:30:00 UTC, the start of every test capture.
constexpr int64_t kT0 = 1'796'038'200 * kSecond;

// --- running the Wireshark tools ---------------------------------------

struct ToolRun {
  std::string out;
  std::string err;  // kept apart: tshark warns about running as root there
  int status = -1;
};

ToolRun run(const std::string& cmd) {
  ToolRun r;
  char err_path[] = "/tmp/kwire-tool-stderr-XXXXXX";
  int err_fd = mkstemp(err_path);
  if (err_fd < 0) return r;
  ::close(err_fd);
  FILE* p = popen((cmd + " 2>" + err_path).c_str(), "r");
  if (p != nullptr) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    int st = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  std::ifstream in(err_path);
  r.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  std::remove(err_path);
  return r;
}

std::string shell_quoted(const std::string& s) { return "'" + s + "'"; }

// "Label:   value" from capinfos -M's long report.
std::string capinfos_value(const std::string& report, const std::string& label) {
  std::smatch m;
  if (!std::regex_search(report, m, std::regex(label + ":\\s*([^\\n]*)"))) return "<missing " + label + ">";
  return m[1];
}

ToolRun capinfos(const std::string& path) { return run("capinfos -M " + shell_quoted(path)); }

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t nl; (nl = s.find('\n', start)) != std::string::npos; start = nl + 1) out.push_back(s.substr(start, nl - start));
  if (start < s.size()) out.push_back(s.substr(start));
  return out;
}

// --- libpcap ---------------------------------------------------------------

struct PcapPacket {
  int64_t ts_ns = 0;
  uint32_t caplen = 0;
  uint32_t len = 0;
  std::vector<uint8_t> data;
};

struct PcapFile {
  int datalink = -1;
  int snaplen = -1;
  std::vector<PcapPacket> packets;
  std::string error;  // empty: the file read to its end without complaint
};

PcapFile read_with_libpcap(const std::string& path) {
  PcapFile f;
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  pcap_t* p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, errbuf);
  if (p == nullptr) {
    f.error = errbuf;
    return f;
  }
  f.datalink = pcap_datalink(p);
  f.snaplen = pcap_snapshot(p);
  pcap_pkthdr* h;
  const u_char* bytes;
  int rc;
  while ((rc = pcap_next_ex(p, &h, &bytes)) == 1) {
    // With nanosecond precision requested, tv_usec holds nanoseconds.
    int64_t ts = int64_t{h->ts.tv_sec} * kSecond + h->ts.tv_usec;
    f.packets.push_back({ts, h->caplen, h->len, std::vector<uint8_t>(bytes, bytes + h->caplen)});
  }
  if (rc != PCAP_ERROR_BREAK) f.error = pcap_geterr(p);
  pcap_close(p);
  return f;
}

// --- a block walker, from draft-ietf-opsawg-pcapng -----------------------

uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }
uint32_t le32(const uint8_t* p) { return le16(p) | uint32_t{le16(p + 2)} << 16; }
uint64_t le64(const uint8_t* p) { return le32(p) | uint64_t{le32(p + 4)} << 32; }
// A pcapng timestamp (or isb_starttime/endtime): upper 32 bits first.
uint64_t ts64(const uint8_t* p) { return uint64_t{le32(p)} << 32 | le32(p + 4); }

struct RawBlock {
  uint32_t type = 0;
  std::vector<uint8_t> body;  // between the length fields
  std::multimap<uint16_t, std::string> options;
};

// Options start after `fixed` bytes of the body (and, for packets, after the
// padded packet data).
void parse_options(RawBlock& b, size_t fixed) {
  size_t pos = fixed;
  while (pos + 4 <= b.body.size()) {
    uint16_t code = le16(&b.body[pos]);
    uint16_t len = le16(&b.body[pos + 2]);
    if (code == 0) break;
    b.options.emplace(code, std::string(b.body.begin() + pos + 4, b.body.begin() + pos + 4 + len));
    pos += 4 + ((len + 3u) & ~3u);
  }
}

size_t fixed_part(const RawBlock& b) {
  switch (b.type) {
    case 0x0A0D0D0A: return 16;
    case 1: return 8;
    case 5: return 12;
    case 6: return 20 + ((le32(&b.body[12]) + 3u) & ~3u);
    default: return b.body.size();
  }
}

// Every block of a little-endian pcapng file; `problem` says what is wrong
// with the framing, if anything (a cut block, lengths that disagree).
std::vector<RawBlock> walk_blocks(const std::string& path, std::string& problem) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<RawBlock> blocks;
  size_t pos = 0;
  while (pos < file.size()) {
    if (file.size() - pos < 12) return problem = "trailing bytes at " + std::to_string(pos), blocks;
    uint32_t len = le32(&file[pos + 4]);
    if (len < 12 || len % 4 != 0 || len > file.size() - pos) return problem = "cut block at " + std::to_string(pos), blocks;
    if (le32(&file[pos + len - 4]) != len) return problem = "lengths differ at " + std::to_string(pos), blocks;
    RawBlock b;
    b.type = le32(&file[pos]);
    b.body.assign(file.begin() + pos + 8, file.begin() + pos + len - 4);
    parse_options(b, fixed_part(b));
    blocks.push_back(std::move(b));
    pos += len;
  }
  return blocks;
}

std::vector<RawBlock> blocks_of_type(const std::vector<RawBlock>& all, uint32_t type) {
  std::vector<RawBlock> out;
  for (const auto& b : all) {
    if (b.type == type) out.push_back(b);
  }
  return out;
}

std::string option(const RawBlock& b, uint16_t code) {
  auto it = b.options.find(code);
  return it == b.options.end() ? "<none>" : it->second;
}

// --- fixtures ----------------------------------------------------------------

std::vector<uint8_t> payload(uint32_t seq, size_t size) {
  std::vector<uint8_t> p(size);
  for (size_t i = 0; i < size; ++i) p[i] = static_cast<uint8_t>(i * 7 + seq);
  std::memcpy(p.data(), &seq, std::min<size_t>(4, size));  // which packet this is, for order checks
  return p;
}

uint32_t seq_of(const PcapPacket& p) {
  uint32_t seq;
  std::memcpy(&seq, p.data.data(), 4);
  return seq;
}

std::string local_stamp(int64_t ns) {
  time_t secs = static_cast<time_t>(ns / kSecond);
  tm local{};
  localtime_r(&secs, &local);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d%H%M%S", &local);
  return buf;
}

class PcapngWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kwire-pcapng-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!mounted_.empty()) umount2(mounted_.c_str(), MNT_DETACH);
    fs::remove_all(dir_);
  }

  std::unique_ptr<PcapngWriter> open(PcapngWriterOptions o) {
    if (o.application.empty()) o.application = "kwire 0.1.0";
    if (o.start_ns == 0) o.start_ns = kT0;
    std::string err;
    auto w = PcapngWriter::open(o, err);
    EXPECT_NE(w, nullptr) << err;
    return w;
  }

  // A tmpfs of `size` under the test directory: a disk that really fills up.
  bool mount_small_disk(const std::string& path, const std::string& size, std::string& why) {
    fs::create_directories(path);
    std::string opts = "size=" + size;
    if (mount("tmpfs", path.c_str(), "tmpfs", 0, opts.c_str()) != 0) {
      why = "cannot mount a tmpfs (" + std::string(std::strerror(errno)) + "); needs root or CAP_SYS_ADMIN";
      return false;
    }
    mounted_ = path;
    return true;
  }

  std::string dir_;
  std::string mounted_;
};

// Every file `w` wrote, checked on its own; returns all their packets in file order.
std::vector<PcapPacket> packets_of_files(const std::vector<std::string>& files) {
  std::vector<PcapPacket> all;
  for (const auto& f : files) {
    ToolRun c = capinfos(f);
    EXPECT_EQ(c.status, 0) << f << "\n" << c.err;
    ToolRun t = run("tshark -r " + shell_quoted(f) + " -T fields -e frame.number");
    EXPECT_EQ(t.status, 0) << f << "\n" << t.err;
    PcapFile p = read_with_libpcap(f);
    EXPECT_EQ(p.error, "") << f;
    EXPECT_EQ(capinfos_value(c.out, "Number of packets"), std::to_string(p.packets.size())) << f;
    all.insert(all.end(), p.packets.begin(), p.packets.end());
  }
  return all;
}

// --- packets -------------------------------------------------------------------

TEST_F(PcapngWriterTest, LibpcapReadsPacketsBackAtNanosecondPrecision) {
  std::string path = dir_ + "/one.pcapng";
  auto w = open({.path = path});
  uint32_t lo = w->add_interface({.linktype = 1, .snaplen = 96, .name = "lo"});
  std::string err;
  // Odd sizes exercise the padding; 200 bytes exceed the snaplen and are cut to 96.
  std::vector<size_t> sizes = {60, 1, 7, 200, 100};
  for (uint32_t i = 0; i < sizes.size(); ++i) {
    auto data = payload(i, sizes[i]);
    ASSERT_TRUE(w->write_packet(lo, kT0 + i * 1'000'123'457LL, data, static_cast<uint32_t>(sizes[i] + 4), "", err)) << err;
  }
  ASSERT_TRUE(w->close({}, err)) << err;

  PcapFile f = read_with_libpcap(path);
  ASSERT_EQ(f.error, "");
  EXPECT_EQ(f.datalink, DLT_EN10MB);
  EXPECT_EQ(f.snaplen, 96);
  ASSERT_EQ(f.packets.size(), sizes.size());
  for (uint32_t i = 0; i < sizes.size(); ++i) {
    const auto& p = f.packets[i];
    uint32_t cap = static_cast<uint32_t>(std::min<size_t>(sizes[i], 96));
    EXPECT_EQ(p.ts_ns, kT0 + i * 1'000'123'457LL) << i;
    EXPECT_EQ(p.caplen, cap) << i;
    EXPECT_EQ(p.len, sizes[i] + 4) << i;
    auto want = payload(i, sizes[i]);
    EXPECT_EQ(p.data, std::vector<uint8_t>(want.begin(), want.begin() + cap)) << i;
  }
  EXPECT_EQ(w->packets_written(), sizes.size());
  EXPECT_EQ(w->bytes_written(), fs::file_size(path));
}

TEST_F(PcapngWriterTest, LinkTypesReachLibpcapAsItsDlts) {
  // LINKTYPE_ in the file, DLT_ from libpcap: they differ only for raw IP.
  std::vector<std::pair<int, int>> cases = {{0, DLT_NULL},         {1, DLT_EN10MB},      {101, DLT_RAW},
                                            {108, DLT_LOOP},       {113, DLT_LINUX_SLL}, {276, 276}};
  for (auto [linktype, dlt] : cases) {
    std::string path = dir_ + "/lt" + std::to_string(linktype) + ".pcapng";
    auto w = open({.path = path});
    uint32_t i = w->add_interface({.linktype = linktype, .name = "x"});
    std::string err;
    auto data = payload(1, 40);
    ASSERT_TRUE(w->write_packet(i, kT0, data, 40, "", err)) << err;
    ASSERT_TRUE(w->close({}, err)) << err;
    PcapFile f = read_with_libpcap(path);
    EXPECT_EQ(f.error, "") << linktype;
    EXPECT_EQ(f.datalink, dlt) << linktype;
    EXPECT_EQ(f.packets.size(), 1u) << linktype;
  }
}

TEST_F(PcapngWriterTest, TsharkSeesCommentsLengthsTimesAndInterfaces) {
  std::string path = dir_ + "/comments.pcapng";
  auto w = open({.path = path});
  uint32_t lo = w->add_interface({.linktype = 1, .name = "lo", .description = "Loopback"});
  uint32_t any = w->add_interface({.linktype = 113, .name = "any"});
  std::string err;
  auto a = payload(1, 74), b = payload(2, 61), c = payload(3, 1500);
  ASSERT_TRUE(w->write_packet(lo, kT0 + 1, a, 74, "Produce v11 request, corr=7", err)) << err;
  ASSERT_TRUE(w->write_packet(any, kT0 + 999'999'999, b, 61, "", err)) << err;
  ASSERT_TRUE(w->write_packet(lo, kT0 + 5 * kSecond + 42, c, 9000, "résumé → ストリーム", err)) << err;
  ASSERT_TRUE(w->close({}, err)) << err;

  ToolRun t = run("tshark -r " + shell_quoted(path) +
              " -T fields -E separator='|' -e frame.interface_id -e frame.interface_name -e frame.len"
              " -e frame.cap_len -e frame.time_epoch -e frame.comment");
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_EQ(split_lines(t.out), (std::vector<std::string>{
                                    "0|lo|74|74|1796038200.000000001|Produce v11 request, corr=7",
                                    "1|any|61|61|1796038200.999999999|",
                                    "0|lo|9000|1500|1796038205.000000042|résumé → ストリーム",
                                }));
}

// --- section header, interfaces, statistics ---------------------------------------

TEST_F(PcapngWriterTest, SectionHeaderAndInterfaceBlocksFollowTheSpec) {
  std::string path = dir_ + "/header.pcapng";
  auto w = open({.path = path, .application = "kwire 0.1.0"});
  w->add_interface({.linktype = 1, .snaplen = 65535, .name = "lo", .description = "Loopback",
                    .filter = "tcp port 9092"});
  w->add_interface({.linktype = 276, .name = "any"});
  std::string err;
  ASSERT_TRUE(w->close({}, err)) << err;

  ToolRun c = capinfos(path);
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_EQ(capinfos_value(c.out, "Capture application"), "kwire 0.1.0");
  EXPECT_EQ(capinfos_value(c.out, "Number of interfaces in file"), "2");
  EXPECT_EQ(capinfos_value(c.out, "File timestamp precision"), "nanoseconds (9)");
  EXPECT_NE(c.out.find("Name = lo"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("Description = Loopback"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("Capture length = 65535"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("Name = any"), std::string::npos) << c.out;

  std::string problem;
  auto blocks = walk_blocks(path, problem);
  ASSERT_EQ(problem, "");
  ASSERT_EQ(blocks.size(), 3u);
  const RawBlock& shb = blocks[0];
  ASSERT_EQ(shb.type, 0x0A0D0D0Au);
  EXPECT_EQ(le32(&shb.body[0]), 0x1A2B3C4Du);                  // written little-endian, as this host is
  EXPECT_EQ(le16(&shb.body[4]), 1);                            // major version
  EXPECT_EQ(le16(&shb.body[6]), 0);                            // minor version
  EXPECT_EQ(le64(&shb.body[8]), ~uint64_t{0});                 // section length unknown
  EXPECT_EQ(option(shb, 4), "kwire 0.1.0");                    // shb_userappl
  EXPECT_EQ(option(shb, 3).rfind("Linux ", 0), 0u) << option(shb, 3);  // shb_os, from uname
  EXPECT_EQ(capinfos_value(c.out, "Capture oper-sys"), option(shb, 3));

  const RawBlock& idb = blocks[1];
  ASSERT_EQ(idb.type, 1u);
  EXPECT_EQ(le16(&idb.body[0]), 1);           // LINKTYPE_ETHERNET
  EXPECT_EQ(le32(&idb.body[4]), 65535u);      // snaplen
  EXPECT_EQ(option(idb, 2), "lo");
  EXPECT_EQ(option(idb, 3), "Loopback");
  EXPECT_EQ(option(idb, 11), std::string(1, '\0') + "tcp port 9092");  // if_filter: code 0, a filter string
  EXPECT_EQ(option(idb, 9), std::string(1, '\x09'));                   // if_tsresol: 10^-9
  EXPECT_EQ(le16(&blocks[2].body[0]), 276);
  EXPECT_EQ(le32(&blocks[2].body[4]), 262144u);
  EXPECT_EQ(option(blocks[2], 11), "<none>");
}

TEST_F(PcapngWriterTest, StatisticsBlocksAtCloseCarryTheCounts) {
  std::string path = dir_ + "/stats.pcapng";
  auto w = open({.path = path, .start_ns = kT0 - 3 * kSecond});
  uint32_t lo = w->add_interface({.name = "lo"});
  w->add_interface({.name = "eth0"});
  std::string err;
  auto data = payload(0, 60);
  ASSERT_TRUE(w->write_packet(lo, kT0, data, 60, "", err)) << err;
  std::vector<InterfaceStatistics> stats = {
      {.received = 1000, .kernel_dropped = 3, .if_dropped = 2, .delivered_to_file = 995, .ts_ns = kT0 + 7 * kSecond},
      {.received = 5, .kernel_dropped = 0, .if_dropped = 0, .delivered_to_file = 5, .ts_ns = kT0 + 8 * kSecond},
  };
  ASSERT_TRUE(w->close(stats, err)) << err;

  ToolRun c = capinfos(path);
  ASSERT_EQ(c.status, 0) << c.err;
  // capinfos counts the statistics blocks of each interface.
  size_t entries = 0;
  for (const auto& l : split_lines(c.out)) entries += l.find("Number of stat entries = 1") != std::string::npos;
  EXPECT_EQ(entries, 2u) << c.out;
  EXPECT_EQ(capinfos_value(c.out, "Number of packets"), "1");

  std::string problem;
  auto isbs = blocks_of_type(walk_blocks(path, problem), 5);
  ASSERT_EQ(problem, "");
  ASSERT_EQ(isbs.size(), 2u);
  for (uint32_t i = 0; i < 2; ++i) {
    const RawBlock& b = isbs[i];
    EXPECT_EQ(le32(&b.body[0]), i);                                     // interface id
    EXPECT_EQ(ts64(&b.body[4]), uint64_t(stats[i].ts_ns));              // block timestamp
    EXPECT_EQ(ts64(reinterpret_cast<const uint8_t*>(option(b, 2).data())), uint64_t(kT0 - 3 * kSecond));  // isb_starttime
    EXPECT_EQ(ts64(reinterpret_cast<const uint8_t*>(option(b, 3).data())), uint64_t(stats[i].ts_ns));     // isb_endtime
    EXPECT_EQ(le64(reinterpret_cast<const uint8_t*>(option(b, 4).data())), stats[i].received);            // isb_ifrecv
    EXPECT_EQ(le64(reinterpret_cast<const uint8_t*>(option(b, 5).data())), stats[i].if_dropped);          // isb_ifdrop
    EXPECT_EQ(le64(reinterpret_cast<const uint8_t*>(option(b, 7).data())), stats[i].kernel_dropped);      // isb_osdrop
    EXPECT_EQ(le64(reinterpret_cast<const uint8_t*>(option(b, 8).data())), stats[i].delivered_to_file);   // isb_usrdeliv
  }
}

TEST_F(PcapngWriterTest, CloseIsIdempotentAndLaterWritesFail) {
  std::string path = dir_ + "/twice.pcapng";
  auto w = open({.path = path});
  uint32_t lo = w->add_interface({.name = "lo"});
  std::string err;
  auto data = payload(0, 60);
  ASSERT_TRUE(w->write_packet(lo, kT0, data, 60, "", err)) << err;
  ASSERT_TRUE(w->close({{.received = 1, .ts_ns = kT0 + 1}}, err)) << err;
  ASSERT_TRUE(w->close({{.received = 2, .ts_ns = kT0 + 2}}, err)) << err;  // changes nothing
  EXPECT_FALSE(w->write_packet(lo, kT0 + 3, data, 60, "", err));
  EXPECT_NE(err.find("closed"), std::string::npos) << err;

  std::string problem;
  auto blocks = walk_blocks(path, problem);
  EXPECT_EQ(problem, "");
  EXPECT_EQ(blocks_of_type(blocks, 5).size(), 1u);
  EXPECT_EQ(blocks_of_type(blocks, 6).size(), 1u);
}

TEST_F(PcapngWriterTest, DestructorLeavesAValidFileWithoutStatistics) {
  std::string path = dir_ + "/dropped.pcapng";
  {
    auto w = open({.path = path});
    uint32_t lo = w->add_interface({.name = "lo"});
    std::string err;
    for (uint32_t i = 0; i < 100; ++i) {
      auto data = payload(i, 100);
      ASSERT_TRUE(w->write_packet(lo, kT0 + i, data, 100, "", err)) << err;
    }
  }  // no flush, no close: the destructor must still get every packet out
  ToolRun c = capinfos(path);
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_EQ(capinfos_value(c.out, "Number of packets"), "100");
  std::string problem;
  EXPECT_EQ(blocks_of_type(walk_blocks(path, problem), 5).size(), 0u);
  EXPECT_EQ(problem, "");
}

TEST_F(PcapngWriterTest, WritesToStandardOutput) {
  std::string path = dir_ + "/stdout.pcapng";
  fflush(stdout);
  int saved = dup(STDOUT_FILENO);
  FILE* target = fopen(path.c_str(), "wb");
  ASSERT_NE(target, nullptr);
  dup2(fileno(target), STDOUT_FILENO);
  std::string err;
  bool ok;
  {
    auto w = open({.path = "-"});
    uint32_t lo = w->add_interface({.name = "lo"});
    auto data = payload(9, 80);
    ok = w->write_packet(lo, kT0, data, 80, "to a pipe", err) && w->close({{.received = 1, .ts_ns = kT0}}, err);
    EXPECT_EQ(w->current_path(), "-");
  }
  dup2(saved, STDOUT_FILENO);
  close(saved);
  fclose(target);
  ASSERT_TRUE(ok) << err;
  ToolRun t = run("tshark -r " + shell_quoted(path) + " -T fields -e frame.comment -e frame.len");
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_EQ(t.out, "to a pipe\t80\n");
}

// --- rotation ----------------------------------------------------------------------

TEST_F(PcapngWriterTest, RotatesBySizeIntoFilesThatEachStandAlone) {
  constexpr uint64_t kLimit = 4096;
  auto w = open({.path = dir_ + "/cap.pcapng", .rotate_bytes = kLimit});
  uint32_t lo = w->add_interface({.name = "lo"});
  uint32_t eth = 0;
  std::string err;
  std::vector<int64_t> times;
  for (uint32_t i = 0; i < 60; ++i) {
    if (i == 20) eth = w->add_interface({.name = "eth0"});  // joins mid-file; later files repeat it
    auto data = payload(i, 300);
    times.push_back(kT0 + i * 400'000'000LL + i);
    ASSERT_TRUE(w->write_packet(i >= 20 && i % 2 ? eth : lo, times.back(), data, 300, "", err)) << err;
  }
  ASSERT_TRUE(w->close({}, err)) << err;

  const auto& files = w->files();
  ASSERT_GE(files.size(), 5u);
  std::set<std::string> on_disk;
  for (const auto& e : fs::directory_iterator(dir_)) on_disk.insert(e.path().string());
  EXPECT_EQ(on_disk, std::set<std::string>(files.begin(), files.end()));

  auto all = packets_of_files(files);
  ASSERT_EQ(all.size(), 60u);
  size_t first_of_file = 0;
  std::regex name(R"(.*/cap_(\d{5})_(\d{14})\.pcapng)");
  for (size_t f = 0; f < files.size(); ++f) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(files[f], m, name)) << files[f];
    EXPECT_EQ(std::stoul(m[1].str()), f + 1);
    // The first file is named for the capture start, the others for their first packet.
    EXPECT_EQ(m[2].str(), local_stamp(f == 0 ? kT0 : times[first_of_file])) << files[f];
    if (f + 1 < files.size()) {
      EXPECT_LE(fs::file_size(files[f]), kLimit) << files[f];  // the last one also holds the statistics
    }
    size_t count = read_with_libpcap(files[f]).packets.size();
    // eth0 came with packet 20: the file that holds it and every later one list both.
    ToolRun c = capinfos(files[f]);
    EXPECT_EQ(capinfos_value(c.out, "Number of interfaces in file"), first_of_file + count > 20 ? "2" : "1") << files[f];
    first_of_file += count;
  }
  for (uint32_t i = 0; i < 60; ++i) {
    EXPECT_EQ(seq_of(all[i]), i);
    EXPECT_EQ(all[i].ts_ns, times[i]);
  }
}

TEST_F(PcapngWriterTest, RotatesBySecondsAndKeepsARingOfTheNewest) {
  auto w = open({.path = dir_ + "/ring.pcapng", .rotate_seconds = 1, .ring_files = 3});
  uint32_t lo = w->add_interface({.name = "lo"});
  std::string err;
  // Four packets a second for six seconds: six files, the first three deleted.
  for (uint32_t i = 0; i < 24; ++i) {
    auto data = payload(i, 100);
    ASSERT_TRUE(w->write_packet(lo, kT0 + i * 250'000'000LL, data, 100, "", err)) << err;
  }
  ASSERT_TRUE(w->close({{.received = 24, .delivered_to_file = 24, .ts_ns = kT0 + 6 * kSecond}}, err)) << err;

  const auto& files = w->files();
  ASSERT_EQ(files.size(), 3u);
  for (size_t f = 0; f < 3; ++f) {
    char want[64];
    std::snprintf(want, sizeof want, "/ring_%05zu_%s.pcapng", f + 4, local_stamp(kT0 + (f + 3) * kSecond).c_str());
    EXPECT_EQ(files[f], dir_ + want);
  }
  size_t on_disk = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++on_disk;
  EXPECT_EQ(on_disk, 3u);

  auto kept = packets_of_files(files);
  ASSERT_EQ(kept.size(), 12u);
  for (uint32_t i = 0; i < 12; ++i) EXPECT_EQ(seq_of(kept[i]), 12 + i);
  EXPECT_EQ(w->packets_written(), 24u);
}

TEST_F(PcapngWriterTest, TickRotatesWhileNoPacketsArrive) {
  auto w = open({.path = dir_ + "/idle.pcapng", .rotate_seconds = 2});
  uint32_t lo = w->add_interface({.name = "lo"});
  std::string err;
  auto data = payload(0, 60);
  ASSERT_TRUE(w->write_packet(lo, kT0 + kSecond / 10, data, 60, "", err)) << err;
  ASSERT_TRUE(w->tick(kT0 + kSecond, err)) << err;
  EXPECT_EQ(w->files().size(), 1u);
  ASSERT_TRUE(w->tick(kT0 + 2 * kSecond + kSecond / 2, err)) << err;  // 2.5 s: due
  ASSERT_EQ(w->files().size(), 2u);
  EXPECT_NE(w->current_path().find(local_stamp(kT0 + 2 * kSecond)), std::string::npos) << w->current_path();
  ASSERT_TRUE(w->write_packet(lo, kT0 + 3 * kSecond, data, 60, "", err)) << err;       // same period
  ASSERT_TRUE(w->write_packet(lo, kT0 + 4 * kSecond + kSecond / 2, data, 60, "", err)) << err;  // next one
  ASSERT_TRUE(w->close({}, err)) << err;

  ASSERT_EQ(w->files().size(), 3u);
  for (const auto& f : w->files()) {
    ToolRun c = capinfos(f);
    ASSERT_EQ(c.status, 0) << c.err;
    EXPECT_EQ(capinfos_value(c.out, "Number of packets"), "1") << f;
  }
}

// --- errors ----------------------------------------------------------------------

TEST_F(PcapngWriterTest, RefusesRotationOnStandardOutputAndARingWithoutRotation) {
  std::string err;
  EXPECT_EQ(PcapngWriter::open({.path = "-", .rotate_bytes = 1000}, err), nullptr);
  EXPECT_NE(err.find("standard output"), std::string::npos) << err;
  EXPECT_EQ(PcapngWriter::open({.path = dir_ + "/r.pcapng", .ring_files = 3}, err), nullptr);
  EXPECT_NE(err.find("-W"), std::string::npos) << err;
}

TEST_F(PcapngWriterTest, UnwritablePathNamesThePathAndTheReason) {
  std::string err;
  std::string missing = dir_ + "/no/such/dir/cap.pcapng";
  EXPECT_EQ(PcapngWriter::open({.path = missing}, err), nullptr);
  EXPECT_EQ(err, "cannot create " + missing + ": No such file or directory");

  std::ofstream(dir_ + "/plain") << "a file, not a directory";
  std::string under_file = dir_ + "/plain/cap.pcapng";
  EXPECT_EQ(PcapngWriter::open({.path = under_file, .rotate_seconds = 5, .start_ns = kT0}, err), nullptr);
  EXPECT_NE(err.find(dir_ + "/plain/cap_00001_"), std::string::npos) << err;
  EXPECT_NE(err.find("Not a directory"), std::string::npos) << err;
}

// Fills a 64 KiB tmpfs; `flush_every` packets the buffer goes out (0: only when it is full).
void fill_the_disk(PcapngWriter& w, uint32_t flush_every, std::string& err) {
  uint32_t lo = w.add_interface({.name = "lo"});
  for (uint32_t i = 0; i < 5000; ++i) {
    auto data = payload(i, 1000);
    if (!w.write_packet(lo, kT0 + i * 1000LL, data, 1000, "", err)) return;
    if (flush_every != 0 && i % flush_every == 0 && !w.flush(err)) return;
  }
  err = "the disk never filled up";
}

void expect_whole_blocks_after_disk_full(const std::string& path, PcapngWriter& w, const std::string& err) {
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find("No space left on device"), std::string::npos) << err;

  // Fails fast from now on, with the same reason.
  std::string again;
  auto data = payload(0, 10);
  EXPECT_FALSE(w.write_packet(0, kT0, data, 10, "", again));
  EXPECT_EQ(again, err);
  EXPECT_FALSE(w.close({}, again));

  ASSERT_GT(w.packets_written(), 10u);
  ToolRun c = capinfos(path);
  EXPECT_EQ(c.status, 0) << c.err;
  EXPECT_EQ(c.err.find("cut short"), std::string::npos) << c.err;
  EXPECT_EQ(c.err.find("capinfos:"), std::string::npos) << c.err;  // no complaint about the file at all
  EXPECT_EQ(capinfos_value(c.out, "Number of packets"), std::to_string(w.packets_written()));
  PcapFile f = read_with_libpcap(path);
  EXPECT_EQ(f.error, "");
  ASSERT_EQ(f.packets.size(), w.packets_written());
  for (uint32_t i = 0; i < f.packets.size(); ++i) EXPECT_EQ(seq_of(f.packets[i]), i);
  std::string problem;
  walk_blocks(path, problem);
  EXPECT_EQ(problem, "");
  EXPECT_EQ(fs::file_size(path), w.bytes_written());
}

TEST_F(PcapngWriterTest, DiskFullKeepsEveryWholeBlock) {
  std::string disk = dir_ + "/small", why;
  if (!mount_small_disk(disk, "64k", why)) GTEST_SKIP() << why;
  for (uint32_t flush_every : {1u, 7u, 0u}) {
    SCOPED_TRACE("flush every " + std::to_string(flush_every) + " packets");
    std::string path = disk + "/full" + std::to_string(flush_every) + ".pcapng";
    auto w = open({.path = path});
    std::string err;
    fill_the_disk(*w, flush_every, err);
    expect_whole_blocks_after_disk_full(path, *w, err);
    w.reset();
    fs::remove(path);  // room for the next round
  }
}

}  // namespace
}  // namespace kwire
