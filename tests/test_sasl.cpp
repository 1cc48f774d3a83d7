// The SASL client of kwire replay against published exchanges: RFC 7677's
// SCRAM-SHA-256 example (section 3), RFC 4616 PLAIN and RFC 7628 OAUTHBEARER.
#include <gtest/gtest.h>

#include "replay/sasl.hpp"

namespace kwire::replay {
namespace {

TEST(Sasl, ScramSha256MatchesRfc7677) {
  SaslClient c({"SCRAM-SHA-256", "user", "pencil", ""}, "rOprNGfwEbeRWgbNEkqO");
  EXPECT_EQ(c.first(), "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
  std::string reply, error;
  bool more = false;
  ASSERT_TRUE(c.answer("r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", reply,
                       more, error))
      << error;
  EXPECT_TRUE(more);
  EXPECT_EQ(reply,
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
  ASSERT_TRUE(c.answer("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=", reply, more, error)) << error;
  EXPECT_FALSE(more);
  EXPECT_TRUE(c.done());
}

TEST(Sasl, ScramRejectsAForgedServerSignature) {
  SaslClient c({"SCRAM-SHA-256", "user", "pencil", ""}, "rOprNGfwEbeRWgbNEkqO");
  c.first();
  std::string reply, error;
  bool more = false;
  ASSERT_TRUE(c.answer("r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", reply,
                       more, error));
  EXPECT_FALSE(c.answer("v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=", reply, more, error));
  EXPECT_NE(error.find("does not verify"), std::string::npos) << error;
  EXPECT_FALSE(c.done());
}

TEST(Sasl, ScramRejectsBadServerFirstMessages) {
  std::string reply, error;
  bool more = false;
  {
    SaslClient c({"SCRAM-SHA-512", "u", "p", ""}, "abc");
    c.first();
    EXPECT_FALSE(c.answer("r=xyz123,s=QUJD,i=4096", reply, more, error));  // not the client's nonce
    EXPECT_NE(error.find("nonce"), std::string::npos) << error;
  }
  {
    SaslClient c({"SCRAM-SHA-512", "u", "p", ""}, "abc");
    c.first();
    EXPECT_FALSE(c.answer("r=abcdef,s=QUJD,i=1000", reply, more, error));  // too few iterations
    EXPECT_NE(error.find("1000"), std::string::npos) << error;
  }
  {
    SaslClient c({"SCRAM-SHA-512", "u", "p", ""}, "abc");
    c.first();
    EXPECT_FALSE(c.answer("e=invalid-proof", reply, more, error));
  }
}

TEST(Sasl, ScramEscapesUserNames) {
  SaslClient c({"SCRAM-SHA-256", "a=b,c", "p", ""}, "n0nce");
  EXPECT_EQ(c.first(), "n,,n=a=3Db=2Cc,r=n0nce");
}

TEST(Sasl, PlainAndOauthBearerMessages) {
  SaslClient p({"PLAIN", "alice", "alice-secret", ""});
  EXPECT_EQ(p.first(), std::string("\0alice\0alice-secret", 19));
  SaslClient o({"OAUTHBEARER", "", "", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9."});
  EXPECT_EQ(o.first(), "n,,\x01" "auth=Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.\x01\x01");
  std::string reply, error;
  bool more = true;
  EXPECT_FALSE(o.answer("{\"status\":\"invalid_token\"}", reply, more, error));
  EXPECT_NE(error.find("invalid_token"), std::string::npos);
  EXPECT_EQ(sasl_option_for("SCRAM-SHA-512"), "--sasl-scram-512 USER:PASSWORD");
  EXPECT_EQ(sasl_option_for("GSSAPI"), "");
}

}  // namespace
}  // namespace kwire::replay
