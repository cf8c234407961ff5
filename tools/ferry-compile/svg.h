// tools/ferry-compile/svg.h — DOT to SVG through Graphviz's `dot` program.
#pragma once

#include <string>

#include "ir/status.h"

namespace ferry {

/// Renders `dot` (DOT source) as SVG by running Graphviz's `dot -Tsvg`, and returns the SVG text
/// (the caller writes it, so that nothing is written when dot fails). Errors, each one line (code
/// "io"): `dot` not on PATH (with how to install it), `dot` failing (its exit status and what it
/// printed on stderr, folded into the line).
Expected<std::string> renderSvg(const std::string &dot);

}  // namespace ferry
