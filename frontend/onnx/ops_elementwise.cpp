// frontend/onnx/ops_elementwise.cpp — converters of ONNX's elementwise ops, Cast, Where,
// comparisons, Identity, Dropout and Constant.
//
// ferry's elementwise ops follow PyTorch (ir/ops.def); where ONNX gives another result, the
// converter emits what gives ONNX's:
//   - ONNX requires one dtype for both operands of Add, Sub, Mul, Div, comparisons and Where's
//     branches (ferry would promote): mixed dtypes are an invalid model, reported;
//   - integer Div truncates toward zero (ferry's div is true division): computed in f64 and cast
//     back, exact for |values| < 2^53;
//   - Pow's result has the base's dtype: an exponent of another dtype is cast to a float base's
//     dtype, and an integer base's result is cast back;
//   - Reciprocal is div(1, x) in x's dtype; Clip is maximum/minimum with its optional bounds.
#include <algorithm>
#include <array>

#include "frontend/onnx/convert.h"
#include "onnx/onnx_pb.h"

namespace ferry::onnx_import {
namespace {

std::string op(NodeContext &c) { return std::string(c.opType()); }

std::string desc(NodeContext &c, size_t i) {
  return "input " + std::to_string(i) + " ('" + c.proto().input(static_cast<int>(i)) + "')";
}

/// The node has between `min` and `max` inputs, the first `min` of them present.
bool arity(NodeContext &c, size_t min, size_t max) {
  size_t n = c.inputCount();
  if (n < min || n > max) {
    std::string expected =
        min == max ? std::to_string(min) : std::to_string(min) + " to " + std::to_string(max);
    c.error(op(c) + ": expects " + expected + (max == 1 ? " input" : " inputs") + ", got " +
            std::to_string(n));
    return false;
  }
  for (size_t i = 0; i < min; ++i)
    if (!c.hasInput(i)) {
      c.error(op(c) + ": input " + std::to_string(i) + " is required but empty");
      return false;
    }
  return true;
}

/// Inputs `i` and `j` have one dtype, as ONNX's type constraint T requires.
bool sameDType(NodeContext &c, size_t i, size_t j) {
  DType a = c.inputType(i).dtype, b = c.inputType(j).dtype;
  if (a == b) return true;
  c.error(op(c) + ": " + desc(c, i) + " is " + std::string(dtypeName(a)) + " and " + desc(c, j) +
          " is " + std::string(dtypeName(b)) + ": ONNX requires one data type for both");
  return false;
}

bool floatInput(NodeContext &c, size_t i) {
  DType t = c.inputType(i).dtype;
  if (isFloating(t)) return true;
  c.error(op(c) + ": " + desc(c, i) + " is " + std::string(dtypeName(t)) +
          ", expected a floating type (f16, bf16, f32, f64)");
  return false;
}

bool numericInput(NodeContext &c, size_t i) {
  DType t = c.inputType(i).dtype;
  if (t != DType::Bool) return true;
  c.error(op(c) + ": " + desc(c, i) + " is bool, expected a numeric type");
  return false;
}

void setResult(NodeContext &c, const std::optional<Known> &k) {
  if (k) c.setOutput(0, *k);
}

template <OpKind K, bool FloatOnly> void unary(NodeContext &c) {
  if (!arity(c, 1, 1)) return;
  if (FloatOnly ? !floatInput(c, 0) : !numericInput(c, 0)) return;
  setResult(c, c.emit(K, {c.known(0)}));
}

template <OpKind K> void binary(NodeContext &c) {
  if (!arity(c, 2, 2) || !sameDType(c, 0, 1)) return;
  setResult(c, c.emit(K, {c.known(0), c.known(1)}));
}

void convertDiv(NodeContext &c) {
  if (!arity(c, 2, 2) || !sameDType(c, 0, 1)) return;
  DType t = c.inputType(0).dtype;
  if (!isInteger(t)) {
    setResult(c, c.emit(OpKind::Div, {c.known(0), c.known(1)}));
    return;
  }
  // ONNX's integer division truncates: the f64 quotient cast back truncates toward zero.
  auto a = c.emit(OpKind::Cast, {c.known(0)}, {{"to", DType::F64}});
  auto b = a ? c.emit(OpKind::Cast, {c.known(1)}, {{"to", DType::F64}}) : std::nullopt;
  auto q = b ? c.emit(OpKind::Div, {*a, *b}) : std::nullopt;
  setResult(c, q ? c.emit(OpKind::Cast, {*q}, {{"to", t}}) : std::nullopt);
}

void convertPow(NodeContext &c) {
  if (!arity(c, 2, 2) || !numericInput(c, 0) || !numericInput(c, 1)) return;
  DType base = c.inputType(0).dtype;
  std::optional<Known> exponent = c.known(1);
  if (isFloating(base) && exponent->type.dtype != base)
    exponent = c.emit(OpKind::Cast, {*exponent}, {{"to", base}});
  auto r = exponent ? c.emit(OpKind::Pow, {c.known(0), *exponent}) : std::nullopt;
  if (r && r->type.dtype != base) r = c.emit(OpKind::Cast, {*r}, {{"to", base}});
  setResult(c, r);
}

void convertReciprocal(NodeContext &c) {
  if (!arity(c, 1, 1) || !floatInput(c, 0)) return;
  DType t = c.inputType(0).dtype;
  setResult(c, c.emit(OpKind::Div, {c.constant(TensorData::full(t, {}, 1.0)), c.known(0)}));
}

void convertGelu(NodeContext &c) {
  if (!arity(c, 1, 1) || !floatInput(c, 0)) return;
  std::string approximate = c.attrString("approximate", "none");
  if (approximate != "none" && approximate != "tanh") {
    c.error("Gelu: attribute 'approximate' is \"" + approximate + "\", expected none or tanh");
    return;
  }
  setResult(c, c.emit(OpKind::Gelu, {c.known(0)}, {{"approximate", approximate}}));
}

void convertLeakyRelu(NodeContext &c) {
  if (!arity(c, 1, 1) || !floatInput(c, 0)) return;
  setResult(c, c.emit(OpKind::LeakyRelu, {c.known(0)}, {{"alpha", c.attrFloat("alpha", 0.01)}}));
}

void convertClip(NodeContext &c) {
  if (!arity(c, 1, 3) || !numericInput(c, 0)) return;
  std::optional<Known> r = c.known(0);
  if (c.opset() < 11) {
    // Before opset 11 the bounds were float attributes, absent meaning unbounded.
    const DType t = c.inputType(0).dtype;
    if (c.hasAttr("min"))
      r = c.emit(OpKind::Maximum, {*r, c.constant(TensorData::full(t, {}, c.attrFloat("min", 0)))});
    if (r && c.hasAttr("max"))
      r = c.emit(OpKind::Minimum, {*r, c.constant(TensorData::full(t, {}, c.attrFloat("max", 0)))});
    return setResult(c, r);
  }
  // min bounds from below (maximum), max from above (minimum): min > max gives max, as ONNX.
  constexpr std::array<std::pair<OpKind, const char *>, 2> bounds{
      {{OpKind::Maximum, "min"}, {OpKind::Minimum, "max"}}};
  for (size_t i = 1; i <= 2 && r; ++i) {
    if (!c.hasInput(i)) continue;
    const TensorType &t = c.inputType(i);
    if (!sameDType(c, 0, i)) return;
    if (t.numel() != 1 || t.rank() > 1) {
      c.error("Clip: " + std::string(bounds[i - 1].second) + " (" + desc(c, i) +
              ") must be a scalar, but it is " + t.str());
      return;
    }
    std::optional<Known> bound = c.known(i);
    if (t.rank() == 1)
      bound = c.emit(OpKind::Reshape, {*bound}, {{"shape", std::vector<int64_t>{}}});
    r = bound ? c.emit(bounds[i - 1].first, {*r, *bound}) : std::nullopt;
  }
  setResult(c, r);
}

void convertCast(NodeContext &c) {
  if (!arity(c, 1, 1)) return;
  if (!c.hasAttr("to")) {
    c.error("Cast: attribute 'to' is missing");
    return;
  }
  int64_t to = c.attrInt("to", 0);
  // saturate (opset 19) and round_mode (opset 24) only concern float8/float4 targets, which
  // ferry lacks.
  if (c.opset() >= 19) c.ignoreAttr("saturate");
  if (c.opset() >= 24) c.ignoreAttr("round_mode");
  std::optional<DType> t =
      to >= 0 && to <= 1 << 20 ? dtypeOf(static_cast<int32_t>(to)) : std::nullopt;
  if (!t) {
    c.unsupported("Cast to " +
                  onnxTypeName(static_cast<int32_t>(std::clamp<int64_t>(to, -1, 1 << 20))));
    return;
  }
  setResult(c, c.emit(OpKind::Cast, {c.known(0)}, {{"to", *t}}));
}

void convertWhere(NodeContext &c) {
  if (!arity(c, 3, 3)) return;
  if (c.inputType(0).dtype != DType::Bool) {
    c.error("Where: condition (" + desc(c, 0) + ") is " +
            std::string(dtypeName(c.inputType(0).dtype)) + ", expected bool");
    return;
  }
  if (!sameDType(c, 1, 2)) return;
  setResult(c, c.emit(OpKind::Where, {c.known(0), c.known(1), c.known(2)}));
}

void convertIdentity(NodeContext &c) {
  if (!arity(c, 1, 1)) return;
  c.setOutput(0, c.known(0));
}

void convertDropout(NodeContext &c) {
  if (!arity(c, 1, 3)) return;
  c.ignoreAttr("seed");                       // no randomness at inference
  if (c.opset() < 12) c.ignoreAttr("ratio");  // an attribute before opset 12: training only
  if (c.hasInput(2)) {
    // ferry imports models for inference: the mode must be known, and false.
    const TensorData *mode = c.requireData(2, "training_mode");
    if (!mode) return;
    if (mode->numel() != 1 || mode->dtype() != DType::Bool) {
      c.error("Dropout: training_mode (" + desc(c, 2) + ") must be a bool scalar, but it is " +
              mode->type().str());
      return;
    }
    if (mode->atInt(0) != 0) {
      // Training mode drops at random, except at ratio 0 (the default is 0.5), where it keeps
      // everything: the identity, as at inference.
      const TensorData *ratio = c.hasInput(1) ? c.requireData(1, "ratio") : nullptr;
      if (c.hasInput(1) && !ratio) return;
      if (!ratio || ratio->numel() != 1 || ratio->at(0) != 0) {
        c.unsupported("Dropout in training mode with a ratio other than 0 (random)");
        return;
      }
    }
  }
  // The ratio only matters in training: at inference Dropout is the identity.
  c.setOutput(0, c.known(0));
  if (c.outputUsed(1)) {
    // Inference's mask is all true.
    const Shape &shape = c.inputType(0).shape;
    auto mask = c.emit(OpKind::Expand, {c.constant(TensorData::full(DType::Bool, {}, 1.0))},
                       {{"shape", shape}});
    if (mask) c.setOutput(1, *mask);
  }
}

void convertConstant(NodeContext &c) {
  if (c.inputCount() != 0) {
    c.error("Constant: expects no inputs, got " + std::to_string(c.inputCount()));
    return;
  }
  static constexpr std::array<std::string_view, 8> kinds{
      "value",      "value_float",  "value_floats",  "value_int",
      "value_ints", "value_string", "value_strings", "sparse_value"};
  std::vector<std::string_view> given;
  for (std::string_view k : kinds)
    if (c.hasAttr(k)) given.push_back(k);
  if (given.size() != 1) {
    std::string list;
    for (std::string_view k : given) list += (list.empty() ? "'" : ", '") + std::string(k) + "'";
    c.error("Constant: expects exactly one of value, value_float(s), value_int(s), "
            "value_string(s) and sparse_value, got " +
            (given.empty() ? std::string("none") : list));
    return;
  }
  std::string_view k = given[0];
  std::optional<TensorData> data;
  if (k == "value") {
    data = c.attrTensor(k);
  } else if (k == "value_float") {
    data = TensorData::full(DType::F32, {}, c.attrFloat(k, 0));
  } else if (k == "value_int") {
    TensorData t(DType::I64, {});
    t.setInt(0, c.attrInt(k, 0));
    data = std::move(t);
  } else if (k == "value_floats") {
    std::vector<double> v = c.attrFloats(k, {});
    data = TensorData::fromDoubles(DType::F32, {static_cast<int64_t>(v.size())}, v);
  } else if (k == "value_ints") {
    std::vector<int64_t> v = c.attrInts(k, {});
    TensorData t(DType::I64, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) t.setInt(static_cast<int64_t>(i), v[i]);
    data = std::move(t);
  } else {
    c.unsupported("Constant with " + std::string(k));
    return;
  }
  if (data) c.setOutput(0, c.constant(std::move(*data)));
}

constexpr ConverterEntry kConverters[] = {
    {"Abs", unary<OpKind::Abs, false>},
    {"Add", binary<OpKind::Add>},
    {"Cast", convertCast},
    {"Clip", convertClip},
    {"Constant", convertConstant},
    {"Div", convertDiv},
    {"Dropout", convertDropout},
    {"Equal", binary<OpKind::Equal>},
    {"Erf", unary<OpKind::Erf, true>},
    {"Exp", unary<OpKind::Exp, true>},
    {"Gelu", convertGelu},
    {"Greater", binary<OpKind::Greater>},
    {"Identity", convertIdentity},
    {"LeakyRelu", convertLeakyRelu},
    {"Less", binary<OpKind::Less>},
    {"Log", unary<OpKind::Log, true>},
    {"Mul", binary<OpKind::Mul>},
    {"Neg", unary<OpKind::Neg, false>},
    {"Pow", convertPow},
    {"Reciprocal", convertReciprocal},
    {"Relu", unary<OpKind::Relu, false>},
    {"Sigmoid", unary<OpKind::Sigmoid, true>},
    {"Sqrt", unary<OpKind::Sqrt, true>},
    {"Sub", binary<OpKind::Sub>},
    {"Tanh", unary<OpKind::Tanh, true>},
    {"Where", convertWhere},
};

}  // namespace

std::span<const ConverterEntry> elementwiseConverters() { return kConverters; }

}  // namespace ferry::onnx_import
