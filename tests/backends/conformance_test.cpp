// tests/backends/conformance_test.cpp — one backend conformance suite: every device kind x every
// op of the op table x every dtype the op accepts and the backend's capability table claims, each
// case run end to end through the public path and compared with the reference interpreter.
//
// A case (device kind, op, dtype) runs each variant of the op's recipe (shapes, attributes and
// value ranges: broadcasting, batches, strides, padding, groups, empty dims, integer wraparound,
// NaN and infinities, negative gather indices) as a one-op graph:
//   1. build   the graph with the Builder, inputs arriving on the device under test and the node
//              pinned to it; build() it with CompileOptions listing that device alone (transfers:
//              that device and one other, cpu <-> cpu:1 on this machine);
//   2. run     it through a Session (plan checked) on deterministic random inputs;
//   3. compare with reference::run on the same graph: movement ops, casts, transfers and
//              constants byte for byte; bool and integer results exactly; floats within a few
//              units of roundoff of the result dtype, scaled by the graph's values.
// Each variant runs on every device of the kind the suite exercises: cpu and the virtual cpu:1.
//
// The cases come from allOps() and kAllDTypes, never from a hand list: an op without a recipe
// fails EveryOpHasARecipe, so a new op cannot be skipped silently. A device kind without a backend
// in this build (cuda, today) or without hardware on this machine gets one case that is skipped
// with GTEST_SKIP() saying so. Each kind is one ctest (tests/CMakeLists.txt), each case a gtest
// named Backends/Conformance.MatchesTheReference/<kind>_<op>_<dtype>.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "backends/reference/interpreter.h"
#include "common/random_graph.h"
#include "common/value_check.h"
#include "frontend/builder.h"
#include "passes/lower.h"
#include "runtime/session.h"

namespace ferry {
namespace {

// ---- Recipes ------------------------------------------------------------------------------------

/// The values an operand holds.
enum class Values : uint8_t {
  Small,     ///< testutil::randomInputs': multiples of 1/64 in [-2, 2], integers in [-8, 8]
  Positive,  ///< multiples of 1/64 in [1/4, 2], integers in [1, 8] (log, sqrt, variances)
  Base,      ///< pow bases: positive floats, integers in [-4, 4] (u8: [0, 4])
  Exponent,  ///< pow exponents: floats as Small, integers in [0, 3]
  Edge,      ///< integers over their whole range (wraparound); floats Small with NaN, ±inf, -0
  Bytes,     ///< any bit pattern (NaN payloads included; bool 0 or 1): ops that move bytes
  Index,     ///< indices in [-indexRange, indexRange - 1]
};

struct Operand {
  Shape shape;
  Values values = Values::Small;
  std::optional<DType> dtype;  ///< unset: the case's dtype
  int64_t indexRange = 0;      ///< Values::Index only
};

/// For a transfer: which way it crosses, seen from the device under test.
enum class Route : uint8_t { None, Into, OutOf };

struct Variant {
  std::string what;  ///< named in failures: "[3,1,4] x [5,1]"
  std::vector<Operand> operands;
  std::vector<NamedAttr> attrs;
  bool bytes = false;  ///< compare byte for byte
  Route route = Route::None;
};

using Recipe = std::vector<Variant> (*)(OpKind op, DType dtype);

std::string describe(const std::vector<Operand> &operands) {
  std::string s;
  for (const Operand &o : operands) s += (s.empty() ? "" : " x ") + shapeStr(o.shape);
  return s.empty() ? "no operands" : s;
}

Variant variant(std::vector<Operand> operands, std::vector<NamedAttr> attrs = {},
                std::string note = "") {
  std::string what = describe(operands);
  for (const NamedAttr &a : attrs) {
    what += " " + a.name;
    if (const auto *v = std::get_if<std::vector<int64_t>>(&a.value)) what += shapeStr(*v);
    if (const auto *v = std::get_if<int64_t>(&a.value)) what += "=" + std::to_string(*v);
    if (const auto *v = std::get_if<bool>(&a.value)) what += *v ? "=true" : "=false";
    if (const auto *v = std::get_if<std::string>(&a.value)) what += "=" + *v;
    if (const auto *v = std::get_if<double>(&a.value)) what += "=" + std::to_string(*v);
  }
  if (!note.empty()) what += " (" + note + ")";
  return {std::move(what), std::move(operands), std::move(attrs)};
}

NamedAttr ints(std::string name, std::vector<int64_t> v) { return {std::move(name), std::move(v)}; }
NamedAttr int1(std::string name, int64_t v) { return {std::move(name), v}; }
NamedAttr flag(std::string name, bool v) { return {std::move(name), v}; }

/// A variant of `operands` with edge values.
void addEdge(std::vector<Variant> &vs, std::vector<Operand> operands) {
  for (Operand &o : operands) o.values = Values::Edge;
  vs.push_back(variant(std::move(operands), {}, "edge values"));
}

bool positiveDomain(OpKind op) {
  return op == OpKind::Log || op == OpKind::Sqrt || op == OpKind::Rsqrt;
}

std::vector<Variant> unaryRecipe(OpKind op, DType) {
  const Values v = positiveDomain(op) ? Values::Positive : Values::Small;
  std::vector<Variant> vs;
  for (const Shape &s : {Shape{2, 3, 4}, Shape{}, Shape{0, 5}, Shape{1}, Shape{1100}})
    vs.push_back(variant({{s, v}}));
  addEdge(vs, {{{4, 5}}});  // integers: neg and abs wrap; floats: NaN, infinities, -0
  if (op == OpKind::LeakyRelu) {
    for (double alpha : {0.2, -1.5}) {
      Variant x = vs.front();
      x.attrs.push_back({"alpha", alpha});
      x.what += " alpha=" + std::to_string(alpha);
      vs.push_back(std::move(x));
    }
  }
  if (op != OpKind::Gelu) return vs;
  std::vector<Variant> both;
  for (const char *mode : {"none", "tanh"})
    for (Variant x : vs) {
      x.attrs.push_back({"approximate", std::string(mode)});
      x.what += std::string(" approximate=") + mode;
      both.push_back(std::move(x));
    }
  return both;
}

std::vector<Variant> binaryRecipe(OpKind op, DType) {
  const Values a = op == OpKind::Pow ? Values::Base : Values::Small;
  const Values b = op == OpKind::Pow ? Values::Exponent : Values::Small;
  std::vector<Variant> vs;
  // Equal shapes; broadcasting each way and from scalars; empty and size-1; long rows.
  for (const auto &[x, y] : std::vector<std::pair<Shape, Shape>>{{{2, 3, 4}, {2, 3, 4}},
                                                                 {{3, 1, 4}, {5, 1}},
                                                                 {{}, {2, 3}},
                                                                 {{7}, {}},
                                                                 {{0, 3}, {1, 3}},
                                                                 {{1}, {1}},
                                                                 {{600}, {600}},
                                                                 {{4, 1}, {1, 700}}})
    vs.push_back(variant({{x, a}, {y, b}}));
  if (op != OpKind::Pow) {
    addEdge(vs, {{{3, 4}}, {{3, 4}}});
    addEdge(vs, {{{3, 1}}, {{1, 5}}});
  }
  return vs;
}

std::vector<Variant> whereRecipe(OpKind, DType) {
  std::vector<Variant> vs;
  for (const auto &[c, x, y] : std::vector<std::tuple<Shape, Shape, Shape>>{
           {{3, 1}, {1, 4}, {3, 4}}, {{2, 3}, {}, {}}, {{}, {2, 3}, {3}}, {{0, 4}, {1, 4}, {4}}})
    vs.push_back(variant({{c, Values::Small, DType::Bool}, {x}, {y}}));
  vs.push_back(variant(
      {{{5, 6}, Values::Small, DType::Bool}, {{5, 6}, Values::Edge}, {{5, 6}, Values::Edge}}, {},
      "edge values"));
  return vs;
}

std::vector<Variant> matmulRecipe(OpKind, DType t) {
  std::vector<Variant> vs;
  // 2-D, 1-D on either side and both, batches that broadcast each way, a matrix against a batch,
  // empty batch, row, column and contraction dims, size-1 dims, a contraction of 100.
  for (const auto &[x, y] : std::vector<std::pair<Shape, Shape>>{{{3, 4}, {4, 5}},
                                                                 {{4}, {4, 5}},
                                                                 {{3, 4}, {4}},
                                                                 {{4}, {4}},
                                                                 {{2, 1, 3, 4}, {5, 4, 2}},
                                                                 {{5, 3, 4}, {4, 2}},
                                                                 {{3, 4}, {2, 4, 5}},
                                                                 {{2, 3, 4}, {2, 4, 5}},
                                                                 {{3, 1, 2, 4}, {1, 2, 4, 3}},
                                                                 {{4}, {2, 4, 3}},
                                                                 {{2, 3, 4}, {4}},
                                                                 {{0, 4}, {4, 5}},
                                                                 {{3, 4}, {4, 0}},
                                                                 {{3, 0}, {0, 5}},
                                                                 {{2, 0, 4}, {4, 5}},
                                                                 {{0}, {0}},
                                                                 {{1, 1}, {1, 1}},
                                                                 {{1, 3, 1}, {1, 1}},
                                                                 {{2, 3, 100}, {2, 100, 7}},
                                                                 {{6, 100}, {100}}})
    vs.push_back(variant({{x}, {y}}));
  if (!isFloating(t)) addEdge(vs, {{{3, 5}}, {{2, 5, 4}}});  // products and sums wrap
  return vs;
}

std::vector<Variant> linearRecipe(OpKind, DType t) {
  std::vector<Variant> vs;
  // 1-D, 2-D and 3-D x; empty rows, outputs and contraction (the result is the bias).
  for (const auto &[x, w] : std::vector<std::pair<Shape, Shape>>{{{3, 4}, {5, 4}},
                                                                 {{2, 3, 4}, {5, 4}},
                                                                 {{4}, {5, 4}},
                                                                 {{1, 1}, {1, 1}},
                                                                 {{0, 4}, {5, 4}},
                                                                 {{3, 4}, {0, 4}},
                                                                 {{3, 0}, {5, 0}},
                                                                 {{2, 0, 3}, {2, 3}},
                                                                 {{6, 100}, {7, 100}},
                                                                 {{2, 2, 1}, {3, 1}}}) {
    vs.push_back(variant({{x}, {w}}));
    vs.push_back(variant({{x}, {w}, {{w[0]}}}));
  }
  if (!isFloating(t)) addEdge(vs, {{{2, 6}}, {{3, 6}}, {{3}}});
  return vs;
}

std::vector<Variant> conv2dRecipe(OpKind, DType) {
  struct Conv {
    Shape x, w;
    std::vector<NamedAttr> attrs;
  };
  const std::vector<Conv> convs{
      {{2, 3, 6, 5}, {4, 3, 3, 3}, {}},
      {{1, 2, 7, 7}, {3, 2, 3, 3}, {ints("stride", {2, 2}), ints("padding", {1, 1})}},
      // Asymmetric padding [top, left, bottom, right], stride and dilation per dim, groups.
      {{2, 4, 7, 6},
       {6, 2, 3, 2},
       {ints("stride", {2, 1}), ints("padding", {1, 2, 0, 1}), ints("dilation", {1, 2}),
        int1("groups", 2)}},
      {{1, 3, 9, 8}, {2, 3, 3, 3}, {ints("dilation", {2, 3}), ints("padding", {2, 0})}},
      // Depthwise, and with a channel multiplier of 2.
      {{2, 3, 5, 5}, {3, 1, 3, 3}, {int1("groups", 3), ints("padding", {1, 1})}},
      {{1, 4, 6, 6}, {8, 1, 3, 3}, {int1("groups", 4), ints("stride", {2, 2})}},
      // 1x1 kernels, plain, grouped, and with stride and padding.
      {{2, 5, 4, 3}, {3, 5, 1, 1}, {}},
      {{1, 6, 4, 4}, {4, 3, 1, 1}, {int1("groups", 2)}},
      {{1, 2, 5, 5}, {3, 2, 1, 1}, {ints("stride", {2, 2}), ints("padding", {1, 0, 0, 1})}},
      // Padding wider than the kernel; a kernel as large as the padded input; size 1.
      {{1, 1, 2, 2}, {1, 1, 2, 2}, {ints("padding", {3, 3})}},
      {{1, 2, 3, 3}, {1, 2, 5, 5}, {ints("padding", {1, 1})}},
      {{1, 1, 1, 1}, {1, 1, 1, 1}, {}},
      // Empty batch, output channels, input channels (an empty sum: the bias).
      {{0, 2, 4, 4}, {3, 2, 3, 3}, {}},
      {{1, 2, 4, 4}, {0, 2, 3, 3}, {}},
      {{2, 0, 4, 4}, {3, 0, 3, 3}, {ints("padding", {1, 1})}},
      {{1, 12, 8, 8}, {5, 12, 2, 2}, {}}};
  std::vector<Variant> vs;
  for (const Conv &c : convs) {
    vs.push_back(variant({{c.x}, {c.w}}, c.attrs));
    vs.push_back(variant({{c.x}, {c.w}, {{c.w[0]}}}, c.attrs));
  }
  return vs;
}

// Windows valid for both pools (avg_pool2d has no dilation) on a 7x6 input.
std::vector<std::vector<NamedAttr>> poolWindows() {
  return {
      {ints("kernel", {2, 2})},
      {ints("kernel", {3, 3}), ints("stride", {2, 2}), ints("padding", {1, 1})},
      {ints("kernel", {3, 2}), ints("stride", {1, 2})},
      {ints("kernel", {1, 1})},
      {ints("kernel", {7, 6})},
      {ints("kernel", {3, 3}), ints("stride", {2, 1}), ints("padding", {0, 1, 1, 0})},
      {ints("kernel", {2, 3}), ints("stride", {3, 2}), ints("padding", {1, 0, 0, 1})},
      // ceil_mode: the last window hangs past the input (and past the padding).
      {ints("kernel", {2, 2}), ints("stride", {2, 2}), flag("ceil_mode", true)},
      {ints("kernel", {3, 3}), ints("stride", {2, 2}), ints("padding", {1, 1}),
       flag("ceil_mode", true)},
      {ints("kernel", {4, 4}), ints("stride", {3, 3}), ints("padding", {2, 1, 0, 2}),
       flag("ceil_mode", true)},
  };
}

std::vector<Variant> maxPoolRecipe(OpKind, DType) {
  std::vector<std::vector<NamedAttr>> windows = poolWindows();
  windows.push_back({ints("kernel", {2, 2}), ints("dilation", {2, 3})});
  windows.push_back({ints("kernel", {3, 2}), ints("stride", {2, 1}), ints("padding", {2, 1}),
                     ints("dilation", {2, 2})});
  windows.push_back({ints("kernel", {2, 2}), ints("stride", {2, 2}), ints("padding", {1, 0, 0, 1}),
                     ints("dilation", {2, 1}), flag("ceil_mode", true)});
  std::vector<Variant> vs;
  for (const auto &w : windows)
    for (const Shape &s : {Shape{2, 3, 7, 6}, Shape{1, 1, 9, 8}}) vs.push_back(variant({{s}}, w));
  const std::vector<NamedAttr> small{ints("kernel", {1, 2}), ints("padding", {0, 1}),
                                     flag("ceil_mode", true)};
  for (const Shape &s :
       {Shape{0, 3, 4, 4}, Shape{2, 0, 4, 4}, Shape{1, 1, 1, 1}, Shape{1, 2, 1, 5}})
    vs.push_back(variant({{s}}, small));
  Variant edge = variant({{{2, 2, 4, 4}, Values::Edge}}, {ints("kernel", {2, 2})}, "edge values");
  vs.push_back(std::move(edge));  // NaN wins a window, -inf loses
  return vs;
}

std::vector<Variant> avgPoolRecipe(OpKind, DType) {
  std::vector<Variant> vs;
  for (auto w : poolWindows())
    for (bool includePad : {true, false}) {
      std::vector<NamedAttr> attrs = w;
      attrs.push_back(flag("count_include_pad", includePad));
      vs.push_back(variant({{{2, 3, 7, 6}}}, attrs));
    }
  const std::vector<NamedAttr> small{ints("kernel", {1, 2}), ints("padding", {0, 1}),
                                     flag("count_include_pad", false)};
  for (const Shape &s :
       {Shape{0, 3, 4, 4}, Shape{2, 0, 4, 4}, Shape{1, 1, 1, 1}, Shape{1, 2, 1, 5}})
    vs.push_back(variant({{s}}, small));
  return vs;
}

std::vector<Variant> globalAvgPoolRecipe(OpKind, DType) {
  std::vector<Variant> vs;
  for (const Shape &s : {Shape{2, 3, 5, 4}, Shape{1, 1, 1, 1}, Shape{3, 2, 40, 30},
                         Shape{0, 3, 2, 2}, Shape{2, 0, 2, 2}, Shape{1, 2, 0, 3}})
    vs.push_back(variant({{s}}));
  return vs;
}

std::vector<Variant> batchNormRecipe(OpKind, DType) {
  std::vector<Variant> vs;
  for (const Shape &s : {Shape{2, 3, 4, 5}, Shape{4, 3}, Shape{2, 3, 1, 1}, Shape{1, 1},
                         Shape{0, 3, 2, 2}, Shape{2, 3, 0}, Shape{2, 5, 2000}, Shape{3, 1100}})
    for (double eps : {1e-5, 0.5}) {
      const Shape c{s[1]};
      vs.push_back(variant({{s}, {c}, {c}, {c}, {c, Values::Positive}}, {{"eps", eps}}));
    }
  return vs;
}

std::vector<Variant> layerNormRecipe(OpKind, DType) {
  std::vector<Variant> vs;
  for (const auto &[shape, axis] : std::vector<std::pair<Shape, int64_t>>{{{2, 3, 4}, -1},
                                                                          {{2, 3, 4}, 1},
                                                                          {{2, 3, 4}, 0},
                                                                          {{2, 3, 4}, -2},
                                                                          {{3, 2500}, -1},
                                                                          {{0, 4}, 1},
                                                                          {{4, 1}, -1},
                                                                          {{1}, 0},
                                                                          {{5, 0}, 1}}) {
    const size_t from = static_cast<size_t>(axis < 0 ? axis + std::ssize(shape) : axis);
    const Shape normalized(shape.begin() + static_cast<std::ptrdiff_t>(from), shape.end());
    std::vector<Operand> operands{{shape}};
    for (int i = 0; i < 3; ++i) {
      vs.push_back(variant(operands, {int1("axis", axis), {"eps", 1e-3}}));
      operands.push_back({normalized});
    }
  }
  return vs;
}

std::vector<Variant> reduceRecipe(OpKind op, DType) {
  std::vector<Variant> vs;
  // Every axes combination of a 3-D tensor, named both ways, keepdims both ways, on shapes with
  // size-1 dims and longer rows.
  const std::vector<std::vector<int64_t>> axesSets{
      {}, {0}, {1}, {2}, {-1}, {0, 2}, {0, 1}, {1, 2}, {2, 0}, {-3, -1}, {-2}, {0, 1, 2}};
  for (const Shape &s : {Shape{2, 3, 4}, Shape{3, 1, 5}, Shape{1, 40, 30}})
    for (const auto &axes : axesSets)
      for (bool keepdims : {false, true})
        vs.push_back(variant({{s}}, {ints("axes", axes), flag("keepdims", keepdims)}));
  // Scalars; reduced and kept dims alternating, size-1 dims between them.
  for (bool keepdims : {false, true}) vs.push_back(variant({{{}}}, {flag("keepdims", keepdims)}));
  for (const auto &axes : std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}, {0, 3}, {1, 2}})
    vs.push_back(variant({{{3, 4, 1, 5}}}, {ints("axes", axes)}));
  // Empty results; sum over nothing is 0 (max over an empty set is an error shape inference
  // reports, so max keeps its reduced dims non-empty).
  vs.push_back(variant({{{0, 3}}}, {ints("axes", {1})}));
  if (op != OpKind::Max) vs.push_back(variant({{{0, 3}}}, {ints("axes", {0})}));
  // Integers over their whole range: sums wrap at 64 bits; NaN wins a float max and sum.
  Variant edge = variant({{{3, 5}, Values::Edge}}, {ints("axes", {1})}, "edge values");
  vs.push_back(edge);
  return vs;
}

std::vector<Variant> softmaxRecipe(OpKind, DType) {
  std::vector<Variant> vs;
  for (const auto &[shape, axis] : std::vector<std::pair<Shape, int64_t>>{{{3, 4, 5}, 0},
                                                                          {{3, 4, 5}, 1},
                                                                          {{3, 4, 5}, 2},
                                                                          {{3, 4, 5}, -1},
                                                                          {{3, 4, 5}, -2},
                                                                          {{3, 4, 5}, -3},
                                                                          {{3, 2100}, -1},
                                                                          {{2, 5, 300}, 1},
                                                                          {{2, 3, 700}, 0},
                                                                          {{0, 5}, -1},
                                                                          {{5, 0}, 0},
                                                                          {{4, 1}, 1},
                                                                          {{1, 1, 1}, 1},
                                                                          {{7}, 0}})
    vs.push_back(variant({{shape}}, {int1("axis", axis)}));
  return vs;
}

std::vector<Variant> bytesOf(std::vector<Variant> vs) {
  for (Variant &v : vs) {
    v.bytes = true;
    for (Operand &o : v.operands)
      if (o.values == Values::Small) o.values = Values::Bytes;
  }
  return vs;
}

std::vector<Variant> reshapeRecipe(OpKind, DType) {
  return bytesOf({variant({{{2, 3, 2}}}, {ints("shape", {4, -1})}),
                  variant({{{2, 3, 4}}}, {ints("shape", {24})}),
                  variant({{{}}}, {ints("shape", {1, 1})}),
                  variant({{{0, 3}}}, {ints("shape", {3, 0})})});
}

std::vector<Variant> transposeRecipe(OpKind, DType) {
  std::vector<Variant> vs;
  for (const auto &[shape, perm] :
       std::vector<std::pair<Shape, std::vector<int64_t>>>{{{2, 3, 4, 5}, {}},
                                                           {{2, 3, 4, 5}, {-1, 0, -2, 1}},
                                                           {{2, 3, 4, 5}, {0, 2, 1, 3}},
                                                           {{2, 3, 4, 5}, {3, 1, 0, 2}},
                                                           {{3, 1, 4, 1}, {2, 0, 3, 1}},
                                                           {{2, 0, 3, 1}, {1, 3, 2, 0}},
                                                           {{}, {}},
                                                           {{7}, {}},
                                                           {{5, 9}, {}},
                                                           {{3, 5, 2}, {1, 2, 0}}})
    vs.push_back(perm.empty() ? variant({{shape}}) : variant({{shape}}, {ints("perm", perm)}));
  return bytesOf(vs);
}

std::vector<Variant> concatRecipe(OpKind, DType) {
  std::vector<Variant> vs;
  const int64_t sizes[] = {2, 0, 3, 1};  // along the axis, per operand
  for (int64_t axis : {0, 1, 2, -1, -3})
    for (size_t count : {1, 2, 3, 4}) {
      std::vector<Operand> operands;
      for (size_t i = 0; i < count; ++i) {
        Shape s{2, 3, 4};
        s[static_cast<size_t>(axis < 0 ? axis + 3 : axis)] = sizes[i];
        operands.push_back({s});
      }
      vs.push_back(variant(operands, {int1("axis", axis)}));
    }
  vs.push_back(variant({{{0, 3}}, {{0, 3}}}));
  vs.push_back(variant({{{5}}, {{1}}}));
  return bytesOf(vs);
}

std::vector<Variant> sliceRecipe(OpKind, DType) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  using A = std::vector<NamedAttr>;
  std::vector<Variant> vs;
  for (const A &attrs : std::vector<A>{
           // axes default to 0, 1, ...; steps to 1
           {ints("starts", {1}), ints("ends", {3})},
           {ints("starts", {0, 1, 2}), ints("ends", {4, 5, 6}), ints("steps", {1, 2, 3})},
           // negative steps, negative and clamped bounds
           {ints("starts", {-1}), ints("ends", {-100}), ints("axes", {2}), ints("steps", {-1})},
           {ints("starts", {3, 10}), ints("ends", {0, -10}), ints("axes", {0, 2}),
            ints("steps", {-2, -3})},
           {ints("starts", {-100}), ints("ends", {100}), ints("axes", {1}), ints("steps", {2})},
           {ints("starts", {4, 5, 6}), ints("ends", {kMin, kMin, kMin}),
            ints("steps", {-1, -1, -1})},
           // a subset of the axes, negative and out of order
           {ints("starts", {1}), ints("ends", {-1}), ints("axes", {-1})},
           {ints("starts", {1, 0}), ints("ends", {3, 2}), ints("axes", {2, 0})},
           // whole rows, a single element, nothing
           {ints("starts", {1}), ints("ends", {kMax}), ints("axes", {0})},
           {ints("starts", {2, 3, 4}), ints("ends", {3, 4, 5})},
           {ints("starts", {3}), ints("ends", {1}), ints("axes", {1})},
           // steps longer than the dim take one element
           {ints("starts", {0, -1}), ints("ends", {kMax, kMin}), ints("axes", {1, 2}),
            ints("steps", {1000, kMin})},
           {ints("starts", {1}), ints("ends", {4}), ints("axes", {0}), ints("steps", {kMax})}})
    vs.push_back(variant({{{4, 5, 6}}}, attrs));
  vs.push_back(variant({{{0, 5}}}, {ints("starts", {1}), ints("ends", {4}), ints("axes", {1}),
                                    ints("steps", {-1})}));
  vs.push_back(variant({{{}}}, {ints("starts", {}), ints("ends", {})}));
  return bytesOf(vs);
}

std::vector<Variant> gatherRecipe(OpKind, DType) {
  std::vector<Variant> vs;
  const Shape data{3, 4, 5};
  for (int64_t axis : {0, 1, 2, -1}) {
    const int64_t dim = data[static_cast<size_t>(axis < 0 ? axis + 3 : axis)];
    for (DType it : {DType::I32, DType::I64})
      for (const Shape &is : {Shape{4}, Shape{2, 3}, Shape{}, Shape{0}})
        vs.push_back(variant({{data}, {is, Values::Index, it, dim}}, {int1("axis", axis)},
                             std::string(dtypeName(it)) + " indices"));
  }
  vs.push_back(variant({{{3, 0}}, {{2}, Values::Index, DType::I32, 3}}));
  vs.push_back(variant({{{6}}, {{3, 2}, Values::Index, DType::I64, 6}}));
  return bytesOf(vs);
}

std::vector<Variant> unsqueezeRecipe(OpKind, DType) {
  return bytesOf({variant({{{3, 4}}}, {ints("axes", {0})}),
                  variant({{{3, 4}}}, {ints("axes", {-1, 1})}),
                  variant({{{}}}, {ints("axes", {0})}), variant({{{0, 2}}}, {ints("axes", {1})})});
}

std::vector<Variant> squeezeRecipe(OpKind, DType) {
  return bytesOf({variant({{{1, 3, 1, 4}}}), variant({{{1, 3, 1, 4}}}, {ints("axes", {2})}),
                  variant({{{1, 3, 1, 4}}}, {ints("axes", {0, -2})}), variant({{{1}}}),
                  variant({{{0, 1}}}, {ints("axes", {1})})});
}

std::vector<Variant> flattenRecipe(OpKind, DType) {
  return bytesOf({variant({{{2, 3, 4}}}), variant({{{2, 3, 4}}}, {int1("start", 1)}),
                  variant({{{2, 3, 4, 5}}}, {int1("start", 1), int1("end", 2)}),
                  variant({{{2, 3, 4}}}, {int1("start", -2), int1("end", -1)}), variant({{{}}}),
                  variant({{{0, 3}}})});
}

std::vector<Variant> expandRecipe(OpKind, DType) {
  std::vector<Variant> vs;
  for (const auto &[from, to] : std::vector<std::pair<Shape, Shape>>{{{3, 1}, {3, 4}},
                                                                     {{1, 4}, {3, 4}},
                                                                     {{4}, {2, 3, 4}},
                                                                     {{}, {2, 3}},
                                                                     {{2, 1, 3, 1}, {2, 5, 3, 4}},
                                                                     {{3, 1}, {1, 2}},
                                                                     {{2, 3}, {3}},
                                                                     {{2, 3}, {1, 1}},
                                                                     {{1}, {0}},
                                                                     {{1, 3}, {0, 3}},
                                                                     {{0, 1}, {0, 5}},
                                                                     {{1, 1, 1}, {2, 1, 3}},
                                                                     {{5, 1, 1}, {5, 2, 3}},
                                                                     {{1}, {1}}})
    vs.push_back(variant({{from}}, {ints("shape", to)}));
  return bytesOf(vs);
}

// Into every dtype, bit for bit (the reference's rounding, truncation and saturation).
std::vector<Variant> castRecipe(OpKind, DType) {
  std::vector<Variant> vs;
  for (DType to : kAllDTypes)
    for (Values v : {Values::Small, Values::Edge}) {
      Variant x = variant({{{4, 33}, v}}, {{"to", to}}, v == Values::Edge ? "edge values" : "");
      x.what += std::string(" to ") + std::string(dtypeName(to));
      x.bytes = true;
      vs.push_back(std::move(x));
    }
  vs.push_back(variant({{{0, 3}}}, {{"to", DType::F32}}));
  vs.back().bytes = true;
  return vs;
}

// Both ways between the device under test and another device; the graph builder fills in `to`.
std::vector<Variant> transferRecipe(OpKind, DType) {
  std::vector<Variant> vs;
  for (Route r : {Route::Into, Route::OutOf})
    for (const Shape &s : {Shape{3, 70}, Shape{}, Shape{0, 4}}) {
      Variant x = variant({{s}}, {}, r == Route::Into ? "into the device" : "out of the device");
      x.route = r;
      vs.push_back(std::move(x));
    }
  return bytesOf(vs);
}

TensorData valuesOf(DType t, const Shape &shape, Values v, uint64_t seed, int64_t indexRange = 0);

// A constant's value is a weight uploaded once per Session: its bytes must arrive unchanged.
std::vector<Variant> constantRecipe(OpKind, DType t) {
  std::vector<Variant> vs;
  for (const Shape &s : {Shape{2, 3, 2}, Shape{}, Shape{0, 2}}) {
    vs.push_back(variant({}, {{"value", valuesOf(t, s, Values::Bytes, 77)}}));
    vs.back().what = "value " + TensorType{t, s}.str();
  }
  return bytesOf(vs);
}

std::vector<Variant> identityRecipe(OpKind, DType) {
  return bytesOf({variant({{{2, 3}}}), variant({{{}}}), variant({{{1100}}})});
}

/// One recipe per op. A row here is all a new op needs to be covered.
const std::vector<std::pair<OpKind, Recipe>> &recipes() {
  static const std::vector<std::pair<OpKind, Recipe>> table = {
      {OpKind::Neg, unaryRecipe},
      {OpKind::Abs, unaryRecipe},
      {OpKind::Exp, unaryRecipe},
      {OpKind::Log, unaryRecipe},
      {OpKind::Sqrt, unaryRecipe},
      {OpKind::Rsqrt, unaryRecipe},
      {OpKind::Tanh, unaryRecipe},
      {OpKind::Sigmoid, unaryRecipe},
      {OpKind::Relu, unaryRecipe},
      {OpKind::Gelu, unaryRecipe},
      {OpKind::Erf, unaryRecipe},
      {OpKind::Silu, unaryRecipe},
      {OpKind::LeakyRelu, unaryRecipe},
      {OpKind::Add, binaryRecipe},
      {OpKind::Sub, binaryRecipe},
      {OpKind::Mul, binaryRecipe},
      {OpKind::Div, binaryRecipe},
      {OpKind::Pow, binaryRecipe},
      {OpKind::Maximum, binaryRecipe},
      {OpKind::Minimum, binaryRecipe},
      {OpKind::Equal, binaryRecipe},
      {OpKind::Less, binaryRecipe},
      {OpKind::Greater, binaryRecipe},
      {OpKind::Where, whereRecipe},
      {OpKind::Matmul, matmulRecipe},
      {OpKind::Linear, linearRecipe},
      {OpKind::Conv2d, conv2dRecipe},
      {OpKind::MaxPool2d, maxPoolRecipe},
      {OpKind::AvgPool2d, avgPoolRecipe},
      {OpKind::GlobalAvgPool, globalAvgPoolRecipe},
      {OpKind::BatchNorm, batchNormRecipe},
      {OpKind::LayerNorm, layerNormRecipe},
      {OpKind::Sum, reduceRecipe},
      {OpKind::Mean, reduceRecipe},
      {OpKind::Max, reduceRecipe},
      {OpKind::Softmax, softmaxRecipe},
      {OpKind::LogSoftmax, softmaxRecipe},
      {OpKind::Reshape, reshapeRecipe},
      {OpKind::Transpose, transposeRecipe},
      {OpKind::Concat, concatRecipe},
      {OpKind::Slice, sliceRecipe},
      {OpKind::Gather, gatherRecipe},
      {OpKind::Unsqueeze, unsqueezeRecipe},
      {OpKind::Squeeze, squeezeRecipe},
      {OpKind::Flatten, flattenRecipe},
      {OpKind::Expand, expandRecipe},
      {OpKind::Cast, castRecipe},
      {OpKind::Transfer, transferRecipe},
      {OpKind::Constant, constantRecipe},
      {OpKind::Identity, identityRecipe},
  };
  return table;
}

Recipe recipeFor(OpKind op) {
  for (const auto &[k, r] : recipes())
    if (k == op) return r;
  return nullptr;
}

// ---- Values -------------------------------------------------------------------------------------

std::pair<int64_t, int64_t> intRange(DType t) {
  switch (t) {
    case DType::Bool: return {0, 1};
    case DType::U8: return {0, 255};
    case DType::I8: return {-128, 127};
    case DType::I32:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    default: return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  }
}

TensorData valuesOf(DType t, const Shape &shape, Values v, uint64_t seed, int64_t indexRange) {
  TensorData d(t, shape);
  testutil::Rng rng(seed * 0x9e3779b97f4a7c15ull + 1);
  if (v == Values::Bytes && t != DType::Bool) {
    for (std::byte &b : d.mutableBytes()) b = static_cast<std::byte>(rng.next() & 0xff);
    return d;
  }
  const bool floating = isFloating(t);
  const auto [lo, hi] = intRange(t);
  for (int64_t i = 0; i < d.numel(); ++i) {
    if (t == DType::Bool) {
      d.setInt(i, rng.below(2));
      continue;
    }
    switch (v) {
      case Values::Small:
      case Values::Bytes:
        if (floating)
          d.set(i, static_cast<double>(rng.range(-128, 128)) / 64.0);
        else
          d.setInt(i, rng.range(t == DType::U8 ? 0 : -8, 8));
        break;
      case Values::Positive:
        if (floating)
          d.set(i, static_cast<double>(rng.range(16, 128)) / 64.0);
        else
          d.setInt(i, rng.range(1, 8));
        break;
      case Values::Base:
        if (floating)
          d.set(i, static_cast<double>(rng.range(16, 128)) / 64.0);
        else
          d.setInt(i, rng.range(t == DType::U8 ? 0 : -4, 4));
        break;
      case Values::Exponent:
        if (floating)
          d.set(i, static_cast<double>(rng.range(-128, 128)) / 64.0);
        else
          d.setInt(i, rng.range(0, 3));
        break;
      case Values::Edge:
        // The first elements are each special value in turn (rotated by the seed, so that two
        // operands pair them differently), then some at random among ordinary ones: every special
        // value reaches the vectorised body of a kernel as well as its scalar tail.
        if (floating) {
          const double special[] = {NAN, INFINITY, -INFINITY, -0.0};
          if (i < 4)
            d.set(i, special[(static_cast<uint64_t>(i) + seed) % 4]);
          else
            d.set(i, rng.chance(0.25) ? special[rng.below(4)]
                                      : static_cast<double>(rng.range(-128, 128)) / 64.0);
        } else if (i < 5 || rng.chance(0.25)) {
          const int64_t extreme[] = {lo, hi, lo + 1, hi - 1, 0};
          d.setInt(i, extreme[i < 5 ? (static_cast<uint64_t>(i) + seed) % 5 : rng.below(5)]);
        } else if (t == DType::I64) {
          d.setInt(i, static_cast<int64_t>(rng.next()));
        } else {
          d.setInt(i, lo + static_cast<int64_t>(rng.next() % static_cast<uint64_t>(hi - lo + 1)));
        }
        break;
      case Values::Index: {
        // The bounds first (0, the last, -1, the first counted from the end), then at random.
        const int64_t bounds[] = {0, indexRange - 1, -1, -indexRange};
        d.setInt(i, i < 4 ? bounds[i] : rng.range(-indexRange, indexRange - 1));
        break;
      }
    }
  }
  return d;
}

// ---- Devices and cases --------------------------------------------------------------------------

constexpr DeviceKind kDeviceKinds[] = {DeviceKind::Cpu, DeviceKind::Cuda};

std::string kindName(DeviceKind k) {
  std::string s = Device{k, 0}.str();
  return s.substr(0, s.find(':'));
}

/// The devices of `kind` the suite runs on: two where the backend drives two (a second device
/// exercises per-device memory: cpu:1 is a virtual device), one where it drives one; none, with
/// the reason in `why`, where this build has no backend for the kind or this machine no device.
std::vector<Device> devicesUnderTest(DeviceKind kind, std::string *why = nullptr) {
  const BackendEntry *entry = findBackend(builtinBackends(), kind);
  if (!entry) {
    if (why) *why = "no backend for " + kindName(kind) + " is registered in this build";
    return {};
  }
  for (int n : {2, 1})
    if (entry->device && entry->device(DeviceOptions{.devices = n}).ok()) {
      std::vector<Device> ds;
      for (int i = 0; i < n; ++i) ds.push_back(Device{kind, i});
      return ds;
    }
  if (!entry->device) {
    if (why) *why = "the registry entry for " + kindName(kind) + " makes no device runtime";
    return {};
  }
  Expected<std::unique_ptr<DeviceRuntime>> b = entry->device(DeviceOptions{});
  if (why) *why = "no " + kindName(kind) + " device on this machine: " + b.status().message();
  return {};
}

/// The other end of a transfer from or to `d`: the host, or cpu:1 when `d` is the host.
Device otherDevice(Device d) { return d == Device::cpu() ? Device::cpu(1) : Device::cpu(); }

struct Case {
  DeviceKind kind = DeviceKind::Cpu;
  OpKind op = OpKind::Identity;
  std::optional<DType> dtype;  ///< unset: the kind's skipped placeholder
  std::string skip;            ///< the placeholder's reason
};

std::vector<TensorType> typesOf(const Variant &v, DType t) {
  std::vector<TensorType> types;
  for (const Operand &o : v.operands) types.push_back({o.dtype.value_or(t), o.shape});
  return types;
}

/// Whether `op` takes `t` with its recipe's first variant, and the table claims a kernel for it on
/// `kind`, in the dtype the op computes in (placement's question: the result's dtype, for a
/// comparison the operands').
bool claimed(const Capabilities &caps, DeviceKind kind, OpKind op, DType t) {
  const OpInfo &info = opInfo(op);
  const std::vector<Variant> vs = recipeFor(op)(op, t);
  Expected<Attrs> attrs = makeAttrs(info, vs.front().attrs, {});
  if (!attrs) return false;
  InferResult r = inferType(info, typesOf(vs.front(), t), *attrs);
  if (!std::holds_alternative<TensorType>(r)) return false;
  const DType compute = info.dtypeRule == DTypeRule::Compare ? t : std::get<TensorType>(r).dtype;
  return caps.supports(Device{kind, 0}, op, compute);
}

std::vector<Case> allCases() {
  std::vector<Case> cases;
  const Capabilities caps = backendCapabilities();
  for (DeviceKind kind : kDeviceKinds) {
    std::string why;
    if (devicesUnderTest(kind, &why).empty()) {
      cases.push_back({kind, OpKind::Identity, std::nullopt, why});
      continue;
    }
    for (const OpInfo &info : allOps()) {
      if (!recipeFor(info.kind)) continue;  // EveryOpHasARecipe fails
      for (DType t : kAllDTypes)
        if (claimed(caps, kind, info.kind, t)) cases.push_back({kind, info.kind, t, ""});
    }
  }
  return cases;
}

/// "cpu_matmul_f16"; "cuda_unavailable" for a kind's skipped placeholder.
std::string caseName(const Case &c) {
  if (!c.dtype) return kindName(c.kind) + "_unavailable";
  return kindName(c.kind) + "_" + std::string(opInfo(c.op).name) + "_" +
         std::string(dtypeName(*c.dtype));
}

std::string paramName(const ::testing::TestParamInfo<Case> &info) { return caseName(info.param); }

// gtest prints a case's parameter by its name, not its bytes.
void PrintTo(const Case &c, std::ostream *out) { *out << caseName(c); }

// ---- Running one variant ------------------------------------------------------------------------

struct OneOp {
  Graph graph;
  std::map<std::string, TensorData> inputs;
  std::map<std::string, Device> arrivesOn;
  std::vector<Device> devices;  ///< for CompileOptions, sorted
};

Expected<OneOp> oneOpGraph(OpKind op, DType t, const Variant &v, Device d, uint64_t seed) {
  Builder b("conformance");
  OneOp g;
  const Device from = v.route == Route::Into ? otherDevice(d) : d;
  std::vector<Var> operands;
  for (size_t i = 0; i < v.operands.size(); ++i) {
    const Operand &o = v.operands[i];
    const std::string name = "x" + std::to_string(i);
    const DType dt = o.dtype.value_or(t);
    operands.push_back(b.input(name, dt, o.shape, from));
    g.inputs.emplace(name, valuesOf(dt, o.shape, o.values, seed + i, o.indexRange));
    g.arrivesOn.emplace(name, from);
  }
  std::vector<NamedAttr> attrs = v.attrs;
  Var y;
  if (v.route != Route::None) {
    const Device to = v.route == Route::Into ? d : otherDevice(d);
    attrs.push_back({"to", to});
    y = b.op(op, operands, attrs);
    g.devices = {std::min(d, otherDevice(d)), std::max(d, otherDevice(d))};
  } else {
    auto on = b.on(d);
    y = b.op(op, operands, attrs);
    g.devices = {d};
  }
  b.output("y", y);
  Expected<Graph> graph = std::move(b).finish();
  if (!graph) return graph.status();
  g.graph = std::move(*graph);
  return g;
}

// Tolerance in units of roundoff of the result dtype, times the largest value the graph computes:
// the kernels compute f16/bf16 in f32 and round once (a few units), and use vectorised math
// accurate to a few ulps and other summation orders in f32/f64.
double toleranceFor(DType result) {
  return (result == DType::F16 || result == DType::BF16 ? 8 : 128) * testutil::unitRoundoff(result);
}

std::string sameBytes(const TensorData &want, const TensorData &got) {
  if (want.type() != got.type()) return got.type().str() + ", expected " + want.type().str();
  const size_t size = dtypeSize(want.dtype());
  for (int64_t i = 0; i < want.numel(); ++i) {
    const size_t at = static_cast<size_t>(i) * size;
    if (std::memcmp(want.bytes().data() + at, got.bytes().data() + at, size) != 0)
      return "element " + std::to_string(i) + " is " + std::to_string(got.at(i)) + ", expected " +
             std::to_string(want.at(i)) + " (bytes differ)";
  }
  return "";
}

/// "" when the variant runs on `d` as the reference runs it, else what went wrong.
std::string runVariant(OpKind op, DType t, const Variant &v, Device d, uint64_t seed) {
  Expected<OneOp> g = oneOpGraph(op, t, v, d, seed);
  if (!g) return "the builder rejects the graph: " + g.status().message();
  CompileOptions options;
  options.devices = g->devices;
  options.target = d;
  Expected<Executable> exe = build(g->graph, options);
  if (!exe) return "build: " + exe.status().message();
  Session::Options so;
  so.checkPlan = true;
  Expected<Session> session = Session::create(std::move(*exe), so);
  if (!session) return "Session::create: " + session.status().message();
  std::vector<NamedTensor> given;
  for (const auto &[name, data] : g->inputs) {
    Expected<Tensor> on = Tensor(data).to(g->arrivesOn.at(name));
    if (!on) return "Tensor::to: " + on.status().message();
    given.push_back({name, *on});
  }
  Expected<RunResult> got = session->run(given);
  Expected<std::vector<TensorData>> want = reference::run(g->graph, g->inputs);
  if (!want) return "the reference fails: " + want.status().message();
  if (!got) return "run: " + got.status().message();
  if (got->outputs.size() != 1)
    return "the session returns " + std::to_string(got->outputs.size()) + " outputs";
  const TensorData &out = got->outputs[0].tensor.data();
  const TensorData &ref = want->front();
  if (v.bytes) return sameBytes(ref, out);
  const double tol = toleranceFor(ref.dtype()) * testutil::valueScale(g->graph, g->inputs);
  return testutil::compareOutputs({ref}, {out}, tol);
}

// ---- Known kernel bugs --------------------------------------------------------------------------

/// A mismatch this suite found in a backend's kernel, reported and awaiting a fix in backends/. Its
/// variants still run: a mismatch is printed instead of failing the case, and once they match the
/// reference the case fails until the entry is removed, so that a fix is noticed.
struct KnownBug {
  DeviceKind kind;
  OpKind op;
  std::vector<DType> dtypes;
  std::string_view variant;  ///< a part of Variant::what
  std::string_view what;
};

const std::vector<KnownBug> &knownBugs() {
  // None known. (sqrt(+inf) gave NaN in the CPU's vectorised f32/f16/bf16 kernel until
  // backends/cpu/elementwise.cpp sqrtBlock put the +inf lanes back; this suite found it.)
  static const std::vector<KnownBug> bugs;
  return bugs;
}

const KnownBug *knownBug(DeviceKind kind, OpKind op, DType t, const Variant &v) {
  for (const KnownBug &b : knownBugs())
    if (b.kind == kind && b.op == op &&
        std::find(b.dtypes.begin(), b.dtypes.end(), t) != b.dtypes.end() &&
        v.what.find(b.variant) != std::string::npos)
      return &b;
  return nullptr;
}

// ---- The suite ----------------------------------------------------------------------------------

std::map<DeviceKind, int> &casesRun() {
  static std::map<DeviceKind, int> counts;
  return counts;
}

class Conformance : public ::testing::TestWithParam<Case> {};

TEST_P(Conformance, MatchesTheReference) {
  const Case &c = GetParam();
  if (!c.dtype) GTEST_SKIP() << kindName(c.kind) << " skipped: " << c.skip;
  const std::vector<Device> devices = devicesUnderTest(c.kind);
  ASSERT_FALSE(devices.empty());
  const DType t = *c.dtype;
  const std::vector<Variant> vs = recipeFor(c.op)(c.op, t);
  uint64_t seed = static_cast<uint64_t>(c.op) * 1000 + static_cast<uint64_t>(t) * 100000;
  int failures = 0;
  for (const Variant &v : vs) {
    ++seed;
    const KnownBug *bug = knownBug(c.kind, c.op, t, v);
    for (Device d : devices) {
      const std::string diff = runVariant(c.op, t, v, d, seed);
      const std::string where = std::string(opInfo(c.op).name) + " " + std::string(dtypeName(t)) +
                                " on " + d.str() + ", " + v.what;
      if (bug) {
        if (diff.empty())
          ADD_FAILURE() << where << " matches the reference: the known bug \"" << bug->what
                        << "\" is fixed, remove it from knownBugs()";
        else
          std::printf("known bug (%s): %s: %s\n", std::string(bug->what).c_str(), where.c_str(),
                      diff.c_str());
        continue;
      }
      if (diff.empty()) continue;
      ADD_FAILURE() << where << ": " << diff;
      if (++failures == 5) return;
    }
  }
  ++casesRun()[c.kind];
}

INSTANTIATE_TEST_SUITE_P(Backends, Conformance, ::testing::ValuesIn(allCases()), paramName);

// Prints, when the binary ends, how many cases ran per device kind in this process.
class CountCases : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const auto &[kind, n] : casesRun())
      if (n > 0) std::printf("conformance: %d %s cases ran\n", n, kindName(kind).c_str());
  }
};
const ::testing::Environment *const kCountCases =
    ::testing::AddGlobalTestEnvironment(new CountCases);

TEST(ConformanceSuite, EveryOpHasARecipe) {
  for (const OpInfo &info : allOps())
    EXPECT_NE(recipeFor(info.kind), nullptr)
        << "op '" << info.name << "' has no conformance recipe: add a row to recipes() in "
        << "tests/backends/conformance_test.cpp";
  for (const auto &[op, recipe] : recipes())
    for (DType t : kAllDTypes) {
      const std::vector<Variant> vs = recipe(op, t);
      EXPECT_FALSE(vs.empty()) << opInfo(op).name;
    }
}

// Each device kind runs as its own ctest, listed in tests/CMakeLists.txt: a kind missing there
// would run nowhere.
TEST(ConformanceSuite, EveryDeviceKindHasACtest) {
  const std::string listed = std::string(",") + FERRY_CONFORMANCE_KINDS + ",";
  for (DeviceKind k : kDeviceKinds)
    EXPECT_NE(listed.find("," + kindName(k) + ","), std::string::npos)
        << kindName(k) << " is missing from FERRY_CONFORMANCE_KINDS in tests/CMakeLists.txt";
}

// The cases per device kind, and a floor on them: a capability table or recipe that lost its
// entries would otherwise pass by running nothing.
TEST(ConformanceSuite, CountsCasesPerDeviceKind) {
  std::map<DeviceKind, int> perKind;
  for (const Case &c : allCases()) {
    if (!c.dtype) {
      std::printf("conformance: %s skipped (%s)\n", kindName(c.kind).c_str(), c.skip.c_str());
      continue;
    }
    ++perKind[c.kind];
  }
  for (const auto &[kind, n] : perKind) {
    std::string devices;
    for (Device d : devicesUnderTest(kind)) devices += (devices.empty() ? "" : ", ") + d.str();
    std::printf("conformance: %d %s cases (op x dtype), each on %s\n", n, kindName(kind).c_str(),
                devices.c_str());
  }
  EXPECT_GE(perKind[DeviceKind::Cpu], 250);
}

}  // namespace
}  // namespace ferry
