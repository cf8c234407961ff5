// ir/graph.cpp — construction and lookup of the IR.
#include "ir/graph.h"

#include <cstdlib>

#include "ir/status.h"

namespace ferry {

ValueId Graph::addValue(std::string name, TensorType type, ValueKind kind, int32_t def) {
  FERRY_CHECK(!name.empty()) << "empty value name";
  auto id = static_cast<ValueId>(values_.size());
  auto [it, inserted] = byName_.emplace(name, id);
  FERRY_CHECK(inserted) << "value name %" << name << " is taken";
  values_.push_back(Value{id, std::move(name), std::move(type), kind, def, std::nullopt});
  reasons_.emplace_back();
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
                        std::optional<Device> pin, Location loc) {
  ValueId v = addValue(std::move(name), data.type(), ValueKind::Param,
                       static_cast<int32_t>(params_.size()));
  params_.push_back(ParamDecl{v, pin, std::move(init), std::move(data), std::move(loc)});
  return v;
}

NodeId Graph::addNode(NodeSpec spec, std::string resultName, TensorType resultType) {
  NodeId id = createNode(std::move(spec), std::move(resultName), std::move(resultType));
  order_.push_back(id);
  return id;
}

NodeId Graph::createNode(NodeSpec spec, std::string resultName, TensorType resultType) {
  for (ValueId o : spec.operands)
    FERRY_CHECK(o >= 0 && static_cast<size_t>(o) < values_.size()) << "operand id " << o;
  auto id = static_cast<NodeId>(nodes_.size());
  ValueId r = addValue(std::move(resultName), std::move(resultType), ValueKind::Result, id);
  nodes_.push_back(Node{id, spec.op, std::move(spec.operands), r, std::move(spec.attrs),
                        spec.pinDevice, spec.pinDType, std::move(spec.loc)});
  return id;
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

std::optional<ValueId> Graph::findValue(std::string_view name) const {
  auto it = byName_.find(name);
  if (it == byName_.end()) return std::nullopt;
  return it->second;
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
  FERRY_CHECK(!hasValue(name)) << "value name %" << name << " is taken";
  byName_.erase(value(v).name);
  byName_.emplace(name, v);
  values_[v].name = std::move(name);
}

void Graph::swapNames(ValueId a, ValueId b) {
  Value &x = value(a), &y = value(b);
  byName_.find(x.name)->second = b;
  byName_.find(y.name)->second = a;
  std::swap(x.name, y.name);
}

}  // namespace ferry
