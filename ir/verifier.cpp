// ir/verifier.cpp — checks every structural and type invariant of a graph, reporting all
// violations, each once: a node reading a value whose type is wrong is not checked. Safe on any
// graph: it never follows an id before checking it.
#include "ir/verifier.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>

#include "ir/literal.h"

namespace ferry {

namespace {

std::string ref(const Graph &g, ValueId v) { return "%" + g.value(v).name; }

// Reports attribute lists that do not match the schema; true when they do.
bool checkAttrs(const Node &n, DiagnosticEngine &diags) {
  const OpInfo &op = n.info();
  if (n.attrs.size() != op.attrs.size()) {
    diags.error("verify", n.loc,
                "'" + std::string(op.name) + "' has " + std::to_string(n.attrs.size()) +
                    " attribute values, its schema " + std::to_string(op.attrs.size()));
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < op.attrs.size(); ++i) {
    if (attrKind(n.attrs[i]) == op.attrs[i].kind) continue;
    ok = false;
    diags.error("verify", n.loc,
                "attribute '" + op.attrs[i].name + "' of '" + std::string(op.name) + "' is " +
                    std::string(attrKindName(attrKind(n.attrs[i]))) + ", expected " +
                    std::string(attrKindName(op.attrs[i].kind)));
  }
  return ok;
}

// Names are unique when the graph's name index finds every value under its own name: the index
// refuses a taken name, so only a name written past Graph::rename can break it. That costs one
// probe of the index per value; the diagnosis below runs only when a probe fails.
void checkNamesUnique(const Graph &g, DiagnosticEngine &diags) {
  const auto n = static_cast<ValueId>(g.valueCount());
  const ValueId firstStray = g.firstUnindexedName();
  if (firstStray == n) return;
  std::unordered_map<std::string_view, ValueId> first;
  first.reserve(g.valueCount());
  bool twice = false;
  for (ValueId v = 0; v < n; ++v) {
    const std::string &name = g.value(v).name;
    if (!first.emplace(name, v).second) {
      diags.error("verify", {}, "value name %" + name + " is used twice");
      twice = true;
    }
  }
  if (!twice)
    for (ValueId v = firstStray; v < n; ++v)
      if (!g.nameIndexed(v))
        diags.error("verify", {},
                    "value %" + g.value(v).name +
                        " is not found under its name: it was renamed past Graph::rename");
}

// A node's type against what its op gives (operands and attributes checked already): reports a
// mismatch, recording it in `found` unless it is structural; true when the result's type holds.
bool checkType(const Graph &g, const Node &n, std::span<const TensorType> types,
               DiagnosticEngine &diags, Verification &found) {
  const size_t at = diags.diagnostics().size();
  const TensorType &type = g.value(n.result).type;
  InferResult r = inferType(n.info(), types, n.attrs);
  if (const auto *t = std::get_if<TensorType>(&r)) {
    if (*t == type) return true;
    diags.error("type", n.loc,
                ref(g, n.result) + " is typed " + type.str() + " but '" +
                    std::string(n.info().name) + "' gives " + t->str());
    found.typeErrors.push_back({n.id, at, false});
    return false;
  }
  const InferError &err = std::get<InferError>(r);
  diags.error(err.code, n.loc, err.message);
  if (err.code == "arity") return false;  // operands off the op's spec: no pass can read the node
  const std::optional<TensorType> fixed = inferTypeWithKindsFixed(n.info(), types, n.attrs);
  const bool holds = fixed && *fixed == type;
  found.typeErrors.push_back({n.id, at, holds});
  return holds;
}

}  // namespace

Verification verifyGraph(const Graph &g) {
  Verification found;
  DiagnosticEngine diags;
  const auto valueCount = static_cast<ValueId>(g.valueCount());
  std::vector<bool> defined(g.valueCount(), false);
  // Results whose type cannot be trusted: their readers are not checked (no cascades).
  std::vector<bool> untyped(g.valueCount(), false);

  for (ValueId v = 0; v < valueCount; ++v) {
    const Value &val = g.value(v);
    if (val.name.empty()) diags.error("verify", {}, "value #" + std::to_string(v) + " has no name");
    if (std::string why = typeLimitError(val.type.dtype, val.type.shape); !why.empty())
      diags.error("verify", {}, ref(g, v) + " is " + val.type.str() + ", which " + why);
  }
  checkNamesUnique(g, diags);
  for (const InputDecl &in : g.inputs()) {
    if (in.value < 0 || in.value >= valueCount) {
      diags.error("verify", in.loc, "input refers to no value");
      continue;
    }
    defined[in.value] = true;
    if (g.value(in.value).device && *g.value(in.value).device != in.device)
      diags.error("verify", in.loc,
                  "input " + ref(g, in.value) + " is declared on " + in.device.str() +
                      " but its value is on " + g.value(in.value).device->str());
  }
  for (const ParamDecl &p : g.params()) {
    if (p.value < 0 || p.value >= valueCount) {
      diags.error("verify", p.loc, "param refers to no value");
      continue;
    }
    defined[p.value] = true;
    if (p.data.type() != g.value(p.value).type)
      diags.error("verify", p.loc,
                  "param " + ref(g, p.value) + " is typed " + g.value(p.value).type.str() +
                      " but its data is " + p.data.type().str());
  }

  std::vector<TensorType> types;  // reused: assigning keeps each shape's storage
  std::vector<uint8_t> literalReads(g.valueCount(), 0);
  for (NodeId id : g.order()) {
    if (id < 0 || static_cast<size_t>(id) >= g.nodeCount()) {
      diags.error("verify", {}, "order refers to node #" + std::to_string(id) + ", which is not");
      continue;
    }
    const Node &n = g.node(id);
    auto opName = [&n] { return std::string(n.info().name); };
    bool operandsOk = true, trusted = true;
    types.resize(n.operands.size());
    for (size_t i = 0; i < n.operands.size(); ++i) {
      ValueId o = n.operands[i];
      if (o < 0 || o >= valueCount) {
        diags.error("verify", n.loc,
                    "operand " + std::to_string(i) + " of '" + opName() + "' refers to no value");
        operandsOk = false;
        continue;
      }
      if (!defined[o]) {
        diags.error("verify", n.loc,
                    "operand " + std::to_string(i) + " of '" + opName() + "' " + ref(g, o) +
                        " is used before it is defined");
        operandsOk = false;
      }
      trusted = trusted && !untyped[o];
      types[i] = g.value(o).type;
      // A literal prints inline at its reader: one reader, an operand that takes a literal.
      if (defined[o] && isLiteral(g, o)) {
        if (literalReads[o] < 2 && ++literalReads[o] == 2)
          diags.error("verify", n.loc, "literal " + ref(g, o) + " is read more than once");
        if (!takesLiteral(n.info(), i))
          diags.error("verify", n.loc,
                      "literal " + ref(g, o) + " is operand " + std::to_string(i) + " of '" +
                          opName() + "', which takes no literal");
      }
    }
    if (n.result < 0 || n.result >= valueCount || g.value(n.result).def != id ||
        g.value(n.result).kind != ValueKind::Result) {
      diags.error("verify", n.loc, "'" + opName() + "' has no result value of its own");
      continue;
    }
    if (defined[n.result]) {
      diags.error("verify", n.loc, ref(g, n.result) + " is defined twice");
      continue;
    }
    defined[n.result] = true;
    if (n.literal && (n.op != OpKind::Constant || g.value(n.result).type.rank() != 0 ||
                      *n.literal > dtypeCategory(g.value(n.result).type.dtype)))
      diags.error("verify", n.loc,
                  "literal " + ref(g, n.result) + " is '" + opName() + "' of " +
                      g.value(n.result).type.str() +
                      ": a literal is a zero-dim constant whose dtype holds its kind");
    // The shape rule may only run on operands and attributes it can trust; a node reading a value
    // whose type is wrong would only repeat that mistake.
    if (!checkAttrs(n, diags) || !operandsOk || !trusted) {
      untyped[n.result] = true;
      continue;
    }
    untyped[n.result] = !checkType(g, n, types, diags, found);
  }

  if (g.outputs().empty()) diags.error("verify", {}, "graph '" + g.name() + "' has no outputs");
  for (const OutputDecl &out : g.outputs()) {
    if (out.value < 0 || out.value >= valueCount || !defined[out.value])
      diags.error("verify", out.loc, "output refers to an undefined value");
    else if (isLiteral(g, out.value))
      diags.error("verify", out.loc, "literal " + ref(g, out.value) + " is an output");
  }
  found.structural = static_cast<size_t>(diags.errorCount()) > found.typeErrors.size();
  found.diagnostics = diags.take();
  return found;
}

Status verify(const Graph &g) {
  Verification v = verifyGraph(g);
  if (v.diagnostics.empty()) return {};
  return Status(std::move(v.diagnostics));
}

}  // namespace ferry
