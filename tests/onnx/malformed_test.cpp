// tests/onnx/malformed_test.cpp — malformed and unsupported models: every problem is an error with
// a location, never a crash, and one run reports all of them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "onnx/onnx_model_util.h"

namespace ferry::onnx_test {
namespace {

/// The import's error messages (each with its location), joined by newlines; "" when it passes.
std::string errors(const Model &m, const OnnxImportOptions &o = {}, const std::string &dir = "") {
  return m.importErrors(o, dir);
}

int errorCount(const Model &m, const OnnxImportOptions &o = {}) {
  Expected<Graph> g = m.import(o);
  return g.ok() ? 0 : static_cast<int>(g.status().diagnostics().size());
}

Model addModel() {
  Model m;
  m.input("x", DType::F32, {2});
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.output("y");
  return m;
}

TEST(OnnxMalformed, TruncatedBytesAreOneErrorNamingTheFile) {
  std::string b = addModel().bytes();
  for (size_t cut : {b.size() / 2, b.size() - 1, size_t{3}}) {
    std::string part = b.substr(0, cut);
    Expected<Graph> g = importOnnx(std::as_bytes(std::span(part)), "cut.onnx", "");
    ASSERT_FALSE(g.ok()) << cut;
    EXPECT_NE(g.status().message().find("cut.onnx"), std::string::npos) << g.status().message();
  }
}

TEST(OnnxMalformed, RandomBytesNeverCrash) {
  std::string b = addModel().bytes();
  uint64_t state = 12345;
  for (int round = 0; round < 2000; ++round) {
    std::string c = b;
    for (int k = 0; k < 4; ++k) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      c[(state >> 33) % c.size()] = static_cast<char>(state >> 56);
    }
    (void)importOnnx(std::as_bytes(std::span(c)), "fuzz.onnx", "");
  }
}

TEST(OnnxMalformed, WrongFieldTypesAreErrors) {
  // The graph field (7) written as a varint: protobuf refuses the wire type.
  std::string b = addModel().bytes();
  std::string bad = std::string("\x3a\x02\x08\x01", 4);  // graph: length 2, but a varint inside
  bad[0] = 0x38;                                         // field 7, wire type 0 (varint)
  bad = bad.substr(0, 2);
  Expected<Graph> g = importOnnx(std::as_bytes(std::span(bad)), "wire.onnx", "");
  EXPECT_FALSE(g.ok());
  // An attribute of the wrong kind names the attribute, the expected and the given kind.
  Model m;
  m.input("x", DType::F32, {2});
  attr(m.node("LeakyRelu", {"x"}, {"y"}, "lr"), "alpha", std::string("big"));
  attr(m.node("Gelu", {"x"}, {"z"}, "g"), "approximate", int64_t{1});
  m.output("y");
  m.output("z");
  std::string e = errors(m);
  EXPECT_NE(e.find("node 'g' (#1, Gelu): Gelu: attribute 'approximate' is INT, expected STRING"),
            std::string::npos)
      << e;
}

TEST(OnnxMalformed, DanglingInputAndCycleNameTheNodes) {
  Model m;
  m.input("x", DType::F32, {2});
  m.node("Add", {"x", "b"}, {"a"}, "first");  // b is defined later: a cycle with 'second'
  m.node("Neg", {"a"}, {"b"}, "second");
  m.node("Abs", {"nowhere"}, {"c"}, "third");
  m.node("Relu", {"c"}, {"d"}, "fourth");  // reads a poisoned value: no second error
  m.output("b");
  m.output("d");
  std::string e = errors(m);
  EXPECT_NE(e.find("model.onnx: node 'first' (#0, Add): node 'first' (#0, Add) reads 'b', which "
                   "node 'second' (#1, Neg) defines later"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("node 'third' (#2, Abs) reads 'nowhere', which no input, initializer or node "
                   "defines"),
            std::string::npos)
      << e;
  EXPECT_EQ(errorCount(m), 2) << e;
}

TEST(OnnxMalformed, DuplicateDefinitions) {
  Model m;
  m.input("x", DType::F32, {2});
  m.node("Neg", {"x"}, {"y"}, "n1");
  m.node("Abs", {"x"}, {"y"}, "n2");
  m.output("y");
  std::string e = errors(m);
  EXPECT_NE(e.find("'y' is defined twice: by node 'n1' (#0, Neg) and by node 'n2' (#1, Abs)"),
            std::string::npos)
      << e;
}

TEST(OnnxMalformed, AbsurdDims) {
  Model m;
  m.input("x", DType::F32, {-3, 2});
  m.input("big", DType::F32, {int64_t{1} << 40, int64_t{1} << 40});
  m.node("Neg", {"x"}, {"y"});
  m.node("Neg", {"big"}, {"z"});
  m.output("y");
  m.output("z");
  std::string e = errors(m);
  EXPECT_NE(e.find("input 'x' has a negative dim -3 (dim 0)"), std::string::npos) << e;
  EXPECT_NE(e.find("input 'big' has shape [1099511627776,1099511627776], whose size overflows"),
            std::string::npos)
      << e;
  EXPECT_EQ(errorCount(m), 2) << e;
}

TEST(OnnxMalformed, TenGigabyteInitializerIsRefusedBeforeAllocating) {
  Model m;
  m.input("x", DType::F32, {2});
  onnx::TensorProto *t = m.graph().add_initializer();
  t->set_name("huge");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(int64_t{5} << 29);  // 2.7e9 floats: 10 GiB
  t->add_dims(2);
  m.node("Add", {"x", "huge"}, {"y"}, "add");
  m.output("y");
  std::string e = errors(m);
  EXPECT_NE(e.find("initializer 'huge' declares f32[2684354560,2] (21474836480 bytes), more than "
                   "the limit of 4294967296 bytes"),
            std::string::npos)
      << e;
  EXPECT_EQ(errorCount(m), 1) << e;  // the Add reading it says nothing more
  // Under the per-tensor limit but over the total.
  OnnxImportOptions o;
  o.maxParamBytes = int64_t{1} << 40;
  o.maxTotalParamBytes = int64_t{1} << 30;
  e = errors(m, o);
  EXPECT_NE(e.find("the model's initializers declare 21474836480 bytes together, more than the "
                   "limit of 1073741824 bytes"),
            std::string::npos)
      << e;
}

TEST(OnnxMalformed, RawDataOfTheWrongLength) {
  Model m;
  m.input("x", DType::F32, {2});
  onnx::TensorProto t = tensorProto(tensor(DType::F32, {3}, {1, 2, 3}), "w");
  t.set_raw_data(t.raw_data().substr(0, 8));
  *m.graph().add_initializer() = t;
  onnx::TensorProto typed;
  typed.set_name("v");
  typed.set_data_type(onnx::TensorProto::INT64);
  typed.add_dims(2);
  typed.add_int64_data(1);
  *m.graph().add_initializer() = typed;
  m.node("Add", {"x", "w"}, {"y"});
  m.node("Neg", {"v"}, {"z"});
  m.output("y");
  m.output("z");
  std::string e = errors(m);
  EXPECT_NE(e.find("initializer 'w': initializer 'w' has 8 bytes of raw_data, but f32[3] takes 12"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("initializer 'v' is i64[2] (2 values) but its int64_data holds 1"),
            std::string::npos)
      << e;
}

TEST(OnnxMalformed, UnsupportedOpsAreOneErrorListingAllWithTheOtherErrors) {
  Model m;
  m.input("x", DType::F32, {2});
  m.node("LSTM", {"x"}, {"a"}, "lstm1");
  m.node("LSTM", {"x"}, {"b"}, "lstm2");
  m.node("Resize", {"x"}, {"c"});
  auto &custom = m.node("FusedThing", {"x"}, {"d"}, "ms");
  custom.set_domain("com.example");
  m.node("Relu", {"a"}, {"e"}, "after");  // reads an unsupported op's output: quiet
  attr(m.node("Abs", {"x"}, {"f"}, "abs"), "bogus", int64_t{1});
  m.output("e");
  m.output("b");
  m.output("c");
  m.output("d");
  m.output("f");
  Expected<Graph> g = m.import();
  ASSERT_FALSE(g.ok());
  const auto &ds = g.status().diagnostics();
  ASSERT_EQ(ds.size(), 2u) << g.status().message();
  EXPECT_EQ(ds[0].message, "Abs: attribute 'bogus' is not supported");
  EXPECT_EQ(ds[0].loc.str(), "model.onnx: node 'abs' (#5, Abs)");
  EXPECT_EQ(ds[1].code, "unsupported");
  EXPECT_EQ(ds[1].message, "3 ops are not supported: LSTM, Resize, com.example.FusedThing");
  ASSERT_EQ(ds[1].notes.size(), 3u);
  EXPECT_EQ(ds[1].notes[0].message, "LSTM: 2 nodes ('lstm1', 'lstm2')");
  EXPECT_EQ(ds[1].notes[1].message, "Resize: 1 node (#2)");
  EXPECT_EQ(ds[1].notes[1].loc.str(), "model.onnx: node #2 (Resize)");
}

TEST(OnnxMalformed, SymbolicDimWithoutAShape) {
  Model m;
  m.input("x", DType::F32, {"batch_size", 784});
  m.input("y", DType::F32, {"n", "m"});
  m.node("Add", {"x", "x"}, {"s"});
  m.node("Neg", {"y"}, {"t"});
  m.output("s");
  m.output("t");
  std::string e = errors(m);
  EXPECT_NE(e.find("model.onnx: input 'x': input 'x' has a symbolic dim 'batch_size' (dim 0): "
                   "give its shape with --shape x=..."),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("input 'y' has a symbolic dim 'n' (dim 0) and symbolic dim 'm' (dim 1)"),
            std::string::npos)
      << e;
  EXPECT_EQ(errorCount(m), 2) << e;
  // A given shape must agree with the fixed dims, and name an input.
  OnnxImportOptions o;
  o.inputShapes["x"] = {1, 10};
  o.inputShapes["y"] = {2, 2};
  o.inputShapes["nope"] = {1};
  e = errors(m, o);
  EXPECT_NE(e.find("input 'x' is given shape [1,10] (--shape), which disagrees with its declared "
                   "shape [?,784]"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("--shape names 'nope', which is not an input of the model (its inputs: 'x', "
                   "'y')"),
            std::string::npos)
      << e;
  EXPECT_EQ(errorCount(m, o), 2) << e;
}

TEST(OnnxMalformed, Opsets) {
  // An older opset is read in its ops' forms of that opset; Softmax's before 13 is refused (its
  // meaning changed without a change of attributes).
  Model old(11);
  old.input("x", DType::F32, {2, 2});
  old.node("Relu", {"x"}, {"y"});
  old.node("Softmax", {"y"}, {"s"}, "sm");
  old.output("s");
  EXPECT_NE(errors(old).find("Softmax before opset 13 (its older form)"), std::string::npos)
      << errors(old);
  EXPECT_EQ(errors(old).find("Relu"), std::string::npos) << errors(old);
  Model zero(0);
  zero.input("x", DType::F32, {2});
  zero.node("Relu", {"x"}, {"y"});
  zero.output("y");
  EXPECT_NE(errors(zero).find("the model imports opset 0 of the default ONNX domain; ferry imports "
                              "opsets 1 to 28"),
            std::string::npos)
      << errors(zero);
  Model future(30);
  future.input("x", DType::F32, {2});
  future.node("Relu", {"x"}, {"y"});
  future.output("y");
  EXPECT_NE(errors(future).find("opset 30"), std::string::npos);
  Model none;
  none.proto().clear_opset_import();
  EXPECT_NE(errors(none).find("imports no opset of the default ONNX domain"), std::string::npos);
  Model noGraph;
  noGraph.proto().clear_graph();
  EXPECT_NE(errors(noGraph).find("the model has no graph"), std::string::npos);
}

TEST(OnnxMalformed, DeclaredOutputTypeMustAgree) {
  Model m;
  m.input("x", DType::F32, {2, 3});
  m.node("Relu", {"x"}, {"y"});
  m.output("y", DType::F16, {2, 4});
  EXPECT_NE(errors(m).find("output 'y' is declared f16[2,4] but computes f32[2,3]"),
            std::string::npos)
      << errors(m);
}

TEST(OnnxMalformed, ExternalDataMustStayInTheModelsFolder) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("ferry_onnx_ext_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "w.bin", std::ios::binary);
    float v[4] = {0, 1, 2, 3};
    out.write(reinterpret_cast<const char *>(v), sizeof v);
  }
  auto model = [&](const std::string &location, int64_t offset, int64_t n) {
    Model m;
    m.input("x", DType::F32, {n});
    onnx::TensorProto *t = m.graph().add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(n);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto *e = t->add_external_data();
    e->set_key("location");
    e->set_value(location);
    e = t->add_external_data();
    e->set_key("offset");
    e->set_value(std::to_string(offset));
    m.node("Add", {"x", "w"}, {"y"});
    m.output("y");
    return m;
  };
  Expected<Graph> ok = model("w.bin", 4, 3).import({}, dir.string());
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->params()[0].data.toDoubles(), (std::vector<double>{1, 2, 3}));
  EXPECT_NE(
      errors(model("../w.bin", 0, 3), {}, dir.string()).find("must be a relative path inside"),
      std::string::npos);
  EXPECT_NE(errors(model("/etc/passwd", 0, 3), {}, dir.string()).find("must be a relative path"),
            std::string::npos);
  EXPECT_NE(errors(model("w.bin", 8, 3), {}, dir.string())
                .find("has 16 bytes, too few for 12 bytes at offset 8"),
            std::string::npos)
      << errors(model("w.bin", 8, 3), {}, dir.string());
  EXPECT_NE(errors(model("w.bin", 0, 3)).find("the model was not read from a file"),
            std::string::npos);
  EXPECT_NE(errors(model("missing.bin", 0, 3), {}, dir.string()).find("is missing or not a file"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(OnnxMalformed, UnsupportedDataTypeNamesIt) {
  Model m;
  onnx::ValueInfoProto *in = m.graph().add_input();
  in->set_name("s");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::STRING);
  in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(1);
  m.node("Identity", {"s"}, {"y"});
  m.output("y");
  EXPECT_NE(errors(m).find("input 's' has data type STRING, which ferry does not support (it has "
                           "bool, u8"),
            std::string::npos)
      << errors(m);
}

}  // namespace
}  // namespace ferry::onnx_test

namespace ferry::onnx_test {
namespace {

// Every input the fuzzer ever crashed the importer with (tests/fuzz/regressions/onnx) imports or
// is refused with diagnostics; one that imports verifies and its `.fy` text reads back, as the
// fuzz target (tests/fuzz/onnx_import_fuzz.cpp) requires.
TEST(OnnxMalformed, FuzzRegressionsImportOrAreRefused) {
  const std::filesystem::path dir =
      std::filesystem::path(FERRY_SOURCE_DIR) / "tests/fuzz/regressions/onnx";
  int seen = 0;
  for (const auto &entry : std::filesystem::directory_iterator(dir)) {
    SCOPED_TRACE(entry.path().string());
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ++seen;
    // The fuzz target's limits.
    OnnxImportOptions options;
    options.maxParamBytes = int64_t{1} << 20;
    options.maxTotalParamBytes = int64_t{1} << 22;
    Expected<Graph> g = importOnnx(std::as_bytes(std::span(bytes)), "regression.onnx", "", options);
    if (!g) {
      EXPECT_FALSE(g.status().diagnostics().empty());
      continue;
    }
    EXPECT_TRUE(verify(*g).ok());
    const std::string printed = printGraph(*g, {.locations = false});
    Expected<Graph> again = parseGraph(printed, "regression.fy");
    ASSERT_TRUE(again.ok()) << printed << again.status().message();
    EXPECT_EQ(printGraph(*again, {.locations = false}), printed);
  }
  EXPECT_GE(seen, 4);
}

// Folding at import is bounded by the param limits: a padded AveragePool whose zero padding
// folded into constants of 5.4 MB each, from a 300-byte model (onnx_import_fuzz, third session),
// keeps its padding as expand nodes under a limit of 1 MB, and every constant within it.
TEST(OnnxMalformed, ImportFoldsNothingPastTheParamLimits) {
  const std::filesystem::path file = std::filesystem::path(FERRY_SOURCE_DIR) /
                                     "tests/fuzz/regressions/onnx/fold-pad-constants-past-parse-limit.onnx";
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_LT(bytes.size(), 400u);
  OnnxImportOptions options;
  options.maxParamBytes = int64_t{1} << 20;
  options.maxTotalParamBytes = int64_t{1} << 22;
  Expected<Graph> g = importOnnx(std::as_bytes(std::span(bytes)), "pad.onnx", "", options);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(verify(*g).ok());
  int expands = 0;
  for (NodeId id : g->order()) {
    const Node &n = g->node(id);
    expands += n.op == OpKind::Expand;
    if (n.op == OpKind::Constant) {
      EXPECT_LE(g->value(n.result).type.byteSize(), size_t{1} << 20) << g->value(n.result).name;
    }
  }
  EXPECT_GE(expands, 1) << "the padding stays a node";
}

}  // namespace
}  // namespace ferry::onnx_test
