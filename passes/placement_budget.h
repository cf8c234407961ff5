// passes/placement_budget.h — what auto placement needs of the budgets (placement*.cpp only): the
// copies an `error` direction forbids, the network of per-run copies a plan makes, arc consistency
// over it, and the error that names what forces a forbidden copy.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "passes/placement_impl.h"

namespace ferry::placement {

/// Which copies between the available devices the budgets forbid: those whose direction (h2d,
/// d2h, d2d, h2h) is set to `error`. The label masks are for at most 64 devices (masks() says
/// whether they can be used).
class CopyRules {
 public:
  explicit CopyRules(const Placer &p);
  bool any() const { return any_; }
  bool forbidden(Label from, Label to) const { return any_ && forbidden_[from * k_ + to] != 0; }
  /// Whether the masks below exist (at most 64 devices).
  bool masks() const { return k_ <= 64; }
  uint64_t all() const { return all_; }
  /// The devices a value on one of `on` may be read on without a forbidden copy.
  uint64_t readableFrom(uint64_t on) const;
  /// The devices a value may be on to be read on one of `readers` without a forbidden copy.
  uint64_t feeding(uint64_t readers) const;

 private:
  size_t k_;
  bool any_ = false;
  std::vector<uint8_t> forbidden_;   // [from * k + to]
  std::vector<uint64_t> to_, from_;  // per device: where it may copy to, what may copy to it
  uint64_t all_ = 0;
};

/// The per-run copies a plan may make, as constraints. A variable per value (those that are
/// weights take no part: their copies run at load) and, after them, one per output by index;
/// an edge from a value to each of its readers (a node's result, or a pinned output), in
/// topological order of the values read: a copy exactly when the two are on different devices.
/// A variable is fixed (an input, a pinned node, a transfer, an output pin: one device in its
/// domain) or free, its domain the devices that have a kernel for it.
struct CopyNetwork {
  int32_t values = 0;  ///< variables [0, values) are values, [values, ...) outputs by index
  std::vector<uint64_t> domain;
  std::vector<uint8_t> fixed;
  std::vector<std::pair<int32_t, int32_t>> edges;  ///< (value, reader)

  size_t size() const { return domain.size(); }
};

/// Arc consistency (forward and backward sweeps over the edges, in order, until nothing changes):
/// shrinks each domain to the devices that have a support in every neighbour's. Sound, so a
/// device it takes out is on no plan without a forbidden copy; returns false when a domain
/// empties: then no such plan exists. With two devices it is also complete (the constraints are
/// Horn clauses); with more it may leave devices no plan uses.
bool propagate(const CopyRules &rules, std::span<const std::pair<int32_t, int32_t>> edges,
               std::vector<uint64_t> &domain);

/// A copy of value `value` (a variable of the network) from device `from` to `to` that the
/// budgets forbid, and the readers on `to` that need it (fixed ones first).
struct ForbiddenCopy {
  int32_t value;
  Label from, to;
  std::vector<int32_t> readers;
};

/// Reports each of `copies` (the plan's, whose number auto placement could not lower) as a
/// "budget" error at the reader, naming what forces it: the smallest set of pins, input
/// declarations, output pins and kernels (a variable whose domain is not every device) of the
/// copy's part of the network that arc consistency proves leaves no plan without a forbidden
/// copy, the values between them, and a fix. Where no proof is found (more than two devices),
/// says that auto placement found no plan without it, naming the pins around it.
void reportForcedCopies(Placer &p, const CopyNetwork &net, const CopyRules &rules,
                        std::span<const ForbiddenCopy> copies);

}  // namespace ferry::placement
