// tests/ir/printer_test.cpp — golden tests of the `.fy` printer and of saveModel.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/parse.h"
#include "common/random_graph.h"
#include "common/scratch.h"
#include "ir/npy.h"
#include "ir/parser.h"
#include "ir/printer.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;

std::string readText(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The documented example: read in, printed back without locations, is the same text.
TEST(Printer, DocumentedFormIsAFixedPoint) {
  const testutil::ScratchDir scratch("printer_test_doc");
  const fs::path &dir = scratch.path();
  ASSERT_TRUE(
      writeNpy(TensorData::full(DType::F32, {512, 512}, 0.5), (dir / "e.npy").string()).ok());
  const std::string text = R"(graph mlp {
  input %x : f32[32,784] @cpu
  param %w1 : f32[256,784] = randn(seed=1)
  param %b1 : f32[256] @cuda:0 = zeros
  param %s : f32[3] = [1.0, 2.5, -3.0]
  param %e : f32[512,512] = npy("e.npy")
  %h : f32[32,256] = linear(%x, %w1, %b1)
  %a : f32[32,256] @cuda:0 = relu(%h)
  %y : f16[32,256] @f16 = cast(%a, to=f16)
  %c : f32[2] = constant(value=f32[2]{1.0, 2.0})
  output %y
  output %a @cpu
}
)";
  Graph g = parseOk(text, "t.fy", {.baseDir = dir.string()});
  EXPECT_EQ(printGraph(g, {.locations = false}), text);
}

TEST(Printer, LocationsAsTrailingComments) {
  Graph g = parseOk(R"(graph g {
  input %x : f32[2]
  %h = relu(%x)  # mlp.cpp:42:7
  %k = neg(%h)   # just a comment
  %m = abs(%k)  # /src/model.cpp:9
  output %m
}
)",
                    "test.fy");
  EXPECT_EQ(printGraph(g), R"(graph g {
  input %x : f32[2] @cpu  # test.fy:2:9
  %h : f32[2] = relu(%x)  # mlp.cpp:42:7
  %k : f32[2] = neg(%h)   # test.fy:4:3
  %m : f32[2] = abs(%k)   # /src/model.cpp:9
  output %m               # test.fy:6:10
}
)");
}

// A compiled graph: every value placed, inserted nodes marked (with their origin when known).
TEST(Printer, InsertedNodesAreMarkedAndReadBack) {
  Graph g("g");
  ValueId x = g.addInput("x", {DType::F32, {2}}, Device::cpu(), {"m.cpp", 3, 5});
  g.value(x).device = Device::cpu();
  auto add = [&](OpKind op, ValueId in, std::vector<NamedAttr> given, std::string name,
                 Device device, Location loc, bool inserted) {
    Expected<Attrs> attrs = makeAttrs(opInfo(op), given, {});
    EXPECT_TRUE(attrs.ok());
    InferResult t = inferType(opInfo(op), std::vector<TensorType>{g.value(in).type}, *attrs);
    NodeId n = g.addNode({op, {in}, *attrs, {}, {}, std::move(loc)}, std::move(name),
                         std::get<TensorType>(t));
    g.node(n).inserted = inserted;
    g.value(g.node(n).result).device = device;
    return g.node(n).result;
  };
  ValueId t = add(OpKind::Transfer, x, {{"to", Device::cpu(1)}}, "x.cpu1", Device::cpu(1),
                  {"m.cpp", 9, 7}, true);
  ValueId c = add(OpKind::Cast, t, {{"to", DType::F16}}, "x.f16", Device::cpu(1), {}, true);
  ValueId r = add(OpKind::Relu, c, {}, "r", Device::cpu(1), {"m.cpp", 9, 7}, false);
  g.addOutput(r, std::nullopt, {"m.cpp", 10, 3});
  const std::string printed = R"(graph g {
  input %x : f32[2] @cpu                            # m.cpp:3:5
  %x.cpu1 : f32[2] @cpu:1 = transfer(%x, to=cpu:1)  # inserted m.cpp:9:7
  %x.f16 : f16[2] @cpu:1 = cast(%x.cpu1, to=f16)    # inserted
  %r : f16[2] @cpu:1 = relu(%x.f16)                 # m.cpp:9:7
  output %r @cpu:1                                  # m.cpp:10:3
}
)";
  EXPECT_EQ(printGraph(g), printed);
  // Without locations the marks stay: they are part of what the graph says.
  EXPECT_EQ(printGraph(g, {.locations = false}), R"(graph g {
  input %x : f32[2] @cpu
  %x.cpu1 : f32[2] @cpu:1 = transfer(%x, to=cpu:1)  # inserted
  %x.f16 : f16[2] @cpu:1 = cast(%x.cpu1, to=f16)    # inserted
  %r : f16[2] @cpu:1 = relu(%x.f16)
  output %r @cpu:1
}
)");
  Graph again = parseOk(printed);
  EXPECT_EQ(printGraph(again), printed);
  EXPECT_EQ(testutil::graphDifference(again, g), "");
  EXPECT_TRUE(again.producer(*again.findValue("x.f16"))->inserted);
  EXPECT_FALSE(again.producer(*again.findValue("x.f16"))->loc.known()) << "no origin, not a line";
}

TEST(Printer, GraphApiValuesDevicesAndAttributes) {
  Graph g("my-model");
  ValueId x = g.addInput("x", {DType::F32, {2, 3}}, Device::cpu(1), {});
  ValueId w = g.addParam("fc.weight", TensorData::full(DType::F32, {4, 3}, 0.25), Initializer{},
                         std::nullopt, {"model.cpp", 7, 0});
  ValueId b = g.addParam("fc.bias", TensorData::zeros(DType::F32, {4}),
                         Initializer{Initializer::Kind::Zeros, 0, {}}, Device::cuda(0), {});
  g.value(b).device = Device::cpu();  // the pin wins over a placed device
  ValueId r = g.addParam("r", TensorData::randn(DType::BF16, {2}, 18446744073709551615ull),
                         Initializer{Initializer::Kind::Randn, 18446744073709551615ull, {}},
                         std::nullopt, {});
  g.value(r).device = Device::cuda(1);  // placed, not pinned
  auto add = [&](OpKind op, std::vector<ValueId> operands, std::vector<NamedAttr> given,
                 std::string name, std::optional<Device> pin = {},
                 std::optional<DType> pinDType = {}) {
    Expected<Attrs> attrs = makeAttrs(opInfo(op), given, {});
    EXPECT_TRUE(attrs.ok());
    std::vector<TensorType> types;
    for (ValueId v : operands) types.push_back(g.value(v).type);
    InferResult t = inferType(opInfo(op), types, *attrs);
    EXPECT_TRUE(std::holds_alternative<TensorType>(t)) << std::get<InferError>(t).message;
    NodeId n = g.addNode({op, operands, *attrs, pin, pinDType, {}}, std::move(name),
                         std::get<TensorType>(t));
    return g.node(n).result;
  };
  ValueId h = add(OpKind::Linear, {x, w, b}, {}, "h");
  ValueId s = add(OpKind::Softmax, {h}, {{"axis", int64_t{-1}}}, "s");  // the default
  ValueId t = add(OpKind::Softmax, {s}, {{"axis", int64_t{0}}}, "t", Device::cuda(0), DType::F16);
  ValueId p = add(OpKind::MaxPool2d,
                  {add(OpKind::Reshape, {t}, {{"shape", std::vector<int64_t>{1, 1, 2, 4}}}, "4d")},
                  {{"ceil_mode", true}, {"kernel", std::vector<int64_t>{2, 2}}}, "pool");
  g.value(p).device = Device::cuda(0);
  ValueId gl = add(OpKind::Gelu, {h}, {{"approximate", std::string("tanh")}}, "gl");
  g.addOutput(p, std::nullopt, {});
  g.addOutput(gl, Device::cpu(), {"model.cpp", 30, 3});
  g.addOutput(r, std::nullopt, {});
  EXPECT_EQ(printGraph(g), R"(graph "my-model" {
  input %x : f32[2,3] @cpu:1
  param %fc.weight : f32[4,3] = [0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25]  # model.cpp:7
  param %fc.bias : f32[4] @cuda:0 = zeros
  param %r : bf16[2] @cuda:1 = randn(seed=18446744073709551615)
  %h : f32[2,4] = linear(%x, %fc.weight, %fc.bias)
  %s : f32[2,4] = softmax(%h)
  %t : f32[2,4] @cuda:0 @f16 = softmax(%s, axis=0)
  %4d : f32[1,1,2,4] = reshape(%t, shape=[1, 1, 2, 4])
  %pool : f32[1,1,1,2] @cuda:0 = max_pool2d(%4d, kernel=[2, 2], ceil_mode=true)
  %gl : f32[2,4] = gelu(%h, approximate="tanh")
  output %pool @cuda:0
  output %gl @cpu  # model.cpp:30:3
  output %r @cuda:1
}
)");
  EXPECT_EQ(printGraph(g), printGraph(g)) << "deterministic";
  EXPECT_EQ(valueRef(g, w), "%fc.weight");
}

TEST(Printer, InlineLimitAndElementSpelling) {
  Graph g("g");
  TensorData big(DType::I64, {65});
  for (int64_t i = 0; i < 65; ++i) big.setInt(i, i);
  TensorData odd(DType::F64, {5});
  const double values[] = {-0.0, 1e-05, std::numeric_limits<double>::infinity(), 0.1, 3.0};
  for (int64_t i = 0; i < 5; ++i) odd.set(i, values[i]);
  TensorData flags(DType::Bool, {2});
  flags.setInt(1, 1);
  TensorData ints(DType::I64, {2});
  ints.setInt(0, INT64_MIN);
  ints.setInt(1, INT64_MAX);
  g.addParam("big", big, {}, std::nullopt, {});
  g.addParam("odd", odd, {}, std::nullopt, {});
  g.addParam("flags", flags, {}, std::nullopt, {});
  ValueId last = g.addParam("ints", ints, {}, std::nullopt, {});
  g.addParam("empty", TensorData(DType::F32, {0, 3}), {}, std::nullopt, {});
  g.addOutput(last, std::nullopt, {});
  std::string text = printGraph(g, {.inlineLimit = 64, .paramsFolder = "m.params"});
  EXPECT_NE(text.find("param %big : i64[65] = npy(\"m.params/big.npy\")"), std::string::npos)
      << text;
  EXPECT_NE(text.find("param %odd : f64[5] = [-0.0, 1e-05, inf, 0.1, 3.0]"), std::string::npos)
      << text;
  EXPECT_NE(text.find("param %flags : bool[2] = [false, true]"), std::string::npos) << text;
  EXPECT_NE(text.find("= [-9223372036854775808, 9223372036854775807]"), std::string::npos) << text;
  EXPECT_NE(text.find("param %empty : f32[0,3] = []"), std::string::npos) << text;
  EXPECT_NE(printGraph(g, {.inlineLimit = 65, .paramsFolder = "m.params"}).find("= [0, 1, 2,"),
            std::string::npos);
  // Without a params folder there is no file to name: every Data param prints inline.
  EXPECT_NE(printGraph(g).find("param %big : i64[65] = [0, 1, 2,"), std::string::npos);
}

TEST(Printer, StringsAreEscapedSoThatTheyReadBack) {
  const std::string name = "a\"b\\c\nd\te\r\x01\x7f\xff caf\xc3\xa9";
  Graph g(name);
  ValueId a = g.addParam("a", TensorData::full(DType::F32, {2}, 1),
                         {Initializer::Kind::Npy, 0, "we\"ird\n.npy"}, std::nullopt,
                         {"file\nwith break.cpp", 3, 4});
  g.addOutput(a, std::nullopt, {});
  std::string text = printGraph(g);
  EXPECT_EQ(text, "graph \"a\\\"b\\\\c\\nd\\te\\r\\x01\\x7f\\xff caf\xc3\xa9\" {\n"
                  "  param %a : f32[2] = npy(\"we\\\"ird\\n.npy\")  # file with break.cpp:3:4\n"
                  "  output %a\n}\n");
  const testutil::ScratchDir scratch("printer_test_escapes");
  const fs::path &dir = scratch.path();
  ASSERT_TRUE(writeNpy(g.params()[0].data, (dir / "we\"ird\n.npy").string()).ok());
  Graph back = parseOk(text, "t.fy", {.baseDir = dir.string()});
  EXPECT_EQ(back.name(), name);
  EXPECT_EQ(back.params()[0].init.path, "we\"ird\n.npy");
  EXPECT_EQ(printGraph(back, {.locations = false}), printGraph(g, {.locations = false}));
}

TEST(Printer, SaveModelWritesTextAndNpyFiles) {
  const testutil::ScratchDir scratch("printer_test_save");
  const fs::path &dir = scratch.path();
  Graph g("g");
  ValueId x = g.addInput("x", {DType::F32, {100}}, Device::cpu(), {"m.cpp", 2, 1});
  TensorData w(DType::F32, {100});
  for (int64_t i = 0; i < 100; ++i) w.set(i, i * 0.5);
  ValueId p = g.addParam("layer.0.w", w, {}, std::nullopt, {"m.cpp", 3, 1});
  Expected<Attrs> none = makeAttrs(opInfo(OpKind::Add), {}, {});
  ASSERT_TRUE(none.ok());
  NodeId n =
      g.addNode({OpKind::Add, {x, p}, *none, {}, {}, {"m.cpp", 4, 1}}, "y", {DType::F32, {100}});
  g.addOutput(g.node(n).result, std::nullopt, {"m.cpp", 5, 1});
  ASSERT_TRUE(saveModel(g, (dir / "model.fy").string()).ok());
  ASSERT_TRUE(fs::exists(dir / "model.params/layer.0.w.npy"));
  EXPECT_NE(readText(dir / "model.fy").find("npy(\"model.params/layer.0.w.npy\")"),
            std::string::npos);
  Expected<TensorData> back = readNpy((dir / "model.params/layer.0.w.npy").string());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(*back == w);

  Expected<Graph> g2 = parseFile((dir / "model.fy").string());
  ASSERT_TRUE(g2.ok()) << g2.status().message();
  // Only the initializer kind changes: Data too large to inline reads back as Npy.
  EXPECT_EQ(testutil::graphDifference(g, *g2), "");
  EXPECT_EQ(g2->params()[0].init.kind, Initializer::Kind::Npy);
  EXPECT_EQ(printGraph(*g2), printGraph(g, {.paramsFolder = "model.params"}));
}

TEST(Printer, SaveModelSanitisesAndDeduplicatesFileNames) {
  const testutil::ScratchDir scratch("printer_test_names");
  const fs::path &dir = scratch.path();
  Graph g("g");
  ValueId a = g.addParam("conv/weight:0", TensorData(DType::U8, {70}), {}, std::nullopt, {});
  g.addParam("conv_weight_0", TensorData(DType::U8, {70}), {}, std::nullopt, {});
  g.addParam("..", TensorData(DType::U8, {70}), {}, std::nullopt, {});
  g.addParam("npy", TensorData::full(DType::U8, {2}, 3),
             Initializer{Initializer::Kind::Npy, 0, "sub/dir/w.npy"}, std::nullopt, {});
  g.addOutput(a, std::nullopt, {});
  ASSERT_TRUE(saveModel(g, (dir / "m.fy").string()).ok());
  std::string text = readText(dir / "m.fy");
  // A name that is not an identifier is quoted, so that the saved text reads back.
  EXPECT_NE(text.find("param %\"conv/weight:0\" : u8[70] = npy(\"m.params/conv_weight_0.npy\")"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("param %conv_weight_0 : u8[70] = npy(\"m.params/conv_weight_0.1.npy\")"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("npy(\"m.params/_...npy\")"), std::string::npos) << text;
  // An npy(...) param's data is written into the folder too, under the param's name: the saved
  // model needs nothing outside it.
  EXPECT_NE(text.find("param %npy : u8[2] = npy(\"m.params/npy.npy\")"), std::string::npos) << text;
  EXPECT_TRUE(fs::exists(dir / "m.params/conv_weight_0.npy"));
  EXPECT_TRUE(fs::exists(dir / "m.params/conv_weight_0.1.npy"));
  EXPECT_TRUE(fs::exists(dir / "m.params/_...npy"));
  EXPECT_TRUE(fs::exists(dir / "m.params/npy.npy"));
  EXPECT_FALSE(fs::exists(dir / "sub"));
  Expected<TensorData> npy = readNpy((dir / "m.params/npy.npy").string());
  ASSERT_TRUE(npy.ok()) << npy.status().message();
  EXPECT_TRUE(*npy == g.params()[3].data);
  // The saved model reads back, every name as it was.
  Expected<Graph> back = parseFile((dir / "m.fy").string());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(back->findValue("conv/weight:0"));
  EXPECT_TRUE(back->findValue(".."));
}

TEST(Printer, SaveModelReportsUnwritablePaths) {
  Graph g("g");
  ValueId a = g.addParam("a", TensorData(DType::F32, {2}), {}, std::nullopt, {});
  g.addOutput(a, std::nullopt, {});
  Status s = saveModel(g, "/nonexistent-folder-for-ferry/x/m.fy");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.diagnostics()[0].code, "io");
  EXPECT_NE(s.message().find("/nonexistent-folder-for-ferry/x/m.fy"), std::string::npos);
}

// A graph with one param %w of `n` u8 elements (above the inline limit from 65 on).
Graph graphWithParam(int64_t n, uint8_t value) {
  Graph g("g");
  ValueId w = g.addParam("w", TensorData::full(DType::U8, {n}, value), {}, std::nullopt, {});
  g.addOutput(w, std::nullopt, {});
  return g;
}

// A second save onto a model whose params folder holds a file it would write is refused before
// anything is written; the first model keeps every byte. The .fy file itself may be replaced.
TEST(Printer, SaveModelNeverReplacesAParamFile) {
  const testutil::ScratchDir scratch("printer_test_no_replace");
  const fs::path &dir = scratch.path();
  const std::string path = (dir / "m.fy").string();
  ASSERT_TRUE(saveModel(graphWithParam(100, 1), path).ok());
  const std::string text = readText(path), params = readText(dir / "m.params/w.npy");
  Status s = saveModel(graphWithParam(100, 2), path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.diagnostics()[0].code, "io");
  const std::string folder = (dir / "m.params").string();
  EXPECT_EQ(s.message(), "error: " + folder +
                             "/w.npy exists; a model's params are written into "
                             "a folder of its own, never over a file that is there: remove " +
                             folder + " or write the model elsewhere [io]")
      << s.message();
  EXPECT_FALSE(checkSaveModel(graphWithParam(100, 2), path).ok());
  EXPECT_EQ(readText(path), text);
  EXPECT_TRUE(readText(dir / "m.params/w.npy") == params);
  // A model without param files replaces the text alone; one whose files are new goes into the
  // folder that is there.
  ASSERT_TRUE(saveModel(graphWithParam(3, 7), path).ok());
  EXPECT_NE(readText(path).find("= [7, 7, 7]"), std::string::npos) << readText(path);
  Graph other("g");
  ValueId v = other.addParam("v", TensorData::full(DType::U8, {100}, 5), {}, std::nullopt, {});
  other.addOutput(v, std::nullopt, {});
  ASSERT_TRUE(saveModel(other, path).ok());
  EXPECT_TRUE(readText(dir / "m.params/w.npy") == params);
  EXPECT_TRUE(fs::exists(dir / "m.params/v.npy"));
  // A file where the params folder would be.
  std::ofstream(dir / "f.params") << "mine";
  Status file = saveModel(graphWithParam(100, 1), (dir / "f.fy").string());
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.message().find("f.params: is there and is not a folder"), std::string::npos)
      << file.message();
  EXPECT_EQ(readText(dir / "f.params"), "mine");
  EXPECT_FALSE(fs::exists(dir / "f.fy"));
}

// The text is written last; when it cannot be, the param files and the folder made for them are
// removed again: no model names a missing file, and nothing is left behind.
TEST(Printer, SaveModelLeavesNothingBehindWhenItFails) {
  const testutil::ScratchDir scratch("printer_test_undo");
  const fs::path &dir = scratch.path();
  fs::create_directories(dir / "m.fy");  // the text cannot be written: a folder is there
  Status s = saveModel(graphWithParam(100, 1), (dir / "m.fy").string());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.diagnostics()[0].code, "io");
  std::vector<std::string> left;
  for (const auto &entry : fs::recursive_directory_iterator(dir))
    left.push_back(entry.path().lexically_relative(dir).string());
  EXPECT_EQ(left, std::vector<std::string>{"m.fy"});
  // A params folder that was there stays, with what others put in it.
  fs::create_directories(dir / "m.params");
  std::ofstream(dir / "m.params/other.npy") << "theirs";
  ASSERT_FALSE(saveModel(graphWithParam(100, 1), (dir / "m.fy").string()).ok());
  EXPECT_EQ(readText(dir / "m.params/other.npy"), "theirs");
  EXPECT_FALSE(fs::exists(dir / "m.params/w.npy"));
}

TEST(Printer, ParamsFolderIsNamedAfterTheModel) {
  EXPECT_EQ(paramsFolderName("out.fy"), "out.params");
  EXPECT_EQ(paramsFolderName("dir/model.v2.fy"), "model.v2.params");
  EXPECT_EQ(paramsFolderName("/abs/out"), "out.params");
  EXPECT_EQ(paramsFolderName("out.txt"), "out.txt.params");
  EXPECT_EQ(paramsFolderName(".fy"), ".fy.params");
}

// printModel, for a stream: what needs a file prints inline up to maxInline elements, and is an
// error naming the param beyond; unchanged Npy params keep their path whatever their size.
TEST(Printer, PrintModelRefusesWhatItCannotInline) {
  Graph g = graphWithParam(70000, 3);
  Expected<std::string> refused = printModel(g);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().diagnostics()[0].code, "limit");
  EXPECT_EQ(refused.status().diagnostics()[0].message,
            "param %w : u8[70000] (70000 elements) is in no file and too large to print inline "
            "(more than 65536 elements)");
  Expected<std::string> raised = printModel(g, {.maxInline = 70000});
  ASSERT_TRUE(raised.ok());
  EXPECT_EQ(*raised, printGraph(g));
  EXPECT_TRUE(printModel(g, {.paramsFolder = "g.params"}).ok());
  EXPECT_TRUE(printModel(graphWithParam(65536, 3)).ok());

  // A converted Npy param's file holds what the model declared: it prints inline, or is refused.
  Graph n("g");
  ValueId w = n.addParam("w", TensorData::full(DType::F16, {70000}, 1),
                         {Initializer::Kind::Npy, 0, "w.npy"}, std::nullopt, {"m.fy", 3, 9});
  n.addOutput(w, std::nullopt, {});
  EXPECT_NE(printGraph(n).find("npy(\"w.npy\")"), std::string::npos);
  n.param(0).foldedFrom = DType::F32;
  Expected<std::string> folded = printModel(n);
  ASSERT_FALSE(folded.ok());
  EXPECT_EQ(folded.status().message(),
            "m.fy:3:9: error: param %w : f16[70000] (70000 elements) is in no file (converted "
            "from f32 at compile time) and too large to print inline (more than 65536 elements) "
            "[limit]");
  EXPECT_EQ(printGraph(n).find("npy("), std::string::npos);
}

}  // namespace
}  // namespace ferry

namespace ferry {
namespace {

// Imported models name values as they like (`onnx::MatMul_84`, `/ln1/Add_output_0`): such a
// name is written quoted, %"...", printed so, and read back as the same name.
TEST(Printer, NamesThatAreNotIdentifiersAreQuotedAndReadBack) {
  const std::string text = R"(graph "torch-jit" {
  input %"input.1" : f32[2,3] @cpu
  input %"/ln1/x" : f32[3] @cpu
  param %"onnx::MatMul_84" : f32[3] = [1.0, 2.0, 3.0]
  %"/ln1/Add_output_0" : f32[2,3] = add(%"input.1", %"onnx::MatMul_84")
  %"a \"b\"\tc" : f32[2,3] = mul(%"/ln1/Add_output_0", %"/ln1/x")
  %plain_name.2 : f32[2,3] = relu(%"a \"b\"\tc")
  output %plain_name.2
  output %"/ln1/Add_output_0"
}
)";
  Graph g = parseOk(text, "q.fy");
  ASSERT_TRUE(g.findValue("onnx::MatMul_84"));
  ASSERT_TRUE(g.findValue("a \"b\"\tc"));
  ASSERT_TRUE(g.findValue("/ln1/x"));
  // "input.1" is plain (letters, digits, '.'): printed without quotes; the rest as written.
  std::string expected = text;
  expected.replace(expected.find("%\"input.1\""), 10, "%input.1");
  expected.replace(expected.find("%\"input.1\""), 10, "%input.1");
  EXPECT_EQ(printGraph(g, {.locations = false}), expected);
  Graph again = parseOk(printGraph(g, {.locations = false}), "q2.fy");
  EXPECT_EQ(printGraph(again, {.locations = false}), expected);
}

// Every diagnostic of a text that must not parse, as text.
std::string parseErrors(std::string_view text) {
  Expected<Graph> g = parseGraph(text, "e.fy");
  EXPECT_FALSE(g.ok()) << text;
  return g.ok() ? std::string() : renderText(g.status().diagnostics(), {.snippet = false});
}

TEST(Printer, QuotedNamesInErrors) {
  // Used before its definition, undefined, redefined: the messages quote the name as written.
  const std::string errors = parseErrors(R"(graph g {
  input %"a::b" : f32[2]
  %y = relu(%"c::d")
  %"c::d" = neg(%"a::b")
  %"c::d" = abs(%"a::b")
  %z = relu(%"nope")
  output %y
}
)");
  EXPECT_NE(errors.find("%\"c::d\" is used before its definition at line 4"), std::string::npos)
      << errors;
  EXPECT_NE(errors.find("redefinition of %\"c::d\""), std::string::npos) << errors;
  EXPECT_NE(errors.find("use of undefined value %nope"), std::string::npos) << errors;
  // Malformed quoted names are parse errors with a column, never a crash.
  EXPECT_NE(parseErrors("graph g {\n  input %\"\" : f32[2]\n}\n").find("2:9"), std::string::npos);
  EXPECT_NE(parseErrors("graph g {\n  input %\"ab : f32[2]\n}\n").find("unterminated string"),
            std::string::npos);
  EXPECT_NE(parseErrors("graph g {\n  input %\"a\\q\" : f32[2]\n}\n").find("unknown escape"),
            std::string::npos);
}

// An imported node's location, `model.onnx: node 'Gemm_3' (#12, Gemm)`, is printed as its
// origin comment and read back as the same location.
TEST(Printer, ImportedNodeLocationsAreReadBack) {
  Graph g = parseOk(R"(graph g {
  input %x : f32[2]
  %h = relu(%x)  # model.onnx: node '/layer 1/Relu' (#12, Relu)
  %k = neg(%h)   # model.onnx: node #3 (Neg)
  output %k
}
)",
                    "test.fy");
  const Node &relu = *g.producer(*g.findValue("h"));
  EXPECT_EQ(relu.loc.file.view(), "model.onnx");
  EXPECT_EQ(relu.loc.node.view(), "node '/layer 1/Relu' (#12, Relu)");
  EXPECT_EQ(relu.loc.line, 13);
  EXPECT_TRUE(relu.loc.imported());
  EXPECT_EQ(relu.loc.str(), "model.onnx: node '/layer 1/Relu' (#12, Relu)");
  const Node &neg = *g.producer(*g.findValue("k"));
  EXPECT_EQ(neg.loc.line, 4);
  EXPECT_EQ(neg.loc.str(), "model.onnx: node #3 (Neg)");
  const std::string printed = printGraph(g);
  EXPECT_NE(printed.find("# model.onnx: node '/layer 1/Relu' (#12, Relu)"), std::string::npos)
      << printed;
  Graph again = parseOk(printed, "again.fy");
  EXPECT_EQ(again.producer(*again.findValue("h"))->loc, relu.loc);
  // Not a location: no '#N' index, or a control character.
  Graph other = parseOk("graph g {\n  input %x : f32[2]\n  %h = relu(%x)  # m.onnx: node 'a'\n"
                        "  output %h\n}\n",
                        "o.fy");
  EXPECT_EQ(other.producer(*other.findValue("h"))->loc.str(), "o.fy:3:3");
}

}  // namespace
}  // namespace ferry
