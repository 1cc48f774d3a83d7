// PcapngWriter writes what `kwire record` captures as pcapng
// (draft-ietf-opsawg-pcapng), with tcpdump/dumpcap style rotation:
// -C by size, -G by seconds, -W a ring of N files.
//
//   std::string err;
//   auto w = PcapngWriter::open({.path = "/tmp/cap.pcapng", .application = "kwire 0.1.0"}, err);
//   uint32_t lo = w->add_interface({.linktype = 1, .name = "lo"});
//   w->write_packet(lo, ts_ns, bytes, orig_len, "", err);   // buffered, no syscall
//   w->flush(err);                                           // a few times a second
//   w->close({{.received = n, .ts_ns = now}}, err);          // statistics, then close
//
// Every file stands on its own: it starts with a section header block and
// all interface description blocks, and rotation happens between blocks.
// Blocks are in host byte order, timestamps in nanoseconds (if_tsresol 9).
// On a write error (disk full) the file is cut back to its last whole block,
// so it still opens everywhere, and every later call fails fast.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kwire {

struct PcapngInterface {
  int linktype = 1;            // LINKTYPE_ value (DLT_EN10MB=1, LINUX_SLL=113, LINUX_SLL2=276, NULL=0, LOOP=108, RAW=101)
  uint32_t snaplen = 262144;   // longer packets are cut to this when written
  std::string name;            // if_name, e.g. "lo"
  std::string description;     // if_description, optional
  std::string filter;          // if_filter (BPF string), optional
};

struct PcapngWriterOptions {
  std::string path;            // "-" means standard output (no rotation allowed then)
  uint64_t rotate_bytes = 0;   // -C: start a new file before a packet would push the current one past this size (0: never)
  uint64_t rotate_seconds = 0; // -G: start a new file once this many seconds passed since the current one started (0: never)
  uint32_t ring_files = 0;     // -W: keep at most N files, deleting the oldest (0: keep all); needs -C or -G
  std::string application;     // shb_userappl, e.g. "kwire 0.1.0"
  // Addition: when the capture started, in the time base of the packets
  // (ns since the epoch). It names the first rotated file, starts the first
  // -G period and is every isb_starttime. 0: the wall clock at open().
  int64_t start_ns = 0;
};

struct InterfaceStatistics {
  uint64_t received = 0;           // isb_ifrecv: packets the capture saw (pcap_stats ps_recv)
  uint64_t kernel_dropped = 0;     // isb_osdrop: dropped by the OS for lack of buffer space (ps_drop)
  uint64_t if_dropped = 0;         // isb_ifdrop: dropped by the interface or its driver (ps_ifdrop)
  uint64_t delivered_to_file = 0;  // isb_usrdeliv: packets written to the file(s)
  int64_t ts_ns = 0;               // when these were taken: block timestamp and isb_endtime (0: wall clock)
};

class PcapngWriter {
 public:
  // Opens the first file and writes its section header; interface blocks
  // follow as interfaces are added. Returns nullptr and fills `error`
  // (naming the path and the reason) when it cannot.
  static std::unique_ptr<PcapngWriter> open(PcapngWriterOptions opts, std::string& error);
  ~PcapngWriter();  // closes validly if close() was not called (no statistics block)
  PcapngWriter(const PcapngWriter&) = delete;
  PcapngWriter& operator=(const PcapngWriter&) = delete;

  // Before or after the first packet; every later file repeats all interfaces.
  // Returns the interface id for write_packet. A write failure here shows up
  // on the next call that returns an error.
  uint32_t add_interface(const PcapngInterface& iface);

  // One enhanced packet block: nanosecond timestamp, the captured bytes (cut to
  // the interface's snaplen), the original length and an optional UTF-8
  // comment (opt_comment, at most 65535 bytes). Returns false with `error` on
  // a write failure (the file keeps its whole blocks; later calls fail fast),
  // an unknown interface or a negative timestamp.
  bool write_packet(uint32_t iface, int64_t ts_ns, std::span<const uint8_t> data, uint32_t orig_len,
                    std::string_view comment, std::string& error);
  // A Decryption Secrets Block holding TLS key log lines (SSLKEYLOGFILE
  // format), before the packets they decrypt; every later file repeats all
  // secrets blocks after its interfaces, so each file opens decrypted on its own.
  bool write_tls_secrets(std::string_view keylog, std::string& error);
  // For the caller's idle ticks: rotates when -G is due at time now_ns.
  bool tick(int64_t now_ns, std::string& error);
  // Pushes buffered blocks to the OS.
  bool flush(std::string& error);
  // One interface statistics block per entry of `stats` (index = interface id;
  // extra entries are ignored), then flushes and closes. Idempotent.
  bool close(const std::vector<InterfaceStatistics>& stats, std::string& error);

  const std::string& current_path() const { return current_path_; }
  // Every file written, in order (with -W: those still on disk).
  const std::vector<std::string>& files() const { return files_; }
  // Packets in the files (those cut away after a write failure are not counted).
  uint64_t packets_written() const { return packets_; }
  // Bytes of whole blocks in all files, deleted ring files included.
  uint64_t bytes_written() const { return bytes_; }

 private:
  explicit PcapngWriter(PcapngWriterOptions opts);

  bool rotating() const { return opts_.rotate_bytes != 0 || opts_.rotate_seconds != 0; }
  std::string file_name(int64_t start_ns) const;
  bool open_file(int64_t start_ns, std::string& error);
  bool close_file(std::string& error);
  bool rotate(int64_t start_ns, std::string& error);
  bool delete_oldest(std::string& error);
  bool time_rotation_due(int64_t now_ns) const;
  bool size_rotation_due(size_t block_len) const;
  bool write_statistics(const std::vector<InterfaceStatistics>& stats, std::string& error);
  bool ensure_space(size_t n, std::string& error);
  void append(std::span<const uint8_t> block);
  uint8_t* reserve_block(size_t n);
  bool write_out(std::string& error);
  void cut_to_whole_blocks(size_t written);
  bool fail(std::string message, std::string& error);
  bool failed(std::string& error) const;

  PcapngWriterOptions opts_;
  std::vector<uint8_t> shb_;                 // this section's header, built once
  std::vector<std::vector<uint8_t>> idbs_;   // every interface block, built once, repeated per file
  std::vector<std::vector<uint8_t>> dsbs_;   // every secrets block, repeated per file after the interfaces
  std::vector<uint32_t> snaplens_;
  std::vector<uint8_t> buf_;                 // whole blocks not yet given to the OS
  size_t used_ = 0;
  int fd_ = -1;
  bool is_stdout_ = false;
  uint64_t file_flushed_ = 0;                // bytes of the current file the OS has
  uint64_t file_packets_ = 0;
  int64_t period_start_ns_ = 0;              // -G: when the current file's period began
  uint32_t sequence_ = 0;                    // the _NNNNN_ of the current file
  std::string current_path_;
  std::vector<std::string> files_;
  uint64_t packets_ = 0;
  uint64_t bytes_ = 0;
  std::string error_;                        // the fatal error, once there is one
  bool closed_ = false;
};

}  // namespace kwire
