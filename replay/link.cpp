#include "replay/link.hpp"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace kwire::replay {

namespace {

// OpenSSL's error queue as one line (emptied).
std::string ssl_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

// OpenSSL's errors, and why when the broker refused for want of a client
// certificate (TLS 1.3 tells the client only after its handshake is over).
std::string ssl_failure(SSL* ssl) {
  std::string d = ssl_errors();
  if (ssl && !SSL_get_certificate(ssl) &&
      (d.find("alert bad certificate") != std::string::npos || d.find("alert certificate required") != std::string::npos))
    d += " (the broker wants a client certificate: give --tls-cert FILE)";
  return d;
}

bool is_ip_literal(const std::string& host) {
  in6_addr a6;
  in_addr a4;
  return inet_pton(AF_INET, host.c_str(), &a4) == 1 || inet_pton(AF_INET6, host.c_str(), &a6) == 1;
}

}  // namespace

std::unique_ptr<TlsContext> TlsContext::create(const TlsClientOptions& o, std::string& error) {
  std::unique_ptr<TlsContext> t(new TlsContext);
  t->o_ = o;
  ERR_clear_error();
  t->ctx_ = SSL_CTX_new(TLS_client_method());
  if (!t->ctx_) { error = "cannot make a TLS context: " + ssl_errors(); return nullptr; }
  SSL_CTX_set_min_proto_version(t->ctx_, TLS1_2_VERSION);
  SSL_CTX_set_mode(t->ctx_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (!o.ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(t->ctx_, o.ca_file.c_str(), nullptr) != 1) {
      error = "--tls-ca " + o.ca_file + ": no PEM certificate could be read (" + ssl_errors() + ")";
      return nullptr;
    }
  } else if (SSL_CTX_set_default_verify_paths(t->ctx_) != 1) {
    error = "the system's trust anchors cannot be read (" + ssl_errors() + "): give --tls-ca FILE";
    return nullptr;
  }
  SSL_CTX_set_verify(t->ctx_, o.insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, nullptr);
  if (!o.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(t->ctx_, o.cert_file.c_str()) != 1) {
      error = "--tls-cert " + o.cert_file + ": no PEM certificate chain could be read (" + ssl_errors() + ")";
      return nullptr;
    }
    const std::string& key = o.key_file.empty() ? o.cert_file : o.key_file;
    if (SSL_CTX_use_PrivateKey_file(t->ctx_, key.c_str(), SSL_FILETYPE_PEM) != 1) {
      error = (o.key_file.empty() ? "--tls-cert " : "--tls-key ") + key + ": no PEM private key could be read (" +
              ssl_errors() + ")";
      return nullptr;
    }
    if (SSL_CTX_check_private_key(t->ctx_) != 1) {
      error = "--tls-key " + key + " is not the key of the certificate in --tls-cert " + o.cert_file;
      return nullptr;
    }
  } else if (!o.key_file.empty()) {
    error = "--tls-key needs --tls-cert (the client certificate it belongs to)";
    return nullptr;
  }
  return t;
}

TlsContext::~TlsContext() {
  if (ctx_) SSL_CTX_free(ctx_);
}

Link::Link(Link&& o) noexcept { *this = std::move(o); }

Link& Link::operator=(Link&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = std::exchange(o.fd_, -1);
    ssl_ = std::exchange(o.ssl_, nullptr);
    retry_len_ = std::exchange(o.retry_len_, 0);
  }
  return *this;
}

bool Link::attach(int fd, const TlsContext* tls, const std::string& host, std::string& error) {
  close();
  fd_ = fd;
  if (!tls) return true;
  ERR_clear_error();
  ssl_ = SSL_new(tls->get());
  if (!ssl_ || SSL_set_fd(ssl_, fd) != 1) { error = "TLS: " + ssl_errors(); close(); return false; }
  const std::string& name = tls->options().server_name.empty() ? host : tls->options().server_name;
  const bool ip = is_ip_literal(name);
  // SNI carries host names only (RFC 6066), never an address.
  if (!ip && !name.empty() && SSL_set_tlsext_host_name(ssl_, name.c_str()) != 1) {
    error = "TLS: cannot set the server name " + name + ": " + ssl_errors();
    close();
    return false;
  }
  if (!tls->options().insecure && !name.empty()) {
    X509_VERIFY_PARAM* p = SSL_get0_param(ssl_);
    const int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(p, name.c_str()) : X509_VERIFY_PARAM_set1_host(p, name.c_str(), 0);
    if (ok != 1) { error = "TLS: cannot verify against the name " + name; close(); return false; }
  }
  SSL_set_connect_state(ssl_);
  return true;
}

Link::Io Link::handshake(std::string& error) {
  if (!ssl_) return Io::Done;
  ERR_clear_error();
  const int rc = SSL_do_handshake(ssl_);
  if (rc == 1) return Io::Done;
  const int e = SSL_get_error(ssl_, rc);
  if (e == SSL_ERROR_WANT_READ) return Io::WantRead;
  if (e == SSL_ERROR_WANT_WRITE) return Io::WantWrite;
  const long verify = SSL_get_verify_result(ssl_);
  if (verify != X509_V_OK) {
    error = std::string("TLS handshake failed: the broker's certificate does not verify (") +
            X509_verify_cert_error_string(verify) + "); give its CA with --tls-ca FILE, the name it carries with "
            "--tls-server-name NAME, or skip the check with --tls-insecure";
    return Io::Failed;
  }
  std::string detail = ssl_failure(ssl_);
  if (detail.empty()) detail = e == SSL_ERROR_SYSCALL ? (errno ? strerror(errno) : "the broker closed the connection") : "error " + std::to_string(e);
  error = "TLS handshake failed: " + detail + " (is it a TLS listener?)";
  return Io::Failed;
}

std::string Link::describe() const {
  if (!ssl_) return "plaintext";
  const SSL_CIPHER* c = SSL_get_current_cipher(ssl_);
  return std::string(SSL_get_version(ssl_)) + " " + (c ? SSL_CIPHER_get_name(c) : "?");
}

Link::Io Link::read(uint8_t* buf, size_t cap, size_t& n, std::string& error) {
  n = 0;
  if (!ssl_) {
    const ssize_t r = recv(fd_, buf, cap, 0);
    if (r > 0) { n = static_cast<size_t>(r); return Io::Done; }
    if (r == 0) return Io::Closed;
    if (errno == EAGAIN || errno == EINTR) return Io::WantRead;
    error = std::string("connection error: ") + strerror(errno);
    return Io::Failed;
  }
  ERR_clear_error();
  const int rc = SSL_read_ex(ssl_, buf, cap, &n);
  if (rc == 1) return Io::Done;
  switch (SSL_get_error(ssl_, rc)) {
    case SSL_ERROR_WANT_READ: return Io::WantRead;
    case SSL_ERROR_WANT_WRITE: return Io::WantWrite;
    case SSL_ERROR_ZERO_RETURN: return Io::Closed;
    case SSL_ERROR_SYSCALL:
      if (errno == 0 || errno == ECONNRESET) return Io::Closed;
      error = std::string("connection error: ") + strerror(errno);
      return Io::Failed;
    default: {
      std::string d = ssl_failure(ssl_);
      // A peer that closes without close_notify, as Kafka brokers do.
      if (d.find("unexpected eof") != std::string::npos) return Io::Closed;
      error = "TLS error: " + d;
      return Io::Failed;
    }
  }
}

Link::Io Link::write(const uint8_t* p, size_t len, size_t& n, std::string& error) {
  n = 0;
  if (len == 0) return Io::Done;
  if (!ssl_) {
    const ssize_t r = send(fd_, p, len, MSG_NOSIGNAL);
    if (r >= 0) { n = static_cast<size_t>(r); return Io::Done; }
    if (errno == EAGAIN || errno == EINTR) return Io::WantWrite;
    error = std::string("send failed: ") + strerror(errno);
    return Io::Failed;
  }
  // A write that waited is retried with the length it had.
  const size_t want = retry_len_ ? std::min(retry_len_, len) : len;
  ERR_clear_error();
  const int rc = SSL_write_ex(ssl_, p, want, &n);
  if (rc == 1) { retry_len_ = 0; return Io::Done; }
  const int e = SSL_get_error(ssl_, rc);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    retry_len_ = want;
    return e == SSL_ERROR_WANT_READ ? Io::WantRead : Io::WantWrite;
  }
  std::string d = ssl_failure(ssl_);
  error = "TLS write failed: " + (d.empty() ? std::string(strerror(errno)) : d);
  return Io::Failed;
}

bool Link::buffered() const { return ssl_ && SSL_pending(ssl_) > 0; }

void Link::close() {
  if (ssl_) {
    // close_notify if it goes out at once; the socket closes either way.
    if (SSL_is_init_finished(ssl_)) SSL_shutdown(ssl_);
    SSL_free(ssl_);
    ssl_ = nullptr;
  }
  if (fd_ >= 0) { ::close(fd_); fd_ = -1; }
  retry_len_ = 0;
}

}  // namespace kwire::replay
