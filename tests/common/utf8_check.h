// tests/common/utf8_check.h — a strict UTF-8 check for tests, written independently of the
// product's escaping code (it decodes each sequence and checks the code point), so that a test
// does not grade the implementation with the implementation.
#pragma once

#include <string>
#include <string_view>

namespace ferry::testutil {

/// The length of the well-formed UTF-8 sequence at s[i] (1 to 4), or 0 when it is not one: a
/// continuation byte where a sequence starts, a lead byte no sequence has (F8..FF), a sequence
/// cut short, an overlong form (C0 80 for U+0000, E0 80 80, F0 80 80 80, ...), a surrogate
/// (U+D800..U+DFFF) or a code point past U+10FFFF.
inline size_t utf8Length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char lead = byte(0);
  size_t n = 0;
  char32_t cp = 0, least = 0;
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0)
    n = 2, cp = lead & 0x1F, least = 0x80;
  else if ((lead & 0xF0) == 0xE0)
    n = 3, cp = lead & 0x0F, least = 0x800;
  else if ((lead & 0xF8) == 0xF0)
    n = 4, cp = lead & 0x07, least = 0x10000;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(k) & 0x3F);
  }
  if (cp < least || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

/// Where `s` stops being valid UTF-8 ("byte 255 at offset 3"), or "" when it is valid.
inline std::string invalidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8Length(s, i);
    if (n == 0)
      return "byte " + std::to_string(static_cast<unsigned char>(s[i])) + " at offset " +
             std::to_string(i);
    i += n;
  }
  return "";
}

/// The first byte of `s` a terminal would not print as text: a control byte other than newline
/// and tab, DEL, or a byte outside a valid UTF-8 sequence ("" when there is none).
inline std::string unprintable(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const size_t n = b == '\n' || b == '\t' || (b >= 0x20 && b < 0x7F) ? 1
                     : b >= 0x80                                       ? utf8Length(s, i)
                                                                       : 0;
    if (n == 0) return "byte " + std::to_string(b) + " at offset " + std::to_string(i);
    i += n;
  }
  return "";
}

}  // namespace ferry::testutil
