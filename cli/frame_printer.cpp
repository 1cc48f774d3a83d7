#include "cli/frame_printer.hpp"

#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>

#include "dissector/output/output.hpp"

namespace kwire::cli {

Option display_filter_option(const ProgramSet& ps, std::shared_ptr<const filter::Filter>& out, std::string help) {
  return value({"-Y"}, "FILTER", std::move(help), [&ps, &out](const std::string& v, std::string& error) {
    filter::CompileError err;
    auto f = filter::Filter::compile(v, ps, err);
    if (!f) {
      error = "-Y: " + err.format();
      return false;
    }
    out = std::make_shared<const filter::Filter>(std::move(*f));
    return true;
  });
}

Option api_option(const ProgramSet& ps, std::set<int>& apis, std::string help) {
  return value({"--api"}, "NAME|KEY,..", std::move(help), [&ps, &apis](const std::string& v, std::string& error) {
    std::stringstream list(v);
    std::string name;
    while (std::getline(list, name, ',')) {
      const MessageProgram* m = ps.find_api(name);
      if (!m) {
        error = "no API named " + name + " (see 'kwire specs')";
        return false;
      }
      apis.insert(m->api_key);
    }
    return true;
  });
}

std::vector<Option> output_options(const ProgramSet& ps, OutputOptions& o) {
  return {
      flag({"-V"}, "print the full field tree of each message", [&o] { o.verbose = true; }),
      value({"-T"}, "text|json|fields", "output format; json: one object per line; fields: the -e values",
            [&o](const std::string& v, std::string&) {
              o.json = v == "json";
              o.fields = v == "fields";
              return true;
            }),
      display_filter_option(ps, o.filter,
                            "only messages matching a display filter (docs/decode.md): apiName == Fetch && "
                            "body.groups.groupId == \"app\", error, request.PATH ..."),
      value({"-e"}, "PATH",
            "with -T fields: a column, as a -T json path (apiName, body.memberEpoch); repeatable; array values "
            "joined by the aggregator",
            [&ps, &o](const std::string& v, std::string& error) {
              filter::CompileError err;
              if (!filter::FieldExtractor::compile({v}, o.fields_format, ps, err)) {
                error = "-e: " + err.format();
                return false;
              }
              o.field_paths.push_back(v);
              return true;
            }),
      value({"-E"}, "OPT=VALUE",
            "with -T fields: separator=,|/t|/s (default tab), aggregator=,|/s|... (default ,), quote=d|s|n "
            "(default n), header=y|n (default n)",
            [&o](const std::string& v, std::string& error) { return filter::parse_fields_option(v, o.fields_format, error); }),
      api_option(ps, o.apis, "only messages of these APIs (names in any case)"),
      flag({"--errors"}, "only messages with a non-zero error code or a decode error, and skips",
           [&o] { o.errors_only = true; }),
      flag({"--stats"},
           "end with: stats: frames=N requests=N responses=N unmatched=N malformed=N resyncs=N skipped_bytes=N "
           "lost_bytes=N unanswered=N not_kafka=N sasl_tokens=N capture_errors=N tls_connections=N "
           "tls_undecrypted=N tls_errors=N (with -T json: a {\"stats\":{...}} line)",
           [&o] { o.stats = true; }),
      flag({"--api-table"}, "end with a table of messages per (api, version, direction)", [&o] { o.api_table = true; }),
      flag({"--latency"},
           "end with request-to-response times per api version and connection, and the slowest exchanges (as kwire "
           "latency prints them)",
           [&o] { o.latency = true; }),
  };
}

bool check_output_options(const OutputOptions& o, std::string& error) {
  if (!o.field_paths.empty() && !o.fields) { error = "-e needs -T fields"; return false; }
  if (o.fields && o.field_paths.empty()) { error = "-T fields needs at least one -e PATH"; return false; }
  return true;
}

FramePrinter::FramePrinter(const ProgramSet& ps, const OutputOptions& o, std::string program, std::FILE* out)
    : ps_(ps), o_(o), program_(std::move(program)), file_(out) {
  if (o_.filter) selector_.emplace(*o_.filter);
  if (o_.latency) latency_ = std::make_unique<LatencyTracker>(ps_, o_.latency_top);
  if (o_.fields) {
    filter::CompileError err;  // each path compiled alone already
    fields_ = filter::FieldExtractor::compile(o_.field_paths, o_.fields_format, ps_, err);
    if (fields_ && o_.fields_format.header) fields_->append_header(out_);
  }
}

void FramePrinter::on_connection_end(const TcpConnection& c) {
  if (selector_) selector_->connection_end(c.id);
  if (latency_) latency_->on_connection_end(c);
}

bool FramePrinter::selected(bool chosen, const Frame& f) {
  if (!chosen) return false;
  if (o_.limit >= 0 && printed_ >= o_.limit) return false;
  if (!o_.apis.empty() && !o_.apis.count(f.api_key)) return false;
  if (o_.errors_only && f.ok() && !has_error_code(ps_, f)) return false;
  return true;
}

// Times are relative to the first thing reported, printed or not.
void FramePrinter::note_time(const FrameContext& ctx) {
  if (first_time_set_) return;
  first_sec_ = ctx.packet.ts_sec;
  first_usec_ = ctx.packet.ts_usec;
  first_time_set_ = true;
}

void FramePrinter::line_head(const FrameContext& ctx, bool numbered) {
  // "%6llu %10.6f ": the packet that completed the message, as Wireshark
  // numbers frames (a packet that completes several messages appears on each
  // of their lines), and the time since the first one.
  const uint64_t n = ctx.packet.number ? ctx.packet.number : ctx.number;
  const int64_t rel = (ctx.packet.ts_sec - first_sec_) * 1000000 + (ctx.packet.ts_usec - first_usec_);
  char head[64];
  char* p = head + sizeof head;
  auto digits = [&p](uint64_t v, int min) {
    int written = 0;
    do { *--p = static_cast<char>('0' + v % 10); v /= 10; ++written; } while (v || written < min);
  };
  if (rel >= 0) {
    *--p = ' ';
    char* end = p;
    digits(static_cast<uint64_t>(rel % 1000000), 6);
    *--p = '.';
    digits(static_cast<uint64_t>(rel / 1000000), 1);
    while (end - p < 10) *--p = ' ';
  } else {  // a packet earlier than the first one reported
    char t[32];
    const int len = snprintf(t, sizeof t, "%10.6f ", static_cast<double>(rel) / 1e6);
    p -= len;
    std::memcpy(p, t, static_cast<size_t>(len));
  }
  *--p = ' ';
  char* num_end = p;
  if (numbered) digits(n, 1);
  else *--p = '-';
  while (num_end - p < 6) *--p = ' ';
  out_.append(p, static_cast<size_t>(head + sizeof head - p));
  append_endpoint(out_, ctx.src);
  out_ += " \u2192 ";
  append_endpoint(out_, ctx.dst);
  out_ += ' ';
}

void FramePrinter::on_frame(const FrameContext& ctx, const Frame& f) {
  // Numbered by order (kwire record): -Y's frame is the number printed.
  FrameContext by_order;
  const bool renumber = !o_.packet_numbers && ctx.packet.number;
  if (renumber) {
    by_order = ctx;
    by_order.packet.number = 0;
  }
  const FrameContext& shown = renumber ? by_order : ctx;
  // The selector sees every message: request.* conditions need the requests.
  const bool chosen = !selector_ || selector_->select(shown, f);
  if (!ctx.not_kafka) {
    ++frames_;
    if (f.direction == Direction::Request) ++requests_; else ++responses_;
    if (ctx.unmatched) ++unmatched_;
    if (!f.ok()) ++malformed_;
    // Only --api-table reads the counts: a map walk per message otherwise.
    if (o_.api_table && f.program) ++per_api_[{f.api_key, f.api_version, f.direction == Direction::Request ? 0 : 1}];
    // Every message: the brokers' node ids come from Metadata answers whatever --api keeps.
    if (latency_) latency_->on_frame(ctx, f, chosen && (o_.apis.empty() || o_.apis.count(f.api_key)));
  }
  note_time(ctx);
  if (!selected(chosen, f)) return;
  ++printed_;
  print(shown, f);
}

void FramePrinter::print(const FrameContext& ctx, const Frame& f) {
  if (o_.json) {
    write_json(out_, ps_, f, ctx);
    out_ += '\n';
  } else if (fields_) {
    fields_->append_line(out_, f, ctx);
  } else {
    line_head(ctx, true);
    append_summary(out_, ps_, f, &ctx);
    out_ += '\n';
    if (o_.verbose) {
      write_tree(out_, ps_, f, 4);
      out_ += '\n';
    }
  }
  if (out_.size() > (1 << 16)) flush();
}

void FramePrinter::on_skip(const FrameContext& ctx, uint64_t length, const std::string& reason) {
  note_time(ctx);
  if (o_.limit >= 0 && printed_ >= o_.limit) return;
  if (!o_.apis.empty() && !o_.errors_only) return;  // not a message of the selected APIs
  if (o_.filter || o_.fields) return;  // -Y selects messages; -T fields has no columns for a skip
  ++printed_;
  if (o_.json) {
    write_skip_json(out_, ctx, length, reason);
  } else {
    line_head(ctx, false);
    append_skip(out_, ctx, length, reason);
  }
  out_ += '\n';
}

void FramePrinter::on_capture_error(const PacketMeta& meta, const std::string& where, const std::string& reason) {
  flush();
  fflush(file_);
  ++capture_errors_;
  std::cerr << program_ << ": ";
  if (!where_.empty()) std::cerr << where_ << ": ";
  std::cerr << where << ": " << reason;
  if (meta.number) std::cerr << " (packet " << meta.number << ")";
  std::cerr << "\n";
}

void FramePrinter::flush() {
  if (out_.size()) fwrite(out_.data(), 1, out_.size(), file_);  // data() is null before the first append
  out_.clear();
}

void FramePrinter::finish(const SessionStats& s) {
  if (o_.api_table) {
    char line[160];
    snprintf(line, sizeof line, "%-4s %-40s %-8s %-9s %s\n", "key", "api", "version", "direction", "frames");
    out_ += line;
    for (const auto& [k, n] : per_api_) {
      const MessageProgram* m =
          ps_.find(std::get<0>(k), std::get<1>(k), std::get<2>(k) ? Direction::Response : Direction::Request);
      snprintf(line, sizeof line, "%-4d %-40s %-8d %-9s %llu\n", std::get<0>(k),
               m ? std::string(m->api_name).c_str() : "?", std::get<1>(k), std::get<2>(k) ? "response" : "request",
               static_cast<unsigned long long>(n));
      out_ += line;
    }
  }
  if (latency_) latency_->write(out_, o_.json);
  if (o_.stats) {
    const std::pair<const char*, uint64_t> fields[] = {
        {"frames", frames_},           {"requests", requests_},         {"responses", responses_},
        {"unmatched", unmatched_},     {"malformed", malformed_},       {"resyncs", s.resyncs},
        {"skipped_bytes", s.skipped_bytes}, {"lost_bytes", s.lost_bytes}, {"unanswered", s.unanswered},
        {"not_kafka", s.not_kafka},    {"sasl_tokens", s.sasl_tokens},  {"capture_errors", capture_errors_},
        {"tls_connections", s.tls_connections}, {"tls_undecrypted", s.tls_undecrypted}, {"tls_errors", s.tls_errors},
    };
    out_ += o_.json ? "{\"stats\":{" : "stats:";
    bool first = true;
    for (const auto& [name, value] : fields) {
      if (o_.json) {
        if (!first) out_ += ',';
        out_ += '"';
        out_ += name;
        out_ += "\":";
      } else {
        out_ += ' ';
        out_ += name;
        out_ += '=';
      }
      append_int(out_, static_cast<int64_t>(value));
      first = false;
    }
    out_ += o_.json ? "}}\n" : "\n";
  }
  flush();
  fflush(file_);
}

}  // namespace kwire::cli
