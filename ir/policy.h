// ir/policy.h — the placement policy, which the compiler decides by and the runtime keeps (a
// saved executable records it: Session moves mismatched inputs by default only under `auto`).
#pragma once

#include <cstdint>
#include <string_view>

namespace ferry {

/// `strict`: eager-framework semantics checked ahead of time — nothing moves implicitly.
/// `auto`: pins are constraints, the rest is placed to minimise estimated time.
enum class PlacementPolicy : uint8_t { Strict, Auto };

/// "strict" or "auto", as the tools spell it.
inline std::string_view placementPolicyName(PlacementPolicy p) {
  return p == PlacementPolicy::Strict ? "strict" : "auto";
}

}  // namespace ferry
