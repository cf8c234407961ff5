// runtime/backend_registry.h — which backend runs each device kind: one explicit list, no
// static registration.
//
// Session::create makes one backend per device kind its executable uses, from such a list, and
// backendCapabilities() (runtime/executable.h) reads the capability tables of this build's
// backends. Adding a backend is a subclass of Backend (backends/backend.h) and one entry in
// builtinBackends() (runtime/backend_registry.cpp); no pass changes. An app or a test can hand
// a Session its own list (Session::Options::backends).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"

namespace ferry {

/// How a registry entry makes its backend.
struct BackendOptions {
  /// The devices kind:0 .. kind:(devices - 1) the backend drives; at least 1.
  int devices = 1;
  /// Check ownership before every kernel and copy (debug builds, tests; see the backends).
  bool checked = false;
};

/// One device kind and the backend that runs it.
struct BackendEntry {
  DeviceKind kind = DeviceKind::Cpu;
  /// Says what the backend is, for errors ("cpu, with virtual devices cpu:N").
  std::string description;
  /// Makes the backend; an error when it cannot (no such hardware, a driver error).
  std::function<Expected<std::unique_ptr<Backend>>(const BackendOptions &)> make;
};

/// This build's backends, one per device kind: the CPU backend (backends/cpu) for `cpu` and its
/// virtual devices `cpu:N`.
const std::vector<BackendEntry> &builtinBackends();

/// The entry of `registry` for `kind`, or nullptr.
const BackendEntry *findBackend(const std::vector<BackendEntry> &registry, DeviceKind kind);

}  // namespace ferry
