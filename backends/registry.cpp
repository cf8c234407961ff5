// backends/registry.cpp — this build's backends, listed once.
#include "backends/registry.h"

#include "backends/cpu/cpu_device.h"
#include "backends/cpu/cpu_target.h"

namespace ferry {

const std::vector<BackendEntry> &builtinBackends() {
  static const std::vector<BackendEntry> backends = {
      {DeviceKind::Cpu, "cpu, with virtual devices cpu:N",
       [] { return std::unique_ptr<Target>(std::make_unique<CpuTarget>()); },
       [](const DeviceOptions &o) -> Expected<std::unique_ptr<DeviceRuntime>> {
         if (o.devices < 1 || o.devices > Device::kMaxIndex + 1)
           return makeError("device", "the cpu backend drives 1 to " +
                                          std::to_string(Device::kMaxIndex + 1) + " devices, not " +
                                          std::to_string(o.devices));
         return std::unique_ptr<DeviceRuntime>(std::make_unique<CpuDevice>(
             CpuDevice::Options{.devices = o.devices, .checkOwnership = o.checked}));
       }},
  };
  return backends;
}

const BackendEntry *findBackend(const std::vector<BackendEntry> &registry, DeviceKind kind) {
  for (const BackendEntry &e : registry)
    if (e.kind == kind) return &e;
  return nullptr;
}

std::optional<Device> firstWithoutBackend(std::span<const Device> devices,
                                          const std::vector<BackendEntry> &registry) {
  for (Device d : devices)
    if (!findBackend(registry, d.kind)) return d;
  return std::nullopt;
}

std::string describeBackends(const std::vector<BackendEntry> &registry) {
  std::string s;
  for (const BackendEntry &e : registry) s += (s.empty() ? "" : "; ") + e.description;
  return s.empty() ? "none" : s;
}

}  // namespace ferry
