// What the commands that capture live share (kwire record, kwire monitor):
// the interface, filter, --auto, ring and key log options, declared once;
// opening the source they name; following a key log that clients append
// to; and stopping on a signal.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "recorder/capture.hpp"
#include "recorder/packet_source.hpp"
#include "tls/keylog.hpp"

namespace kwire::cli {

struct LiveCaptureOptions {
  std::string iface, input;
  std::set<uint16_t> ports{9092};
  std::string filter;
  bool filter_given = false;
  bool auto_mode = false;
  uint32_t snaplen = 262144;
  int buffer_mib = 0;   // 0: default_buffer_mib()
  // Packets come from the kernel in batches at most this old (TPACKET_V3:
  // packets packed densely in blocks); 0 is libpcap's immediate mode. In
  // bench/record-bench immediate mode dropped packets from 100,000 Kafka
  // messages/s on lo, batches of 10 ms none up to the highest rate, as tcpdump.
  int batch_ms = 10;
  std::string tls_keylog;
};

// The help of the options whose meaning depends on what the command does
// with the packets.
struct LiveCaptureHelp {
  std::string read;        // -r FILE
  std::string auto_mode;   // --auto
  std::string tls_keylog;  // --tls-keylog FILE
};

// -i, -r, -p, -f, --auto, --tls-keylog, -s, -B, --batch-ms, --immediate-mode.
std::vector<Option> live_capture_options(LiveCaptureOptions& o, const LiveCaptureHelp& help);

// The capture filter when -f is not given: all TCP with --auto, else the
// Kafka ports of -p.
void default_filter(LiveCaptureOptions& o);

// Immediate mode gives each packet a fixed slot in the kernel ring (libpcap's
// TPACKET_V2) as large as the interface's MTU, or the whole snaplen where the
// MTU is unknown (-i any). libpcap's 2 MiB default then holds a few dozen
// packets and bursts are dropped; these hold about a thousand. Batches
// (--batch-ms) pack packets densely and need far less.
int default_buffer_mib(const LiveCaptureOptions& o);

// The live interface of -i, or the file of -r. A default ring the host does
// not grant is tried again smaller (said on stderr, after `who`). A link
// type kwire cannot parse is a usage error too.
std::unique_ptr<PacketSource> open_capture_source(const LiveCaptureOptions& o, const std::string& who,
                                                  std::string& error, SourceError& kind);

// What the stream layer knows of a packet: its number and time.
PacketMeta packet_meta(const RawPacket& raw, uint64_t number);

// A key log that clients append to: the whole lines added since the last look.
class KeyLogFollower {
 public:
  explicit KeyLogFollower(std::string path) : path_(std::move(path)) {}
  // New complete lines, or empty. A file that does not exist (yet) is no error.
  std::string poll();
  // The new lines, added to `keys`; their warnings on stderr after `who`.
  // The caller then tells the TLS layer (TlsLayer::keys_added).
  std::string poll_into(TlsKeyLog& keys, const std::string& who);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  size_t offset_ = 0;
  std::string partial_;
};

// SIGINT, SIGTERM and SIGHUP set the stop flag (and wake a blocking poll);
// a closed pipe becomes a write error.
void install_stop_signals();
bool stop_requested();

int64_t wall_ns();
int64_t mono_ns();

}  // namespace kwire::cli
