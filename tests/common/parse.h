// tests/common/parse.h — a `.fy` text parsed for a test that expects it to parse: a failure is
// reported with the parser's diagnostics and the test goes on with an empty graph.
#pragma once

#include <gtest/gtest.h>

#include <string_view>

#include "ir/parser.h"

namespace ferry {

inline Graph parseOk(std::string_view text, std::string_view file = "t.fy",
                     const ParseOptions &options = {}) {
  Expected<Graph> g = parseGraph(text, file, options);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? std::move(g).value() : Graph();
}

}  // namespace ferry
