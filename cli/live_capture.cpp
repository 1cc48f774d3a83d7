#include "cli/live_capture.hpp"

#include <signal.h>
#include <time.h>

#include <cstdio>
#include <iostream>

#include "cli/commands.hpp"
#include "recorder/packet.hpp"

namespace kwire::cli {

namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

}  // namespace

void install_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: poll() wakes up
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a closed pipe is a write error, reported
}

bool stop_requested() { return g_stop != 0; }

int64_t wall_ns() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

int64_t mono_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

std::vector<Option> live_capture_options(LiveCaptureOptions& o, const LiveCaptureHelp& help) {
  auto text = [](std::string& into) {
    return [&into](const std::string& v, std::string&) { into = v; return true; };
  };
  return {
      value({"-i"}, "IFACE", "capture live on IFACE (lo, any, eth0; -D lists them)", text(o.iface), ValueKind::Iface),
      value({"-r"}, "FILE", help.read, text(o.input), ValueKind::File),
      value({"-p"}, "PORTS",
            "Kafka ports, comma separated (default 9092); the default capture filter is \"tcp port P1 or tcp port "
            "P2 ...\"",
            [&o](const std::string& v, std::string& error) { return parse_ports(v, o.ports, error); }),
      value({"-f"}, "FILTER", "BPF capture filter (replaces the default)",
            [&o](const std::string& v, std::string&) {
              o.filter = v;
              o.filter_given = true;
              return true;
            }),
      flag({"--auto"}, help.auto_mode, [&o] { o.auto_mode = true; }),
      value({"--tls-keylog"}, "FILE", help.tls_keylog, text(o.tls_keylog), ValueKind::File),
      count({"-s"}, "SNAPLEN", "bytes kept per packet (default 262144)", 64, 262144,
            [&o](long long n) { o.snaplen = static_cast<uint32_t>(n); }),
      count({"-B"}, "MiB",
            "kernel capture buffer size (default 32; with --immediate-mode 64, 256 on -i any, whose packets each "
            "take a snaplen-sized slot)",
            0, 4096, [&o](long long n) { o.buffer_mib = static_cast<int>(n); }),
      count({"--batch-ms"}, "N", "take packets from the kernel in batches at most N ms old (default 10)", 1, 1000,
            [&o](long long n) { o.batch_ms = static_cast<int>(n); }),
      flag({"--immediate-mode"},
           "libpcap's immediate mode instead: each packet as it comes, at a higher cost per packet and a ring that "
           "holds fewer of them",
           [&o] { o.batch_ms = 0; }),
  };
}

void default_filter(LiveCaptureOptions& o) {
  if (o.filter_given) return;
  if (o.auto_mode) {
    o.filter = "tcp";
    return;
  }
  for (uint16_t p : o.ports) o.filter += (o.filter.empty() ? "tcp port " : " or tcp port ") + std::to_string(p);
}

int default_buffer_mib(const LiveCaptureOptions& o) {
  if (o.batch_ms > 0) return 32;
  return o.iface == "any" ? 256 : 64;
}

std::unique_ptr<PacketSource> open_capture_source(const LiveCaptureOptions& o, const std::string& who,
                                                  std::string& error, SourceError& kind) {
  std::unique_ptr<PacketSource> src;
  if (o.iface.empty()) {
    src = PacketSource::open_file(o.input, o.filter, error, kind);
  } else {
    LiveOptions lo{o.iface, o.filter, o.snaplen, o.buffer_mib, o.batch_ms == 0, o.batch_ms};
    if (lo.buffer_mib == 0) lo.buffer_mib = default_buffer_mib(o);
    src = PacketSource::open_live(lo, error, kind);
    if (!src && kind == SourceError::Runtime && o.buffer_mib == 0 && lo.buffer_mib > 32) {
      // The default ring may be more than this host grants; try a smaller one.
      std::cerr << who << ": " << error << "; retrying with -B 32\n";
      lo.buffer_mib = 32;
      src = PacketSource::open_live(lo, error, kind);
    }
  }
  if (src && !is_supported_link_type(src->link_type())) {
    error = src->name() + ": unsupported " + link_type_name(src->link_type());
    kind = SourceError::Usage;
    return nullptr;
  }
  return src;
}

PacketMeta packet_meta(const RawPacket& raw, uint64_t number) {
  PacketMeta meta;
  meta.number = number;
  meta.ts_sec = raw.ts_ns / 1'000'000'000;
  meta.ts_usec = static_cast<int32_t>((raw.ts_ns % 1'000'000'000) / 1000);
  return meta;
}

std::string KeyLogFollower::poll_into(TlsKeyLog& keys, const std::string& who) {
  std::string lines = poll();
  if (lines.empty()) return lines;
  std::vector<std::string> warnings;
  keys.add_text(lines, path_, warnings);
  for (const auto& w : warnings) std::cerr << who << ": " << w << "\n";
  return lines;
}

std::string KeyLogFollower::poll() {
  std::FILE* f = std::fopen(path_.c_str(), "rb");
  if (!f) return {};
  if (std::fseek(f, 0, SEEK_END) != 0) { std::fclose(f); return {}; }
  const long size = std::ftell(f);
  if (size < static_cast<long>(offset_)) offset_ = 0, partial_.clear();  // truncated: read it again
  std::string added;
  if (size > static_cast<long>(offset_) && std::fseek(f, static_cast<long>(offset_), SEEK_SET) == 0) {
    added.resize(static_cast<size_t>(size) - offset_);
    added.resize(std::fread(added.data(), 1, added.size(), f));
    offset_ += added.size();
  }
  std::fclose(f);
  partial_ += added;
  const size_t nl = partial_.rfind('\n');
  if (nl == std::string::npos) return {};
  std::string lines = partial_.substr(0, nl + 1);
  partial_.erase(0, nl + 1);
  return lines;
}

}  // namespace kwire::cli
