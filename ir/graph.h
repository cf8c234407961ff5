// ir/graph.h — the IR: SSA values, nodes, and the graph that owns them in topological order.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attrs.h"
#include "ir/chunked_vector.h"
#include "ir/device.h"
#include "ir/diagnostics.h"
#include "ir/ops.h"
#include "ir/shared_text.h"
#include "ir/tensor_data.h"
#include "ir/types.h"

namespace ferry {

using ValueId = int32_t;
using NodeId = int32_t;

enum class ValueKind : uint8_t { Input, Param, Result };

/// Why a value is on its device or has its dtype. The passes that decide record it as data on
/// the graph, so diagnostics, dumps and `--explain` can explain any value; a chain of reasons
/// is followed through `from`.
struct Reason {
  enum class Kind : uint8_t {
    None,          ///< not decided (yet)
    Pinned,        ///< a user pin on the node, param or output at `loc`
    Declared,      ///< an input's declared device (at `loc`)
    Inherited,     ///< from operand value `from`
    FromConsumer,  ///< from the node whose result is `from` (params, constants: backward)
    Target,        ///< nothing constrained it: the default target device
    Fallback,      ///< the wanted device has no kernel for it; `detail` says which
    CostModel,     ///< the cost model chose it; `detail` has the estimate
    Rule,          ///< dtype: the op's dtype rule under the policy; `detail` says which
    Inserted,      ///< a transfer or cast the compiler inserted for value `from`
  };
  Kind kind = Kind::None;
  ValueId from = -1;
  Location loc;
  SharedText detail;  ///< most texts are shared by many values: stored once
};

/// An SSA tensor. `device` is unset until placement decides it (inputs: their declared device).
struct Value {
  ValueId id = -1;
  std::string name;  ///< unique in the graph, printed as %name
  TensorType type;
  ValueKind kind = ValueKind::Result;
  int32_t def = -1;  ///< Input: index in inputs(); Param: index in params(); Result: NodeId
  std::optional<Device> device;
  // Why it has its device and dtype: Graph::deviceReason(id), Graph::dtypeReason(id), kept
  // beside the values (only diagnostics and dumps read them; the passes' sweeps over values
  // should not carry them through the cache).
};

/// How a param's data was written, so that printing writes the same initializer back.
struct Initializer {
  enum class Kind : uint8_t { Data, Zeros, Ones, Randn, Npy };
  Kind kind = Kind::Data;
  uint64_t seed = 0;  ///< Randn
  std::string path;   ///< Npy: as written, relative to the model file's folder
};

struct InputDecl {
  ValueId value;
  Device device;  ///< where the input arrives (a pin)
  Location loc;
};

struct ParamDecl {
  ValueId value;
  std::optional<Device> pin;
  Initializer init;
  TensorData data;  ///< always materialised, of the value's type
  Location loc;
  /// Set when the compiler did a cast of this param at compile time (simplify): the dtype the
  /// model declared it in. Its data and value are then in the cast's dtype.
  std::optional<DType> foldedFrom;
};

struct OutputDecl {
  ValueId value;
  std::optional<Device> pin;
  Location loc;
};

/// One operation. Attributes are complete and in the op's schema order (makeAttrs).
struct Node {
  NodeId id = -1;
  OpKind op;
  std::vector<ValueId> operands;
  ValueId result = -1;
  Attrs attrs;
  std::optional<Device> pinDevice;  ///< user pin: run on this device
  std::optional<DType> pinDType;    ///< user pin: compute in this dtype
  Location loc;
  bool inserted = false;  ///< made by the compiler (a transfer or cast), not written by the user
  /// Set on a zero-dim `constant` written as a scalar literal operand (`add(%x, 1.0)`): the
  /// literal's kind, which promotes as a Python scalar does in PyTorch (ir/literal.h). It prints
  /// inline at its one reader and has no statement of its own.
  std::optional<DTypeCategory> literal;
  /// The fusion group the node belongs to (an index in Graph::groups()), or -1 (passes/fusion.h).
  int32_t group = -1;

  const OpInfo &info() const { return opInfo(op); }
};

/// Nodes that run as one fused kernel (passes/fusion.h): one device, one result leaving the
/// group (the root's), every other member's result read only inside it. `members` are in the
/// graph's order; `anchor` is the GemmLike member whose output the others take as an epilogue
/// (matmul, linear, conv2d), or -1 for a group of elementwise ops alone.
struct FusionGroup {
  std::vector<NodeId> members;
  NodeId anchor = -1;
  NodeId root = -1;  ///< the member whose result is the group's result (the last in order)
};

/// What a new node is; its result value is created by Graph::addNode.
struct NodeSpec {
  OpKind op;
  std::vector<ValueId> operands;
  Attrs attrs;
  std::optional<Device> pinDevice;
  std::optional<DType> pinDType;
  Location loc;
};

/// Owns values and nodes (stable integer ids, never reused) and keeps nodes in a topological
/// order; iteration is deterministic. Values and nodes never move in memory: a `Value &` or
/// `Node &` stays valid while more are added (params, held in a span, may move). Construction
/// methods check invariants with FERRY_CHECK: callers validate user input (names, operands,
/// types) first and report it as diagnostics.
class Graph {
 public:
  explicit Graph(std::string name = "main") : name_(std::move(name)) {}

  const std::string &name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }

  /// How a new value is named: `Exact` — the name given, which must be free; `Unique` — the name
  /// given if it is free, else the first free of `name.1`, `name.2`, ... (uniqueName). A free
  /// name is checked and added in one probe of the name index (uniqueName then createNode took
  /// two); only a taken one probes again for its suffix.
  enum class Naming : uint8_t { Exact, Unique };

  ValueId addInput(std::string name, TensorType type, Device device, Location loc);
  ValueId addParam(std::string name, TensorData data, Initializer init, std::optional<Device> pin,
                   Location loc, Naming naming = Naming::Exact);
  /// Appends `spec` at the end of the order; its operands must already be defined.
  NodeId addNode(NodeSpec spec, std::string resultName, TensorType resultType);
  void addOutput(ValueId value, std::optional<Device> pin, Location loc);

  // --- Rewriting (passes) -------------------------------------------------------------------
  /// Creates a node and its result without putting it in the order; a pass that inserts nodes
  /// creates them, then installs the new order with setOrder.
  NodeId createNode(NodeSpec spec, std::string resultName, TensorType resultType,
                    Naming naming = Naming::Exact);
  /// Replaces the order. Nodes left out are dead: they keep their ids but are no longer part of
  /// the graph (verify() checks the new order is topological).
  void setOrder(std::vector<NodeId> order);
  void setOperand(NodeId node, size_t index, ValueId v);
  void setOutputValue(size_t index, ValueId v);
  /// Drops the params whose value `drop` picks (a pass counts uses and says which; dropped
  /// params must be unused). Their values stay allocated (ids are never reused) but belong to
  /// nothing.
  void removeParamsIf(const std::function<bool(ValueId)> &drop);
  /// Fusion groups: made by the fusion pass, the last of the pipeline (nothing rewrites the
  /// graph after it); each member node's `group` is its index here.
  std::span<const FusionGroup> groups() const { return groups_; }
  /// Adds a group of nodes in the order, none in a group yet, and sets their `group`.
  int32_t addGroup(FusionGroup group);
  /// For each value id, the nodes in the order that read it (a node reading a value twice is
  /// listed twice), in order.
  std::vector<std::vector<NodeId>> users() const;

  /// Why `v` is on its device (placement) and has its dtype (when the dtype pass chose it).
  const Reason &deviceReason(ValueId v) const { return reasons(v).device; }
  Reason &deviceReason(ValueId v) { return reasons(v).device; }
  const Reason &dtypeReason(ValueId v) const { return reasons(v).dtype; }
  Reason &dtypeReason(ValueId v) { return reasons(v).dtype; }

  // Inline: every pass reads values and nodes in its inner loop.
  const Value &value(ValueId id) const {
    if (static_cast<size_t>(id) >= values_.size()) [[unlikely]]
      badId("value", id);
    return values_[static_cast<size_t>(id)];
  }
  Value &value(ValueId id) {
    if (static_cast<size_t>(id) >= values_.size()) [[unlikely]]
      badId("value", id);
    return values_[static_cast<size_t>(id)];
  }
  const Node &node(NodeId id) const {
    if (static_cast<size_t>(id) >= nodes_.size()) [[unlikely]]
      badId("node", id);
    return nodes_[static_cast<size_t>(id)];
  }
  Node &node(NodeId id) {
    if (static_cast<size_t>(id) >= nodes_.size()) [[unlikely]]
      badId("node", id);
    return nodes_[static_cast<size_t>(id)];
  }
  /// Asks the memory system for `v`'s value and reasons ahead of a write: a pass that writes
  /// every value of a large graph in order calls it some values ahead, so the cache misses of
  /// the next values overlap with the work on this one (a hint; `v` must be in range).
  void prefetch(ValueId v) const {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(&values_[static_cast<size_t>(v)], 1);
    __builtin_prefetch(reinterpret_cast<const char *>(&values_[static_cast<size_t>(v)]) + 64, 1);
    __builtin_prefetch(&reasons_[static_cast<size_t>(v)], 1);
#else
    (void)v;  // a hint: nothing to do without the builtin
#endif
  }
  /// The node producing `v`, or nullptr for inputs and params.
  const Node *producer(ValueId v) const {
    const Value &val = value(v);
    return val.kind == ValueKind::Result ? &nodes_[static_cast<size_t>(val.def)] : nullptr;
  }
  /// `v` must be a param.
  const ParamDecl &paramOf(ValueId v) const {
    const Value &val = value(v);
    if (val.kind != ValueKind::Param) [[unlikely]]
      notA("a param", v);
    return params_[static_cast<size_t>(val.def)];
  }
  /// `v` must be an input.
  const InputDecl &inputOf(ValueId v) const {
    const Value &val = value(v);
    if (val.kind != ValueKind::Input) [[unlikely]]
      notA("an input", v);
    return inputs_[static_cast<size_t>(val.def)];
  }

  /// Nodes in topological order.
  std::span<const NodeId> order() const { return order_; }
  std::span<const InputDecl> inputs() const { return inputs_; }
  /// In declaration order; chunked like values (folding casts adds params while passes run).
  const ChunkedVector<ParamDecl> &params() const { return params_; }
  /// Param `i` to change in place (its data, pin, initializer); its value stays, and its data
  /// must keep the value's type (a pass that converts a param changes both).
  ParamDecl &param(size_t i) {
    FERRY_CHECK(i < params_.size()) << "param " << i << " of " << params_.size();
    return params_[i];
  }
  std::span<const OutputDecl> outputs() const { return outputs_; }
  size_t valueCount() const { return values_.size(); }
  size_t nodeCount() const { return nodes_.size(); }

  std::optional<ValueId> findValue(std::string_view name) const;
  bool hasValue(std::string_view name) const { return findValue(name).has_value(); }
  /// `hint` if no value has that name yet, else `hint.1`, `hint.2`, ...; an empty hint gives
  /// the next free number ("0", "1", ...).
  std::string uniqueName(std::string_view hint) const;
  /// Renames `v`; `name` must be free.
  void rename(ValueId v, std::string name);
  /// Swaps the names of `a` and `b` (no name is free in between, nothing is allocated).
  void swapNames(ValueId a, ValueId b);
  /// Whether the name index finds `v` under its current name. Always true for a graph changed
  /// only through its methods; verify() reads it to catch a name written past rename().
  bool nameIndexed(ValueId v) const;
  /// The first value nameIndexed() is false for, or valueCount() when there is none (one pass
  /// over the graph that overlaps the cache misses of large graphs).
  ValueId firstUnindexedName() const;

 private:
  struct ValueReasons {
    Reason device, dtype;
  };
  const ValueReasons &reasons(ValueId v) const {
    value(v);  // range check
    return reasons_[static_cast<size_t>(v)];
  }
  ValueReasons &reasons(ValueId v) {
    value(v);
    return reasons_[static_cast<size_t>(v)];
  }

  /// Aborts: an id outside the graph is a bug of the caller (negative ids wrap to huge sizes).
  [[noreturn]] static void badId(const char *what, int32_t id);
  /// Aborts: paramOf/inputOf asked about a value of another kind ("a param", "an input").
  [[noreturn]] void notA(const char *kind, ValueId v) const;
  ValueId addValue(std::string name, TensorType type, ValueKind kind, int32_t def,
                   Naming naming = Naming::Exact);

  std::string name_;
  ChunkedVector<Value> values_;  // never move: references stay valid while nodes are added
  ChunkedVector<Node> nodes_;
  ChunkedVector<ValueReasons> reasons_;  // one per value, same index
  std::vector<NodeId> order_;
  std::vector<FusionGroup> groups_;
  std::vector<InputDecl> inputs_;
  ChunkedVector<ParamDecl> params_;
  std::vector<OutputDecl> outputs_;
  // The name index: open addressing with linear probing over value ids; each slot keeps the low
  // 32 bits of its name's hash, and the names themselves live in the values. Lookups compare a
  // string only when those bits match; deletion shifts the cluster back (no tombstones). A
  // node-based map of strings held a second copy of every name and an allocation per value; this
  // is 16 to 32 bytes per value, and a copy of the graph copies one array.
  struct NameSlot {
    ValueId id = -1;
    uint32_t hash = 0;
  };
  static uint32_t hashName(std::string_view name);
  /// The slot holding `name`, or the empty slot where it would go.
  size_t nameSlot(std::string_view name, uint32_t hash) const;
  bool indexedAs(ValueId v, uint32_t hash) const;
  void insertName(ValueId v);
  void eraseNameSlot(size_t slot);
  void growNames();
  std::vector<NameSlot> names_;
  size_t nameCount_ = 0;
  mutable int64_t nextNumber_ = 0;
};

/// The dtype `n` computes in, as capability tables key it: its dtype pin, else its result's
/// dtype, or for a comparison its data operands' dtype.
DType computeDType(const Graph &g, const Node &n);

}  // namespace ferry
