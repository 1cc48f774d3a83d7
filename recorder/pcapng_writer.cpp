#include "recorder/pcapng_writer.hpp"

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace kwire {
namespace {

// Block types and option codes, as draft-ietf-opsawg-pcapng numbers them.
constexpr uint32_t kSectionHeader = 0x0A0D0D0A;
constexpr uint32_t kInterfaceDescription = 1;
constexpr uint32_t kInterfaceStatistics = 5;
constexpr uint32_t kEnhancedPacket = 6;
constexpr uint32_t kDecryptionSecrets = 0x0000000A;
constexpr uint32_t kTlsKeyLog = 0x544c534b;  // secrets type "TLSK"
constexpr uint32_t kByteOrderMagic = 0x1A2B3C4D;
constexpr uint16_t kOptEnd = 0, kOptComment = 1;
constexpr uint16_t kShbHardware = 2, kShbOs = 3, kShbUserAppl = 4;
constexpr uint16_t kIfName = 2, kIfDescription = 3, kIfTsresol = 9, kIfFilter = 11;
constexpr uint16_t kIsbStart = 2, kIsbEnd = 3, kIsbIfRecv = 4, kIsbIfDrop = 5, kIsbOsDrop = 7, kIsbUsrDeliv = 8;
constexpr uint8_t kNanoseconds = 9;        // if_tsresol: 10^-9 s
constexpr uint8_t kFilterString = 0;       // if_filter: a libpcap filter string follows
constexpr size_t kBufferSize = 1 << 20;    // one write() per MiB, not per packet
constexpr size_t kMaxOptionLength = 0xFFFF;

constexpr size_t pad4(size_t n) { return (n + 3) & ~size_t{3}; }

int64_t wall_clock_ns() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

std::string strerror_of(int e) { return std::strerror(e); }

// Little builder for the rare blocks (section header, interfaces,
// statistics); packets are written straight into the output buffer instead.
class Block {
 public:
  explicit Block(uint32_t type) { u32(type).u32(0); }
  Block& u16(uint16_t v) { return raw(&v, 2); }
  Block& u32(uint32_t v) { return raw(&v, 4); }
  Block& u64(uint64_t v) { return raw(&v, 8); }
  // A pcapng timestamp: the upper 32 bits, then the lower, in if_tsresol units.
  Block& ts(uint64_t v) { return u32(static_cast<uint32_t>(v >> 32)).u32(static_cast<uint32_t>(v)); }
  Block& raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
    return *this;
  }
  Block& option(uint16_t code, const void* p, size_t n) {
    u16(code).u16(static_cast<uint16_t>(n)).raw(p, n);
    bytes_.resize(pad4(bytes_.size()));
    return *this;
  }
  Block& option(uint16_t code, std::string_view s) {
    return s.empty() ? *this : option(code, s.data(), std::min(s.size(), kMaxOptionLength));
  }
  Block& option_u64(uint16_t code, uint64_t v) { return option(code, &v, 8); }
  Block& option_ts(uint16_t code, uint64_t v) {
    uint32_t parts[2] = {static_cast<uint32_t>(v >> 32), static_cast<uint32_t>(v)};
    return option(code, parts, sizeof parts);
  }
  // Ends the options and writes the total length at both ends.
  std::vector<uint8_t> finish() {
    u16(kOptEnd).u16(0);
    auto len = static_cast<uint32_t>(bytes_.size() + 4);
    u32(len);
    std::memcpy(bytes_.data() + 4, &len, 4);
    return std::move(bytes_);
  }

 private:
  std::vector<uint8_t> bytes_;
};

std::vector<uint8_t> section_header(const std::string& application) {
  utsname u{};
  uname(&u);
  std::string os = std::string(u.sysname) + " " + u.release;
  Block b(kSectionHeader);
  b.u32(kByteOrderMagic).u16(1).u16(0).u64(~uint64_t{0});  // version 1.0, section length unknown (-1)
  b.option(kShbHardware, u.machine).option(kShbOs, os).option(kShbUserAppl, application);
  return b.finish();
}

std::vector<uint8_t> interface_description(const PcapngInterface& i) {
  Block b(kInterfaceDescription);
  b.u16(static_cast<uint16_t>(i.linktype)).u16(0).u32(i.snaplen);
  b.option(kIfName, i.name).option(kIfDescription, i.description);
  if (!i.filter.empty()) {
    std::string f(1, static_cast<char>(kFilterString));
    b.option(kIfFilter, f + i.filter);
  }
  b.option(kIfTsresol, &kNanoseconds, 1);
  return b.finish();
}

std::vector<uint8_t> interface_statistics(uint32_t id, const InterfaceStatistics& s, int64_t start_ns) {
  auto end = static_cast<uint64_t>(s.ts_ns != 0 ? s.ts_ns : wall_clock_ns());
  Block b(kInterfaceStatistics);
  b.u32(id).ts(end);
  b.option_ts(kIsbStart, static_cast<uint64_t>(start_ns)).option_ts(kIsbEnd, end);
  b.option_u64(kIsbIfRecv, s.received).option_u64(kIsbIfDrop, s.if_dropped);
  b.option_u64(kIsbOsDrop, s.kernel_dropped).option_u64(kIsbUsrDeliv, s.delivered_to_file);
  return b.finish();
}

// The longest prefix of `s` that fits an option and does not end inside a UTF-8 sequence.
std::string_view clip_utf8(std::string_view s) {
  if (s.size() <= kMaxOptionLength) return s;
  size_t n = kMaxOptionLength;
  while (n > 0 && (static_cast<uint8_t>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

uint8_t* put32(uint8_t* p, uint32_t v) {
  std::memcpy(p, &v, 4);
  return p + 4;
}
uint8_t* put16(uint8_t* p, uint16_t v) {
  std::memcpy(p, &v, 2);
  return p + 2;
}
// `n` bytes then zeros up to the next multiple of 4.
uint8_t* put_padded(uint8_t* p, const void* src, size_t n) {
  if (n != 0) std::memcpy(p, src, n);
  std::memset(p + n, 0, pad4(n) - n);
  return p + pad4(n);
}

uint32_t block_length_at(const uint8_t* p) {
  uint32_t len;
  std::memcpy(&len, p + 4, 4);
  return len;
}

// "/d/cap.pcapng" -> {"/d/cap", ".pcapng"}; a leading dot is part of the name.
std::pair<std::string, std::string> split_extension(const std::string& path) {
  size_t base = path.rfind('/');
  base = base == std::string::npos ? 0 : base + 1;
  size_t dot = path.rfind('.');
  if (dot == std::string::npos || dot <= base) return {path, ""};
  return {path.substr(0, dot), path.substr(dot)};
}

}  // namespace

PcapngWriter::PcapngWriter(PcapngWriterOptions opts) : opts_(std::move(opts)) {}

std::unique_ptr<PcapngWriter> PcapngWriter::open(PcapngWriterOptions opts, std::string& error) {
  bool rotation = opts.rotate_bytes != 0 || opts.rotate_seconds != 0;
  if (opts.path.empty()) {
    error = "no output file given";
    return nullptr;
  }
  if (opts.path == "-" && (rotation || opts.ring_files != 0)) {
    error = "cannot rotate files when writing to standard output (-w -)";
    return nullptr;
  }
  if (opts.ring_files != 0 && !rotation) {
    error = "a ring of files (-W) needs rotation by size (-C) or time (-G)";
    return nullptr;
  }
  if (opts.start_ns == 0) opts.start_ns = wall_clock_ns();
  std::unique_ptr<PcapngWriter> w(new PcapngWriter(std::move(opts)));
  w->shb_ = section_header(w->opts_.application);
  w->buf_.resize(kBufferSize);
  if (!w->open_file(w->opts_.start_ns, error)) return nullptr;
  return w;
}

PcapngWriter::~PcapngWriter() {
  if (closed_) return;
  std::string ignored;  // nobody is left to tell; close() is the way to hear about errors
  if (error_.empty()) {
    close_file(ignored);
  } else if (fd_ >= 0 && !is_stdout_) {
    ::close(fd_);
  }
}

// dumpcap's naming: <stem>_<5-digit sequence>_<local YYYYMMDDhhmmss><extension>.
std::string PcapngWriter::file_name(int64_t start_ns) const {
  time_t secs = static_cast<time_t>(start_ns / 1'000'000'000);
  tm local{};
  localtime_r(&secs, &local);
  char when[32];
  std::strftime(when, sizeof when, "%Y%m%d%H%M%S", &local);
  char seq[16];
  std::snprintf(seq, sizeof seq, "%05u", sequence_);
  auto [stem, ext] = split_extension(opts_.path);
  return stem + "_" + seq + "_" + when + ext;
}

bool PcapngWriter::open_file(int64_t start_ns, std::string& error) {
  ++sequence_;
  is_stdout_ = opts_.path == "-";
  current_path_ = rotating() ? file_name(start_ns) : opts_.path;
  fd_ = is_stdout_ ? STDOUT_FILENO : ::open(current_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) return fail("cannot create " + current_path_ + ": " + strerror_of(errno), error);
  files_.push_back(current_path_);
  file_flushed_ = 0;
  file_packets_ = 0;
  period_start_ns_ = start_ns;
  // A new file repeats the section header and every interface, so it opens on its own.
  if (!ensure_space(shb_.size(), error)) return false;
  append(shb_);
  for (const auto& idb : idbs_) {
    if (!ensure_space(idb.size(), error)) return false;
    append(idb);
  }
  for (const auto& dsb : dsbs_) {
    if (!ensure_space(dsb.size(), error)) return false;
    append(dsb);
  }
  return true;
}

bool PcapngWriter::close_file(std::string& error) {
  if (used_ != 0 && !write_out(error)) return false;
  if (is_stdout_ || fd_ < 0) return true;
  int rc = ::close(fd_);
  fd_ = -1;
  // close() is where some file systems (NFS, quotas) finally report a failed write.
  if (rc != 0) return fail("cannot write " + current_path_ + ": " + strerror_of(errno), error);
  return true;
}

bool PcapngWriter::rotate(int64_t start_ns, std::string& error) {
  return close_file(error) && open_file(start_ns, error) && delete_oldest(error);
}

bool PcapngWriter::delete_oldest(std::string& error) {
  while (opts_.ring_files != 0 && files_.size() > opts_.ring_files) {
    const std::string& oldest = files_.front();
    // Someone else may have removed it already; that is what we wanted anyway.
    if (::unlink(oldest.c_str()) != 0 && errno != ENOENT) {
      return fail("cannot delete the oldest ring file " + oldest + ": " + strerror_of(errno), error);
    }
    files_.erase(files_.begin());
  }
  return true;
}

bool PcapngWriter::time_rotation_due(int64_t now_ns) const {
  if (opts_.rotate_seconds == 0) return false;
  return now_ns - period_start_ns_ >= static_cast<int64_t>(opts_.rotate_seconds) * 1'000'000'000;
}

// Rotate before the block would take the file past -C, but never leave a file
// without a packet: a packet bigger than the limit gets a file of its own.
bool PcapngWriter::size_rotation_due(size_t block_len) const {
  if (opts_.rotate_bytes == 0 || file_packets_ == 0) return false;
  return file_flushed_ + used_ + block_len > opts_.rotate_bytes;
}

uint32_t PcapngWriter::add_interface(const PcapngInterface& iface) {
  idbs_.push_back(interface_description(iface));
  snaplens_.push_back(iface.snaplen);
  std::string ignored;  // a failure here is kept in error_ and reported by the next call
  if (error_.empty() && !closed_ && ensure_space(idbs_.back().size(), ignored)) {
    append(idbs_.back());
  }
  return static_cast<uint32_t>(idbs_.size() - 1);
}

bool PcapngWriter::write_tls_secrets(std::string_view keylog, std::string& error) {
  if (failed(error)) return false;
  if (keylog.empty()) return true;
  const size_t len = 12 + 8 + pad4(keylog.size());
  std::vector<uint8_t> block(len);
  uint8_t* p = block.data();
  p = put32(p, kDecryptionSecrets);
  p = put32(p, static_cast<uint32_t>(len));
  p = put32(p, kTlsKeyLog);
  p = put32(p, static_cast<uint32_t>(keylog.size()));
  p = put_padded(p, reinterpret_cast<const uint8_t*>(keylog.data()), keylog.size());
  put32(p, static_cast<uint32_t>(len));
  dsbs_.push_back(std::move(block));
  if (!ensure_space(len, error)) return false;
  append(dsbs_.back());
  return true;
}

bool PcapngWriter::write_packet(uint32_t iface, int64_t ts_ns, std::span<const uint8_t> data, uint32_t orig_len,
                                std::string_view comment, std::string& error) {
  if (failed(error)) return false;
  if (iface >= idbs_.size()) {
    error = "packet for interface " + std::to_string(iface) + ", but only " + std::to_string(idbs_.size()) + " added";
    return false;
  }
  if (ts_ns < 0) {
    error = "packet timestamp before 1970: " + std::to_string(ts_ns);
    return false;
  }
  auto caplen = static_cast<uint32_t>(std::min<size_t>(data.size(), snaplens_[iface]));
  comment = clip_utf8(comment);
  size_t options = comment.empty() ? 0 : 4 + pad4(comment.size()) + 4;
  size_t len = 32 + pad4(caplen) + options;
  if ((time_rotation_due(ts_ns) || size_rotation_due(len)) && !rotate(ts_ns, error)) return false;
  if (!ensure_space(len, error)) return false;

  uint8_t* p = reserve_block(len);
  auto ts = static_cast<uint64_t>(ts_ns);
  p = put32(p, kEnhancedPacket);
  p = put32(p, static_cast<uint32_t>(len));
  p = put32(p, iface);
  p = put32(p, static_cast<uint32_t>(ts >> 32));
  p = put32(p, static_cast<uint32_t>(ts));
  p = put32(p, caplen);
  p = put32(p, std::max(orig_len, caplen));
  p = put_padded(p, data.data(), caplen);
  if (!comment.empty()) {
    p = put16(p, kOptComment);
    p = put16(p, static_cast<uint16_t>(comment.size()));
    p = put_padded(p, comment.data(), comment.size());
    p = put32(p, 0);  // opt_endofopt
  }
  put32(p, static_cast<uint32_t>(len));
  ++file_packets_;
  ++packets_;
  return true;
}

bool PcapngWriter::tick(int64_t now_ns, std::string& error) {
  if (failed(error)) return false;
  return !time_rotation_due(now_ns) || rotate(now_ns, error);
}

bool PcapngWriter::flush(std::string& error) {
  if (failed(error)) return false;
  return used_ == 0 || write_out(error);
}

bool PcapngWriter::close(const std::vector<InterfaceStatistics>& stats, std::string& error) {
  if (closed_) {
    if (error_.empty()) return true;
    error = error_;
    return false;
  }
  closed_ = true;
  bool ok = false;
  if (error_.empty()) {
    ok = write_statistics(stats, error) && close_file(error);
  } else {
    error = error_;
  }
  if (fd_ >= 0 && !is_stdout_) ::close(fd_);  // after a failure: let go of what is left as it is
  fd_ = -1;
  return ok;
}

bool PcapngWriter::write_statistics(const std::vector<InterfaceStatistics>& stats, std::string& error) {
  size_t n = std::min(stats.size(), idbs_.size());
  for (size_t i = 0; i < n; ++i) {
    auto isb = interface_statistics(static_cast<uint32_t>(i), stats[i], opts_.start_ns);
    if (!ensure_space(isb.size(), error)) return false;
    append(isb);
  }
  return true;
}

// Makes room for an n-byte block, writing out what is buffered if needed.
bool PcapngWriter::ensure_space(size_t n, std::string& error) {
  if (used_ + n <= buf_.size()) return true;
  if (used_ != 0 && !write_out(error)) return false;
  if (n > buf_.size()) buf_.resize(n);  // only a block bigger than the whole buffer gets here
  return true;
}

uint8_t* PcapngWriter::reserve_block(size_t n) {
  uint8_t* p = buf_.data() + used_;
  used_ += n;
  bytes_ += n;
  return p;
}

void PcapngWriter::append(std::span<const uint8_t> block) {
  std::memcpy(reserve_block(block.size()), block.data(), block.size());
}

// Hands the buffer (whole blocks only) to the OS. On failure the file is cut
// back to the last block that made it out whole.
bool PcapngWriter::write_out(std::string& error) {
  size_t off = 0;
  while (off < used_) {
    ssize_t n = ::write(fd_, buf_.data() + off, used_ - off);
    if (n > 0) {
      off += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      std::string msg = "cannot write " + current_path_ + ": " + strerror_of(n < 0 ? errno : EIO);
      cut_to_whole_blocks(off);
      if (!is_stdout_ && ::ftruncate(fd_, static_cast<off_t>(file_flushed_)) != 0) {
        msg += " (and cannot cut it back to its last whole block: " + strerror_of(errno) + ")";
      }
      return fail(msg, error);
    }
  }
  file_flushed_ += used_;
  used_ = 0;
  return true;
}

// `written` bytes of the buffer reached the file: keep the whole blocks among
// them, forget the rest (and stop counting its packets and bytes).
void PcapngWriter::cut_to_whole_blocks(size_t written) {
  size_t keep = 0;
  while (keep < used_ && keep + block_length_at(buf_.data() + keep) <= written) {
    keep += block_length_at(buf_.data() + keep);
  }
  for (size_t pos = keep; pos < used_; pos += block_length_at(buf_.data() + pos)) {
    uint32_t type;
    std::memcpy(&type, buf_.data() + pos, 4);
    if (type == kEnhancedPacket) --packets_;
    bytes_ -= block_length_at(buf_.data() + pos);
  }
  file_flushed_ += keep;
  used_ = 0;
}

bool PcapngWriter::fail(std::string message, std::string& error) {
  error_ = std::move(message);
  error = error_;
  return false;
}

// The fatal error, or a use after close; either way nothing more is written.
bool PcapngWriter::failed(std::string& error) const {
  if (!error_.empty()) {
    error = error_;
    return true;
  }
  if (closed_) {
    error = current_path_ + " is already closed";
    return true;
  }
  return false;
}

}  // namespace kwire
