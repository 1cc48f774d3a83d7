// Where recorded packets come from: a live interface through libpcap
// (immediate mode, full snaplen, nanosecond timestamps where the kernel has
// them) or a capture file to re-filter. Both give raw frames with their
// link-layer type; reading is non-blocking so that the caller can stop on a
// signal, a count or a deadline without losing what libpcap holds.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

struct pcap;
struct pcap_pkthdr;

namespace kwire {

struct LiveOptions {
  std::string interface;       // "lo", "any", "eth0"
  std::string filter;          // BPF, applied in the kernel
  uint32_t snaplen = 262144;
  int buffer_mib = 0;          // kernel buffer (-B); 0: libpcap's default
  bool immediate = true;       // libpcap immediate mode; else batches of at most timeout_ms
  int timeout_ms = 10;
};

struct RawPacket {
  int64_t ts_ns = 0;
  uint32_t caplen = 0;
  uint32_t wire_len = 0;
  const uint8_t* data = nullptr;
};

struct SourceStats {
  uint64_t received = 0;        // pcap_stats ps_recv (live) or packets read (file)
  uint64_t kernel_dropped = 0;  // ps_drop
  uint64_t if_dropped = 0;      // ps_ifdrop
};

// Why opening failed: a usage problem (interface, privilege, filter) or not.
enum class SourceError : uint8_t { None, Usage, Runtime };

class PacketSource {
 public:
  static std::unique_ptr<PacketSource> open_live(const LiveOptions& o, std::string& error, SourceError& kind);
  // `path` "-" is standard input; `filter` is applied while reading.
  static std::unique_ptr<PacketSource> open_file(const std::string& path, const std::string& filter,
                                                 std::string& error, SourceError& kind);
  ~PacketSource();
  PacketSource(const PacketSource&) = delete;
  PacketSource& operator=(const PacketSource&) = delete;

  int link_type() const;          // DLT_ value, for decoding
  int pcapng_link_type() const;   // LINKTYPE_ value, for the file
  uint32_t snaplen() const;
  bool live() const { return live_; }
  const std::string& name() const { return name_; }

  enum class Read : uint8_t { Packets, Idle, End, Error };
  // Hands up to `max` packets to `fn`, waiting at most `wait_ms` when none
  // is ready (live). End: the file is exhausted. Error: `error` says why.
  Read read(int max, int wait_ms, const std::function<void(const RawPacket&)>& fn, std::string& error);
  SourceStats stats() const;
  // Whether the file ended in a cut or corrupt record (files only).
  bool damaged() const { return damaged_; }

 private:
  PacketSource() = default;
  pcap* p_ = nullptr;
  bool live_ = false;
  bool damaged_ = false;
  int fd_ = -1;
  std::string name_;
  uint64_t read_ = 0;
  const std::function<void(const RawPacket&)>* fn_ = nullptr;
  static void on_packet(unsigned char* user, const ::pcap_pkthdr* h, const unsigned char* bytes);
};

// Every interface libpcap can capture on, "name - description" per line.
std::vector<std::string> list_interfaces(std::string& error);

}  // namespace kwire
