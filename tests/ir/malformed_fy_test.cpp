// tests/ir/malformed_fy_test.cpp — malformed `.fy` inputs: each gives exactly one diagnostic at
// the exact line:col with the expected code and message; and thousands of random mutations of
// valid texts parse to a result or an error, never a crash or a hang.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/random_graph.h"
#include "ir/parser.h"
#include "ir/printer.h"

namespace ferry {
namespace {

// A graph with input %x : f32[2,3] whose third line is `body`.
std::string G(std::string_view body) {
  return "graph g {\n  input %x : f32[2,3]\n" + std::string(body) + "\n  output %x\n}\n";
}

struct Case {
  std::string name;
  std::string text;
  int line, col;
  std::string code;
  std::string message;  // a key part of the message
};

std::vector<Case> cases() {
  const std::string nested = "  %y = reshape(%x, shape=" + std::string(100000, '[') + ")";
  return {
      {"empty input", "", 1, 1, "parse", "expected 'graph NAME {', found the end of the file"},
      {"only comments", "# hi\n\n", 1, 1, "parse", "expected 'graph NAME {'"},
      {"empty graph", "graph g {\n}\n", 2, 1, "parse", "graph 'g' is empty"},
      {"no outputs", "graph g {\n  input %x : f32[2]\n}\n", 3, 1, "parse",
       "graph 'g' has no outputs"},
      {"missing close brace", "graph g {\n  input %x : f32[2]\n  output %x\n", 4, 1, "parse",
       "expected '}' to close graph 'g', found the end of the file"},
      {"content after close brace", "graph g {\n  input %x : f32[2]\n  output %x\n}\nextra\n", 5, 1,
       "parse", "unexpected 'extra' after the closing '}' of graph 'g'"},
      {"graph without name", "graph {\n  input %x : f32[2]\n  output %x\n}\n", 1, 7, "parse",
       "expected a graph name after 'graph', found '{'"},
      {"graph without brace", "graph g\n  input %x : f32[2]\n  output %x\n}\n", 1, 8, "parse",
       "expected '{' after the graph name, found end of line"},
      {"no header", "  input %x : f32[2]\n  output %x\n}\n", 1, 3, "parse",
       "expected 'graph NAME {' at the start of the file, found 'input'"},
      {"second graph", G("  graph h {"), 3, 3, "parse", "a file holds one graph"},
      {"misspelt keyword", G("  imput %y : f32[2]"), 3, 3, "parse",
       "found 'imput'; did you mean 'input'?"},
      {"unknown op", G("  %y = lienar(%x)"), 3, 8, "parse",
       "unknown op 'lienar'; did you mean 'linear'?"},
      {"unknown op far from any", G("  %y = frobnicate(%x)"), 3, 8, "parse",
       "unknown op 'frobnicate'"},
      {"undefined value", G("  %y = relu(%z)"), 3, 13, "name", "use of undefined value %z"},
      {"duplicate node name", G("  %x = relu(%x)"), 3, 3, "name", "redefinition of %x"},
      {"duplicate param name", G("  param %x : f32[2] = zeros"), 3, 9, "name",
       "redefinition of %x"},
      {"use before definition", G("  %y = relu(%z)\n  %z = relu(%x)"), 3, 13, "name",
       "%z is used before its definition at line 4"},
      {"undefined output", "graph g {\n  input %x : f32[2]\n  output %y\n}\n", 3, 10, "name",
       "use of undefined value %y"},
      {"unterminated string", G("  %y = gelu(%x, approximate=\"tanh)"), 3, 29, "parse",
       "unterminated string (missing closing '\"')"},
      {"nested quotes", G("  %y = gelu(%x, approximate=\"ta\"nh\")"), 3, 33, "parse",
       "expected ',' or ')', found 'nh'"},
      {"unknown escape", G("  %y = gelu(%x, approximate=\"t\\q\")"), 3, 31, "parse",
       "unknown escape in string"},
      {"non-UTF-8 byte", G("  %y = relu(%x) \x93"), 3, 17, "parse",
       "unexpected byte 0x93 (not valid UTF-8)"},
      {"NUL byte", G(std::string("  %y = re\0lu(%x)", 16)), 3, 10, "parse",
       "unexpected character byte 0x00"},
      {"stray unicode", G("  %y = relu(%x) \xe2\x88\x98"), 3, 17, "parse",
       "unexpected character '\xe2\x88\x98'"},
      {"empty value name", G("  % = relu(%x)"), 3, 3, "parse", "expected a value name after '%'"},
      {"missing equals", G("  %y relu(%x)"), 3, 6, "parse",
       "expected '=' and an op after %y, found 'relu'"},
      {"missing close paren", G("  %y = relu(%x"), 3, 15, "parse",
       "expected ',' or ')', found end of line"},
      {"two statements on a line", G("  %y = relu(%x) %z = relu(%x)"), 3, 17, "parse",
       "unexpected '%z' after the end of the statement (one statement per line)"},
      {"operand after attribute", G("  %y = softmax(axis=0, %x)"), 3, 24, "parse",
       "operands must come before attributes"},
      {"unknown attribute", G("  %y = softmax(%x, axsi=0)"), 3, 20, "attr",
       "'softmax' has no attribute 'axsi'; did you mean 'axis'?"},
      {"attribute of the wrong kind", G("  %y = softmax(%x, axis=1.5)"), 3, 25, "attr",
       "attribute 'axis' of 'softmax' must be of kind int, got float 1.5"},
      {"attribute given twice", G("  %y = softmax(%x, axis=0, axis=1)"), 3, 28, "attr",
       "attribute 'axis' of 'softmax' is given twice"},
      {"missing required attribute", G("  %y = reshape(%x)"), 3, 8, "attr",
       "'reshape' requires attribute 'shape' (ints)"},
      {"unquoted string", G("  %y = gelu(%x, approximate=tanh)"), 3, 29, "parse",
       "unknown attribute value 'tanh' (strings are quoted: \"tanh\")"},
      {"attribute value is a value", G("  %y = softmax(%x, axis=%x)"), 3, 25, "parse",
       "expected an attribute value, found '%x'"},
      {"shape rule", G("  %y = matmul(%x, %x)"), 3, 8, "shape", "cannot multiply"},
      {"arity", G("  %y = relu(%x, %x)"), 3, 8, "arity", "'relu' takes 1 operand (x), got 2"},
      {"operand role", G("  %y = where(%x, %x, %x)"), 3, 8, "dtype",
       "operand 0 (cond) of 'where' must be bool"},
      {"declared type differs", G("  %y : f16[2,3] = relu(%x)"), 3, 8, "type",
       "declared f16[2,3] but 'relu' gives f32[2,3]"},
      {"unknown dtype", G("  param %w : f33[2] = zeros"), 3, 14, "parse",
       "unknown dtype 'f33'; did you mean 'f32'?"},
      {"type without shape", G("  param %w : f32 = zeros"), 3, 18, "parse",
       "expected '[' and the shape after the dtype (a scalar is written f32[])"},
      {"negative dim", G("  input %w : f32[-2]"), 3, 18, "parse",
       "dimension '-2' must be a non-negative 64-bit integer"},
      {"dim beyond 64 bits", G("  input %w : f32[99999999999999999999]"), 3, 18, "parse",
       "must be a non-negative 64-bit integer"},
      {"type too large", G("  input %w : f32[4294967296,4294967296]"), 3, 14, "shape",
       "type f32[4294967296,4294967296] is too large"},
      {"invalid number", G("  input %w : f32[2x]"), 3, 18, "parse", "invalid number '2x'"},
      {"input without type", G("  input %w @cpu"), 3, 12, "parse",
       "expected ':' and a type (an input needs one"},
      {"dtype pin on an input", G("  input %w : f32[2] @f16"), 3, 22, "parse",
       "a dtype pin (@f16) is only allowed on nodes"},
      {"dtype pin on an output", "graph g {\n  input %x : f32[2]\n  output %x @f16\n}\n", 3, 14,
       "parse", "a dtype pin (@f16) is only allowed on nodes"},
      {"unknown device", G("  input %w : f32[2] @gpu"), 3, 22, "parse",
       "expected a device (cpu, cpu:N, cuda:N) after '@', found 'gpu'; did you mean 'cpu'?"},
      {"cuda without index", G("  input %w : f32[2] @cuda"), 3, 22, "device",
       "expected 'cuda:N' with a device index N"},
      {"device index too large", G("  %y @cuda:5000 = relu(%x)"), 3, 7, "device",
       "index 5000 is out of range 0..1023"},
      {"two device pins", G("  %y @cpu @cuda:0 = relu(%x)"), 3, 12, "parse",
       "more than one device pin"},
      {"two dtype pins", G("  %y @f16 @bf16 = relu(%x)"), 3, 12, "parse",
       "more than one dtype pin"},
      {"wrong number of values", G("  param %w : f32[3] = [1.0, 2.0]"), 3, 23, "parse",
       "param %w f32[3] needs 3 values (or one for all), found 2"},
      {"u8 out of range", G("  param %w : u8[2] = [1, 256]"), 3, 26, "parse",
       "'256' is out of range for u8 (0 to 255)"},
      {"i64 out of range", G("  param %w : i64[1] = [9223372036854775808]"), 3, 24, "parse",
       "'9223372036854775808' is out of range for i64"},
      {"float for an integer", G("  param %w : i32[1] = [1.5]"), 3, 24, "parse",
       "expected an integer for an element of i32, found '1.5'"},
      {"number for a bool", G("  param %w : bool[1] = [1]"), 3, 25, "parse",
       "expected true or false for an element of bool, found '1'"},
      {"f16 out of range", G("  param %w : f16[1] = [70000.0]"), 3, 24, "parse",
       "'70000.0' is out of range for f16"},
      {"double out of range", G("  param %w : f64[1] = [1e999]"), 3, 24, "parse",
       "'1e999' is out of range for f64"},
      {"misspelt initializer", G("  param %w : f32[2] = randm(seed=1)"), 3, 23, "parse",
       "found 'randm'; did you mean 'randn'?"},
      {"negative seed", G("  param %w : f32[2] = randn(seed=-1)"), 3, 34, "parse",
       "seed '-1' must be an integer from 0 to 18446744073709551615"},
      {"param without initializer", G("  param %w : f32[2]"), 3, 20, "parse",
       "expected '=' and an initializer: zeros, ones, randn(seed=N), npy(\"file\") or [...], found "
       "end of line"},
      {"missing npy file", G("  param %w : f32[2] = npy(\"nope.npy\")"), 3, 27, "npy",
       "nope.npy: cannot open file for reading"},
      {"deeply nested brackets", nested, 1, 1, "", ""},  // patched below: the body is line 3
      {"extremely long line", G("  " + std::string(1000000, 'a')), 3, 3, "parse",
       "found '" + std::string(37, 'a') + "...'"},
      {"integer beyond 64 bits", G("  %y = softmax(%x, axis=99999999999999999999)"), 3, 25, "parse",
       "integer '99999999999999999999' does not fit in 64 bits"},
      {"float beyond double", G("  %y = layer_norm(%x, eps=1e999)"), 3, 27, "parse",
       "number '1e999' is out of the range of a double"},
      {"malformed float", G("  %y = layer_norm(%x, eps=1.5.3)"), 3, 27, "parse",
       "invalid number '1.5.3'"},
      {"tensor literal of the wrong size", G("  %y = constant(value=f32[2]{1.0, 2.0, 3.0})"), 3, 29,
       "parse", "the tensor f32[2] needs 2 values (or one for all), found 3"},
      {"param too large", G("  param %w : f32[2000000000] = zeros"), 3, 32, "limit",
       "needs 8000000000 bytes, more than the parser's limit"},
  };
}

TEST(MalformedFy, EachGivesOneDiagnosticAtItsPlace) {
  std::vector<Case> all = cases();
  ASSERT_GE(all.size(), 30u);
  for (Case &c : all) {
    if (c.name == "deeply nested brackets")
      c = {c.name, G(c.text), 3, 27, "parse", "expected an integer in the list, found '['"};
    SCOPED_TRACE(c.name);
    Expected<Graph> g = parseGraph(c.text, "bad.fy");
    ASSERT_FALSE(g.ok()) << printGraph(*g);
    const std::vector<Diagnostic> &ds = g.status().diagnostics();
    EXPECT_EQ(ds.size(), 1u) << g.status().message().substr(0, 2000);
    const Diagnostic &d = ds[0];
    EXPECT_EQ(d.loc.file, "bad.fy");
    EXPECT_EQ(d.loc.line, c.line) << d.message.substr(0, 200);
    EXPECT_EQ(d.loc.col, c.col) << d.message.substr(0, 200);
    EXPECT_EQ(d.code, c.code) << d.message.substr(0, 200);
    EXPECT_NE(d.message.find(c.message), std::string::npos)
        << "want: " << c.message << "\ngot:  " << d.message.substr(0, 200);
  }
}

// The texts mutations start from: the examples and a few printed random graphs.
std::vector<std::string> seedTexts() {
  std::vector<std::string> texts;
  for (const auto &entry : std::filesystem::directory_iterator(FERRY_SOURCE_DIR "/examples")) {
    if (entry.path().extension() != ".fy") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    texts.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  std::sort(texts.begin(), texts.end());
  for (uint64_t seed = 0; seed < 4; ++seed)
    texts.push_back(
        printGraph(testutil::randomGraph(seed, {.npyParams = false, .maxDataElements = 64})));
  return texts;
}

std::string mutate(std::string s, testutil::Rng &rng) {
  static const std::string kInteresting = "[]{}(),:=@%#\"\\\n -.e0123456789";
  int64_t edits = rng.range(1, 4);
  for (int64_t e = 0; e < edits; ++e) {
    int64_t at = s.empty() ? 0 : rng.below(static_cast<int64_t>(s.size()));
    int64_t len = rng.range(1, 8);
    switch (rng.below(7)) {
      case 0:  // flip a byte to anything
        if (!s.empty()) s[at] = static_cast<char>(rng.below(256));
        break;
      case 1:  // a byte the grammar cares about
        if (!s.empty()) s[at] = kInteresting[rng.below(static_cast<int64_t>(kInteresting.size()))];
        break;
      case 2: s.erase(at, len); break;
      case 3: s.insert(at, s.substr(rng.below(std::max<int64_t>(1, s.size())), len)); break;
      case 4: s.resize(at); break;  // truncate
      case 5:
        s.insert(at, 1, kInteresting[rng.below(static_cast<int64_t>(kInteresting.size()))]);
        break;
      default: s.insert(at, std::string(rng.range(1, 30), '9')); break;  // a huge number
    }
  }
  return s;
}

TEST(MalformedFy, MutationsNeverCrashOrHang) {
  std::vector<std::string> texts = seedTexts();
  ASSERT_GE(texts.size(), 4u);
  testutil::Rng rng(20240601);
  int ok = 0, failed = 0;
  ParseOptions options{.baseDir = FERRY_SOURCE_DIR "/examples", .maxParamBytes = 1 << 16};
  // FERRY_MUTATIONS=200000 for a longer hunt (e.g. in a -DFERRY_SANITIZE=ON build).
  const char *env = std::getenv("FERRY_MUTATIONS");
  const int count = env ? std::atoi(env) : 4000;
  for (int i = 0; i < count; ++i) {
    std::string text = mutate(texts[i % texts.size()], rng);
    Expected<Graph> g = parseGraph(text, "m.fy", options);
    if (!g.ok()) {
      ++failed;
      for (const Diagnostic &d : g.status().diagnostics()) ASSERT_FALSE(d.code.empty());
      continue;
    }
    ++ok;
    // Whatever parses also prints and reads back to itself.
    std::string printed = printGraph(*g);
    Expected<Graph> again = parseGraph(printed, "m2.fy", options);
    ASSERT_TRUE(again.ok()) << "mutation " << i << ":\n"
                            << text << "\nprinted:\n"
                            << printed << "\n"
                            << again.status().message();
    EXPECT_EQ(printGraph(*again), printed) << "mutation " << i;
  }
  EXPECT_GT(failed, count / 4);
  EXPECT_GT(ok, count / 400);
  // A hang shows as this test exceeding its ctest timeout (tests/CMakeLists.txt).
}

}  // namespace
}  // namespace ferry
