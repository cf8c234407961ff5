// backends/cpu/cpu_device.cpp — arenas of the virtual CPU devices, copies, prepared kernels.
#include "backends/cpu/cpu_device.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>

#include "backends/cpu/kernels.h"

namespace ferry {

namespace {

constexpr std::align_val_t kAlignment{64};

// Copies may overlap only when they are the same bytes (a copy onto itself).
void move(std::byte *to, const std::byte *from, size_t bytes) {
  if (bytes > 0 && to != from) std::memmove(to, from, bytes);
}

}  // namespace

CpuDevice::CpuDevice(Options options) : options_(options) {
  FERRY_CHECK(options.devices >= 1 && options.devices <= Device::kMaxIndex + 1)
      << "CpuDevice with " << options.devices << " devices; expected 1 to "
      << Device::kMaxIndex + 1;
  for (int i = 0; i < options.devices; ++i) {
    devices_.push_back(Device::cpu(i));
    arenas_.push_back(std::make_unique<Arena>());
  }
}

CpuDevice::~CpuDevice() {
  for (auto &a : arenas_)
    for (auto &[p, block] : a->blocks)
      if (block.borrows == 0) ::operator delete(const_cast<std::byte *>(p), kAlignment);
}

CpuDevice::Arena &CpuDevice::arena(Device device) const {
  FERRY_CHECK(device.isHost() && device.index >= 0 &&
              static_cast<size_t>(device.index) < arenas_.size())
      << device.str() << " is not a device of this CPU backend (it has cpu:0.."
      << arenas_.size() - 1 << ")";
  return *arenas_[static_cast<size_t>(device.index)];
}

Expected<std::byte *> CpuDevice::allocate(Device device, size_t bytes) {
  Arena &a = arena(device);
  // Zero bytes still get their own block: views of empty tensors stay distinct and owned.
  auto *p =
      static_cast<std::byte *>(::operator new(bytes == 0 ? 1 : bytes, kAlignment, std::nothrow));
  if (!p)
    return makeError("memory", "out of memory on " + device.str() + ": " + std::to_string(bytes) +
                                   " bytes requested, " + std::to_string(bytesInUse(device)) +
                                   " in use");
  std::lock_guard lock(a.mutex);
  try {
    a.blocks.emplace(p, Block{bytes, 0});
  } catch (const std::bad_alloc &) {  // the block's entry: without it the block would leak
    ::operator delete(p, kAlignment);
    return makeError("memory", "out of host memory for the bookkeeping of " +
                                   std::to_string(bytes) + " bytes on " + device.str());
  }
  a.inUse += bytes;
  return p;
}

std::byte *CpuDevice::borrowHost(Device device, const std::byte *host, size_t bytes) {
  Arena &a = arena(device);
  if (reinterpret_cast<uintptr_t>(host) % static_cast<size_t>(kAlignment) != 0) return nullptr;
  // Recorded only for owns(), which checked runs alone read: unchecked, a run that lends its
  // inputs and outputs in place takes no lock and allocates nothing for them.
  if (!options_.checkOwnership) return const_cast<std::byte *>(host);
  std::lock_guard lock(a.mutex);
  // The same bytes lent again (two slots of one weight) share one block.
  auto [it, fresh] = a.blocks.try_emplace(host, Block{bytes, 0});
  FERRY_CHECK(fresh || it->second.borrows > 0)
      << "borrowHost of " << static_cast<const void *>(host) << ", an allocation of "
      << device.str();
  it->second.bytes = std::max(it->second.bytes, bytes);
  ++it->second.borrows;
  return const_cast<std::byte *>(host);
}

void CpuDevice::release(Device device, std::byte *data) {
  Arena &a = arena(device);
  {
    std::lock_guard lock(a.mutex);
    auto it = a.blocks.find(data);
    if (it == a.blocks.end() && !options_.checkOwnership) return;  // an unrecorded borrow
    FERRY_CHECK(it != a.blocks.end()) << "release of " << static_cast<const void *>(data)
                                      << ", not an allocation of " << device.str();
    if (it->second.borrows > 0) {  // host memory someone else frees
      if (--it->second.borrows == 0) a.blocks.erase(it);
      return;
    }
    a.inUse -= it->second.bytes;
    a.blocks.erase(it);
  }
  ::operator delete(data, kAlignment);
}

bool CpuDevice::owns(Device device, const std::byte *data, size_t bytes) const {
  if (!device.isHost() || device.index < 0 || static_cast<size_t>(device.index) >= arenas_.size())
    return false;
  const Arena &a = *arenas_[static_cast<size_t>(device.index)];
  std::lock_guard lock(a.mutex);
  auto it = a.blocks.upper_bound(data);  // the first block starting after `data`
  if (it == a.blocks.begin()) return false;
  --it;
  const size_t size = std::max<size_t>(it->second.bytes, 1);
  return data >= it->first && data + bytes <= it->first + size;
}

size_t CpuDevice::bytesInUse(Device device) const {
  const Arena &a = arena(device);
  std::lock_guard lock(a.mutex);
  return a.inUse;
}

Status CpuDevice::copy(Device from, const std::byte *source, Device to, std::byte *destination,
                       size_t bytes, Stream) {
  if (options_.checkOwnership) {
    if (!owns(from, source, bytes))
      return makeError("internal", "copy from " + from.str() + " reads " + std::to_string(bytes) +
                                       " bytes that are not that device's memory");
    if (!owns(to, destination, bytes))
      return makeError("internal", "copy to " + to.str() + " writes " + std::to_string(bytes) +
                                       " bytes that are not that device's memory");
  }
  move(destination, source, bytes);
  return Status();
}

Status CpuDevice::upload(const std::byte *host, Device to, std::byte *destination, size_t bytes,
                         Stream) {
  if (options_.checkOwnership && !owns(to, destination, bytes))
    return makeError("internal", "upload to " + to.str() + " writes " + std::to_string(bytes) +
                                     " bytes that are not that device's memory");
  move(destination, host, bytes);
  return Status();
}

Status CpuDevice::download(Device from, const std::byte *source, std::byte *host, size_t bytes,
                           Stream) {
  if (options_.checkOwnership && !owns(from, source, bytes))
    return makeError("internal", "download from " + from.str() + " reads " +
                                     std::to_string(bytes) + " bytes that are not that device's memory");
  move(host, source, bytes);
  return Status();
}

Expected<std::unique_ptr<PreparedKernel>> CpuDevice::prepare(const KernelPlan &plan,
                                                             const StepSpec &step) {
  arena(step.device);  // a device of this runtime, or a loud failure
  Expected<std::unique_ptr<cpu::Kernel>> k = cpu::prepareKernel(plan, step);
  if (!k) return k.status();
  return std::unique_ptr<PreparedKernel>(std::move(*k));
}

Status CpuDevice::launch(const PreparedKernel &kernel, const KernelArgs &args, Stream) {
  // prepare() made every kernel a Session launches here: a cpu::Kernel.
  return static_cast<const cpu::Kernel &>(kernel).run(args);
}

}  // namespace ferry
