// Order across sessions (replay/order.hpp), on hand-built sessions: for each
// rule, a request sent while another session's was still unanswered waits for
// that answer; one sent after the answer, in the same session, or on another
// partition does not.
#include <gtest/gtest.h>

#include "dissector/protocol/records.hpp"
#include "replay/order.hpp"
#include "tests/test_support.hpp"

namespace kwire {
namespace {

using test::Bytes;
using replay::OrderRule;

const ProgramSet& ps() { return ProgramSet::release(); }

std::vector<uint8_t> batch() {
  BatchSpec s;
  s.base_timestamp = 1'795'910'400'000;
  s.records = {RecordSpec{0, "k", "v", {}}};
  return encode_record_batch(s);
}

// Produce v11 (by name) or v13 (by topic id, `id_fill` its 16 bytes) to one partition.
std::vector<uint8_t> produce(const std::string& topic, int partition, uint8_t id_fill = 0) {
  Bytes b = test::request_header_v2(0, id_fill ? 13 : 11, 1);
  b.cnull().i16(-1).i32(30000).carr(1);
  if (id_fill) b.uuid(id_fill); else b.cstr(topic);
  b.carr(1).i32(partition).cbytes(batch()).tags0().tags0().tags0();
  return b.message();
}
// Fetch v12 (by name): `partitions` of `topic` at offset 42, in fetch session 7 at `epoch`
// (0: a full fetch), isolation level `isolation`, `forgotten` partitions left.
std::vector<uint8_t> fetch(const std::string& topic, std::vector<int> partitions, int epoch = 0, int isolation = 0,
                           std::vector<int> forgotten = {}) {
  Bytes b = test::request_header_v2(1, 12, 1);
  b.i32(-1).i32(500).i32(1).i32(52428800).i8(isolation).i32(7).i32(epoch);
  if (partitions.empty()) b.carr(0);
  else {
    b.carr(1).cstr(topic).carr(partitions.size());
    for (int p : partitions) b.i32(p).i32(0).i64(42).i32(-1).i64(-1).i32(1048576).tags0();
    b.tags0();
  }
  if (forgotten.empty()) b.carr(0);
  else {
    b.carr(1).cstr(topic).carr(forgotten.size());
    for (int p : forgotten) b.i32(p);
    b.tags0();
  }
  b.cstr("").tags0();  // RackId
  return b.message();
}
std::vector<uint8_t> list_offsets(const std::string& topic, int partition) {
  Bytes b = test::request_header_v2(2, 10, 1);
  b.i32(-1).i8(0).carr(1).cstr(topic).carr(1).i32(partition).i32(-1).i64(-2).tags0().tags0().i32(30000).tags0();
  return b.message();
}
std::vector<uint8_t> delete_records(const std::string& topic, int partition) {
  Bytes b = test::request_header_v2(21, 2, 1);
  b.carr(1).cstr(topic).carr(1).i32(partition).i64(42).tags0().tags0().i32(30000).tags0();
  return b.message();
}
std::vector<uint8_t> end_txn() {
  Bytes b = test::request_header_v2(26, 4, 1);
  b.cstr("txn-a").i64(5).i16(0).boolean(true).tags0();
  return b.message();
}
// CreateTopics v7 answer: `topic` has the id of 16 bytes `id_fill`.
std::vector<uint8_t> created(const std::string& topic, uint8_t id_fill) {
  Bytes b;
  b.i32(1).tags0().i32(0).carr(1).cstr(topic).uuid(id_fill).i16(0).cnull().i32(1).i16(1).cnull().tags0().tags0();
  return b.message();
}

// A capture of sessions, each a list of exchanges in the order given; each
// exchange: request bytes, api key, when sent and answered (ms), and the
// capture-wide response order is by answer time.
struct Ex {
  std::vector<uint8_t> request;
  int16_t api;
  int64_t sent_ms, answered_ms;
  std::vector<uint8_t> response = {};
};
replay::Recording capture(const std::vector<std::vector<Ex>>& sessions) {
  replay::Recording rec;
  std::vector<std::pair<int64_t, replay::Exchange*>> answers;
  uint32_t frame = 1;
  for (size_t s = 0; s < sessions.size(); ++s) {
    rec.sessions.emplace_back();
    rec.sessions.back().id = static_cast<uint32_t>(s + 1);
  }
  for (size_t s = 0; s < sessions.size(); ++s)
    for (const Ex& x : sessions[s]) {
      replay::Exchange e;
      e.frame = frame++;
      e.request = x.request;
      e.response = x.response.empty() ? std::vector<uint8_t>{0, 0, 0, 4, 0, 0, 0, 1} : x.response;
      e.api_key = x.api;
      e.api_version = 0;
      e.request_us = x.sent_ms * 1000;
      e.response_us = x.answered_ms * 1000;
      rec.sessions[s].exchanges.push_back(std::move(e));
    }
  for (auto& s : rec.sessions)
    for (auto& e : s.exchanges) answers.emplace_back(e.response_us, &e);
  std::sort(answers.begin(), answers.end());
  for (size_t k = 0; k < answers.size(); ++k) answers[k].second->response_seq = k;
  for (auto& s : rec.sessions)
    for (auto& e : s.exchanges) {
      e.after = 0;
      for (const auto& [t, other] : answers) e.after += t < e.request_us ? 1 : 0;
    }
  rec.responses = answers.size();
  return rec;
}

// What exchange i of session s waits for: (other session id, its exchange index, rule).
std::vector<std::tuple<uint32_t, uint32_t, OrderRule>> waits_of(const replay::OrderWaits& w, size_t s, size_t i) {
  std::vector<std::tuple<uint32_t, uint32_t, OrderRule>> out;
  for (const auto& x : w[s][i]) out.emplace_back(x.session, x.index, x.rule);
  std::sort(out.begin(), out.end());
  return out;
}
using Waits = std::vector<std::tuple<uint32_t, uint32_t, OrderRule>>;

TEST(Order, AReadWaitsForAWriteAnotherSessionSentFirst) {
  // Session 1 produces to orders-0 at 100 ms, answered at 300; session 2 fetches
  // orders-0 at 200 and lists its offsets at 250 (both before that answer), and
  // fetches orders-1 at 260; session 3 lists orders-0 at 400 (after the answer).
  auto rec = capture({{{produce("orders", 0), 0, 100, 300}},
                      {{fetch("orders", {0}), 1, 200, 700}, {list_offsets("orders", 0), 2, 250, 710}, {fetch("orders", {1}), 1, 260, 720}},
                      {{list_offsets("orders", 0), 2, 400, 410}}});
  const auto w = replay::cross_session_order(ps(), rec);
  EXPECT_EQ(waits_of(w, 1, 0), (Waits{{1, 0, OrderRule::WriteBeforeRead}}));
  EXPECT_EQ(waits_of(w, 1, 1), (Waits{{1, 0, OrderRule::WriteBeforeRead}}));
  EXPECT_EQ(waits_of(w, 1, 2), Waits{});  // another partition
  EXPECT_EQ(waits_of(w, 2, 0), Waits{});  // the write was answered before
  EXPECT_EQ(waits_of(w, 0, 0), Waits{});  // a write waits for nothing
  EXPECT_EQ(w[1][0].front().response_seq, rec.sessions[0].exchanges[0].response_seq);
  const auto n = replay::count_waits(w);
  EXPECT_EQ(n.write_before_read, 2u);
  EXPECT_EQ(n.read_before_truncation, 0u);
}

TEST(Order, ASessionsOwnWriteIsNotWaitedFor) {
  auto rec = capture({{{produce("orders", 0), 0, 100, 300}, {fetch("orders", {0}), 1, 200, 700}}});
  EXPECT_EQ(waits_of(replay::cross_session_order(ps(), rec), 0, 1), Waits{});
}

TEST(Order, AnIncrementalFetchReadsEveryPartitionOfItsSession) {
  // Session 2's fetch session holds orders-0 and orders-1 (full fetch at 50),
  // then an incremental fetch at 200 names nothing: it still reads both. At 260
  // it forgets orders-0: it reads orders-1 only.
  auto rec = capture({{{produce("orders", 0), 0, 100, 300}, {produce("orders", 1), 0, 110, 320}},
                      {{fetch("orders", {0, 1}), 1, 50, 60}, {fetch("orders", {}, 1), 1, 200, 700},
                       {fetch("orders", {}, 2, 0, {0}), 1, 260, 710}}});
  const auto w = replay::cross_session_order(ps(), rec);
  EXPECT_EQ(waits_of(w, 1, 0), Waits{});
  EXPECT_EQ(waits_of(w, 1, 1), (Waits{{1, 0, OrderRule::WriteBeforeRead}, {1, 1, OrderRule::WriteBeforeRead}}));
  EXPECT_EQ(waits_of(w, 1, 2), (Waits{{1, 1, OrderRule::WriteBeforeRead}}));
}

TEST(Order, TopicIdsAndNamesAreOnePartition) {
  // Produce v13 names the topic by id; CreateTopics' answer says whose id it is;
  // ListOffsets names it.
  auto rec = capture({{{Bytes().message(), 19, 10, 20, created("orders", 0x33)}, {produce("", 0, 0x33), 0, 100, 300}},
                      {{list_offsets("orders", 0), 2, 200, 210}}});
  rec.sessions[0].exchanges[0].request = test::request_header_v2(19, 7, 1).message();
  rec.sessions[0].exchanges[0].api_version = 7;
  rec.sessions[0].exchanges[0].malformed = true;   // only its answer matters here
  EXPECT_EQ(waits_of(replay::cross_session_order(ps(), rec), 1, 0), (Waits{{1, 1, OrderRule::WriteBeforeRead}}));
}

TEST(Order, AReadCommittedFetchWaitsForATransactionsEnd) {
  // Session 1 ends its transaction at 100 (answered at 300); session 2's fetch at
  // 200 is read_committed, session 3's read_uncommitted.
  auto rec = capture({{{end_txn(), 26, 100, 300}},
                      {{fetch("orders", {0}, 0, 1), 1, 200, 700}},
                      {{fetch("orders", {0}, 0, 0), 1, 200, 700}}});
  const auto w = replay::cross_session_order(ps(), rec);
  EXPECT_EQ(waits_of(w, 1, 0), (Waits{{1, 0, OrderRule::TxnEndBeforeRead}}));
  EXPECT_EQ(waits_of(w, 2, 0), Waits{});
}

TEST(Order, ATruncationWaitsForAReadSentBeforeIt) {
  // Session 1 fetches orders-0 at 100 (a long poll answered at 600) and lists
  // orders-1 at 120 (answered at 130); session 2 deletes records of orders-0 and
  // orders-1 at 200; session 3 deletes orders-0 again at 700, after the answer.
  auto rec = capture({{{fetch("orders", {0}), 1, 100, 600}, {list_offsets("orders", 1), 2, 120, 130}},
                      {{delete_records("orders", 0), 21, 200, 250}},
                      {{delete_records("orders", 0), 21, 700, 710}}});
  const auto w = replay::cross_session_order(ps(), rec);
  EXPECT_EQ(waits_of(w, 1, 0), (Waits{{1, 0, OrderRule::ReadBeforeTruncation}}));
  EXPECT_EQ(waits_of(w, 2, 0), Waits{});
  // The fetch itself waits for nothing: the truncation came after it.
  EXPECT_EQ(waits_of(w, 0, 0), Waits{});
  EXPECT_EQ(replay::count_waits(w).read_before_truncation, 1u);
}

TEST(Order, EveryWaitPointsAtARequestSentEarlier) {
  // Writes, reads and truncations interleaved over three sessions: no request
  // waits for one sent after it, so no wait can close a cycle.
  std::vector<std::vector<Ex>> sessions(3);
  for (int k = 0; k < 30; ++k) {
    const int64_t t = 100 + 10 * k;
    switch (k % 3) {
      case 0: sessions[0].push_back({produce("orders", k % 2), 0, t, t + 55}); break;
      case 1: sessions[1].push_back({fetch("orders", {0, 1}), 1, t, t + 35}); break;
      case 2: sessions[2].push_back({delete_records("orders", k % 2), 21, t, t + 25}); break;
    }
  }
  auto rec = capture(sessions);
  const auto w = replay::cross_session_order(ps(), rec);
  size_t waits = 0;
  for (size_t s = 0; s < w.size(); ++s)
    for (size_t i = 0; i < w[s].size(); ++i)
      for (const auto& x : w[s][i]) {
        const auto& me = rec.sessions[s].exchanges[i];
        const auto& other = rec.sessions[x.session - 1].exchanges[x.index];
        EXPECT_LT(other.request_us, me.request_us);
        EXPECT_GE(other.response_seq, me.after);  // not answered when this one was sent
        ++waits;
      }
  EXPECT_GT(waits, 10u);
}

}  // namespace
}  // namespace kwire
