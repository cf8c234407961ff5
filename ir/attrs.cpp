// ir/attrs.cpp — attribute kinds and their `.fy` spelling.
#include "ir/attrs.h"

#include <charconv>
#include <cmath>

#include "ir/lexer.h"

namespace ferry {

std::string_view attrKindName(AttrKind k) {
  switch (k) {
    case AttrKind::Bool: return "bool";
    case AttrKind::Int: return "int";
    case AttrKind::Float: return "float";
    case AttrKind::Ints: return "ints";
    case AttrKind::String: return "string";
    case AttrKind::DType: return "dtype";
    case AttrKind::Device: return "device";
    case AttrKind::Tensor: return "tensor";
  }
  return "?";
}

std::string floatStr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, end);
  // Keep floats recognisable as floats: "1" -> "1.0" (not for "1e-05").
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

namespace {

std::string tensorStr(const TensorData &t) {
  std::string s = t.type().str() + "{";
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (i) s += ", ";
    s += tensorElementStr(t, i);
  }
  return s + "}";
}

}  // namespace

std::string tensorElementStr(const TensorData &t, int64_t i) {
  if (isFloating(t.dtype())) return floatStr(t.at(i));
  if (t.dtype() == DType::Bool) return t.atInt(i) ? "true" : "false";
  return std::to_string(t.atInt(i));
}

std::string attrValueStr(const AttrValue &v) {
  switch (attrKind(v)) {
    case AttrKind::Bool: return std::get<bool>(v) ? "true" : "false";
    case AttrKind::Int: return std::to_string(std::get<int64_t>(v));
    case AttrKind::Float: return floatStr(std::get<double>(v));
    case AttrKind::Ints: {
      const auto &xs = std::get<std::vector<int64_t>>(v);
      std::string s = "[";
      for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + std::to_string(xs[i]);
      return s + "]";
    }
    case AttrKind::String: return fy::quoteString(std::get<std::string>(v));
    case AttrKind::DType: return std::string(dtypeName(std::get<DType>(v)));
    case AttrKind::Device: return std::get<Device>(v).str();
    case AttrKind::Tensor: return tensorStr(std::get<TensorData>(v));
  }
  return "?";
}

}  // namespace ferry
