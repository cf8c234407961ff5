// passes/options.cpp — option strings, option validation, and the cost model's arithmetic.
#include "passes/options.h"

#include <algorithm>
#include <cmath>

#include "passes/pass.h"

namespace ferry {

std::string DTypePolicy::str() const {
  switch (kind) {
    case Kind::Strict: return "strict";
    case Kind::Promote: return "promote";
    case Kind::Autocast: return "autocast=" + std::string(dtypeName(low));
  }
  return "?";
}

std::string_view budgetActionName(BudgetAction a) {
  switch (a) {
    case BudgetAction::Allow: return "allow";
    case BudgetAction::Warn: return "warn";
    case BudgetAction::Error: return "error";
  }
  return "?";
}

namespace {

const DeviceSpec &spec(const CostModel &m, Device d) { return d.isHost() ? m.host : m.cuda; }

const LinkSpec &link(const CostModel &m, Device from, Device to) {
  if (from.isHost() && to.isHost()) return m.hostToHost;
  if (from.isHost()) return m.hostToDevice;
  if (to.isHost()) return m.deviceToHost;
  return m.deviceToDevice;
}

Status optionError(std::string message) { return makeError("options", std::move(message)); }

}  // namespace

double CostModel::computeSeconds(Device device, const OpCost &cost) const {
  const DeviceSpec &s = spec(*this, device);
  return std::max(cost.flops / s.flopsPerSecond, cost.bytes / s.bytesPerSecond) + s.launchSeconds;
}

double CostModel::transferSeconds(Device from, Device to, double bytes) const {
  if (from == to) return 0;
  const LinkSpec &l = link(*this, from, to);
  return bytes / l.bytesPerSecond + l.latencySeconds;
}

namespace {

constexpr size_t kDeviceKinds = 2;  // Cpu, Cuda

size_t opCount() { return allOps().size(); }

size_t tableIndex(DeviceKind device, OpKind op, DType dtype) {
  return (static_cast<size_t>(device) * opCount() + static_cast<size_t>(op)) * kAllDTypes.size() +
         static_cast<size_t>(dtype);
}

}  // namespace

void Capabilities::set(DeviceKind device, OpKind op, std::optional<DType> dtype, float factor) {
  FERRY_CHECK(static_cast<size_t>(device) < kDeviceKinds) << "unknown device kind";
  if (factor_.empty()) factor_.assign(kDeviceKinds * opCount() * kAllDTypes.size(), 1.0f);
  for (DType t : kAllDTypes) {
    if (dtype && *dtype != t) continue;
    float &f = factor_[tableIndex(device, op, t)];
    missing_ += (factor == 0) - (f == 0);
    f = factor;
  }
}

float Capabilities::at(DeviceKind device, OpKind op, DType dtype) const {
  return factor_.empty() ? 1.0f : factor_[tableIndex(device, op, dtype)];
}

void Capabilities::setMissing(DeviceKind device, OpKind op, std::optional<DType> dtype) {
  set(device, op, dtype, 0);
}

void Capabilities::setCostFactor(DeviceKind device, OpKind op, std::optional<DType> dtype,
                                 double factor) {
  FERRY_CHECK(factor > 0 && std::isfinite(factor) && factor < 1e30)
      << "a cost factor is positive and finite, got " << factor;
  set(device, op, dtype, static_cast<float>(factor));
}

void Capabilities::merge(const Capabilities &other) {
  fusing_ |= other.fusing_;
  if (other.factor_.empty()) return;
  if (factor_.empty()) {
    const uint32_t fusing = fusing_;
    *this = other;
    fusing_ = fusing;
    return;
  }
  for (size_t i = 0; i < factor_.size(); ++i) {
    const float f = other.factor_[i];
    if (f == 1.0f || factor_[i] == 0) continue;
    missing_ += f == 0;
    factor_[i] = f;
  }
}

bool Capabilities::supports(Device device, OpKind op, DType dtype) const {
  return at(device.kind, op, dtype) != 0;
}

double Capabilities::costFactor(Device device, OpKind op, DType dtype) const {
  return at(device.kind, op, dtype);
}

Status CompileOptions::validate() const {
  DiagnosticEngine diags;
  if (devices.empty()) diags.error("options", {}, "no devices: give at least one (e.g. cpu)");
  for (size_t i = 0; i < devices.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (devices[i] == devices[j])
        diags.error("options", {}, "device " + devices[i].str() + " is listed twice");
  if (!devices.empty() && std::find(devices.begin(), devices.end(), target) == devices.end()) {
    std::string list;
    for (Device d : devices) list += (list.empty() ? "" : ", ") + d.str();
    diags.error("options", {},
                "target device " + target.str() + " is not among the available devices (" + list +
                    ")");
  }
  if (dtype.kind == DTypePolicy::Kind::Autocast && dtype.low != DType::F16 &&
      dtype.low != DType::BF16)
    diags.error("options", {},
                "autocast computes in f16 or bf16, not " + std::string(dtypeName(dtype.low)));
  if (budgets.maxTransferBytes && *budgets.maxTransferBytes < 0)
    diags.error("options", {}, "max_transfer_bytes must be >= 0");
  if (budgets.maxCasts && *budgets.maxCasts < 0)
    diags.error("options", {}, "max_casts must be >= 0");
  if (!stopAfter.empty()) {
    bool known = false;
    std::string names;
    for (const Pass &p : pipeline()) {
      known = known || p.name == stopAfter;
      names += (names.empty() ? "" : ", ") + std::string(p.name);
    }
    if (!known)
      diags.error("options", {},
                  "unknown pass '" + stopAfter + "' to stop after; passes: " + names);
  }
  if (diags.hasErrors()) return Status(diags.take());
  return {};
}

Expected<PlacementPolicy> parsePlacementPolicy(std::string_view s) {
  if (s == "strict") return PlacementPolicy::Strict;
  if (s == "auto") return PlacementPolicy::Auto;
  return optionError("invalid placement policy '" + std::string(s) + "': expected strict or auto");
}

Expected<DTypePolicy> parseDTypePolicy(std::string_view s) {
  if (s == "strict") return DTypePolicy{DTypePolicy::Kind::Strict, DType::F16};
  if (s == "promote") return DTypePolicy{DTypePolicy::Kind::Promote, DType::F16};
  if (s == "autocast=f16" || s == "autocast")
    return DTypePolicy{DTypePolicy::Kind::Autocast, DType::F16};
  if (s == "autocast=bf16") return DTypePolicy{DTypePolicy::Kind::Autocast, DType::BF16};
  return optionError("invalid dtype policy '" + std::string(s) +
                     "': expected strict, promote, autocast=f16 or autocast=bf16");
}

TransferDirection transferDirection(Device from, Device to) {
  if (from.isHost() && to.isHost()) return TransferDirection::H2H;
  if (from.isHost()) return TransferDirection::H2D;
  return to.isHost() ? TransferDirection::D2H : TransferDirection::D2D;
}

std::string_view directionKey(TransferDirection d) {
  constexpr std::string_view kKeys[] = {"h2d", "d2h", "d2d", "h2h"};
  return kKeys[static_cast<size_t>(d)];
}

std::string_view directionName(TransferDirection d) {
  constexpr std::string_view kNames[] = {"host-to-device", "device-to-host", "device-to-device",
                                         "host-to-host"};
  return kNames[static_cast<size_t>(d)];
}

BudgetAction Budgets::action(TransferDirection d) const {
  switch (d) {
    case TransferDirection::H2D: return h2d;
    case TransferDirection::D2H: return d2h;
    case TransferDirection::D2D: return d2d;
    case TransferDirection::H2H: return h2h;
  }
  FERRY_CHECK(false) << "transfer direction " << static_cast<int>(d);
  return h2h;
}

Expected<BudgetAction> parseBudgetAction(std::string_view s) {
  if (s == "allow") return BudgetAction::Allow;
  if (s == "warn") return BudgetAction::Warn;
  if (s == "error") return BudgetAction::Error;
  return optionError("invalid budget action '" + std::string(s) +
                     "': expected allow, warn or error");
}

Expected<std::vector<Device>> parseDeviceList(std::string_view s) {
  std::vector<Device> out;
  DiagnosticEngine diags;
  while (true) {
    size_t comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    Expected<Device> d = parseDevice(item);
    if (d)
      out.push_back(*d);
    else
      diags.append(d.status().diagnostics());
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  if (diags.hasErrors()) return Status(diags.take());
  return out;
}

}  // namespace ferry
