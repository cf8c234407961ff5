// tests/tools/ferry_compile_test.cpp — runs the ferry-compile binary on good and bad models.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ferry {
namespace {

namespace fs = std::filesystem;

constexpr const char *kMlp = R"(# a small perceptron
graph mlp {
  input %x : f32[4,8] @cpu
  param %w1 : f32[16,8] = randn(seed=1)
  param %b1 : f32[16] = zeros
  param %w2 : f32[3,16] = randn(seed=2)
  %h = linear(%x, %w1, %b1)
  %a = relu(%h)
  %y = linear(%a, %w2)
  output %y
}
)";

// Line 5 adds f32[2,3] and f32[4]: no broadcast exists.
constexpr const char *kShapeError = R"(graph bad {
  input %a : f32[2,3]
  input %b : f32[4]
  %ok = relu(%a)
  %c = add(%a, %b)
  output %c
}
)";

struct Result {
  int exit = -1;
  std::string out;
  std::string err;
};

std::string readFile(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t count(const std::string &s, std::string_view part) {
  size_t n = 0;
  for (size_t i = s.find(part); i != std::string::npos; i = s.find(part, i + part.size())) ++n;
  return n;
}

bool contains(const std::string &s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

// Single quotes for the shell (paths of the temporary folder).
std::string shellQuote(const std::string &s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class FerryCompile : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("ferry_compile_test." + std::to_string(::getpid()) + "." + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string write(const std::string &name, const std::string &text) {
    fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }

  // Runs ferry-compile with `args` (already shell-quoted where needed).
  Result run(const std::string &args) {
    std::string cmd = shellQuote(FERRY_COMPILE) + " " + args + " >" +
                      shellQuote((dir_ / "stdout").string()) + " 2>" +
                      shellQuote((dir_ / "stderr").string());
    int status = std::system(cmd.c_str());
    Result r;
    r.exit = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = readFile(dir_ / "stdout");
    r.err = readFile(dir_ / "stderr");
    return r;
  }

  fs::path dir_;
};

TEST_F(FerryCompile, EmitsTextByDefault) {
  std::string model = write("mlp.fy", kMlp);
  Result r = run(shellQuote(model));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(r.out.starts_with("graph mlp {\n")) << r.out;
  // Inferred types are written out, with each statement's location.
  EXPECT_TRUE(contains(r.out, "%h : f32[4,16] = linear(%x, %w1, %b1)")) << r.out;
  EXPECT_TRUE(contains(r.out, "%y : f32[4,3] = linear(%a, %w2)")) << r.out;
  EXPECT_TRUE(contains(r.out, "mlp.fy:7:")) << r.out;
  EXPECT_TRUE(contains(r.out, "output %y")) << r.out;

  Result same = run("--emit text " + shellQuote(model));
  EXPECT_EQ(same.exit, 0);
  EXPECT_EQ(same.out, r.out);
  Result bare = run("--no-locations " + shellQuote(model));
  ASSERT_EQ(bare.exit, 0) << bare.err;
  EXPECT_TRUE(contains(bare.out, "%h : f32[4,16] = linear(%x, %w1, %b1)\n")) << bare.out;
  EXPECT_FALSE(contains(bare.out, "mlp.fy")) << bare.out;
}

TEST_F(FerryCompile, EmitsDot) {
  std::string model = write("mlp.fy", kMlp);
  Result r = run("--emit dot " + shellQuote(model));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("digraph \"mlp\" {\n")) << r.out;
  EXPECT_TRUE(r.out.ends_with("}\n"));
  EXPECT_TRUE(contains(r.out, "label=\"%h = linear\\nf32[4,16]\"")) << r.out;
  EXPECT_TRUE(contains(r.out, "shape=invhouse, label=\"input %x\\nf32[4,8] @cpu\"")) << r.out;
  EXPECT_TRUE(contains(r.out, "shape=cylinder, label=\"param %w1\\nf32[16,8]\"")) << r.out;
  EXPECT_TRUE(contains(r.out, "shape=house, label=\"output %y\"")) << r.out;
  // Edges: 3 + 1 + 2 operands and one to the output, each labelled with its type.
  EXPECT_EQ(count(r.out, " -> "), 7u) << r.out;
  EXPECT_EQ(count(r.out, "-> n0 [label=\"f32[4,8]\"]"), 1u) << r.out;
  EXPECT_EQ(count(r.out, " [label=\"f32[4,16]\"]"), 2u) << r.out;  // %h and %a
  EXPECT_EQ(count(r.out, "-> out0 [label=\"f32[4,3]\"]"), 1u) << r.out;
  EXPECT_TRUE(contains(r.out, "tooltip=\"")) << r.out;
  // The same input gives the same bytes.
  EXPECT_EQ(run("--emit dot " + shellQuote(model)).out, r.out);
  EXPECT_FALSE(contains(run("--emit dot --no-locations " + shellQuote(model)).out, "tooltip"));
}

TEST_F(FerryCompile, EmitsJson) {
  std::string model = write("mlp.fy", kMlp);
  Result r = run("--emit json " + shellQuote(model));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("{\n  \"format\": \"ferry.graph\",\n  \"version\": 1,\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "\"graph\": \"mlp\"")) << r.out;
  EXPECT_EQ(count(r.out, "\"op\": "), 3u) << r.out;
  EXPECT_TRUE(contains(r.out, "\"op\": \"relu\", \"result\": \"a\", \"type\": {\"dtype\": \"f32\", "
                              "\"shape\": [4, 16]}, \"operands\": [\"h\"], \"attrs\": {}, "
                              "\"device\": null"))
      << r.out;
  EXPECT_TRUE(
      contains(r.out, "\"name\": \"w1\", \"type\": {\"dtype\": \"f32\", \"shape\": [16, 8]}"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "\"init\": \"randn\", \"seed\": 1")) << r.out;
  EXPECT_TRUE(contains(r.out, "mlp.fy:8:")) << r.out;
  EXPECT_EQ(count(r.out, "{"), count(r.out, "}"));
  EXPECT_EQ(count(r.out, "["), count(r.out, "]"));

  Result bare = run("--emit json --no-locations " + shellQuote(model));
  ASSERT_EQ(bare.exit, 0) << bare.err;
  EXPECT_FALSE(contains(bare.out, "mlp.fy")) << bare.out;
  EXPECT_EQ(count(bare.out, "\"location\": null"), 1u + 3u + 3u + 1u) << bare.out;
}

TEST_F(FerryCompile, WritesToTheOutputFile) {
  std::string model = write("mlp.fy", kMlp);
  std::string target = (dir_ / "out.dot").string();
  Result r = run("--emit dot -o " + shellQuote(target) + " " + shellQuote(model));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(readFile(target).starts_with("digraph \"mlp\" {"));

  Result bad = run("-o " + shellQuote((dir_ / "no" / "such" / "dir.txt").string()) + " " +
                   shellQuote(model));
  EXPECT_EQ(bad.exit, 2);
  EXPECT_TRUE(contains(bad.err, "cannot write")) << bad.err;
}

TEST_F(FerryCompile, ExampleModelCompilesInEveryFormat) {
  fs::path example = fs::path(FERRY_SOURCE_DIR) / "examples" / "mlp.fy";
  if (!fs::exists(example)) GTEST_SKIP() << example << " is not there";
  for (const char *mode : {"text", "dot", "json"}) {
    Result r = run(std::string("--emit ") + mode + " " + shellQuote(example.string()));
    EXPECT_EQ(r.exit, 0) << mode << ": " << r.err;
    EXPECT_EQ(r.err, "") << mode;
    EXPECT_FALSE(r.out.empty()) << mode;
  }
}

TEST_F(FerryCompile, MissingFileIsAUsageError) {
  std::string missing = (dir_ / "x.fy").string();
  Result r = run(shellQuote(missing));
  EXPECT_EQ(r.exit, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "ferry-compile: error: cannot read '" + missing + "': No such file or directory\n");
  Result dir = run(shellQuote(dir_.string()));
  EXPECT_EQ(dir.exit, 2);
  EXPECT_TRUE(contains(dir.err, "Is a directory")) << dir.err;
}

TEST_F(FerryCompile, BadOptionsAreUsageErrors) {
  std::string model = write("mlp.fy", kMlp);
  Result png = run("--emit png " + shellQuote(model));
  EXPECT_EQ(png.exit, 2);
  EXPECT_EQ(png.out, "");
  EXPECT_EQ(count(png.err, "\n"), 1u) << png.err;
  EXPECT_TRUE(contains(png.err, "png")) << png.err;
  EXPECT_TRUE(contains(png.err, "--emit")) << png.err;

  Result none = run("");
  EXPECT_EQ(none.exit, 2);
  EXPECT_TRUE(contains(none.err, "required")) << none.err;
  Result unknown = run("--bogus " + shellQuote(model));
  EXPECT_EQ(unknown.exit, 2);
  EXPECT_TRUE(contains(unknown.err, "--bogus")) << unknown.err;
  Result diag = run("--diagnostics xml " + shellQuote(model));
  EXPECT_EQ(diag.exit, 2);
}

TEST_F(FerryCompile, HelpListsEveryOption) {
  Result r = run("--help");
  EXPECT_EQ(r.exit, 0);
  for (const char *s : {"MODEL.fy", "--emit", "text,dot,json", "-o,--output", "--diagnostics",
                        "--no-locations", "Exit status"})
    EXPECT_TRUE(contains(r.out, s)) << s << " missing from:\n" << r.out;
}

TEST_F(FerryCompile, ShapeErrorIsRejectedWithItsLocation) {
  std::string model = write("bad.fy", kShapeError);
  Result r = run("--emit json " + shellQuote(model));
  EXPECT_EQ(r.exit, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, model + ":5:")) << r.err;
  EXPECT_TRUE(contains(r.err, ": error: ")) << r.err;
  EXPECT_TRUE(contains(r.err, "[shape]")) << r.err;
  EXPECT_TRUE(contains(r.err, "[2,3]") && contains(r.err, "[4]")) << r.err;
  // The snippet shows the offending line.
  EXPECT_TRUE(contains(r.err, "  %c = add(%a, %b)\n")) << r.err;
  EXPECT_EQ(count(r.err, ": error: "), 1u) << r.err;
}

TEST_F(FerryCompile, ParseErrorsAreAllReported) {
  std::string model = write("typo.fy", "graph g {\n  input %x : f32[2]\n  %y = rleu(%x)\n"
                                       "  %z = relu(%nope)\n  output %x\n}\n");
  Result r = run(shellQuote(model));
  EXPECT_EQ(r.exit, 1);
  EXPECT_TRUE(contains(r.err, model + ":3:")) << r.err;
  EXPECT_TRUE(contains(r.err, model + ":4:")) << r.err;
}

TEST_F(FerryCompile, DiagnosticsAsJson) {
  std::string model = write("bad.fy", kShapeError);
  Result r = run("--diagnostics json " + shellQuote(model));
  EXPECT_EQ(r.exit, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(r.err.starts_with("[")) << r.err;
  EXPECT_TRUE(r.err.ends_with("]\n")) << r.err;
  EXPECT_EQ(count(r.err, "\"severity\": \"error\""), 1u) << r.err;
  EXPECT_TRUE(contains(r.err, "\"code\": \"shape\"")) << r.err;
  EXPECT_TRUE(contains(r.err, "\"line\": 5")) << r.err;
  EXPECT_TRUE(contains(r.err, "\"file\": \"" + model + "\"")) << r.err;

  Result missing = run("--diagnostics json " + shellQuote((dir_ / "x.fy").string()));
  EXPECT_EQ(missing.exit, 2);
  EXPECT_TRUE(contains(missing.err, "\"code\": \"io\"")) << missing.err;
  EXPECT_TRUE(contains(missing.err, "No such file or directory")) << missing.err;
}

}  // namespace
}  // namespace ferry
