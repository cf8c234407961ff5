// runtime/backend_registry.cpp — this build's backends, listed once.
#include "runtime/backend_registry.h"

#include "backends/cpu/cpu_backend.h"

namespace ferry {

const std::vector<BackendEntry> &builtinBackends() {
  static const std::vector<BackendEntry> backends = {
      {DeviceKind::Cpu, "cpu, with virtual devices cpu:N",
       [](const BackendOptions &o) -> Expected<std::unique_ptr<Backend>> {
         if (o.devices < 1 || o.devices > Device::kMaxIndex + 1)
           return makeError("device", "the cpu backend drives 1 to " +
                                          std::to_string(Device::kMaxIndex + 1) + " devices, not " +
                                          std::to_string(o.devices));
         return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(
             CpuBackend::Options{.devices = o.devices, .checkOwnership = o.checked}));
       }},
  };
  return backends;
}

const BackendEntry *findBackend(const std::vector<BackendEntry> &registry, DeviceKind kind) {
  for (const BackendEntry &e : registry)
    if (e.kind == kind) return &e;
  return nullptr;
}

}  // namespace ferry
