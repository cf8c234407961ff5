// ir/device.h — where a tensor lives: `cpu`, `cpu:N` (virtual host devices), `cuda:N`.
#pragma once

#include <compare>
#include <ostream>
#include <string>
#include <string_view>

#include "ir/status.h"

namespace ferry {

enum class DeviceKind : uint8_t { Cpu, Cuda };

/// `cpu:N` for N > 0 are virtual host devices, each with its own arena, so every placement
/// and transfer path can be exercised end to end on a machine without a GPU.
struct Device {
  DeviceKind kind = DeviceKind::Cpu;
  int index = 0;

  static constexpr int kMaxIndex = 1023;

  static constexpr Device cpu(int index = 0) { return {DeviceKind::Cpu, index}; }
  static constexpr Device cuda(int index = 0) { return {DeviceKind::Cuda, index}; }
  bool isHost() const { return kind == DeviceKind::Cpu; }

  /// Canonical spelling: "cpu", "cpu:1", "cuda:0" (`cpu:0` prints as "cpu").
  std::string str() const;
  friend std::ostream &operator<<(std::ostream &out, const Device &d) { return out << d.str(); }
  auto operator<=>(const Device &) const = default;
};

/// Parses "cpu", "cpu:N", "cuda:N" (N in 0..Device::kMaxIndex); anything else ("gpu",
/// "cuda:x", "cuda:", "CPU") is an error that says what was expected.
Expected<Device> parseDevice(std::string_view s);

}  // namespace ferry
