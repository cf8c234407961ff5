// tools/ferry-compile/svg.h — DOT to SVG through Graphviz's `dot` program.
#pragma once

#include <string>

#include "ir/status.h"

namespace ferry {

/// Renders `dot` (DOT source) as SVG into `path`, or to standard output when `path` is "" or
/// "-", by running Graphviz's `dot -Tsvg`. Errors: `dot` not on PATH (with how to install it),
/// `dot` failing (its exit status), a file that cannot be written.
Status renderSvg(const std::string &dot, const std::string &path);

}  // namespace ferry
