// tests/tools/json_test_util.h — a small JSON reader for the tools' tests: enough to check the
// manifest against its schema and that stderr under --diagnostics json is one JSON document.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ferry::tooltest {

struct Json {
  enum class Kind { Null, Bool, Integer, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string text;  ///< String: the value; Integer, Number: the literal
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;  ///< in document order

  const Json *find(std::string_view key) const {
    for (const auto &[k, v] : members)
      if (k == key) return &v;
    return nullptr;
  }
  const Json &operator[](std::string_view key) const {
    static const Json null;
    const Json *v = find(key);
    return v ? *v : null;
  }
  bool isNull() const { return kind == Kind::Null; }
  int64_t integer() const { return std::stoll(text); }
};

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

  Json string() {
    Json v;
    v.kind = Json::Kind::String;
    if (i_ >= s_.size() || s_[i_] != '"') return fail("a string expected"), v;
    for (++i_; i_ < s_.size() && s_[i_] != '"'; ++i_) {
      if (static_cast<unsigned char>(s_[i_]) < 0x20) return fail("a raw control character"), v;
      if (s_[i_] != '\\') {
        v.text += s_[i_];
        continue;
      }
      if (++i_ >= s_.size()) break;
      switch (s_[i_]) {
        case 'n': v.text += '\n'; break;
        case 't': v.text += '\t'; break;
        case 'r': v.text += '\r'; break;
        case 'b': v.text += '\b'; break;
        case 'f': v.text += '\f'; break;
        case 'u':  // kept as written: the tests compare no escaped text
          v.text += "\\u" + std::string(s_.substr(i_ + 1, 4));
          i_ += 4;
          break;
        default: v.text += s_[i_];
      }
    }
    if (i_ >= s_.size()) return fail("unterminated string"), v;
    ++i_;
    return v;
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
