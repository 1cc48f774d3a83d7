// The byte stream of one replay connection to the target: plain TCP, or TLS
// over it (OpenSSL's libssl) with `kwire replay --tls`. Non-blocking: every
// call says what it waits for, so the engine's poll() loop drives TLS
// handshakes and records as it drives plain sockets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace kwire::replay {

struct TlsClientOptions {
  bool enabled = false;        // --tls (any other --tls-* option implies it)
  std::string ca_file;         // --tls-ca: PEM trust anchors (default: the system's)
  std::string cert_file;       // --tls-cert: client certificate chain, PEM (mTLS)
  std::string key_file;        // --tls-key: its private key, PEM (default: in cert_file)
  std::string server_name;     // --tls-server-name: SNI and the name verified (default: the target host)
  bool insecure = false;       // --tls-insecure: the broker's certificate is not verified
};

// One SSL_CTX for the run: trust anchors, client certificate, TLS 1.2 at least.
class TlsContext {
 public:
  static std::unique_ptr<TlsContext> create(const TlsClientOptions& o, std::string& error);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  SSL_CTX* get() const { return ctx_; }
  const TlsClientOptions& options() const { return o_; }

 private:
  TlsContext() = default;
  SSL_CTX* ctx_ = nullptr;
  TlsClientOptions o_;
};

class Link {
 public:
  enum class Io : uint8_t {
    Done,       // the call did what it could; n says how many bytes
    WantRead,   // try again when the socket is readable
    WantWrite,  // try again when the socket is writable
    Closed,     // the peer closed the stream (cleanly, for TLS: close_notify or EOF)
    Failed,     // error says why
  };

  Link() = default;
  ~Link() { close(); }
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;
  Link(Link&& o) noexcept;
  Link& operator=(Link&& o) noexcept;

  // Takes a connected (or connecting) non-blocking socket. With `tls`, a
  // TLS client for `host` (SNI and certificate name, unless the context
  // names another).
  bool attach(int fd, const TlsContext* tls, const std::string& host, std::string& error);
  int fd() const { return fd_; }
  bool tls() const { return ssl_ != nullptr; }

  // TLS: drives the handshake (Done once it is complete). Plain TCP: Done.
  Io handshake(std::string& error);
  // What the finished TLS handshake agreed: "TLSv1.3 TLS_AES_256_GCM_SHA384".
  std::string describe() const;

  Io read(uint8_t* buf, size_t cap, size_t& n, std::string& error);
  // Writes what it can of [p, p+len): n bytes taken. A TLS write that waits
  // must be retried with the same bytes at p (more may follow them).
  Io write(const uint8_t* p, size_t len, size_t& n, std::string& error);
  // Bytes TLS has decrypted that read() has not returned yet.
  bool buffered() const;

  void close();

 private:
  int fd_ = -1;
  SSL* ssl_ = nullptr;
  size_t retry_len_ = 0;   // length of a TLS write that waits, to retry it as it was
};

}  // namespace kwire::replay
