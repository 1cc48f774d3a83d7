#include "recorder/packet_source.hpp"

#include <pcap/pcap.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "recorder/capture.hpp"
#include "recorder/packet.hpp"

namespace kwire {

namespace {

// pcap_activate's failures, in words a user can act on.
std::string activate_error(pcap_t* p, int rc, const std::string& iface, SourceError& kind) {
  kind = SourceError::Usage;
  switch (rc) {
    case PCAP_ERROR_PERM_DENIED:
      return "no permission to capture on " + iface +
             ": capturing needs root, or the capabilities CAP_NET_RAW and CAP_NET_ADMIN "
             "(setcap cap_net_raw,cap_net_admin=eip on the kwire binary) (" + pcap_geterr(p) + ")";
    case PCAP_ERROR_NO_SUCH_DEVICE:
      return "no interface named '" + iface + "' ('kwire record -D' lists them)";
    case PCAP_ERROR_IFACE_NOT_UP:
      return "interface " + iface + " is not up";
    case PCAP_ERROR_RFMON_NOTSUP:
    case PCAP_ERROR_PROMISC_PERM_DENIED:
      return "cannot capture on " + iface + ": " + pcap_statustostr(rc);
    default:
      kind = SourceError::Runtime;
      return "cannot capture on " + iface + ": " + pcap_statustostr(rc) + " (" + pcap_geterr(p) + ")";
  }
}

// The settings made before pcap_activate. libpcap refuses them only on a
// handle that is already active, which would be a bug here, and refuses
// nanosecond timestamps where the platform cannot give them: then they stay
// microseconds, which on_packet reads back from the handle.
bool configure(pcap_t* p, const LiveOptions& o, std::string& error) {
  auto failed = [&](const char* what, int rc) {
    error = "cannot capture on " + o.interface + ": cannot set the " + what + ": " + pcap_statustostr(rc);
    return false;
  };
  int rc = pcap_set_snaplen(p, static_cast<int>(o.snaplen));
  if (rc != 0) return failed("snapshot length", rc);
  if (o.immediate) {
    rc = pcap_set_immediate_mode(p, 1);
    if (rc != 0) return failed("immediate mode", rc);
  } else {
    rc = pcap_set_timeout(p, o.timeout_ms);
    if (rc != 0) return failed("read timeout", rc);
  }
  if (o.buffer_mib > 0) {
    rc = pcap_set_buffer_size(p, o.buffer_mib << 20);
    if (rc != 0) return failed("buffer size", rc);
  }
  rc = pcap_set_tstamp_precision(p, PCAP_TSTAMP_PRECISION_NANO);
  if (rc != 0 && rc != PCAP_ERROR_TSTAMP_PRECISION_NOTSUP) return failed("timestamp precision", rc);
  return true;
}

bool set_filter(pcap_t* p, const std::string& filter, std::string& error) {
  if (filter.empty()) return true;
  bpf_program prog{};
  if (pcap_compile(p, &prog, filter.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) {
    error = "invalid BPF filter '" + filter + "': " + pcap_geterr(p);
    return false;
  }
  const int rc = pcap_setfilter(p, &prog);
  pcap_freecode(&prog);
  if (rc != 0) {
    error = "cannot apply BPF filter '" + filter + "': " + pcap_geterr(p);
    return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<PacketSource> PacketSource::open_live(const LiveOptions& o, std::string& error, SourceError& kind) {
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  std::unique_ptr<PacketSource> s(new PacketSource());
  s->live_ = true;
  s->name_ = o.interface;
  s->p_ = pcap_create(o.interface.c_str(), errbuf);
  if (!s->p_) {
    kind = SourceError::Usage;
    error = "cannot capture on " + o.interface + ": " + errbuf;
    return nullptr;
  }
  if (!configure(s->p_, o, error)) {
    kind = SourceError::Runtime;
    return nullptr;
  }
  const int rc = pcap_activate(s->p_);
  if (rc < 0) {
    error = activate_error(s->p_, rc, o.interface, kind);
    return nullptr;
  }
  if (!is_supported_link_type(pcap_datalink(s->p_))) {
    kind = SourceError::Usage;
    error = "cannot decode " + o.interface + ": unsupported " + link_type_name(pcap_datalink(s->p_));
    return nullptr;
  }
  if (!set_filter(s->p_, o.filter, error)) {
    kind = SourceError::Usage;
    return nullptr;
  }
  if (pcap_setnonblock(s->p_, 1, errbuf) != 0) {
    kind = SourceError::Runtime;
    error = std::string("cannot read ") + o.interface + " without blocking: " + errbuf;
    return nullptr;
  }
  s->fd_ = pcap_get_selectable_fd(s->p_);
  kind = SourceError::None;
  return s;
}

std::unique_ptr<PacketSource> PacketSource::open_file(const std::string& path, const std::string& filter,
                                                      std::string& error, SourceError& kind) {
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  std::unique_ptr<PacketSource> s(new PacketSource());
  s->name_ = path == "-" ? "standard input" : path;
  FILE* f = path == "-" ? fdopen(dup(0), "rb") : std::fopen(path.c_str(), "rb");
  if (!f) {
    kind = SourceError::Runtime;
    error = "cannot read " + s->name_ + ": " + std::strerror(errno);
    return nullptr;
  }
  s->p_ = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, errbuf);
  if (!s->p_) {
    std::fclose(f);
    kind = SourceError::Runtime;
    error = "cannot read " + s->name_ + ": " + errbuf;
    return nullptr;
  }
  if (!set_filter(s->p_, filter, error)) {
    kind = SourceError::Usage;
    return nullptr;
  }
  kind = SourceError::None;
  return s;
}

PacketSource::~PacketSource() {
  if (p_) pcap_close(p_);
}

int PacketSource::link_type() const { return pcap_datalink(p_); }

int PacketSource::pcapng_link_type() const {
  // DLT_ and LINKTYPE_ agree except for raw IP, whose DLT differs by platform.
  const int dlt = pcap_datalink(p_);
  return dlt == DLT_RAW ? 101 : dlt;
}

uint32_t PacketSource::snaplen() const { return static_cast<uint32_t>(pcap_snapshot(p_)); }

void PacketSource::on_packet(unsigned char* user, const pcap_pkthdr* h, const unsigned char* bytes) {
  auto* self = reinterpret_cast<PacketSource*>(user);
  RawPacket r;
  const bool nano = pcap_get_tstamp_precision(self->p_) == PCAP_TSTAMP_PRECISION_NANO;
  r.ts_ns = static_cast<int64_t>(h->ts.tv_sec) * 1'000'000'000 + static_cast<int64_t>(h->ts.tv_usec) * (nano ? 1 : 1000);
  r.caplen = h->caplen;
  r.wire_len = h->len;
  r.data = bytes;
  ++self->read_;
  (*self->fn_)(r);
}

PacketSource::Read PacketSource::read(int max, int wait_ms, const std::function<void(const RawPacket&)>& fn,
                                      std::string& error) {
  fn_ = &fn;
  if (!live_) {
    // A file: pcap_next_ex tells a clean end from a cut or corrupt record.
    for (int i = 0; i < max; ++i) {
      pcap_pkthdr* h = nullptr;
      const u_char* data = nullptr;
      const int rc = pcap_next_ex(p_, &h, &data);
      if (rc == PCAP_ERROR_BREAK) return i ? Read::Packets : Read::End;
      if (rc != 1) {
        damaged_ = true;
        error = name_ + ": " + pcap_geterr(p_);
        return Read::Error;
      }
      on_packet(reinterpret_cast<unsigned char*>(this), h, data);
    }
    return Read::Packets;
  }
  int n = pcap_dispatch(p_, max, on_packet, reinterpret_cast<unsigned char*>(this));
  if (n == 0 && wait_ms > 0) {
    pollfd pfd{fd_, POLLIN, 0};
    if (poll(&pfd, 1, wait_ms) < 0 && errno != EINTR) {
      error = std::string("waiting for packets: ") + std::strerror(errno);
      return Read::Error;
    }
    n = pcap_dispatch(p_, max, on_packet, reinterpret_cast<unsigned char*>(this));
  }
  if (n == PCAP_ERROR_BREAK) return Read::Idle;
  if (n < 0) {
    error = std::string("capture on ") + name_ + " failed: " + pcap_geterr(p_);
    return Read::Error;
  }
  return n > 0 ? Read::Packets : Read::Idle;
}

SourceStats PacketSource::stats() const {
  SourceStats s;
  if (!live_) {
    s.received = read_;
    return s;
  }
  pcap_stat ps{};
  if (pcap_stats(p_, &ps) == 0) {
    s.received = ps.ps_recv;
    s.kernel_dropped = ps.ps_drop;
    s.if_dropped = ps.ps_ifdrop;
  }
  return s;
}

std::vector<std::string> list_interfaces(std::string& error) {
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  pcap_if_t* all = nullptr;
  std::vector<std::string> out;
  if (pcap_findalldevs(&all, errbuf) != 0) {
    error = errbuf;
    return out;
  }
  for (pcap_if_t* d = all; d; d = d->next) {
    std::string line = d->name;
    if (d->description) line += std::string(" - ") + d->description;
    if (d->flags & PCAP_IF_LOOPBACK) line += " (loopback)";
    out.push_back(line);
  }
  pcap_freealldevs(all);
  return out;
}

}  // namespace kwire
