// ir/shape_rules.cpp — result types of every op: shapes by its semantics, dtypes by its row's rule.
#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "ir/op_rules.h"

namespace ferry {

namespace {

// Element counts (and every intermediate size) stay below this, so that byte sizes and sums of
// two sizes cannot overflow int64 anywhere downstream.
constexpr int64_t kMaxElements = int64_t{1} << 62;
constexpr int64_t kLowest = std::numeric_limits<int64_t>::min();

/// A part of an error message, built only when the error happens: shape rules run for every
/// node of every verify, and almost every node is fine.
using LazyText = std::function<std::string()>;

InferError fail(const InferArgs &a, std::string code, const std::string &message) {
  return InferError{std::move(code), "'" + std::string(a.op.name) + "' " + message};
}

/// "operand 1 (weight) f32[8,3]"
std::string operandStr(const InferArgs &a, size_t i) {
  return "operand " + std::to_string(i) + " (" + a.op.operand(i).name + ") " + a.operands[i].str();
}

/// "stride=[1, 0]", as the attribute is written in `.fy`.
std::string attrStr(const InferArgs &a, std::string_view name) {
  return std::string(name) + "=" + attrValueStr(attr(a.op, a.attrs, name));
}

const std::vector<int64_t> &ints(const InferArgs &a, std::string_view name) {
  return attrInts(a.op, a.attrs, name);
}

std::optional<int64_t> checkedMul(int64_t x, int64_t y) {
  int64_t r = 0;
  if (x < 0 || y < 0 || __builtin_mul_overflow(x, y, &r) || r > kMaxElements) return std::nullopt;
  return r;
}

std::optional<int64_t> checkedAdd(int64_t x, int64_t y) {
  int64_t r = 0;
  if (x < 0 || y < 0 || __builtin_add_overflow(x, y, &r) || r > kMaxElements) return std::nullopt;
  return r;
}

std::optional<int64_t> checkedNumel(std::span<const int64_t> dims) {
  std::optional<int64_t> n = 1;
  for (int64_t d : dims)
    if (!(n = checkedMul(*n, d))) return std::nullopt;
  return n;
}

/// Every rule returns through here: no negative dims, no element count beyond kMaxElements, and
/// a type the loader takes back (typeLimitError: a zero dim hides no absurd dim).
InferResult done(const InferArgs &a, TensorType t) {
  if (!checkedNumel(t.shape))
    return fail(a, "shape", "result " + t.str() + " has a negative dim or more than 2^62 elements");
  if (std::string why = typeLimitError(t.dtype, t.shape); !why.empty())
    return fail(a, "shape", "result " + t.str() + " " + why);
  return t;
}

InferResult sameShape(const InferArgs &a, DType dtype) {
  return done(a, TensorType{dtype, a.operands[0].shape});
}

/// NumPy broadcasting of several labelled shapes; on a conflict, the message naming both.
std::variant<Shape, std::string> broadcastAll(std::span<const Shape *const> shapes,
                                              const std::function<std::string(size_t)> &label) {
  size_t rank = 0;
  for (const Shape *s : shapes) rank = std::max(rank, s->size());
  Shape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    std::optional<size_t> owner;  // the first shape with a dim other than 1 here
    for (size_t j = 0; j < shapes.size(); ++j) {
      size_t lead = rank - shapes[j]->size();
      int64_t d = i < lead ? 1 : (*shapes[j])[i - lead];
      if (d == 1) continue;
      if (!owner) {
        owner = j;
        out[i] = d;
      } else if (d != out[i]) {
        return "cannot broadcast " + label(*owner) + " with " + label(j) + ": dim " +
               std::to_string(i) + " is " + std::to_string(out[i]) + " vs " + std::to_string(d);
      }
    }
  }
  return out;
}

/// Normalises `axes` against `rank`; out-of-range axes are "shape" errors, repeats "attr" errors.
std::variant<std::vector<int64_t>, InferError> normalizeAxes(const InferArgs &a,
                                                             std::string_view attrName,
                                                             const std::vector<int64_t> &axes,
                                                             int64_t rank, const LazyText &rankOf) {
  std::vector<int64_t> out;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t axis : axes) {
    std::optional<int64_t> n = normalizeAxis(axis, rank);
    if (!n)
      return fail(a, "shape",
                  attrStr(a, attrName) + ": axis " + std::to_string(axis) +
                      " is out of range for " + rankOf() + " (rank " + std::to_string(rank) + ")");
    if (seen[*n])
      return fail(a, "attr",
                  attrStr(a, attrName) + " names dim " + std::to_string(*n) + " more than once");
    seen[*n] = true;
    out.push_back(*n);
  }
  return out;
}

std::variant<int64_t, InferError> normalizeOne(const InferArgs &a, std::string_view attrName,
                                               int64_t rank, const LazyText &rankOf) {
  std::optional<int64_t> n = normalizeAxis(attrInt(a.op, a.attrs, attrName), rank);
  if (!n)
    return fail(a, "shape",
                attrStr(a, attrName) + " is out of range for " + rankOf() + " (rank " +
                    std::to_string(rank) + ")");
  return *n;
}

/// A 1-D operand that must be exactly [n].
std::optional<InferError> expectVector(const InferArgs &a, size_t i, int64_t n,
                                       const LazyText &what) {
  if (a.operands[i].rank() == 1 && a.operands[i].shape[0] == n) return std::nullopt;
  return fail(a, "shape",
              operandStr(a, i) + " must be [" + std::to_string(n) + "] (" + what() + ")");
}

// ---- conv2d and pooling windows ----------------------------------------------------------

using Pair = std::array<int64_t, 2>;

/// `name` must hold exactly two ints >= minValue.
std::optional<InferError> pairAttr(const InferArgs &a, std::string_view name, int64_t minValue,
                                   Pair &out) {
  const std::vector<int64_t> &v = ints(a, name);
  if (v.size() != 2) return fail(a, "attr", attrStr(a, name) + " must have 2 values [h, w]");
  for (int64_t x : v)
    if (x < minValue)
      return fail(a, "attr",
                  attrStr(a, name) + " must be " + (minValue > 0 ? "positive" : "non-negative"));
  out = {v[0], v[1]};
  return std::nullopt;
}

/// padding: [h, w] (both sides) or [top, left, bottom, right].
std::optional<InferError> paddingAttr(const InferArgs &a, Pair &begin, Pair &end) {
  const std::vector<int64_t> &v = ints(a, "padding");
  if (v.size() != 2 && v.size() != 4)
    return fail(a, "attr",
                attrStr(a, "padding") +
                    " must have 2 values [h, w] or 4 [top, left, bottom, right]");
  for (int64_t x : v)
    if (x < 0) return fail(a, "attr", attrStr(a, "padding") + " must be non-negative");
  begin = {v[0], v[1]};
  end = v.size() == 2 ? begin : Pair{v[2], v[3]};
  return std::nullopt;
}

struct Window {
  Pair kernel{}, stride{}, dilation{1, 1}, padBegin{}, padEnd{};
  bool ceilMode = false;
};

/// Output size of one spatial dim by PyTorch's pooling_output_shape (conv2d: ceilMode false).
/// nullopt when the sizes overflow; -1 when the dilated kernel does not fit the padded input.
std::optional<int64_t> windowCount(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                                   int64_t padBegin, int64_t padEnd, bool ceilMode) {
  std::optional<int64_t> span = checkedMul(dilation, kernel - 1);
  std::optional<int64_t> padded = checkedAdd(in, padBegin);
  if (padded) padded = checkedAdd(*padded, padEnd);
  if (!span || !padded) return std::nullopt;
  if (*padded < *span + 1) return -1;
  int64_t room = *padded - (*span + 1);
  int64_t out = room / stride + (ceilMode && room % stride != 0 ? 1 : 0) + 1;
  // With ceil_mode the last window must start inside the input or the left padding.
  if (ceilMode) {
    std::optional<int64_t> lastStart = checkedMul(out - 1, stride);
    if (!lastStart || *lastStart >= in + padBegin) --out;
  }
  return out >= 1 ? out : -1;
}

/// Spatial output dims of x [N, C, H, W] under `w`; `kernelOf` names where the kernel came from.
std::variant<Pair, InferError> windowOutput(const InferArgs &a, const Window &w,
                                            const LazyText &kernelOf) {
  Pair out{};
  for (size_t i = 0; i < 2; ++i) {
    int64_t in = a.operands[0].shape[2 + i];
    std::optional<int64_t> n = windowCount(in, w.kernel[i], w.stride[i], w.dilation[i],
                                           w.padBegin[i], w.padEnd[i], w.ceilMode);
    if (!n)
      return fail(a, "attr",
                  "window sizes overflow: " + kernelOf() + ", dilation " + shapeStr(w.dilation) +
                      ", padding " + attrStr(a, "padding"));
    if (*n < 0)
      return fail(a, "shape",
                  "the kernel does not fit " + operandStr(a, 0) + ": dim " + std::to_string(2 + i) +
                      " is " + std::to_string(in) + " + padding " + std::to_string(w.padBegin[i]) +
                      " + " + std::to_string(w.padEnd[i]) + " < kernel extent " +
                      std::to_string(w.dilation[i] * (w.kernel[i] - 1) + 1) + " (" + kernelOf() +
                      ", dilation " + shapeStr(w.dilation) + ")");
    out[i] = *n;
  }
  return out;
}

std::optional<InferError> expect4d(const InferArgs &a, size_t i, std::string_view layout) {
  if (a.operands[i].rank() == 4) return std::nullopt;
  return fail(a, "shape", operandStr(a, i) + " must be 4-D " + std::string(layout));
}

}  // namespace

DType resultDType(const InferArgs &a) { return ruleDType(a.op, a.operands); }

// ---- elementwise --------------------------------------------------------------------------

InferResult inferUnary(const InferArgs &a) { return sameShape(a, resultDType(a)); }

InferResult inferGelu(const InferArgs &a) {
  const std::string &approx = attrString(a.op, a.attrs, "approximate");
  if (approx != "none" && approx != "tanh")
    return fail(a, "attr", attrStr(a, "approximate") + " must be \"none\" or \"tanh\"");
  return sameShape(a, resultDType(a));
}

InferResult inferBroadcast(const InferArgs &a) {
  std::vector<const Shape *> shapes;
  shapes.reserve(a.operands.size());
  for (const TensorType &t : a.operands) shapes.push_back(&t.shape);
  auto r = broadcastAll(shapes, [&](size_t i) { return operandStr(a, i); });
  if (auto *msg = std::get_if<std::string>(&r)) return fail(a, "shape", *msg);
  return done(a, TensorType{resultDType(a), std::get<Shape>(r)});
}

// ---- linear algebra -----------------------------------------------------------------------

InferResult inferMatmul(const InferArgs &a) {
  const Shape &x = a.operands[0].shape, &y = a.operands[1].shape;
  for (size_t i = 0; i < 2; ++i)
    if (a.operands[i].rank() == 0)
      return fail(a, "shape", operandStr(a, i) + " must be at least 1-D (use mul for scalars)");
  // numpy.matmul: a 1-D a is a row [1, K], a 1-D b a column [K, 1]; the added dim is dropped.
  int64_t kx = x.back(), ky = y.size() == 1 ? y[0] : y[y.size() - 2];
  if (kx != ky)
    return fail(a, "shape",
                "cannot multiply " + operandStr(a, 0) + " by " + operandStr(a, 1) +
                    ": contracted dims are " + std::to_string(kx) + " vs " + std::to_string(ky));
  Shape bx(x.begin(), x.end() - std::min<size_t>(x.size(), 2));
  Shape by(y.begin(), y.end() - std::min<size_t>(y.size(), 2));
  const Shape *batch[] = {&bx, &by};
  auto r = broadcastAll(batch, [&](size_t i) {
    return i == 0 ? "the batch dims " + shapeStr(bx) + " of " + operandStr(a, 0)
                  : shapeStr(by) + " of " + operandStr(a, 1);
  });
  if (auto *msg = std::get_if<std::string>(&r)) return fail(a, "shape", *msg);
  Shape out = std::get<Shape>(r);
  if (x.size() >= 2) out.push_back(x[x.size() - 2]);
  if (y.size() >= 2) out.push_back(y.back());
  return done(a, TensorType{resultDType(a), out});
}

InferResult inferLinear(const InferArgs &a) {
  const Shape &x = a.operands[0].shape, &w = a.operands[1].shape;
  if (x.empty()) return fail(a, "shape", operandStr(a, 0) + " must be at least 1-D [..., in]");
  if (w.size() != 2) return fail(a, "shape", operandStr(a, 1) + " must be 2-D [out, in]");
  if (x.back() != w[1])
    return fail(a, "shape",
                operandStr(a, 0) + " has " + std::to_string(x.back()) + " input features but " +
                    operandStr(a, 1) + " [out, in] takes " + std::to_string(w[1]));
  if (a.operands.size() > 2)
    if (auto e =
            expectVector(a, 2, w[0], [&] { return "the output features of " + operandStr(a, 1); }))
      return *e;
  Shape out(x.begin(), x.end() - 1);
  out.push_back(w[0]);
  return done(a, TensorType{resultDType(a), out});
}

InferResult inferConv2d(const InferArgs &a) {
  if (auto e = expect4d(a, 0, "[N, C, H, W]")) return *e;
  if (auto e = expect4d(a, 1, "[O, C/groups, kH, kW]")) return *e;
  Window w;
  if (auto e = pairAttr(a, "stride", 1, w.stride)) return *e;
  if (auto e = pairAttr(a, "dilation", 1, w.dilation)) return *e;
  if (auto e = paddingAttr(a, w.padBegin, w.padEnd)) return *e;
  int64_t groups = attrInt(a.op, a.attrs, "groups");
  if (groups < 1) return fail(a, "attr", attrStr(a, "groups") + " must be positive");
  const Shape &x = a.operands[0].shape, &wt = a.operands[1].shape;
  if (x[1] % groups != 0)
    return fail(a, "shape",
                attrStr(a, "groups") + " does not divide the " + std::to_string(x[1]) +
                    " channels of " + operandStr(a, 0));
  if (wt[0] % groups != 0)
    return fail(a, "shape",
                attrStr(a, "groups") + " does not divide the " + std::to_string(wt[0]) +
                    " output channels of " + operandStr(a, 1));
  if (wt[1] != x[1] / groups)
    return fail(a, "shape",
                operandStr(a, 1) + " takes " + std::to_string(wt[1]) +
                    " input channels per group but " + operandStr(a, 0) + " with " +
                    attrStr(a, "groups") + " has " + std::to_string(x[1] / groups));
  if (wt[2] < 1 || wt[3] < 1) return fail(a, "shape", operandStr(a, 1) + " has an empty kernel");
  if (a.operands.size() > 2)
    if (auto e =
            expectVector(a, 2, wt[0], [&] { return "the output channels of " + operandStr(a, 1); }))
      return *e;
  w.kernel = {wt[2], wt[3]};
  auto hw = windowOutput(
      a, w, [&] { return "kernel " + shapeStr(w.kernel) + " of " + operandStr(a, 1); });
  if (auto *e = std::get_if<InferError>(&hw)) return *e;
  Pair o = std::get<Pair>(hw);
  return done(a, TensorType{resultDType(a), {x[0], wt[0], o[0], o[1]}});
}

// ---- pooling and normalisation ------------------------------------------------------------

InferResult inferPool2d(const InferArgs &a) {
  if (auto e = expect4d(a, 0, "[N, C, H, W]")) return *e;
  Window w;
  if (auto e = pairAttr(a, "kernel", 1, w.kernel)) return *e;
  if (ints(a, "stride").empty())
    w.stride = w.kernel;
  else if (auto e = pairAttr(a, "stride", 1, w.stride))
    return *e;
  if (a.op.attrIndex("dilation") >= 0)
    if (auto e = pairAttr(a, "dilation", 1, w.dilation)) return *e;
  if (auto e = paddingAttr(a, w.padBegin, w.padEnd)) return *e;
  w.ceilMode = attrBool(a.op, a.attrs, "ceil_mode");
  const Shape &x = a.operands[0].shape;
  for (size_t i = 0; i < 2; ++i) {
    // PyTorch's rule; it also keeps every window overlapping the input.
    std::optional<int64_t> extent = checkedMul(w.dilation[i], w.kernel[i] - 1);
    int64_t half = extent ? (*extent + 1) / 2 : kMaxElements;
    if (std::max(w.padBegin[i], w.padEnd[i]) > half)
      return fail(a, "attr",
                  attrStr(a, "padding") + " exceeds half the kernel extent in dim " +
                      std::to_string(2 + i) + " (" + attrStr(a, "kernel") + ", at most " +
                      std::to_string(half) + ")");
    if (x[2 + i] == 0)
      return fail(a, "shape",
                  operandStr(a, 0) + " has an empty spatial dim " + std::to_string(2 + i));
  }
  auto hw = windowOutput(a, w, [&] { return attrStr(a, "kernel"); });
  if (auto *e = std::get_if<InferError>(&hw)) return *e;
  Pair o = std::get<Pair>(hw);
  return done(a, TensorType{resultDType(a), {x[0], x[1], o[0], o[1]}});
}

InferResult inferGlobalAvgPool(const InferArgs &a) {
  if (auto e = expect4d(a, 0, "[N, C, H, W]")) return *e;
  const Shape &x = a.operands[0].shape;
  return done(a, TensorType{resultDType(a), {x[0], x[1], 1, 1}});
}

InferResult inferBatchNorm(const InferArgs &a) {
  const Shape &x = a.operands[0].shape;
  if (x.size() < 2) return fail(a, "shape", operandStr(a, 0) + " must be at least 2-D [N, C, ...]");
  for (size_t i = 1; i < a.operands.size(); ++i)
    if (auto e = expectVector(a, i, x[1], [&] { return "the channels of " + operandStr(a, 0); }))
      return *e;
  return sameShape(a, resultDType(a));
}

InferResult inferLayerNorm(const InferArgs &a) {
  auto axis = normalizeOne(a, "axis", a.operands[0].rank(), [&] { return operandStr(a, 0); });
  if (auto *e = std::get_if<InferError>(&axis)) return *e;
  const Shape &x = a.operands[0].shape;
  Shape normalized(x.begin() + std::get<int64_t>(axis), x.end());
  for (size_t i = 1; i < a.operands.size(); ++i)
    if (a.operands[i].shape != normalized)
      return fail(a, "shape",
                  operandStr(a, i) + " must have shape " + shapeStr(normalized) + " (the dims of " +
                      operandStr(a, 0) + " from " + attrStr(a, "axis") + ")");
  return sameShape(a, resultDType(a));
}

// ---- reductions ---------------------------------------------------------------------------

InferResult inferReduce(const InferArgs &a) {
  const Shape &x = a.operands[0].shape;
  std::vector<bool> reduced(x.size(), ints(a, "axes").empty());
  auto axes = normalizeAxes(a, "axes", ints(a, "axes"), a.operands[0].rank(),
                            [&] { return operandStr(a, 0); });
  if (auto *e = std::get_if<InferError>(&axes)) return *e;
  for (int64_t axis : std::get<std::vector<int64_t>>(axes)) reduced[axis] = true;
  bool keepdims = attrBool(a.op, a.attrs, "keepdims");
  Shape out;
  for (size_t i = 0; i < x.size(); ++i) {
    // torch.max has no identity to return for an empty reduction.
    if (reduced[i] && x[i] == 0 && a.op.kind == OpKind::Max)
      return fail(a, "shape",
                  "cannot reduce the empty dim " + std::to_string(i) + " of " + operandStr(a, 0) +
                      ": max has no identity");
    if (!reduced[i])
      out.push_back(x[i]);
    else if (keepdims)
      out.push_back(1);
  }
  return done(a, TensorType{resultDType(a), out});
}

InferResult inferSoftmax(const InferArgs &a) {
  auto axis = normalizeOne(a, "axis", a.operands[0].rank(), [&] { return operandStr(a, 0); });
  if (auto *e = std::get_if<InferError>(&axis)) return *e;
  return sameShape(a, resultDType(a));
}

// ---- data movement ------------------------------------------------------------------------

InferResult inferReshape(const InferArgs &a) {
  const std::vector<int64_t> &shape = ints(a, "shape");
  const std::string target = attrStr(a, "shape");
  std::optional<size_t> inferred;
  std::optional<int64_t> known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && !inferred) {
      inferred = i;
    } else if (shape[i] == -1) {
      return fail(a, "attr", target + " has more than one -1");
    } else if (shape[i] < 0) {
      return fail(a, "attr", target + " has the negative size " + std::to_string(shape[i]));
    } else if (known) {
      known = checkedMul(*known, shape[i]);
    }
  }
  std::optional<int64_t> n = checkedNumel(a.operands[0].shape);
  if (!known || !n)
    return fail(a, "shape", target + " or " + operandStr(a, 0) + " has more than 2^62 elements");
  std::string from = operandStr(a, 0) + " (" + std::to_string(*n) + " elements)";
  Shape out = shape;
  if (inferred) {
    // A -1 next to a 0 could be any size.
    if (*known == 0) return fail(a, "shape", "cannot infer the -1 in " + target + " for " + from);
    if (*n % *known != 0)
      return fail(a, "shape",
                  "cannot reshape " + from + " to " + target + ": " + std::to_string(*n) +
                      " is not a multiple of " + std::to_string(*known));
    out[*inferred] = *n / *known;
  } else if (*known != *n) {
    return fail(a, "shape",
                "cannot reshape " + from + " to " + target + " (" + std::to_string(*known) +
                    " elements)");
  }
  return done(a, TensorType{resultDType(a), out});
}

InferResult inferTranspose(const InferArgs &a) {
  const Shape &x = a.operands[0].shape;
  std::vector<int64_t> perm = ints(a, "perm");
  if (perm.empty())
    for (int64_t i = a.operands[0].rank(); i-- > 0;) perm.push_back(i);
  if (perm.size() != x.size())
    return fail(a, "shape",
                attrStr(a, "perm") + " has " + std::to_string(perm.size()) + " entries but " +
                    operandStr(a, 0) + " has rank " + std::to_string(x.size()));
  auto axes =
      normalizeAxes(a, "perm", perm, a.operands[0].rank(), [&] { return operandStr(a, 0); });
  if (auto *e = std::get_if<InferError>(&axes)) return *e;
  Shape out;
  for (int64_t p : std::get<std::vector<int64_t>>(axes)) out.push_back(x[p]);
  return done(a, TensorType{resultDType(a), out});
}

InferResult inferConcat(const InferArgs &a) {
  const Shape &first = a.operands[0].shape;
  if (first.empty()) return fail(a, "shape", "cannot concatenate the scalar " + operandStr(a, 0));
  auto axisOr = normalizeOne(a, "axis", a.operands[0].rank(), [&] { return operandStr(a, 0); });
  if (auto *e = std::get_if<InferError>(&axisOr)) return *e;
  size_t axis = static_cast<size_t>(std::get<int64_t>(axisOr));
  Shape out = first;
  for (size_t i = 1; i < a.operands.size(); ++i) {
    const Shape &s = a.operands[i].shape;
    if (s.size() != first.size())
      return fail(a, "shape",
                  operandStr(a, i) + " has rank " + std::to_string(s.size()) + " but " +
                      operandStr(a, 0) + " has rank " + std::to_string(first.size()));
    for (size_t d = 0; d < s.size(); ++d)
      if (d != axis && s[d] != first[d])
        return fail(a, "shape",
                    operandStr(a, i) + " does not match " + operandStr(a, 0) + " in dim " +
                        std::to_string(d) + ": " + std::to_string(s[d]) + " vs " +
                        std::to_string(first[d]) + " (only " + attrStr(a, "axis") + " may differ)");
    std::optional<int64_t> sum = checkedAdd(out[axis], s[axis]);
    if (!sum) return fail(a, "shape", "concatenated dim " + std::to_string(axis) + " overflows");
    out[axis] = *sum;
  }
  return done(a, TensorType{resultDType(a), out});
}

InferResult inferSlice(const InferArgs &a) {
  const std::vector<int64_t> &starts = ints(a, "starts"), &ends = ints(a, "ends");
  std::vector<int64_t> axes = ints(a, "axes"), steps = ints(a, "steps");
  if (ends.size() != starts.size())
    return fail(a, "attr",
                attrStr(a, "starts") + " and " + attrStr(a, "ends") + " differ in length");
  for (std::string_view name : {"axes", "steps"})
    if (!ints(a, name).empty() && ints(a, name).size() != starts.size())
      return fail(a, "attr",
                  attrStr(a, name) + " and " + attrStr(a, "starts") + " differ in length");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (std::find(steps.begin(), steps.end(), 0) != steps.end())
    return fail(a, "attr", attrStr(a, "steps") + " has a zero step");
  auto norm =
      normalizeAxes(a, "axes", axes, a.operands[0].rank(), [&] { return operandStr(a, 0); });
  if (auto *e = std::get_if<InferError>(&norm)) return *e;
  Shape out = a.operands[0].shape;
  const std::vector<int64_t> &dims = std::get<std::vector<int64_t>>(norm);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = out[dims[i]];
    if (d < 0) continue;  // a broken operand; done() reports it
    out[dims[i]] = resolveSliceDim(starts[i], ends[i], steps[i], d).count;
  }
  return done(a, TensorType{resultDType(a), out});
}

SliceAttrs sliceAttrs(const OpInfo &op, const Attrs &attrs) {
  SliceAttrs s{attrInts(op, attrs, "starts"), attrInts(op, attrs, "ends"),
               attrInts(op, attrs, "axes"), attrInts(op, attrs, "steps")};
  if (s.axes.empty())
    for (size_t i = 0; i < s.starts.size(); ++i) s.axes.push_back(static_cast<int64_t>(i));
  if (s.steps.empty()) s.steps.assign(s.starts.size(), 1);
  s.consistent = s.ends.size() == s.starts.size() && s.axes.size() == s.starts.size() &&
                 s.steps.size() == s.starts.size();
  return s;
}

SliceDim resolveSliceDim(int64_t start, int64_t end, int64_t step, int64_t dim) {
  FERRY_CHECK(step != 0 && dim >= 0) << "slice step " << step << " on dim " << dim;
  // Adding dim >= 0 to a negative bound cannot overflow.
  start = start < 0 ? start + dim : start;
  end = end < 0 ? end + dim : end;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    return {start, end > start ? (end - start - 1) / step + 1 : 0};
  }
  if (dim == 0) return {0, 0};
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  // -step overflows for the lowest int64; any step longer than the dim takes one element.
  int64_t magnitude = step == kLowest ? std::numeric_limits<int64_t>::max() : -step;
  return {start, start > end ? (start - end - 1) / magnitude + 1 : 0};
}

InferResult inferGather(const InferArgs &a) {
  const Shape &data = a.operands[0].shape;
  if (data.empty()) return fail(a, "shape", operandStr(a, 0) + " must be at least 1-D");
  auto axisOr = normalizeOne(a, "axis", a.operands[0].rank(), [&] { return operandStr(a, 0); });
  if (auto *e = std::get_if<InferError>(&axisOr)) return *e;
  size_t axis = static_cast<size_t>(std::get<int64_t>(axisOr));
  std::optional<int64_t> picks = checkedNumel(a.operands[1].shape);
  if (data[axis] == 0 && picks && *picks != 0)
    return fail(a, "shape",
                "cannot take " + operandStr(a, 1) + " from the empty dim " + std::to_string(axis) +
                    " of " + operandStr(a, 0));
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), a.operands[1].shape.begin(), a.operands[1].shape.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return done(a, TensorType{resultDType(a), out});
}

InferResult inferUnsqueeze(const InferArgs &a) {
  const Shape &x = a.operands[0].shape;
  int64_t rank = a.operands[0].rank() + static_cast<int64_t>(ints(a, "axes").size());
  auto axes = normalizeAxes(a, "axes", ints(a, "axes"), rank,
                            [&] { return "the result of unsqueezing " + operandStr(a, 0); });
  if (auto *e = std::get_if<InferError>(&axes)) return *e;
  Shape out(static_cast<size_t>(rank), 1);
  std::vector<bool> isNew(out.size(), false);
  for (int64_t axis : std::get<std::vector<int64_t>>(axes)) isNew[axis] = true;
  for (size_t i = 0, next = 0; i < out.size(); ++i)
    if (!isNew[i]) out[i] = x[next++];
  return done(a, TensorType{resultDType(a), out});
}

InferResult inferSqueeze(const InferArgs &a) {
  const Shape &x = a.operands[0].shape;
  std::vector<bool> drop(x.size(), false);
  if (ints(a, "axes").empty()) {
    for (size_t i = 0; i < x.size(); ++i) drop[i] = x[i] == 1;
  } else {
    auto axes = normalizeAxes(a, "axes", ints(a, "axes"), a.operands[0].rank(),
                              [&] { return operandStr(a, 0); });
    if (auto *e = std::get_if<InferError>(&axes)) return *e;
    for (int64_t axis : std::get<std::vector<int64_t>>(axes)) {
      if (x[axis] != 1)
        return fail(a, "shape",
                    "cannot squeeze dim " + std::to_string(axis) + " of " + operandStr(a, 0) +
                        ": its size is " + std::to_string(x[axis]) + ", not 1");
      drop[axis] = true;
    }
  }
  Shape out;
  for (size_t i = 0; i < x.size(); ++i)
    if (!drop[i]) out.push_back(x[i]);
  return done(a, TensorType{resultDType(a), out});
}

InferResult inferFlatten(const InferArgs &a) {
  // torch.flatten treats a scalar as [1].
  Shape x = a.operands[0].shape.empty() ? Shape{1} : a.operands[0].shape;
  int64_t rank = static_cast<int64_t>(x.size());
  auto start = normalizeOne(a, "start", rank, [&] { return operandStr(a, 0); });
  if (auto *e = std::get_if<InferError>(&start)) return *e;
  auto end = normalizeOne(a, "end", rank, [&] { return operandStr(a, 0); });
  if (auto *e = std::get_if<InferError>(&end)) return *e;
  int64_t first = std::get<int64_t>(start), last = std::get<int64_t>(end);
  if (first > last)
    return fail(a, "shape",
                attrStr(a, "start") + " comes after " + attrStr(a, "end") + " for " +
                    operandStr(a, 0));
  std::optional<int64_t> merged = checkedNumel(
      std::span<const int64_t>(x).subspan(first, static_cast<size_t>(last - first + 1)));
  if (!merged) return fail(a, "shape", operandStr(a, 0) + " has more than 2^62 elements");
  Shape out(x.begin(), x.begin() + first);
  out.push_back(*merged);
  out.insert(out.end(), x.begin() + last + 1, x.end());
  return done(a, TensorType{resultDType(a), out});
}

InferResult inferExpand(const InferArgs &a) {
  const std::vector<int64_t> &shape = ints(a, "shape");
  for (int64_t d : shape)
    if (d < 0)
      return fail(a, "attr", attrStr(a, "shape") + " has the negative size " + std::to_string(d));
  const Shape *shapes[] = {&a.operands[0].shape, &shape};
  auto r = broadcastAll(
      shapes, [&](size_t i) { return i == 0 ? operandStr(a, 0) : "shape " + shapeStr(shape); });
  if (auto *msg = std::get_if<std::string>(&r)) return fail(a, "shape", *msg);
  return done(a, TensorType{resultDType(a), std::get<Shape>(r)});
}

// ---- types and sources --------------------------------------------------------------------

InferResult inferCast(const InferArgs &a) { return sameShape(a, attrDType(a.op, a.attrs, "to")); }

InferResult inferConstant(const InferArgs &a) {
  return done(a, attrTensor(a.op, a.attrs, "value").type());
}

}  // namespace ferry
