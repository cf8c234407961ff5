// backends/registry.cpp — this build's backends, listed once.
#include "backends/registry.h"

#include "backends/cpu/cpu_device.h"
#include "backends/cpu/cpu_target.h"
#ifdef FERRY_HAVE_CUDA
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_target.h"
#endif

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
#ifdef FERRY_HAVE_CUDA
      {DeviceKind::Cuda, "cuda, with cuBLASLt GEMMs and NVRTC-generated kernels",
       [] { return std::unique_ptr<Target>(std::make_unique<CudaTarget>()); },
       [](const DeviceOptions &o) { return makeCudaDevice(o.devices, o.checked); },
       [](int index) { return cudaDevicePresent(index); }},
#endif
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

std::optional<std::pair<Device, std::string>> firstAbsent(std::span<const Device> devices,
                                                          const std::vector<BackendEntry> &registry) {
  for (Device d : devices) {
    const BackendEntry *e = findBackend(registry, d.kind);
    if (!e || !e->present) continue;
    if (Status s = e->present(d.index); !s.ok()) return std::pair{d, s.diagnostics().front().message};
  }
  return std::nullopt;
}

std::vector<Device> machineDevices() {
  std::vector<Device> devices{Device::cpu()};
#ifdef FERRY_HAVE_CUDA
  const int gpus = visibleCudaDevices();
  for (int i = 0; i < gpus && i <= Device::kMaxIndex; ++i) devices.push_back(Device::cuda(i));
#endif
  return devices;
}

bool builtWithCuda() {
#ifdef FERRY_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::string describeBackends(const std::vector<BackendEntry> &registry) {
  std::string s;
  for (const BackendEntry &e : registry) s += (s.empty() ? "" : "; ") + e.description;
  return s.empty() ? "none" : s;
}

}  // namespace ferry
