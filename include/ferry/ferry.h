// ferry/ferry.h — the umbrella header apps include: IR, builder, text format, compiler, runtime,
// reference runs.
#pragma once

#include "backends/reference/interpreter.h"
#include "frontend/builder.h"
#include "ir/device.h"
#include "ir/diagnostics.h"
#include "ir/dtype.h"
#include "ir/graph.h"
#include "ir/npy.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/status.h"
#include "ir/verifier.h"
#include "passes/compile.h"
#include "passes/lower.h"
#include "runtime/artifact.h"
#include "runtime/executable.h"
#include "runtime/session.h"
#include "runtime/tensor.h"
