// tests/common/random_graph.cpp — the random graph generator and graph comparison shared by the
// IR and pass tests.
#include "common/random_graph.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <numeric>

#include "ir/literal.h"
#include "ir/npy.h"
#include "ir/verifier.h"

namespace ferry::testutil {

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

namespace {

constexpr DType kFloats[] = {DType::F16, DType::BF16, DType::F32, DType::F64};

class Generator {
 public:
  Generator(uint64_t seed, const RandomGraphOptions &options)
      : rng_(seed), literals_(seed ^ 0x5ca1a7e5ull), seed_(seed), options_(options) {
    FERRY_CHECK(!options.devices.empty()) << "randomGraph needs at least one device";
  }

  Graph run() {
    const char *names[] = {"main", "mlp", "g.v2", "net_1", "my model", "resnet-18"};
    g_.setName(names[rng_.below(std::size(names))]);
    int nodes = static_cast<int>(rng_.range(1, std::max(1, options_.maxNodes)));
    std::vector<OpKind> ops = options_.ops;
    if (ops.empty())
      for (const OpInfo &op : allOps()) ops.push_back(op.kind);
    for (int made = 0, tries = 0; made < nodes && tries < nodes * 20; ++tries)
      if (addNode(ops[rng_.below(static_cast<int64_t>(ops.size()))])) ++made;
    // Outputs: the last node always, then a few random values.
    std::vector<ValueId> results;
    for (NodeId n : g_.order()) results.push_back(g_.node(n).result);
    if (results.empty()) results.push_back(newLeaf({DType::F32, {2}}));
    // Arguments are drawn one statement at a time: evaluation order must not decide the graph.
    std::optional<Device> pin = maybeDevice(0.2);
    g_.addOutput(results.back(), pin, loc());
    for (int64_t i = rng_.below(3); i > 0; --i) {
      auto v = static_cast<ValueId>(rng_.below(static_cast<int64_t>(g_.valueCount())));
      pin = maybeDevice(0.3);
      Location where = loc();
      if (!isLiteral(g_, v)) g_.addOutput(v, pin, where);  // a literal is no output
    }
    // Inserted marks come from a sequence of their own: the rest of the graph is the same as
    // without them.
    Rng marks(seed_ ^ 0x1a5e47edull);
    for (NodeId n : g_.order())
      if (!g_.node(n).literal && marks.chance(options_.insertedRate)) g_.node(n).inserted = true;
    Status s = verify(g_);
    FERRY_CHECK(s.ok()) << "random graph does not verify: " << s.message();
    return std::move(g_);
  }

 private:
  // ---- small random choices -----------------------------------------------------------
  Location loc() {
    if (rng_.chance(options_.unknownLocationRate)) return {};
    const char *files[] = {"model.cpp", "src/net.cpp", "/abs/path/layers.cc", "x.fy"};
    return Location{files[rng_.below(4)], static_cast<int>(rng_.range(1, 999)),
                    static_cast<int>(rng_.range(0, 80))};
  }
  std::string name(std::string_view kind) {
    static const char *hints[] = {"", ".weight", ".bias", ".out", "_1", ".0.a"};
    static const char *layers[] = {"fc1", "conv", "blk.3", "layer.0.attn", "h", "t_7"};
    std::string base = kind == "node" ? layers[rng_.below(6)] : std::string(kind);
    return g_.uniqueName(base + hints[rng_.below(6)]);
  }
  Device device() {
    const std::vector<Device> &devices = options_.devices;
    if (options_.firstDeviceBias > 0 && rng_.chance(options_.firstDeviceBias)) return devices[0];
    return devices[rng_.below(static_cast<int64_t>(devices.size()))];
  }
  // A device pin with probability p (scaled by pinRate).
  std::optional<Device> maybeDevice(double p) {
    if (!rng_.chance(p * options_.pinRate)) return std::nullopt;
    return device();
  }
  DType dtype(Accepts a) {
    for (;;) {
      DType t = kAllDTypes[rng_.below(static_cast<int64_t>(kAllDTypes.size()))];
      if (acceptsDType(a, t)) return t;
    }
  }
  Shape shape(int minRank, int maxRank, int64_t minDim = 1, int64_t maxDim = 4) {
    Shape s(static_cast<size_t>(rng_.range(minRank, maxRank)));
    for (int64_t &d : s) d = rng_.chance(0.03) ? 0 : rng_.range(minDim, maxDim);
    return s;
  }

  TensorData data(DType t, Shape s) {
    TensorData d(t, std::move(s));
    for (int64_t i = 0; i < d.numel(); ++i) {
      if (!options_.extremeValues) {
        switch (dtypeCategory(t)) {
          case DTypeCategory::Bool: d.setInt(i, rng_.below(2)); break;
          case DTypeCategory::Integer: d.setInt(i, rng_.range(t == DType::U8 ? 0 : -8, 8)); break;
          case DTypeCategory::Floating:
            d.set(i, static_cast<double>(rng_.range(-128, 128)) / 64.0);
            break;
        }
        continue;
      }
      switch (dtypeCategory(t)) {
        case DTypeCategory::Bool: d.setInt(i, rng_.below(2)); break;
        case DTypeCategory::Integer: {
          int64_t lo = t == DType::U8    ? 0
                       : t == DType::I8  ? -128
                       : t == DType::I32 ? INT32_MIN
                                         : INT64_MIN;
          int64_t hi = t == DType::U8    ? 255
                       : t == DType::I8  ? 127
                       : t == DType::I32 ? INT32_MAX
                                         : INT64_MAX;
          int64_t r = rng_.below(4);
          d.setInt(i, r == 0 ? lo
                      : r == 1
                          ? hi
                          : rng_.range(std::max<int64_t>(lo, -1000), std::min<int64_t>(hi, 1000)));
          break;
        }
        case DTypeCategory::Floating: {
          const double specials[] = {0.0,
                                     -0.0,
                                     std::numeric_limits<double>::infinity(),
                                     -std::numeric_limits<double>::infinity(),
                                     std::numeric_limits<double>::quiet_NaN(),
                                     1e-30,
                                     65504.0,
                                     0.1,
                                     1.0 / 3.0,
                                     1e300};
          int64_t r = rng_.below(20);
          double v =
              r < 10 ? specials[r] : (static_cast<double>(rng_.range(-100000, 100000)) / 997.0);
          // Values beyond a narrow type's range become inf there; still a valid element.
          d.set(i, v);
          break;
        }
      }
    }
    return d;
  }

  // ---- leaves -------------------------------------------------------------------------
  ValueId newLeaf(const TensorType &t) {
    if (rng_.chance(0.35)) {
      std::string n = name("x");
      Device d = device();
      return g_.addInput(std::move(n), t, d, loc());
    }
    Initializer init;
    TensorData d;
    int64_t r = rng_.below(options_.npyParams && !options_.compileReady ? 5 : 4);
    if (r == 4 && t.numel() > options_.maxDataElements) r = 0;
    if (r == 3 && t.numel() > options_.maxDataElements) r = 2;
    std::string n = name(rng_.chance(0.5) ? "w" : "p");
    switch (r) {
      case 0:
        init.kind = Initializer::Kind::Zeros;
        d = TensorData::zeros(t.dtype, t.shape);
        break;
      case 1:
        init.kind = Initializer::Kind::Ones;
        d = TensorData::full(t.dtype, t.shape, 1);
        break;
      case 2:
        init.kind = Initializer::Kind::Randn;
        init.seed = rng_.chance(0.2) ? std::numeric_limits<uint64_t>::max() - rng_.below(3)
                                     : static_cast<uint64_t>(rng_.below(1000));
        d = TensorData::randn(t.dtype, t.shape, init.seed);
        break;
      case 3:
        init.kind = Initializer::Kind::Data;
        d = data(t.dtype, t.shape);
        break;
      default:
        init.kind = Initializer::Kind::Npy;
        init.path = n + ".npy";
        d = data(t.dtype, t.shape);
        break;
    }
    std::optional<Device> pin = maybeDevice(0.3);
    ValueId v = g_.addParam(std::move(n), std::move(d), init, pin, loc());
    if (!options_.compileReady && rng_.chance(0.1)) g_.value(v).device = device();
    return v;
  }

  // An existing value of type `t` (connecting the graph) or a new leaf.
  ValueId source(const TensorType &t) {
    std::vector<ValueId> same;
    for (ValueId v = 0; v < static_cast<ValueId>(g_.valueCount()); ++v)
      if (g_.value(v).type == t && !isLiteral(g_, v)) same.push_back(v);
    if (!same.empty() && rng_.chance(0.6))
      return same[rng_.below(static_cast<int64_t>(same.size()))];
    return newLeaf(t);
  }

  // A value accepted by `a` with rank in [minRank, maxRank]: mostly from the graph.
  ValueId operand(Accepts a, int minRank, int maxRank, std::function<bool(const Shape &)> ok = {}) {
    std::vector<ValueId> fits;
    for (ValueId v = 0; v < static_cast<ValueId>(g_.valueCount()); ++v) {
      const TensorType &t = g_.value(v).type;
      if (acceptsDType(a, t.dtype) && t.rank() >= minRank && t.rank() <= maxRank &&
          t.numel() <= 4096 && (!ok || ok(t.shape)) && !isLiteral(g_, v))
        fits.push_back(v);
    }
    if (!fits.empty() && rng_.chance(0.75))
      return fits[rng_.below(static_cast<int64_t>(fits.size()))];
    for (;;) {
      Shape s = shape(minRank, maxRank);
      if (!ok || ok(s)) return newLeaf({dtype(a), s});
    }
  }

  // A shape that broadcasts with `s`: equal, a suffix, some dims 1, maybe a leading dim.
  Shape partner(const Shape &s, bool grow) {
    Shape p = s;
    if (rng_.chance(0.3) && !p.empty())
      p.erase(p.begin(), p.begin() + rng_.range(1, static_cast<int64_t>(p.size())));
    for (int64_t &d : p)
      if (rng_.chance(0.3)) d = 1;
    if (grow && rng_.chance(0.2)) p.insert(p.begin(), rng_.range(1, 3));
    return p;
  }

  std::vector<int64_t> axesOf(int64_t rank, int64_t count, bool negative) {
    std::vector<int64_t> all(static_cast<size_t>(rank));
    std::iota(all.begin(), all.end(), 0);
    for (size_t i = all.size(); i > 1; --i)
      std::swap(all[i - 1], all[rng_.below(static_cast<int64_t>(i))]);
    all.resize(static_cast<size_t>(std::min(count, rank)));
    if (negative)
      for (int64_t &a : all)
        if (rng_.chance(0.4)) a -= rank;
    return all;
  }

  // ---- literals (their own sequence) ---------------------------------------------------
  Literal randomLiteral() {
    Rng &r = literals_;
    switch (r.below(3)) {
      case 0: return {DTypeCategory::Bool, r.below(2), 0};
      case 1: {
        if (!options_.extremeValues) return {DTypeCategory::Integer, r.range(-8, 8), 0};
        // Some do not fit the dtype they meet (300 in u8, 100000 in f16): those are not made.
        const int64_t ints[] = {0, 1, 2, -1, 7, -8, 300, 100000, INT64_MAX, INT32_MIN};
        return {DTypeCategory::Integer, ints[r.below(std::size(ints))], 0};
      }
      default: {
        if (!options_.extremeValues)
          return {DTypeCategory::Floating, 0, static_cast<double>(r.range(-128, 128)) / 64.0};
        const double floats[] = {0.5,
                                 -2.0,
                                 1e-3,
                                 0.1,
                                 1.0 / 3.0,
                                 -0.0,
                                 2.5,
                                 65504.,
                                 1e300,
                                 std::numeric_limits<double>::infinity(),
                                 -std::numeric_limits<double>::infinity(),
                                 std::numeric_limits<double>::quiet_NaN()};
        return {DTypeCategory::Floating, 0, floats[r.below(std::size(floats))]};
      }
    }
  }

  // With probability literalRate, one data operand of a node that takes literals becomes a
  // literal (made right before the node, named and located as the parser does), and `type` the
  // node's type with it. Nothing changes when the literal does not fit.
  void maybeLiteral(const OpInfo &op, const Attrs &attrs, std::vector<ValueId> &ids,
                    TensorType &type, const std::string &reader, const Location &where) {
    if (!literals_.chance(options_.literalRate)) return;
    std::vector<size_t> slots;
    for (size_t i = 0; i < ids.size(); ++i)
      if (takesLiteral(op, i)) slots.push_back(i);
    if (slots.empty()) return;
    const size_t slot = slots[literals_.below(static_cast<int64_t>(slots.size()))];
    std::vector<std::optional<Literal>> lits(ids.size());
    lits[slot] = randomLiteral();
    std::vector<TensorType> types;
    for (ValueId v : ids) types.push_back(g_.value(v).type);
    const std::vector<Location> at(ids.size());
    Expected<std::vector<std::optional<TensorData>>> values =
        typeLiterals(op, types, lits, at, where);
    if (!values) return;
    InferResult r = inferType(op, types, attrs);
    if (std::holds_alternative<InferError>(r)) return;
    type = std::get<TensorType>(r);
    ids[slot] = addLiteral(g_, lits[slot]->kind, std::move(*(*values)[slot]),
                           g_.uniqueName(literalName(reader, op, slot)), where);
  }

  // ---- nodes --------------------------------------------------------------------------
  bool addNode(OpKind kind);
  bool operands(OpKind kind, const OpInfo &op, std::vector<ValueId> &ids,
                std::vector<NamedAttr> &attrs);

  Rng rng_;
  Rng literals_;
  uint64_t seed_;
  const RandomGraphOptions &options_;
  Graph g_;
};

bool Generator::addNode(OpKind kind) {
  const OpInfo &op = opInfo(kind);
  std::vector<ValueId> ids;
  std::vector<NamedAttr> named;
  if (!operands(kind, op, ids, named)) return false;
  Expected<Attrs> attrs = makeAttrs(op, named, {});
  FERRY_CHECK(attrs.ok()) << op.name << ": " << attrs.status().message();
  std::vector<TensorType> types;
  for (ValueId v : ids) types.push_back(g_.value(v).type);
  InferResult r = inferType(op, types, *attrs);
  if (std::holds_alternative<InferError>(r)) return false;
  TensorType t = std::get<TensorType>(r);
  if (t.numel() > 100000) return false;
  std::optional<DType> pinDType;
  if (rng_.chance(options_.dtypePinRate)) pinDType = kFloats[rng_.below(4)];
  std::optional<Device> pinDevice = maybeDevice(0.25);
  if (options_.compileReady && kind == OpKind::Transfer) pinDevice.reset();
  Location where = loc();
  std::string result = name("node");
  maybeLiteral(op, *attrs, ids, t, result, where);
  NodeSpec spec{kind, std::move(ids), std::move(*attrs), pinDevice, pinDType, where};
  NodeId n = g_.addNode(std::move(spec), std::move(result), t);
  if (!options_.compileReady && rng_.chance(0.15)) g_.value(g_.node(n).result).device = device();
  return true;
}

bool Generator::operands(OpKind kind, const OpInfo &op, std::vector<ValueId> &ids,
                         std::vector<NamedAttr> &attrs) {
  auto type = [&](ValueId v) -> const TensorType & { return g_.value(v).type; };
  auto ints = [](std::vector<int64_t> v) { return AttrValue(std::move(v)); };
  using K = OpKind;
  switch (kind) {
    case K::Add:
    case K::Sub:
    case K::Mul:
    case K::Div:
    case K::Pow:
    case K::Maximum:
    case K::Minimum:
    case K::Equal:
    case K::Less:
    case K::Greater: {
      ValueId a = operand(op.accepts, 0, 4);
      ids = {a, source({dtype(op.accepts), partner(type(a).shape, true)})};
      if (rng_.chance(0.5)) std::swap(ids[0], ids[1]);
      return true;
    }
    case K::Where: {
      ValueId a = operand(Accepts::Any, 0, 3);
      ids = {source({DType::Bool, partner(type(a).shape, false)}), a,
             source({dtype(Accepts::Any), partner(type(a).shape, false)})};
      return true;
    }
    case K::Matmul: {
      ValueId a = operand(Accepts::Numeric, 1, 3);
      const Shape &s = type(a).shape;
      int64_t k = s.back(), n = rng_.range(1, 4);
      Shape b = rng_.chance(0.3) ? Shape{k} : Shape{k, n};
      if (s.size() == 3 && rng_.chance(0.5)) b = {s[0], k, n};
      ids = {a, source({dtype(Accepts::Numeric), b})};
      return true;
    }
    case K::Linear: {
      ValueId x = operand(Accepts::Numeric, 1, 3);
      int64_t in = type(x).shape.back(), out = rng_.range(1, 5);
      DType t = dtype(Accepts::Numeric);
      ids = {x, source({t, {out, in}})};
      if (rng_.chance(0.6)) ids.push_back(source({t, {out}}));
      return true;
    }
    case K::Conv2d: {
      ValueId x = operand(Accepts::Float, 4, 4,
                          [](const Shape &s) { return s[1] >= 1 && s[2] >= 1 && s[3] >= 1; });
      const Shape s = type(x).shape;
      std::vector<int64_t> divisors;
      for (int64_t g = 1; g <= s[1]; ++g)
        if (s[1] % g == 0) divisors.push_back(g);
      int64_t groups = divisors[rng_.below(static_cast<int64_t>(divisors.size()))];
      int64_t out = groups * rng_.range(1, 2);
      int64_t kh = rng_.range(1, std::min<int64_t>(3, s[2])),
              kw = rng_.range(1, std::min<int64_t>(3, s[3]));
      DType t = kFloats[rng_.below(4)];
      ids = {x, source({t, {out, s[1] / groups, kh, kw}})};
      if (rng_.chance(0.5)) ids.push_back(source({t, {out}}));
      if (rng_.chance(0.5)) attrs.push_back({"stride", ints({rng_.range(1, 2), rng_.range(1, 2)})});
      if (rng_.chance(0.4))
        attrs.push_back({"padding", rng_.chance(0.5) ? ints({1, 0}) : ints({0, 1, 1, 0})});
      if (groups > 1 || rng_.chance(0.2)) attrs.push_back({"groups", groups});
      return true;
    }
    case K::MaxPool2d:
    case K::AvgPool2d: {
      ValueId x =
          operand(Accepts::Float, 4, 4, [](const Shape &s) { return s[2] >= 1 && s[3] >= 1; });
      const Shape s = type(x).shape;
      int64_t kh = rng_.range(1, std::min<int64_t>(3, s[2])),
              kw = rng_.range(1, std::min<int64_t>(3, s[3]));
      ids = {x};
      attrs.push_back({"kernel", ints({kh, kw})});
      if (rng_.chance(0.5)) attrs.push_back({"stride", ints({rng_.range(1, 2), rng_.range(1, 2)})});
      if (rng_.chance(0.3)) attrs.push_back({"padding", ints({kh / 2, kw / 2})});
      if (rng_.chance(0.3)) attrs.push_back({"ceil_mode", true});
      if (kind == K::AvgPool2d && rng_.chance(0.3)) attrs.push_back({"count_include_pad", false});
      return true;
    }
    case K::GlobalAvgPool: ids = {operand(Accepts::Float, 4, 4)}; return true;
    case K::BatchNorm: {
      ValueId x = operand(Accepts::Float, 2, 4);
      ids = {x};
      for (int i = 0; i < 4; ++i)
        ids.push_back(source({kFloats[rng_.below(4)], {type(x).shape[1]}}));
      if (rng_.chance(0.4)) attrs.push_back({"eps", 0.001});
      return true;
    }
    case K::LayerNorm: {
      ValueId x = operand(Accepts::Float, 1, 4);
      const Shape s = type(x).shape;
      int64_t axis =
          rng_.range(-static_cast<int64_t>(s.size()), static_cast<int64_t>(s.size()) - 1);
      Shape norm(s.begin() + (axis < 0 ? axis + static_cast<int64_t>(s.size()) : axis), s.end());
      ids = {x};
      for (int64_t i = rng_.below(3); i > 0; --i) ids.push_back(source({type(x).dtype, norm}));
      if (axis != -1) attrs.push_back({"axis", axis});
      if (rng_.chance(0.3)) attrs.push_back({"eps", 1e-6});
      return true;
    }
    case K::Sum:
    case K::Mean:
    case K::Max: {
      ValueId x = operand(op.accepts, 0, 4);
      ids = {x};
      int64_t r = type(x).rank();
      if (rng_.chance(0.7)) attrs.push_back({"axes", ints(axesOf(r, rng_.range(0, r), true))});
      if (rng_.chance(0.4)) attrs.push_back({"keepdims", true});
      return true;
    }
    case K::Softmax:
    case K::LogSoftmax: {
      ValueId x = operand(Accepts::Float, 1, 4);
      ids = {x};
      int64_t r = type(x).rank();
      if (rng_.chance(0.5)) attrs.push_back({"axis", rng_.range(-r, r - 1)});
      return true;
    }
    case K::Reshape: {
      ValueId x = operand(Accepts::Any, 0, 4);
      int64_t n = type(x).numel();
      std::vector<int64_t> target;
      if (n == 0) {
        target = {0, rng_.range(1, 3)};
      } else {
        int64_t rem = n;
        for (int64_t i = rng_.below(3); i > 0; --i) {
          std::vector<int64_t> divs;
          for (int64_t d = 1; d <= rem && d <= 16; ++d)
            if (rem % d == 0) divs.push_back(d);
          int64_t d = divs[rng_.below(static_cast<int64_t>(divs.size()))];
          target.push_back(d);
          rem /= d;
        }
        if (rem != 1 || rng_.chance(0.5)) target.push_back(rem);
        if (!target.empty() && rng_.chance(0.4))
          target[rng_.below(static_cast<int64_t>(target.size()))] = -1;
      }
      ids = {x};
      attrs.push_back({"shape", ints(target)});
      return true;
    }
    case K::Transpose: {
      ValueId x = operand(Accepts::Any, 0, 4);
      ids = {x};
      if (rng_.chance(0.7))
        attrs.push_back({"perm", ints(axesOf(type(x).rank(), type(x).rank(), true))});
      return true;
    }
    case K::Concat: {
      ValueId x = operand(Accepts::Any, 1, 4);
      const Shape s = type(x).shape;
      int64_t axis = rng_.range(0, static_cast<int64_t>(s.size()) - 1);
      ids = {x};
      for (int64_t i = rng_.below(3); i > 0; --i) {
        Shape t = s;
        t[axis] = rng_.range(0, 3);
        ids.push_back(source({dtype(Accepts::Any), t}));
      }
      if (axis != 0 || rng_.chance(0.3))
        attrs.push_back({"axis", rng_.chance(0.5) ? axis : axis - static_cast<int64_t>(s.size())});
      return true;
    }
    case K::Slice: {
      ValueId x = operand(Accepts::Any, 1, 4);
      const Shape s = type(x).shape;
      int64_t m = rng_.range(1, static_cast<int64_t>(s.size()));
      std::vector<int64_t> axes = axesOf(static_cast<int64_t>(s.size()), m, true), starts, ends,
                           steps;
      for (int64_t i = 0; i < m; ++i) {
        int64_t d = s[static_cast<size_t>(axes[i] < 0 ? axes[i] + static_cast<int64_t>(s.size())
                                                      : axes[i])];
        starts.push_back(rng_.range(-d - 1, d + 1));
        ends.push_back(rng_.chance(0.1) ? INT64_MAX : rng_.range(-d - 1, d + 1));
        steps.push_back(rng_.chance(0.5)   ? 1
                        : rng_.chance(0.5) ? rng_.range(1, 3)
                                           : rng_.range(-3, -1));
      }
      ids = {x};
      attrs.push_back({"starts", ints(starts)});
      attrs.push_back({"ends", ints(ends)});
      attrs.push_back({"axes", ints(axes)});
      if (rng_.chance(0.7)) attrs.push_back({"steps", ints(steps)});
      return true;
    }
    case K::Gather: {
      ValueId x = operand(Accepts::Any, 1, 3, [](const Shape &s) {
        return std::all_of(s.begin(), s.end(), [](int64_t d) { return d > 0; });
      });
      const Shape s = type(x).shape;
      int64_t axis = rng_.range(0, static_cast<int64_t>(s.size()) - 1);
      DType it = rng_.chance(0.5) ? DType::I64 : DType::I32;
      TensorData idx(it, shape(0, 2));
      for (int64_t i = 0; i < idx.numel(); ++i) idx.setInt(i, rng_.range(-s[axis], s[axis] - 1));
      Initializer init{Initializer::Kind::Data, 0, {}};
      std::string n = name("idx");
      std::optional<Device> pin = maybeDevice(0.2);
      ids = {x, g_.addParam(std::move(n), std::move(idx), init, pin, loc())};
      if (axis != 0) attrs.push_back({"axis", axis});
      return true;
    }
    case K::Unsqueeze: {
      ValueId x = operand(Accepts::Any, 0, 3);
      int64_t k = rng_.range(1, 2);
      ids = {x};
      attrs.push_back({"axes", ints(axesOf(type(x).rank() + k, k, true))});
      return true;
    }
    case K::Squeeze: {
      ValueId x = operand(Accepts::Any, 0, 4);
      ids = {x};
      std::vector<int64_t> ones;
      for (size_t i = 0; i < type(x).shape.size(); ++i)
        if (type(x).shape[i] == 1 && rng_.chance(0.7)) ones.push_back(static_cast<int64_t>(i));
      if (!ones.empty()) attrs.push_back({"axes", ints(ones)});
      return true;
    }
    case K::Flatten: {
      ValueId x = operand(Accepts::Any, 0, 4);
      int64_t r = std::max<int64_t>(1, type(x).rank());
      int64_t start = rng_.range(0, r - 1), end = rng_.range(start, r - 1);
      ids = {x};
      if (start != 0) attrs.push_back({"start", start});
      if (end != r - 1 || rng_.chance(0.3)) attrs.push_back({"end", end});
      return true;
    }
    case K::Expand: {
      ValueId x = operand(Accepts::Any, 0, 3);
      std::vector<int64_t> target;
      for (int64_t i = rng_.below(2); i > 0; --i) target.push_back(rng_.range(1, 3));
      for (int64_t d : type(x).shape) target.push_back(d == 1 ? rng_.range(1, 3) : d);
      ids = {x};
      attrs.push_back({"shape", ints(target)});
      return true;
    }
    case K::Cast:
      ids = {operand(Accepts::Any, 0, 4)};
      attrs.push_back({"to", dtype(Accepts::Any)});
      return true;
    case K::Transfer:
      ids = {operand(Accepts::Any, 0, 4)};
      attrs.push_back({"to", device()});
      return true;
    case K::Constant: {
      DType t = dtype(Accepts::Any);
      attrs.push_back({"value", data(t, shape(0, 2))});
      return true;
    }
    case K::LeakyRelu:
      ids = {operand(Accepts::Float, 0, 4)};
      if (rng_.chance(0.5)) attrs.push_back({"alpha", 0.2});
      return true;
    case K::Gelu:
      ids = {operand(Accepts::Float, 0, 4)};
      if (rng_.chance(0.5)) attrs.push_back({"approximate", std::string("tanh")});
      return true;
    default:
      // Elementwise unary ops and identity: one operand, no attributes.
      if (op.minOperands != 1 || op.maxOperands != 1 || !op.attrs.empty()) return false;
      ids = {operand(op.accepts, 0, 4)};
      return true;
  }
}

std::string locStr(const Location &l) { return l.known() ? l.str() : "<unknown>"; }

std::optional<Device> effectiveDevice(const std::optional<Device> &pin, const Value &v) {
  return pin ? pin : v.device;
}

}  // namespace

Graph randomGraph(uint64_t seed, const RandomGraphOptions &options) {
  return Generator(seed, options).run();
}

void writeNpyParams(const Graph &graph, const std::string &dir) {
  for (const ParamDecl &p : graph.params()) {
    if (p.init.kind != Initializer::Kind::Npy) continue;
    Status s = writeNpy(p.data, (std::filesystem::path(dir) / p.init.path).string());
    FERRY_CHECK(s.ok()) << s.message();
  }
}

std::string graphDifference(const Graph &a, const Graph &b) {
  auto name = [](const Graph &g, ValueId v) { return "%" + g.value(v).name; };
  auto dev = [](const std::optional<Device> &d) { return d ? d->str() : "-"; };
  if (a.name() != b.name()) return "graph name " + a.name() + " vs " + b.name();
  if (a.inputs().size() != b.inputs().size()) return "input count";
  for (size_t i = 0; i < a.inputs().size(); ++i) {
    const InputDecl &x = a.inputs()[i], &y = b.inputs()[i];
    if (name(a, x.value) != name(b, y.value) || a.value(x.value).type != b.value(y.value).type ||
        x.device != y.device || x.loc != y.loc)
      return "input " + name(a, x.value) + " vs " + name(b, y.value) + " (" + locStr(x.loc) +
             " vs " + locStr(y.loc) + ")";
  }
  if (a.params().size() != b.params().size()) return "param count";
  for (size_t i = 0; i < a.params().size(); ++i) {
    const ParamDecl &x = a.params()[i], &y = b.params()[i];
    std::string n = name(a, x.value);
    if (n != name(b, y.value)) return "param " + n + " vs " + name(b, y.value);
    if (!(x.data == y.data)) return "param " + n + " data";
    if (dev(effectiveDevice(x.pin, a.value(x.value))) !=
        dev(effectiveDevice(y.pin, b.value(y.value))))
      return "param " + n + " device";
    if (x.loc != y.loc) return "param " + n + " loc " + locStr(x.loc) + " vs " + locStr(y.loc);
    if (x.init.kind == Initializer::Kind::Randn &&
        (y.init.kind != Initializer::Kind::Randn || x.init.seed != y.init.seed))
      return "param " + n + " initializer";
  }
  if (a.order().size() != b.order().size()) return "node count";
  for (size_t i = 0; i < a.order().size(); ++i) {
    const Node &x = a.node(a.order()[i]), &y = b.node(b.order()[i]);
    std::string n = name(a, x.result);
    if (n != name(b, y.result) || x.op != y.op) return "node " + n;
    if (x.operands.size() != y.operands.size()) return "node " + n + " operand count";
    for (size_t j = 0; j < x.operands.size(); ++j)
      if (name(a, x.operands[j]) != name(b, y.operands[j])) return "node " + n + " operands";
    if (x.attrs != y.attrs) return "node " + n + " attributes";
    if (a.value(x.result).type != b.value(y.result).type) return "node " + n + " type";
    if (dev(effectiveDevice(x.pinDevice, a.value(x.result))) !=
            dev(effectiveDevice(y.pinDevice, b.value(y.result))) ||
        x.pinDType != y.pinDType)
      return "node " + n + " pins";
    if (x.loc != y.loc) return "node " + n + " loc " + locStr(x.loc) + " vs " + locStr(y.loc);
    if (x.inserted != y.inserted) return "node " + n + " inserted mark";
    if (x.literal != y.literal) return "node " + n + " literal mark";
  }
  if (a.outputs().size() != b.outputs().size()) return "output count";
  for (size_t i = 0; i < a.outputs().size(); ++i) {
    const OutputDecl &x = a.outputs()[i], &y = b.outputs()[i];
    if (name(a, x.value) != name(b, y.value) ||
        dev(effectiveDevice(x.pin, a.value(x.value))) !=
            dev(effectiveDevice(y.pin, b.value(y.value))) ||
        x.loc != y.loc)
      return "output " + std::to_string(i);
  }
  return "";
}

}  // namespace ferry::testutil
