// frontend/builder.cpp — the Builder: checks each call, infers its type, records where it was made.
#include "frontend/builder.h"

#include <limits>

#include "ir/verifier.h"

namespace ferry {

namespace {

bool validNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}

// Where the value `v` was defined, for "previously defined here" notes.
Location definedAt(const Graph &g, ValueId v) {
  const Value &val = g.value(v);
  switch (val.kind) {
    case ValueKind::Input: return g.inputOf(v).loc;
    case ValueKind::Param: return g.paramOf(v).loc;
    case ValueKind::Result: return g.node(val.def).loc;
  }
  return {};
}

std::string_view kindWord(ValueKind k) {
  switch (k) {
    case ValueKind::Input: return "input";
    case ValueKind::Param: return "param";
    case ValueKind::Result: return "value";
  }
  return "value";
}

bool checkDevice(const Device &d, const Location &where, std::string_view what,
                 DiagnosticEngine &diags) {
  if (d.index >= 0 && d.index <= Device::kMaxIndex) return true;
  diags.error("device", where,
              std::string(what) + " device index " + std::to_string(d.index) +
                  " is out of range (0.." + std::to_string(Device::kMaxIndex) + ")");
  return false;
}

// Negative dims, more than kMaxRank dims, and dims whose byte size (zero dims counted as 1)
// would not fit in memory arithmetic: typeLimitError's rule, worded for the builder.
bool checkShape(const Shape &shape, DType dtype, const Location &where, std::string_view what,
                DiagnosticEngine &diags) {
  if (shape.size() > kMaxRank) {
    diags.error("shape", where,
                std::string(what) + " has " + std::to_string(shape.size()) + " dims, at most " +
                    std::to_string(kMaxRank) + ": " + std::string(dtypeName(dtype)) +
                    shapeStr(shape));
    return false;
  }
  int64_t limit = std::numeric_limits<int64_t>::max() / static_cast<int64_t>(dtypeSize(dtype));
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) {
      diags.error("shape", where,
                  std::string(what) + " has a negative dim: " + std::string(dtypeName(dtype)) +
                      shapeStr(shape));
      return false;
    }
    if (d > 0 && n > limit / d) {
      diags.error("shape", where,
                  std::string(what) + " is too large: " + std::string(dtypeName(dtype)) +
                      shapeStr(shape));
      return false;
    }
    if (d > 0) n *= d;  // an empty tensor's zero dim does not excuse an absurd one
  }
  return true;
}

}  // namespace

const TensorType &Var::type() const {
  FERRY_CHECK(valid()) << "type() of an invalid (default or poisoned) Var";
  return builder_->typeOf(id_);
}

Builder::Builder(std::string graphName) : graph_(std::move(graphName)) {}

const TensorType &Builder::typeOf(ValueId v) const {
  FERRY_CHECK(!finished_) << "Builder used after finish()";
  return graph_.value(v).type;
}

Location Builder::toLocation(const Loc &loc) const {
  if (loc.file_name() != lastFile_) {
    lastFile_ = loc.file_name();
    lastFileName_ = FileName(lastFile_);
  }
  return Location{lastFileName_, static_cast<int>(loc.line()), static_cast<int>(loc.column())};
}

bool Builder::checkVar(Var v, const Location &where, std::string_view what) {
  if (v.builder_ == this && v.id_ >= 0) return true;
  if (v.builder_ == this) return false;  // poisoned: its error is already reported
  diags_.error("operand", where, std::string(what) + " is not a value of this builder")
      .detail(v.builder_ == nullptr ? "it is a default-constructed Var"
                                    : "it belongs to another Builder",
              where);
  return false;
}

bool Builder::checkName(const std::string &name, const Location &where, std::string_view what) {
  if (name.empty()) {
    diags_.error("name", where, std::string(what) + " name is empty");
    return false;
  }
  for (char c : name) {
    if (!validNameChar(c)) {
      diags_.error("name", where,
                   std::string(what) + " name '" + name +
                       "' is not valid: use only letters, digits, '_' and '.'");
      return false;
    }
  }
  if (std::optional<ValueId> other = graph_.findValue(name)) {
    diags_
        .error("name", where,
               std::string(what) + " name '" + name + "' is already taken by " +
                   std::string(kindWord(graph_.value(*other).kind)) + " %" + name)
        .note("%" + name + " is defined here", definedAt(graph_, *other));
    return false;
  }
  return true;
}

Var Builder::input(std::string name, DType dtype, Shape shape, Device device, Loc loc) {
  FERRY_CHECK(!finished_) << "Builder used after finish()";
  Location where = toLocation(loc);
  bool ok = checkName(name, where, "input");
  ok = checkShape(shape, dtype, where, "input '" + name + "'", diags_) && ok;
  ok = checkDevice(device, where, "input '" + name + "'", diags_) && ok;
  if (!ok) return Var(this, -1);
  return Var(this, graph_.addInput(std::move(name), TensorType{dtype, std::move(shape)}, device,
                                   std::move(where)));
}

Var Builder::param(std::string name, TensorData data, std::optional<Device> device, Loc loc) {
  FERRY_CHECK(!finished_) << "Builder used after finish()";
  Location where = toLocation(loc);
  bool ok = checkName(name, where, "param");
  if (device) ok = checkDevice(*device, where, "param '" + name + "'", diags_) && ok;
  if (!ok) return Var(this, -1);
  return Var(this, graph_.addParam(std::move(name), std::move(data),
                                   Initializer{Initializer::Kind::Data, 0, {}}, device,
                                   std::move(where)));
}

Var Builder::param(std::string name, DType dtype, Shape shape, Init init,
                   std::optional<Device> device, Loc loc) {
  FERRY_CHECK(!finished_) << "Builder used after finish()";
  Location where = toLocation(loc);
  bool ok = checkName(name, where, "param");
  ok = checkShape(shape, dtype, where, "param '" + name + "'", diags_) && ok;
  if (device) ok = checkDevice(*device, where, "param '" + name + "'", diags_) && ok;
  if (init.kind != Initializer::Kind::Zeros && init.kind != Initializer::Kind::Ones &&
      init.kind != Initializer::Kind::Randn) {
    diags_.error("init", where,
                 "param '" + name +
                     "' has no data: use Init::zeros(), Init::ones() or "
                     "Init::randn(seed), or pass a TensorData");
    ok = false;
  }
  if (!ok) return Var(this, -1);
  TensorData data = init.kind == Initializer::Kind::Zeros ? TensorData::zeros(dtype, shape)
                    : init.kind == Initializer::Kind::Ones
                        ? TensorData::full(dtype, shape, 1.0)
                        : TensorData::randn(dtype, shape, init.seed);
  return Var(this,
             graph_.addParam(std::move(name), std::move(data),
                             Initializer{init.kind, init.seed, {}}, device, std::move(where)));
}

void Builder::output(std::string name, Var v, std::optional<Device> device, Loc loc) {
  FERRY_CHECK(!finished_) << "Builder used after finish()";
  Location where = toLocation(loc);
  bool ok = checkVar(v, where, "output '" + name + "'");
  if (device) ok = checkDevice(*device, where, "output '" + name + "'", diags_) && ok;
  if (!ok) return;
  // Copies: adding the pass-through node below may move the graph's values.
  const std::string current = graph_.value(v.id_).name;
  const bool isResult = graph_.value(v.id_).kind == ValueKind::Result;
  for (const OutputDecl &out : graph_.outputs()) {
    // An input or param output under another name is a pass-through copy made below, with the
    // output's location: it counts as the same value.
    const Node *copy = graph_.producer(out.value);
    bool passThrough = copy != nullptr && copy->op == OpKind::Identity &&
                       copy->operands[0] == v.id_ && copy->loc == out.loc;
    if (out.value != v.id_ && !passThrough) continue;
    const std::string &first = graph_.value(out.value).name;
    std::string message = name == first ? "'" + name + "' is already an output"
                                        : "output '" + name + "' is %" + current +
                                              ", which is already output '" + first + "'";
    diags_.error("output", where, std::move(message)).note("first output here", out.loc);
    return;
  }
  ValueId result = v.id_;
  if (current != name) {
    if (!checkName(name, where, "output")) return;
    if (isResult) {
      graph_.rename(result, std::move(name));
    } else {
      // Renaming an input or param would change the names the graph is fed and loaded by, so
      // the output is a pass-through copy instead.
      Var copy = op(OpKind::Identity, {v}, {}, loc);
      if (!copy.valid()) return;
      result = copy.id_;
      graph_.rename(result, std::move(name));
    }
  }
  graph_.addOutput(result, device, std::move(where));
}

Var Builder::named(Var v, std::string name, Loc loc) {
  FERRY_CHECK(!finished_) << "Builder used after finish()";
  Location where = toLocation(loc);
  if (!checkVar(v, where, "the value to name '" + name + "'")) return Var(this, -1);
  if (graph_.value(v.id_).name == name) return v;
  if (checkName(name, where, "value")) graph_.rename(v.id_, std::move(name));
  return v;
}

Builder::Scope::Scope(Scope &&other) noexcept
    : b_(other.b_), device_(other.device_), depth_(other.depth_) {
  other.b_ = nullptr;
}

Builder::Scope::~Scope() {
  if (b_ == nullptr) return;
  size_t open = b_->deviceScopes_.size() + b_->dtypeScopes_.size();
  FERRY_CHECK(depth_ + 1 == open) << "Builder scopes must end in the reverse order of creation";
  if (device_) {
    FERRY_CHECK(!b_->deviceScopes_.empty()) << "device scope stack underflow";
    b_->deviceScopes_.pop_back();
  } else {
    FERRY_CHECK(!b_->dtypeScopes_.empty()) << "dtype scope stack underflow";
    b_->dtypeScopes_.pop_back();
  }
}

Builder::Scope Builder::on(Device device) {
  FERRY_CHECK(!finished_) << "Builder used after finish()";
  checkDevice(device, {}, "scope", diags_);
  Scope s(this, true);
  s.depth_ = deviceScopes_.size() + dtypeScopes_.size();
  deviceScopes_.push_back(device);
  return s;
}

Builder::Scope Builder::computeIn(DType dtype) {
  FERRY_CHECK(!finished_) << "Builder used after finish()";
  Scope s(this, false);
  s.depth_ = deviceScopes_.size() + dtypeScopes_.size();
  dtypeScopes_.push_back(dtype);
  return s;
}

Var Builder::op(OpKind kind, std::vector<Var> operands, std::vector<NamedAttr> attrs, Loc loc) {
  return build(kind, std::vector<Operand>(operands.begin(), operands.end()), std::move(attrs), loc);
}

Var Builder::build(OpKind kind, std::vector<Operand> operands, std::vector<NamedAttr> attrs,
                   Loc loc) {
  FERRY_CHECK(!finished_) << "Builder used after finish()";
  const OpInfo &info = opInfo(kind);
  const std::string opName(info.name);
  Location where = toLocation(loc);

  // Omitted optional operands are default Vars at the end: drop them.
  while (!operands.empty() && !operands.back().literal_ &&
         operands.back().var_.builder_ == nullptr && operands.size() <= info.operands.size() &&
         info.operands[operands.size() - 1].optional)
    operands.pop_back();

  bool poisoned = false;
  bool bad = false;
  std::vector<ValueId> ids;  // -1 for a literal until its node is made
  std::vector<TensorType> types(operands.size());
  std::vector<std::optional<Literal>> literals;
  for (size_t i = 0; i < operands.size(); ++i) {
    literals.push_back(operands[i].literal_);
    ids.push_back(-1);
    if (operands[i].literal_) continue;
    const Var &v = operands[i].var_;
    if (v.builder_ == this && v.id_ >= 0) {
      ids.back() = v.id_;
      types[i] = graph_.value(v.id_).type;
      continue;
    }
    if (v.builder_ == this) {
      poisoned = true;
      continue;
    }
    bad = true;
    Diagnostic &d = diags_.error("operand", where,
                                 "operand " + std::to_string(i) + " of '" + opName +
                                     "' is not a value of this builder");
    if (v.builder_ != nullptr)
      d.detail("it belongs to another Builder", where);
    else if (i < info.operands.size() && info.operands[i].optional)
      d.detail("it is a default-constructed Var: an optional operand (" + info.operands[i].name +
                   ") can be left out only when every operand after it is too",
               where);
    else
      d.detail("it is a default-constructed Var", where);
  }
  // An operand whose producer failed already has its error; say nothing more about this call.
  if (poisoned) return Var(this, -1);

  Expected<Attrs> complete = makeAttrs(info, attrs, where);
  if (!complete.ok()) {
    diags_.append(complete.status().diagnostics());
    bad = true;
  } else {
    for (size_t i = 0; i < info.attrs.size(); ++i) {
      if (const auto *d = std::get_if<Device>(&(*complete)[i]))
        bad = !checkDevice(*d, where,
                           "attribute '" + info.attrs[i].name + "' of '" + opName + "':", diags_) ||
              bad;
    }
  }
  if (bad) return Var(this, -1);

  const std::vector<Location> at(operands.size(), where);
  Expected<std::vector<std::optional<TensorData>>> literalValues =
      typeLiterals(info, types, literals, at, where);
  if (!literalValues) {
    diags_.append(literalValues.status().diagnostics());
    return Var(this, -1);
  }
  InferResult inferred = inferType(info, types, *complete);
  if (const auto *err = std::get_if<InferError>(&inferred)) {
    Diagnostic &d = diags_.error(err->code, where, err->message);
    for (size_t i = 0; i < ids.size(); ++i) {
      std::string spec = info.operands.empty() ? "" : " (" + info.operand(i).name + ")";
      if (literals[i])
        d.detail("operand " + std::to_string(i) + spec + " literal " + literals[i]->str() + " : " +
                     types[i].str(),
                 where);
      else
        d.detail("operand " + std::to_string(i) + spec + " %" + graph_.value(ids[i]).name + " : " +
                     types[i].str(),
                 definedAt(graph_, ids[i]));
    }
    return Var(this, -1);
  }

  std::string name = graph_.uniqueName("");
  for (size_t i = 0; i < ids.size(); ++i)
    if (std::optional<TensorData> &value = (*literalValues)[i])
      ids[i] = addLiteral(graph_, literals[i]->kind, std::move(*value),
                          graph_.uniqueName(literalName(name, info, i)), where);
  NodeSpec spec{kind,
                std::move(ids),
                std::move(*complete),
                deviceScopes_.empty() ? std::nullopt : std::optional<Device>(deviceScopes_.back()),
                dtypeScopes_.empty() ? std::nullopt : std::optional<DType>(dtypeScopes_.back()),
                std::move(where)};
  NodeId n =
      graph_.addNode(std::move(spec), std::move(name), std::get<TensorType>(std::move(inferred)));
  return Var(this, graph_.node(n).result);
}

Expected<Graph> Builder::finish() && {
  FERRY_CHECK(!finished_) << "Builder::finish() called twice";
  finished_ = true;
  // A graph whose only output was poisoned has no outputs too; that is no news then.
  if (!diags_.hasErrors() && graph_.outputs().empty())
    diags_.error("output", {}, "graph '" + graph_.name() + "' has no outputs")
        .fix("mark the results with output(name, value)");
  if (diags_.hasErrors()) return Status(diags_.take());
  FERRY_TRY(verify(graph_));
  return std::move(graph_);
}

// --- Typed ops: each builds its attributes and calls op() ------------------------------------

Var Builder::neg(Var x, Loc loc) { return op(OpKind::Neg, {x}, {}, loc); }
Var Builder::abs(Var x, Loc loc) { return op(OpKind::Abs, {x}, {}, loc); }
Var Builder::exp(Var x, Loc loc) { return op(OpKind::Exp, {x}, {}, loc); }
Var Builder::log(Var x, Loc loc) { return op(OpKind::Log, {x}, {}, loc); }
Var Builder::sqrt(Var x, Loc loc) { return op(OpKind::Sqrt, {x}, {}, loc); }
Var Builder::rsqrt(Var x, Loc loc) { return op(OpKind::Rsqrt, {x}, {}, loc); }
Var Builder::tanh(Var x, Loc loc) { return op(OpKind::Tanh, {x}, {}, loc); }
Var Builder::sigmoid(Var x, Loc loc) { return op(OpKind::Sigmoid, {x}, {}, loc); }
Var Builder::relu(Var x, Loc loc) { return op(OpKind::Relu, {x}, {}, loc); }
Var Builder::gelu(Var x, std::string approximate, Loc loc) {
  return op(OpKind::Gelu, {x}, {{"approximate", std::move(approximate)}}, loc);
}
Var Builder::erf(Var x, Loc loc) { return op(OpKind::Erf, {x}, {}, loc); }
Var Builder::silu(Var x, Loc loc) { return op(OpKind::Silu, {x}, {}, loc); }

Var Builder::add(Operand a, Operand b, Loc loc) { return build(OpKind::Add, {a, b}, {}, loc); }
Var Builder::sub(Operand a, Operand b, Loc loc) { return build(OpKind::Sub, {a, b}, {}, loc); }
Var Builder::mul(Operand a, Operand b, Loc loc) { return build(OpKind::Mul, {a, b}, {}, loc); }
Var Builder::div(Operand a, Operand b, Loc loc) { return build(OpKind::Div, {a, b}, {}, loc); }
Var Builder::pow(Operand a, Operand b, Loc loc) { return build(OpKind::Pow, {a, b}, {}, loc); }
Var Builder::maximum(Operand a, Operand b, Loc loc) {
  return build(OpKind::Maximum, {a, b}, {}, loc);
}
Var Builder::minimum(Operand a, Operand b, Loc loc) {
  return build(OpKind::Minimum, {a, b}, {}, loc);
}
Var Builder::equal(Operand a, Operand b, Loc loc) { return build(OpKind::Equal, {a, b}, {}, loc); }
Var Builder::less(Operand a, Operand b, Loc loc) { return build(OpKind::Less, {a, b}, {}, loc); }
Var Builder::greater(Operand a, Operand b, Loc loc) {
  return build(OpKind::Greater, {a, b}, {}, loc);
}
Var Builder::where(Var cond, Operand a, Operand b, Loc loc) {
  return build(OpKind::Where, {cond, a, b}, {}, loc);
}

Var Builder::matmul(Var a, Var b, Loc loc) { return op(OpKind::Matmul, {a, b}, {}, loc); }
Var Builder::linear(Var x, Var weight, Var bias, Loc loc) {
  return op(OpKind::Linear, {x, weight, bias}, {}, loc);
}
Var Builder::conv2d(Var x, Var weight, Var bias, Conv2dOptions o, Loc loc) {
  return op(OpKind::Conv2d, {x, weight, bias},
            {{"stride", std::move(o.stride)},
             {"padding", std::move(o.padding)},
             {"dilation", std::move(o.dilation)},
             {"groups", o.groups}},
            loc);
}
Var Builder::maxPool2d(Var x, Pool2dOptions o, Loc loc) {
  return op(OpKind::MaxPool2d, {x},
            {{"kernel", std::move(o.kernel)},
             {"stride", std::move(o.stride)},
             {"padding", std::move(o.padding)},
             {"dilation", std::move(o.dilation)},
             {"ceil_mode", o.ceilMode}},
            loc);
}
Var Builder::avgPool2d(Var x, Pool2dOptions o, Loc loc) {
  return op(OpKind::AvgPool2d, {x},
            {{"kernel", std::move(o.kernel)},
             {"stride", std::move(o.stride)},
             {"padding", std::move(o.padding)},
             {"ceil_mode", o.ceilMode},
             {"count_include_pad", o.countIncludePad}},
            loc);
}
Var Builder::globalAvgPool(Var x, Loc loc) { return op(OpKind::GlobalAvgPool, {x}, {}, loc); }
Var Builder::batchNorm(Var x, Var scale, Var bias, Var mean, Var var, double eps, Loc loc) {
  return op(OpKind::BatchNorm, {x, scale, bias, mean, var}, {{"eps", eps}}, loc);
}
Var Builder::layerNorm(Var x, Var weight, Var bias, int64_t axis, double eps, Loc loc) {
  return op(OpKind::LayerNorm, {x, weight, bias}, {{"axis", axis}, {"eps", eps}}, loc);
}

Var Builder::sum(Var x, std::vector<int64_t> axes, bool keepdims, Loc loc) {
  return op(OpKind::Sum, {x}, {{"axes", std::move(axes)}, {"keepdims", keepdims}}, loc);
}
Var Builder::mean(Var x, std::vector<int64_t> axes, bool keepdims, Loc loc) {
  return op(OpKind::Mean, {x}, {{"axes", std::move(axes)}, {"keepdims", keepdims}}, loc);
}
Var Builder::max(Var x, std::vector<int64_t> axes, bool keepdims, Loc loc) {
  return op(OpKind::Max, {x}, {{"axes", std::move(axes)}, {"keepdims", keepdims}}, loc);
}
Var Builder::softmax(Var x, int64_t axis, Loc loc) {
  return op(OpKind::Softmax, {x}, {{"axis", axis}}, loc);
}
Var Builder::logSoftmax(Var x, int64_t axis, Loc loc) {
  return op(OpKind::LogSoftmax, {x}, {{"axis", axis}}, loc);
}

Var Builder::reshape(Var x, std::vector<int64_t> shape, Loc loc) {
  return op(OpKind::Reshape, {x}, {{"shape", std::move(shape)}}, loc);
}
Var Builder::transpose(Var x, std::vector<int64_t> perm, Loc loc) {
  return op(OpKind::Transpose, {x}, {{"perm", std::move(perm)}}, loc);
}
Var Builder::concat(std::vector<Var> xs, int64_t axis, Loc loc) {
  return op(OpKind::Concat, std::move(xs), {{"axis", axis}}, loc);
}
Var Builder::slice(Var x, SliceOptions o, Loc loc) {
  return op(OpKind::Slice, {x},
            {{"starts", std::move(o.starts)},
             {"ends", std::move(o.ends)},
             {"axes", std::move(o.axes)},
             {"steps", std::move(o.steps)}},
            loc);
}
Var Builder::gather(Var data, Var indices, int64_t axis, Loc loc) {
  return op(OpKind::Gather, {data, indices}, {{"axis", axis}}, loc);
}
Var Builder::unsqueeze(Var x, std::vector<int64_t> axes, Loc loc) {
  return op(OpKind::Unsqueeze, {x}, {{"axes", std::move(axes)}}, loc);
}
Var Builder::squeeze(Var x, std::vector<int64_t> axes, Loc loc) {
  return op(OpKind::Squeeze, {x}, {{"axes", std::move(axes)}}, loc);
}
Var Builder::flatten(Var x, int64_t start, int64_t end, Loc loc) {
  return op(OpKind::Flatten, {x}, {{"start", start}, {"end", end}}, loc);
}
Var Builder::expand(Var x, std::vector<int64_t> shape, Loc loc) {
  return op(OpKind::Expand, {x}, {{"shape", std::move(shape)}}, loc);
}

Var Builder::cast(Var x, DType to, Loc loc) { return op(OpKind::Cast, {x}, {{"to", to}}, loc); }
Var Builder::transfer(Var x, Device to, Loc loc) {
  return op(OpKind::Transfer, {x}, {{"to", to}}, loc);
}
Var Builder::constant(TensorData value, Loc loc) {
  return op(OpKind::Constant, {}, {{"value", std::move(value)}}, loc);
}
Var Builder::constant(double value, DType dtype, Loc loc) {
  return op(OpKind::Constant, {}, {{"value", TensorData::full(dtype, {}, value)}}, loc);
}
Var Builder::identity(Var x, Loc loc) { return op(OpKind::Identity, {x}, {}, loc); }

}  // namespace ferry
