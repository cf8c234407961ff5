// tests/tools/json_test_util.h — a small, strict JSON reader for the tools' tests: enough to check
// the manifest against its schema and that stderr under --diagnostics json is one JSON document,
// and strict where JSON is (UTF-8 only, no raw control characters, known escapes), so that what
// it accepts any JSON parser accepts.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/utf8_check.h"

namespace ferry::tooltest {

struct JsonMember;

struct Json {
  enum class Kind { Null, Bool, Integer, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string text;  ///< String: the value; Integer, Number: the literal
  std::vector<Json> items;
  // Not std::pair<std::string, Json>: a pair of an incomplete type is undefined behaviour, and
  // clang with libstdc++ 12 rejects it.
  std::vector<JsonMember> members;  ///< in document order

  const Json *find(std::string_view key) const;
  const Json &operator[](std::string_view key) const;
  bool isNull() const { return kind == Kind::Null; }
  int64_t integer() const { return std::stoll(text); }
};

struct JsonMember {
  std::string first;  ///< the key
  Json second;
};

// Defined where JsonMember is complete: clang instantiates vector's constexpr members at once.
inline const Json *Json::find(std::string_view key) const {
  for (const auto &[k, v] : members)
    if (k == key) return &v;
  return nullptr;
}
inline const Json &Json::operator[](std::string_view key) const {
  static const Json null;
  const Json *v = find(key);
  return v ? *v : null;
}

class JsonReader {
 public:
  explicit JsonReader(std::string_view s) : s_(s) {}

  /// The document, or an error message in `error`.
  Json read(std::string &error) {
    Json v = value();
    space();
    if (error_.empty() && i_ != s_.size()) fail("text after the document");
    error = error_;
    return v;
  }

 private:
  void fail(const std::string &why) {
    if (error_.empty()) error_ = why + " at offset " + std::to_string(i_);
  }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r'))
      ++i_;
  }
  bool eat(char c) {
    space();
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  bool word(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }

  Json value() {
    Json v;
    space();
    if (!error_.empty() || i_ >= s_.size()) return fail("a value expected"), v;
    const char c = s_[i_];
    if (c == '{') {
      v.kind = Json::Kind::Object;
      ++i_;
      if (eat('}')) return v;
      do {
        space();
        Json key = string();
        if (!eat(':')) return fail("':' expected"), v;
        v.members.emplace_back(key.text, value());
      } while (error_.empty() && eat(','));
      if (!eat('}')) fail("'}' expected");
    } else if (c == '[') {
      v.kind = Json::Kind::Array;
      ++i_;
      if (eat(']')) return v;
      do v.items.push_back(value());
      while (error_.empty() && eat(','));
      if (!eat(']')) fail("']' expected");
    } else if (c == '"') {
      v = string();
    } else if (word("null")) {
    } else if (word("true") || word("false")) {
      v.kind = Json::Kind::Bool;
      v.boolean = s_[i_ - 1] == 'e' && s_[i_ - 2] == 'u';
    } else {
      number(v);
    }
    return v;
  }

  // A string as RFC 8259 has it: UTF-8 (every sequence well-formed), no raw control character,
  // only the escapes it lists, \uXXXX with four hex digits and surrogates only in pairs. The
  // escapes are decoded, so `text` is UTF-8.
  Json string() {
    Json v;
    v.kind = Json::Kind::String;
    if (i_ >= s_.size() || s_[i_] != '"') return fail("a string expected"), v;
    for (++i_; i_ < s_.size() && s_[i_] != '"';) {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c < 0x20) return fail("a raw control character"), v;
      if (c != '\\') {
        const size_t n = testutil::utf8Length(s_, i_);
        if (n == 0) return fail("invalid UTF-8 (byte " + std::to_string(c) + ")"), v;
        v.text += s_.substr(i_, n);
        i_ += n;
        continue;
      }
      if (++i_ >= s_.size()) break;
      const char e = s_[i_++];
      switch (e) {
        case '"':
        case '\\':
        case '/': v.text += e; break;
        case 'n': v.text += '\n'; break;
        case 't': v.text += '\t'; break;
        case 'r': v.text += '\r'; break;
        case 'b': v.text += '\b'; break;
        case 'f': v.text += '\f'; break;
        case 'u': {
          long cp = hex4();
          if (cp < 0) return fail("\\u needs four hex digits"), v;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return fail("a lone low surrogate"), v;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (s_.substr(i_, 2) != "\\u") return fail("a lone high surrogate"), v;
            i_ += 2;
            const long low = hex4();
            if (low < 0xDC00 || low > 0xDFFF) return fail("a lone high surrogate"), v;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          appendUtf8(v.text, cp);
          break;
        }
        default: return fail(std::string("an unknown escape \\") + e), v;
      }
    }
    if (i_ >= s_.size()) return fail("unterminated string"), v;
    ++i_;
    return v;
  }

  // The four hex digits at i_ (consumed), or -1.
  long hex4() {
    if (i_ + 4 > s_.size()) return -1;
    long v = 0;
    for (size_t k = 0; k < 4; ++k) {
      const char h = s_[i_ + k];
      const int d = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
      if (d < 0) return -1;
      v = v * 16 + d;
    }
    i_ += 4;
    return v;
  }

  static void appendUtf8(std::string &out, long cp) {
    const auto byte = [&](long b) { out += static_cast<char>(b); };
    if (cp < 0x80) {
      byte(cp);
    } else if (cp < 0x800) {
      byte(0xC0 | (cp >> 6)), byte(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      byte(0xE0 | (cp >> 12)), byte(0x80 | ((cp >> 6) & 0x3F)), byte(0x80 | (cp & 0x3F));
    } else {
      byte(0xF0 | (cp >> 18)), byte(0x80 | ((cp >> 12) & 0x3F));
      byte(0x80 | ((cp >> 6) & 0x3F)), byte(0x80 | (cp & 0x3F));
    }
  }

  // The JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  void number(Json &v) {
    const size_t begin = i_;
    auto digits = [&] {
      size_t from = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      return i_ > from;
    };
    bool integer = true;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0')
      ++i_;
    else if (!digits())
      return fail("a value expected");
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_, integer = false;
      if (!digits()) return fail("digits expected after '.'");
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_, integer = false;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!digits()) return fail("digits expected in the exponent");
    }
    v.kind = integer ? Json::Kind::Integer : Json::Kind::Number;
    v.text = std::string(s_.substr(begin, i_ - begin));
    v.number = std::stod(v.text);
  }

  std::string_view s_;
  size_t i_ = 0;
  std::string error_;
};

/// `text` as JSON; a syntax error fails the current test (see `error` of JsonReader::read).
inline Json parseJson(const std::string &text) {
  std::string error;
  Json v = JsonReader(text).read(error);
  EXPECT_EQ(error, "") << text;
  return v;
}

}  // namespace ferry::tooltest
