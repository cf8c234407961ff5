// ir/attrs.h — typed node attributes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ir/device.h"
#include "ir/dtype.h"
#include "ir/tensor_data.h"

namespace ferry {

enum class AttrKind : uint8_t { Bool, Int, Float, Ints, String, DType, Device, Tensor };
std::string_view attrKindName(AttrKind k);

/// One attribute value; the alternative's index equals its AttrKind.
using AttrValue = std::variant<bool, int64_t, double, std::vector<int64_t>, std::string, DType,
                               Device, TensorData>;

inline AttrKind attrKind(const AttrValue &v) { return static_cast<AttrKind>(v.index()); }

/// A node's attributes: one value per attribute of the op's schema, in schema order, defaults
/// filled in (see makeAttrs in ir/ops.h). Passes never deal with missing attributes.
using Attrs = std::vector<AttrValue>;

/// An attribute as a user wrote it (builder call, `.fy` text): a name and a value whose kind
/// may still need a widening (int -> float) before it matches the schema.
struct NamedAttr {
  std::string name;
  AttrValue value;
};

/// The `.fy` spelling of a value: `true`, `3`, `0.5`, `[1,2]`, `"tanh"`, `f16`, `cuda:0`,
/// `f32[2]{1, 2}`. Floats use the shortest text that reads back to the same double.
std::string attrValueStr(const AttrValue &v);
/// One element of `t` in the same spelling: exact integers, `true`/`false`, shortest floats.
std::string tensorElementStr(const TensorData &t, int64_t i);
/// A double as the shortest text that reads back to it, always with '.' or an exponent
/// ("1.0", "0.1", "1e-05"); "nan", "inf", "-inf".
std::string floatStr(double v);

}  // namespace ferry
