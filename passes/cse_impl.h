// passes/cse_impl.h — internal to simplify: the table that finds a node equal to another
// (same op, operands, attributes, device and compute dtype), for common subexpression merging.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <variant>
#include <vector>

#include "ir/graph.h"

namespace ferry::cse {

inline size_t hashMix(size_t h, size_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
}

inline size_t hashAttr(const AttrValue &a) {
  size_t h = a.index();
  std::visit(
      [&](const auto &v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          for (int64_t x : v) h = hashMix(h, std::hash<int64_t>{}(x));
        } else if constexpr (std::is_same_v<T, DType>) {
          h = hashMix(h, static_cast<size_t>(v));
        } else if constexpr (std::is_same_v<T, Device>) {
          h = hashMix(h, static_cast<size_t>(v.kind) * 4099 + static_cast<size_t>(v.index));
        } else if constexpr (std::is_same_v<T, TensorData>) {
          // A prefix is enough to spread constants; equality compares every byte.
          h = hashMix(h, v.byteSize());
          auto bytes = v.bytes().first(std::min<size_t>(v.byteSize(), 64));
          for (std::byte b : bytes) h = hashMix(h, static_cast<size_t>(b));
        } else {
          h = hashMix(h, std::hash<T>{}(v));
        }
      },
      a);
  return h;
}

// CSE keys are node ids; hash and equality read the node (operands already redirected).
struct SameNode {
  const Graph *g;
  size_t operator()(NodeId id) const {
    const Node &n = g->node(id);
    const Value &r = g->value(n.result);
    size_t h = hashMix(static_cast<size_t>(n.op), static_cast<size_t>(r.type.dtype));
    h = hashMix(h, r.device ? static_cast<size_t>(r.device->kind) * 4099 + r.device->index : 7);
    h = hashMix(h, n.pinDType ? static_cast<size_t>(*n.pinDType) : 99);
    for (ValueId o : n.operands) h = hashMix(h, static_cast<size_t>(o));
    for (const AttrValue &a : n.attrs) h = hashMix(h, hashAttr(a));
    return h;
  }
  bool operator()(NodeId a, NodeId b) const {
    const Node &x = g->node(a), &y = g->node(b);
    const Value &rx = g->value(x.result), &ry = g->value(y.result);
    return x.op == y.op && rx.type.dtype == ry.type.dtype && rx.device == ry.device &&
           x.pinDType == y.pinDType && x.operands == y.operands && x.attrs == y.attrs;
  }
};

// The CSE table: open addressing over node ids with their hashes, no allocation per node (a
// node-based set costs more than the rest of a sweep). Looked up and inserted, never iterated.
class NodeTable {
 public:
  // Starts small: most nodes of a model read a value nothing else reads and never enter, and a
  // table sized for every node is page faults for nothing. It doubles as nodes go in.
  void reset(const Graph *g) {
    same_ = SameNode{g};
    slots_.assign(1024, Slot{});
    size_ = 0;
  }
  /// The slot of a node equal to `id`, or nullptr when there was none and `id` went in.
  NodeId *findOrInsert(NodeId id) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    const auto h = static_cast<uint32_t>(same_(id));
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      Slot &s = slots_[i];
      if (s.id < 0) {
        s = {id, h};
        ++size_;
        return nullptr;
      }
      if (s.hash == h && same_(s.id, id)) return &s.id;
    }
  }

 private:
  struct Slot {  // 8 bytes: the table is probed once per node and should stay in cache
    NodeId id = -1;
    uint32_t hash = 0;  // the low bits of the node's hash
  };
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.size() * 2, Slot{});
    const size_t mask = slots_.size() - 1;
    for (const Slot &s : old) {
      if (s.id < 0) continue;
      size_t i = s.hash & mask;
      while (slots_[i].id >= 0) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }

  SameNode same_{nullptr};
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace ferry::cse
