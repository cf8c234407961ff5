// tools/ferry-compile/dot.h — a graph as Graphviz DOT (ferry-compile --emit dot|svg).
#pragma once

#include <string>
#include <vector>

#include "ir/diagnostics.h"
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

/// A Graphviz digraph: one cluster per device (coloured, labelled @device) holding the inputs,
/// params and ops placed there; values without a device yet (a graph stopped before placement)
/// outside. Ops are boxes labelled `%name = op`, their type and pins and non-default attributes;
/// casts are hexagons with their dtypes and bytes; nodes the compiler inserted are dashed.
/// Transfers are not boxes but bold red edges from the value's origin to each user, labelled
/// with the destination and bytes per run, crossing the clusters. Edges carry dtype[shape];
/// tooltips the source location and why the value is on its device. A legend closes the
/// graph. Ids come from value and node ids: the same graph gives the same text byte for byte.
std::string emitDot(const Graph &graph, const DotOptions &options = {});

}  // namespace ferry
