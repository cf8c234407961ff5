// tests/ir/npy_test.cpp — .npy round trips of every dtype, numpy's exact header, the header
// variants numpy accepts, and a clear error for each kind of corrupt or truncated file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/scratch.h"
#include "ir/npy.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;

TensorData sample(DType t, Shape shape) {
  TensorData d(t, std::move(shape));
  for (int64_t i = 0; i < d.numel(); ++i) {
    if (isFloating(t))
      d.set(i, (i - 2.5) * 0.75);
    else
      d.setInt(i, t == DType::Bool ? i % 2
                  : t == DType::U8 ? (i * 37) % 256
                                   : (i * 37) % 200 - 100);  // in range of every int type
  }
  return d;
}

// A file as numpy writes it: magic, version, header length, the header padded to 64 bytes.
std::string npyFile(std::string_view dict, std::string_view data, int major = 1) {
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  size_t lenBytes = major == 1 ? 2 : 4;
  std::string header(dict);
  size_t total = 8 + lenBytes + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  for (size_t i = 0; i < lenBytes; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + std::string(data);
}

std::string floats(std::initializer_list<float> v) {
  return std::string(reinterpret_cast<const char *>(std::data(v)), v.size() * sizeof(float));
}

TEST(Npy, RoundTripsEveryDTypeAndShape) {
  for (DType t : kAllDTypes) {
    for (const Shape &s : {Shape{}, Shape{0}, Shape{2, 3}, Shape{3}, Shape{1, 0, 2}}) {
      TensorData d = sample(t, s);
      Expected<TensorData> back = parseNpy(serializeNpy(d), "mem.npy");
      ASSERT_TRUE(back.ok()) << dtypeName(t) << shapeStr(s) << ": " << back.status().message();
      EXPECT_TRUE(*back == d) << dtypeName(t) << shapeStr(s);
    }
  }
}

TEST(Npy, FilesRoundTrip) {
  const testutil::ScratchDir dir("npy_test");
  fs::path p = dir / "bf16.npy";
  TensorData d = sample(DType::BF16, {4, 5});
  ASSERT_TRUE(writeNpy(d, p.string()).ok());
  Expected<TensorData> back = readNpy(p.string());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(*back == d);
  Expected<TensorData> missing = readNpy("/nonexistent/ferry.npy");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().diagnostics()[0].code, "npy");
  EXPECT_NE(missing.status().message().find("/nonexistent/ferry.npy: cannot open"),
            std::string::npos);
  EXPECT_FALSE(readNpy(fs::temp_directory_path().string()).ok()) << "a folder";
  EXPECT_FALSE(writeNpy(d, "/nonexistent/folder/x.npy").ok());
}

TEST(Npy, HeaderIsExactlyWhatNumpyWrites) {
  // np.save(f, np.zeros((2, 3), np.float32)) writes this 128-byte header.
  std::string bytes = serializeNpy(TensorData(DType::F32, {2, 3}));
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  std::string want = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict +
                     std::string(117 - dict.size(), ' ') + "\n";
  ASSERT_EQ(bytes.size(), 128u + 24u);
  EXPECT_EQ(bytes.substr(0, 128), want);
  EXPECT_NE(serializeNpy(TensorData(DType::I8, {3}))
                .find("'descr': '|i1', 'fortran_order': False, 'shape': (3,), }"),
            std::string::npos);
  EXPECT_NE(serializeNpy(TensorData(DType::Bool, {}))
                .find("'descr': '|b1', 'fortran_order': False, 'shape': (), }"),
            std::string::npos);
  EXPECT_NE(serializeNpy(TensorData(DType::BF16, {1})).find("'<V2'"), std::string::npos);
  for (DType t : kAllDTypes) EXPECT_EQ(serializeNpy(TensorData(t, {7})).find('\n') % 64, 63u);
}

TEST(Npy, AcceptsWhatNumpyAccepts) {
  std::string two = floats({1.5f, -2.0f});
  struct Case {
    std::string dict;
    int major;
  };
  const Case cases[] = {
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 1},
      {"{'descr': '=f4', 'fortran_order': False, 'shape': (2,)}", 1},
      {"{'descr': '|f4', 'fortran_order': False, 'shape': (2,)}", 1},
      {"{\"shape\": (2,), \"fortran_order\": False, \"descr\": \"<f4\"}", 1},
      {"{'descr':'<f4','fortran_order':False,'shape':(2L,),}", 1},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, ), }", 2},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 3},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }", 1},
  };
  for (const Case &c : cases) {
    Expected<TensorData> t = parseNpy(npyFile(c.dict, two, c.major), "ok.npy");
    ASSERT_TRUE(t.ok()) << c.dict << ": " << t.status().message();
    EXPECT_EQ(t->toDoubles(), (std::vector<double>{1.5, -2.0})) << c.dict;
  }
  for (const char *d : {"|u1", "<u1", "=u1", ">u1"}) {
    std::string dict =
        std::string("{'descr': '") + d + "', 'fortran_order': False, 'shape': (2,), }";
    Expected<TensorData> t = parseNpy(npyFile(dict, "\x07\xff"), "u8.npy");
    ASSERT_TRUE(t.ok()) << d << ": " << t.status().message();
    EXPECT_EQ(t->dtype(), DType::U8);
    EXPECT_EQ(t->atInt(1), 255);
  }
  Expected<TensorData> bf = parseNpy(
      npyFile("{'descr': '|V2', 'fortran_order': False, 'shape': (), }", "\x80\x3f"), "b.npy");
  ASSERT_TRUE(bf.ok()) << bf.status().message();
  EXPECT_EQ(bf->dtype(), DType::BF16);
  EXPECT_EQ(bf->at(0), 1.0);
}

TEST(Npy, CorruptFilesGiveClearErrors) {
  std::string good = serializeNpy(sample(DType::F32, {2, 3}));
  std::string two = floats({1, 2});
  auto file = [&](std::string dict) { return npyFile(dict, two); };
  struct Case {
    std::string bytes;
    std::string message;  // a key part of the message
  };
  std::string v4 = good;
  v4[6] = 4;
  std::string longLen = good.substr(0, 10);
  longLen[8] = '\xff';
  longLen[9] = '\x7f';
  std::string nonAscii = good;
  nonAscii[20] = '\xe9';
  const Case cases[] = {
      {"", "not an .npy file: expected the magic string \\x93NUMPY, found an empty file"},
      {"PK\x03\x04 zip",
       "not an .npy file: expected the magic string \\x93NUMPY, found 'P' at offset 0"},
      {"\x93NUM", "found only 4 bytes"},
      {std::string("\x93NUMPY"), "the file ends inside the format version"},
      {v4, "unsupported .npy format version 4.0 (expected 1.0, 2.0 or 3.0)"},
      {good.substr(0, 9), "the file ends inside the header length field"},
      {longLen, "truncated header: its length field says 32767 bytes but only 0 follow"},
      {good.substr(0, good.size() - 1),
       "truncated data: the header says f32[2,3] (24 bytes) but 23 bytes follow it"},
      {good + "x", "trailing data: the header says f32[2,3] (24 bytes) but 25 bytes follow it"},
      {nonAscii, "malformed header: unexpected byte 0xe9 at offset 10"},
      {file("{'descr': '<f4', 'fortran_order': False}"), "header has no 'shape' key"},
      {file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}"),
       "unknown header key 'x'"},
      {file("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}"),
       "header key 'descr' appears twice"},
      {file("{'descr': '<i2', 'fortran_order': False, 'shape': (2,)}"), "unsupported dtype '<i2'"},
      {file("{'descr': '>f4', 'fortran_order': False, 'shape': (2,)}"),
       "big-endian dtype '>f4' is not supported"},
      {file("{'descr': '<f4', 'fortran_order': True, 'shape': (2,)}"), "fortran_order is True"},
      {file("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}"),
       "expected True or False for 'fortran_order'"},
      {file("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}"),
       "structured dtypes are not supported"},
      {file("{'descr': '<f4', 'fortran_order': False, 'shape': [2]}"),
       "expected '(' opening the shape tuple"},
      {file("{'descr': '<f4', 'fortran_order': False, 'shape': (2)}"),
       "a 1-D shape is written (n,)"},
      {file("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}"),
       "expected a non-negative integer dimension"},
      {file("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}"),
       "does not fit in 64 bits"},
      {file("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776, 0)}"),
       "is too large"},
      {file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)"),
       "expected ',' or '}' in the header dict"},
      {file("{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}"), "unsupported dtype '<f4, '"},
      {file("{descr: '<f4', 'fortran_order': False, 'shape': (2,)}"),
       "expected a quoted string at offset 1, found 'd'"},
      {file("{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}"),
       "expected ':' after key 'descr'"},
      {file("['descr', '<f4']"), "expected '{' opening the header dict"},
      {file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk"),
       "expected only padding after the header dict"},
      {npyFile("{'descr': '|b1', 'fortran_order': False, 'shape': (2,)}", "\x01\x02"),
       "bool element 1 is 2, expected 0 or 1"},
  };
  for (const Case &c : cases) {
    Expected<TensorData> t = parseNpy(c.bytes, "bad.npy");
    ASSERT_FALSE(t.ok()) << c.message;
    const Diagnostic &d = t.status().diagnostics()[0];
    EXPECT_EQ(d.code, "npy");
    EXPECT_EQ(d.message.rfind("bad.npy: ", 0), 0u) << d.message;
    EXPECT_NE(d.message.find(c.message), std::string::npos)
        << "want: " << c.message << "\ngot:  " << d.message;
  }
}

TEST(Npy, NeverCrashesOnTruncationsOrByteFlips) {
  std::string good = serializeNpy(sample(DType::I64, {3, 2}));
  for (size_t n = 0; n < good.size(); ++n) EXPECT_FALSE(parseNpy(good.substr(0, n), "t.npy").ok());
  uint64_t state = 1;
  for (int i = 0; i < 4000; ++i) {
    std::string b = good;
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    b[(state >> 33) % b.size()] = static_cast<char>(state >> 13);
    (void)parseNpy(b, "m.npy");
  }
}

}  // namespace
}  // namespace ferry
