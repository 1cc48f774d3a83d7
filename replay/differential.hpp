// Differential replay: the same recorded sessions sent to a baseline, a
// candidate and optionally a second baseline at once, each by its own engine
// (its own learned values, routing and retries) on its own thread, the three
// kept in step (Lockstep). Each engine compares its target's answers with the
// recording as a single replay does; the answers of two targets are then
// compared through those comparisons: both were judged against the same
// recorded answer, in each target's own learned values, so where their
// differences from it are not the same, the targets answered differently.
//
// Candidate against baseline is the verdict; baseline against secondary is
// noise, counted per (api, version, field path) and cancelled with Diffy's
// rule (beyond_noise); each target against the recording is environment
// drift, reported and not judged.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "dissector/protocol/program.hpp"
#include "replay/engine.hpp"
#include "replay/recording.hpp"
#include "replay/report.hpp"

namespace kwire::replay {

// Diffy's thresholds, in percent.
struct NoiseThresholds {
  double relative = 20.0;   // the excess over noise, of the candidate's count
  double absolute = 0.03;   // the excess over noise, of the exchanges of that api and version
};
// Whether `candidate` differences at a path are a regression given `noise`
// differences of the secondary at the same path, out of `exchanges`: more
// than the noise, by more than `relative`% of the candidate's count and by
// more than `absolute`% of the exchanges.
bool beyond_noise(uint64_t candidate, uint64_t noise, uint64_t exchanges, const NoiseThresholds& t);

// One target of a differential replay.
struct DiffTarget {
  std::string role;         // "baseline", "candidate", "secondary"
  std::string target;       // its addresses as given, for the reports
  ReplayOptions options;
  ReplayResult result;
  bool ran = false;
  std::string error;        // why it could not run
};

// Runs the replays, one thread each, in lockstep. False when one of them
// could not run at all (its `error` says why); the others still ran.
bool run_differential(const ProgramSet& ps, const Recording& rec, std::vector<DiffTarget>& targets);

// A place where two targets' answers to one recorded request differ.
struct PairDifference {
  std::string path;         // with indices; "(response)": it did not decode; "(version)", "(answer)": see below
  std::string a, b;         // the two values, JSON text (error codes also by name)
  // Empty: nothing explains it. Else why it is no divergence: "rule: ..."
  // (an ignore rule or timing rule covers it on both sides), "race".
  std::string explained;
  // Which side answered as the capture did: "a", "b" or "neither".
  std::string capture;
};
// The differences between the answers targets A and B gave to one exchange
// (the same recorded request): field by field where both answered;
// "(version)" where one does not support the recorded version (the values
// are both targets' ranges); "(answer)" where one answered and the other did
// not. Nothing where neither answered or the exchange was not sent to both.
// `versions_a/b`: the targets' ApiVersions ranges.
void pair_differences(const ExchangeResult& a, const ExchangeResult& b,
                      const std::map<int16_t, std::pair<int16_t, int16_t>>& versions_a,
                      const std::map<int16_t, std::pair<int16_t, int16_t>>& versions_b,
                      std::vector<PairDifference>& out);

enum class PathVerdict : uint8_t {
  Regression,   // the candidate differs beyond noise, unexplained
  Noise,        // unexplained differences, no more than the secondary shows
  Explained,    // every candidate difference covered by a rule or a race
  NoiseOnly,    // the candidate never differs; the secondary does
};
std::string_view verdict_name(PathVerdict v);

struct PathRow {
  std::string api;
  int16_t version = -1;
  std::string path;             // without indices
  uint64_t exchanges = 0;       // of that api and version, answered (or refused) by baseline and candidate
  uint64_t candidate = 0;       // where the candidate differs from the baseline at the path
  uint64_t unexplained = 0;     // of those, what no rule or race explains
  uint64_t noise = 0;           // where the secondary differs from the baseline at the path
  PathVerdict verdict = PathVerdict::Explained;
  std::string why;              // the commonest explanation (Explained)
  // The first candidate difference and the first noise difference.
  uint64_t frame = 0, noise_frame = 0;
  std::string baseline, candidate_value, noise_baseline, noise_secondary;
  std::string capture;          // first candidate difference: "baseline", "candidate" or "neither" answered as recorded
};

// A candidate difference at a regressed path.
struct Divergence {
  uint32_t session = 0;
  uint64_t frame = 0;
  std::string api;
  int16_t version = -1;
  PairDifference d;             // a: baseline, b: candidate
};

struct DifferentialResult {
  bool has_secondary = false;
  NoiseThresholds thresholds;
  uint64_t compared = 0;        // exchanges answered (or refused) by both baseline and candidate
  uint64_t differing = 0;       // of those, with a candidate difference of any kind
  uint64_t noisy = 0;           // exchanges where the secondary differs from the baseline
  uint64_t not_compared = 0;    // sent to one of them only (skipped, not expected, a retry in the capture)
  std::vector<PathRow> paths;   // regressions first, then by api, version, path
  std::vector<Divergence> divergences;   // in session and frame order
  size_t regressions() const;   // paths judged Regression
};

DifferentialResult analyse(const std::vector<DiffTarget>& targets, const NoiseThresholds& t);

struct DiffReportContext {
  std::string capture;
  std::string timing;
  size_t max_listed = 10;
};
void write_differential_text(std::ostream& out, const std::vector<DiffTarget>& targets, const DifferentialResult& d,
                             const DiffReportContext& ctx);
void write_differential_json(std::ostream& out, const std::vector<DiffTarget>& targets, const DifferentialResult& d,
                             const DiffReportContext& ctx);
// One test case per session and one per regressed path.
void write_differential_junit(std::ostream& out, const std::vector<DiffTarget>& targets, const DifferentialResult& d,
                              const DiffReportContext& ctx);

}  // namespace kwire::replay
