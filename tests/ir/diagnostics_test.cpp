// tests/ir/diagnostics_test.cpp — diagnostics collection and clang-style / JSON rendering.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/scratch.h"
#include "ir/diagnostics.h"
#include "ir/status.h"

namespace ferry {
namespace {

TEST(Diagnostics, EngineCollectsEveryFindingAndCountsErrors) {
  DiagnosticEngine diags;
  diags.warning("device", {"a.fy", 1, 2}, "first");
  diags.error("shape", {"a.fy", 3, 4}, "second").note("detail").fix("do this");
  diags.error("dtype", {}, "third");
  EXPECT_TRUE(diags.hasErrors());
  EXPECT_EQ(diags.errorCount(), 2);
  ASSERT_EQ(diags.diagnostics().size(), 3u);
  EXPECT_EQ(diags.diagnostics()[1].notes[0].message, "detail");
  std::vector<Diagnostic> taken = diags.take();
  EXPECT_EQ(taken.size(), 3u);
  EXPECT_FALSE(diags.hasErrors());
}

TEST(Diagnostics, RendersClangStyleWithNotesAndFixes) {
  Diagnostic d{Severity::Error,
               "device",
               {"mlp.cpp", 42, 7},
               "operands of 'linear' (%h1) are on different devices: cpu and cuda:0",
               {},
               {}};
  d.note("operand 0 %x f32[32,784] @cpu input 'x'");
  d.note("declared here", {"mlp.cpp", 30, 12});
  d.fix("move 'x' to cuda:0");
  EXPECT_EQ(renderText(d, {.snippet = false}),
            "mlp.cpp:42:7: error: operands of 'linear' (%h1) are on different devices: cpu and "
            "cuda:0 [device]\n"
            "  operand 0 %x f32[32,784] @cpu input 'x'\n"
            "mlp.cpp:30:12: note: declared here\n"
            "  fix: move 'x' to cuda:0\n");
}

TEST(Diagnostics, LocationSpelling) {
  EXPECT_EQ((Location{"a.fy", 3, 5}.str()), "a.fy:3:5");
  EXPECT_EQ((Location{"a.fy", 3, 0}.str()), "a.fy:3");
  EXPECT_EQ((Location{"a.fy", 0, 0}.str()), "a.fy");
  EXPECT_EQ(Location{}.str(), "<unknown>");
  Diagnostic d{Severity::Warning, "x", {}, "no location", {}, {}};
  EXPECT_EQ(renderText(d), "warning: no location [x]\n");
}

TEST(Diagnostics, SnippetShowsTheLineAndACaretUnderTheColumn) {
  const testutil::ScratchDir dir("diag_snippet");
  auto path = dir / "snippet.fy";
  {
    std::ofstream out(path);
    out << "graph g {\n  %y = relu(%x)\n}\n";
  }
  Diagnostic d{Severity::Error, "name", {path.string(), 2, 13}, "undefined value %x", {}, {}};
  EXPECT_EQ(renderText(d), path.string() + ":2:13: error: undefined value %x [name]\n"
                                           "    %y = relu(%x)\n"
                                           "              ^\n");
  // A location past the end of the file renders without a snippet rather than failing.
  d.loc.line = 99;
  EXPECT_EQ(renderText(d), path.string() + ":99:13: error: undefined value %x [name]\n");
  std::filesystem::remove(path);
}

TEST(Diagnostics, JsonEscapesAndListsEveryField) {
  Diagnostic d{Severity::Error, "parse", {"we\"ird\\.fy", 1, 2}, "bad\ttoken\n", {}, {}};
  d.note("n", {"f.fy", 3, 4});
  d.fix("f");
  std::string json = renderJson(std::vector<Diagnostic>{d});
  EXPECT_EQ(json,
            "[\n {\"severity\": \"error\", \"code\": \"parse\", \"file\": \"we\\\"ird\\\\.fy\", "
            "\"line\": 1, \"col\": 2, \"message\": \"bad\\ttoken\\n\", \"notes\": [{\"message\": "
            "\"n\", \"file\": \"f.fy\", \"line\": 3, \"col\": 4}], \"fixes\": [\"f\"]}\n]");
  EXPECT_EQ(renderJson(std::vector<Diagnostic>{}), "[]");
}

TEST(Status, CarriesDiagnosticsAndRendersThem) {
  Status ok;
  EXPECT_TRUE(ok.ok());
  Status bad = makeError("options", "unknown policy 'sideways'");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.message(), "error: unknown policy 'sideways' [options]");
  Expected<int> e = bad;
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.status().diagnostics()[0].code, "options");
  Expected<int> v = 3;
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 3);
}

Status failsThenPropagates(bool fail) {
  FERRY_TRY(fail ? makeError("x", "inner") : Status());
  return makeError("y", "reached the end");
}

TEST(Status, TryReturnsTheFirstFailure) {
  EXPECT_EQ(failsThenPropagates(true).diagnostics()[0].code, "x");
  EXPECT_EQ(failsThenPropagates(false).diagnostics()[0].code, "y");
}

TEST(CheckDeathTest, AbortsWithFileLineAndReason) {
  EXPECT_DEATH({ FERRY_CHECK(1 + 1 == 3) << "arithmetic is broken"; },
               "diagnostics_test.cpp:[0-9]+: internal error: check failed: 1 \\+ 1 == 3: "
               "arithmetic is broken");
}

// File names are interned for the life of the process, and names come from files: past
// FileName::kMaxInternedBytes of them, a new name is kept as kOverflowName, so reading hostile
// files forever cannot grow memory forever. In a child process (the table is the process's).
TEST(DiagnosticsDeathTest, InternedFileNamesStopAtTheirBound) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const FileName first("model.fy");
        const std::string big(64 * 1024, 'x');
        int kept = 0;
        for (int i = 0; i < 2000; ++i) {
          const std::string name = std::to_string(i) + big;
          if (FileName(name).view() == name) ++kept;
        }
        // Up to the bound, each name is kept; past it, the overflow name stands in. Names
        // already kept stay what they were.
        const bool bounded = kept > 900 && kept < 1024 &&
                             FileName(std::to_string(1999) + big).view() == FileName::kOverflowName &&
                             FileName("model.fy") == first && first.view() == "model.fy" &&
                             FileName("0" + big).view() == "0" + big;
        std::fprintf(stderr, "kept %d names\n", kept);
        std::exit(bounded ? 0 : 1);
      },
      testing::ExitedWithCode(0), "kept [0-9]+ names");
}

}  // namespace
}  // namespace ferry
