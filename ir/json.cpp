// ir/json.cpp — JSON string escaping: valid JSON (RFC 8259, UTF-8) for any bytes.
#include "ir/json.h"

#include <cstdio>

namespace ferry {

namespace {

// The length of the well-formed UTF-8 sequence at s[i] (1 for ASCII), or 0 when it is malformed:
// a stray continuation byte, a lead byte that cannot start one (C0, C1, F5..FF), a sequence cut
// short, an overlong form, a surrogate (U+D800..U+DFFF) or a code point past U+10FFFF.
size_t utf8Length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0;
  };
  const auto cont = [&](size_t k) { return (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

std::string jsonString(std::string_view s) {
  std::string out = "\"";
  out.reserve(s.size() + 2);
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default: {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(u));
          out += buf;
          break;
        }
        const size_t n = utf8Length(s, i);
        if (n == 0) {
          out += "\\ufffd";  // one replacement character per byte that is not UTF-8
          break;
        }
        out.append(s.substr(i, n));
        i += n;
        continue;
      }
    }
    ++i;
  }
  return out + "\"";
}

}  // namespace ferry
