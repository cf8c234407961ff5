// backends/cpu/cpu_backend.cpp — arenas of the virtual CPU devices, copies, kernel dispatch.
#include "backends/cpu/cpu_backend.h"

#include <cstring>
#include <new>

#include "backends/cpu/kernels.h"

namespace ferry {

namespace {

constexpr std::align_val_t kAlignment{64};

std::string where(const KernelCall &call) {
  return "'" + std::string(call.op.name) + "'" + (call.loc.known() ? " at " + call.loc.str() : "");
}

}  // namespace

CpuBackend::CpuBackend(Options options) : options_(options) {
  FERRY_CHECK(options.devices >= 1 && options.devices <= Device::kMaxIndex + 1)
      << "CpuBackend with " << options.devices << " devices; expected 1 to "
      << Device::kMaxIndex + 1;
  for (int i = 0; i < options.devices; ++i) {
    devices_.push_back(Device::cpu(i));
    arenas_.push_back(std::make_unique<Arena>());
  }
}

CpuBackend::~CpuBackend() {
  for (auto &a : arenas_)
    for (auto &[p, bytes] : a->blocks) ::operator delete(const_cast<std::byte *>(p), kAlignment);
}

CpuBackend::Arena &CpuBackend::arena(Device device) const {
  FERRY_CHECK(device.isHost() && device.index >= 0 &&
              static_cast<size_t>(device.index) < arenas_.size())
      << device.str() << " is not a device of this CPU backend (it has cpu:0.."
      << arenas_.size() - 1 << ")";
  return *arenas_[static_cast<size_t>(device.index)];
}

Expected<std::byte *> CpuBackend::allocate(Device device, size_t bytes) {
  Arena &a = arena(device);
  // Zero bytes still get their own block: views of empty tensors stay distinct and owned.
  auto *p =
      static_cast<std::byte *>(::operator new(bytes == 0 ? 1 : bytes, kAlignment, std::nothrow));
  if (!p)
    return makeError("runtime", "out of memory on " + device.str() + ": " + std::to_string(bytes) +
                                    " bytes requested, " + std::to_string(bytesInUse(device)) +
                                    " in use");
  std::lock_guard lock(a.mutex);
  a.blocks.emplace(p, bytes);
  a.inUse += bytes;
  return p;
}

void CpuBackend::release(Device device, std::byte *data) {
  Arena &a = arena(device);
  {
    std::lock_guard lock(a.mutex);
    auto it = a.blocks.find(data);
    FERRY_CHECK(it != a.blocks.end()) << "release of " << static_cast<const void *>(data)
                                      << ", not an allocation of " << device.str();
    a.inUse -= it->second;
    a.blocks.erase(it);
  }
  ::operator delete(data, kAlignment);
}

bool CpuBackend::owns(Device device, const std::byte *data, size_t bytes) const {
  if (!device.isHost() || device.index < 0 || static_cast<size_t>(device.index) >= arenas_.size())
    return false;
  const Arena &a = *arenas_[static_cast<size_t>(device.index)];
  std::lock_guard lock(a.mutex);
  auto it = a.blocks.upper_bound(data);  // the first block starting after `data`
  if (it == a.blocks.begin()) return false;
  --it;
  const size_t size = std::max<size_t>(it->second, 1);
  return data >= it->first && data + bytes <= it->first + size;
}

size_t CpuBackend::bytesInUse(Device device) const {
  const Arena &a = arena(device);
  std::lock_guard lock(a.mutex);
  return a.inUse;
}

Status CpuBackend::copy(const TensorView &from, const TensorView &to, Traffic *traffic) {
  if (from.type->dtype != to.type->dtype || from.type->numel() != to.type->numel())
    return makeError("internal", "copy of " + from.type->str() + " into " + to.type->str() +
                                     ": the dtypes and element counts must match");
  if (options_.checkOwnership) {
    if (!owns(from.device, from.data, from.bytes()))
      return makeError("internal", "copy from " + from.device.str() +
                                       " reads memory that is not that device's");
    if (!owns(to.device, to.data, to.bytes()))
      return makeError("internal",
                       "copy to " + to.device.str() + " writes memory that is not that device's");
  }
  if (from.bytes() > 0) std::memmove(to.data, from.data, from.bytes());
  if (traffic && from.device != to.device) {
    ++traffic->copies;
    traffic->bytes += static_cast<int64_t>(from.bytes());
  }
  return Status();
}

Status CpuBackend::upload(std::span<const std::byte> from, Device source, const TensorView &to,
                          Traffic *traffic) {
  if (from.size() != to.bytes())
    return makeError("internal", "upload of " + std::to_string(from.size()) + " bytes into " +
                                     to.type->str() + " (" + std::to_string(to.bytes()) +
                                     " bytes) on " + to.device.str());
  if (options_.checkOwnership && !owns(to.device, to.data, to.bytes()))
    return makeError("internal",
                     "upload to " + to.device.str() + " writes memory that is not that device's");
  if (!from.empty()) std::memcpy(to.data, from.data(), from.size());
  if (traffic && source != to.device) {
    ++traffic->copies;
    traffic->bytes += static_cast<int64_t>(from.size());
  }
  return Status();
}

Status CpuBackend::download(const TensorView &from, std::span<std::byte> to) {
  if (to.size() != from.bytes())
    return makeError("internal", "download of " + from.type->str() + " on " + from.device.str() +
                                     " (" + std::to_string(from.bytes()) + " bytes) into " +
                                     std::to_string(to.size()) + " bytes");
  if (options_.checkOwnership && !owns(from.device, from.data, from.bytes()))
    return makeError("internal", "download from " + from.device.str() +
                                     " reads memory that is not that device's");
  if (!to.empty()) std::memcpy(to.data(), from.data, to.size());
  return Status();
}

KernelCapability CpuBackend::capability(OpKind op, DType dtype) const {
  if (!cpu::hasKernel(op, dtype)) return {};
  return {true, cpu::kernelCostFactor(op, dtype)};
}

Status CpuBackend::checkOwnership(const KernelCall &call) const {
  const Device device = call.result.device;
  if (!owns(device, call.result.data, call.result.bytes()))
    return makeError("internal",
                     where(call) + " on " + device.str() + ": its result buffer is not in " +
                         device.str() + "'s memory",
                     call.loc);
  for (size_t i = 0; i < call.operands.size(); ++i) {
    const TensorView &o = call.operands[i];
    if (o.device != device || !owns(device, o.data, o.bytes()))
      return makeError("internal",
                       where(call) + " runs on " + device.str() + " but operand " +
                           std::to_string(i) + " (" + o.type->str() + ") is not in " +
                           device.str() + "'s memory: a transfer is missing",
                       call.loc);
  }
  return Status();
}

Status CpuBackend::run(const KernelCall &call) {
  arena(call.result.device);  // a device of this backend, or a loud failure
  // Bytes cross devices in copy() only, where they are counted (backend.h).
  if (call.op.kind == OpKind::Transfer)
    return makeError("internal",
                     where(call) + ": a transfer is a copy between devices; the runtime runs it "
                                   "with Backend::copy, not Backend::run",
                     call.loc);
  if (options_.checkOwnership) FERRY_TRY(checkOwnership(call));
  return cpu::runKernel(call);
}

}  // namespace ferry
