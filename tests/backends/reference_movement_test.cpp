// tests/backends/reference_movement_test.cpp — data movement, cast and constant in the
// reference interpreter: exact byte copies for every dtype, ONNX slice/gather edge cases, and
// cast rounding, wrapping into integers (through int64, saturating only there) and NaN.
#include <cmath>
#include <limits>

#include "reference_util.h"

namespace ferry::reftest {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t k2p53 = int64_t{1} << 53;
constexpr int64_t k2p62 = int64_t{1} << 62;
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(ReferenceMovement, ReshapeFamily) {
  const TensorData x = f32({2, 3}, iotaD(6, 1));
  runCases({
      {"reshape", "reshape", {x}, {attrIs("shape", {3, 2})}, f32({3, 2}, iotaD(6, 1))},
      {"reshape -1", "reshape", {x}, {attrIs("shape", {-1})}, f32({6}, iotaD(6, 1))},
      {"reshape i64 exact",
       "reshape",
       {ints(DType::I64, {2}, {k2p53 + 1, -k2p62 - 1})},
       {attrIs("shape", {1, 2})},
       ints(DType::I64, {1, 2}, {k2p53 + 1, -k2p62 - 1})},
      {"squeeze all", "squeeze", {f32({1, 3, 1}, {1, 2, 3})}, {}, f32({3}, {1, 2, 3})},
      {"squeeze one",
       "squeeze",
       {f32({1, 3, 1}, {1, 2, 3})},
       {attrIs("axes", {0})},
       f32({3, 1}, {1, 2, 3})},
      {"unsqueeze",
       "unsqueeze",
       {f32({3}, {1, 2, 3})},
       {attrIs("axes", {0, 2})},
       f32({1, 3, 1}, {1, 2, 3})},
      {"flatten from 1",
       "flatten",
       {f32({2, 3, 4}, iotaD(24))},
       {attrI("start", 1)},
       f32({2, 12}, iotaD(24))},
      {"flatten all", "flatten", {f32({2, 3, 4}, iotaD(24))}, {}, f32({24}, iotaD(24))},
      {"flatten scalar", "flatten", {f32({}, {5})}, {}, f32({1}, {5})},
      {"identity",
       "identity",
       {tensor(DType::BF16, {2}, {1.5, -2})},
       {},
       tensor(DType::BF16, {2}, {1.5, -2})},
      {"transfer",
       "transfer",
       {ints(DType::U8, {2}, {7, 255})},
       {{"to", Device::cuda(0)}},
       ints(DType::U8, {2}, {7, 255})},
      {"size-0", "reshape", {f32({0, 3}, {})}, {attrIs("shape", {3, 0})}, f32({3, 0}, {})},
  });
}

TEST(ReferenceMovement, Transpose) {
  runCases({
      {"default reverses",
       "transpose",
       {f32({2, 3}, iotaD(6, 1))},
       {},
       f32({3, 2}, {1, 4, 2, 5, 3, 6})},
      {"perm 1,0,2",
       "transpose",
       {f32({2, 2, 2}, iotaD(8))},
       {attrIs("perm", {1, 0, 2})},
       f32({2, 2, 2}, {0, 1, 4, 5, 2, 3, 6, 7})},
      {"perm 2,0,1",
       "transpose",
       {f32({1, 2, 3}, iotaD(6))},
       {attrIs("perm", {2, 0, 1})},
       f32({3, 1, 2}, {0, 3, 1, 4, 2, 5})},
      {"negative perm",
       "transpose",
       {f32({2, 3}, iotaD(6, 1))},
       {attrIs("perm", {-1, 0})},
       f32({3, 2}, {1, 4, 2, 5, 3, 6})},
      {"i64 exact",
       "transpose",
       {ints(DType::I64, {2, 1}, {k2p53 + 1, kMin})},
       {},
       ints(DType::I64, {1, 2}, {k2p53 + 1, kMin})},
      {"scalar", "transpose", {f32({}, {4})}, {}, f32({}, {4})},
  });
}

// Every dtype is copied bit for bit (NaN payloads and -0.0 included).
TEST(ReferenceMovement, EveryDTypeCopiesExactly) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    TensorData x(t, {2, 2});
    for (size_t i = 0; i < x.byteSize(); ++i) x.mutableBytes()[i] = std::byte(0x80 + 37 * i);
    if (t == DType::Bool)
      for (int64_t i = 0; i < 4; ++i) x.setInt(i, i % 2);
    struct Move {
      std::string op;
      std::vector<NamedAttr> attrs;
      Shape shape;
      std::vector<int64_t> order;  // result element i is x's element order[i]
    };
    for (const Move &m : std::vector<Move>{
             {"transpose", {}, {2, 2}, {0, 2, 1, 3}},
             {"reshape", {attrIs("shape", {4})}, {4}, {0, 1, 2, 3}},
             {"slice",
              {attrIs("starts", {-1}), attrIs("ends", {kMin}), attrIs("steps", {-1})},
              {2, 2},
              {2, 3, 0, 1}},
             {"expand", {attrIs("shape", {2, 2, 2})}, {2, 2, 2}, {0, 1, 2, 3, 0, 1, 2, 3}},
             {"concat", {}, {2, 2}, {0, 1, 2, 3}},
         }) {
      SCOPED_TRACE(m.op);
      Expected<TensorData> r = eval(m.op, {x}, m.attrs, TensorType{t, m.shape});
      ASSERT_TRUE(r.ok()) << r.status().message();
      size_t es = dtypeSize(t);
      for (size_t i = 0; i < m.order.size(); ++i)
        for (size_t b = 0; b < es; ++b)
          EXPECT_EQ(r->bytes()[i * es + b], x.bytes()[m.order[i] * es + b]) << "element " << i;
    }
  }
}

TEST(ReferenceMovement, Concat) {
  runCases({
      {"axis 0",
       "concat",
       {f32({1, 2}, {1, 2}), f32({2, 2}, {3, 4, 5, 6})},
       {},
       f32({3, 2}, {1, 2, 3, 4, 5, 6})},
      {"axis 1",
       "concat",
       {f32({2, 1}, {1, 2}), f32({2, 2}, {3, 4, 5, 6})},
       {attrI("axis", 1)},
       f32({2, 3}, {1, 3, 4, 2, 5, 6})},
      {"axis -1, three operands",
       "concat",
       {f32({1, 1}, {1}), f32({1, 2}, {2, 3}), f32({1, 1}, {4})},
       {attrI("axis", -1)},
       f32({1, 4}, {1, 2, 3, 4})},
      {"promotes i32 and f32",
       "concat",
       {ints(DType::I32, {1}, {7}), f32({1}, {0.5})},
       {},
       f32({2}, {7, 0.5})},
      {"size-0 operand", "concat", {f32({0, 2}, {}), f32({1, 2}, {1, 2})}, {}, f32({1, 2}, {1, 2})},
      {"i64 exact",
       "concat",
       {ints(DType::I64, {1}, {k2p53 + 1}), ints(DType::I64, {1}, {kMax})},
       {},
       ints(DType::I64, {2}, {k2p53 + 1, kMax})},
  });
}

TEST(ReferenceMovement, Slice) {
  const TensorData x = f32({10}, iotaD(10));
  std::vector<double> reversed;
  for (int i = 9; i >= 0; --i) reversed.push_back(i);
  auto slice = [](std::vector<int64_t> starts, std::vector<int64_t> ends,
                  std::vector<int64_t> steps = {}, std::vector<int64_t> axes = {}) {
    return std::vector<NamedAttr>{attrIs("starts", std::move(starts)),
                                  attrIs("ends", std::move(ends)), attrIs("axes", std::move(axes)),
                                  attrIs("steps", std::move(steps))};
  };
  runCases({
      {"range", "slice", {x}, slice({2}, {7}), f32({5}, {2, 3, 4, 5, 6})},
      {"step 2", "slice", {x}, slice({2}, {7}, {2}), f32({3}, {2, 4, 6})},
      {"step 3 stops short", "slice", {x}, slice({0}, {10}, {3}), f32({4}, {0, 3, 6, 9})},
      {"negative start, huge end", "slice", {x}, slice({-3}, {kMax}), f32({3}, {7, 8, 9})},
      {"reverse", "slice", {x}, slice({-1}, {kMin}, {-1}), f32({10}, reversed)},
      {"negative step 3", "slice", {x}, slice({8}, {2}, {-3}), f32({2}, {8, 5})},
      {"clamped", "slice", {x}, slice({-100}, {100}), f32({10}, iotaD(10))},
      {"empty", "slice", {x}, slice({5}, {2}), f32({0}, {})},
      {"negative step, empty", "slice", {x}, slice({2}, {5}, {-1}), f32({0}, {})},
      {"step longer than the dim", "slice", {x}, slice({9}, {kMin}, {kMin}), f32({1}, {9})},
      {"axes",
       "slice",
       {f32({2, 3}, iotaD(6))},
       slice({1}, {3}, {}, {1}),
       f32({2, 2}, {1, 2, 4, 5})},
      {"negative axes",
       "slice",
       {f32({2, 3}, iotaD(6))},
       slice({0, 1}, {1, 2}, {}, {-1, 0}),
       f32({1, 1}, {3})},
      {"size-0 dim, negative step",
       "slice",
       {f32({0}, {})},
       slice({-1}, {kMin}, {-1}),
       f32({0}, {})},
  });
}

TEST(ReferenceMovement, SliceRejectsZeroStep) {
  Expected<TensorData> r = eval("slice", {f32({3}, {1, 2, 3})},
                                {attrIs("starts", {0}), attrIs("ends", {3}), attrIs("steps", {0})},
                                f32({3}, {0, 0, 0}).type());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().diagnostics()[0].code, "attr");
}

TEST(ReferenceMovement, Gather) {
  const TensorData data = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  runCases({
      {"negative index wraps",
       "gather",
       {data, ints(DType::I64, {2}, {2, -3})},
       {},
       f32({2, 2}, {5, 6, 1, 2})},
      {"axis 1, i32 indices",
       "gather",
       {data, ints(DType::I32, {2}, {1, 0})},
       {attrI("axis", 1)},
       f32({3, 2}, {2, 1, 4, 3, 6, 5})},
      {"axis -1",
       "gather",
       {data, ints(DType::I32, {1}, {-1})},
       {attrI("axis", -1)},
       f32({3, 1}, {2, 4, 6})},
      {"scalar index drops the dim",
       "gather",
       {data, ints(DType::I64, {}, {1})},
       {},
       f32({2}, {3, 4})},
      {"2-D indices",
       "gather",
       {f32({3}, {10, 20, 30}), ints(DType::I64, {2, 2}, {0, 2, 1, 1})},
       {},
       f32({2, 2}, {10, 30, 20, 20})},
      {"no indices", "gather", {data, ints(DType::I64, {0}, {})}, {}, f32({0, 2}, {})},
      {"i64 exact",
       "gather",
       {ints(DType::I64, {2}, {k2p53 + 1, kMin}), ints(DType::I32, {2}, {1, 0})},
       {},
       ints(DType::I64, {2}, {kMin, k2p53 + 1})},
  });
}

TEST(ReferenceMovement, GatherOutOfRange) {
  const TensorData data = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  for (int64_t bad : {3, -4}) {
    Expected<TensorData> r = eval("gather", {data, ints(DType::I64, {2}, {0, bad})}, {},
                                  f32({2, 2}, {0, 0, 0, 0}).type());
    ASSERT_FALSE(r.ok());
    const Diagnostic &d = r.status().diagnostics()[0];
    EXPECT_EQ(d.code, "runtime");
    EXPECT_EQ(d.loc, (Location{"test.fy", 7, 3}));
    EXPECT_EQ(d.message,
              "'gather' index " + std::to_string(bad) +
                  " at [1] is out of range for axis 0 of size 3 in f32[3,2]: allowed -3 to 2");
  }
}

TEST(ReferenceMovement, Expand) {
  runCases({
      {"column",
       "expand",
       {f32({3, 1}, {1, 2, 3})},
       {attrIs("shape", {3, 4})},
       f32({3, 4}, {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3})},
      {"bidirectional (ONNX)",
       "expand",
       {f32({3, 1}, {1, 2, 3})},
       {attrIs("shape", {1, 2})},
       f32({3, 2}, {1, 1, 2, 2, 3, 3})},
      {"scalar", "expand", {f32({}, {7})}, {attrIs("shape", {2, 2})}, f32({2, 2}, {7, 7, 7, 7})},
      {"new leading dims",
       "expand",
       {f32({2}, {1, 2})},
       {attrIs("shape", {2, 1, 2})},
       f32({2, 1, 2}, {1, 2, 1, 2})},
      {"to size 0", "expand", {f32({1}, {1})}, {attrIs("shape", {0})}, f32({0}, {})},
  });
}

TEST(ReferenceMovement, Cast) {
  auto to = [](DType t) { return std::vector<NamedAttr>{{"to", t}}; };
  runCases({
      // Truncate toward zero into int64, then wrap; NaN -> 0 (storeDouble).
      {"f32 to u8",
       "cast",
       {f32({5}, {300.7, -1.5, kNaN, -0.5, 255.9})},
       to(DType::U8),
       ints(DType::U8, {5}, {44, 255, 0, 0, 255})},
      {"f32 to i32",
       "cast",
       {f32({5}, {-1.5, 2.9, kNaN, 3e9, -3e9})},
       to(DType::I32),
       ints(DType::I32, {5}, {-1, 2, 0, -1294967296LL, 1294967296LL})},
      {"f64 to i64 saturates",
       "cast",
       {tensor(DType::F64, {3}, {1e19, -1e19, -kInf})},
       to(DType::I64),
       ints(DType::I64, {3}, {kMax, kMin, kMin})},
      // 1 + 2^-8 is a tie between 1 and 1 + 2^-7 in bf16: even wins (1); 1 + 3·2^-8 goes up.
      {"f32 to bf16 ties to even",
       "cast",
       {f32({2}, {1.00390625, 1.01171875})},
       to(DType::BF16),
       tensor(DType::BF16, {2}, {1, 1.015625})},
      {"f32 to f16 overflow",
       "cast",
       {f32({3}, {65519, 65520, -1e6})},
       to(DType::F16),
       tensor(DType::F16, {3}, {65504, kInf, -kInf})},
      {"f64 to f32", "cast", {tensor(DType::F64, {1}, {0.1})}, to(DType::F32), f32({1}, {0.1})},
      // Integer to integer is exact and wraps modulo 2^bits, as C++20, NumPy and torch.
      {"i64 to i32",
       "cast",
       {ints(DType::I64, {3}, {k2p62 + 1, -5, 300})},
       to(DType::I32),
       ints(DType::I32, {3}, {1, -5, 300})},
      {"i64 to u8",
       "cast",
       {ints(DType::I64, {3}, {k2p62 + 1, -5, 300})},
       to(DType::U8),
       ints(DType::U8, {3}, {1, 251, 44})},
      {"i64 to i8",
       "cast",
       {ints(DType::I64, {3}, {k2p62 + 1, -5, 300})},
       to(DType::I8),
       ints(DType::I8, {3}, {1, -5, 44})},
      {"u8 to i8",
       "cast",
       {ints(DType::U8, {2}, {200, 100})},
       to(DType::I8),
       ints(DType::I8, {2}, {-56, 100})},
      {"i64 to i64 exact",
       "cast",
       {ints(DType::I64, {1}, {k2p53 + 1})},
       to(DType::I64),
       ints(DType::I64, {1}, {k2p53 + 1})},
      // 2^53 + 1 is a tie in f64: even wins.
      {"i64 to f64 rounds",
       "cast",
       {ints(DType::I64, {1}, {k2p53 + 1})},
       to(DType::F64),
       tensor(DType::F64, {1}, {9007199254740992.0})},
      {"i32 to bool",
       "cast",
       {ints(DType::I32, {3}, {0, 5, -1})},
       to(DType::Bool),
       bools({3}, {0, 1, 1})},
      {"f32 to bool",
       "cast",
       {f32({4}, {0, 0.1, kNaN, -0.0})},
       to(DType::Bool),
       bools({4}, {0, 1, 1, 0})},
      {"bool to f32", "cast", {bools({2}, {1, 0})}, to(DType::F32), f32({2}, {1, 0})},
      {"bool to i64", "cast", {bools({2}, {1, 0})}, to(DType::I64), ints(DType::I64, {2}, {1, 0})},
  });
}

TEST(ReferenceMovement, Constant) {
  TensorData value = ints(DType::I64, {2}, {k2p53 + 1, -1});
  runCases({{"constant", "constant", {}, {{"value", value}}, value}});
}

}  // namespace
}  // namespace ferry::reftest
