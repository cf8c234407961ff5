// ir/lexer.cpp — tokens of one `.fy` line; bytes the format does not know are errors, never UB.
#include "ir/lexer.h"

#include <charconv>
#include <cstdint>
#include <limits>

#include "ir/utf8.h"

namespace ferry::fy {

namespace {

bool isAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isIdentStart(char c) { return isAlpha(c) || c == '_'; }
bool isIdentChar(char c) { return isAlpha(c) || isDigit(c) || c == '_' || c == '.'; }
int hexDigit(char c) {
  if (isDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class LineLexer {
 public:
  explicit LineLexer(std::string_view line) : s_(line) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    while (true) {
      while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
      if (i_ >= s_.size()) {
        out.push_back(make(Tok::End, i_, i_));
        return out;
      }
      Token t = next();
      bool stop = t.kind == Tok::Error || t.kind == Tok::Comment;
      out.push_back(std::move(t));
      if (stop) {
        if (out.back().kind == Tok::Comment) out.push_back(make(Tok::End, s_.size(), s_.size()));
        return out;
      }
    }
  }

 private:
  Token make(Tok kind, size_t begin, size_t end) const {
    Token t;
    t.kind = kind;
    t.text = s_.substr(begin, end - begin);
    t.col = column(begin);
    return t;
  }
  static int column(size_t at) {
    // Columns are ints in Location; a line longer than that is still lexed, its columns clamp.
    return at >= static_cast<size_t>(INT32_MAX) ? INT32_MAX : static_cast<int>(at) + 1;
  }
  Token error(size_t at, std::string message) const {
    Token t = make(Tok::Error, at, at);
    t.str = std::move(message);
    return t;
  }

  Token next() {
    size_t start = i_;
    char c = s_[i_];
    auto single = [&](Tok k) {
      ++i_;
      return make(k, start, i_);
    };
    switch (c) {
      case '{': return single(Tok::LBrace);
      case '}': return single(Tok::RBrace);
      case '(': return single(Tok::LParen);
      case ')': return single(Tok::RParen);
      case '[': return single(Tok::LBracket);
      case ']': return single(Tok::RBracket);
      case ',': return single(Tok::Comma);
      case ':': return single(Tok::Colon);
      case '=': return single(Tok::Equal);
      case '@': return single(Tok::At);
      case '#': {
        i_ = s_.size();
        return make(Tok::Comment, start + 1, s_.size());
      }
      case '"': return string();
      case '%': {
        ++i_;
        if (i_ < s_.size() && s_[i_] == '"') {
          // %"onnx::MatMul_84": a name that is not letters, digits, '_' and '.' (as imported
          // models name their values), quoted and escaped as a string is.
          Token quoted = string();
          if (quoted.kind == Tok::Error) return quoted;
          if (quoted.str.empty())
            return error(start, "expected a value name in %\"...\", found \"\"");
          Token t = make(Tok::Value, start + 1, i_);
          t.str = std::move(quoted.str);
          t.col = column(start);
          return t;
        }
        while (i_ < s_.size() && isIdentChar(s_[i_])) ++i_;
        if (i_ == start + 1)
          return error(start, "expected a value name after '%' (letters, digits, '_' and '.', "
                              "or any text quoted: %\"a::b\")");
        Token t = make(Tok::Value, start + 1, i_);
        t.str = std::string(t.text);
        t.col = column(start);  // the '%'
        return t;
      }
      default: break;
    }
    if (isIdentStart(c)) {
      while (i_ < s_.size() && isIdentChar(s_[i_])) ++i_;
      return make(Tok::Ident, start, i_);
    }
    if (startsNumber()) return number();
    size_t len = utf8SequenceLength(s_, i_);
    if (len == 0) return error(start, "unexpected " + describeChar(c) + " (not valid UTF-8)");
    if (len > 1)
      return error(start, "unexpected character '" + std::string(s_.substr(i_, len)) + "'");
    return error(start, "unexpected character " + describeChar(c));
  }

  bool startsNumber() const {
    auto at = [&](size_t k) { return i_ + k < s_.size() ? s_[i_ + k] : '\0'; };
    size_t k = (at(0) == '+' || at(0) == '-') ? 1 : 0;
    if (isDigit(at(k)) || (at(k) == '.' && isDigit(at(k + 1)))) return true;
    if (k == 1) {
      std::string_view rest = s_.substr(i_ + 1);
      for (std::string_view w : {"inf", "nan"})
        if (rest.starts_with(w) && (rest.size() == 3 || !isIdentChar(rest[3]))) return true;
    }
    return false;
  }

  Token number() {
    size_t start = i_;
    if (s_[i_] == '+' || s_[i_] == '-') ++i_;
    size_t body = i_;
    while (i_ < s_.size()) {
      char c = s_[i_];
      bool exponentSign =
          (c == '+' || c == '-') && i_ > body && (s_[i_ - 1] == 'e' || s_[i_ - 1] == 'E');
      if (!isIdentChar(c) && !exponentSign) break;
      ++i_;
    }
    std::string_view digits = s_.substr(body, i_ - body);
    if (digits == "inf" || digits == "nan") return make(Tok::Float, start, i_);
    bool allDigits = !digits.empty();
    for (char c : digits) allDigits = allDigits && isDigit(c);
    if (allDigits) return make(Tok::Int, start, i_);
    double v = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    // Out of range still is a well-formed float; the parser reports the range where it is used.
    if (end == digits.data() + digits.size() &&
        (ec == std::errc() || ec == std::errc::result_out_of_range) && !isAlpha(digits[0]))
      return make(Tok::Float, start, i_);
    return error(start, "invalid number '" + std::string(s_.substr(start, i_ - start)) +
                            "' (numbers are written 2, -1, 0.5, 1e-3, inf or nan)");
  }

  Token string() {
    size_t start = i_++;
    std::string value;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_];
      if (c == '\\') {
        char e = i_ + 1 < s_.size() ? s_[i_ + 1] : '\0';
        switch (e) {
          case '"': value += '"'; break;
          case '\\': value += '\\'; break;
          case 'n': value += '\n'; break;
          case 't': value += '\t'; break;
          case 'r': value += '\r'; break;
          case 'x': {
            int hi = i_ + 2 < s_.size() ? hexDigit(s_[i_ + 2]) : -1;
            int lo = i_ + 3 < s_.size() ? hexDigit(s_[i_ + 3]) : -1;
            if (hi < 0 || lo < 0) return error(i_, "expected two hex digits after \\x in string");
            value += static_cast<char>(hi * 16 + lo);
            i_ += 4;
            continue;
          }
          default:
            return error(i_,
                         "unknown escape in string (expected \\\", \\\\, \\n, \\t, \\r or \\xHH)");
        }
        i_ += 2;
        continue;
      }
      auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u == 0x7f)
        return error(i_, "control character " + describeChar(c) + " in string (write \\n or \\t)");
      size_t len = utf8SequenceLength(s_, i_);
      if (len == 0) return error(i_, "invalid UTF-8 " + describeChar(c) + " in string");
      value.append(s_.substr(i_, len));
      i_ += len;
    }
    if (i_ >= s_.size()) return error(start, "unterminated string (missing closing '\"')");
    ++i_;
    Token t = make(Tok::String, start, i_);
    t.str = std::move(value);
    return t;
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

std::vector<Token> tokenizeLine(std::string_view line) { return LineLexer(line).run(); }

std::optional<int64_t> intValue(std::string_view text) {
  if (text.starts_with('+')) text.remove_prefix(1);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

std::optional<double> floatValue(std::string_view text) {
  bool negative = text.starts_with('-');
  if (text.starts_with('+') || negative) text.remove_prefix(1);
  double v = 0;
  if (text == "inf") {
    v = std::numeric_limits<double>::infinity();
  } else if (text == "nan") {
    v = std::numeric_limits<double>::quiet_NaN();
  } else {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  }
  return negative ? -v : v;
}

// `model.onnx: node 'Gemm_3' (#12, Gemm)` or `model.onnx: node #12 (Gemm)`, as Location::str()
// writes an imported node: the file, then the node, whose `#N` gives the line N + 1.
std::optional<Location> importedLocation(std::string_view text) {
  constexpr std::string_view kNode = ": node ";
  const size_t at = text.find(kNode);
  if (at == std::string_view::npos || at == 0) return std::nullopt;
  const std::string_view file = text.substr(0, at), node = text.substr(at + 2);
  for (char c : file)
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return std::nullopt;
  for (char c : node)
    if (static_cast<unsigned char>(c) < ' ' || c == 0x7f) return std::nullopt;
  const size_t hash =
      node.rfind("(#") != std::string_view::npos ? node.rfind("(#") + 2 : node.find('#') + 1;
  if (hash == 0 || hash >= node.size()) return std::nullopt;
  int64_t index = 0;
  size_t i = hash;
  for (; i < node.size() && isDigit(node[i]) && index < INT32_MAX; ++i)
    index = index * 10 + (node[i] - '0');
  if (i == hash || index >= INT32_MAX) return std::nullopt;
  return Location{std::string(file), static_cast<int>(index + 1), 0, std::string(node)};
}

std::optional<Location> locationComment(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  if (std::optional<Location> imported = importedLocation(text)) return imported;
  for (char c : text)
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return std::nullopt;
  // Split "PATH:N" off the right; digits only, small enough for an int.
  auto tail = [](std::string_view s) -> std::optional<std::pair<std::string_view, int>> {
    size_t colon = s.rfind(':');
    if (colon == std::string_view::npos || colon + 1 == s.size() || s.size() - colon > 10)
      return std::nullopt;
    int n = 0;
    for (char c : s.substr(colon + 1)) {
      if (!isDigit(c)) return std::nullopt;
      n = n * 10 + (c - '0');
    }
    return std::pair{s.substr(0, colon), n};
  };
  auto last = tail(text);
  if (!last) return std::nullopt;
  Location loc;
  if (auto prev = tail(last->first)) {
    loc = Location{std::string(prev->first), prev->second, last->second};
  } else {
    loc = Location{std::string(last->first), last->second, 0};
  }
  if (loc.file.empty() || loc.line <= 0) return std::nullopt;
  return loc;
}

std::string_view withoutFusedMark(std::string_view text) {
  constexpr std::string_view kWord = "fused ";
  std::string_view s = text;
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  if (!s.starts_with(kWord)) return text;
  s.remove_prefix(kWord.size());
  size_t digits = 0;
  while (digits < s.size() && isDigit(s[digits])) ++digits;
  if (digits == 0 || (digits < s.size() && s[digits] != ' ')) return text;
  return s.substr(digits);
}

std::optional<InsertedComment> insertedComment(std::string_view text) {
  constexpr std::string_view kWord = "inserted";
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  if (!text.starts_with(kWord)) return std::nullopt;
  std::string_view rest = text.substr(kWord.size());
  if (rest.find_first_not_of(" \t") == std::string_view::npos) return InsertedComment{};
  if (rest.front() != ' ' && rest.front() != '\t') return std::nullopt;
  std::optional<Location> origin = locationComment(rest);
  if (!origin) return std::nullopt;
  return InsertedComment{std::move(origin)};
}

bool isPlainValueName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!isIdentChar(c)) return false;
  return true;
}

std::string valueRefText(std::string_view name) {
  return "%" + (isPlainValueName(name) ? std::string(name) : quoteString(name));
}

std::string quoteString(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default: {
        size_t len = u < 0x20 || u == 0x7f ? 0 : utf8SequenceLength(s, i);
        if (len == 0) {
          out += std::string("\\x") + kHex[u >> 4] + kHex[u & 15];
          ++i;
        } else {
          out.append(s.substr(i, len));
          i += len;
        }
        continue;
      }
    }
    ++i;
  }
  return out + "\"";
}

std::string describeChar(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("byte 0x") + kHex[u >> 4] + kHex[u & 15];
}

std::string describeToken(const Token &t) {
  switch (t.kind) {
    case Tok::End: return "end of line";
    case Tok::Comment: return "a comment";
    case Tok::Value: return "'" + valueRefText(t.str) + "'";
    case Tok::Error: return "an invalid token";
    default: break;
  }
  // Long lexemes (a 10,000-digit number) are shortened in messages.
  std::string_view text = t.text;
  if (text.size() > 40) return "'" + std::string(text.substr(0, 37)) + "...'";
  return "'" + std::string(text) + "'";
}

}  // namespace ferry::fy
