#include "replay/timeshift.hpp"

#include <algorithm>
#include <cstdio>

#include "dissector/protocol/frame.hpp"
#include "dissector/protocol/records.hpp"
#include "wire/wire.hpp"

namespace kwire::replay {

namespace {
// Record batch v2 header offsets (Kafka's DefaultRecordBatch).
constexpr size_t kMagicAt = 16, kCrcAt = 17, kAttributesAt = 21, kBaseTimestampAt = 27, kMaxTimestampAt = 35,
                 kHeaderSize = 61;

int64_t load_i64(const uint8_t* p) { return static_cast<int64_t>(wire::load_be64(p)); }
void store_i64(uint8_t* p, int64_t v) {
  const auto u = static_cast<uint64_t>(v);
  wire::store_be32(p, static_cast<uint32_t>(u >> 32));
  wire::store_be32(p + 4, static_cast<uint32_t>(u));
}
}  // namespace

bool shift_batch(std::span<uint8_t> b, int64_t shift_ms) {
  if (b.size() < kHeaderSize || b[kMagicAt] != 2) return false;
  const uint16_t attributes = wire::load_be16(b.data() + kAttributesAt);
  if (attributes & kLogAppendTimeBit) return false;
  const int64_t base = load_i64(b.data() + kBaseTimestampAt), max = load_i64(b.data() + kMaxTimestampAt);
  if (base == kNoTimestamp || shift_ms == 0) return false;
  store_i64(b.data() + kBaseTimestampAt, base + shift_ms);
  if (max != kNoTimestamp) store_i64(b.data() + kMaxTimestampAt, max + shift_ms);
  wire::store_be32(b.data() + kCrcAt, crc32c(b.subspan(kAttributesAt)));
  return true;
}

CaptureTimes capture_times(const ProgramSet& ps, const Recording& rec) {
  CaptureTimes t;
  int64_t first = INT64_MAX, last = INT64_MIN;
  FrameDecoder dec(ps);
  dec.set_nested(false);
  Frame f;
  for (const auto& s : rec.sessions) {
    if (!s.broker_traffic.empty()) continue;
    for (const auto& e : s.exchanges) {
      first = std::min(first, e.request_us);
      last = std::max(last, e.request_us);
      if (e.api_key != 0 || e.malformed) continue;
      dec.decode_request(e.request, f);
      if (!f.body) continue;
      for (uint32_t i = f.body + 1; i < f.nodes.size(); ++i) {
        const Node& n = f.nodes[i];
        if (n.type != WireType::Records) continue;
        // The topic: Name in the element above (TopicId from Produce v13 on).
        std::string topic;
        // records -> its partition element -> the partitions array -> the topic element
        const uint32_t topic_el = f.nodes[f.nodes[n.parent].parent].parent;
        for (uint32_t c : Children(f, topic_el)) {
          const Node& x = f.nodes[c];
          const FieldDesc& d = ps.field(x.desc);
          if (d.name == "Name" && x.type == WireType::String && !x.is_null()) topic = std::string(x.str());
          else if (d.name == "TopicId" && x.type == WireType::Uuid) topic = "id:" + wire::uuid_to_string(x.v.p);
        }
        for (uint32_t b : Children(f, i)) {
          if (f.nodes[b].desc != kDescRecordBatch) continue;
          int64_t max = kNoTimestamp, base = kNoTimestamp, attributes = 0, magic = -1;
          for (uint32_t c : Children(f, b)) {
            const Node& x = f.nodes[c];
            if (x.desc == kDescMaxTimestamp) max = x.v.i;
            else if (x.desc == kDescBaseTimestamp) base = x.v.i;
            else if (x.desc == kDescAttributes) attributes = x.v.i;
            else if (x.desc == kDescMagic) magic = x.v.i;
          }
          if (magic != 2 || (attributes & kLogAppendTimeBit) || base == kNoTimestamp) continue;
          ++t.batches;
          const int64_t newest = max == kNoTimestamp ? base : max;
          t.min_age_ms = std::min(t.min_age_ms, e.request_us / 1000 - newest);
          auto [it, fresh] = t.oldest_ms.emplace(topic, base);
          if (!fresh) it->second = std::min(it->second, base);
        }
        i = n.end - 1;
      }
    }
  }
  if (first != INT64_MAX) {
    t.first_us = first;
    t.last_us = last;
  }
  return t;
}

int64_t choose_shift(const CaptureTimes& t, int64_t replay_start_ms, bool recorded_timing) {
  if (t.first_us == 0) return 0;
  const int64_t anchor_ms = (recorded_timing ? t.first_us : t.last_us) / 1000;
  const int64_t extra = t.min_age_ms != INT64_MAX && t.min_age_ms > 0 ? t.min_age_ms : 0;
  return replay_start_ms - anchor_ms + extra;
}

std::string shift_text(int64_t ms) {
  const char sign = ms < 0 ? '-' : '+';
  const uint64_t a = ms < 0 ? static_cast<uint64_t>(-(ms + 1)) + 1 : static_cast<uint64_t>(ms);
  const uint64_t days = a / 86'400'000, h = a / 3'600'000 % 24, m = a / 60'000 % 60, s = a / 1000 % 60, frac = a % 1000;
  char b[64];
  if (a < 60'000) snprintf(b, sizeof b, "%c%llu.%03llu s", sign, static_cast<unsigned long long>(s), static_cast<unsigned long long>(frac));
  else if (days == 0)
    snprintf(b, sizeof b, "%c%02llu:%02llu:%02llu.%03llu", sign, static_cast<unsigned long long>(h),
             static_cast<unsigned long long>(m), static_cast<unsigned long long>(s), static_cast<unsigned long long>(frac));
  else
    snprintf(b, sizeof b, "%c%llu d %02llu:%02llu:%02llu.%03llu", sign, static_cast<unsigned long long>(days),
             static_cast<unsigned long long>(h), static_cast<unsigned long long>(m), static_cast<unsigned long long>(s),
             static_cast<unsigned long long>(frac));
  return b;
}

bool retention_of(const std::map<std::string, std::string>& configs, int64_t& ms) {
  static const std::pair<const char*, int64_t> keys[] = {
      {"retention.ms", 1}, {"log.retention.ms", 1}, {"log.retention.minutes", 60'000}, {"log.retention.hours", 3'600'000}};
  for (const auto& [name, unit] : keys) {
    auto it = configs.find(name);
    if (it == configs.end() || it->second.empty()) continue;
    int64_t v = 0;
    const char* p = it->second.c_str();
    bool neg = *p == '-';
    if (neg) ++p;
    if (!*p) continue;
    bool ok = true;
    for (; *p; ++p) {
      if (*p < '0' || *p > '9' || v > INT64_MAX / 10 - 9) { ok = false; break; }
      v = v * 10 + (*p - '0');
    }
    if (!ok) continue;
    if (neg) { ms = -1; return true; }  // -1: no limit (any negative is read so)
    ms = v > INT64_MAX / unit ? INT64_MAX : v * unit;
    return true;
  }
  return false;
}

}  // namespace kwire::replay
