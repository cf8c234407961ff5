// ir/literal.h — scalar literals as operands (`add(%x, 1.0)`, `b.mul(h, 0.5)`): which operands
// take them, the dtype they are stored in, and how they read back and print. Shared by the
// parser, the printer, the builder, the verifier and the dtype pass.
//
// A literal is a `constant` node of shape [] marked with its kind (Node::literal): Floating for
// `0.5`, `1e-3`, `-2.0`, `inf`, `nan`; Integer for `2`, `-1`; Bool for `true`, `false`. It is
// stored in the dtype its reader computes in (typeLiterals), so the IR's ordinary rules
// (ResultType's zero-dim rule, the shape rules, every kernel) read it right without knowing it is a
// literal, and no cast is ever inserted for it. Only choosing that dtype reads the kind, as
// PyTorch's "wrapped numbers" (ResultType::addWrapped): a float literal keeps an f16 tensor in f16
// and makes an i32 tensor f32; an integer literal keeps i32 in i32; a bool literal never promotes.
// The choice is made when the parser or the builder makes the node, and again by the dtype pass
// when the reader's operands change dtype (a pin, autocast), which retypes the literal in place.
//
// A literal is its text: the shortest decimal that reads back (as the parser reads it: a
// double, then rounded to the dtype) to the value it holds. Retyping re-reads that text in the
// new dtype, so `mul(%h, 0.1)` stored in f16 and moved to f32 holds f32's 0.1, not f16's.
//
// Invariants (verify): a literal is a zero-dim constant, not an output, read by at most one
// operand, one that takesLiteral; its kind is not above its dtype's category. Simplify never
// merges two literals, so the one reader stays.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace ferry {

/// A scalar literal as written.
struct Literal {
  DTypeCategory kind = DTypeCategory::Floating;
  int64_t i = 0;  ///< Bool (0 or 1) and Integer
  double d = 0;   ///< Floating
  /// As the `.fy` format spells it: `0.5`, `1e-05`, `inf`, `-2.0`, `2`, `true`.
  std::string str() const;
};

/// Whether operand `i` of `op` may be a literal: the data operands of the elementwise ops with
/// two or more operands (add, sub, mul, div, pow, maximum, minimum, equal, less, greater, and
/// where's a and b), where PyTorch takes a Python scalar. Every other operand needs a tensor, as
/// in PyTorch: unary ops, GEMMs, reductions, `where`'s cond, `gather`'s indices.
bool takesLiteral(const OpInfo &op, size_t i);

/// Checks and types the literal operands of a node of `op` about to be made: `literals[i]` is
/// set for each literal operand, `types[i]` holds the type of every other one. On success each
/// literal's `types[i]` becomes its zero-dim type and the result holds its value at `i` (nullopt
/// elsewhere). Every problem is reported (code "literal"), each at `at[i]` of its operand or at
/// `node`: a literal where the op takes none, no tensor operand at all, a literal out of the range
/// of the dtype it is stored in. An operand count outside the op's arity is inferType's to
/// report: the literals then get a placeholder type and no value.
Expected<std::vector<std::optional<TensorData>>>
typeLiterals(const OpInfo &op, std::span<TensorType> types,
             std::span<const std::optional<Literal>> literals, std::span<const Location> at,
             const Location &node);

/// "y.b": the name a literal that is operand `i` of `op` in the node defining `%reader` is given,
/// or a free variant of it (the caller makes it unique).
std::string literalName(std::string_view reader, const OpInfo &op, size_t i);

/// Appends a literal node: a `constant` of `value` (zero-dim) marked with `kind` (or Floating
/// where the value reads back only as a float: an integer beyond int64 once rounded to f32), its
/// result named `name` (which must be free); returns the result.
ValueId addLiteral(Graph &g, DTypeCategory kind, TensorData value, std::string name, Location loc);

/// Whether `v` is a literal's result.
bool isLiteral(const Graph &g, ValueId v);

/// Adds operand `v` to `rt`: a literal as a wrapped number of its kind, any other value as a
/// tensor (dimensioned or zero-dim).
void addOperandType(ResultType &rt, const Graph &g, ValueId v);

/// Stores literal `v` in `dtype` (its text re-read in `dtype`, converted as `cast` converts)
/// for a reader that now computes in `dtype`. Its kind drops to what it can still be written as:
/// a float literal converted to an integer dtype by a pin reads back as an integer, one that no
/// longer fits as `inf`.
void retypeLiteral(Graph &g, ValueId v, DType dtype);

/// The literal `v` holds, as it prints (Literal::str()).
Literal literalOf(const Graph &g, ValueId v);

}  // namespace ferry
