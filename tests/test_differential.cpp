// Differential replay's judgement: Diffy's noise rule at its thresholds'
// edges, the comparison of two targets' answers through their comparisons
// with the recording, and the per-path verdicts, on hand-built results.
#include <gtest/gtest.h>

#include <sstream>

#include "replay/differential.hpp"

using namespace kwire::replay;

TEST(NoiseRule, TheExcessMustBeAboveTheRelativeThreshold) {
  const NoiseThresholds t;   // 20 %, 0.03 %
  // 5 against 4 out of 1000: the excess, 1, is 20 % of 5 (not above); 6
  // against 4: 2 is 33 % of 6 and 0.2 % of 1000.
  EXPECT_FALSE(beyond_noise(5, 4, 1000, t));
  EXPECT_TRUE(beyond_noise(6, 4, 1000, t));
  // 10 against 8: 20 % exactly; 11 against 8: 27 %.
  EXPECT_FALSE(beyond_noise(10, 8, 1000, t));
  EXPECT_TRUE(beyond_noise(11, 8, 1000, t));
}

TEST(NoiseRule, TheExcessMustBeAboveTheAbsoluteThreshold) {
  const NoiseThresholds t;
  // No noise at all, 3 differences out of 10000 exchanges: 0.03 % (not
  // above); 4: 0.04 %.
  EXPECT_FALSE(beyond_noise(3, 0, 10000, t));
  EXPECT_TRUE(beyond_noise(4, 0, 10000, t));
  // One difference in a small capture is beyond no noise.
  EXPECT_TRUE(beyond_noise(1, 0, 7, t));
}

TEST(NoiseRule, NeverWhenTheNoiseIsAsLargeOrThereIsNothing) {
  const NoiseThresholds t;
  EXPECT_FALSE(beyond_noise(0, 0, 100, t));
  EXPECT_FALSE(beyond_noise(7, 7, 100, t));
  EXPECT_FALSE(beyond_noise(3, 9, 100, t));
  EXPECT_FALSE(beyond_noise(3, 0, 0, t));
  // Thresholds of 0: any excess counts; of 100: none can.
  EXPECT_TRUE(beyond_noise(2, 1, 1000000, NoiseThresholds{0, 0}));
  EXPECT_FALSE(beyond_noise(1000, 0, 1000, NoiseThresholds{100, 0}));
}

namespace {

ExchangeResult exchange(uint32_t session, uint32_t index, uint64_t frame, Outcome o, std::vector<Difference> d = {}) {
  ExchangeResult e;
  e.session = session;
  e.index = index;
  e.frame = frame;
  e.api_key = 0;
  e.api_version = 11;
  e.api_name = "Produce";
  e.outcome = o;
  e.differences = std::move(d);
  return e;
}

Difference diff(std::string path, std::string recorded, std::string replayed, std::string rule = {}) {
  Difference d;
  d.path = std::move(path);
  d.recorded = std::move(recorded);
  d.replayed = std::move(replayed);
  d.ignored = !rule.empty();
  d.rule = std::move(rule);
  return d;
}

const std::map<int16_t, std::pair<int16_t, int16_t>> kV3to11{{0, {3, 11}}}, kV3to13{{0, {3, 13}}};

}  // namespace

TEST(PairDifferences, AnswersBothAsRecordedDoNotDiffer) {
  std::vector<PairDifference> out;
  pair_differences(exchange(1, 0, 5, Outcome::Same), exchange(1, 0, 5, Outcome::Same), kV3to11, kV3to11, out);
  EXPECT_TRUE(out.empty());
  // Both differ from the capture, with the same value: not from each other.
  pair_differences(exchange(1, 0, 5, Outcome::Regression, {diff("body.responses[0].errorCode", "0", "10")}),
                   exchange(1, 0, 5, Outcome::Regression, {diff("body.responses[0].errorCode", "0", "10")}), kV3to11,
                   kV3to11, out);
  EXPECT_TRUE(out.empty());
}

TEST(PairDifferences, OneSideOffTheCaptureIsADifferenceTheOtherSideHasTheRecordedValue) {
  std::vector<PairDifference> out;
  Difference d = diff("body.responses[0].partitionResponses[0].errorCode", "0", "10");
  d.recorded_name = "NONE";
  d.replayed_name = "MESSAGE_TOO_LARGE";
  pair_differences(exchange(1, 0, 5, Outcome::Same), exchange(1, 0, 5, Outcome::Regression, {d}), kV3to11, kV3to11, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].path, "body.responses[0].partitionResponses[0].errorCode");
  EXPECT_EQ(out[0].a, "0 NONE");
  EXPECT_EQ(out[0].b, "10 MESSAGE_TOO_LARGE");
  EXPECT_EQ(out[0].capture, "a");
  EXPECT_EQ(out[0].explained, "");
}

TEST(PairDifferences, IgnoredOnBothSidesOrARaceIsExplained) {
  std::vector<PairDifference> out;
  pair_differences(exchange(1, 0, 5, Outcome::IgnoredOnly, {diff("body.throttleTimeMs", "0", "7", "throttling")}),
                   exchange(1, 0, 5, Outcome::IgnoredOnly, {diff("body.throttleTimeMs", "0", "9", "throttling")}), kV3to11,
                   kV3to11, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].a, "7");
  EXPECT_EQ(out[0].b, "9");
  EXPECT_EQ(out[0].capture, "neither");
  EXPECT_EQ(out[0].explained, "rule: throttling");
  out.clear();
  pair_differences(exchange(1, 0, 5, Outcome::Race, {diff("body.responses[0].baseOffset", "4", "5")}),
                   exchange(1, 0, 5, Outcome::Same), kV3to11, kV3to11, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].a, "5");
  EXPECT_EQ(out[0].b, "4");
  EXPECT_EQ(out[0].explained, "race");
  out.clear();
  // Ignored on one side only: the other side's difference is not covered.
  pair_differences(exchange(1, 0, 5, Outcome::IgnoredOnly, {diff("body.x", "1", "2", "rule")}),
                   exchange(1, 0, 5, Outcome::Regression, {diff("body.x", "1", "3")}), kV3to11, kV3to11, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].explained, "");
}

TEST(PairDifferences, AVersionOneTargetDoesNotSupportIsNamedWithBothRanges) {
  std::vector<PairDifference> out;
  ExchangeResult refused = exchange(1, 0, 5, Outcome::Unsupported);
  refused.api_version = 12;
  ExchangeResult ok = exchange(1, 0, 5, Outcome::Same);
  ok.api_version = 12;
  pair_differences(refused, ok, kV3to11, kV3to13, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].path, "(version)");
  EXPECT_EQ(out[0].a, "\"v3-v11\"");
  EXPECT_EQ(out[0].b, "\"v3-v13\"");
  EXPECT_EQ(out[0].capture, "b");
  out.clear();
  // Neither supports it: nothing to compare.
  pair_differences(refused, refused, kV3to11, kV3to11, out);
  EXPECT_TRUE(out.empty());
  // One did not answer.
  ExchangeResult lost = exchange(1, 0, 5, Outcome::Unanswered);
  lost.note = "no response within the timeout";
  pair_differences(ok, lost, kV3to13, kV3to13, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].path, "(answer)");
  EXPECT_EQ(out[0].b, "\"no answer: no response within the timeout\"");
  EXPECT_EQ(out[0].capture, "a");
}

namespace {

// Ten Produce exchanges of one session: every one differs from the capture
// in an ignored timestamp on each target; `regress` of them (from the
// first) also in an error code on `who`.
DiffTarget target(const std::string& role, int regress_code_in) {
  DiffTarget t;
  t.role = role;
  t.ran = true;
  SessionResult s;
  s.id = 1;
  t.result.sessions.push_back(s);
  for (uint32_t i = 0; i < 10; ++i) {
    std::vector<Difference> d = {diff("body.responses[0].logAppendTimeMs", "100", std::to_string(200 + i + role.size()), "timestamps")};
    Outcome o = Outcome::IgnoredOnly;
    if (static_cast<int>(i) < regress_code_in) {
      d.push_back(diff("body.responses[0].errorCode", "0", "10"));
      o = Outcome::Regression;
    }
    t.result.exchanges.push_back(exchange(1, i, 10 + i, o, std::move(d)));
  }
  return t;
}

const PathRow* row(const DifferentialResult& d, const std::string& path) {
  for (const auto& p : d.paths)
    if (p.path == path) return &p;
  return nullptr;
}

}  // namespace

TEST(Differential, ACandidateDifferenceBeyondNoiseIsARegressionWithinItIsNot) {
  // The candidate differs in the error code in 3 of 10; the secondary in 3
  // too: noise. With the secondary clean, the candidate's 3 are a regression.
  std::vector<DiffTarget> noisy = {target("baseline", 0), target("candidate", 3), target("secondary", 3)};
  DifferentialResult d = analyse(noisy, NoiseThresholds{});
  EXPECT_TRUE(d.has_secondary);
  EXPECT_EQ(d.compared, 10u);
  const PathRow* code = row(d, "body.responses.errorCode");
  ASSERT_NE(code, nullptr);
  EXPECT_EQ(code->exchanges, 10u);
  EXPECT_EQ(code->candidate, 3u);
  EXPECT_EQ(code->unexplained, 3u);
  EXPECT_EQ(code->noise, 3u);
  EXPECT_EQ(code->verdict, PathVerdict::Noise);
  EXPECT_EQ(d.regressions(), 0u);
  EXPECT_TRUE(d.divergences.empty());
  // The timestamps differ in every exchange on both: explained by the rule, and noise.
  const PathRow* ts = row(d, "body.responses.logAppendTimeMs");
  ASSERT_NE(ts, nullptr);
  EXPECT_EQ(ts->candidate, 10u);
  EXPECT_EQ(ts->noise, 10u);
  EXPECT_EQ(ts->verdict, PathVerdict::Explained);
  EXPECT_EQ(ts->why, "rule: timestamps");

  std::vector<DiffTarget> clean = {target("baseline", 0), target("candidate", 3), target("secondary", 0)};
  d = analyse(clean, NoiseThresholds{});
  code = row(d, "body.responses.errorCode");
  ASSERT_NE(code, nullptr);
  EXPECT_EQ(code->noise, 0u);
  EXPECT_EQ(code->verdict, PathVerdict::Regression);
  EXPECT_EQ(code->frame, 10u);
  EXPECT_EQ(code->baseline, "0");
  EXPECT_EQ(code->candidate_value, "10");
  EXPECT_EQ(code->capture, "baseline");
  EXPECT_EQ(d.regressions(), 1u);
  // Regressions first in the table; the divergences in frame order.
  EXPECT_EQ(d.paths.front().path, "body.responses.errorCode");
  ASSERT_EQ(d.divergences.size(), 3u);
  EXPECT_EQ(d.divergences[0].frame, 10u);
  EXPECT_EQ(d.divergences[2].frame, 12u);
}

TEST(Differential, WithoutASecondaryTheRulesDecideAlone) {
  std::vector<DiffTarget> two = {target("baseline", 0), target("candidate", 1)};
  DifferentialResult d = analyse(two, NoiseThresholds{});
  EXPECT_FALSE(d.has_secondary);
  const PathRow* code = row(d, "body.responses.errorCode");
  ASSERT_NE(code, nullptr);
  EXPECT_EQ(code->verdict, PathVerdict::Regression);
  // The same candidate as the baseline: nothing but what the rules explain.
  std::vector<DiffTarget> same = {target("baseline", 2), target("candidate", 2)};
  d = analyse(same, NoiseThresholds{});
  EXPECT_EQ(d.regressions(), 0u);
  EXPECT_EQ(row(d, "body.responses.errorCode"), nullptr);
}

TEST(Differential, ReportsNameTheRegressedPathInEveryFormat) {
  std::vector<DiffTarget> clean = {target("baseline", 0), target("candidate", 3), target("secondary", 0)};
  clean[0].target = "127.0.0.1:9092";
  const DifferentialResult d = analyse(clean, NoiseThresholds{});
  DiffReportContext ctx{"x.pcapng", "fast", 10};
  std::ostringstream text, json, junit;
  write_differential_text(text, clean, d, ctx);
  write_differential_json(json, clean, d, ctx);
  write_differential_junit(junit, clean, d, ctx);
  EXPECT_NE(text.str().find("frame 10 Produce v11\n        body.responses[0].errorCode: baseline 0, candidate 10"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("result: 1 candidate regression beyond noise"), std::string::npos);
  EXPECT_NE(json.str().find("\"summary\":{\"regressions\":1,\"compared\":10"), std::string::npos) << json.str();
  // One case per session (1) and per regressed path (1), both failing.
  EXPECT_NE(junit.str().find("tests=\"2\" failures=\"2\""), std::string::npos) << junit.str();
  EXPECT_NE(junit.str().find("name=\"Produce v11 body.responses.errorCode\""), std::string::npos);
}

TEST(Differential, AVersionTheCandidateLacksIsNamedAsSuchNotAsACascade) {
  // Produce v12 recorded; the candidate supports v3-v11 and is not sent it.
  std::vector<DiffTarget> t = {target("baseline", 0), target("candidate", 0)};
  t[0].result.target_versions = kV3to13;
  t[1].result.target_versions = kV3to11;
  for (auto* e : {&t[0].result.exchanges[0], &t[1].result.exchanges[0]}) e->api_version = 12;
  t[1].result.exchanges[0].outcome = Outcome::Unsupported;
  t[1].result.exchanges[0].differences.clear();
  const DifferentialResult d = analyse(t, NoiseThresholds{});
  ASSERT_EQ(d.divergences.size(), 1u);
  EXPECT_EQ(d.divergences[0].d.path, "(version)");
  const PathRow* v = row(d, "(version)");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->verdict, PathVerdict::Regression);
  EXPECT_EQ(v->api, "Produce");
  EXPECT_EQ(v->version, 12);
  std::ostringstream text, json;
  DiffReportContext ctx{"x.pcapng", "fast", 10};
  write_differential_text(text, t, d, ctx);
  write_differential_json(json, t, d, ctx);
  EXPECT_NE(text.str().find("frame 10 Produce v12\n        version not supported by the candidate (ApiVersions ranges: "
                            "baseline \"v3-v13\", candidate \"v3-v11\")"),
            std::string::npos)
      << text.str();
  EXPECT_NE(json.str().find("\"what\":\"version not supported by the candidate\""), std::string::npos);
}

TEST(PairDifferences, ComeInTheOrderTheAnswerHasThem) {
  // A config's value before its synonym's, as the engine found them (a map
  // would sort "synonyms" first).
  std::vector<PairDifference> out;
  pair_differences(exchange(1, 0, 5, Outcome::Same),
                   exchange(1, 0, 5, Outcome::Regression,
                            {diff("body.results[0].configs[6].value", "\"1\"", "\"4\""),
                             diff("body.results[0].configs[6].synonyms[0].value", "\"1\"", "\"4\""),
                             diff("body.results[0].configs[2].value", "\"a\"", "\"b\"")}),
                   kV3to11, kV3to11, out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].path, "body.results[0].configs[6].value");
  EXPECT_EQ(out[1].path, "body.results[0].configs[6].synonyms[0].value");
  EXPECT_EQ(out[2].path, "body.results[0].configs[2].value");
}
