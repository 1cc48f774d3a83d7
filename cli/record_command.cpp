// kwire record: live capture (or re-filtering a capture file) into pcapng,
// understanding Kafka while it records.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include "cli/commands.hpp"
#include "cli/frame_printer.hpp"
#include "cli/live_capture.hpp"
#include "dissector/output/output.hpp"
#include "dissector/protocol/session.hpp"
#include "recorder/capture.hpp"
#include "recorder/flow_gate.hpp"
#include "recorder/packet.hpp"
#include "recorder/packet_source.hpp"
#include "recorder/pcapng_writer.hpp"
#include "recorder/redactor.hpp"
#include "recorder/tcp_reassembler.hpp"
#include "tls/keylog.hpp"
#include "tls/tls_layer.hpp"

namespace kwire::cli {

namespace {

struct RecordOptions : LiveCaptureOptions {
  std::string output;
  long long packets = -1;
  double duration_s = 0;
  uint64_t filesize_kb = 0;
  uint64_t rotate_mb = 0, rotate_s = 0;
  uint32_t ring = 0;
  bool annotate = false, decode = false, quiet = false, list = false, redact = false;
  OutputOptions out{.packet_numbers = false};
};

bool number(const std::string& s, long long& v) {
  try {
    size_t used = 0;
    v = std::stoll(s, &used);
    return used == s.size() && v >= 0;
  } catch (...) {
    return false;
  }
}

struct RecordArgs {
  ProgramSet ps = ProgramSet::build_release();
  RecordOptions o;
  std::string output_option;  // the first output option given (they need --decode)
};

Command record_table(RecordArgs& a) {
  RecordOptions& o = a.o;
  Command c;
  c.name = "record";
  c.brief = "record -i IFACE";
  c.summary = "capture Kafka traffic live into pcapng (or re-filter a file with -r)";
  c.usage = {{"kwire record (-i IFACE | -r FILE|-) -w FILE|- [options]", ""}};
  auto text = [](std::string& into) {
    return [&into](const std::string& v, std::string&) { into = v; return true; };
  };
  c.options = live_capture_options(
      o, {.read = "re-filter a pcap/pcapng file (- reads standard input)",
          .auto_mode =
              "capture all TCP and keep only the connections recognised as Kafka, whatever their port; a new "
              "connection's packets wait for its verdict. A TLS connection is kept when its server port is in -p, "
              "when the key log decrypts it to Kafka, or when its server is known to serve Kafka; the final report "
              "names every other one (tls_not_kept)",
          .tls_keylog =
              "TLS key log (SSLKEYLOGFILE format) that clients are writing: followed as it grows, used to recognise "
              "Kafka inside TLS, and written into the pcapng as Decryption Secrets Blocks (not with --redact-sasl), "
              "so the file opens decrypted in Wireshark and kwire; with --auto before the packets they decrypt"});
  // -w after -r, as the help has always listed it.
  c.options.insert(c.options.begin() + 2, value({"-w"}, "FILE|-", "write pcapng here (- writes standard output)",
                                                text(o.output), ValueKind::File));
  c.options.insert(c.options.end(), {
      count({"-c"}, "N", "stop after N packets", 0, LLONG_MAX, [&o](long long n) { o.packets = n; }),
      value({"-a"}, "duration:S|filesize:KB|packets:N", "stop condition, as dumpcap has it",
            [&o](const std::string& v, std::string& error) {
              const auto colon = v.find(':');
              const std::string kind = v.substr(0, colon), amount = colon == std::string::npos ? "" : v.substr(colon + 1);
              long long n = 0;
              if (!number(amount, n) || n == 0 || (kind != "duration" && kind != "filesize" && kind != "packets")) {
                error = "-a takes duration:SECONDS, filesize:KB or packets:N, not '" + v + "'";
                return false;
              }
              if (kind == "duration") o.duration_s = static_cast<double>(n);
              else if (kind == "filesize") o.filesize_kb = static_cast<uint64_t>(n);
              else o.packets = n;
              return true;
            }),
      count({"-C"}, "MB", "start a new file when the current one reaches MB (10^6 bytes)", 1, LLONG_MAX,
            [&o](long long n) { o.rotate_mb = static_cast<uint64_t>(n); }),
      count({"-G"}, "SECONDS", "start a new file every SECONDS", 1, LLONG_MAX,
            [&o](long long n) { o.rotate_s = static_cast<uint64_t>(n); }),
      count({"-W"}, "N", "keep a ring of N files (with -C or -G)", 1, UINT32_MAX,
            [&o](long long n) { o.ring = static_cast<uint32_t>(n); }),
      flag({"--annotate"}, "kwire's summary of each Kafka message as the comment of the packet that completes it",
           [&o] { o.annotate = true; }),
      flag({"--redact-sasl"},
           "write SaslAuthenticate auth bytes and raw SASL tokens as zero bytes of the same length (the file still "
           "decodes)",
           [&o] { o.redact = true; }),
      flag({"--decode"},
           "print the Kafka messages while recording, as kwire decode does; the output options below apply to it "
           "(-Y selects what is printed, the file keeps every packet)",
           [&o] { o.decode = true; }),
  });
  for (auto& opt : output_options(a.ps, o.out)) {
    // Each needs --decode, wherever it stands.
    opt.set = [&a, first = opt.names.front(), set = std::move(opt.set)](const std::string& v, std::string& error) {
      if (a.output_option.empty()) a.output_option = first;
      return set(v, error);
    };
    opt.help = "with --decode: " + opt.help;
    c.options.push_back(std::move(opt));
  }
  c.options.push_back(flag({"-q"}, "no status line on a terminal", [&o] { o.quiet = true; }));
  c.options.push_back(flag({"-D"}, "list the interfaces and exit", [&o] { o.list = true; }));
  for (auto& opt : spec_options(a.ps, "for --decode and --annotate")) c.options.push_back(std::move(opt));
  c.options.push_back(help_flag());
  c.notes = {"On exit (Ctrl-C, SIGTERM, SIGHUP, -c, -a, end of -r) stderr gets the final statistics:",
             "  kwire record: received=N captured=N kernel_dropped=N if_dropped=N written=N kafka_messages=N\n"
             "                connections=N kafka_connections=N evicted=N files=N",
             "(received: what the kernel counted for the filter, on lo each packet twice; captured: what kwire read; "
             "written: what went into the file)"};
  c.exit = {{"0", "done"},
            {"1", "a write or capture failure (the file keeps every whole packet written before it)"},
            {"2", "bad usage, unknown interface, no capture privilege, bad filter"}};
  return c;
}

// What only the whole set of options can tell; 0 when they hold, else 2
// after printing why.
int check(RecordArgs& a) {
  RecordOptions& o = a.o;
  std::string error;
  if (o.list) return 0;
  if (!a.output_option.empty() && !o.decode) {
    std::cerr << "kwire record: " << a.output_option << " is an option of --decode's output: give --decode too\n";
    return 2;
  }
  if (o.iface.empty() == o.input.empty()) { std::cerr << "kwire record: give one of -i IFACE or -r FILE\n"; return 2; }
  if (o.output.empty()) { std::cerr << "kwire record: -w FILE is required (- for standard output)\n"; return 2; }
  if (!check_output_options(o.out, error)) { std::cerr << "kwire record: " << error << "\n"; return 2; }
  if (o.output == "-" && o.decode) {
    std::cerr << "kwire record: --decode prints to standard output, which -w - already uses\n";
    return 2;
  }
  default_filter(o);
  return 0;
}

// Feeds the sessions' view of each packet to the outputs: --decode's printer,
// --annotate's comment for the packet being processed, --auto's gate.
class Recording : public FrameHandler {
 public:
  Recording(const ProgramSet& ps, const RecordOptions& o, FlowGate* gate, Redactor* redactor)
      : ps_(ps), o_(o), gate_(gate), redactor_(redactor) {
    if (o.decode) printer_.emplace(ps, o.out, "kwire record");
  }

  void on_frame(const FrameContext& ctx, const Frame& f) override {
    if (!ctx.not_kafka) ++messages_;
    if (ctx.not_kafka && ctx.conn && ctx.conn->id == dropped_ && ctx.note.starts_with("stream is TLS")) {
      // --auto drops it: say so, with the reason and the way to keep it.
      ++tls_not_kept_;
      if (tls_not_kept_notes_.size() < 20)
        tls_not_kept_notes_.push_back(ctx.conn->client.str() + " -> " + ctx.conn->server.str() + ": " +
                                      ctx.note.substr(10) + "; -p " + std::to_string(ctx.conn->server.port) +
                                      " keeps it");
    }
    if (redactor_) redact(ctx, f);
    if (printer_) printer_->on_frame(ctx, f);
    if (o_.annotate && ctx.packet.number == current_) {
      if (!comment_.empty()) comment_ += '\n';
      append_summary(comment_, ps_, f, &ctx);
    }
  }
  void on_skip(const FrameContext& ctx, uint64_t length, const std::string& reason) override {
    if (redactor_) redactor_->complete(ctx.src, ctx.dst, ctx.stream_offset + length);
    if (printer_) printer_->on_skip(ctx, length, reason);
  }
  void on_capture_error(const PacketMeta& meta, const std::string& where, const std::string& reason) override {
    if (printer_) {
      printer_->on_capture_error(meta, where, reason);
    } else {
      std::cerr << "\rkwire record: " << where << ": " << reason << "\n";
    }
  }
  void on_verdict(const TcpConnection& c, bool kafka, const Endpoint&) override {
    if (redactor_ && kafka) redactor_->kafka(c.client, c.server);
    if (gate_ && !kafka) dropped_ = c.id;
    verdicts_[c.id] = kafka;
    if (gate_ && !tls_held_.count(c.id)) gate_->verdict(c.client, c.server, kafka, now_);
  }
  // A TLS connection whose keys the followed key log does not hold yet: its
  // packets wait in the gate until they do, so that the secrets block goes
  // into the file first (Wireshark needs the keys when it reads the hellos).
  void on_tls(const TcpConnection& c, const TlsEvent& e) override {
    if (!gate_) return;
    if (e.kind == TlsEvent::Kind::Pending) {
      tls_held_.insert(c.id);
      gate_->hold(c.client, c.server, now_);
    } else if (e.kind != TlsEvent::Kind::Decrypted && tls_held_.erase(c.id)) {
      auto v = verdicts_.find(c.id);
      if (v != verdicts_.end()) gate_->verdict(c.client, c.server, v->second, now_);
    }
  }
  void on_connection_start(const TcpConnection& c) override {
    if (gate_) gate_->started(c.client, c.server, now_);
  }
  void on_connection_end(const TcpConnection& c) override {
    if (tls_held_.erase(c.id)) {  // never keyed: the verdict it had, if any, stands
      auto v = verdicts_.find(c.id);
      if (gate_ && v != verdicts_.end()) gate_->verdict(c.client, c.server, v->second, now_);
    }
    verdicts_.erase(c.id);
    if (printer_) printer_->on_connection_end(c);
    if (redactor_) redactor_->ended(c.client, c.server);
    if (gate_) gate_->ended(c.client, c.server, now_);
  }

  // The packet about to go through the sessions.
  void begin_packet(uint64_t number, int64_t now_ns) {
    current_ = number;
    now_ = now_ns;
    comment_.clear();
  }
  std::string_view comment_for(uint64_t number) const {
    return number == current_ ? std::string_view(comment_.data(), comment_.size()) : std::string_view();
  }
  void finish(const SessionStats& s) {
    if (printer_) printer_->finish(s);
  }
  uint64_t messages() const { return messages_; }
  uint64_t tls_not_kept() const { return tls_not_kept_; }
  const std::vector<std::string>& tls_not_kept_notes() const { return tls_not_kept_notes_; }

 private:
  // What the message's bytes tell the redactor: where messages end, which
  // bytes are SASL secrets, and that a TLS stream is not Kafka after all.
  void redact(const FrameContext& ctx, const Frame& f) {
    const uint64_t off = ctx.stream_offset, end = off + f.message.size();
    if (ctx.tls) {
      // Decrypted TLS: the offsets are the plaintext's, the packets hold
      // ciphertext, and the secrets in it stay encrypted (no key log is
      // embedded with --redact-sasl).
      redactor_->plain(ctx.src, ctx.dst);
      return;
    }
    if (ctx.not_kafka && ctx.note.starts_with("SASL token")) {
      redactor_->secret(ctx.src, ctx.dst, std::min(off + 4, end), end);
    } else if (ctx.not_kafka) {
      redactor_->plain(ctx.src, ctx.dst);
      return;
    } else if (f.api_key == kSaslAuthenticate && f.body) {
      const Node* auth = find_field(f, ps_, f.body, "AuthBytes");
      if (auth && !auth->is_null() && !(auth->flags & kInner)) {
        const uint64_t data_end = off + auth->offset + auth->length;
        redactor_->secret(ctx.src, ctx.dst, data_end - auth->aux, data_end);
      }
    }
    redactor_->complete(ctx.src, ctx.dst, end);
  }
  static constexpr int16_t kSaslAuthenticate = 36;

  const ProgramSet& ps_;
  const RecordOptions& o_;
  FlowGate* gate_;
  Redactor* redactor_;
  std::optional<FramePrinter> printer_;
  TextBuffer comment_;
  uint64_t current_ = 0;
  int64_t now_ = 0;
  uint64_t messages_ = 0;
  uint32_t dropped_ = 0;  // the connection --auto just gave a not-Kafka verdict
  std::unordered_map<uint32_t, bool> verdicts_;  // by connection id, while it is open
  std::set<uint32_t> tls_held_;                  // TLS connections waiting for their keys
  uint64_t tls_not_kept_ = 0;
  std::vector<std::string> tls_not_kept_notes_;
};

class Recorder {
 public:
  Recorder(const ProgramSet& ps, const RecordOptions& o) : ps_(ps), o_(o) {}
  int run();

 private:
  bool open(int& status);
  void packet(const RawPacket& raw);
  void write(int64_t ts_ns, std::span<const uint8_t> data, uint32_t wire_len, uint64_t number);
  void keep(const Endpoint& src, const Endpoint& dst, bool tcp, int64_t ts_ns, std::span<const uint8_t> data,
            uint32_t wire_len, uint64_t number);
  void housekeeping(bool force);
  void follow_keylog();
  void status_line(bool last);
  int finish(int status);

  const ProgramSet& ps_;
  const RecordOptions& o_;
  std::unique_ptr<PacketSource> src_;
  std::unique_ptr<PcapngWriter> writer_;
  std::unique_ptr<FlowGate> gate_;
  std::unique_ptr<Redactor> redactor_;
  std::unique_ptr<Recording> rec_;
  std::unique_ptr<KafkaSessions> sessions_;
  TlsKeyLog keys_;
  std::optional<KeyLogFollower> keylog_;
  std::unique_ptr<TlsLayer> tls_;
  std::unique_ptr<PacketPipeline> pipeline_;
  CaptureStats cstats_;
  uint32_t iface_ = 0;
  uint64_t captured_ = 0;
  uint64_t bytes_ = 0;
  std::string write_error_;
  bool stop_ = false;
  bool status_ = false;
  int64_t started_mono_ = 0;
  int64_t last_house_ = 0;
  int64_t last_status_ = 0;
  int64_t last_ts_ = 0;
};

bool Recorder::open(int& status) {
  std::string error;
  SourceError kind = SourceError::None;
  src_ = open_capture_source(o_, "kwire record", error, kind);
  if (!src_) {
    std::cerr << "kwire record: " << error << "\n";
    status = kind == SourceError::Usage ? 2 : 1;
    return false;
  }
  PcapngWriterOptions wo;
  wo.path = o_.output;
  wo.rotate_bytes = o_.rotate_mb * 1'000'000;
  wo.rotate_seconds = o_.rotate_s;
  wo.ring_files = o_.ring;
  wo.application = std::string("kwire ") + KWIRE_VERSION;
  writer_ = PcapngWriter::open(wo, error);
  if (!writer_) {
    std::cerr << "kwire record: " << error << "\n";
    status = wo.path == "-" || (o_.ring && !o_.rotate_mb && !o_.rotate_s) ? 2 : 1;
    return false;
  }
  iface_ = writer_->add_interface({src_->pcapng_link_type(), src_->snaplen(), src_->name(), "", o_.filter});
  if (o_.auto_mode) {
    gate_ = std::make_unique<FlowGate>(FlowGateLimits{}, [this](int64_t ts, std::span<const uint8_t> d, uint32_t len, uint64_t n) {
      write(ts, d, len, n);
    });
  }
  if (o_.redact) {
    redactor_ = std::make_unique<Redactor>([this](const Endpoint& src, const Endpoint& dst, int64_t ts,
                                                  std::span<const uint8_t> d, uint32_t len, uint64_t n) {
      keep(src, dst, true, ts, d, len, n);
    });
  }
  rec_ = std::make_unique<Recording>(ps_, o_, gate_.get(), redactor_.get());
  SessionOptions so;
  so.ports = o_.ports;
  so.wait_for_broker = false;
  sessions_ = std::make_unique<KafkaSessions>(ps_, so, *rec_);
  tls_ = std::make_unique<TlsLayer>(*sessions_, keys_);
  if (!o_.input.empty() && o_.input != "-") {
    // The input's own secrets blocks decrypt, and go into the output too.
    std::vector<std::string> warnings, texts;
    read_pcapng_secrets(o_.input, keys_, warnings, error, &texts);
    for (const auto& w : warnings) std::cerr << "kwire record: " << w << "\n";
    for (const auto& t : texts) {
      if (!o_.redact && !writer_->write_tls_secrets(t, error)) {
        std::cerr << "kwire record: " << error << "\n";
        status = 1;
        return false;
      }
    }
  }
  if (!o_.tls_keylog.empty()) {
    keylog_.emplace(o_.tls_keylog);
    // Clients write a key log line as they derive the secret, about when the
    // recorder sees the ServerHello: a connection waits a little for it.
    if (src_->live()) tls_->hold_for_keys(1u << 20);
    follow_keylog();
  }
  pipeline_ = std::make_unique<PacketPipeline>(src_->link_type(), CaptureOptions{}, *tls_, cstats_);
  status_ = !o_.quiet && isatty(2) && src_->live();
  return true;
}

// New lines of the key log: keys for the TLS layer (and the connections that
// wait for them), and a secrets block in the file before their packets.
void Recorder::follow_keylog() {
  if (!keylog_) return;
  const std::string lines = keylog_->poll_into(keys_, "\rkwire record");
  if (lines.empty()) return;
  if (!o_.redact && write_error_.empty() && !writer_->write_tls_secrets(lines, write_error_)) stop_ = true;
  PacketMeta meta;
  meta.number = captured_;
  tls_->keys_added(meta);
}

void Recorder::write(int64_t ts_ns, std::span<const uint8_t> data, uint32_t wire_len, uint64_t number) {
  if (!write_error_.empty()) return;
  if (!writer_->write_packet(iface_, ts_ns, data, wire_len, rec_->comment_for(number), write_error_)) stop_ = true;
}

// After the redactor: into the file, or to the --auto gate first.
void Recorder::keep(const Endpoint& src, const Endpoint& dst, bool tcp, int64_t ts_ns, std::span<const uint8_t> data,
                    uint32_t wire_len, uint64_t number) {
  if (!gate_) {
    write(ts_ns, data, wire_len, number);
  } else if (tcp) {
    gate_->packet(src, dst, ts_ns, data, wire_len, number);
  }  // --auto keeps TCP connections only: other packets are not written
}

void Recorder::packet(const RawPacket& raw) {
  ++captured_;
  bytes_ += raw.caplen;
  last_ts_ = raw.ts_ns;
  const PacketMeta meta = packet_meta(raw, captured_);
  rec_->begin_packet(captured_, src_->live() ? wall_ns() : raw.ts_ns);
  const DecodedPacket& d = pipeline_->add(raw.data, raw.caplen, raw.wire_len, meta);
  const std::span<const uint8_t> bytes(raw.data, raw.caplen);
  const bool tcp = d.kind == PacketKind::Tcp;
  if (redactor_ && tcp) {
    const int64_t start = d.tcp.payload_length ? pipeline_->reassembler().stream_offset(d.tcp) : -1;
    redactor_->packet(d.tcp.src, d.tcp.dst, start, static_cast<size_t>(d.tcp.payload.data() - raw.data),
                      d.tcp.payload_length, raw.ts_ns, bytes, raw.wire_len, captured_);
  } else {
    keep(tcp ? d.tcp.src : Endpoint{}, tcp ? d.tcp.dst : Endpoint{}, tcp, raw.ts_ns, bytes, raw.wire_len, captured_);
  }
  if (o_.packets >= 0 && static_cast<long long>(captured_) >= o_.packets) stop_ = true;
  if (o_.filesize_kb && writer_->bytes_written() >= o_.filesize_kb * 1000) stop_ = true;
}

// A few times a second: flush, rotate by time, evict idle flows, check the
// deadline, refresh the status line.
void Recorder::housekeeping(bool force) {
  const int64_t now = mono_ns();
  if (!force && now - last_house_ < 100'000'000) return;
  last_house_ = now;
  const int64_t clock = src_->live() ? wall_ns() : last_ts_;
  if (write_error_.empty() && !(writer_->tick(clock, write_error_) && writer_->flush(write_error_))) stop_ = true;
  if (gate_) gate_->tick(clock);
  if (o_.duration_s > 0 && static_cast<double>(now - started_mono_) / 1e9 >= o_.duration_s) stop_ = true;
  if (status_ && now - last_status_ >= 1'000'000'000) {
    last_status_ = now;
    status_line(false);
  }
}

void Recorder::status_line(bool last) {
  const SourceStats s = src_->stats();
  char size[32];
  if (bytes_ < 10'000'000) snprintf(size, sizeof size, "%.1f kB", static_cast<double>(bytes_) / 1e3);
  else snprintf(size, sizeof size, "%.1f MB", static_cast<double>(bytes_) / 1e6);
  char line[512];
  snprintf(line, sizeof line,
           "\rkwire record: %llu packets, %s, %llu Kafka messages, %llu connections (%llu Kafka), "
           "%llu dropped by kernel, file %s\033[K",
           static_cast<unsigned long long>(captured_), size, static_cast<unsigned long long>(rec_->messages()),
           static_cast<unsigned long long>(cstats_.connections),
           static_cast<unsigned long long>(sessions_->stats().kafka_connections),
           static_cast<unsigned long long>(s.kernel_dropped), writer_->current_path().c_str());
  std::cerr << line << (last ? "\n" : "") << std::flush;
}

int Recorder::run() {
  int status = 0;
  if (!open(status)) return status;
  install_stop_signals();
  std::cerr << "kwire record: capturing on " << src_->name() << " (filter: " << (o_.filter.empty() ? "none" : o_.filter)
            << (o_.auto_mode ? "; keeping connections recognised as Kafka" : "") << "), writing "
            << (o_.output == "-" ? "standard output" : writer_->current_path()) << std::endl;
  started_mono_ = last_house_ = mono_ns();
  const std::function<void(const RawPacket&)> on_packet = [this](const RawPacket& r) { packet(r); };
  std::string error;
  while (!stop_ && !stop_requested()) {
    const PacketSource::Read r = src_->read(256, 100, on_packet, error);
    if (r == PacketSource::Read::End) break;
    if (r == PacketSource::Read::Error) {
      if (src_->damaged()) {
        rec_->on_capture_error(PacketMeta{captured_ + 1}, "packet " + std::to_string(captured_ + 1), error);
      } else {
        std::cerr << "\rkwire record: " << error << "\n";
      }
      status = 1;
      break;
    }
    follow_keylog();
    housekeeping(false);
  }
  // Stopping: what libpcap still holds goes into the file too.
  if (src_->live() && write_error_.empty()) {
    for (int i = 0; i < 1000 && src_->read(4096, 0, on_packet, error) == PacketSource::Read::Packets; ++i) {
    }
  }
  return finish(status);
}

int Recorder::finish(int status) {
  follow_keylog();
  pipeline_->finish();
  if (redactor_) redactor_->finish();
  if (gate_) gate_->finish();
  housekeeping(true);
  const SourceStats s = src_->stats();
  InterfaceStatistics is;
  is.received = s.received;
  is.kernel_dropped = s.kernel_dropped;
  is.if_dropped = s.if_dropped;
  is.delivered_to_file = writer_->packets_written();
  std::string close_error;
  if (!writer_->close({is}, close_error) && write_error_.empty()) write_error_ = close_error;
  if (status_) status_line(true);
  rec_->finish(sessions_->stats());
  if (!write_error_.empty()) {
    std::cerr << "kwire record: " << write_error_ << "\n";
    status = 1;
  }
  const uint64_t evicted = gate_ ? gate_->stats().evicted_flows : 0;
  char line[512];
  snprintf(line, sizeof line,
           "kwire record: received=%llu captured=%llu kernel_dropped=%llu if_dropped=%llu written=%llu kafka_messages=%llu "
           "connections=%llu kafka_connections=%llu evicted=%llu files=%zu tls_connections=%llu tls_not_kept=%llu\n",
           static_cast<unsigned long long>(src_->live() ? s.received : captured_),
           static_cast<unsigned long long>(captured_),
           static_cast<unsigned long long>(s.kernel_dropped), static_cast<unsigned long long>(s.if_dropped),
           static_cast<unsigned long long>(writer_->packets_written()), static_cast<unsigned long long>(rec_->messages()),
           static_cast<unsigned long long>(cstats_.connections),
           static_cast<unsigned long long>(sessions_->stats().kafka_connections),
           static_cast<unsigned long long>(evicted), writer_->files().size(),
           static_cast<unsigned long long>(sessions_->stats().tls_connections),
           static_cast<unsigned long long>(rec_->tls_not_kept()));
  std::cerr << line;
  for (const auto& n : rec_->tls_not_kept_notes()) std::cerr << "kwire record: TLS connection not kept: " << n << "\n";
  if (rec_->tls_not_kept() > rec_->tls_not_kept_notes().size())
    std::cerr << "kwire record: ... and " << rec_->tls_not_kept() - rec_->tls_not_kept_notes().size()
              << " more TLS connections not kept\n";
  if (gate_ && gate_->stats().evicted_flows) {
    std::cerr << "kwire record: " << gate_->stats().evicted_packets << " packets of " << evicted
              << " connections were not written: no verdict on Kafka before they went idle or hit the hold limit\n";
  }
  return status;
}

}  // namespace

Command record_cli() { return detached(record_table); }

int record_command(std::vector<std::string> args) {
  RecordArgs a;
  if (const int rc = parse(record_table(a), args); rc >= 0) return rc;
  if (const int rc = check(a); rc != 0) return rc;
  const RecordOptions& o = a.o;
  std::string error;
  if (o.list) {
    auto names = list_interfaces(error);
    if (!error.empty()) { std::cerr << "kwire record: cannot list interfaces: " << error << "\n"; return 1; }
    for (const auto& n : names) std::cout << n << "\n";
    return 0;
  }
  Recorder r(a.ps, o);
  return r.run();
}

}  // namespace kwire::cli
