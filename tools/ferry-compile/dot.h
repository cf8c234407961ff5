// tools/ferry-compile/dot.h — a graph as Graphviz DOT (ferry-compile --emit dot|svg).
#pragma once

#include <string>
#include <vector>

#include "ir/diagnostics.h"
#include "tools/ferry-compile/dot_chains.h"
#include "tools/ferry-compile/emit.h"

namespace ferry {

struct DotOptions : EmitOptions {
  /// Devices in the order their clusters get colours (CompileOptions::devices); others follow
  /// in order of appearance.
  std::vector<Device> devices;
  /// A rejected compile's diagnostics: the nodes at their errors' locations are drawn in red
  /// with the messages as tooltip.
  std::vector<Diagnostic> diagnostics;
};

/// Value names longer than this are shortened in labels (first 20 and last 9 characters around
/// "..."); the tooltip then starts with the whole name.
inline constexpr size_t kMaxNameChars = 32;

/// A Graphviz digraph: one cluster per device (coloured, labelled @device) holding the inputs,
/// params and ops placed there; values without a device yet (a graph stopped before placement)
/// outside. Ops are boxes labelled `%name = op`, their type and pins and non-default attributes;
/// casts are hexagons with their dtypes and bytes; nodes the compiler inserted are dashed.
/// A transfer is a small red point in its destination's cluster: one bold red edge carries the
/// copy into it, labelled with the destination, bytes per run and type, and its users read from
/// it, so the picture shows as many bold edges as the graph has transfers. A chain of more than
/// kMaxChainDrawn nodes (dot_chains.h) is one box `k nodes: ops (%first .. %last)`. Edges carry
/// dtype[shape]; tooltips the source location and why the value is on its device. A legend
/// closes the graph. Ids come from value and node ids: the same graph gives the same text byte
/// for byte.
std::string emitDot(const Graph &graph, const DotOptions &options = {});

}  // namespace ferry
