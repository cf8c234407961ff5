// tools/ferry-run/trace.h — one run of an executable as a Chrome trace (the Trace Event Format,
// JSON), to open in ui.perfetto.dev or chrome://tracing and see where the time of a run went.
#pragma once

#include <string>

#include "runtime/executable.h"
#include "runtime/session.h"

namespace ferry {

/// The run that `stats` describes, as a Trace Event Format JSON object: one process named
/// `model`; one lane (thread) per device of `exe`, in its order, then a "transfers" lane; one
/// complete event per step ("linear %h") on its device's lane, transfer steps on the transfers
/// lane, where the input copy goes too when the run moved inputs between devices. Times are
/// microseconds since the run started. Precondition: `stats` comes from a run of `exe` (one
/// start and one duration per step).
std::string renderTrace(const Executable &exe, const RunStats &stats, const std::string &model);

}  // namespace ferry
