// passes/placement_impl.h — what the phases of device placement share (placement*.cpp only).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/pass.h"

namespace ferry::placement {

/// A device as a small index into Placer::devices; kNone: not decided (yet).
using Label = uint16_t;
inline constexpr Label kNone = 0xFFFF;

/// The state the phases share: the graph, the device table, each value's current device and
/// reason, each node's pin, and (built on demand) who reads each value.
class Placer {
 public:
  Placer(Graph &graph, PassContext &ctx);

  Graph &graph;
  PassContext &ctx;
  const CompileOptions &options;

  /// Labels: options.devices in their order, then devices that pins name but that are not
  /// available (already reported; kept so that the rest of the graph is still judged).
  std::vector<Device> devices;
  size_t available = 0;  ///< devices[0..available) are options.devices
  Label target = kNone;  ///< options.target
  Label cpu = kNone;     ///< Device::cpu() when available: where unsupported ops fall back to

  /// Per value: its device label (kNone until decided). Value::device follows via place().
  std::vector<Label> label;
  /// Per node: its pin (a transfer's `to` counts as one), or kNone.
  std::vector<Label> pin;
  /// Per output: its pin, or kNone.
  std::vector<Label> outputPin;

  /// Per value, the distinct nodes in the order that read it, each as its result value, then the
  /// pinned outputs of it (encoded as ~outputIndex, i.e. negative); see users(). Results rather
  /// than node ids: the hot loops look up the user's label, which is per value, without reading
  /// the node. Built by buildUsers().
  std::vector<int32_t> userStart, userList;

  /// Transfers an earlier run inserted, taken out of the order so that the graph is placed as
  /// if for the first time, and put back where the same copy is needed again.
  struct Removed {
    Label to;
    NodeId node;
    int32_t next;  ///< the next removed copy of the same value, or -1
  };
  std::vector<Removed> removed;
  std::vector<int32_t> firstRemoved;  ///< per value, or -1; empty when nothing was removed

  Label labelOf(Device d);
  /// Sets `v`'s device and reason.
  void place(ValueId v, Label l, Reason reason);
  /// The same for a reason without location or detail, without building one (hot loops).
  void place(ValueId v, Label l, Reason::Kind kind, ValueId from = -1);
  /// The label a user of a value wants it on: its node's device or its output's pin.
  Label userLabel(int32_t user) const {
    return user >= 0 ? label[static_cast<size_t>(user)] : outputPin[static_cast<size_t>(~user)];
  }
  std::span<const int32_t> users(ValueId v) const {
    return {userList.data() + userStart[v], userList.data() + userStart[v + 1]};
  }
  void buildUsers();

  /// The dtype the capability table is asked about for `n`: its dtype pin, else the dtype of its
  /// first data operand for comparisons (whose result is bool), else its result's dtype.
  DType computeDType(const Node &n) const;
  bool supports(const Node &n, Label l) const;
  /// Where `n` runs when it wants `want`: `want` when that device has a kernel for it; cpu
  /// otherwise, with a "fallback" warning (options.fallback) or a "device" error. Records the
  /// Fallback reason on the node's result when it moves. `why` explains the wanted device.
  Label runnable(NodeId n, Label want, const std::string &why);
  bool isSource(const Node &n) const;  ///< a constant: no operands, no compute cost
  /// Places a transfer's result on its `to` (Reason Inserted for the compiler's own, else Pinned).
  void placeTransfer(const Node &n);

  std::string nodeRef(const Node &n) const;                      ///< "'linear' (%h)"
  std::string devicesText(std::span<const Label> labels) const;  ///< "cpu, cuda:0 and cuda:1"
  bool anyFallback = false;
};

/// Strict placement (placement_strict.cpp): decides every value's device from pins, inputs and
/// propagation, reports every node whose operands disagree, applies capability fallbacks.
void placeStrict(Placer &p);
/// Cost-based placement (placement_auto.cpp): pins are constraints, the rest minimises the cost
/// model's estimate (a minimum cut for two devices, expansion moves for more).
void placeAuto(Placer &p);

/// Writes seconds for reasons as "35 µs", "1.2 ms", "980 ns" ("n/a": infinite) into `out` (at
/// least kSecondsTextMax bytes); returns the end.
char *writeSeconds(char *out, double seconds);
inline constexpr size_t kSecondsTextMax = 40;

}  // namespace ferry::placement
