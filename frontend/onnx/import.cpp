// frontend/onnx/import.cpp — the importer's driver: an ONNX ModelProto to a verified ferry Graph.
//
//   1. parse      the bytes as a ModelProto; check the graph and the opsets it imports
//   2. names      every value's one definition (input, initializer or node output): duplicates,
//                 and which node defines what, so a read before the definition names both
//   3. params     initializers: declared sizes against the limits before anything is allocated,
//                 then their data (converted here, made params only when a node reads them)
//   4. inputs     graph inputs that are not initializers, symbolic dims fixed by inputShapes
//   5. nodes      in order, each through its converter (convert.h) with a NodeContext; a node
//                 whose converter failed poisons its outputs, and nodes reading them say nothing
//   6. outputs    graph outputs with their ONNX names, checked against their declared types
//   7. report     unsupported ops as one error listing them all; verify the graph
// Every problem of every phase is collected: one run reports all of them.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include "backends/reference/interpreter.h"
#include "frontend/onnx/convert.h"
#include "frontend/onnx/onnx_import.h"
#include "frontend/onnx/tensor_impl.h"
#include "ir/verifier.h"
#include "onnx/onnx_pb.h"

namespace ferry::onnx_import {
namespace {

constexpr int kMinOpset = 1;
// The newest opset checked: onnx 1.23's schemas of every op the importer converts differ from
// their opset-17 forms only in data types, except where the converter reads opset() (docs/onnx.md).
constexpr int kMaxOpset = 28;
// Ops whose meaning changed after opset 17 (ReduceMean's and ReduceMax's axes became an input at
// 18) are converted in both forms by their converters, which read opset(). Changes that only add
// data types or attributes need nothing: types are checked, unread attributes are errors.

bool isDefaultDomain(std::string_view d) { return d.empty() || d == "ai.onnx"; }

std::string nodeLabel(const onnx::NodeProto &n, int index) {
  return n.name().empty() ? "#" + std::to_string(index) : "'" + n.name() + "'";
}

/// A node's location text: `node 'Gemm_3' (#12, Gemm)`, or `node #12 (Gemm)` without a name.
std::string nodeWhere(const onnx::NodeProto &n, int index) {
  return n.name().empty()
             ? "node #" + std::to_string(index) + " (" + n.op_type() + ")"
             : "node '" + n.name() + "' (#" + std::to_string(index) + ", " + n.op_type() + ")";
}

/// One ONNX value as the importer knows it.
struct Entry {
  Known known;
  bool poisoned = false;  ///< its definition failed (already reported): readers stay quiet
  Location loc;           ///< where it is defined
};

class Importer;

class Context final : public NodeContext {
 public:
  Context(Importer &im, const onnx::NodeProto &node, int index, Location loc, int opset)
      : im_(im), node_(node), index_(index), loc_(std::move(loc)), opset_(opset) {}

  const onnx::NodeProto &proto() const override { return node_; }
  std::string_view opType() const override { return node_.op_type(); }
  int opset() const override { return opset_; }
  const Location &loc() const override { return loc_; }

  size_t inputCount() const override { return static_cast<size_t>(node_.input_size()); }
  bool hasInput(size_t i) const override {
    return i < inputCount() && !node_.input(static_cast<int>(i)).empty();
  }
  const TensorType &inputType(size_t i) const override;
  const TensorData *inputData(size_t i) const override;
  ValueId input(size_t i) override;
  const TensorData *requireData(size_t i, std::string_view what) override;
  std::optional<std::vector<int64_t>> intsInput(size_t i, std::string_view what) override;

  bool hasAttr(std::string_view name) const override { return find(name) != nullptr; }
  int64_t attrInt(std::string_view name, int64_t fallback) override;
  double attrFloat(std::string_view name, double fallback) override;
  std::string attrString(std::string_view name, std::string fallback) override;
  std::vector<int64_t> attrInts(std::string_view name, std::vector<int64_t> fallback) override;
  std::vector<double> attrFloats(std::string_view name, std::vector<double> fallback) override;
  std::optional<TensorData> attrTensor(std::string_view name) override;
  void ignoreAttr(std::string_view name) override { read_.insert(std::string(name)); }

  std::optional<Known> emit(OpKind op, std::vector<Known> operands,
                            std::vector<NamedAttr> attrs) override;
  Known known(size_t i) override;
  Known constant(TensorData data) override {
    TensorType type = data.type();
    return Known{-1, std::move(data), std::move(type), false, {}};
  }
  size_t outputCount() const override { return static_cast<size_t>(node_.output_size()); }
  bool outputUsed(size_t i) const override;
  void setOutput(size_t i, Known k) override;

  void error(std::string message, std::string code = "onnx") override;
  void unsupported(std::string what) override;

  /// After the converter: unread attributes, unset outputs; poisons what is not defined.
  void finish();

 private:
  const onnx::AttributeProto *find(std::string_view name) const {
    for (const auto &a : node_.attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  /// The attribute `name` when present and of `kind` (marking it read); nullptr when absent, and
  /// an error when of another kind.
  const onnx::AttributeProto *attr(std::string_view name, onnx::AttributeProto::AttributeType kind,
                                   std::string_view expected);
  const std::string &inputName(size_t i) const { return node_.input(static_cast<int>(i)); }
  std::string inputDesc(size_t i) const {
    return "input " + std::to_string(i) + " ('" + inputName(i) + "')";
  }

  Importer &im_;
  const onnx::NodeProto &node_;
  int index_;
  Location loc_;
  int opset_;
  std::set<std::string, std::less<>> read_;
  std::set<ValueId> created_;  // ferry values this node made
  std::set<ValueId> renamed_;  // of those, the ones that took an output's ONNX name
  std::vector<bool> set_;
  bool failed_ = false;
};

class Importer {
 public:
  Importer(const onnx::ModelProto &model, std::string_view fileName, std::string baseDir,
           const OnnxImportOptions &options, std::set<std::string, std::less<>> frozen)
      : model_(model), file_(fileName), baseDir_(std::move(baseDir)), options_(options),
        frozen_(std::move(frozen)) {}

  Expected<Graph> run();
  /// The graph inputs whose value a node needed at import, with a value in
  /// options.inputValues: run() again with them frozen.
  std::set<std::string, std::less<>> inputsToFreeze() const {
    std::set<std::string, std::less<>> out = frozen_;
    for (const std::string &n : neededInputs_)
      if (options_.inputValues.count(n)) out.insert(n);
    return out;
  }
  const std::set<std::string, std::less<>> &frozen() const { return frozen_; }

 private:
  friend class Context;

  void checkOpsets();
  void collectDefinitions();
  void addInitializers();
  void addInputs();
  void convertNodes();
  void convertNode(const onnx::NodeProto &node, int index);
  void addOutputs();
  void reportUnsupported();

  Location at(std::string label, int line) const {
    return Location{file_, line, 0, SharedText(label)};
  }
  /// The ferry value of ONNX value `name` (defined and not poisoned), made on first use.
  ValueId materialize(const std::string &name);
  /// The ferry value of `k`, made when `k` is only data.
  ValueId materialize(const Known &k, const Location &loc);
  ValueId addConstant(const TensorData &data, std::string name, const Location &loc);
  /// A name for a value the ONNX model does not name: `hint`, `hint.1`, ... that neither the
  /// graph nor the model uses.
  std::string freshName(std::string_view hint) const;
  void poison(const onnx::NodeProto &node, const Location &loc);

  const onnx::ModelProto &model_;
  FileName file_;
  std::string baseDir_;
  const OnnxImportOptions &options_;
  DiagnosticEngine diags_;
  Graph graph_;
  int opset_ = 0;
  std::map<std::string, int, std::less<>> domainOpsets_;
  std::map<std::string, Entry, std::less<>> values_;         // defined so far
  std::map<std::string, std::string, std::less<>> definer_;  // every name -> its definition
  std::map<std::string, int, std::less<>> definedAt_;        // node outputs -> node index
  std::set<std::string, std::less<>> reserved_;              // every name the model uses
  std::set<std::string, std::less<>> read_;                  // names read by a node or output
  std::set<std::string, std::less<>> initializerNames_;
  std::set<std::string, std::less<>> twice_;         // names defined more than once (reported)
  std::set<std::string, std::less<>> frozen_;        // inputs frozen to options_.inputValues
  std::set<std::string, std::less<>> graphInputs_;   // inputs that are not initializers
  std::set<std::string, std::less<>> neededInputs_;  // of those, the ones a node needed data of
  int64_t foldedBytes_ = 0;  // bytes of the large results folded at import (NodeContext::emit)
  // Unsupported op types (or ops as written), each with its nodes' labels and first location.
  struct Unsupported {
    std::vector<std::string> nodes;
    Location first;
  };
  std::map<std::string, Unsupported> unsupported_;
};

// --- Context --------------------------------------------------------------------------------

const TensorType &Context::inputType(size_t i) const {
  FERRY_CHECK(hasInput(i)) << "inputType(" << i << ") of an absent input";
  return im_.values_.find(inputName(i))->second.known.type;
}

const TensorData *Context::inputData(size_t i) const {
  FERRY_CHECK(hasInput(i)) << "inputData(" << i << ") of an absent input";
  const Entry &e = im_.values_.find(inputName(i))->second;
  return e.known.data ? &*e.known.data : nullptr;
}

ValueId Context::input(size_t i) {
  FERRY_CHECK(hasInput(i)) << "input(" << i << ") of an absent input";
  return im_.materialize(inputName(i));
}

Known Context::known(size_t i) {
  FERRY_CHECK(hasInput(i)) << "known(" << i << ") of an absent input";
  Known k = im_.values_.find(inputName(i))->second.known;
  if (k.name.empty()) k.name = inputName(i);
  return k;
}

const TensorData *Context::requireData(size_t i, std::string_view what) {
  if (!hasInput(i)) {
    error(std::string(opType()) + ": " + std::string(what) + " (input " + std::to_string(i) +
          ") is missing");
    return nullptr;
  }
  if (const TensorData *d = inputData(i)) return d;
  const std::string head =
      std::string(opType()) + ": " + std::string(what) + " (" + inputDesc(i) + ")";
  const std::string &name = inputName(i);
  if (im_.graphInputs_.count(name)) {
    // Its value is given: the importer runs again with the input frozen (Importer::run).
    im_.neededInputs_.insert(name);
    if (im_.options_.inputValues.count(name)) {
      failed_ = true;
      return nullptr;
    }
    im_.diags_
        .error("onnx", loc_,
               head + " must be known at import time, but it is the graph input '" + name +
                   "' (ferry's shapes are static)")
        .fix("give its value at import (ferry-compile --input-value " + name +
             "=FILE, OnnxImportOptions::inputValues), or make '" + name + "' an initializer");
    failed_ = true;
    return nullptr;
  }
  error(head + " must be known at import time (an initializer, a Constant or a folded shape "
               "computation), but it is computed from the graph's inputs");
  return nullptr;
}

std::optional<std::vector<int64_t>> Context::intsInput(size_t i, std::string_view what) {
  const TensorData *d = requireData(i, what);
  if (!d) return std::nullopt;
  const TensorType &t = inputType(i);
  std::string head = std::string(opType()) + ": " + std::string(what) + " (" + inputDesc(i) + ")";
  if (!isInteger(t.dtype) || t.rank() > 1) {
    error(head + " must be an integer tensor of rank 0 or 1, but it is " + t.str());
    return std::nullopt;
  }
  std::vector<int64_t> out(static_cast<size_t>(d->numel()));
  for (int64_t k = 0; k < d->numel(); ++k) out[static_cast<size_t>(k)] = d->atInt(k);
  return out;
}

const onnx::AttributeProto *Context::attr(std::string_view name,
                                          onnx::AttributeProto::AttributeType kind,
                                          std::string_view expected) {
  const onnx::AttributeProto *a = find(name);
  if (!a) return nullptr;
  read_.insert(std::string(name));
  if (a->type() == kind) return a;
  // An INT where a FLOAT is expected is read as the float (exporters write `alpha=1`).
  if (kind == onnx::AttributeProto::FLOAT && a->type() == onnx::AttributeProto::INT) return a;
  std::string came = onnx::AttributeProto::AttributeType_IsValid(a->type())
                         ? onnx::AttributeProto::AttributeType_Name(a->type())
                         : "type " + std::to_string(a->type());
  error(std::string(opType()) + ": attribute '" + std::string(name) + "' is " + came +
        ", expected " + std::string(expected));
  return nullptr;
}

int64_t Context::attrInt(std::string_view name, int64_t fallback) {
  const auto *a = attr(name, onnx::AttributeProto::INT, "INT");
  return a ? a->i() : fallback;
}

double Context::attrFloat(std::string_view name, double fallback) {
  const auto *a = attr(name, onnx::AttributeProto::FLOAT, "FLOAT");
  if (!a) return fallback;
  return a->type() == onnx::AttributeProto::INT ? static_cast<double>(a->i()) : a->f();
}

std::string Context::attrString(std::string_view name, std::string fallback) {
  const auto *a = attr(name, onnx::AttributeProto::STRING, "STRING");
  return a ? a->s() : fallback;
}

std::vector<int64_t> Context::attrInts(std::string_view name, std::vector<int64_t> fallback) {
  const auto *a = attr(name, onnx::AttributeProto::INTS, "INTS");
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : fallback;
}

std::vector<double> Context::attrFloats(std::string_view name, std::vector<double> fallback) {
  const auto *a = attr(name, onnx::AttributeProto::FLOATS, "FLOATS");
  return a ? std::vector<double>(a->floats().begin(), a->floats().end()) : fallback;
}

std::optional<TensorData> Context::attrTensor(std::string_view name) {
  const auto *a = attr(name, onnx::AttributeProto::TENSOR, "TENSOR");
  if (!a) {
    if (!hasAttr(name))
      error(std::string(opType()) + ": attribute '" + std::string(name) + "' is missing");
    return std::nullopt;
  }
  Expected<TensorData> t =
      tensorFromProto(a->t(), im_.baseDir_, im_.options_.maxParamBytes, loc_,
                      std::string(opType()) + " attribute '" + std::string(name) + "'");
  if (!t) {
    for (const Diagnostic &d : t.status().diagnostics()) im_.diags_.report(d);
    failed_ = true;
    return std::nullopt;
  }
  return std::move(*t);
}

std::optional<Known> Context::emit(OpKind op, std::vector<Known> operands,
                                   std::vector<NamedAttr> attrs) {
  const OpInfo &info = opInfo(op);
  Expected<Attrs> made = makeAttrs(info, attrs, loc_);
  if (!made) {
    for (const Diagnostic &d : made.status().diagnostics()) im_.diags_.report(d);
    failed_ = true;
    return std::nullopt;
  }
  std::vector<TensorType> types;
  for (const Known &k : operands) types.push_back(k.type);
  InferResult inferred = inferType(info, types, *made);
  if (auto *e = std::get_if<InferError>(&inferred)) {
    error(std::string(opType()) + ": " + e->message, e->code);
    return std::nullopt;
  }
  TensorType type = std::get<TensorType>(std::move(inferred));
  bool allData = std::all_of(operands.begin(), operands.end(),
                             [](const Known &k) { return k.data.has_value(); });
  bool anyParam =
      std::any_of(operands.begin(), operands.end(), [](const Known &k) { return k.initializer; });
  // Small results are folded; larger ones of Constant data only (a shape computation the model
  // needs known) while they fit the param limits: a few bytes of ONNX (a Pad or an Expand of a
  // scalar) must not become gigabytes of constants at import; past the limits the op stays a
  // node and runs with the model.
  const auto bytes = static_cast<int64_t>(type.byteSize());
  const bool fold = type.numel() <= kMaxFoldElements ||
                    (!anyParam && bytes <= im_.options_.maxParamBytes &&
                     bytes <= im_.options_.maxTotalParamBytes - im_.foldedBytes_);
  if (allData && fold) {
    if (type.numel() > kMaxFoldElements) im_.foldedBytes_ += bytes;
    std::vector<TensorData> data;
    for (const Known &k : operands) data.push_back(*k.data);
    Expected<TensorData> folded = reference::evalOp(info, data, *made, type, loc_);
    if (!folded) {
      for (const Diagnostic &d : folded.status().diagnostics()) im_.diags_.report(d);
      failed_ = true;
      return std::nullopt;
    }
    return Known{-1, std::move(*folded), std::move(type), false, {}};
  }
  std::vector<ValueId> ids;
  for (const Known &k : operands) ids.push_back(im_.materialize(k, loc_));
  std::string hint = node_.output_size() > 0 && !node_.output(0).empty()
                         ? node_.output(0) + "/" + std::string(info.name)
                         : std::string(info.name);
  NodeId id = im_.graph_.addNode(NodeSpec{op, std::move(ids), std::move(*made), {}, {}, loc_},
                                 im_.freshName(hint), type);
  ValueId v = im_.graph_.node(id).result;
  created_.insert(v);
  return Known{v, std::nullopt, std::move(type), false, {}};
}

bool Context::outputUsed(size_t i) const {
  return i < outputCount() && !node_.output(static_cast<int>(i)).empty() &&
         im_.read_.count(node_.output(static_cast<int>(i))) > 0;
}

void Context::setOutput(size_t i, Known k) {
  if (i >= outputCount()) return;  // a trailing optional output the node does not write
  const std::string &name = node_.output(static_cast<int>(i));
  if (name.empty()) return;
  if (set_.size() <= i) set_.resize(i + 1);
  set_[i] = true;
  if (k.value >= 0 && created_.count(k.value) && !renamed_.count(k.value)) {
    im_.graph_.rename(k.value, name);
    renamed_.insert(k.value);
    k.name = name;
  }
  // Data, or a value the model already names, stays under that name: a reader of `name`
  // materialises (or reads) the original.
  if (k.name.empty()) k.name = name;
  im_.values_[name] = Entry{std::move(k), false, loc_};
}

void Context::error(std::string message, std::string code) {
  im_.diags_.error(std::move(code), loc_, std::move(message));
  failed_ = true;
}

void Context::unsupported(std::string what) {
  auto &u = im_.unsupported_[what];
  if (u.nodes.empty()) u.first = loc_;
  u.nodes.push_back(nodeLabel(node_, index_));
  failed_ = true;
}

void Context::finish() {
  if (!failed_) {
    for (const auto &a : node_.attribute())
      if (!read_.count(a.name()))
        error(std::string(opType()) + ": attribute '" + a.name() + "' is not supported");
  }
  if (!failed_) {
    for (size_t i = 0; i < outputCount(); ++i)
      if (outputUsed(i) && (i >= set_.size() || !set_[i]))
        unsupported(std::string(opType()) + " output " + std::to_string(i));
  }
  for (size_t i = 0; i < outputCount(); ++i) {
    const std::string &name = node_.output(static_cast<int>(i));
    if (name.empty() || (!failed_ && i < set_.size() && set_[i])) continue;
    im_.values_[name] = Entry{Known{}, true, loc_};
  }
}

// --- Importer -------------------------------------------------------------------------------

ValueId Importer::addConstant(const TensorData &data, std::string name, const Location &loc) {
  Expected<Attrs> attrs =
      makeAttrs(opInfo(OpKind::Constant), std::vector<NamedAttr>{{"value", data}}, loc);
  FERRY_CHECK(attrs.ok()) << "constant's attributes";
  NodeId id = graph_.addNode(NodeSpec{OpKind::Constant, {}, std::move(*attrs), {}, {}, loc},
                             std::move(name), data.type());
  return graph_.node(id).result;
}

ValueId Importer::materialize(const std::string &name) {
  auto it = values_.find(name);
  FERRY_CHECK(it != values_.end() && !it->second.poisoned) << "'" << name << "' is not defined";
  Entry &e = it->second;
  if (e.known.value >= 0) return e.known.value;
  if (e.known.name != name) {
    // An alias (Identity of data): the original's value.
    e.known.value = materialize(e.known.name);
    return e.known.value;
  }
  FERRY_CHECK(e.known.data) << "'" << name << "' has neither a value nor data";
  if (e.known.initializer) {
    e.known.value = graph_.addParam(
        name, *e.known.data, Initializer{Initializer::Kind::Data, 0, {}}, std::nullopt, e.loc);
  } else {
    e.known.value = addConstant(*e.known.data, name, e.loc);
  }
  return e.known.value;
}

ValueId Importer::materialize(const Known &k, const Location &loc) {
  if (k.value >= 0) return k.value;
  if (!k.name.empty()) {
    auto it = values_.find(k.name);
    if (it != values_.end() && !it->second.poisoned) return materialize(k.name);
  }
  FERRY_CHECK(k.data) << "an operand with neither a value nor data";
  return addConstant(*k.data, freshName("const"), loc);
}

std::string Importer::freshName(std::string_view hint) const {
  std::string base(hint.empty() ? "v" : hint);
  std::string name = base;
  for (int n = 1; graph_.hasValue(name) || reserved_.count(name); ++n)
    name = base + "." + std::to_string(n);
  return name;
}

void Importer::checkOpsets() {
  for (const auto &o : model_.opset_import()) {
    std::string domain = isDefaultDomain(o.domain()) ? "" : o.domain();
    domainOpsets_[domain] = static_cast<int>(std::clamp<int64_t>(o.version(), -1, 1 << 20));
  }
  Location loc{file_, 0, 0, {}};
  auto it = domainOpsets_.find("");
  if (it == domainOpsets_.end()) {
    diags_.error("onnx", loc, "the model imports no opset of the default ONNX domain")
        .note("ferry imports opsets " + std::to_string(kMinOpset) + " to " +
              std::to_string(kMaxOpset));
    return;
  }
  opset_ = it->second;
  if (opset_ < kMinOpset)
    diags_
        .error("onnx", loc,
               "the model imports opset " + std::to_string(opset_) +
                   " of the default ONNX domain; ferry imports opsets " +
                   std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset))
        .fix("re-export the model with opset_version=17 (torch.onnx.export) or convert it with "
             "onnx.version_converter");
  else if (opset_ > kMaxOpset)
    diags_
        .error("onnx", loc,
               "the model imports opset " + std::to_string(opset_) +
                   " of the default ONNX domain, newer than ferry knows; ferry imports opsets " +
                   std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset))
        .fix("re-export the model with opset_version=17");
}

void Importer::collectDefinitions() {
  const onnx::GraphProto &g = model_.graph();
  auto define = [&](const std::string &name, std::string what, const Location &loc) {
    if (name.empty()) return;
    reserved_.insert(name);
    auto [it, fresh] = definer_.emplace(name, what);
    if (!fresh) {
      diags_.error("onnx", loc,
                   "'" + name + "' is defined twice: by " + it->second + " and by " + what);
      twice_.insert(name);
    }
  };
  for (int i = 0; i < g.initializer_size(); ++i)
    define(g.initializer(i).name(), "initializer '" + g.initializer(i).name() + "'",
           at("initializer '" + g.initializer(i).name() + "'", i + 1));
  for (const auto &t : g.initializer()) initializerNames_.insert(t.name());
  for (int i = 0; i < g.input_size(); ++i) {
    const std::string &name = g.input(i).name();
    // ONNX IR >= 4: an initializer may also be listed as an input; it is the initializer.
    if (initializerNames_.count(name)) continue;
    define(name, "input '" + name + "'", at("input '" + name + "'", i + 1));
  }
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto &n = g.node(i);
    for (const std::string &out : n.output()) {
      if (out.empty()) continue;
      define(out, nodeWhere(n, i), at(nodeWhere(n, i), i + 1));
      definedAt_.emplace(out, i);
    }
    for (const std::string &in : n.input())
      if (!in.empty()) read_.insert(in), reserved_.insert(in);
  }
  for (const auto &o : g.output()) read_.insert(o.name()), reserved_.insert(o.name());
}

void Importer::addInitializers() {
  const onnx::GraphProto &g = model_.graph();
  // Declared sizes first: nothing is allocated when the model asks for too much.
  int64_t total = 0;
  for (int i = 0; i < g.initializer_size(); ++i) {
    const onnx::TensorProto &t = g.initializer(i);
    Location loc = at("initializer '" + t.name() + "'", i + 1);
    Expected<TensorType> type =
        declaredType(t, options_.maxParamBytes, loc, "initializer '" + t.name() + "'");
    if (!type) {
      for (const Diagnostic &d : type.status().diagnostics()) diags_.report(d);
      values_[t.name()] = Entry{Known{}, true, loc};
      continue;
    }
    total += static_cast<int64_t>(std::min<size_t>(type->byteSize(), size_t{1} << 62));
    total = std::min<int64_t>(total, int64_t{1} << 62);
  }
  if (total > options_.maxTotalParamBytes) {
    diags_.error("limit", Location{file_, 0, 0, {}},
                 "the model's initializers declare " + std::to_string(total) +
                     " bytes together, more than the limit of " +
                     std::to_string(options_.maxTotalParamBytes) + " bytes");
    for (const auto &t : g.initializer()) values_[t.name()] = Entry{Known{}, true, {}};
    return;
  }
  for (int i = 0; i < g.initializer_size(); ++i) {
    const onnx::TensorProto &t = g.initializer(i);
    Location loc = at("initializer '" + t.name() + "'", i + 1);
    if (t.name().empty()) {
      diags_.error("onnx", loc, "initializer #" + std::to_string(i) + " has no name");
      continue;
    }
    if (values_.count(t.name())) continue;  // its declared size was already refused
    Expected<TensorData> data =
        tensorFromProto(t, baseDir_, options_.maxParamBytes, loc, "initializer '" + t.name() + "'");
    if (!data) {
      for (const Diagnostic &d : data.status().diagnostics()) diags_.report(d);
      values_[t.name()] = Entry{Known{}, true, loc};
      continue;
    }
    TensorType type = data->type();
    values_[t.name()] =
        Entry{Known{-1, std::move(*data), std::move(type), true, t.name()}, false, loc};
  }
}

void Importer::addInputs() {
  const onnx::GraphProto &g = model_.graph();
  std::set<std::string, std::less<>> inputNames;
  for (int i = 0; i < g.input_size(); ++i) {
    const onnx::ValueInfoProto &in = g.input(i);
    const std::string &name = in.name();
    if (initializerNames_.count(name) || values_.count(name)) continue;  // twice: reported
    inputNames.insert(name);
    graphInputs_.insert(name);
    Location loc = at("input '" + name + "'", i + 1);
    auto fail = [&](std::string message) {
      diags_.error("onnx", loc, "input '" + name + "' " + message);
      if (!name.empty()) values_[name] = Entry{Known{}, true, loc};
    };
    if (name.empty()) {
      fail("has no name");
      continue;
    }
    if (!in.type().has_tensor_type()) {
      fail("is not a tensor (sequences, maps and optionals are not supported)");
      continue;
    }
    const onnx::TypeProto::Tensor &tt = in.type().tensor_type();
    std::optional<DType> dtype = dtypeOf(tt.elem_type());
    if (!dtype) {
      fail("has data type " + onnxTypeName(tt.elem_type()) +
           ", which ferry does not support (it has " + std::string(dtypeNameList()) + ")");
      continue;
    }
    // The declared dims: a value, or symbolic (a name, or nothing: unknown).
    Shape shape;
    std::vector<std::string> symbolic;  // "'batch_size' (dim 0)"
    bool bad = false;
    if (!tt.has_shape()) symbolic.push_back("shape (its rank is unknown)");
    for (int d = 0; tt.has_shape() && d < tt.shape().dim_size(); ++d) {
      const auto &dim = tt.shape().dim(d);
      if (dim.has_dim_value()) {
        if (dim.dim_value() < 0) {
          fail("has a negative dim " + std::to_string(dim.dim_value()) + " (dim " +
               std::to_string(d) + ")");
          bad = true;
          break;
        }
        shape.push_back(dim.dim_value());
      } else {
        shape.push_back(-1);
        symbolic.push_back(dim.has_dim_param() && !dim.dim_param().empty()
                               ? "symbolic dim '" + dim.dim_param() + "' (dim " +
                                     std::to_string(d) + ")"
                               : "unknown dim (dim " + std::to_string(d) + ")");
      }
    }
    if (bad) continue;
    auto given = options_.inputShapes.find(name);
    if (given != options_.inputShapes.end()) {
      const Shape &s = given->second;
      bool agrees = !tt.has_shape() || s.size() == shape.size();
      for (size_t d = 0; agrees && tt.has_shape() && d < s.size(); ++d)
        agrees = shape[d] < 0 || shape[d] == s[d];
      if (std::any_of(s.begin(), s.end(), [](int64_t d) { return d < 0; })) {
        fail("is given shape " + shapeStr(s) + " (--shape), which has a negative dim");
        continue;
      }
      if (!agrees) {
        std::string declared = "[";
        for (size_t d = 0; d < shape.size(); ++d)
          declared += (d ? "," : "") + (shape[d] < 0 ? std::string("?") : std::to_string(shape[d]));
        fail("is given shape " + shapeStr(s) + " (--shape), which disagrees with its declared " +
             "shape " + declared + "]");
        continue;
      }
      shape = s;
    } else if (!symbolic.empty()) {
      std::string list;
      for (size_t k = 0; k < symbolic.size(); ++k)
        list += (k == 0 ? "" : k + 1 == symbolic.size() ? " and " : ", ") + symbolic[k];
      diags_
          .error("shape", loc,
                 "input '" + name + "' has a " + list + ": give its shape with --shape " + name +
                     "=...")
          .fix("--shape " + name + "=" + [&] {
            std::string s;
            for (size_t d = 0; d < shape.size(); ++d)
              s += (d ? "," : "") + (shape[d] < 0 ? std::string("1") : std::to_string(shape[d]));
            return s;
          }());
      values_[name] = Entry{Known{}, true, loc};
      continue;
    }
    // Absurd shapes: the element count must fit in int64.
    int64_t n = 1;
    bool overflow = false;
    for (int64_t d : shape) {
      if (d != 0 && n > std::numeric_limits<int64_t>::max() / d / 8)
        overflow = true;
      else
        n *= d;
    }
    if (overflow) {
      fail("has shape " + shapeStr(shape) + ", whose size overflows 64 bits");
      continue;
    }
    TensorType type{*dtype, shape};
    if (frozen_.count(name)) {
      // A node needs its value at import (inputValues): a param of its name, or folded away.
      const TensorData &value = options_.inputValues.find(name)->second;
      if (value.type() != type) {
        fail("is given a value of type " + value.type().str() + " (inputValues), expected " +
             type.str());
        continue;
      }
      values_[name] = Entry{Known{-1, value, type, true, name}, false, loc};
      continue;
    }
    ValueId v = graph_.addInput(name, type, options_.inputDevice, loc);
    values_[name] = Entry{Known{v, std::nullopt, type, false, name}, false, loc};
  }
  for (const auto &[name, shape] : options_.inputShapes)
    if (!inputNames.count(name)) {
      std::string list;
      for (const std::string &n : inputNames) list += (list.empty() ? "'" : ", '") + n + "'";
      diags_.error("usage", Location{file_, 0, 0, {}},
                   "--shape names '" + name + "', which is not an input of the model" +
                       (list.empty() ? std::string() : " (its inputs: " + list + ")"));
    }
}

void Importer::poison(const onnx::NodeProto &node, const Location &loc) {
  for (const std::string &out : node.output())
    if (!out.empty()) values_[out] = Entry{Known{}, true, loc};
}

void Importer::convertNode(const onnx::NodeProto &node, int index) {
  const std::string &op = node.op_type();
  Location loc = at(nodeWhere(node, index), index + 1);
  // Inputs must be defined before the node (ONNX's topological order).
  bool quiet = false, bad = false;
  for (const std::string &in : node.input()) {
    if (in.empty()) continue;
    auto it = values_.find(in);
    if (it != values_.end()) {
      quiet = quiet || it->second.poisoned;
      continue;
    }
    auto later = definedAt_.find(in);
    if (later != definedAt_.end()) {
      const onnx::NodeProto &def = model_.graph().node(later->second);
      diags_.error("onnx", loc,
                   nodeWhere(node, index) + " reads '" + in + "', which " +
                       nodeWhere(def, later->second) +
                       " defines later: nodes must be in topological order" +
                       (later->second == index  ? " (the node reads its own output)"
                        : later->second < index ? ""
                                                : " (a cycle?)"));
    } else {
      diags_.error("onnx", loc,
                   nodeWhere(node, index) + " reads '" + in +
                       "', which no input, initializer or node defines");
    }
    bad = true;
  }
  for (const std::string &out : node.output()) quiet = quiet || twice_.count(out) > 0;
  if (bad || quiet) {
    poison(node, loc);
    return;
  }
  // The converter: default-domain ops; com.microsoft's Gelu is the exact (erf) Gelu.
  std::string domain = isDefaultDomain(node.domain()) ? "" : node.domain();
  bool msGelu = domain == "com.microsoft" && op == "Gelu";
  const ConverterEntry *found = nullptr;
  if (domain.empty() || msGelu) {
    auto table = converters();
    auto it =
        std::lower_bound(table.begin(), table.end(), op,
                         [](const ConverterEntry &e, std::string_view o) { return e.opType < o; });
    if (it != table.end() && it->opType == op) found = &*it;
  }
  int opset = opset_;
  if (!domain.empty()) {
    auto d = domainOpsets_.find(domain);
    opset = d == domainOpsets_.end() ? 1 : d->second;
  }
  Context ctx(*this, node, index, loc, opset);
  if (!found) {
    ctx.unsupported(domain.empty() ? op : domain + "." + op);
  } else if (domain.empty() && opset_ < found->minOpset) {
    ctx.unsupported(op + " before opset " + std::to_string(found->minOpset) + " (its older form)");
  } else if (node.output_size() == 0 || node.output(0).empty()) {
    // Every op of the table has a first output; a node without one is a malformed model.
    ctx.error(op + " has no output: expected its first output to be named");
  } else {
    found->convert(ctx);
  }
  ctx.finish();
}

void Importer::convertNodes() {
  const onnx::GraphProto &g = model_.graph();
  for (int i = 0; i < g.node_size(); ++i) convertNode(g.node(i), i);
}

void Importer::addOutputs() {
  const onnx::GraphProto &g = model_.graph();
  std::set<std::string, std::less<>> seen;
  for (int i = 0; i < g.output_size(); ++i) {
    const onnx::ValueInfoProto &out = g.output(i);
    const std::string &name = out.name();
    Location loc = at("output '" + name + "'", i + 1);
    if (!seen.insert(name).second) {
      diags_.error("onnx", loc, "output '" + name + "' is listed twice");
      continue;
    }
    auto it = values_.find(name);
    if (it == values_.end()) {
      diags_.error("onnx", loc,
                   "output '" + name + "' is not defined by any input, initializer or node");
      continue;
    }
    if (it->second.poisoned) continue;
    const TensorType type = it->second.known.type;
    // The declared type, where the model gives one, must be what ferry infers.
    if (out.type().has_tensor_type()) {
      const auto &tt = out.type().tensor_type();
      std::optional<DType> dt = dtypeOf(tt.elem_type());
      bool agrees = tt.elem_type() == 0 || (dt && *dt == type.dtype);
      std::string declared = tt.elem_type() == 0 ? std::string("?")
                             : dt                ? std::string(dtypeName(*dt))
                                                 : onnxTypeName(tt.elem_type());
      if (tt.has_shape()) {
        agrees = agrees && tt.shape().dim_size() == type.rank();
        declared += "[";
        for (int d = 0; d < tt.shape().dim_size(); ++d) {
          const auto &dim = tt.shape().dim(d);
          declared += (d ? "," : "") + (dim.has_dim_value()   ? std::to_string(dim.dim_value())
                                        : dim.has_dim_param() ? dim.dim_param()
                                                              : std::string("?"));
          if (dim.has_dim_value() && d < type.rank() &&
              dim.dim_value() != type.shape[static_cast<size_t>(d)])
            agrees = false;
        }
        declared += "]";
      }
      if (!agrees) {
        diags_.error("shape", loc,
                     "output '" + name + "' is declared " + declared + " but computes " +
                         type.str());
        continue;
      }
    }
    ValueId v = materialize(name);
    if (graph_.value(v).name != name) {
      // Another value's alias (Identity of an input or initializer): a copy under its own name.
      Expected<Attrs> attrs = makeAttrs(opInfo(OpKind::Identity), {}, loc);
      FERRY_CHECK(attrs.ok()) << "identity's attributes";
      NodeId id = graph_.addNode(NodeSpec{OpKind::Identity, {v}, std::move(*attrs), {}, {}, loc},
                                 name, type);
      v = graph_.node(id).result;
    }
    graph_.addOutput(v, std::nullopt, loc);
  }
  if (g.output_size() == 0)
    diags_.error("onnx", Location{file_, 0, 0, {}}, "the model's graph has no outputs");
}

void Importer::reportUnsupported() {
  if (unsupported_.empty()) return;
  std::string list;
  for (const auto &[what, u] : unsupported_) list += (list.empty() ? "" : ", ") + what;
  const auto &first = unsupported_.begin()->second;
  Diagnostic &d = diags_.error("unsupported", first.first,
                               std::to_string(unsupported_.size()) +
                                   (unsupported_.size() == 1 ? " op is" : " ops are") +
                                   " not supported: " + list);
  for (const auto &[what, u] : unsupported_) {
    std::string nodes;
    for (size_t k = 0; k < u.nodes.size() && k < 3; ++k) nodes += (k ? ", " : "") + u.nodes[k];
    if (u.nodes.size() > 3) nodes += " and " + std::to_string(u.nodes.size() - 3) + " more";
    d.note(what + ": " + std::to_string(u.nodes.size()) +
               (u.nodes.size() == 1 ? " node (" : " nodes (") + nodes + ")",
           u.first);
  }
}

Expected<Graph> Importer::run() {
  if (!model_.has_graph())
    return makeError("onnx", "the model has no graph", Location{file_, 0, 0, {}});
  graph_.setName(model_.graph().name().empty() ? "main" : model_.graph().name());
  checkOpsets();
  if (diags_.hasErrors()) return Status(diags_.take());
  collectDefinitions();
  addInitializers();
  addInputs();
  convertNodes();
  addOutputs();
  reportUnsupported();
  if (diags_.hasErrors()) return Status(diags_.take());
  FERRY_TRY(verify(graph_));
  return std::move(graph_);
}

}  // namespace
}  // namespace ferry::onnx_import

namespace ferry {

namespace {

Expected<Graph> importModel(std::span<const std::byte> bytes, std::string_view fileName,
                            const std::string &baseDir, const OnnxImportOptions &options) {
  // On an arena: protobuf's parser is not exception-safe (a std::bad_alloc midway leaked the
  // messages it had made but not yet linked, item 7's sweep found), and the arena frees them all.
  google::protobuf::Arena arena;
  onnx::ModelProto &model = *google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return makeError("onnx", "the model is larger than 2 GiB; store its weights as external data",
                     Location{FileName(fileName), 0, 0, {}});
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return makeError("onnx",
                     "not an ONNX model (the bytes do not parse as a ModelProto: truncated or not "
                     "ONNX)",
                     Location{FileName(fileName), 0, 0, {}});
  // A node that needs a graph input's value at import, given in options.inputValues, makes the
  // import run again with that input frozen; freezing one can reveal another (a node after the
  // one that failed), so until the set stops growing.
  std::set<std::string, std::less<>> frozen;
  while (true) {
    onnx_import::Importer importer(model, fileName, baseDir, options, frozen);
    Expected<Graph> graph = importer.run();
    std::set<std::string, std::less<>> more = importer.inputsToFreeze();
    if (more.size() == frozen.size()) {
      if (options.frozenInputs != nullptr) {
        options.frozenInputs->clear();
        for (const auto &in : model.graph().input())
          if (frozen.count(in.name())) options.frozenInputs->push_back(in.name());
      }
      return graph;
    }
    frozen = std::move(more);
  }
}

Expected<Graph> readAndImport(const std::string &path, const OnnxImportOptions &options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError("io", "cannot open '" + path + "'");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return makeError("io", "cannot read '" + path + "'");
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  return importOnnx(std::as_bytes(std::span(bytes)), path, dir, options);
}

}  // namespace

Expected<Graph> importOnnx(std::span<const std::byte> bytes, std::string_view fileName,
                           const std::string &baseDir, const OnnxImportOptions &options) {
  return catchOutOfMemory([&] { return "importing " + std::string(fileName); },
                          [&] { return importModel(bytes, fileName, baseDir, options); });
}

Expected<Graph> importOnnxFile(const std::string &path, const OnnxImportOptions &options) {
  return catchOutOfMemory([&] { return "importing " + path; },
                          [&] { return readAndImport(path, options); });
}

}  // namespace ferry
