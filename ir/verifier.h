// ir/verifier.h — structural and type checks of a whole graph.
#pragma once

#include "ir/graph.h"
#include "ir/status.h"

namespace ferry {

/// Checks every invariant a pass may rely on and reports all violations, not the first:
/// ids in range; operands defined before use (topological order); arity, operand roles and
/// accepted dtypes; attributes complete and of the schema's kinds; unique names; params' data
/// of their value's type; at least one output; every result's type equal to what its op's
/// shape rule infers; devices, where set, agreeing with input declarations.
/// Pre: none (safe on any graph). Post: ok() means passes may rely on all of the above.
Status verify(const Graph &graph);

}  // namespace ferry
