// The stream layer assembled for reading a capture file: libpcap (or a
// memory map of a classic pcap) -> link-layer and IP/TCP parsing and TCP
// reassembly (recorder/, PacketPipeline) -> TLS record decryption with the
// key logs named and the file's own Decryption Secrets Blocks (tls/) -> the
// caller's StreamSink, usually the Kafka sessions (dissector/protocol/).
// Assembled here, above recorder/ and tls/, so that the stream layer below
// knows nothing of the layers stacked on it.
#pragma once

#include <string>

#include "recorder/capture.hpp"

namespace kwire {

// Reads a pcap or pcapng file ("-": standard input) and feeds `sink`.
// Returns false and fills `error` only when the file cannot be opened at all; problems inside the
// file (cut mid-packet, bad headers) go to sink.on_error and reading stops or
// continues as appropriate, keeping everything delivered so far;
// stats.file_damaged says the file itself ended in a bad record.
bool read_capture_file(const std::string& path, const CaptureOptions& opts, StreamSink& sink,
                       CaptureStats& stats, std::string& error);

}  // namespace kwire
