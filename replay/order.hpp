// The order a capture fixes between sessions beyond its responses. Replay
// sends a request once every response the capture shows before it has come
// back (Exchange::after); that keeps what a client learned before it asked.
// It does not keep what a broker saw: a read sent while another session's
// write was still in flight reached the recorded broker after that write, and
// a truncation sent while another session's read was in flight came after
// that read. Replayed on other connections, or to other brokers, either may
// overtake the other: a fetch at an offset not yet written, a fetch at an
// offset already purged (OFFSET_OUT_OF_RANGE where the capture has NONE).
//
// This part owns those rules. For each request it names the responses
// (capture-wide response_seq) of other sessions' requests that must be
// answered before it is sent:
//   - a read (Fetch of a partition at an offset, ListOffsets) waits for every
//     write to that partition (Produce) another session sent before it and
//     had no answer to yet;
//   - a read_committed Fetch also waits for every transaction end (EndTxn)
//     another session sent before it and had no answer to yet;
//   - a truncation (DeleteRecords, Kafka Streams' purge of repartition
//     topics) waits for every read of its partitions another session sent
//     before it and had no answer to yet.
// Every rule points from a request to requests sent before it, so no wait
// can close a cycle. It knows nothing of connections or targets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dissector/protocol/program.hpp"
#include "replay/recording.hpp"

namespace kwire::replay {

enum class OrderRule : uint8_t { WriteBeforeRead, TxnEndBeforeRead, ReadBeforeTruncation };
std::string_view order_rule_name(OrderRule r);

struct OrderWait {
  uint64_t response_seq = 0;  // the response awaited (Exchange::response_seq of the other request)
  uint32_t session = 0;       // the other request's session (RecordedSession::id) ...
  uint32_t index = 0;         // ... and its place in it
  OrderRule rule = OrderRule::WriteBeforeRead;
};

// waits[s][i]: what exchange i of rec.sessions[s] waits for, beyond its own
// Exchange::after. Broker-to-broker sessions take no part.
using OrderWaits = std::vector<std::vector<std::vector<OrderWait>>>;
OrderWaits cross_session_order(const ProgramSet& ps, const Recording& rec);

// How many waits of each rule (for the notes).
struct OrderCounts {
  uint64_t write_before_read = 0, txn_end_before_read = 0, read_before_truncation = 0;
};
OrderCounts count_waits(const OrderWaits& w);

}  // namespace kwire::replay
