// backends/reference/elementwise.cpp — unary and binary elementwise ops and where, broadcasting.
//
// Math runs in double on loadDouble'd operands and is stored with storeDouble in the result
// dtype. Comparisons, maximum/minimum of integer operands and where's selection are exact.
#include <cmath>
#include <numbers>

#include "backends/reference/kernels.h"

namespace ferry::reference {

namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double geluExact(double x) { return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); }

double geluTanh(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

double unary(OpKind k, double x, bool tanhGelu) {
  switch (k) {
    case OpKind::Neg: return -x;
    case OpKind::Abs: return std::fabs(x);
    case OpKind::Exp: return std::exp(x);
    case OpKind::Log: return std::log(x);
    case OpKind::Sqrt: return std::sqrt(x);
    case OpKind::Rsqrt: return 1.0 / std::sqrt(x);
    case OpKind::Tanh: return std::tanh(x);
    case OpKind::Sigmoid: return sigmoid(x);
    case OpKind::Relu: return std::isnan(x) ? x : x > 0 ? x : 0.0;  // NaN stays, as torch
    case OpKind::Gelu: return tanhGelu ? geluTanh(x) : geluExact(x);
    case OpKind::Erf: return std::erf(x);
    case OpKind::Silu: return x * sigmoid(x);
    default: FERRY_CHECK(false) << "not a unary op";
  }
  return 0;
}

bool isCompare(OpKind k) { return k == OpKind::Equal || k == OpKind::Less || k == OpKind::Greater; }

template <class T> bool compare(OpKind k, T x, T y) {
  switch (k) {
    case OpKind::Equal: return x == y;
    case OpKind::Less: return x < y;
    case OpKind::Greater: return x > y;
    default: FERRY_CHECK(false) << "not a comparison";
  }
  return false;
}

double binary(OpKind k, double x, double y) {
  switch (k) {
    case OpKind::Add: return x + y;
    case OpKind::Sub: return x - y;
    case OpKind::Mul: return x * y;
    case OpKind::Div: return x / y;  // true division, also for integers (the result is float)
    case OpKind::Pow: return std::pow(x, y);
    // NaN propagates through maximum/minimum, as torch.maximum (std::fmax would drop it).
    case OpKind::Maximum: return std::isnan(x) || std::isnan(y) ? NAN : x > y ? x : y;
    case OpKind::Minimum: return std::isnan(x) || std::isnan(y) ? NAN : x < y ? x : y;
    default: FERRY_CHECK(false) << "not an arithmetic binary op";
  }
  return 0;
}

Shape broadcastAll(const KernelArgs &a) {
  Shape out = a.in(0).shape();
  for (const TensorData &t : a.operands) {
    std::optional<Shape> s = broadcastShapes(out, t.shape());
    FERRY_CHECK(s) << "'" << a.op.name << "': operands " << shapeStr(out) << " and "
                   << shapeStr(t.shape()) << " do not broadcast";
    out = *s;
  }
  return out;
}

}  // namespace

Expected<TensorData> evalUnary(const KernelArgs &a) {
  const TensorData &x = a.in(0);
  checkShape(a, x.shape());
  bool tanhGelu = false;
  if (a.op.kind == OpKind::Gelu) {
    const std::string &mode = attrString(a.op, a.attrs, "approximate");
    if (mode != "none" && mode != "tanh")
      return a.error("attr",
                     "'gelu' approximate must be \"none\" or \"tanh\", got \"" + mode + "\"");
    tanhGelu = mode == "tanh";
  }
  TensorData out(a.result.dtype, a.result.shape);
  for (int64_t i = 0; i < out.numel(); ++i)
    storeDouble(out.dtype(), elemPtr(out, i),
                unary(a.op.kind, loadDouble(x.dtype(), elemPtr(x, i)), tanhGelu));
  return out;
}

Expected<TensorData> evalBinary(const KernelArgs &a) {
  const TensorData &x = a.in(0), &y = a.in(1);
  checkShape(a, broadcastAll(a));
  TensorData out(a.result.dtype, a.result.shape);
  BroadcastIndex ix(out.shape(), x.shape()), iy(out.shape(), y.shape());
  OpKind k = a.op.kind;
  // Bool/integer operands compare and select exactly, also beyond 2^53.
  bool exact = isIntegral(x.dtype()) && isIntegral(y.dtype());
  bool select = k == OpKind::Maximum || k == OpKind::Minimum;
  for (int64_t i = 0; i < out.numel(); ++i) {
    const std::byte *px = elemPtr(x, ix(i)), *py = elemPtr(y, iy(i));
    std::byte *po = elemPtr(out, i);
    if (exact && (isCompare(k) || (select && isIntegral(out.dtype())))) {
      int64_t u = loadInt(x.dtype(), px), v = loadInt(y.dtype(), py);
      if (isCompare(k))
        storeIntSaturating(out.dtype(), po, compare(k, u, v));
      else
        storeIntSaturating(out.dtype(), po, (k == OpKind::Maximum) == (u > v) ? u : v);
      continue;
    }
    double u = loadDouble(x.dtype(), px), v = loadDouble(y.dtype(), py);
    storeDouble(out.dtype(), po, isCompare(k) ? compare(k, u, v) : binary(k, u, v));
  }
  return out;
}

Expected<TensorData> evalWhere(const KernelArgs &a) {
  const TensorData &cond = a.in(0), &x = a.in(1), &y = a.in(2);
  FERRY_CHECK(cond.dtype() == DType::Bool) << "'where' condition is " << cond.type().str();
  checkShape(a, broadcastAll(a));
  TensorData out(a.result.dtype, a.result.shape);
  BroadcastIndex ic(out.shape(), cond.shape()), ix(out.shape(), x.shape()),
      iy(out.shape(), y.shape());
  for (int64_t i = 0; i < out.numel(); ++i) {
    if (loadInt(DType::Bool, elemPtr(cond, ic(i))))
      convertElem(x, ix(i), out, i);
    else
      convertElem(y, iy(i), out, i);
  }
  return out;
}

}  // namespace ferry::reference
