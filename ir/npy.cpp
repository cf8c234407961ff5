// ir/npy.cpp — NumPy .npy files: a strict reader of outside bytes and a numpy-compatible writer.
//
// Layout: "\x93NUMPY", major, minor, header length (u16 for 1.0, u32 for 2.0/3.0), a Python
// dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded with spaces and a
// newline so that the data starts 64-byte aligned, then the raw little-endian data.
//
// bf16 has no numpy dtype; ferry writes it as the raw 2-byte void type '<V2' (what numpy itself
// stores for ml_dtypes.bfloat16 arrays) and reads any 2-byte void type back as bf16.
#include "ir/npy.h"

#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>

#include "ir/lexer.h"

namespace ferry {

static_assert(std::endian::native == std::endian::little,
              "ir/npy.cpp copies little-endian data verbatim; a big-endian host needs byte swaps");

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kMaxRank = 64;

Status npyError(std::string_view file, const std::string &what) {
  return makeError("npy", std::string(file.empty() ? "<npy>" : file) + ": " + what);
}

std::string descrOf(DType t) {
  switch (t) {
    case DType::Bool: return "|b1";
    case DType::U8: return "|u1";
    case DType::I8: return "|i1";
    case DType::I32: return "<i4";
    case DType::I64: return "<i8";
    case DType::F16: return "<f2";
    case DType::BF16: return "<V2";
    case DType::F32: return "<f4";
    case DType::F64: return "<f8";
  }
  return "?";
}

// numpy's byte-order characters: '<' little, '>' big, '=' native, '|' not applicable. numpy
// accepts any of them on one-byte types and treats '|' as native on wider ones.
Expected<DType> dtypeOfDescr(std::string_view file, std::string_view descr) {
  auto unsupported = [&]() -> Status {
    return npyError(file, "unsupported dtype '" + std::string(descr) +
                              "' (expected one of '<f2', '<f4', '<f8', '<V2' (bf16), '|b1', "
                              "'|u1', '|i1', '<i4', '<i8')");
  };
  if (descr.size() < 3) return unsupported();
  char order = descr[0];
  std::string_view code = descr.substr(1);
  if (order != '<' && order != '>' && order != '=' && order != '|') return unsupported();
  struct Row {
    std::string_view code;
    DType dtype;
  };
  static constexpr Row kRows[] = {
      {"b1", DType::Bool}, {"u1", DType::U8},  {"i1", DType::I8},
      {"i4", DType::I32},  {"i8", DType::I64}, {"f2", DType::F16},
      {"V2", DType::BF16}, {"f4", DType::F32}, {"f8", DType::F64},
  };
  for (const Row &r : kRows) {
    if (r.code != code) continue;
    if (order == '>' && dtypeSize(r.dtype) > 1)
      return npyError(file, "big-endian dtype '" + std::string(descr) +
                                "' is not supported (expected '<" + std::string(code) + "')");
    return r.dtype;
  }
  return unsupported();
}

// Parses the header dict. Only what numpy writes (and Python would accept for it) is valid.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string_view file) : s_(text), file_(file) {}

  struct Header {
    DType dtype = DType::F32;
    Shape shape;
  };

  Expected<Header> parse() {
    Header h;
    bool haveDescr = false, haveOrder = false, haveShape = false;
    skipSpace();
    if (!eat('{')) return expected("'{' opening the header dict");
    while (true) {
      skipSpace();
      if (eat('}')) break;
      Expected<std::string> key = string();
      if (!key) return std::move(key).takeStatus();
      skipSpace();
      if (!eat(':')) return expected("':' after key '" + *key + "'");
      skipSpace();
      if (*key == "descr") {
        if (haveDescr) return npyError(file_, "header key 'descr' appears twice");
        haveDescr = true;
        if (peek() == '[')
          return npyError(file_, "structured dtypes are not supported (descr is a list)");
        Expected<std::string> d = string();
        if (!d) return std::move(d).takeStatus();
        Expected<DType> t = dtypeOfDescr(file_, *d);
        if (!t) return std::move(t).takeStatus();
        h.dtype = *t;
      } else if (*key == "fortran_order") {
        if (haveOrder) return npyError(file_, "header key 'fortran_order' appears twice");
        haveOrder = true;
        if (word("True"))
          return npyError(file_, "fortran_order is True; only C-order arrays are supported "
                                 "(save with numpy.ascontiguousarray)");
        if (!word("False")) return expected("True or False for 'fortran_order'");
      } else if (*key == "shape") {
        if (haveShape) return npyError(file_, "header key 'shape' appears twice");
        haveShape = true;
        Expected<Shape> s = shape();
        if (!s) return std::move(s).takeStatus();
        h.shape = std::move(*s);
      } else {
        return npyError(file_, "unknown header key '" + *key +
                                   "' (expected 'descr', 'fortran_order' and 'shape')");
      }
      skipSpace();
      if (eat(',')) continue;
      skipSpace();
      if (eat('}')) break;
      return expected("',' or '}' in the header dict");
    }
    for (auto [have, name] : {std::pair{haveDescr, "descr"}, std::pair{haveOrder, "fortran_order"},
                              std::pair{haveShape, "shape"}})
      if (!have) return npyError(file_, std::string("header has no '") + name + "' key");
    // numpy pads with spaces and ends with '\n'; nothing else may follow the dict.
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
      ++i_;
    if (i_ != s_.size()) return expected("only padding after the header dict");
    return h;
  }

 private:
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  bool eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool word(std::string_view w) {
    if (s_.substr(i_).starts_with(w)) {
      i_ += w.size();
      return true;
    }
    return false;
  }
  void skipSpace() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  Status expected(const std::string &what) const {
    std::string found = i_ < s_.size() ? fy::describeChar(s_[i_]) : "the end of the header";
    return npyError(file_, "malformed header: expected " + what + " at offset " +
                               std::to_string(i_) + ", found " + found);
  }

  Expected<std::string> string() {
    char q = peek();
    if (q != '\'' && q != '"') return expected("a quoted string");
    size_t start = ++i_;
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\' || s_[i_] == '\n') return expected("a plain string without escapes");
      ++i_;
    }
    if (i_ >= s_.size()) return expected("the closing quote of a string");
    std::string out(s_.substr(start, i_ - start));
    ++i_;
    return out;
  }

  Expected<int64_t> integer() {
    size_t start = i_;
    int64_t v = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      int d = s_[i_] - '0';
      if (v > (std::numeric_limits<int64_t>::max() - d) / 10)
        return npyError(file_, "shape dimension " + std::string(s_.substr(start, i_ - start + 1)) +
                                   "... does not fit in 64 bits");
      v = v * 10 + d;
      ++i_;
    }
    if (i_ == start) return expected("a non-negative integer dimension");
    eat('L');  // Python 2 long literals, as written by old numpy versions
    return v;
  }

  Expected<Shape> shape() {
    if (!eat('(')) return expected("'(' opening the shape tuple");
    Shape dims;
    skipSpace();
    if (eat(')')) return dims;
    while (true) {
      skipSpace();
      Expected<int64_t> d = integer();
      if (!d) return std::move(d).takeStatus();
      if (dims.size() == kMaxRank)
        return npyError(file_, "shape has more than " + std::to_string(kMaxRank) + " dimensions");
      dims.push_back(*d);
      skipSpace();
      bool comma = eat(',');
      skipSpace();
      if (eat(')')) {
        if (dims.size() == 1 && !comma)
          return expected("',' after the only dimension (a 1-D shape is written (n,))");
        return dims;
      }
      if (!comma) return expected("',' or ')' in the shape tuple");
    }
  }

  std::string_view s_;
  std::string_view file_;
  size_t i_ = 0;
};

uint32_t readLE(std::string_view bytes, size_t at, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i)
    v |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + i])) << (8 * i);
  return v;
}

std::string shapeTuple(const Shape &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) s += ",";
  return s + ")";
}

}  // namespace

Expected<TensorData> parseNpy(std::string_view bytes, std::string_view fileName) {
  std::string_view file = fileName;
  if (bytes.size() < kMagic.size() || bytes.substr(0, kMagic.size()) != kMagic) {
    std::string found =
        bytes.empty() ? "an empty file" : "first byte " + fy::describeChar(bytes[0]);
    for (size_t i = 0; i < bytes.size() && i < kMagic.size(); ++i) {
      if (bytes[i] != kMagic[i]) {
        found = fy::describeChar(bytes[i]) + " at offset " + std::to_string(i);
        break;
      }
      if (i + 1 == bytes.size()) found = "only " + std::to_string(bytes.size()) + " bytes";
    }
    return npyError(file, "not an .npy file: expected the magic string \\x93NUMPY, found " + found);
  }
  if (bytes.size() < kMagic.size() + 2)
    return npyError(file, "truncated: the file ends inside the format version");
  auto major = static_cast<uint8_t>(bytes[6]);
  auto minor = static_cast<uint8_t>(bytes[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return npyError(file, "unsupported .npy format version " + std::to_string(major) + "." +
                              std::to_string(minor) + " (expected 1.0, 2.0 or 3.0)");
  size_t lenBytes = major == 1 ? 2 : 4;
  size_t prefix = 8 + lenBytes;
  if (bytes.size() < prefix)
    return npyError(file, "truncated: the file ends inside the header length field");
  size_t headerLen = readLE(bytes, 8, lenBytes);
  if (headerLen > bytes.size() - prefix)
    return npyError(file, "truncated header: its length field says " + std::to_string(headerLen) +
                              " bytes but only " + std::to_string(bytes.size() - prefix) +
                              " follow");
  std::string_view header = bytes.substr(prefix, headerLen);
  // Format 1.0 and 2.0 headers are latin-1 in numpy but only ever ASCII in practice; 3.0 is
  // UTF-8. Control bytes other than whitespace are never valid.
  for (size_t i = 0; i < header.size(); ++i) {
    auto u = static_cast<unsigned char>(header[i]);
    if ((u < 0x20 && u != '\n' && u != '\r' && u != '\t') || (u >= 0x80 && major < 3) || u == 0x7f)
      return npyError(file, "malformed header: unexpected " + fy::describeChar(header[i]) +
                                " at offset " + std::to_string(i));
  }
  Expected<HeaderParser::Header> h = HeaderParser(header, file).parse();
  if (!h) return std::move(h).takeStatus();

  // numel and byte size with overflow checks: shape rules and allocation trust them later.
  int64_t count = 1;
  bool overflow = false;
  for (int64_t d : h->shape) {
    if (d != 0 && count > std::numeric_limits<int64_t>::max() / d)
      overflow = true;
    else if (d != 0)
      count *= d;
  }
  auto itemSize = static_cast<int64_t>(dtypeSize(h->dtype));
  if (overflow || count > std::numeric_limits<int64_t>::max() / itemSize)
    return npyError(file, "shape " + shapeTuple(h->shape) + " is too large (its size overflows)");
  for (int64_t d : h->shape)
    if (d == 0) count = 0;
  size_t dataAt = prefix + headerLen;
  auto expectedBytes = static_cast<uint64_t>(count * itemSize);
  uint64_t found = bytes.size() - dataAt;
  if (found != expectedBytes)
    return npyError(file, std::string(found < expectedBytes ? "truncated data" : "trailing data") +
                              ": the header says " + TensorType{h->dtype, h->shape}.str() + " (" +
                              std::to_string(expectedBytes) + " bytes) but " +
                              std::to_string(found) + " bytes follow it");
  TensorData t(h->dtype, h->shape);
  if (expectedBytes > 0) std::memcpy(t.mutableBytes().data(), bytes.data() + dataAt, expectedBytes);
  if (h->dtype == DType::Bool) {
    // numpy bools are 0 or 1; anything else would make two equal tensors compare unequal.
    for (size_t i = 0; i < t.byteSize(); ++i)
      if (static_cast<uint8_t>(t.bytes()[i]) > 1)
        return npyError(file, "bool element " + std::to_string(i) + " is " +
                                  std::to_string(static_cast<uint8_t>(t.bytes()[i])) +
                                  ", expected 0 or 1");
  }
  return t;
}

Expected<TensorData> readNpy(const std::string &path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return npyError(path, "is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return npyError(path, std::string("cannot open file for reading: ") + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return npyError(path, "read error");
  return parseNpy(bytes, path);
}

std::string serializeNpy(const TensorData &t) {
  std::string dict = "{'descr': '" + descrOf(t.dtype()) +
                     "', 'fortran_order': False, 'shape': " + shapeTuple(t.shape()) + ", }";
  // As numpy: pad with spaces and a final '\n' so that the data starts 64-byte aligned; use
  // format 2.0 only when the header does not fit a 16-bit length.
  size_t prefix = 10;
  size_t total = prefix + dict.size() + 1;
  total = (total + 63) / 64 * 64;
  if (total - prefix > 0xffff) {
    prefix = 12;
    total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  }
  size_t headerLen = total - prefix;
  std::string out(kMagic);
  out += static_cast<char>(prefix == 10 ? 1 : 2);
  out += '\0';
  for (size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((headerLen >> (8 * i)) & 0xff);
  out += dict;
  out.append(headerLen - dict.size() - 1, ' ');
  out += '\n';
  auto data = t.bytes();
  out.append(reinterpret_cast<const char *>(data.data()), data.size());
  return out;
}

Status writeNpy(const TensorData &t, const std::string &path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return npyError(path, std::string("cannot open file for writing: ") + std::strerror(errno));
  std::string bytes = serializeNpy(t);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return npyError(path, "write error");
  return {};
}

}  // namespace ferry
