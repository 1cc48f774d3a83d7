// kwire monitor: live Kafka metrics from the wire, served to Prometheus.
#include <climits>
#include <iostream>
#include <memory>
#include <optional>

#include <prometheus/exposer.h>

#include "cli/commands.hpp"
#include "cli/live_capture.hpp"
#include "monitor/monitor.hpp"
#include "tls/keylog.hpp"
#include "tls/tls_layer.hpp"

namespace kwire::cli {

namespace {

struct MonitorArgs {
  ProgramSet ps = ProgramSet::build_release();
  LiveCaptureOptions cap;
  std::string listen;
  bool print = false;
  MonitorLimits limits;
};

Command monitor_table(MonitorArgs& a) {
  LiveCaptureOptions& o = a.cap;
  MonitorLimits& l = a.limits;
  Command c;
  c.name = "monitor";
  c.brief = "monitor -i IFACE --listen ADDR:PORT";
  c.summary = "live Kafka metrics from the wire, served to Prometheus";
  c.usage = {{"kwire monitor -i IFACE --listen ADDR:PORT [options]", "capture live, serve /metrics"},
             {"kwire monitor -r FILE --listen ADDR:PORT", "read a capture, then serve its metrics until stopped"},
             {"kwire monitor -r FILE --print", "read a capture, print its metrics and exit"}};
  c.description = {
      "Decodes the Kafka traffic it captures and counts it as Prometheus metrics: requests and responses per api, "
      "version and broker, response times, long-polls and throttling, every error code of every response, the "
      "clients and their software, and kwire's own health. Nothing is written to disk. docs/monitor.md describes "
      "each metric."};
  c.options = live_capture_options(
      o, {.read = "read a pcap/pcapng file instead of capturing (- reads standard input); all of it, Kafka "
                  "recognised on any port, unless -f gives a filter",
          .auto_mode = "capture all TCP and count the connections recognised as Kafka, whatever their port",
          .tls_keylog = "TLS key log (SSLKEYLOGFILE format) that clients are writing: followed as it grows, to "
                        "decrypt their TLS connections"});
  c.options.push_back(value({"--listen"}, "ADDR:PORT",
                            "serve the metrics over HTTP at http://ADDR:PORT/metrics (an IPv6 address in brackets)",
                            [&a](const std::string& v, std::string& error) {
                              const size_t colon = v.rfind(':');
                              long long port = -1;
                              try {
                                size_t used = 0;
                                if (colon != std::string::npos) port = std::stoll(v.substr(colon + 1), &used);
                                if (used != v.size() - colon - 1) port = -1;
                              } catch (...) {
                                port = -1;
                              }
                              if (colon == 0 || colon == std::string::npos || port < 0 || port > 65535) {
                                error = "--listen takes ADDR:PORT (127.0.0.1:9464, [::1]:9464), not '" + v + "'";
                                return false;
                              }
                              a.listen = v;
                              return true;
                            }));
  c.options.push_back(flag({"--print"}, "with -r: print the metrics (Prometheus text format) when the file is read, "
                                        "and exit",
                           [&a] { a.print = true; }));
  c.options.push_back(count({"--max-client-ids"}, "N", "distinct client_id values before the rest are \"other\" "
                                                       "(default 200)",
                            1, INT_MAX, [&l](long long n) { l.client_ids = static_cast<size_t>(n); }));
  c.options.push_back(count({"--max-topics"}, "N", "distinct topic values before the rest are \"other\" (default 1000)",
                            1, INT_MAX, [&l](long long n) { l.topics = static_cast<size_t>(n); }));
  c.options.push_back(count({"--max-brokers"}, "N", "distinct broker values before the rest are \"other\" (default 200)",
                            1, INT_MAX, [&l](long long n) { l.brokers = static_cast<size_t>(n); }));
  c.options.push_back(count({"--max-series"}, "N",
                            "series per metric; what would make more is dropped and counted in "
                            "kwire_series_dropped_total (default 20000)",
                            1, INT_MAX, [&l](long long n) { l.series = static_cast<size_t>(n); }));
  c.options.push_back(count({"--expire"}, "SECONDS",
                            "remove a series, and free its label values, when not seen for SECONDS of capture time; "
                            "0 never (default 900)",
                            0, INT_MAX, [&l](long long n) { l.expire_seconds = n; }));
  for (auto& opt : spec_options(a.ps)) c.options.push_back(std::move(opt));
  c.options.push_back(help_flag());
  c.notes = {"Capturing needs root, or the capabilities: setcap cap_net_raw,cap_net_admin=eip $(command -v kwire)"};
  c.exit = {{"0", "stopped by SIGINT or SIGTERM, or --print done"},
            {"1", "a capture failure, or a damaged file (what came before the damage is counted)"},
            {"2", "bad usage, unknown interface, no capture privilege, bad filter, address not available"}};
  return c;
}

int check(MonitorArgs& a) {
  if (a.cap.iface.empty() == a.cap.input.empty()) {
    std::cerr << "kwire monitor: give one of -i IFACE or -r FILE\n";
    return 2;
  }
  if (a.print && a.cap.input.empty()) {
    std::cerr << "kwire monitor: --print works with -r FILE (a live capture has no end to print at)\n";
    return 2;
  }
  if (a.listen.empty() && !a.print) {
    std::cerr << "kwire monitor: give --listen ADDR:PORT (or, with -r, --print)\n";
    return 2;
  }
  // A file holds what someone chose to capture: all of it is read, Kafka
  // recognised on any port, as kwire decode reads it.
  if (a.cap.iface.empty() && !a.cap.filter_given) return 0;
  default_filter(a.cap);
  return 0;
}

// The capture, the decoder and the metrics, assembled as kwire record
// assembles them, with the metrics as the sessions' only view.
class MonitorRun {
 public:
  explicit MonitorRun(MonitorArgs& a) : a_(a), monitor_(a.ps, a.limits) {}
  int run();

 private:
  bool open(int& status);
  void follow_keylog();
  void totals();

  MonitorArgs& a_;
  Monitor monitor_;
  std::unique_ptr<PacketSource> src_;
  std::unique_ptr<KafkaSessions> sessions_;
  TlsKeyLog keys_;
  std::optional<KeyLogFollower> keylog_;
  std::unique_ptr<TlsLayer> tls_;
  std::unique_ptr<PacketPipeline> pipeline_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  CaptureStats cstats_;
  uint64_t captured_ = 0, bytes_ = 0;
};

bool MonitorRun::open(int& status) {
  std::string error;
  SourceError kind = SourceError::None;
  src_ = open_capture_source(a_.cap, "kwire monitor", error, kind);
  if (!src_) {
    std::cerr << "kwire monitor: " << error << "\n";
    status = kind == SourceError::Usage ? 2 : 1;
    return false;
  }
  SessionOptions so;
  so.ports = a_.cap.ports;
  // Live, a connection's verdict cannot wait for the end of the capture.
  so.wait_for_broker = !src_->live();
  sessions_ = std::make_unique<KafkaSessions>(a_.ps, so, monitor_);
  tls_ = std::make_unique<TlsLayer>(*sessions_, keys_);
  if (!a_.cap.input.empty() && a_.cap.input != "-") {
    std::vector<std::string> warnings;
    read_pcapng_secrets(a_.cap.input, keys_, warnings, error);
    for (const auto& w : warnings) std::cerr << "kwire monitor: " << w << "\n";
  }
  if (!a_.cap.tls_keylog.empty()) {
    keylog_.emplace(a_.cap.tls_keylog);
    // Clients write a key log line as they derive the secret, about when the
    // capture sees the ServerHello: a connection waits a little for it.
    if (src_->live()) tls_->hold_for_keys(1u << 20);
    follow_keylog();
  }
  pipeline_ = std::make_unique<PacketPipeline>(src_->link_type(), CaptureOptions{}, *tls_, cstats_);
  if (!a_.listen.empty()) {
    try {
      exposer_ = std::make_unique<prometheus::Exposer>(a_.listen);
    } catch (const std::exception& e) {
      // civetweb says only that it could not bind: say what that usually means.
      std::cerr << "kwire monitor: cannot listen on " << a_.listen
                << " (the port is taken, or the address is not one of this host's): " << e.what() << "\n";
      status = 2;
      return false;
    }
    exposer_->RegisterCollectable(monitor_.registry());
  }
  return true;
}

void MonitorRun::follow_keylog() {
  if (!keylog_) return;
  if (keylog_->poll_into(keys_, "kwire monitor").empty()) return;
  PacketMeta meta;
  meta.number = captured_;
  tls_->keys_added(meta);
}

void MonitorRun::totals() {
  const SourceStats s = src_->stats();
  monitor_.capture_totals({captured_, bytes_, s.kernel_dropped, s.if_dropped});
  monitor_.session_totals(sessions_->stats());
}

int MonitorRun::run() {
  int status = 0;
  if (!open(status)) return status;
  install_stop_signals();
  // --print's output is the exposition alone: a script reads it.
  if (exposer_) {
    std::cerr << "kwire monitor: " << (src_->live() ? "capturing on " : "reading ") << src_->name()
              << " (filter: " << (a_.cap.filter.empty() ? "none" : a_.cap.filter) << "), serving http://" << a_.listen
              << "/metrics" << std::endl;
  }
  const std::function<void(const RawPacket&)> on_packet = [this](const RawPacket& raw) {
    ++captured_;
    bytes_ += raw.caplen;
    pipeline_->add(raw.data, raw.caplen, raw.wire_len, packet_meta(raw, captured_));
  };
  std::string error;
  int64_t last_house = mono_ns();
  while (!stop_requested()) {
    const PacketSource::Read r = src_->read(256, 100, on_packet, error);
    if (r == PacketSource::Read::End) break;
    if (r == PacketSource::Read::Error) {
      if (src_->damaged()) monitor_.on_capture_error(PacketMeta{captured_ + 1}, "packet", error);
      std::cerr << "kwire monitor: " << error << "\n";
      status = 1;
      break;
    }
    // A few times a second: what the source and sessions counted, new keys,
    // and the series gone stale.
    if (const int64_t now = mono_ns(); now - last_house >= 100'000'000) {
      last_house = now;
      follow_keylog();
      totals();
      monitor_.expire(monitor_.now());
    }
  }
  if (!src_->live()) pipeline_->finish();  // live, open connections stay open: their requests are not unanswered
  totals();
  if (a_.print) {
    std::cout << monitor_.exposition() << std::flush;
    return status;
  }
  if (!src_->live() && !stop_requested()) {
    std::cerr << "kwire monitor: " << src_->name() << " read (" << captured_ << " packets); serving until SIGINT or "
              << "SIGTERM" << std::endl;
    while (!stop_requested()) {
      struct timespec t{0, 100'000'000};
      nanosleep(&t, nullptr);
    }
  }
  return status;
}

}  // namespace

Command monitor_cli() { return detached(monitor_table); }

int monitor_command(std::vector<std::string> args) {
  MonitorArgs a;
  if (const int rc = parse(monitor_table(a), args); rc >= 0) return rc;
  if (const int rc = check(a); rc != 0) return rc;
  MonitorRun r(a);
  return r.run();
}

}  // namespace kwire::cli
