// backends/registry.h — this build's backends, one per device kind, in one explicit list (no
// static registration): each entry makes the kind's compile-time Target (backends/target.h) and
// its run-time DeviceRuntime (backends/device.h).
//
// Lowering (passes/lower.h) asks the targets for capability tables and kernel plans; a Session
// (runtime/session.h) makes one device runtime per device kind its executable uses. Adding a
// backend is a Target, a DeviceRuntime and one entry in builtinBackends(); no pass changes. An
// app or a test can hand a Session its own list (Session::Options::backends).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/device.h"
#include "backends/target.h"

namespace ferry {

/// How a registry entry makes its device runtime.
struct DeviceOptions {
  /// The devices kind:0 .. kind:(devices - 1) the runtime drives; at least 1.
  int devices = 1;
  /// Check memory ownership in copies (debug builds, tests; see the runtimes).
  bool checked = false;
};

/// One device kind: its target and its device runtime.
struct BackendEntry {
  DeviceKind kind = DeviceKind::Cpu;
  /// Says what the backend is, for errors ("cpu, with virtual devices cpu:N").
  std::string description;
  /// Makes the compile-time target; needs no hardware. May be empty in an app's entry that only
  /// runs executables compiled elsewhere.
  std::function<std::unique_ptr<Target>()> target;
  /// Makes the device runtime; an error when it cannot (no such hardware, a driver error).
  std::function<Expected<std::unique_ptr<DeviceRuntime>>(const DeviceOptions &)> device;
  /// Whether device `index` of this kind is on this machine, or why not (an error with code
  /// "device" whose message is the reason alone). Empty: every index is (the CPU's virtual
  /// devices).
  std::function<Status(int index)> present;
};

/// This build's backends: the CPU's (backends/cpu) for `cpu` and its virtual devices `cpu:N`,
/// and, in a build with the CUDA toolkit, the CUDA backend's (backends/cuda) for `cuda:N`.
const std::vector<BackendEntry> &builtinBackends();

/// The entry of `registry` for `kind`, or nullptr.
const BackendEntry *findBackend(const std::vector<BackendEntry> &registry, DeviceKind kind);

/// The first of `devices` whose kind has no entry in `registry`, if any.
std::optional<Device> firstWithoutBackend(std::span<const Device> devices,
                                          const std::vector<BackendEntry> &registry);

/// The first of `devices` whose kind has an entry in `registry` but that is not on this machine
/// (BackendEntry::present), with the reason ("this machine has 1 GPU (cuda:0)").
std::optional<std::pair<Device, std::string>> firstAbsent(std::span<const Device> devices,
                                                          const std::vector<BackendEntry> &registry);

/// The devices this build can run on this machine: `cpu`, then `cuda:0`.. for every GPU the CUDA
/// runtime sees (none in a build without CUDA, or without a driver or a GPU).
std::vector<Device> machineDevices();

/// Whether this build has the CUDA backend.
bool builtWithCuda();

/// "cpu, with virtual devices cpu:N; ...": what `registry` holds, for messages.
std::string describeBackends(const std::vector<BackendEntry> &registry);

}  // namespace ferry
