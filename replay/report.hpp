// What a replay found, for people (a summary per api with the first
// regressions as field diffs), for programs (JSON) and for CI systems (JUnit
// XML, one test case per session).
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <string_view>

#include "replay/engine.hpp"

namespace kwire::replay {

struct ReportContext {
  std::string capture;
  std::string target;
  std::string timing;        // "recorded x1", "fast"
  size_t max_listed = 10;    // regressions shown in the text summary
};

struct Totals {
  uint64_t sent = 0, answered = 0, same = 0, ignored_only = 0, regressions = 0, unanswered = 0, unsupported = 0,
           skipped = 0, not_compared = 0, races = 0;
};
Totals totals(const ReplayResult& r);
// The regressions' differences by "API PATH" (indices left out): how many.
std::map<std::string, size_t> regressions_by_field(const ReplayResult& r);
// A JSON string literal of s; s escaped for XML text and attributes.
std::string json_text(std::string_view s);
std::string xml_text(std::string_view s);

void write_text_report(std::ostream& out, const ReplayResult& r, const ReportContext& ctx);
void write_json_report(std::ostream& out, const ReplayResult& r, const ReportContext& ctx);
void write_junit_report(std::ostream& out, const ReplayResult& r, const ReportContext& ctx);

}  // namespace kwire::replay
