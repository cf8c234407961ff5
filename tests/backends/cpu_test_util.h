// tests/backends/cpu_test_util.h — running single kernels of the CPU backend in tests: tensors
// uploaded to a virtual device (DeviceRuntime::upload), the step lowered by the CPU target,
// prepared and launched by the CPU device with its planned scratch, the result downloaded;
// sample inputs per op and tolerances per dtype against the reference interpreter.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "backends/cpu/cpu_device.h"
#include "backends/cpu/cpu_target.h"
#include "backends/cpu/kernels.h"
#include "reference_util.h"

namespace ferry::cputest {

inline CpuDevice::Options checked(int devices) {
  CpuDevice::Options o;
  o.devices = devices;
  o.checkOwnership = true;
  return o;
}

// A TensorData copied into a fresh allocation on `device`; freed with the device.
struct DeviceTensor {
  TensorType type;
  std::byte *data;
  Device device;
  size_t bytes() const { return type.byteSize(); }
};

// Through DeviceRuntime::upload and download, as the runtime moves an app's bytes.
inline DeviceTensor upload(CpuDevice &b, const TensorData &t, Device device) {
  Expected<std::byte *> p = b.allocate(device, t.byteSize());
  FERRY_CHECK(p.ok()) << p.status().message();
  DeviceTensor d{t.type(), *p, device};
  Status s = b.upload(t.bytes().data(), device, d.data, t.byteSize(), Stream{});
  FERRY_CHECK(s.ok()) << s.message();
  return d;
}

inline TensorData download(CpuDevice &b, DeviceTensor &d) {
  TensorData t(d.type.dtype, d.type.shape);
  Status s = b.download(d.device, d.data, t.mutableBytes().data(), t.byteSize(), Stream{});
  FERRY_CHECK(s.ok()) << s.message();
  return t;
}

// How a test step reaches the kernel: through the CPU target's checks (as every compiled step
// does), or planned directly, so that the kernels' own contract checks are what refuses it.
enum class Route { Target, KernelOnly };

// Lowers one step with the CPU target (or plans it directly) and prepares it on `b`.
inline Expected<std::unique_ptr<PreparedKernel>> prepareOnCpu(CpuDevice &b, const OpInfo &op,
                                                              const std::vector<TensorType> &in,
                                                              const Attrs &attrs,
                                                              const TensorType &result,
                                                              Device device, KernelPlan &plan,
                                                              Route route = Route::Target) {
  static const Location loc{"test.fy", 3, 1};
  const StepSpec step{op, attrs, in, result, device, loc};
  if (route == Route::KernelOnly) {
    plan = cpu::planKernel(step);
  } else {
    Expected<KernelPlan> planned = CpuTarget().lower(step);
    if (!planned) return planned.status();
    plan = *planned;
  }
  return b.prepare(plan, step);
}

// Runs `op` on the device (operands and result on `device`): lowered, prepared, launched with
// its planned scratch; returns the result.
inline Expected<TensorData> runKernelOnly(CpuDevice &b, const OpInfo &op,
                                          const std::vector<TensorData> &in, const Attrs &attrs,
                                          const TensorType &result);
inline Expected<TensorData> runOnCpu(CpuDevice &b, const OpInfo &op,
                                     const std::vector<TensorData> &in, const Attrs &attrs,
                                     const TensorType &result, Device device = Device::cpu(),
                                     Route route = Route::Target) {
  std::vector<TensorType> types;
  for (const TensorData &t : in) types.push_back(t.type());
  KernelPlan plan;
  Expected<std::unique_ptr<PreparedKernel>> kernel =
      prepareOnCpu(b, op, types, attrs, result, device, plan, route);
  if (!kernel) return kernel.status();
  std::vector<DeviceTensor> operands;
  std::vector<const std::byte *> pointers;
  for (const TensorData &t : in) operands.push_back(upload(b, t, device));
  for (DeviceTensor &d : operands) pointers.push_back(d.data);
  DeviceTensor out = upload(b, TensorData(result.dtype, result.shape), device);
  Expected<std::byte *> scratch = b.allocate(device, plan.scratchBytes);
  FERRY_CHECK(scratch.ok()) << scratch.status().message();
  Status s = b.launch(**kernel, KernelArgs{pointers, out.data, plan.scratchBytes ? *scratch : nullptr},
                      Stream{nullptr, device});
  Expected<TensorData> got =
      s.ok() ? Expected<TensorData>(download(b, out)) : Expected<TensorData>(s);
  for (DeviceTensor &d : operands) b.release(device, d.data);
  b.release(device, out.data);
  b.release(device, *scratch);
  return got;
}

// Whether the CPU target claims a kernel for `op` computing in `dtype`.
inline bool cpuSupports(OpKind op, DType dtype) {
  return CpuTarget().capability(op, dtype).supported;
}

// Runs `op` planned directly, past the target's checks: the kernels' own contract is tested.
inline Expected<TensorData> runKernelOnly(CpuDevice &b, const OpInfo &op,
                                          const std::vector<TensorData> &in, const Attrs &attrs,
                                          const TensorType &result) {
  return runOnCpu(b, op, in, attrs, result, Device::cpu(), Route::KernelOnly);
}

// Values in the domain of each op family, as `dtype` holds them.
inline TensorData sample(DType dtype, Shape shape, OpKind op, uint64_t seed) {
  TensorData t(dtype, std::move(shape));
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype == DType::Bool) {
      t.setInt(i, static_cast<int64_t>(rng() % 2));
    } else if (!isFloating(dtype)) {
      const int64_t span = op == OpKind::Pow ? 4 : dtype == DType::U8 ? 250 : 200;
      const int64_t lo = op == OpKind::Pow || dtype == DType::U8 ? 0 : -100;
      t.setInt(i, lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(span)));
    } else {
      const bool positive =
          op == OpKind::Log || op == OpKind::Sqrt || op == OpKind::Rsqrt || op == OpKind::Pow;
      double u = std::uniform_real_distribution<double>(-3, 3)(rng);
      t.set(i, positive ? std::fabs(u) + 0.25 : u);
    }
  }
  return t;
}

// Random bytes (bool: 0 or 1), so that a misplaced element of any dtype shows; floats may hold
// any bit pattern, NaNs included, which movement and copies must carry unchanged.
inline TensorData randomBytes(DType dtype, Shape shape, uint64_t seed) {
  TensorData t(dtype, std::move(shape));
  std::mt19937_64 rng(seed);
  std::span<std::byte> bytes = t.mutableBytes();
  for (std::byte &b : bytes)
    b = static_cast<std::byte>(dtype == DType::Bool ? rng() % 2 : rng() & 0xff);
  return t;
}

// The same type and the same bytes, element by element (NaN payloads included).
inline ::testing::AssertionResult sameBytes(const TensorData &got, const TensorData &want) {
  if (got.type() != want.type())
    return ::testing::AssertionFailure()
           << "type " << got.type().str() << ", want " << want.type().str();
  const size_t size = dtypeSize(got.dtype());
  for (int64_t i = 0; i < got.numel(); ++i) {
    const size_t at = static_cast<size_t>(i) * size;
    if (std::memcmp(got.bytes().data() + at, want.bytes().data() + at, size) != 0)
      return ::testing::AssertionFailure()
             << "element " << i << " of " << got.type().str() << " differs from the reference";
  }
  return ::testing::AssertionSuccess();
}

inline double tolerance(DType t) {
  switch (t) {
    case DType::F16: return 4e-3;  // f32 math rounded once vs double math rounded once
    case DType::BF16: return 2e-2;
    case DType::F32: return 1e-5;
    case DType::F64: return 1e-12;
    default: return 0;
  }
}

/// Runs `k` on `in` (attributes `given`, completed) by the reference and on the CPU, both with
/// inferType's result type, into `got` and `want`; a failure says which of the three failed.
inline ::testing::AssertionResult runBoth(CpuDevice &b, OpKind k,
                                          const std::vector<TensorData> &in,
                                          const std::vector<NamedAttr> &given, TensorData &got,
                                          TensorData &want) {
  const OpInfo &info = opInfo(k);
  const Attrs attrs = reftest::completeAttrs(info, given);
  std::vector<TensorType> types;
  for (const TensorData &t : in) types.push_back(t.type());
  InferResult inferred = inferType(info, types, attrs);
  if (const auto *e = std::get_if<InferError>(&inferred))
    return ::testing::AssertionFailure() << "inferType: " << e->message;
  const TensorType result = std::get<TensorType>(inferred);
  Expected<TensorData> w = reference::evalOp(info, in, attrs, result);
  if (!w.ok()) return ::testing::AssertionFailure() << "reference: " << w.status().message();
  Expected<TensorData> g = runOnCpu(b, info, in, attrs, result);
  if (!g.ok()) return ::testing::AssertionFailure() << "cpu: " << g.status().message();
  got = std::move(*g);
  want = std::move(*w);
  return ::testing::AssertionSuccess();
}

/// runBoth, then equal within the result dtype's tolerance (bool and integers exactly).
inline ::testing::AssertionResult matchesReference(CpuDevice &b, OpKind k,
                                                   const std::vector<TensorData> &in,
                                                   const std::vector<NamedAttr> &given) {
  TensorData got, want;
  if (::testing::AssertionResult r = runBoth(b, k, in, given, got, want); !r) return r;
  return reftest::sameTensor(got, want, tolerance(want.dtype()));
}

}  // namespace ferry::cputest
