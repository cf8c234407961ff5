// ir/verifier.h — structural and type checks of a whole graph.
#pragma once

#include "ir/graph.h"
#include "ir/status.h"

namespace ferry {

/// Checks every invariant a pass may rely on and reports all violations, not the first:
/// ids in range; operands defined before use (topological order); arity, operand roles and
/// accepted dtypes; attributes complete and of the schema's kinds; unique names; params' data
/// of their value's type; at least one output; every result's type equal to what its op's
/// shape rule infers; devices, where set, agreeing with input declarations. A node that reads a
/// value whose type is wrong is not checked: it would only repeat that mistake.
/// Pre: none (safe on any graph). Post: ok() means passes may rely on all of the above.
Status verify(const Graph &graph);

/// verify()'s findings, sorted for a compiler that goes on past the mistakes of single nodes to
/// report every problem of a model in one run (compile() does).
struct Verification {
  /// A node whose type does not check: its operands' types are not what its op takes (inferType
  /// fails), or its result is typed other than its op gives.
  struct TypeError {
    NodeId node;
    size_t diagnostic;  ///< its error in `diagnostics`
    /// Its result's type is what the node gives once fixed: its only mistake is the dtype of
    /// operands of a fixed kind (inferTypeWithKindsFixed), which never reaches the result.
    /// Otherwise its type cannot be trusted, and nodes reading it were not checked (they would
    /// only repeat its mistake).
    bool typeHolds = false;
  };

  std::vector<Diagnostic> diagnostics;  ///< every error, in verify()'s order
  std::vector<TypeError> typeErrors;    ///< in the graph's order
  /// An error besides the type errors: ids out of range, a value used before it is defined or
  /// defined twice, attributes off their schema, an op given too few or too many operands, names,
  /// params' data, no outputs. The graph is then not one a pass can judge at all.
  bool structural = false;
};

/// The checks of verify(), each error classified. verify(g) is ok exactly when this finds no
/// diagnostics.
Verification verifyGraph(const Graph &graph);

}  // namespace ferry
