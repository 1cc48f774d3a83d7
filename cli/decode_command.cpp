#include <cstdio>
#include <iostream>
#include <map>
#include <tuple>
#include <sstream>

#include "cli/commands.hpp"
#include "dissector/output/output.hpp"
#include "dissector/protocol/session.hpp"
#include "recorder/capture.hpp"

namespace kwire::cli {

namespace {

const char* kDecodeHelp =
    "usage: kwire decode -r FILE [options]\n"
    "  -r FILE            pcap or pcapng file to read\n"
    "  -p PORTS           Kafka ports, comma separated (default 9092); Kafka on other\n"
    "                     ports is recognised from its first request\n"
    "  -f FILTER          BPF capture filter applied while reading\n"
    "  -V                 print the full field tree of each frame\n"
    "  -T text|json       output format; json: one object per line\n"
    "  --api NAME|KEY,..  only frames of these APIs\n"
    "  --errors           only frames with a non-zero error code or a decode error\n"
    "  -c N               stop printing after N frames\n"
    "  --stats            end with: stats: frames=N requests=N responses=N unmatched=N malformed=N\n"
    "  --api-table        end with a table of frames per (api, version, direction)\n"
    "  --guess            decode responses whose request was not captured by trying versions\n"
    "  --overlay NAME     use a shipped spec overlay (see 'kwire specs')\n"
    "  --spec-dir DIR     load more specs; they replace messages of the same name\n";

struct Options {
  std::string file;
  SessionOptions session;
  CaptureOptions capture;
  bool verbose = false;
  bool json = false;
  std::set<int> apis;  // empty: all
  bool errors_only = false;
  long long limit = -1;
  bool stats = false;
  bool api_table = false;
};

class Printer : public FrameHandler {
 public:
  Printer(const ProgramSet& ps, const Options& o) : ps_(ps), o_(o) {}

  void on_frame(const FrameContext& ctx, const Frame& f) override {
    if (ctx.not_kafka) {
      ++not_kafka_;
    } else {
      ++frames_;
      if (f.direction == Direction::Request) ++requests_; else ++responses_;
      if (ctx.unmatched) ++unmatched_;
      if (!f.ok()) ++malformed_;
      if (f.program) ++per_api_[{f.api_key, f.api_version, f.direction == Direction::Request ? 0 : 1}];
    }
    if (!first_time_set_) { first_sec_ = ctx.packet.ts_sec; first_usec_ = ctx.packet.ts_usec; first_time_set_ = true; }
    if (o_.limit >= 0 && printed_ >= o_.limit) return;
    if (!o_.apis.empty() && !o_.apis.count(f.api_key)) return;
    if (o_.errors_only && f.ok() && !has_error_code(ps_, f)) return;
    ++printed_;
    if (o_.json) {
      write_json(out_, ps_, f, ctx);
      out_ += '\n';
    } else {
      double rel = static_cast<double>(ctx.packet.ts_sec - first_sec_) + (ctx.packet.ts_usec - first_usec_) / 1e6;
      char head[64];
      snprintf(head, sizeof head, "%6llu %10.6f ", static_cast<unsigned long long>(ctx.number), rel);
      out_ += head;
      out_ += ctx.src.str();
      out_ += " \u2192 ";
      out_ += ctx.dst.str();
      out_ += ' ';
      append_summary(out_, ps_, f, &ctx);
      out_ += '\n';
      if (o_.verbose) {
        write_tree(out_, ps_, f, 4);
        out_ += '\n';
      }
    }
    if (out_.size() > (1 << 16)) flush();
  }

  void on_capture_error(const PacketMeta& meta, const std::string& where, const std::string& reason) override {
    flush();
    ++capture_errors_;
    std::cerr << "kwire decode: " << o_.file << ": " << where << ": " << reason;
    if (meta.number) std::cerr << " (packet " << meta.number << ")";
    std::cerr << "\n";
  }

  void flush() {
    fwrite(out_.data(), 1, out_.size(), stdout);
    out_.clear();
  }

  void finish() {
    if (o_.api_table) {
      char line[160];
      snprintf(line, sizeof line, "%-4s %-40s %-8s %-9s %s\n", "key", "api", "version", "direction", "frames");
      out_ += line;
      for (const auto& [k, n] : per_api_) {
        const MessageProgram* m = ps_.find(std::get<0>(k), std::get<1>(k), std::get<2>(k) ? Direction::Response : Direction::Request);
        snprintf(line, sizeof line, "%-4d %-40s %-8d %-9s %llu\n", std::get<0>(k), m ? std::string(m->api_name).c_str() : "?",
                 std::get<1>(k), std::get<2>(k) ? "response" : "request", static_cast<unsigned long long>(n));
        out_ += line;
      }
    }
    if (o_.stats) {
      char line[200];
      snprintf(line, sizeof line, "stats: frames=%llu requests=%llu responses=%llu unmatched=%llu malformed=%llu\n",
               static_cast<unsigned long long>(frames_), static_cast<unsigned long long>(requests_),
               static_cast<unsigned long long>(responses_), static_cast<unsigned long long>(unmatched_),
               static_cast<unsigned long long>(malformed_));
      out_ += line;
    }
    flush();
    fflush(stdout);
  }

  uint64_t capture_errors() const { return capture_errors_; }

 private:
  const ProgramSet& ps_;
  const Options& o_;
  TextBuffer out_;
  uint64_t frames_ = 0, requests_ = 0, responses_ = 0, unmatched_ = 0, malformed_ = 0, not_kafka_ = 0;
  uint64_t capture_errors_ = 0;
  std::map<std::tuple<int, int, int>, uint64_t> per_api_;
  long long printed_ = 0;
  bool first_time_set_ = false;
  int64_t first_sec_ = 0;
  int32_t first_usec_ = 0;
};

bool parse_ports(const std::string& s, std::set<uint16_t>& ports, std::string& error) {
  ports.clear();
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      int p = std::stoi(item, &used);
      if (used != item.size() || p <= 0 || p > 65535) throw std::out_of_range("port");
      ports.insert(static_cast<uint16_t>(p));
    } catch (...) {
      error = "bad port '" + item + "' in -p " + s;
      return false;
    }
  }
  if (ports.empty()) { error = "-p needs at least one port"; return false; }
  return true;
}

}  // namespace

int decode_command(std::vector<std::string> args) {
  ProgramSet ps = ProgramSet::release();
  std::string error;
  if (!apply_spec_options(args, ps, error)) {
    std::cerr << "kwire decode: " << error << "\n";
    return 2;
  }
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto next = [&](const char* what) -> const std::string* {
      if (i + 1 >= args.size()) { std::cerr << "kwire decode: " << a << " needs " << what << "\n"; return nullptr; }
      return &args[++i];
    };
    if (a == "-h" || a == "--help") { std::cout << kDecodeHelp; return 0; }
    else if (a == "-r") { auto v = next("a file"); if (!v) return 2; o.file = *v; }
    else if (a == "-p") {
      auto v = next("ports"); if (!v) return 2;
      if (!parse_ports(*v, o.session.ports, error)) { std::cerr << "kwire decode: " << error << "\n"; return 2; }
    }
    else if (a == "-f") { auto v = next("a filter"); if (!v) return 2; o.capture.bpf_filter = *v; }
    else if (a == "-V") o.verbose = true;
    else if (a == "-T") {
      auto v = next("text or json"); if (!v) return 2;
      if (*v == "json") o.json = true;
      else if (*v != "text") { std::cerr << "kwire decode: -T takes text or json, not " << *v << "\n"; return 2; }
    }
    else if (a == "--api") {
      auto v = next("an api name or key"); if (!v) return 2;
      std::stringstream list(*v);
      std::string name;
      while (std::getline(list, name, ',')) {
        const MessageProgram* m = ps.find_api(name);
        if (!m) { std::cerr << "kwire decode: no API named " << name << " (see 'kwire specs')\n"; return 2; }
        o.apis.insert(m->api_key);
      }
    }
    else if (a == "--errors") o.errors_only = true;
    else if (a == "-c") {
      auto v = next("a count"); if (!v) return 2;
      try { o.limit = std::stoll(*v); } catch (...) { o.limit = -2; }
      if (o.limit < 0) { std::cerr << "kwire decode: -c needs a non-negative number, not " << *v << "\n"; return 2; }
    }
    else if (a == "--stats") o.stats = true;
    else if (a == "--api-table") o.api_table = true;
    else if (a == "--guess") o.session.guess = true;
    else { std::cerr << "kwire decode: unknown option " << a << "\n" << kDecodeHelp; return 2; }
  }
  if (o.file.empty()) { std::cerr << "kwire decode: -r FILE is required\n" << kDecodeHelp; return 2; }

  Printer printer(ps, o);
  KafkaSessions sessions(ps, o.session, printer);
  CaptureStats cstats;
  if (!read_capture_file(o.file, o.capture, sessions, cstats, error)) {
    std::cerr << "kwire decode: " << error << "\n";
    return 1;
  }
  printer.finish();
  return 0;
}

}  // namespace kwire::cli
