// tests/ir/parser_test.cpp — what the `.fy` parser builds: types, pins, params, attributes,
// locations, outputs, files; and that it reports every error of a text without cascades.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/parse.h"
#include "common/scratch.h"
#include "ir/npy.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;

std::vector<Diagnostic> parseErrors(std::string_view text, const ParseOptions &options = {}) {
  Expected<Graph> g = parseGraph(text, "t.fy", options);
  EXPECT_FALSE(g.ok()) << "parsed:\n" << printGraph(*g);
  return g.ok() ? std::vector<Diagnostic>{} : g.status().diagnostics();
}

std::string wrap(std::string_view body) {
  return "graph g {\n  input %x : f32[2,3]\n" + std::string(body) + "\n}\n";
}

TEST(Parser, ExampleMlpInfersTypes) {
  Expected<Graph> g = parseFile(FERRY_SOURCE_DIR "/examples/mlp.fy");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->name(), "mlp");
  ASSERT_TRUE(g->findValue("h"));
  EXPECT_EQ(g->value(*g->findValue("h")).type.str(), "f32[32,256]");
  EXPECT_EQ(g->value(*g->findValue("probs")).type.str(), "f32[32,10]");
  ASSERT_EQ(g->outputs().size(), 1u);
  // A node's location is the .fy position of its result name.
  const Node *h = g->producer(*g->findValue("h"));
  EXPECT_EQ(h->loc.line, 9);
  EXPECT_EQ(h->loc.col, 3);
  EXPECT_EQ(h->loc.file, FERRY_SOURCE_DIR "/examples/mlp.fy");
}

TEST(Parser, DeclaredTypesArePinsAndChecks) {
  Graph g = parseOk(wrap(R"(  %h : f32[2,3] @cuda:1 @bf16 = relu(%x)
  %k @cpu:2 = neg(%h)
  %m @f16 = abs(%k)
  output %m @cpu, %h)"));
  const Node &h = *g.producer(*g.findValue("h"));
  EXPECT_EQ(h.pinDevice, Device::cuda(1));
  EXPECT_EQ(h.pinDType, DType::BF16);
  EXPECT_EQ(g.producer(*g.findValue("k"))->pinDevice, Device::cpu(2));
  EXPECT_FALSE(g.producer(*g.findValue("k"))->pinDType);
  EXPECT_EQ(g.producer(*g.findValue("m"))->pinDType, DType::F16);
  EXPECT_FALSE(g.value(*g.findValue("m")).device) << "a pin is not a placement";
  EXPECT_EQ(g.inputs()[0].device, Device::cpu()) << "inputs default to cpu";
  ASSERT_EQ(g.outputs().size(), 2u);
  EXPECT_EQ(g.outputs()[0].pin, Device::cpu());
  EXPECT_FALSE(g.outputs()[1].pin);
}

TEST(Parser, TypeMismatchNamesBothTypes) {
  auto errs = parseErrors(wrap("  %h : f16[2,3] = relu(%x)\n  output %h"));
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].code, "type");
  EXPECT_EQ(errs[0].message, "declared f16[2,3] but 'relu' gives f32[2,3]");
  EXPECT_EQ(errs[0].loc.line, 3);
  EXPECT_EQ(errs[0].loc.col, 8);
}

// For compile(), a node's type error is left to verify (which reports it beside the rest of the
// model's problems) when the node can still be typed.
TEST(Parser, DeferredTypeErrorsKeepTheNodeTypedAsItWouldBeOnceFixed) {
  const ParseOptions defer{.deferTypeErrors = true};
  const std::string text = R"(graph g {
  input %t : f32[10,4]
  input %ids : f32[3]
  %e = gather(%t, %ids)
  %h : f16[3,4] = relu(%e)
  %s : f32[3] = add(%e, %t)
  output %h, %s
})";
  // Without the option the gather's mistake is a parse error, as always (its readers are silent).
  EXPECT_EQ(parseErrors(text).size(), 1u);
  Graph g = parseOk(text, "t.fy", defer);
  // The gather as it gives once its indices are integers; the others as written.
  EXPECT_EQ(g.value(*g.findValue("e")).type, (TensorType{DType::F32, {3, 4}}));
  EXPECT_EQ(g.value(*g.findValue("h")).type, (TensorType{DType::F16, {3, 4}}));
  EXPECT_EQ(g.value(*g.findValue("s")).type, (TensorType{DType::F32, {3}}));
  const Verification v = verifyGraph(g);
  EXPECT_FALSE(v.structural);
  ASSERT_EQ(v.typeErrors.size(), 3u) << renderText(v.diagnostics);
  EXPECT_TRUE(v.typeErrors[0].typeHolds);   // the gather's result is what it gives once fixed
  EXPECT_FALSE(v.typeErrors[1].typeHolds);  // a written type the op does not give
  EXPECT_FALSE(v.typeErrors[2].typeHolds);  // a shape error
  EXPECT_EQ(v.diagnostics[0].message,
            "operand 1 (indices) of 'gather' must be i32 or i64, got f32[3]");
  EXPECT_EQ(v.diagnostics[0].loc.str(), "t.fy:4:3");
  // A node with no type to give it (none written, none inferred) is still a parse error.
  auto errs =
      parseErrors(wrap("  %c = add(%x, %x, %x)\n  %d = matmul(%x, %x)\n  output %c, %d"), defer);
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_EQ(errs[0].code, "arity");
  EXPECT_EQ(errs[1].code, "shape");
}

TEST(Parser, ParamInitializers) {
  Graph g = parseOk(R"(graph p {
  param %z : f32[2] = zeros
  param %o : i32[2] @cuda:0 = ones
  param %r : f32[3] = randn(seed=18446744073709551615)
  param %d : f64[4] = [-0.0, inf, -inf, 1e-05]
  param %n : f32[1] = [nan]
  param %s : f16[2,2] = [0.5]
  param %i : i64[2] = [-9223372036854775808, +9223372036854775807]
  param %u : u8[2] = [0, 255]
  param %c : i8[2] = [-128, 127]
  param %b : bool[3] = [true, false, true]
  param %e : f32[0] = []
  param %k : f32[] = [2]
  output %z
})");
  auto param = [&](const char *n) -> const ParamDecl & { return g.paramOf(*g.findValue(n)); };
  EXPECT_EQ(param("z").init.kind, Initializer::Kind::Zeros);
  EXPECT_EQ(param("o").data.atInt(1), 1);
  EXPECT_EQ(param("o").pin, Device::cuda(0));
  EXPECT_EQ(param("r").init.seed, 18446744073709551615ull);
  EXPECT_TRUE(param("r").data == TensorData::randn(DType::F32, {3}, 18446744073709551615ull));
  EXPECT_TRUE(std::signbit(param("d").data.at(0)));
  EXPECT_EQ(param("d").data.at(1), INFINITY);
  EXPECT_EQ(param("d").data.at(2), -INFINITY);
  EXPECT_EQ(param("d").data.at(3), 1e-05);
  EXPECT_TRUE(std::isnan(param("n").data.at(0)));
  EXPECT_EQ(param("s").data.toDoubles(), (std::vector<double>{0.5, 0.5, 0.5, 0.5}));
  EXPECT_EQ(param("i").data.atInt(0), INT64_MIN);
  EXPECT_EQ(param("i").data.atInt(1), INT64_MAX);
  EXPECT_EQ(param("u").data.atInt(1), 255);
  EXPECT_EQ(param("c").data.atInt(0), -128);
  EXPECT_EQ(param("b").data.atInt(0), 1);
  EXPECT_EQ(param("b").data.atInt(1), 0);
  EXPECT_EQ(param("e").data.numel(), 0);
  EXPECT_EQ(param("k").data.at(0), 2.0);
  EXPECT_EQ(param("d").init.kind, Initializer::Kind::Data);
}

TEST(Parser, AttributeValuesOfEveryKind) {
  Graph g = parseOk(R"(graph a {
  input %x : f32[1,2,4,4]
  input %i : i64[2]
  param %s : f32[2] = ones
  param %w : f32[4,1,3,3] = randn(seed=7)
  %bn = batch_norm(%x, %s, %s, %s, %s, eps=1e-3)
  %ln = layer_norm(%x, axis=-2, eps=1)
  %c = conv2d(%x, %w, stride=[2, 2], padding=[1, 1, 0, 0], groups=2)
  %t = cast(%x, to=bf16)
  %m = transfer(%t, to=cuda:3)
  %k = constant(value=i64[2,2]{1, -2, 3, 4})
  %e = constant(value=bool[]{true})
  %f = constant(value=f32[3]{-inf})
  %g = gelu(%x, approximate="tanh")
  %s2 = slice(%x, starts=[-1], ends=[-9223372036854775808], axes=[-1], steps=[-1])
  %ga = gather(%x, %i, axis=3)
  output %bn, %ln, %c, %m, %k, %e, %f, %g, %s2, %ga
})");
  auto node = [&](const char *n) -> const Node & { return *g.producer(*g.findValue(n)); };
  EXPECT_EQ(attrFloat(node("bn").info(), node("bn").attrs, "eps"), 1e-3);
  EXPECT_EQ(attrFloat(node("ln").info(), node("ln").attrs, "eps"), 1.0) << "int widened to float";
  EXPECT_EQ(attrInt(node("ln").info(), node("ln").attrs, "axis"), -2);
  EXPECT_EQ(attrInts(node("c").info(), node("c").attrs, "padding"),
            (std::vector<int64_t>{1, 1, 0, 0}));
  EXPECT_EQ(g.value(node("c").result).type.str(), "f32[1,4,2,2]");
  EXPECT_EQ(attrDType(node("t").info(), node("t").attrs, "to"), DType::BF16);
  EXPECT_EQ(attrDevice(node("m").info(), node("m").attrs, "to"), Device::cuda(3));
  EXPECT_EQ(attrTensor(node("k").info(), node("k").attrs, "value").atInt(1), -2);
  EXPECT_EQ(g.value(node("e").result).type.str(), "bool[]");
  EXPECT_EQ(attrTensor(node("f").info(), node("f").attrs, "value").at(2), -INFINITY) << "splat";
  EXPECT_EQ(attrString(node("g").info(), node("g").attrs, "approximate"), "tanh");
  EXPECT_EQ(g.value(node("s2").result).type.str(), "f32[1,2,4,4]");
  EXPECT_EQ(g.value(node("ga").result).type.str(), "f32[1,2,4,2]");
}

TEST(Parser, ParamsMayFollowTheirUsersButValuesMayNot) {
  // Params are values like any other: defined before use. Outputs may come first.
  Graph g = parseOk("graph g {\n  output %y\n  input %x : f32[2]\n  %y = relu(%x)\n}\n");
  EXPECT_EQ(g.outputs().size(), 1u);
  auto errs = parseErrors("graph g {\n  %y = relu(%x)\n  input %x : f32[2]\n  output %y\n}\n");
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].code, "name");
  EXPECT_EQ(errs[0].message, "%x is used before its definition at line 3");
}

TEST(Parser, LocationComments) {
  Graph g = parseOk(R"(graph g {
  input %x : f32[2]  # model.cpp:10:5
  param %w : f32[2] = zeros  # C:\src\m.cpp:3
  %a = relu(%x)  # mlp.cpp:42:7
  %b = relu(%a)  #   spaced/file.cpp:8:1
  %c = relu(%b)  # not a location: 1:2
  %d = relu(%c)  # file.cpp:0:1
  %e = add(%d, %w)  #
  output %e  # out.cpp:99:1
})");
  auto node = [&](const char *n) { return g.producer(*g.findValue(n))->loc; };
  EXPECT_EQ(g.inputs()[0].loc, (Location{"model.cpp", 10, 5}));
  EXPECT_EQ(g.params()[0].loc, (Location{"C:\\src\\m.cpp", 3, 0}));
  EXPECT_EQ(node("a"), (Location{"mlp.cpp", 42, 7}));
  EXPECT_EQ(node("b"), (Location{"spaced/file.cpp", 8, 1}));
  EXPECT_EQ(node("c"), (Location{"t.fy", 6, 3}));
  EXPECT_EQ(node("d"), (Location{"t.fy", 7, 3})) << "line 0 is no location";
  EXPECT_EQ(node("e"), (Location{"t.fy", 8, 3}));
  EXPECT_EQ(g.outputs()[0].loc, (Location{"out.cpp", 99, 1}));
}

// A compiled graph's dump marks fusion groups before the rest of the comment (`# fused 2
// inserted mlp.fy:5:3`): the mark is skipped (the fusion pass makes groups again), the rest read
// as without it; anything else after `fused` is a plain comment.
TEST(Parser, FusedMarksAreSkippedBeforeInsertedAndLocationComments) {
  Graph g = parseOk(R"(graph g {
  input %x : f32[2]
  %a = relu(%x)  # fused 0 inserted mlp.fy:4:5
  %b = relu(%a)  # fused 12 mlp.fy:6:7
  %c = relu(%b)  # fused 3
  %d = relu(%c)  # fused x mlp.fy:8:9
  output %d
})");
  auto node = [&](const char *n) { return g.producer(*g.findValue(n)); };
  EXPECT_TRUE(node("a")->inserted);
  EXPECT_EQ(node("a")->loc, (Location{"mlp.fy", 4, 5}));
  EXPECT_FALSE(node("b")->inserted);
  EXPECT_EQ(node("b")->loc, (Location{"mlp.fy", 6, 7}));
  EXPECT_EQ(node("c")->loc, (Location{"t.fy", 5, 3}));
  EXPECT_EQ(node("d")->loc, (Location{"t.fy", 6, 3})) << "'fused x ...' is a plain comment";
  for (NodeId id : g.order()) EXPECT_EQ(g.node(id).group, -1);
}

TEST(Parser, InsertedComments) {
  Graph g = parseOk(R"(graph g {
  input %x : f32[2]  # inserted model.cpp:1:1
  %a = relu(%x)  # inserted
  %b = relu(%a)  #inserted   mlp.cpp:42:7
  %c = relu(%b)  # inserted by hand
  %d = relu(%c)  # inserted:3:4
  %e = relu(%d)  # Inserted
  %f = relu(%e)  # not inserted
  output %f  # inserted
})");
  auto node = [&](const char *n) { return g.producer(*g.findValue(n)); };
  EXPECT_TRUE(node("a")->inserted);
  EXPECT_EQ(node("a")->loc, Location{}) << "an inserted node without origin has none";
  EXPECT_TRUE(node("b")->inserted);
  EXPECT_EQ(node("b")->loc, (Location{"mlp.cpp", 42, 7}));
  // Anything else is a plain comment: the statement keeps its place in the text.
  for (const char *n : {"c", "e", "f"}) EXPECT_FALSE(node(n)->inserted) << n;
  EXPECT_EQ(node("c")->loc, (Location{"t.fy", 5, 3}));
  EXPECT_FALSE(node("d")->inserted);
  EXPECT_EQ(node("d")->loc, (Location{"inserted", 3, 4})) << "a location, of a file 'inserted'";
  // Only nodes are inserted; on other statements the comment is just a comment.
  EXPECT_EQ(g.inputs()[0].loc, (Location{"t.fy", 2, 9}));
  EXPECT_EQ(g.outputs()[0].loc, (Location{"t.fy", 9, 10}));
}

TEST(Parser, QuotedGraphNameCrlfAndBom) {
  Graph g =
      parseOk("\xEF\xBB\xBFgraph \"my model\" {\r\n  input %x : f32[2]\r\n  output %x\r\n}\r\n");
  EXPECT_EQ(g.name(), "my model");
  EXPECT_EQ(printGraph(g, {.locations = false}),
            "graph \"my model\" {\n  input %x : f32[2] @cpu\n  output %x @cpu\n}\n");
}

TEST(Parser, ReportsEveryErrorAndPoisonsFailedDefinitions) {
  auto errs = parseErrors(R"(graph g {
  input %x : f32[2,3]
  %a = lienar(%x)
  %b = relu(%a)
  %c = relu(%nope)
  %d = add(%b, %c)
  %e = softmax(%x, axis=1, bogus=2)
  %f = relu(%e)
  param %w : f33[2] = zeros
  %g = add(%w, %f)
  output %g, %a, %zzz
})");
  ASSERT_EQ(errs.size(), 5u) << Status(errs).message();
  EXPECT_EQ(errs[0].message, "unknown op 'lienar'; did you mean 'linear'?");
  EXPECT_EQ(errs[0].loc, (Location{"t.fy", 3, 8}));
  EXPECT_EQ(errs[1].message, "use of undefined value %nope");
  EXPECT_EQ(errs[1].loc, (Location{"t.fy", 5, 13}));
  EXPECT_EQ(errs[2].code, "attr");
  EXPECT_EQ(errs[2].loc, (Location{"t.fy", 7, 28}));
  EXPECT_EQ(errs[3].message.rfind("unknown dtype 'f33'; did you mean 'f32'?", 0), 0u)
      << errs[3].message;
  EXPECT_EQ(errs[4].code, "name");
  EXPECT_EQ(errs[4].message, "use of undefined value %zzz");
  EXPECT_EQ(errs[4].loc, (Location{"t.fy", 11, 18}));
}

TEST(Parser, UndefinedValueSuggestsACloseName) {
  auto errs = parseErrors(wrap("  %hidden = relu(%x)\n  %y = relu(%hiden)\n  output %y"));
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].message, "use of undefined value %hiden; did you mean '%hidden'?");
}

TEST(Parser, NpyParamsRelativeToBaseDirAndFile) {
  const testutil::ScratchDir scratch("parser_test_npy");
  const fs::path &dir = scratch.path();
  fs::create_directories(dir / "weights");
  TensorData w = TensorData::randn(DType::F32, {3, 2}, 5);
  ASSERT_TRUE(writeNpy(w, (dir / "weights" / "w.npy").string()).ok());
  const std::string text =
      "graph g {\n  param %w : f32[3,2] = npy(\"weights/w.npy\")\n  output %w\n}\n";
  Graph g = parseOk(text, "t.fy", {.baseDir = dir.string()});
  EXPECT_TRUE(g.params()[0].data == w);
  EXPECT_EQ(g.params()[0].init.path, "weights/w.npy") << "kept as written";
  {
    std::ofstream out(dir / "m.fy");
    out << text;
  }
  Expected<Graph> f = parseFile((dir / "m.fy").string());
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_TRUE(f->params()[0].data == w);

  // A missing file and a file of another type are errors at the param's line.
  auto errs =
      parseErrors("graph g {\n  input %x : f32[2]\n  param %w : f32[3,2] = npy(\"missing.npy\")\n"
                  "  param %v : f32[2,3] = npy(\"weights/w.npy\")\n  output %x\n}\n",
                  {.baseDir = dir.string()});
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_EQ(errs[0].code, "npy");
  EXPECT_EQ(errs[0].loc, (Location{"t.fy", 3, 29}));
  EXPECT_NE(errs[0].message.find("missing.npy"), std::string::npos) << errs[0].message;
  EXPECT_NE(errs[0].message.find("cannot open"), std::string::npos) << errs[0].message;
  EXPECT_EQ(errs[1].code, "npy");
  EXPECT_EQ(errs[1].loc.line, 4);
  EXPECT_NE(errs[1].message.find("holds f32[3,2] but param %v is declared f32[2,3]"),
            std::string::npos)
      << errs[1].message;
}

TEST(Parser, ParseFileErrors) {
  Expected<Graph> g = parseFile("/nonexistent/ferry/model.fy");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().diagnostics()[0].code, "io");
  EXPECT_FALSE(parseFile(fs::temp_directory_path().string()).ok());
}

TEST(Parser, ParamSizeLimit) {
  auto errs = parseErrors("graph g {\n  param %w : f32[1024,1024] = zeros\n  output %w\n}\n",
                          {.maxParamBytes = 1 << 20});
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].code, "limit");
  parseOk("graph g {\n  param %w : f32[512,512] = zeros\n  output %w\n}\n", "t.fy",
          {.maxParamBytes = 1 << 20});
}

TEST(Parser, EveryOpHasItsNameInTheTable) {
  // The parser looks ops up by name: each row must round-trip through findOp.
  for (const OpInfo &op : allOps()) EXPECT_EQ(findOp(op.name), &op) << op.name;
}

}  // namespace
}  // namespace ferry

namespace ferry {
namespace {

// A param within maxParamBytes but beyond what the host can hold is an error at its
// initializer, not an abort (4 PB: past x86-64's address space).
TEST(Parser, AParamTheHostCannotHoldIsAnError) {
  Expected<Graph> g =
      parseGraph("graph g {\n  param %w : f32[1000000,1000000,1000] = zeros\n  output %w\n}\n",
                 "big.fy",
                 {.maxParamBytes = int64_t{1} << 62, .maxTotalParamBytes = int64_t{1} << 62});
  ASSERT_FALSE(g.ok());
  const Diagnostic &d = g.status().diagnostics()[0];
  EXPECT_EQ(d.code, "memory");
  EXPECT_EQ(d.loc.str(), "big.fy:2:42");  // the initializer
  EXPECT_NE(d.message.find("out of memory: param %w (f32[1000000,1000000,1000]) needs "
                           "4000000000000000 bytes"),
            std::string::npos)
      << d.message;
}

}  // namespace
}  // namespace ferry

namespace ferry {
namespace {

// What parsing `text` gives in a child process whose address space is limited to `limitBytes`
// (RLIMIT_AS): "<code>: <message>" of the first diagnostic, or "ok". A parser that allocated a
// param the limit cannot hold would say "memory: out of memory ...".
std::string parseUnderAddressLimit(const std::string &text, uint64_t limitBytes) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    struct rlimit limit {limitBytes, limitBytes};
    ::setrlimit(RLIMIT_AS, &limit);
    Expected<Graph> g = parseGraph(text, "huge.fy");
    const std::string said =
        g.ok() ? "ok"
               : g.status().diagnostics()[0].code + ": " + g.status().diagnostics()[0].message;
    [[maybe_unused]] ssize_t n = ::write(fds[1], said.data(), said.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string said;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;)
    said.append(buffer, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? said : "the child did not exit cleanly";
}

// A few hundred bytes that declare 20 GiB of params, each within maxParamBytes (4 GiB), are
// refused for their total (default limit 16 GiB) before any of them is allocated: in a child
// that cannot map 1 GiB, the error is the limit, not an out-of-memory one.
TEST(Parser, ParamsDeclaringMoreThanTheTotalLimitAreRefusedBeforeAnyIsAllocated) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "sanitizers reserve more address space than the limit this test sets";
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
  GTEST_SKIP() << "sanitizers reserve more address space than the limit this test sets";
#endif
#endif
  std::string text = "graph huge {\n";
  for (int i = 0; i < 5; ++i)
    text += "  param %w" + std::to_string(i) + " : f32[1073741824] = randn(seed=" +
            std::to_string(i) + ")\n";
  text += "  output %w0, %w1, %w2, %w3, %w4\n}\n";
  ASSERT_LT(text.size(), 339u);
  const std::string said = parseUnderAddressLimit(text, uint64_t{1} << 30);
  EXPECT_EQ(said,
            "limit: the graph's params declare 21474836480 bytes together, more than the limit "
            "of 17179869184 bytes (ParseOptions::maxTotalParamBytes)");
}

// The limit is an option: the error is at the param that passes it, and names the total of all.
TEST(Parser, TheTotalParamLimitIsAnOption) {
  const std::string text =
      "graph g {\n  param %a : f32[100] = zeros\n  param %b : f32[100] = ones\n"
      "  param %c : f32[50] = zeros\n  output %a\n}\n";
  EXPECT_TRUE(parseGraph(text, "g.fy", {.maxTotalParamBytes = 1000}).ok());
  Expected<Graph> g = parseGraph(text, "g.fy", {.maxTotalParamBytes = 799});
  ASSERT_FALSE(g.ok());
  ASSERT_EQ(g.status().diagnostics().size(), 1u);
  const Diagnostic &d = g.status().diagnostics()[0];
  EXPECT_EQ(d.code, "limit");
  EXPECT_EQ(d.loc.str(), "g.fy:3:9");
  EXPECT_EQ(d.message, "the graph's params declare 1000 bytes together, more than the limit of 799 "
                       "bytes (ParseOptions::maxTotalParamBytes)");
}

}  // namespace
}  // namespace ferry
