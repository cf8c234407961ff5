// ir/utf8.h — where well-formed UTF-8 starts and ends, for the lexer, the JSON writer and the
// tools' escaping of what they print.
#pragma once

#include <cstddef>
#include <string_view>

namespace ferry {

/// The length of the well-formed UTF-8 sequence at s[i] (1 for ASCII, 2 to 4 otherwise), or 0
/// when there is none: a stray continuation byte, a lead byte that cannot start one (C0, C1,
/// F5..FF), a sequence cut short, an overlong form, a surrogate (U+D800..U+DFFF) or a code point
/// past U+10FFFF. `i` must be < s.size().
size_t utf8SequenceLength(std::string_view s, size_t i);

}  // namespace ferry
