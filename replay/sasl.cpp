#include "replay/sasl.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdint>
#include <vector>

namespace kwire::replay {

namespace {

std::string base64(std::string_view in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

bool unbase64(std::string_view in, std::string& out) {
  if (in.size() % 4 != 0) return false;
  out.assign(in.size() / 4 * 3 + 1, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  if (n < 0) return false;
  size_t len = static_cast<size_t>(n);
  // EVP_DecodeBlock counts the padding as zero bytes.
  for (size_t i = in.size(); i > 0 && in[i - 1] == '=' && len > 0; --i) --len;
  out.resize(len);
  return true;
}

const EVP_MD* digest_of(std::string_view mechanism) {
  return mechanism == "SCRAM-SHA-512" ? EVP_sha512() : EVP_sha256();
}

std::string hmac(const EVP_MD* md, std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(md, key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()), data.size(),
       out, &n);
  return std::string(reinterpret_cast<char*>(out), n);
}

std::string hash(const EVP_MD* md, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), out, &n, md, nullptr);
  return std::string(reinterpret_cast<char*>(out), n);
}

// RFC 5802 saslname: "=" and "," escaped.
std::string saslname(std::string_view user) {
  std::string out;
  for (char c : user) {
    if (c == '=') out += "=3D";
    else if (c == ',') out += "=2C";
    else out += c;
  }
  return out;
}

// The value of attribute `key` ("r", "s", "i", "v", "e") in a SCRAM message.
bool attribute(std::string_view msg, char key, std::string_view& value) {
  size_t pos = 0;
  while (pos <= msg.size()) {
    size_t end = msg.find(',', pos);
    if (end == std::string_view::npos) end = msg.size();
    std::string_view a = msg.substr(pos, end - pos);
    if (a.size() >= 2 && a[0] == key && a[1] == '=') { value = a.substr(2); return true; }
    pos = end + 1;
  }
  return false;
}

}  // namespace

std::string sasl_option_for(std::string_view mechanism) {
  if (mechanism == "PLAIN") return "--sasl-plain USER:PASSWORD";
  if (mechanism == "SCRAM-SHA-256") return "--sasl-scram-256 USER:PASSWORD";
  if (mechanism == "SCRAM-SHA-512") return "--sasl-scram-512 USER:PASSWORD";
  if (mechanism == "OAUTHBEARER") return "--sasl-oauthbearer TOKEN";
  return {};
}

SaslClient::SaslClient(SaslLogin login, std::string nonce) : login_(std::move(login)), nonce_(std::move(nonce)) {
  if (nonce_.empty() && login_.mechanism.starts_with("SCRAM-")) {
    unsigned char r[24];
    RAND_bytes(r, sizeof r);
    nonce_ = base64(std::string_view(reinterpret_cast<char*>(r), sizeof r));
  }
}

std::string SaslClient::first() {
  if (login_.mechanism == "PLAIN") {
    step_ = Step::ServerFinal;
    return std::string(1, '\0') + login_.user + std::string(1, '\0') + login_.password;
  }
  if (login_.mechanism == "OAUTHBEARER") {
    step_ = Step::ServerFinal;
    return "n,,\x01" "auth=Bearer " + login_.token + "\x01\x01";
  }
  client_first_bare_ = "n=" + saslname(login_.user) + ",r=" + nonce_;
  step_ = Step::ServerFirst;
  return "n,," + client_first_bare_;
}

bool SaslClient::answer(std::string_view server, std::string& reply, bool& more, std::string& error) {
  reply.clear();
  more = false;
  const EVP_MD* md = digest_of(login_.mechanism);
  if (step_ == Step::ServerFirst) {
    std::string_view r, s, i;
    if (!attribute(server, 'r', r) || !attribute(server, 's', s) || !attribute(server, 'i', i)) {
      error = "the broker's first SCRAM message lacks r=, s= or i=";
      return false;
    }
    if (!r.starts_with(nonce_) || r.size() == nonce_.size()) {
      error = "the broker's SCRAM nonce does not extend the client's";
      return false;
    }
    std::string salt;
    if (!unbase64(s, salt) || salt.empty()) { error = "the broker's SCRAM salt is not base64"; return false; }
    int iterations = 0;
    for (char c : i) {
      if (c < '0' || c > '9' || iterations > 100000000) { error = "the broker's SCRAM iteration count is not a number"; return false; }
      iterations = iterations * 10 + (c - '0');
    }
    if (iterations < 4096) { error = "the broker asks for " + std::to_string(iterations) + " SCRAM iterations, fewer than 4096"; return false; }
    salted_.assign(static_cast<size_t>(EVP_MD_get_size(md)), '\0');
    PKCS5_PBKDF2_HMAC(login_.password.data(), static_cast<int>(login_.password.size()),
                      reinterpret_cast<const unsigned char*>(salt.data()), static_cast<int>(salt.size()), iterations, md,
                      static_cast<int>(salted_.size()), reinterpret_cast<unsigned char*>(salted_.data()));
    const std::string without_proof = "c=biws,r=" + std::string(r);
    auth_message_ = client_first_bare_ + "," + std::string(server) + "," + without_proof;
    const std::string client_key = hmac(md, salted_, "Client Key");
    const std::string signature = hmac(md, hash(md, client_key), auth_message_);
    std::string proof = client_key;
    for (size_t k = 0; k < proof.size(); ++k) proof[k] = static_cast<char>(proof[k] ^ signature[k]);
    reply = without_proof + ",p=" + base64(proof);
    more = true;
    step_ = Step::ServerFinal;
    return true;
  }
  if (step_ == Step::ServerFinal) {
    if (login_.mechanism == "PLAIN") { step_ = Step::Done; return true; }
    if (login_.mechanism == "OAUTHBEARER") {
      if (server.empty()) { step_ = Step::Done; return true; }
      // An error challenge (RFC 7628 JSON status): the login has failed.
      error = "the broker rejected the token: " + std::string(server);
      return false;
    }
    std::string_view v, e;
    if (attribute(server, 'e', e)) { error = "the broker failed the SCRAM login: " + std::string(e); return false; }
    if (!attribute(server, 'v', v)) { error = "the broker's final SCRAM message lacks v="; return false; }
    const std::string expected = base64(hmac(md, hmac(md, salted_, "Server Key"), auth_message_));
    if (v != expected) {
      error = "the broker's SCRAM signature does not verify: it does not know the password";
      return false;
    }
    step_ = Step::Done;
    return true;
  }
  error = "a SASL message after the login was complete";
  return false;
}

}  // namespace kwire::replay
