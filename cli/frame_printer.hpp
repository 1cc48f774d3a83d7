// The output of every command that decodes (kwire decode, kwire record
// --decode): summary lines, -V trees or JSON lines for each Kafka message,
// skips and capture errors, and the closing statistics.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "dissector/output/latency.hpp"
#include "dissector/filter/filter.hpp"
#include "dissector/output/text_buffer.hpp"
#include "dissector/protocol/session.hpp"
#include "cli/options.hpp"

namespace kwire::cli {

struct OutputOptions {
  bool verbose = false;      // -V
  bool json = false;         // -T json
  bool fields = false;       // -T fields: the -e paths of each message, one line each
  std::vector<std::string> field_paths;  // -e
  filter::FieldsFormat fields_format;    // -E
  std::shared_ptr<const filter::Filter> filter;  // -Y
  std::set<int> apis;        // --api; empty: all
  bool errors_only = false;  // --errors
  long long limit = -1;      // -c (decode)
  bool stats = false;        // --stats
  bool api_table = false;    // --api-table
  bool latency = false;      // --latency (and kwire latency)
  size_t latency_top = 10;   // slowest exchanges listed
  // Number messages by the packet that completed them (a file's frame
  // numbers), or by their order (kwire record: the packets of the file it
  // writes are not numbered while it captures).
  bool packet_numbers = true;
};

// The output options (-V, -T, -Y, -e, -E, --api, --errors, --stats,
// --api-table, --latency), writing into o; ps resolves names and filters.
std::vector<Option> output_options(const ProgramSet& ps, OutputOptions& o);
// -Y FILTER and --api NAME|KEY,.. alone, with the help a command gives them.
Option display_filter_option(const ProgramSet& ps, std::shared_ptr<const filter::Filter>& out, std::string help);
Option api_option(const ProgramSet& ps, std::set<int>& apis, std::string help);
// Checks what only the whole set of options can tell (-e needs -T fields).
bool check_output_options(const OutputOptions& o, std::string& error);

class FramePrinter : public FrameHandler {
 public:
  // `program` prefixes capture errors ("kwire decode: FILE: ...").
  FramePrinter(const ProgramSet& ps, const OutputOptions& o, std::string program, std::FILE* out = stdout);

  void on_frame(const FrameContext& ctx, const Frame& f) override;
  void on_skip(const FrameContext& ctx, uint64_t length, const std::string& reason) override;
  void on_capture_error(const PacketMeta& meta, const std::string& where, const std::string& reason) override;
  void on_connection_end(const TcpConnection& c) override;

  void flush();
  // The --api-table and --stats lines; `sessions` and `capture_errors` fill
  // the counts of what is not a Kafka message.
  void finish(const SessionStats& sessions);

  void set_where(std::string where) { where_ = std::move(where); }

 private:
  void print(const FrameContext& ctx, const Frame& f);
  bool selected(bool chosen, const Frame& f);
  void note_time(const FrameContext& ctx);
  void line_head(const FrameContext& ctx, bool numbered);

  const ProgramSet& ps_;
  const OutputOptions& o_;
  std::string program_;
  std::string where_;
  std::FILE* file_;
  TextBuffer out_;
  std::optional<filter::FilterSelector> selector_;
  std::optional<filter::FieldExtractor> fields_;
  uint64_t frames_ = 0, requests_ = 0, responses_ = 0, unmatched_ = 0, malformed_ = 0;
  uint64_t capture_errors_ = 0;
  std::map<std::tuple<int, int, int>, uint64_t> per_api_;
  std::unique_ptr<LatencyTracker> latency_;
  long long printed_ = 0;
  bool first_time_set_ = false;
  int64_t first_sec_ = 0;
  int32_t first_usec_ = 0;
};

}  // namespace kwire::cli
