// passes/options.h — what compile() is asked to do: devices, policies, cost model, capability
// table, budgets.
#pragma once

#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/device.h"
#include "ir/dtype.h"
#include "ir/ops.h"
#include "ir/policy.h"
#include "ir/status.h"

namespace ferry {

/// `strict`: operands must agree as PyTorch requires; `promote`: PyTorch's result_type rules
/// everywhere with explicit casts; `autocast`: GEMMs/convs in `low` with f32 accumulation.
struct DTypePolicy {
  enum class Kind : uint8_t { Strict, Promote, Autocast };
  Kind kind = Kind::Strict;
  DType low = DType::F16;  ///< Autocast only: f16 or bf16

  std::string str() const;  ///< "strict", "promote", "autocast=f16"
};

enum class BudgetAction : uint8_t { Allow, Warn, Error };

/// Which way a copy goes: host to an accelerator (h2d), back (d2h), between accelerators (d2d) or
/// between host arenas such as cpu and cpu:1 (h2h). Budgets and statistics count by it.
enum class TransferDirection : uint8_t { H2D, D2H, D2D, H2H };
inline constexpr TransferDirection kTransferDirections[] = {
    TransferDirection::H2D, TransferDirection::D2H, TransferDirection::D2D, TransferDirection::H2H};
inline constexpr size_t kTransferDirectionCount = std::size(kTransferDirections);
TransferDirection transferDirection(Device from, Device to);
/// "h2d", "d2h", "d2d", "h2h": as budgets and `--transfers` spell it.
std::string_view directionKey(TransferDirection d);
/// "host-to-device", ...: for messages.
std::string_view directionName(TransferDirection d);

/// A compile-time contract on data movement per run: a plan that exceeds it is rejected (Error)
/// or compiles with a warning (Warn), listing each offending transfer or cast. Transfers and casts
/// of weights run once, at load (passes/load_time.h), and count against no budget.
struct Budgets {
  BudgetAction h2d = BudgetAction::Allow;   ///< host -> accelerator
  BudgetAction d2h = BudgetAction::Allow;   ///< accelerator -> host
  BudgetAction d2d = BudgetAction::Allow;   ///< between two devices of the same non-host kind
  BudgetAction h2h = BudgetAction::Allow;   ///< between host arenas (cpu:N)
  std::optional<int64_t> maxTransferBytes;  ///< per run, all transfers (load-time ones are free)
  /// Casts left in the graph that run per run (folded ones and casts of weights are free).
  std::optional<int64_t> maxCasts;

  /// The action for one direction: h2d, d2h, d2d or h2h.
  BudgetAction action(TransferDirection d) const;
};

/// Speed of one kind of device, for estimates (not a profiler: relative cost is what matters).
struct DeviceSpec {
  double flopsPerSecond;
  double bytesPerSecond;  ///< memory bandwidth
  double launchSeconds;   ///< fixed cost per op
};

/// Speed of a copy between two devices.
struct LinkSpec {
  double bytesPerSecond;
  double latencySeconds;
};

/// Estimates used by `auto` placement and reported in the statistics, per run: a transfer or cast
/// of a weight (passes/load_time.h) runs once, at load, and costs nothing per run.
struct CostModel {
  DeviceSpec host{1.0e11, 2.0e10, 2.0e-7};
  DeviceSpec cuda{5.0e13, 2.0e12, 5.0e-6};
  LinkSpec hostToDevice{2.0e10, 1.0e-5};
  LinkSpec deviceToHost{2.0e10, 1.0e-5};
  LinkSpec deviceToDevice{5.0e10, 1.0e-5};
  LinkSpec hostToHost{1.0e10, 1.0e-6};

  /// max(flops / F, bytes / B) + launch on `device`.
  double computeSeconds(Device device, const OpCost &cost) const;
  /// bytes / bandwidth + latency of the link from `from` to `to`; 0 when they are equal.
  double transferSeconds(Device from, Device to, double bytes) const;
};

/// The capability table: for every (device kind, op, dtype), whether that device kind has a
/// kernel, and how its speed compares with the cost model's estimate — `auto` placement and the
/// statistics multiply the estimate by that factor (an f16 GEMM that converts around an f32
/// one: 1.4; an integer GEMM without BLAS: 30). build() fills it from the backends' tables
/// (runtime/executable.h); compile() alone starts from "everything, at factor 1". `dtype` is
/// the dtype the op computes in (for comparisons, the operands'); no dtype sets every dtype.
class Capabilities {
 public:
  void setMissing(DeviceKind device, OpKind op, std::optional<DType> dtype = std::nullopt);
  /// `factor` > 0 and finite; it also marks the kernel as present.
  void setCostFactor(DeviceKind device, OpKind op, std::optional<DType> dtype, double factor);
  /// Adds `other`'s entries: a kernel missing in either table is missing; otherwise a factor
  /// `other` sets (not 1) replaces this table's.
  void merge(const Capabilities &other);

  bool supports(Device device, OpKind op, DType dtype) const;
  /// 1 unless set; meaningless for a missing kernel.
  double costFactor(Device device, OpKind op, DType dtype) const;
  /// Whether some kernel is missing (placement checks each node only then).
  bool anyMissing() const { return missing_ > 0; }
  /// Device kinds whose target runs fused steps (Target::fuses): the fusion pass groups nodes
  /// on those only. None by default, so compile() without a backend's table makes no groups.
  void setFuses(DeviceKind device) { fusing_ |= 1u << static_cast<unsigned>(device); }
  bool fuses(Device device) const { return (fusing_ >> static_cast<unsigned>(device.kind)) & 1u; }

 private:
  void set(DeviceKind device, OpKind op, std::optional<DType> dtype, float factor);
  float at(DeviceKind device, OpKind op, DType dtype) const;

  std::vector<float> factor_;  // [kind][op][dtype], 0 = no kernel; empty until something is set
  int64_t missing_ = 0;        // entries without a kernel
  uint32_t fusing_ = 0;        // bit per DeviceKind
};

struct CompileOptions {
  /// Devices the graph may use. Pins and inputs on other devices are errors.
  std::vector<Device> devices{Device::cpu()};
  /// Where values that nothing constrains go.
  Device target = Device::cpu();
  PlacementPolicy placement = PlacementPolicy::Strict;
  DTypePolicy dtype;
  /// An op the wanted device cannot run moves to the CPU with a warning; off: an error.
  bool fallback = true;
  CostModel cost;
  Capabilities capabilities;
  Budgets budgets;
  /// Stop after the pass of this name ("" runs the whole pipeline).
  std::string stopAfter;
  /// Group elementwise chains and GEMM epilogues into fused kernels (passes/fusion.cpp); off:
  /// one kernel per node, for comparison (`--no-fusion`).
  bool fusion = true;
  /// Verify the graph after every pass (tests, debugging; off in benchmarks).
  bool verifyEachPass = true;

  /// Checks the options themselves (target among devices, no duplicates, autocast dtype, a
  /// known stopAfter) with errors that say what was expected.
  Status validate() const;
};

// Option strings as the tools and users write them; errors say what was expected.
Expected<PlacementPolicy> parsePlacementPolicy(std::string_view s);  ///< strict | auto
Expected<DTypePolicy> parseDTypePolicy(std::string_view s);    ///< strict|promote|autocast=f16|bf16
Expected<BudgetAction> parseBudgetAction(std::string_view s);  ///< allow | warn | error
/// "cpu,cuda:0"
Expected<std::vector<Device>> parseDeviceList(std::string_view s);
std::string_view budgetActionName(BudgetAction a);

}  // namespace ferry
