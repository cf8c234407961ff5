// backends/reference/elementwise.cpp — unary and binary elementwise ops and where, broadcasting.
//
// As PyTorch: operands are first converted to the dtype the op computes in (the result dtype;
// for comparisons the operands' promoted dtype), exactly as the casts the dtype pass inserts.
// Float math then runs in double and is stored with storeDouble; integer math is exact in int64
// and wraps at the result's width (neg of i8 -128 is -128, u8 200 + 100 is 44).
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

double unary(OpKind k, double x, bool tanhGelu, double alpha) {
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
    case OpKind::LeakyRelu: return x < 0 ? alpha * x : x;
    default: FERRY_CHECK(false) << "not a unary op";
  }
  return 0;
}

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

// Integer neg, abs and relu, exact and wrapping (through uint64: no signed overflow).
int64_t unaryInt(OpKind k, int64_t x) {
  const auto u = static_cast<uint64_t>(x);
  switch (k) {
    case OpKind::Neg: return static_cast<int64_t>(0 - u);
    case OpKind::Abs: return x < 0 ? static_cast<int64_t>(0 - u) : x;
    case OpKind::Relu: return x > 0 ? x : 0;
    default: FERRY_CHECK(false) << "no integer form of this unary op";
  }
  return 0;
}

// Integer arithmetic, exact and wrapping; pow and anything else through double.
int64_t binaryInt(OpKind k, int64_t x, int64_t y) {
  const auto u = static_cast<uint64_t>(x), v = static_cast<uint64_t>(y);
  switch (k) {
    case OpKind::Add: return static_cast<int64_t>(u + v);
    case OpKind::Sub: return static_cast<int64_t>(u - v);
    case OpKind::Mul: return static_cast<int64_t>(u * v);
    case OpKind::Maximum: return x > y ? x : y;
    case OpKind::Minimum: return x < y ? x : y;
    default: {
      // Saturated into int64 first (a double beyond it has no integer meaning), then wrapped.
      std::byte wide[8];
      storeDouble(DType::I64, wide, binary(k, static_cast<double>(x), static_cast<double>(y)));
      return loadInt(DType::I64, wide);
    }
  }
}

// `t` in dtype `to`, converted as a cast (shares the storage when it already is).
TensorData as(const TensorData &t, DType to) { return t.dtype() == to ? t : castTensor(t, to); }

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
  const double alpha = a.op.kind == OpKind::LeakyRelu ? attrFloat(a.op, a.attrs, "alpha") : 0.0;
  TensorData out(a.result.dtype, a.result.shape);
  const TensorData in = as(x, out.dtype());
  const bool integral = !isFloating(out.dtype());
  for (int64_t i = 0; i < out.numel(); ++i) {
    if (integral)
      storeIntWrapping(out.dtype(), elemPtr(out, i),
                       unaryInt(a.op.kind, loadInt(in.dtype(), elemPtr(in, i))));
    else
      storeDouble(out.dtype(), elemPtr(out, i),
                  unary(a.op.kind, loadDouble(in.dtype(), elemPtr(in, i)), tanhGelu, alpha));
  }
  return out;
}

Expected<TensorData> evalBinary(const KernelArgs &a) {
  checkShape(a, broadcastAll(a));
  TensorData out(a.result.dtype, a.result.shape);
  const OpKind k = a.op.kind;
  // The dtype the op computes in: the result's, or for a comparison (the op table's Compare
  // dtype rule: the result is bool) the operands' promoted one.
  const bool comparison = a.op.dtypeRule == DTypeRule::Compare;
  DType compute = out.dtype();
  if (comparison) {
    ResultType common;
    for (const TensorData &t : a.operands) common.add(t.dtype(), t.shape().empty());
    compute = common.get();
  }
  const TensorData x = as(a.in(0), compute), y = as(a.in(1), compute);
  BroadcastIndex ix(out.shape(), x.shape()), iy(out.shape(), y.shape());
  const bool integral = !isFloating(compute);
  for (int64_t i = 0; i < out.numel(); ++i) {
    const std::byte *px = elemPtr(x, ix(i)), *py = elemPtr(y, iy(i));
    std::byte *po = elemPtr(out, i);
    if (integral) {
      int64_t u = loadInt(compute, px), v = loadInt(compute, py);
      storeIntWrapping(out.dtype(), po, comparison ? compare(k, u, v) : binaryInt(k, u, v));
    } else {
      double u = loadDouble(compute, px), v = loadDouble(compute, py);
      storeDouble(out.dtype(), po, comparison ? compare(k, u, v) : binary(k, u, v));
    }
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
