// tests/ir/roundtrip_test.cpp — print(parse(print(g))) == print(g) over the examples and over
// hundreds of random graphs, with locations on and off; saveModel + parseFile give back the graph.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "common/random_graph.h"
#include "common/scratch.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;

constexpr int kRandomGraphs = 500;

std::vector<fs::path> exampleFiles() {
  std::vector<fs::path> files;
  for (const auto &entry : fs::directory_iterator(FERRY_SOURCE_DIR "/examples"))
    if (entry.path().extension() == ".fy") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string readText(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(RoundTrip, Examples) {
  std::vector<fs::path> files = exampleFiles();
  std::set<std::string> names;
  for (const fs::path &f : files) names.insert(f.filename().string());
  for (const char *want : {"mlp.fy", "cnn.fy", "ops.fy"}) EXPECT_TRUE(names.count(want)) << want;
  for (const fs::path &file : files) {
    SCOPED_TRACE(file.string());
    ParseOptions options{.baseDir = file.parent_path().string()};
    Expected<Graph> g = parseGraph(readText(file), file.filename().string(), options);
    ASSERT_TRUE(g.ok()) << g.status().message();
    for (bool locations : {false, true}) {
      std::string once = printGraph(*g, {.locations = locations});
      Expected<Graph> again = parseGraph(once, "again.fy", options);
      ASSERT_TRUE(again.ok()) << again.status().message() << "\n" << once;
      EXPECT_EQ(printGraph(*again, {.locations = locations}), once);
      if (locations) {
        EXPECT_EQ(testutil::graphDifference(*g, *again), "");
      }
    }
  }
}

TEST(RoundTrip, ExampleOpsUsesEveryOp) {
  Expected<Graph> g = parseFile(FERRY_SOURCE_DIR "/examples/ops.fy");
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::set<OpKind> used;
  for (NodeId n : g->order()) used.insert(g->node(n).op);
  for (const OpInfo &op : allOps()) EXPECT_TRUE(used.count(op.kind)) << op.name;
}

// Every random graph: printed without locations, read back and printed again, is the same text;
// and with all locations known, the graph read back is the graph itself, locations included.
TEST(RoundTrip, RandomGraphs) {
  const testutil::ScratchDir scratch("roundtrip_random");
  const fs::path &dir = scratch.path();
  std::set<OpKind> ops;
  std::set<Initializer::Kind> inits;
  for (uint64_t seed = 0; seed < kRandomGraphs; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    bool allKnown = seed % 2 == 0;
    Graph g = testutil::randomGraph(seed, {.unknownLocationRate = allKnown ? 0.0 : 0.3});
    for (NodeId n : g.order()) ops.insert(g.node(n).op);
    for (const ParamDecl &p : g.params()) inits.insert(p.init.kind);
    // Npy params read their files; printed alone, large Data params print inline; saved, they
    // and the Npy params go to g.params/.
    fs::path sub = dir / std::to_string(seed);
    fs::create_directories(sub);
    testutil::writeNpyParams(g, sub.string());
    ASSERT_TRUE(saveModel(g, (sub / "g.fy").string()).ok());
    ParseOptions options{.baseDir = sub.string()};
    for (bool locations : {false, true}) {
      std::string once = printGraph(g, {.locations = locations});
      Expected<Graph> g2 = parseGraph(once, "g.fy", options);
      ASSERT_TRUE(g2.ok()) << g2.status().message() << "\n" << once;
      std::string twice = printGraph(*g2, {.locations = locations});
      if (locations && !allKnown) {
        // Statements without a location get their line in the text: one more round is stable.
        Expected<Graph> g3 = parseGraph(twice, "g.fy", options);
        ASSERT_TRUE(g3.ok()) << g3.status().message();
        EXPECT_EQ(printGraph(*g3, {.locations = true}), twice);
      } else {
        ASSERT_EQ(twice, once);
      }
      if (locations && allKnown) {
        ASSERT_EQ(testutil::graphDifference(g, *g2), "") << once;
      }
    }
    if (allKnown) {
      Expected<Graph> fromFile = parseFile((sub / "g.fy").string());
      ASSERT_TRUE(fromFile.ok()) << fromFile.status().message();
      EXPECT_EQ(testutil::graphDifference(g, *fromFile), "");
    }
    fs::remove_all(sub);
  }
  // The generator reaches every op and every kind of initializer.
  for (const OpInfo &op : allOps()) EXPECT_TRUE(ops.count(op.kind)) << op.name;
  EXPECT_EQ(inits.size(), 5u);
}

// A graph built in C++ with a weight too large to print inline: printed alone, it reads back with
// no file beside it; saved, it reads back from its params folder; two models saved into one
// folder keep their own weights.
TEST(RoundTrip, LargeDataParamOfABuiltGraph) {
  const testutil::ScratchDir scratch("roundtrip_large_data");
  const fs::path &dir = scratch.path();
  auto build = [](double scale) {
    Graph g("built");
    ValueId x = g.addInput("x", {DType::F32, {4, 1000}}, Device::cpu(), {"m.cpp", 2, 1});
    TensorData w(DType::F32, {5, 1000});
    for (int64_t i = 0; i < w.numel(); ++i) w.set(i, static_cast<double>(i % 113) * scale);
    ValueId p = g.addParam("fc.weight", w, {}, std::nullopt, {"m.cpp", 3, 1});
    Expected<Attrs> attrs = makeAttrs(opInfo(OpKind::Linear), {}, {});
    FERRY_CHECK(attrs.ok()) << attrs.status().message();
    NodeId n = g.addNode({OpKind::Linear, {x, p}, *attrs, {}, {}, {"m.cpp", 4, 1}}, "y",
                         {DType::F32, {4, 5}});
    g.addOutput(g.node(n).result, std::nullopt, {"m.cpp", 5, 1});
    return g;
  };
  const Graph a = build(0.5), b = build(-0.25);
  ASSERT_TRUE(verify(a).ok()) << verify(a).message();

  // Alone (standard output): read back with nothing beside it.
  const std::string alone = printGraph(a);
  Expected<Graph> fromText = parseGraph(alone, "a.fy", {.baseDir = (dir / "nothing").string()});
  ASSERT_TRUE(fromText.ok()) << fromText.status().message();
  EXPECT_EQ(testutil::graphDifference(a, *fromText), "");

  // Saved: each model's weight in its own folder.
  ASSERT_TRUE(saveModel(a, (dir / "a.fy").string()).ok());
  ASSERT_TRUE(saveModel(b, (dir / "b.fy").string()).ok());
  for (const auto &[file, g] : {std::pair<const char *, const Graph *>{"a.fy", &a}, {"b.fy", &b}}) {
    SCOPED_TRACE(file);
    Expected<Graph> back = parseFile((dir / file).string());
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(testutil::graphDifference(*g, *back), "");
  }
  EXPECT_TRUE(fs::exists(dir / "a.params/fc.weight.npy"));
  EXPECT_TRUE(fs::exists(dir / "b.params/fc.weight.npy"));
}

TEST(RoundTrip, RandomGraphsAreDeterministic) {
  for (uint64_t seed : {1u, 77u, 123456u})
    EXPECT_EQ(printGraph(testutil::randomGraph(seed)), printGraph(testutil::randomGraph(seed)));
  EXPECT_NE(printGraph(testutil::randomGraph(1)), printGraph(testutil::randomGraph(2)));
}

TEST(RoundTrip, InlineLimitOnlyChangesSpelling) {
  const testutil::ScratchDir scratch("roundtrip_inline");
  const fs::path &dir = scratch.path();
  for (uint64_t seed = 1000; seed < 1020; ++seed) {
    Graph g = testutil::randomGraph(seed, {.npyParams = false, .maxDataElements = 200});
    const fs::path sub = dir / std::to_string(seed);  // a params folder is never written over
    fs::create_directories(sub);
    ASSERT_TRUE(saveModel(g, (sub / "g.fy").string(), {.inlineLimit = 0}).ok());
    Expected<Graph> small = parseFile((sub / "g.fy").string());
    ASSERT_TRUE(small.ok()) << small.status().message();
    ASSERT_TRUE(saveModel(g, (sub / "h.fy").string(), {.inlineLimit = 1000}).ok());
    Expected<Graph> big = parseFile((sub / "h.fy").string());
    ASSERT_TRUE(big.ok()) << big.status().message();
    for (size_t i = 0; i < g.params().size(); ++i) {
      EXPECT_TRUE(small->params()[i].data == g.params()[i].data);
      EXPECT_TRUE(big->params()[i].data == g.params()[i].data);
    }
  }
}

}  // namespace
}  // namespace ferry
