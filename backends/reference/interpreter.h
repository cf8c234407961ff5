// backends/reference/interpreter.h — the reference interpreter: plain, obviously correct loops
// for every op and dtype on host memory, computing in double. It is the oracle that fast
// kernels are tested against, never the fast path.
//
// Semantics: math runs in double and each result is stored in the result dtype as
// storeDouble() does (round to nearest even; integers truncate toward zero and saturate).
// Data movement ops (reshape, transpose, slice, gather, concat, expand, squeeze, unsqueeze,
// flatten, identity, transfer) copy bytes and are exact for every dtype. Integers of
// magnitude beyond 2^53 are not exact through math ops. Devices are ignored: every tensor is
// host memory.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "ir/tensor_data.h"

namespace ferry::reference {

/// Evaluates one op. `result` is the node's inferred type. Errors that only data can reveal
/// (a gather index out of range) are returned with code "runtime" at `loc`.
Expected<TensorData> evalOp(const OpInfo &op, std::span<const TensorData> operands,
                            const Attrs &attrs, const TensorType &result, const Location &loc = {});

/// Runs `graph` on `inputs` (by input name; each must match the declared dtype and shape, and
/// every input must be given, with no extras) and returns the outputs in declaration order.
Expected<std::vector<TensorData>> run(const Graph &graph,
                                      const std::map<std::string, TensorData> &inputs);

}  // namespace ferry::reference
