// frontend/builder.h — the C++ API users write models in.
//
//   Builder b("mlp");
//   Var x  = b.input("x", DType::F32, {32, 784});
//   Var w1 = b.param("fc1.weight", DType::F32, {256, 784}, Init::randn(1));
//   Var h  = b.relu(b.linear(x, w1));
//   { auto on = b.on(Device::cuda(0)); h = b.softmax(h); }
//   b.output("y", h);
//   Expected<Graph> g = std::move(b).finish();
//
// Every method records the caller's std::source_location, so diagnostics — the builder's own
// (shape mismatch, bad attribute) and every later pass's — point at the user's line. Errors do
// not throw: they are collected, the bad call returns a poisoned Var that later calls accept
// silently (no cascades), and finish() returns all of them at once.
#pragma once

#include <initializer_list>
#include <optional>
#include <source_location>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/graph.h"
#include "ir/literal.h"
#include "ir/status.h"

namespace ferry {

class Builder;

/// A handle to a value of one Builder. Default-constructed or poisoned Vars are invalid.
class Var {
 public:
  Var() = default;
  bool valid() const { return builder_ != nullptr && id_ >= 0; }
  ValueId id() const { return id_; }
  /// The value's inferred type; a poisoned Var has none (FERRY_CHECK).
  const TensorType &type() const;
  const Shape &shape() const { return type().shape; }
  DType dtype() const { return type().dtype; }

 private:
  friend class Builder;
  Var(const Builder *b, ValueId id) : builder_(b), id_(id) {}
  const Builder *builder_ = nullptr;
  ValueId id_ = -1;
};

/// An operand of the ops that take scalar literals (add, sub, mul, div, pow, maximum, minimum,
/// equal, less, greater, and where's a and b): a Var, or a C++ number or bool, which promotes as a
/// Python scalar does in PyTorch: `b.mul(h, 0.5)` keeps an f16 `h` in f16, `b.add(i, 1)` keeps
/// an i32 `i` in i32, `b.add(i, 0.5)` computes in f32 (ir/literal.h). It prints as `mul(%h, 0.5)`.
class Operand {
 public:
  Operand(Var v) : var_(v) {}
  /// A literal: `bool` is a bool literal, integers are integer literals, floating types float ones.
  template <class T>
  requires std::is_arithmetic_v<T> Operand(T v) : literal_(toLiteral(v)) {}

 private:
  friend class Builder;
  template <class T> static Literal toLiteral(T v) {
    if constexpr (std::is_same_v<T, bool>)
      return {DTypeCategory::Bool, v ? 1 : 0, 0};
    else if constexpr (std::is_integral_v<T>)
      return {DTypeCategory::Integer, static_cast<int64_t>(v), 0};
    else
      return {DTypeCategory::Floating, 0, static_cast<double>(v)};
  }
  Var var_;
  std::optional<Literal> literal_;
};

/// How a param is initialised without explicit data.
struct Init {
  Initializer::Kind kind = Initializer::Kind::Zeros;
  uint64_t seed = 0;
  static Init zeros() { return {Initializer::Kind::Zeros, 0}; }
  static Init ones() { return {Initializer::Kind::Ones, 0}; }
  static Init randn(uint64_t seed) { return {Initializer::Kind::Randn, seed}; }
};

struct Conv2dOptions {
  std::vector<int64_t> stride{1, 1};
  std::vector<int64_t> padding{0, 0};
  std::vector<int64_t> dilation{1, 1};
  int64_t groups = 1;
};

struct Pool2dOptions {
  std::vector<int64_t> kernel;
  std::vector<int64_t> stride;  ///< empty: = kernel
  std::vector<int64_t> padding{0, 0};
  std::vector<int64_t> dilation{1, 1};  ///< max_pool2d only
  bool ceilMode = false;
  bool countIncludePad = true;  ///< avg_pool2d only
};

struct SliceOptions {
  std::vector<int64_t> starts, ends;
  std::vector<int64_t> axes;   ///< empty: 0, 1, ...
  std::vector<int64_t> steps;  ///< empty: all 1
};

class Builder {
  using Loc = std::source_location;

 public:
  explicit Builder(std::string graphName = "main");
  Builder(const Builder &) = delete;
  Builder &operator=(const Builder &) = delete;

  // --- Graph interface -------------------------------------------------------------------
  /// A graph input; it arrives on `device` (a pin).
  Var input(std::string name, DType dtype, Shape shape, Device device = Device::cpu(),
            Loc loc = Loc::current());
  /// A weight with the given data; unpinned unless `device` is given (placement decides).
  Var param(std::string name, TensorData data, std::optional<Device> device = std::nullopt,
            Loc loc = Loc::current());
  Var param(std::string name, DType dtype, Shape shape, Init init,
            std::optional<Device> device = std::nullopt, Loc loc = Loc::current());
  /// Marks `v` as a graph output named `name` (the value is renamed to it).
  void output(std::string name, Var v, std::optional<Device> device = std::nullopt,
              Loc loc = Loc::current());

  // --- Pins --------------------------------------------------------------------------------
  /// While the returned scope lives, new nodes are pinned to `device` (scopes nest; the
  /// innermost wins). `auto on = b.on(Device::cuda(0));`
  class [[nodiscard]] Scope {
   public:
    Scope(Scope &&other) noexcept;
    Scope(const Scope &) = delete;
    ~Scope();

   private:
    friend class Builder;
    Scope(Builder *b, bool device) : b_(b), device_(device) {}
    Builder *b_;
    bool device_;
    size_t depth_ = 0;  ///< open scopes of the builder below this one (checks LIFO order)
  };
  Scope on(Device device);
  /// While the returned scope lives, new nodes are pinned to compute in `dtype`.
  Scope computeIn(DType dtype);

  // --- Ops (one per row of ir/ops.def) ----------------------------------------------------
  Var neg(Var x, Loc loc = Loc::current());
  Var abs(Var x, Loc loc = Loc::current());
  Var exp(Var x, Loc loc = Loc::current());
  Var log(Var x, Loc loc = Loc::current());
  Var sqrt(Var x, Loc loc = Loc::current());
  Var rsqrt(Var x, Loc loc = Loc::current());
  Var tanh(Var x, Loc loc = Loc::current());
  Var sigmoid(Var x, Loc loc = Loc::current());
  Var relu(Var x, Loc loc = Loc::current());
  /// `approximate`: "none" (erf form) or "tanh".
  Var gelu(Var x, std::string approximate = "none", Loc loc = Loc::current());
  Var erf(Var x, Loc loc = Loc::current());
  Var silu(Var x, Loc loc = Loc::current());

  // Binary ops and where take a literal for a data operand (Operand): `b.add(x, 1.0)`.
  Var add(Operand a, Operand b, Loc loc = Loc::current());
  Var sub(Operand a, Operand b, Loc loc = Loc::current());
  Var mul(Operand a, Operand b, Loc loc = Loc::current());
  Var div(Operand a, Operand b, Loc loc = Loc::current());
  Var pow(Operand a, Operand b, Loc loc = Loc::current());
  Var maximum(Operand a, Operand b, Loc loc = Loc::current());
  Var minimum(Operand a, Operand b, Loc loc = Loc::current());
  Var equal(Operand a, Operand b, Loc loc = Loc::current());
  Var less(Operand a, Operand b, Loc loc = Loc::current());
  Var greater(Operand a, Operand b, Loc loc = Loc::current());
  Var where(Var cond, Operand a, Operand b, Loc loc = Loc::current());

  Var matmul(Var a, Var b, Loc loc = Loc::current());
  /// x·Wᵀ (+ bias); pass a default Var for no bias.
  Var linear(Var x, Var weight, Var bias = {}, Loc loc = Loc::current());
  Var conv2d(Var x, Var weight, Var bias = {}, Conv2dOptions options = {},
             Loc loc = Loc::current());
  Var maxPool2d(Var x, Pool2dOptions options, Loc loc = Loc::current());
  Var avgPool2d(Var x, Pool2dOptions options, Loc loc = Loc::current());
  Var globalAvgPool(Var x, Loc loc = Loc::current());
  Var batchNorm(Var x, Var scale, Var bias, Var mean, Var var, double eps = 1e-5,
                Loc loc = Loc::current());
  /// Normalises dims [axis, rank); weight/bias optional (default Var).
  Var layerNorm(Var x, Var weight = {}, Var bias = {}, int64_t axis = -1, double eps = 1e-5,
                Loc loc = Loc::current());

  Var sum(Var x, std::vector<int64_t> axes = {}, bool keepdims = false, Loc loc = Loc::current());
  Var mean(Var x, std::vector<int64_t> axes = {}, bool keepdims = false, Loc loc = Loc::current());
  Var max(Var x, std::vector<int64_t> axes = {}, bool keepdims = false, Loc loc = Loc::current());
  Var softmax(Var x, int64_t axis = -1, Loc loc = Loc::current());
  Var logSoftmax(Var x, int64_t axis = -1, Loc loc = Loc::current());

  Var reshape(Var x, std::vector<int64_t> shape, Loc loc = Loc::current());
  /// Empty `perm` reverses the dims.
  Var transpose(Var x, std::vector<int64_t> perm = {}, Loc loc = Loc::current());
  Var concat(std::vector<Var> xs, int64_t axis = 0, Loc loc = Loc::current());
  Var slice(Var x, SliceOptions options, Loc loc = Loc::current());
  Var gather(Var data, Var indices, int64_t axis = 0, Loc loc = Loc::current());
  Var unsqueeze(Var x, std::vector<int64_t> axes, Loc loc = Loc::current());
  Var squeeze(Var x, std::vector<int64_t> axes = {}, Loc loc = Loc::current());
  Var flatten(Var x, int64_t start = 0, int64_t end = -1, Loc loc = Loc::current());
  Var expand(Var x, std::vector<int64_t> shape, Loc loc = Loc::current());

  Var cast(Var x, DType to, Loc loc = Loc::current());
  Var transfer(Var x, Device to, Loc loc = Loc::current());
  Var constant(TensorData value, Loc loc = Loc::current());
  /// A scalar constant (shape []) of `dtype`.
  Var constant(double value, DType dtype = DType::F32, Loc loc = Loc::current());
  Var identity(Var x, Loc loc = Loc::current());

  /// Any op by kind with attributes by name — what the typed methods above call. Wrong arity,
  /// unknown attributes and bad values are reported like every other misuse.
  Var op(OpKind kind, std::vector<Var> operands, std::vector<NamedAttr> attrs = {},
         Loc loc = Loc::current());

  /// Names `v` (it prints as %name); a name already taken is an error.
  Var named(Var v, std::string name, Loc loc = Loc::current());

  /// The diagnostics collected so far.
  const DiagnosticEngine &diagnostics() const { return diags_; }
  /// The graph, verified, or every error reported since construction.
  Expected<Graph> finish() &&;

  /// The type of a value of this builder (what Var::type() calls).
  const TensorType &typeOf(ValueId v) const;

 private:
  /// What op() does, with literal operands where the op takes them (ir/literal.h).
  Var build(OpKind kind, std::vector<Operand> operands, std::vector<NamedAttr> attrs, Loc loc);
  Location toLocation(const Loc &loc) const;
  bool checkVar(Var v, const Location &where, std::string_view what);
  bool checkName(const std::string &name, const Location &where, std::string_view what);

  Graph graph_;
  DiagnosticEngine diags_;
  std::vector<Device> deviceScopes_;
  std::vector<DType> dtypeScopes_;
  bool finished_ = false;
  // The file of the last call: a model is built from a few files, so consecutive calls share one
  // FileName (source_location's names are static strings: compared by address).
  mutable const char *lastFile_ = nullptr;
  mutable FileName lastFileName_;
};

}  // namespace ferry
