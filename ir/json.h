// ir/json.h — the one helper every JSON writer needs: a string literal with escapes.
#pragma once

#include <string>
#include <string_view>

namespace ferry {

/// `s` as a JSON string literal, quotes included, that every JSON parser accepts whatever bytes
/// `s` holds: `"` and `\` escaped, control characters as \n, \t, \r or \uXXXX, valid UTF-8 kept
/// as it is, and each byte that is not part of a valid UTF-8 sequence (a stray continuation
/// byte, a cut, overlong or surrogate sequence, a lead byte past U+10FFFF) written as \ufffd,
/// the replacement character (a name read from a file may hold such bytes).
std::string jsonString(std::string_view s);

}  // namespace ferry
