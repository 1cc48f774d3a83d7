// SASL for replayed sessions: the client side of PLAIN (RFC 4616),
// SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677; PBKDF2 and HMAC from
// libcrypto) and OAUTHBEARER with a given token (RFC 7628), as the bytes of
// SaslAuthenticate requests.
#pragma once

#include <string>
#include <string_view>

namespace kwire::replay {

// What --sasl-plain, --sasl-scram-256, --sasl-scram-512 and
// --sasl-oauthbearer give.
struct SaslLogin {
  std::string mechanism;       // PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER
  std::string user, password;  // PLAIN and SCRAM
  std::string token;           // OAUTHBEARER
};

// The option that gives credentials for `mechanism` ("--sasl-scram-256
// USER:PASSWORD"), or empty when kwire cannot log in with it.
std::string sasl_option_for(std::string_view mechanism);

class SaslClient {
 public:
  // `nonce`: the SCRAM client nonce (default: 24 random bytes, base64).
  explicit SaslClient(SaslLogin login, std::string nonce = {});

  const SaslLogin& login() const { return login_; }
  // The client's first message.
  std::string first();
  // The server's answer to the last message: `reply` is the next message and
  // `more` says whether one is due. False with `error` when the server's
  // message is malformed or does not prove it knows the password.
  bool answer(std::string_view server, std::string& reply, bool& more, std::string& error);
  // The server's last message was checked: the login is complete.
  bool done() const { return step_ == Step::Done; }

 private:
  enum class Step { First, ServerFirst, ServerFinal, Done } step_ = Step::First;
  SaslLogin login_;
  std::string nonce_, client_first_bare_, auth_message_, salted_;
};

}  // namespace kwire::replay
