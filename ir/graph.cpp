// ir/graph.cpp — construction and lookup of the IR.
#include "ir/graph.h"

#include <algorithm>
#include <array>
#include <cstdlib>

#include "ir/status.h"

namespace ferry {

ValueId Graph::addValue(std::string name, TensorType type, ValueKind kind, int32_t def,
                        Naming naming) {
  FERRY_CHECK(!name.empty()) << "empty value name";
  if (2 * (nameCount_ + 1) > names_.size()) growNames();  // at most half full
  uint32_t hash = hashName(name);
  size_t slot = nameSlot(name, hash);
  if (names_[slot].id >= 0) {
    FERRY_CHECK(naming == Naming::Unique) << "value name %" << name << " is taken";
    name = uniqueName(name);  // rare: the hint is taken
    hash = hashName(name);
    slot = nameSlot(name, hash);
  }
  auto id = static_cast<ValueId>(values_.size());
  values_.push_back(Value{id, std::move(name), std::move(type), kind, def, std::nullopt});
  reasons_.emplace_back();
  names_[slot] = {id, hash};
  ++nameCount_;
  return id;
}

ValueId Graph::addInput(std::string name, TensorType type, Device device, Location loc) {
  ValueId v = addValue(std::move(name), std::move(type), ValueKind::Input,
                       static_cast<int32_t>(inputs_.size()));
  values_[v].device = device;
  inputs_.push_back(InputDecl{v, device, std::move(loc)});
  return v;
}

ValueId Graph::addParam(std::string name, TensorData data, Initializer init,
                        std::optional<Device> pin, Location loc, Naming naming) {
  ValueId v = addValue(std::move(name), data.type(), ValueKind::Param,
                       static_cast<int32_t>(params_.size()), naming);
  params_.push_back(ParamDecl{v, pin, std::move(init), std::move(data), std::move(loc)});
  return v;
}

NodeId Graph::addNode(NodeSpec spec, std::string resultName, TensorType resultType) {
  NodeId id = createNode(std::move(spec), std::move(resultName), std::move(resultType));
  order_.push_back(id);
  return id;
}

NodeId Graph::createNode(NodeSpec spec, std::string resultName, TensorType resultType,
                         Naming naming) {
  for (ValueId o : spec.operands)
    FERRY_CHECK(o >= 0 && static_cast<size_t>(o) < values_.size()) << "operand id " << o;
  auto id = static_cast<NodeId>(nodes_.size());
  ValueId r = addValue(std::move(resultName), std::move(resultType), ValueKind::Result, id, naming);
  nodes_.push_back(Node{id, spec.op, std::move(spec.operands), r, std::move(spec.attrs),
                        spec.pinDevice, spec.pinDType, std::move(spec.loc)});
  return id;
}

int32_t Graph::addGroup(FusionGroup group) {
  const auto index = static_cast<int32_t>(groups_.size());
  FERRY_CHECK(group.members.size() >= 2) << "a fusion group of " << group.members.size() << " node";
  for (NodeId n : group.members) {
    FERRY_CHECK(node(n).group < 0) << "node " << n << " is in group " << node(n).group;
    nodes_[static_cast<size_t>(n)].group = index;
  }
  groups_.push_back(std::move(group));
  return index;
}

void Graph::setOrder(std::vector<NodeId> order) {
  for (NodeId n : order)
    FERRY_CHECK(n >= 0 && static_cast<size_t>(n) < nodes_.size()) << "node id " << n;
  order_ = std::move(order);
}

void Graph::setOperand(NodeId node, size_t index, ValueId v) {
  Node &n = this->node(node);
  FERRY_CHECK(index < n.operands.size()) << "operand " << index << " of node " << node;
  value(v);  // range check
  n.operands[index] = v;
}

void Graph::setOutputValue(size_t index, ValueId v) {
  FERRY_CHECK(index < outputs_.size()) << "output " << index;
  value(v);
  outputs_[index].value = v;
}

void Graph::removeParamsIf(const std::function<bool(ValueId)> &drop) {
  size_t kept = 0;  // compacts in place: params carry their data
  for (size_t i = 0; i < params_.size(); ++i) {
    ParamDecl &p = params_[i];
    if (drop(p.value)) {
      values_[p.value].def = -1;  // belongs to nothing now
      continue;
    }
    values_[p.value].def = static_cast<int32_t>(kept);
    if (kept != i) params_[kept] = std::move(p);
    ++kept;
  }
  params_.truncate(kept);
}

std::vector<std::vector<NodeId>> Graph::users() const {
  std::vector<std::vector<NodeId>> users(values_.size());
  for (NodeId n : order_)
    for (ValueId o : nodes_[n].operands) users[o].push_back(n);
  return users;
}

void Graph::addOutput(ValueId value, std::optional<Device> pin, Location loc) {
  FERRY_CHECK(value >= 0 && static_cast<size_t>(value) < values_.size()) << "output id " << value;
  outputs_.push_back(OutputDecl{value, pin, std::move(loc)});
}

void Graph::badId(const char *what, int32_t id) {
  FERRY_CHECK(false) << what << " id " << id << " is not in the graph";
  std::abort();  // not reached
}

void Graph::notA(const char *kind, ValueId v) const {
  FERRY_CHECK(false) << "%" << value(v).name << " is not " << kind;
  std::abort();  // not reached
}

// --- Names -----------------------------------------------------------------------------------

uint32_t Graph::hashName(std::string_view name) {
  return static_cast<uint32_t>(std::hash<std::string_view>{}(name));
}

size_t Graph::nameSlot(std::string_view name, uint32_t hash) const {
  const size_t mask = names_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const NameSlot &s = names_[i];
    if (s.id < 0 || (s.hash == hash && values_[static_cast<size_t>(s.id)].name == name)) return i;
  }
}

void Graph::growNames() {
  std::vector<NameSlot> old = std::move(names_);
  names_.assign(std::max<size_t>(16, 2 * old.size()), NameSlot{});
  const size_t mask = names_.size() - 1;
  for (const NameSlot &s : old) {
    if (s.id < 0) continue;
    size_t i = s.hash & mask;
    while (names_[i].id >= 0) i = (i + 1) & mask;
    names_[i] = s;
  }
}

void Graph::insertName(ValueId v) {
  if (2 * (nameCount_ + 1) > names_.size()) growNames();  // at most half full
  const std::string &name = values_[static_cast<size_t>(v)].name;
  const uint32_t h = hashName(name);
  size_t i = nameSlot(name, h);
  FERRY_CHECK(names_[i].id < 0) << "value name %" << name << " is taken";
  names_[i] = {v, h};
  ++nameCount_;
}

void Graph::eraseNameSlot(size_t i) {
  // Backward shift: a later entry of the cluster moves into the hole unless its home slot lies
  // cyclically in (hole, its slot], where the hole would cut it off from its home.
  const size_t mask = names_.size() - 1;
  for (size_t j = (i + 1) & mask; names_[j].id >= 0; j = (j + 1) & mask) {
    const size_t home = names_[j].hash & mask;
    const bool reachable = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (reachable) continue;
    names_[i] = names_[j];
    i = j;
  }
  names_[i] = NameSlot{};
  --nameCount_;
}

std::optional<ValueId> Graph::findValue(std::string_view name) const {
  if (names_.empty()) return std::nullopt;
  const NameSlot &s = names_[nameSlot(name, hashName(name))];
  if (s.id < 0) return std::nullopt;
  return s.id;
}

bool Graph::nameIndexed(ValueId v) const {
  value(v);  // range check
  return !names_.empty() && indexedAs(v, hashName(values_[static_cast<size_t>(v)].name));
}

bool Graph::indexedAs(ValueId v, uint32_t hash) const {
  const std::string &name = values_[static_cast<size_t>(v)].name;
  const size_t mask = names_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const NameSlot &s = names_[i];
    if (s.id < 0) return false;
    if (s.hash != hash) continue;
    if (s.id == v) return true;  // its own slot: no string to compare
    if (values_[static_cast<size_t>(s.id)].name == name) return false;  // another value's
  }
}

ValueId Graph::firstUnindexedName() const {
  const size_t n = values_.size();
  if (names_.empty()) return 0;  // no value was ever added
  // On a large graph each value's name (past the short-string buffer) and its slot are cache
  // misses the hardware cannot foresee: names are fetched kNameAhead values ahead, slots
  // kSlotAhead ahead (their hashes wait in `ahead`), so the waits overlap.
  constexpr size_t kNameAhead = 16, kSlotAhead = 8;
  const size_t mask = names_.size() - 1;
  std::array<uint32_t, kSlotAhead> ahead{};
  auto fetchSlot = [&](size_t v) {
    const uint32_t h = hashName(values_[v].name);
    __builtin_prefetch(&names_[h & mask]);
    ahead[v % kSlotAhead] = h;
  };
  for (size_t v = 0; v < std::min(n, kSlotAhead); ++v) fetchSlot(v);
  for (size_t v = 0; v < n; ++v) {
    if (v + kNameAhead < n) __builtin_prefetch(values_[v + kNameAhead].name.data());
    const uint32_t h = ahead[v % kSlotAhead];
    if (v + kSlotAhead < n) fetchSlot(v + kSlotAhead);
    if (!indexedAs(static_cast<ValueId>(v), h)) return static_cast<ValueId>(v);
  }
  return static_cast<ValueId>(n);
}

std::string Graph::uniqueName(std::string_view hint) const {
  if (hint.empty()) {
    while (hasValue(std::to_string(nextNumber_))) ++nextNumber_;
    return std::to_string(nextNumber_++);
  }
  if (!hasValue(hint)) return std::string(hint);
  for (int i = 1;; ++i) {
    std::string candidate = std::string(hint) + "." + std::to_string(i);
    if (!hasValue(candidate)) return candidate;
  }
}

void Graph::rename(ValueId v, std::string name) {
  Value &val = value(v);
  size_t slot = nameSlot(val.name, hashName(val.name));
  FERRY_CHECK(names_[slot].id == v) << "%" << val.name << " is not in the name index";
  eraseNameSlot(slot);
  val.name = std::move(name);
  insertName(v);  // checks that the name is free
}

void Graph::swapNames(ValueId a, ValueId b) {
  Value &x = value(a), &y = value(b);
  NameSlot &sx = names_[nameSlot(x.name, hashName(x.name))];
  NameSlot &sy = names_[nameSlot(y.name, hashName(y.name))];
  FERRY_CHECK(sx.id == a && sy.id == b)
      << "%" << x.name << " or %" << y.name << " is not in the name index";
  sx.id = b;  // each slot keeps its name's hash; the name moves to the other value
  sy.id = a;
  std::swap(x.name, y.name);
}

DType computeDType(const Graph &g, const Node &n) {
  if (n.pinDType) return *n.pinDType;
  const OpInfo &op = n.info();
  if (op.dtypeRule == DTypeRule::Compare)
    for (size_t i = 0; i < n.operands.size(); ++i)
      if (op.operand(i).role == OperandRole::Data) return g.value(n.operands[i]).type.dtype;
  return g.value(n.result).type.dtype;
}

}  // namespace ferry
