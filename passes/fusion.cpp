// passes/fusion.cpp — fusion: which nodes run as one kernel. The last pass of the pipeline; it
// only annotates the graph (Node::group, Graph::groups()), and lowering turns each group into
// one fused step whose body is a micro-op program (backends/target.h, FusedBody).
//
// A group has one root, an elementwise node (unary, binary, where, cast), and grows backwards
// from it over operands, taking a producer when
//   - it is elementwise, or it is a GemmLike node (matmul, linear, conv2d) and the group has no
//     anchor yet: it becomes the anchor, and the ops after it its epilogue (bias, activation,
//     residual add, cast); the anchor's own operands are never taken (no prologues);
//   - it is on the root's device (never across devices; transfers are not elementwise), whose
//     target runs fused steps (Capabilities::fuses, from Target::fuses);
//   - its result has the root's shape: every member computes one element per output element, so
//     nothing is computed twice and the kernel walks one index space (operands from outside
//     broadcast into it);
//   - its result is read only by members and is not a graph output: the group has one result;
//   - it does not run at load time (a cast of a weight is done once per Session, not per run).
// A producer refused because of a reader outside the group is looked at again when that reader
// joins. Roots are tried in reverse order, so each group is as large as these rules allow from
// the last node of a chain; a group of one node is no group. No cycle can form: only the root's
// result leaves the group, so nothing outside both reads a member and feeds one.
//
// Groups stop at kMaxMembers nodes and kMaxInputs inputs, which bounds the fused kernel's
// registers per tile and its operand list.
#include <algorithm>

#include "passes/load_time.h"
#include "passes/pass.h"

namespace ferry {

namespace {

constexpr size_t kMaxMembers = 32;
constexpr size_t kMaxInputs = 16;

bool isElementwise(const Node &n) { return n.info().is(OpTrait::Elementwise); }

class GroupBuilder {
 public:
  GroupBuilder(Graph &g, const Capabilities &capabilities)
      : g_(g),
        capabilities_(capabilities),
        users_(g.users()),
        weights_(weightValues(g)),
        isOutput_(g.valueCount(), 0),
        mark_(g.nodeCount(), 0),
        position_(g.nodeCount(), -1) {
    for (const OutputDecl &out : g.outputs()) isOutput_[static_cast<size_t>(out.value)] = 1;
    int32_t at = 0;
    for (NodeId id : g.order()) position_[static_cast<size_t>(id)] = at++;
  }

  // Grows a group from `root`; adds it to the graph when it has two members or more.
  void tryRoot(NodeId root) {
    const Node &r = g_.node(root);
    if (r.group >= 0 || !isElementwise(r) || runsAtLoad(r, weights_)) return;
    const Value &out = g_.value(r.result);
    if (!out.device || !capabilities_.fuses(*out.device)) return;
    ++stamp_;
    FusionGroup group;
    group.root = root;
    group.members.push_back(root);
    mark_[static_cast<size_t>(root)] = stamp_;
    std::vector<NodeId> pending;
    pushProducers(r, pending);
    while (!pending.empty() && group.members.size() < kMaxMembers) {
      const NodeId p = pending.back();
      pending.pop_back();
      if (mark_[static_cast<size_t>(p)] == stamp_ || !canJoin(p, out, group)) continue;
      const Node &n = g_.node(p);
      mark_[static_cast<size_t>(p)] = stamp_;
      group.members.push_back(p);
      if (!isElementwise(n)) {
        group.anchor = p;  // its operands stay outside: no prologues
        continue;
      }
      pushProducers(n, pending);
    }
    if (group.members.size() < 2) return;
    trimInputs(group);
    if (group.members.size() < 2) return;
    std::sort(group.members.begin(), group.members.end(), [&](NodeId a, NodeId b) {
      return position_[static_cast<size_t>(a)] < position_[static_cast<size_t>(b)];
    });
    g_.addGroup(std::move(group));
  }

 private:
  void pushProducers(const Node &n, std::vector<NodeId> &pending) const {
    for (ValueId v : n.operands)
      if (const Node *p = g_.producer(v)) pending.push_back(p->id);
  }

  bool canJoin(NodeId p, const Value &out, const FusionGroup &group) const {
    const Node &n = g_.node(p);
    if (n.group >= 0 || runsAtLoad(n, weights_)) return false;
    const bool anchor = n.info().is(OpTrait::GemmLike);
    if (!isElementwise(n) && !(anchor && group.anchor < 0)) return false;
    const Value &r = g_.value(n.result);
    if (r.device != out.device || r.type.shape != out.type.shape) return false;
    if (isOutput_[static_cast<size_t>(n.result)]) return false;
    for (NodeId u : users_[static_cast<size_t>(n.result)])
      if (mark_[static_cast<size_t>(u)] != stamp_) return false;
    return true;
  }

  // The group's inputs: values its members read that no member writes.
  std::vector<ValueId> inputsOf(const FusionGroup &group) const {
    std::vector<ValueId> inputs;
    for (NodeId m : group.members)
      for (ValueId v : g_.node(m).operands) {
        const Node *p = g_.producer(v);
        if (p && mark_[static_cast<size_t>(p->id)] == stamp_) continue;
        if (std::find(inputs.begin(), inputs.end(), v) == inputs.end()) inputs.push_back(v);
      }
    return inputs;
  }

  // Drops the members added last until the group reads at most kMaxInputs values. Members were
  // added producers after consumers, so the last one added is read by members only, never
  // reads one, and dropping it leaves a group.
  void trimInputs(FusionGroup &group) {
    while (group.members.size() >= 2 && inputsOf(group).size() > kMaxInputs) {
      const NodeId last = group.members.back();
      if (last == group.anchor) group.anchor = -1;
      mark_[static_cast<size_t>(last)] = 0;
      group.members.pop_back();
    }
  }

  Graph &g_;
  const Capabilities &capabilities_;
  std::vector<std::vector<NodeId>> users_;
  std::vector<uint8_t> weights_;
  std::vector<uint8_t> isOutput_;
  std::vector<uint32_t> mark_;  // == stamp_: a member of the group being grown
  std::vector<int32_t> position_;
  uint32_t stamp_ = 0;
};

}  // namespace

void fuse(Graph &graph, PassContext &ctx) {
  if (!ctx.options.fusion) return;
  ctx.stats.gelusFolded = foldGelus(graph, ctx.options.capabilities);
  ctx.stats.batchNormsFolded = foldBatchNorms(graph, ctx.options.capabilities);
  GroupBuilder builder(graph, ctx.options.capabilities);
  const std::vector<NodeId> order(graph.order().begin(), graph.order().end());
  for (auto it = order.rbegin(); it != order.rend(); ++it) builder.tryRoot(*it);
  ctx.stats.fusionGroups = static_cast<int>(graph.groups().size());
  ctx.stats.fusedNodes = 0;
  for (const FusionGroup &group : graph.groups())
    ctx.stats.fusedNodes += static_cast<int>(group.members.size());
}

}  // namespace ferry
