// ir/json.h — the one helper every JSON writer needs: a string literal with escapes.
#pragma once

#include <string>
#include <string_view>

namespace ferry {

/// `s` as a JSON string literal, quotes included; control characters escaped as \uXXXX.
std::string jsonString(std::string_view s);

}  // namespace ferry
