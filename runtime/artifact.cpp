// runtime/artifact.cpp — the saved form of an Executable (docs/artifact.md is the layout): a
// 32-byte header (magic, version, flags, payload length, FNV-1a checksum of the payload) and a
// payload holding the executable's fields in a fixed order, every integer little-endian and
// written byte by byte, ops, dtypes and devices by name.
//
// Saving is deterministic (the same executable gives the same bytes) and atomic (a temporary
// file beside the target, renamed over it).
//
// Loading trusts nothing, in four phases:
//   1. header    magic, version, flags, payload length against the file's size
//   2. checksum  of the whole payload, before any of it is parsed
//   3. parse     every count and length checked against the bytes left before anything is
//                allocated; names looked up, enum values and dims range-checked
//   4. check     Executable::validate(): the executable's consistency, and every step against
//                the op table (its result type the op's shape and dtype rules give, its data
//                operands in the dtype it computes in), so that no kernel is handed a slot of
//                the wrong size or dtype
// Errors say which file, at which byte, what was expected and what was found.
#include "runtime/artifact.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "ir/temp_file.h"
#include "runtime/executable.h"

namespace ferry {

// The format numbers these enums as they were in version 1; if one is reordered, map it
// explicitly here (and keep the numbers) or bump kFormatVersion.
static_assert(static_cast<int>(AttrKind::Bool) == 0 && static_cast<int>(AttrKind::Int) == 1 &&
              static_cast<int>(AttrKind::Float) == 2 && static_cast<int>(AttrKind::Ints) == 3 &&
              static_cast<int>(AttrKind::String) == 4 && static_cast<int>(AttrKind::DType) == 5 &&
              static_cast<int>(AttrKind::Device) == 6 && static_cast<int>(AttrKind::Tensor) == 7);
static_assert(static_cast<int>(SlotKind::Input) == 0 && static_cast<int>(SlotKind::Weight) == 1 &&
              static_cast<int>(SlotKind::Activation) == 2 &&
              static_cast<int>(SlotKind::Loaded) == 3);
static_assert(static_cast<int>(PlacementPolicy::Strict) == 0 &&
              static_cast<int>(PlacementPolicy::Auto) == 1);
static_assert(sizeof(size_t) == 8, "offsets and sizes are stored as 64 bits");
static_assert(
    std::endian::native == std::endian::little,
    "tensor data is copied verbatim as little-endian; a big-endian host needs byte swaps");

namespace {

constexpr std::string_view kMagic = "FERRYEXE";
constexpr size_t kHeaderBytes = 32;
constexpr size_t kVersionAt = 8, kFlagsAt = 12, kLengthAt = 16, kChecksumAt = 24;
constexpr uint8_t kLastAttrKind = static_cast<uint8_t>(AttrKind::Tensor);

// 64-bit FNV-1a. Each step h = (h ^ byte) * prime is a bijection of h for a given byte (xor, then
// a multiplication by an odd number modulo 2^64), so two payloads that differ in one byte differ
// in h right after it and in every h after that: a single changed byte is always detected.
constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ull;
uint64_t fnv1a(std::string_view bytes, uint64_t h = kFnvBasis) {
  for (char c : bytes) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t readLE(std::string_view bytes, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i)
    v |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[at + i])) << (8 * i);
  return v;
}

void writeLE(std::string &out, size_t at, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) out[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

std::string hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

// `s` for an error message: control and non-ASCII bytes escaped, text past `max` bytes cut.
std::string escaped(std::string_view s, size_t max = 200) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    auto u = static_cast<unsigned char>(s[i]);
    if (u >= 0x20 && u < 0x7f && u != '\'' && u != '\\') {
      out += static_cast<char>(u);
    } else {
      out += "\\x";
      out += kDigits[u >> 4];
      out += kDigits[u & 15];
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

// A value found where something else was expected, quoted and short.
std::string printable(std::string_view s) { return "'" + escaped(s, 32) + "'"; }

Status fileError(std::string_view file, const std::string &what) {
  return makeError("artifact", std::string(file) + ": " + what);
}

// ---- writing ----------------------------------------------------------------------------------

// Appends fields to `out`, in memory (serialize()), or through `out` as a buffer to a file
// (save()): then every kFlushBytes the buffer goes to the file, a tensor's bytes go straight from
// the tensor, and the payload's checksum is computed on the way, so that saving holds no second
// copy of the weights. offset() is the file offset (the header counts).
class Writer {
 public:
  explicit Writer(std::string &out, int fd = -1) : out_(out), fd_(fd) {}

  size_t offset() const { return written_ + out_.size(); }
  // The FNV-1a of the payload written to the file so far (file mode, after flush()).
  uint64_t checksum() const { return hash_; }
  // errno of the first failed write, or 0.
  int error() const { return error_; }

  void flush() {
    emit(out_.data(), out_.size());
    out_.clear();
  }
  void bytes(const std::byte *p, size_t n) {
    if (fd_ < 0 || n < kFlushBytes) {
      out_.append(reinterpret_cast<const char *>(p), n);
      if (fd_ >= 0 && out_.size() >= kFlushBytes) flush();
      return;
    }
    flush();
    emit(reinterpret_cast<const char *>(p), n);
  }

  void u8(uint8_t v) {
    out_ += static_cast<char>(v);
    if (fd_ >= 0 && out_.size() >= kFlushBytes) flush();
  }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
  }
  void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void count(size_t n) {
    FERRY_CHECK(n <= std::numeric_limits<uint32_t>::max()) << "artifact: a count of " << n;
    u32(static_cast<uint32_t>(n));
  }
  void str(std::string_view s) {
    count(s.size());
    bytes(reinterpret_cast<const std::byte *>(s.data()), s.size());
  }
  void type(const TensorType &t) {
    str(dtypeName(t.dtype));
    count(t.shape.size());
    for (int64_t d : t.shape) i64(d);
  }
  // The type, zero bytes up to the next multiple of `align` in the file, the raw bytes.
  void tensor(const TensorData &t, size_t align = 1) {
    type(t.type());
    while (offset() % align != 0) u8(0);
    bytes(t.bytes().data(), t.byteSize());
  }
  void attr(const AttrValue &v) {
    u8(static_cast<uint8_t>(attrKind(v)));
    switch (attrKind(v)) {
      case AttrKind::Bool: u8(std::get<bool>(v) ? 1 : 0); break;
      case AttrKind::Int: i64(std::get<int64_t>(v)); break;
      case AttrKind::Float: u64(std::bit_cast<uint64_t>(std::get<double>(v))); break;
      case AttrKind::Ints:
        count(std::get<std::vector<int64_t>>(v).size());
        for (int64_t x : std::get<std::vector<int64_t>>(v)) i64(x);
        break;
      case AttrKind::String: str(std::get<std::string>(v)); break;
      case AttrKind::DType: str(dtypeName(std::get<DType>(v))); break;
      case AttrKind::Device: str(std::get<Device>(v).str()); break;
      case AttrKind::Tensor: tensor(std::get<TensorData>(v)); break;
    }
  }

 private:
  static constexpr size_t kFlushBytes = size_t{1} << 20;

  // Writes [p, p + n) to the file, hashing what lies past the header.
  void emit(const char *p, size_t n) {
    if (n == 0 || error_ != 0) return;
    const size_t skip = written_ >= kHeaderBytes ? 0 : std::min(n, kHeaderBytes - written_);
    hash_ = fnv1a(std::string_view(p + skip, n - skip), hash_);
    written_ += n;
    for (size_t done = 0; done < n;) {
      ssize_t k = ::write(fd_, p + done, n - done);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0) {
        error_ = errno;
        return;
      }
      done += static_cast<size_t>(k);
    }
  }

  std::string &out_;
  int fd_;
  size_t written_ = 0;
  uint64_t hash_ = kFnvBasis;
  int error_ = 0;
};

// The 32-byte header for a payload of `length` bytes hashing to `checksum`.
std::string header(uint64_t length, uint64_t checksum) {
  std::string out(kHeaderBytes, '\0');
  out.replace(0, kMagic.size(), kMagic);
  writeLE(out, kVersionAt, Executable::kFormatVersion, 4);
  writeLE(out, kFlagsAt, 0, 4);
  writeLE(out, kLengthAt, length, 8);
  writeLE(out, kChecksumAt, checksum, 8);
  return out;
}

// ---- reading ----------------------------------------------------------------------------------

// Reads fields of the payload [pos, end) of a file. The first error sticks: later reads return
// zero values and consume nothing, so counts read after a failure are 0 and nothing is
// allocated from garbage; callers check ok() where a loop or an allocation follows.
//
// Messages read "<ctx> <what>": the record being read ("slot 3 (%h)") and its field ("dtype").
class Reader {
 public:
  // With an `owner` that keeps `bytes` alive (a mapped file), weights are views of them.
  Reader(std::string_view file, std::string_view bytes, size_t pos, size_t end,
         std::shared_ptr<const void> owner = nullptr)
      : file_(file), bytes_(bytes), pos_(pos), end_(end), owner_(std::move(owner)) {}

  bool ok() const { return status_.ok(); }
  Status takeStatus() { return std::move(status_); }
  size_t pos() const { return pos_; }
  size_t left() const { return end_ - pos_; }
  void context(std::string ctx) { ctx_ = std::move(ctx); }

  // Whether `n` more bytes are there; otherwise a truncation error.
  bool need(uint64_t n, std::string_view what, std::string_view suffix = {}) {
    if (!ok()) return false;
    if (n <= left()) return true;
    fail("truncated at byte " + std::to_string(pos_) + ": expected " + std::to_string(n) +
         " bytes of " + name(what) + std::string(suffix) + ", found " + std::to_string(left()));
    return false;
  }
  // An error about the field that started at byte `at`.
  void bad(size_t at, std::string_view what, const std::string &expected,
           const std::string &found) {
    fail("bad " + name(what) + " at byte " + std::to_string(at) + ": expected " + expected +
         ", found " + found);
  }

  uint64_t le(size_t n, std::string_view what, std::string_view suffix = {}) {
    if (!need(n, what, suffix)) return 0;
    uint64_t v = readLE(bytes_, pos_, n);
    pos_ += n;
    return v;
  }
  uint8_t u8(std::string_view what) { return static_cast<uint8_t>(le(1, what)); }
  uint32_t u32(std::string_view what) { return static_cast<uint32_t>(le(4, what)); }
  uint64_t u64(std::string_view what) { return le(8, what); }
  int32_t i32(std::string_view what) { return static_cast<int32_t>(u32(what)); }
  int64_t i64(std::string_view what) { return static_cast<int64_t>(u64(what)); }

  bool boolean(std::string_view what) {
    const size_t at = pos_;
    uint8_t v = u8(what);
    if (v > 1) bad(at, what, "0 or 1", std::to_string(v));
    return v == 1;
  }
  int32_t nonNegative32(std::string_view what) {
    const size_t at = pos_;
    int32_t v = i32(what);
    if (v < 0) bad(at, what, "a non-negative number", std::to_string(v));
    return v;
  }
  int64_t nonNegative64(std::string_view what) {
    const size_t at = pos_;
    int64_t v = i64(what);
    if (v < 0) bad(at, what, "a non-negative number", std::to_string(v));
    return v;
  }

  // A u32 count of elements that take at least `minBytes` each, checked against the bytes left
  // so that the caller may reserve() it.
  uint32_t count(std::string_view what, size_t minBytes) {
    const size_t at = pos_;
    uint32_t n = u32(what);
    if (ok() && uint64_t{n} * minBytes > left())
      fail("truncated at byte " + std::to_string(at) + ": expected at least " +
           std::to_string(uint64_t{n} * minBytes) + " bytes for " + name(what) + " " +
           std::to_string(n) + ", found " + std::to_string(left()));
    return ok() ? n : 0;
  }

  std::string str(std::string_view what) {
    uint32_t n = static_cast<uint32_t>(le(4, what, " length"));
    if (!need(n, what)) return {};
    std::string s(bytes_.substr(pos_, n));
    pos_ += n;
    return s;
  }

  DType dtype(std::string_view what) {
    const size_t at = pos_;
    std::string s = str(what);
    if (!ok()) return DType::F32;
    std::optional<DType> t = parseDType(s);
    if (!t) bad(at, what, "a dtype (" + std::string(dtypeNameList()) + ")", printable(s));
    return t.value_or(DType::F32);
  }

  Device device(std::string_view what) {
    const size_t at = pos_;
    std::string s = str(what);
    if (!ok()) return {};
    Expected<Device> d = parseDevice(s);
    if (!d) bad(at, what, "a device (cpu, cpu:N or cuda:N, N at most 1023)", printable(s));
    return d ? *d : Device{};
  }

  // A dtype and a shape whose byte size fits in 63 bits; `what` prefixes the fields' names.
  TensorType type(std::string_view what) {
    TensorType t;
    t.dtype = dtype(field(what, "dtype"));
    const std::string rankName = field(what, "rank"), dimName = field(what, "dim");
    const size_t at = pos_;
    uint32_t rank = count(rankName, 8);
    if (rank > kMaxRank)
      bad(at, rankName, "at most " + std::to_string(kMaxRank), std::to_string(rank));
    if (!ok()) return {};
    t.shape.reserve(rank);
    // The product of the non-zero dims times the element size, overflow-checked: a zero dim
    // makes the tensor empty but may not hide an absurd one. The same rule as typeLimitError
    // (ir/types.h), which every type the compiler gives meets, checked here dim by dim so that
    // the error names the byte.
    int64_t bytes = static_cast<int64_t>(dtypeSize(t.dtype));
    for (uint32_t i = 0; i < rank && ok(); ++i) {
      const size_t dimAt = pos_;
      int64_t d = i64(dimName);
      if (d < 0) {
        bad(dimAt, dimName, "a non-negative size", std::to_string(d));
      } else if (d > 0 && bytes > std::numeric_limits<int64_t>::max() / d) {
        bad(dimAt, dimName, "a size that keeps the byte size within 63 bits", std::to_string(d));
      } else if (d > 0) {
        bytes *= d;
      }
      t.shape.push_back(d);
    }
    return ok() ? t : TensorType{};
  }

  // A type, zero padding up to the next multiple of `align` in the file, then the raw bytes: a
  // view of them when the reader has an owner and they are 64-byte aligned in memory, else a
  // copy. With a `budget`, the type's bytes are taken from it first, and a type that needs more
  // than is left is an error naming `limitName` (before anything is allocated or viewed).
  TensorData tensor(std::string_view what, size_t align = 1, uint64_t *budget = nullptr,
                    std::string_view limitName = {}) {
    const size_t typeAt = pos_;
    TensorType t = type(what);
    if (!ok()) return {};
    if (budget) {
      if (t.byteSize() > *budget) {
        fail("the weights need more than the limit of " + std::string(limitName) + ": " +
             name(what.empty() ? "type" : what) + " at byte " + std::to_string(typeAt) + " is " +
             t.str() + ", " + std::to_string(t.byteSize()) + " bytes, with " +
             std::to_string(*budget) + " bytes left of the limit");
        return {};
      }
      *budget -= t.byteSize();
    }
    const std::string padName = field(what, "padding"), dataName = field(what, "data");
    const size_t pad = (align - pos_ % align) % align;
    if (!need(pad, padName)) return {};
    for (size_t i = 0; i < pad; ++i)
      if (bytes_[pos_ + i] != '\0') {
        bad(pos_ + i, padName, "zero bytes", hex(static_cast<uint8_t>(bytes_[pos_ + i])));
        return {};
      }
    pos_ += pad;
    const size_t at = pos_;
    if (!need(t.byteSize(), dataName)) return {};
    const std::span<const std::byte> raw(reinterpret_cast<const std::byte *>(bytes_.data()) + pos_,
                                         t.byteSize());
    TensorData data;
    if (owner_ && reinterpret_cast<uintptr_t>(raw.data()) % Executable::kAlignment == 0) {
      data = TensorData::view(t, raw, owner_);
    } else {
      data = TensorData(t.dtype, t.shape);
      if (t.byteSize() > 0) std::memcpy(data.mutableBytes().data(), raw.data(), raw.size());
    }
    pos_ += t.byteSize();
    // Bools are 0 or 1; anything else would make equal tensors compare unequal.
    if (t.dtype == DType::Bool)
      for (size_t i = 0; i < data.byteSize(); ++i)
        if (static_cast<uint8_t>(data.bytes()[i]) > 1) {
          bad(at + i, dataName, "a bool (0 or 1)",
              std::to_string(static_cast<uint8_t>(data.bytes()[i])));
          return {};
        }
    return data;
  }

  AttrValue attr(std::string_view what) {
    const size_t at = pos_;
    uint8_t kind = u8(what);
    if (!ok()) return false;
    switch (static_cast<AttrKind>(kind)) {
      case AttrKind::Bool: return boolean(what);
      case AttrKind::Int: return i64(what);
      case AttrKind::Float: return std::bit_cast<double>(u64(what));
      case AttrKind::Ints: {
        uint32_t n = count(field(what, "length"), 8);
        std::vector<int64_t> v;
        v.reserve(n);
        for (uint32_t i = 0; i < n && ok(); ++i) v.push_back(i64(what));
        return v;
      }
      case AttrKind::String: return str(what);
      case AttrKind::DType: return dtype(what);
      case AttrKind::Device: return device(what);
      case AttrKind::Tensor: return tensor(what);
    }
    bad(at, what, "an attribute kind (0 to " + std::to_string(kLastAttrKind) + ")",
        std::to_string(kind));
    return false;
  }

  // Locations of many steps name the same file: one shared FileName each.
  FileName fileName(std::string_view what) {
    std::string s = str(what);
    if (s.empty()) return {};
    auto it = fileNames_.find(s);
    if (it == fileNames_.end()) it = fileNames_.emplace(s, FileName(s)).first;
    return it->second;
  }

 private:
  static std::string field(std::string_view what, std::string_view f) {
    return what.empty() ? std::string(f) : std::string(what) + " " + std::string(f);
  }
  std::string name(std::string_view what) const { return field(ctx_, what); }
  void fail(const std::string &message) {
    if (ok()) status_ = fileError(file_, message);
  }

  std::string_view file_;
  std::string_view bytes_;
  size_t pos_, end_;
  std::shared_ptr<const void> owner_;
  std::string ctx_;
  Status status_;
  std::map<std::string, FileName, std::less<>> fileNames_;
};

// The smallest encoding of each record (strings and counts 4 bytes, fields as in the layout),
// so that a count can be checked against the bytes left before anything is reserved.
constexpr size_t kMinDevice = 4;
constexpr size_t kMinSlot = 4 + 4 + 4 + 4 + 1 + 4 + 8 + 1;  // name..external
constexpr size_t kMinStep = 4 + 4 + 4 + 4 + 4 + 4 + 4 + 1 + 4 + 8 + 4 + 8 + 4;  // op..body count
constexpr size_t kMinMicroOp = 4 + 4 + 4 + 4 + 4 + 4 + 4 + 4 + 4;  // op..location node
constexpr size_t kMinWorkspace = 4 + 8;
constexpr size_t kMinWeight = 4 + 4;  // dtype, rank

std::string slotContext(size_t i, const std::string &name) {
  return "slot " + std::to_string(i) + " (%" + escaped(name) + ")";
}

// An op by name and its attributes, as many as the op's schema has (checked here rather than
// left to validate(): the count bounds the reserve); `what` names the record in errors. False
// when the reader failed.
bool readOpAndAttrs(Reader &r, const std::string &what, OpKind &kind, Attrs &attrs) {
  const size_t opAt = r.pos();
  std::string opName = r.str("op");
  if (!r.ok()) return false;
  const OpInfo *op = findOp(opName);
  if (!op) {
    r.bad(opAt, "op", "an op of this build", printable(opName));
    return false;
  }
  kind = op->kind;
  r.context(what + " ('" + opName + "')");
  const size_t countAt = r.pos();
  uint32_t n = r.count("attribute count", 2);
  if (r.ok() && n != op->attrs.size())
    r.bad(countAt, "attribute count",
          std::to_string(op->attrs.size()) + " (the schema of '" + opName + "')",
          std::to_string(n));
  attrs.reserve(r.ok() ? n : 0);
  for (uint32_t a = 0; a < n && r.ok(); ++a) attrs.push_back(r.attr("attribute " + std::to_string(a)));
  return r.ok();
}

Location readLocation(Reader &r) {
  Location loc;
  loc.file = r.fileName("location file");
  loc.line = r.i32("location line");
  loc.col = r.i32("location column");
  loc.node = SharedText(r.str("location node"));
  return loc;
}

// A list of step records (the run's steps, or the load steps): `what` names them in errors.
void readSteps(Reader &r, const std::string &what, std::vector<Step> &steps) {
  uint32_t n = r.count(what + " count", kMinStep);
  steps.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    Step st;
    r.context(what + " " + std::to_string(i));
    if (!readOpAndAttrs(r, what + " " + std::to_string(i), st.op, st.attrs)) break;
    uint32_t operands = r.count("operand count", 4);
    st.operands.reserve(operands);
    for (uint32_t o = 0; o < operands && r.ok(); ++o) st.operands.push_back(r.i32("operand"));
    st.result = r.i32("result");
    st.loc = readLocation(r);
    st.inserted = r.boolean("inserted flag");
    st.plan.kernel = r.str("kernel");
    st.plan.scratchBytes = r.u64("scratch bytes");
    st.plan.payload = r.str("kernel payload");
    st.scratchOffset = r.u64("scratch offset");
    const std::string context = what + " " + std::to_string(i);
    uint32_t body = r.count("micro-op count", kMinMicroOp);
    st.body.reserve(body);
    for (uint32_t j = 0; j < body && r.ok(); ++j) {
      MicroOp m;
      const std::string at = context + " micro-op " + std::to_string(j);
      r.context(at);
      if (!readOpAndAttrs(r, at, m.op, m.attrs)) break;
      uint32_t args = r.count("argument count", 4);
      m.args.reserve(args);
      for (uint32_t a = 0; a < args && r.ok(); ++a) m.args.push_back(r.i32("argument"));
      m.type = r.type("");
      m.name = r.str("name");
      m.loc = readLocation(r);
      st.body.push_back(std::move(m));
    }
    steps.push_back(std::move(st));
  }
  r.context("");
}

Expected<Executable> parsePayload(Reader &r, const Executable::LoadOptions &options) {
  Executable exe;
  exe.name = r.str("executable name");
  {
    const size_t at = r.pos();
    uint8_t p = r.u8("placement policy");
    if (p > static_cast<uint8_t>(PlacementPolicy::Auto))
      r.bad(at, "placement policy", "0 (strict) or 1 (auto)", std::to_string(p));
    exe.placement = static_cast<PlacementPolicy>(p);
  }

  uint32_t n = r.count("device count", kMinDevice);
  exe.devices.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) exe.devices.push_back(r.device("device"));

  n = r.count("slot count", kMinSlot);
  exe.slots.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    Slot s;
    r.context("slot " + std::to_string(i));
    s.name = r.str("name");
    r.context(slotContext(i, s.name));
    s.type = r.type("");
    s.device = r.device("device");
    const size_t at = r.pos();
    uint8_t kind = r.u8("kind");
    if (kind > static_cast<uint8_t>(SlotKind::Loaded))
      r.bad(at, "kind", "0 (input), 1 (weight), 2 (activation) or 3 (loaded)",
            std::to_string(kind));
    s.kind = static_cast<SlotKind>(kind);
    s.weight = r.i32("weight index");
    s.offset = r.u64("offset");
    const size_t externalAt = r.pos();
    const uint8_t external = r.u8("external");
    if (external > 1) r.bad(externalAt, "external", "0 (workspace) or 1 (caller's memory)",
                            std::to_string(external));
    s.external = external == 1;
    exe.slots.push_back(std::move(s));
  }
  r.context("");

  for (auto [list, what] : {std::pair{&exe.inputs, "input"}, std::pair{&exe.outputs, "output"}}) {
    n = r.count(std::string(what) + " count", 4);
    list->reserve(n);
    for (uint32_t i = 0; i < n && r.ok(); ++i) list->push_back(r.i32(what));
  }

  readSteps(r, "step", exe.steps);
  readSteps(r, "load step", exe.loadSteps);

  n = r.count("workspace count", kMinWorkspace);
  exe.workspaces.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    r.context("workspace " + std::to_string(i));
    Workspace w;
    w.device = r.device("device");
    w.bytes = r.u64("size");
    exe.workspaces.push_back(w);
  }
  r.context("");

  exe.planTransfers = r.nonNegative32("planned transfer count");
  exe.planTransferBytes = r.nonNegative64("planned transfer bytes");
  exe.planLoadTransfers = r.nonNegative32("planned load-time transfer count");
  exe.planLoadTransferBytes = r.nonNegative64("planned load-time transfer bytes");

  n = r.count("weight count", kMinWeight);
  exe.weights.reserve(n);
  // Each weight is named in messages after the first slot that holds it.
  std::vector<const Slot *> holder(n, nullptr);
  for (const Slot &s : exe.slots)
    if (s.kind == SlotKind::Weight && s.weight >= 0 && static_cast<uint32_t>(s.weight) < n &&
        !holder[static_cast<size_t>(s.weight)])
      holder[static_cast<size_t>(s.weight)] = &s;
  uint64_t budget = static_cast<uint64_t>(std::max<int64_t>(options.maxTotalWeightBytes, 0));
  const std::string limitName = std::to_string(budget) +
                                " bytes in all (Executable::LoadOptions::maxTotalWeightBytes)";
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    r.context("weight " + std::to_string(i) +
              (holder[i] ? " (%" + escaped(holder[i]->name) + ")" : std::string()));
    exe.weights.push_back(r.tensor("", Executable::kAlignment, &budget, limitName));
  }
  r.context("");

  if (r.ok() && r.left() != 0)
    r.bad(r.pos(), "payload end", "the end of the payload after the weights",
          std::to_string(r.left()) + " more bytes");
  if (!r.ok()) return r.takeStatus();
  return exe;
}

// `s`'s diagnostics with the file's name in front of each message.
Status inFile(Status s, std::string_view file) {
  std::vector<Diagnostic> ds = std::move(s).takeDiagnostics();
  for (Diagnostic &d : ds) d.message = std::string(file) + ": " + d.message;
  return Status(std::move(ds));
}

std::string errnoText() { return std::strerror(errno); }

// The payload's fields, in the layout's order (docs/artifact.md).
void writeOpAndAttrs(Writer &w, OpKind op, const Attrs &attrs) {
  w.str(opInfo(op).name);
  w.count(attrs.size());
  for (const AttrValue &a : attrs) w.attr(a);
}

void writeLocation(Writer &w, const Location &loc) {
  w.str(loc.file.view());
  w.i32(loc.line);
  w.i32(loc.col);
  w.str(loc.node.view());
}

void writePayload(const Executable &exe, Writer &w) {
  w.str(exe.name);
  w.u8(static_cast<uint8_t>(exe.placement));
  w.count(exe.devices.size());
  for (Device d : exe.devices) w.str(d.str());
  w.count(exe.slots.size());
  for (const Slot &s : exe.slots) {
    w.str(s.name);
    w.type(s.type);
    w.str(s.device.str());
    w.u8(static_cast<uint8_t>(s.kind));
    w.i32(s.weight);
    w.u64(s.offset);
    w.u8(s.external ? 1 : 0);
  }
  for (const std::vector<int32_t> *list : {&exe.inputs, &exe.outputs}) {
    w.count(list->size());
    for (int32_t s : *list) w.i32(s);
  }
  for (const std::vector<Step> *list : {&exe.steps, &exe.loadSteps}) {
    w.count(list->size());
    for (const Step &st : *list) {
      writeOpAndAttrs(w, st.op, st.attrs);
      w.count(st.operands.size());
      for (int32_t o : st.operands) w.i32(o);
      w.i32(st.result);
      writeLocation(w, st.loc);
      w.u8(st.inserted ? 1 : 0);
      w.str(st.plan.kernel);
      w.u64(st.plan.scratchBytes);
      w.str(st.plan.payload);
      w.u64(st.scratchOffset);
      w.count(st.body.size());
      for (const MicroOp &m : st.body) {
        writeOpAndAttrs(w, m.op, m.attrs);
        w.count(m.args.size());
        for (int32_t a : m.args) w.i32(a);
        w.type(m.type);
        w.str(m.name);
        writeLocation(w, m.loc);
      }
    }
  }
  w.count(exe.workspaces.size());
  for (const Workspace &ws : exe.workspaces) {
    w.str(ws.device.str());
    w.u64(ws.bytes);
  }
  w.i32(exe.planTransfers);
  w.i64(exe.planTransferBytes);
  w.i32(exe.planLoadTransfers);
  w.i64(exe.planLoadTransferBytes);
  w.count(exe.weights.size());
  for (const TensorData &t : exe.weights) w.tensor(t, Executable::kAlignment);
}

}  // namespace

std::string Executable::serialize() const {
  std::string out(kHeaderBytes, '\0');
  Writer w(out);
  writePayload(*this, w);
  std::string_view payload = std::string_view(out).substr(kHeaderBytes);
  out.replace(0, kHeaderBytes, header(payload.size(), fnv1a(payload)));
  return out;
}


namespace {

// deserialize(), its weights views of `bytes` kept alive by `owner` when there is one.
Expected<Executable> deserializeKept(std::string_view bytes, std::string_view fileName,
                                     std::shared_ptr<const void> owner,
                                     const Executable::LoadOptions &options) {
  using Ex = Executable;
  const std::string_view file = fileName.empty() ? std::string_view("<memory>") : fileName;
  const size_t size = bytes.size();

  // 1. header: the magic and the version first, so that any other format or a future version is
  //    told apart whatever follows them.
  auto truncatedHeader = [&](std::string_view what) {
    return fileError(
        file, "truncated at byte " + std::to_string(size) + ": expected " + std::string(what) +
                  ", found " +
                  (size == 0 ? std::string("an empty file") : std::to_string(size) + " bytes"));
  };
  const size_t magicBytes = std::min(size, kMagic.size());
  if (bytes.substr(0, magicBytes) != kMagic.substr(0, magicBytes))
    return fileError(file, "not a ferry executable (bad magic): expected " + printable(kMagic) +
                               ", found " + printable(bytes.substr(0, kMagic.size())));
  if (size < kFlagsAt) return truncatedHeader("the 32-byte header");
  const auto version = static_cast<uint32_t>(readLE(bytes, kVersionAt, 4));
  if (version != Ex::kFormatVersion)
    return fileError(file, "format version " + std::to_string(version) +
                               ", this build reads version " + std::to_string(Ex::kFormatVersion) +
                               (version >= 1 && version < Ex::kFormatVersion
                                    ? ": the file was written by an older ferry; compile the "
                                      "model again"
                                    : ""));
  if (size < kHeaderBytes) return truncatedHeader("the 32-byte header");
  const auto flags = static_cast<uint32_t>(readLE(bytes, kFlagsAt, 4));
  if (flags != 0)
    return fileError(file, "bad flags at byte " + std::to_string(kFlagsAt) +
                               ": expected 0 (this build knows no flags), found " + hex(flags));
  const uint64_t length = readLE(bytes, kLengthAt, 8);
  const uint64_t found = size - kHeaderBytes;
  if (length > found)
    return fileError(file, "truncated at byte " + std::to_string(size) + ": expected " +
                               std::to_string(length) + " bytes of payload, found " +
                               std::to_string(found));
  if (length < found)
    return fileError(file, "trailing data at byte " + std::to_string(kHeaderBytes + length) +
                               ": the header says " + std::to_string(length) + " payload bytes, " +
                               std::to_string(found) + " follow it");

  // 2. checksum, before anything of the payload is believed.
  const uint64_t stored = readLE(bytes, kChecksumAt, 8);
  const uint64_t actual = fnv1a(bytes.substr(kHeaderBytes));
  if (stored != actual)
    return fileError(file, "checksum mismatch: the file is corrupted (the header says " +
                               hex(stored) + ", the payload hashes to " + hex(actual) + ")");

  // 3. parse.
  Reader r(file, bytes, kHeaderBytes, size, std::move(owner));
  Expected<Executable> exe = parsePayload(r, options);
  if (!exe) return exe;

  // 4. check.
  if (Status s = exe->validate(); !s.ok()) return inFile(std::move(s), file);
  return exe;
}

// The bytes of the file `path`, and what keeps them: a read-only private mapping of a regular
// file (its pages are the page cache's, read once by the checksum), or, for anything mmap()
// refuses (a pipe, an empty file), the bytes read into memory.
struct FileBytes {
  std::shared_ptr<const void> owner;
  std::string_view bytes;
};

Expected<FileBytes> readFileBytes(const std::string &path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fileError(path, "cannot open for reading: " + errnoText());
  // Closed on every way out, std::bad_alloc included.
  const std::unique_ptr<const int, void (*)(const int *)> closer(&fd, [](const int *f) {
    ::close(*f);
  });
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    const auto size = static_cast<size_t>(st.st_size);
    void *p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      // When the owner cannot be made, shared_ptr calls the deleter: nothing stays mapped.
      std::shared_ptr<const void> owner(p, [size](const void *q) {
        ::munmap(const_cast<void *>(q), size);
      });
      return FileBytes{std::move(owner), std::string_view(static_cast<const char *>(p), size)};
    }
  }
  auto text = std::make_shared<std::string>();
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fileError(path, "read error: " + errnoText());
    if (n == 0) break;
    text->append(buffer, static_cast<size_t>(n));
  }
  const std::string_view bytes = *text;
  return FileBytes{std::move(text), bytes};
}

}  // namespace

Expected<Executable> Executable::deserialize(std::string_view bytes, std::string_view fileName,
                                             const LoadOptions &options) {
  return catchOutOfMemory(
      [&] { return "loading " + std::string(fileName.empty() ? "<memory>" : fileName); },
      [&] { return deserializeKept(bytes, fileName, nullptr, options); });
}

namespace {

Status saveFile(const Executable &exe, const std::string &path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target(path);
  const fs::path dir = target.parent_path();
  if (!dir.empty() && !fs::is_directory(dir, ec))
    return fileError(path, "cannot save: the folder '" + dir.string() + "' " +
                               (fs::exists(dir, ec) ? "is not a folder" : "does not exist"));
  if (fs::is_directory(target, ec)) return fileError(path, "cannot save: is a directory");

  std::string tmp;
  int fd = createTempBeside(path, tmp);
  if (fd < 0)
    return fileError(path,
                     "cannot save: cannot create the temporary file '" + tmp + "': " + errnoText());
  auto abandon = [&](const std::string &what) {
    const std::string text = errnoText();
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    return fileError(path, "cannot save: " + what + " '" + tmp + "': " + text);
  };
  // Streamed: the header's length and checksum are known at the end, and written over the
  // placeholder then.
  std::string buffer;
  std::string head;
  try {
    buffer.assign(kHeaderBytes, '\0');
    Writer w(buffer, fd);
    writePayload(exe, w);
    w.flush();
    if (w.error() != 0) {
      errno = w.error();
      return abandon("cannot write");
    }
    head = header(w.offset() - kHeaderBytes, w.checksum());
  } catch (const std::bad_alloc &) {  // the temporary file goes, as on any other failure
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::pwrite(fd, head.data(), head.size(), 0) != static_cast<ssize_t>(head.size()))
    return abandon("cannot write");
  // Flushed before the rename, so a crash leaves the old file or the new one, not an empty one.
  if (::fsync(fd) != 0) return abandon("cannot flush");
  const int closed = ::close(fd);
  fd = -1;
  if (closed != 0) return abandon("cannot close");
  if (::rename(tmp.c_str(), path.c_str()) != 0) return abandon("cannot rename");
  return Status();
}

}  // namespace

Status Executable::save(const std::string &path) const {
  return catchOutOfMemory([&] { return "saving " + path; }, [&] { return saveFile(*this, path); });
}

bool startsWithExecutableMagic(std::string_view head) { return head.starts_with(kMagic); }

bool isExecutableFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  char head[kMagic.size()];
  in.read(head, sizeof head);
  return startsWithExecutableMagic(std::string_view(head, static_cast<size_t>(in.gcount())));
}

Expected<Executable> Executable::load(const std::string &path, const LoadOptions &options) {
  return catchOutOfMemory([&] { return "loading " + path; }, [&]() -> Expected<Executable> {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      return fileError(path, "is a directory, not a file");
    Expected<FileBytes> file = readFileBytes(path);
    if (!file) return file.status();
    return deserializeKept(file->bytes, path, std::move(file->owner), options);
  });
}

}  // namespace ferry
