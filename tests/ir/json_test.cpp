// tests/ir/json_test.cpp — jsonString: escapes, valid UTF-8 kept, every byte that is not UTF-8
// written as \ufffd, so that the literal is valid JSON whatever the bytes; and the strict UTF-8
// check the tests use as their oracle (tests/common/utf8_check.h) is strict.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "common/utf8_check.h"
#include "ir/json.h"
#include "ir/utf8.h"

namespace ferry {
namespace {

using testutil::invalidUtf8;
using testutil::unprintable;

// The product's one UTF-8 rule (ir/utf8.h, used by the lexer, jsonString and the tools' escaping)
// agrees with the independent decoder of the tests on every one- and two-byte string, every lead
// byte with every second byte of a three- or four-byte sequence (where all its special cases
// lie), and cut sequences.
TEST(Utf8, SequenceLengthsAgreeWithADecoder) {
  int checked = 0;
  auto agree = [&](const std::string &s) {
    ++checked;
    EXPECT_EQ(utf8SequenceLength(s, 0), testutil::utf8Length(s, 0)) << ::testing::PrintToString(s);
  };
  for (int a = 0; a < 256; ++a) {
    agree(std::string(1, static_cast<char>(a)));
    for (int b = 0; b < 256; ++b) {
      const std::string two{static_cast<char>(a), static_cast<char>(b)};
      agree(two);
      for (const char *tail : {"\x80", "\xBF", "\x80\x80", "\xBF\xBF", "\x41", "\x80\x41"})
        agree(two + tail);
    }
  }
  EXPECT_EQ(checked, 256 + 256 * 256 * 7);
}

TEST(JsonString, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(jsonString(""), "\"\"");
  EXPECT_EQ(jsonString("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(jsonString("\n\t\r"), "\"\\n\\t\\r\"");
  EXPECT_EQ(jsonString(std::string("\0\x01\x1f", 3)), "\"\\u0000\\u0001\\u001f\"");
  EXPECT_EQ(jsonString("\x7f /"), "\"\x7f /\"");  // DEL and '/' need no escape
}

TEST(JsonString, KeepsValidUtf8) {
  for (const char *s : {"caf\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\xC2\x80",
                        "\xEF\xBF\xBF", "\xF4\x8F\xBF\xBF", "\xED\x9F\xBF"})
    EXPECT_EQ(jsonString(s), "\"" + std::string(s) + "\"") << s;
}

// One \ufffd per byte that is not part of a valid sequence; the valid bytes around it stay.
TEST(JsonString, WritesEachByteThatIsNotUtf8AsTheReplacementCharacter) {
  const std::pair<std::string, std::string> cases[] = {
      {"bad\xff", "bad\\ufffd"},
      {"\x80", "\\ufffd"},                                   // a stray continuation byte
      {"\xC0\x80", "\\ufffd\\ufffd"},                        // overlong U+0000
      {"\xC1\xBF", "\\ufffd\\ufffd"},                        // overlong U+007F
      {"\xE0\x80\xAF", "\\ufffd\\ufffd\\ufffd"},             // overlong '/'
      {"\xF0\x80\x80\xAF", "\\ufffd\\ufffd\\ufffd\\ufffd"},  // overlong '/'
      {"\xED\xA0\x80", "\\ufffd\\ufffd\\ufffd"},             // surrogate U+D800
      {"\xED\xBF\xBF", "\\ufffd\\ufffd\\ufffd"},             // surrogate U+DFFF
      {"\xF4\x90\x80\x80", "\\ufffd\\ufffd\\ufffd\\ufffd"},  // U+110000
      {"\xF5\x80\x80\x80", "\\ufffd\\ufffd\\ufffd\\ufffd"},  // no such lead byte
      {"\xE2\x82", "\\ufffd\\ufffd"},                        // cut short at the end
      {"\xE2\x82x", "\\ufffd\\ufffdx"},                      // cut short before ASCII
      {"a\xC3\xA9\xFE\xC3\xA9", "a\xC3\xA9\\ufffd\xC3\xA9"},
      {"\xC3\"", "\\ufffd\\\""},  // a cut sequence does not swallow the quote
  };
  for (const auto &[bytes, escaped] : cases)
    EXPECT_EQ(jsonString(bytes), "\"" + escaped + "\"") << testing::PrintToString(bytes);
}

// Whatever the bytes, the literal is valid UTF-8 with no raw control character, one string.
TEST(JsonString, AnyBytesGiveValidJson) {
  std::mt19937 random(7);
  for (int round = 0; round < 2000; ++round) {
    std::string bytes(random() % 24, '\0');
    for (char &c : bytes) c = static_cast<char>(random() % 256);
    const std::string literal = jsonString(bytes);
    ASSERT_EQ(invalidUtf8(literal), "") << testing::PrintToString(bytes);
    for (char c : literal) ASSERT_GE(static_cast<unsigned char>(c), 0x20u) << literal;
    ASSERT_TRUE(literal.size() >= 2 && literal.front() == '"' && literal.back() == '"');
    // Every quote inside is escaped: a backslash run of odd length before it.
    for (size_t i = 1; i + 1 < literal.size(); ++i) {
      if (literal[i] != '"') continue;
      size_t slashes = 0;
      while (literal[i - 1 - slashes] == '\\') ++slashes;
      ASSERT_EQ(slashes % 2, 1u) << literal;
    }
  }
}

// The oracle: overlong forms and surrogates are invalid, not merely the lead bytes C0, C1 and
// F5..FF (the check these tests replaced let E0 80 80 and ED A0 80 through).
TEST(Utf8Check, IsStrict) {
  for (const char *bad :
       {"\xC0\x80", "\xE0\x80\x80", "\xE0\x9F\xBF", "\xF0\x8F\xBF\xBF", "\xED\xA0\x80",
        "\xED\xBF\xBF", "\xF4\x90\x80\x80", "\xF8\x88\x80\x80", "\x80", "\xE2\x82", "\xFF"}) {
    EXPECT_NE(invalidUtf8(bad), "") << testing::PrintToString(std::string(bad));
    EXPECT_NE(unprintable(bad), "") << testing::PrintToString(std::string(bad));
  }
  for (const char *good : {"a", "\xC2\x80", "\xE0\xA0\x80", "\xED\x9F\xBF", "\xEE\x80\x80",
                           "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF", "tab\tand\nnewline"}) {
    EXPECT_EQ(invalidUtf8(good), "") << good;
    EXPECT_EQ(unprintable(good), "") << good;
  }
  EXPECT_NE(unprintable("\x1b[1m"), "");
  EXPECT_NE(unprintable("\x7f"), "");
  EXPECT_EQ(invalidUtf8("\x1b\x7f"), "");  // control bytes are UTF-8, just not printable
}

}  // namespace
}  // namespace ferry
