// ir/json.cpp — JSON string escaping: valid JSON (RFC 8259, UTF-8) for any bytes.
#include "ir/json.h"

#include <cstdio>

#include "ir/utf8.h"

namespace ferry {

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
        const size_t n = utf8SequenceLength(s, i);
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
