// ir/parse_values.cpp — the `.fy` parser's pieces below a statement: types, pins, devices,
// attribute values, tensor literals and param data, and the "did you mean" hints.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>

#include "ir/npy.h"
#include "ir/parser_impl.h"

namespace ferry::fy {

namespace {

// Declared types beyond this many bytes are rejected: sizes stay exact in doubles (costs) and
// sums of a few sizes cannot overflow.
constexpr int64_t kMaxTypeBytes = int64_t{1} << 53;

// Optimal string alignment distance (edits and adjacent swaps), for "did you mean" hints.
size_t editDistance(std::string_view a, std::string_view b) {
  if (a.size() > 64 || b.size() > 64) return SIZE_MAX;
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string didYouMean(std::string_view word, std::span<const std::string_view> candidates,
                       std::string_view prefix) {
  size_t best = 3;
  std::string_view pick;
  for (std::string_view c : candidates) {
    size_t d = editDistance(word, c);
    if (d < best && d < word.size()) {
      best = d;
      pick = c;
    }
  }
  if (pick.empty()) return "";
  return "; did you mean '" + std::string(prefix) + std::string(pick) + "'?";
}

std::vector<std::string_view> opNames() {
  std::vector<std::string_view> names;
  for (const OpInfo &op : allOps()) names.push_back(op.name);
  return names;
}

std::vector<std::string_view> dtypeNames() {
  std::vector<std::string_view> names;
  for (DType t : kAllDTypes) names.push_back(dtypeName(t));
  return names;
}

std::optional<TensorType> Parser::type() {
  const Token &t = peek();
  if (t.kind != Tok::Ident) {
    unexpected("a type such as f32[2,3]");
    return std::nullopt;
  }
  std::optional<DType> dtype = parseDType(t.text);
  if (!dtype) {
    error("parse", t.col,
          "unknown dtype " + describeToken(t) + didYouMean(t.text, dtypeNames()) +
              " (dtypes: " + std::string(dtypeNameList()) + ")");
    return std::nullopt;
  }
  take();
  if (!accept(Tok::LBracket)) {
    unexpected("'[' and the shape after the dtype (a scalar is written " + std::string(t.text) +
               "[])");
    return std::nullopt;
  }
  TensorType type{*dtype, {}};
  int64_t bytes = static_cast<int64_t>(dtypeSize(*dtype));
  bool tooLarge = false;
  if (!accept(Tok::RBracket)) {
    while (true) {
      const Token &d = peek();
      std::optional<int64_t> v = d.kind == Tok::Int ? intValue(d.text) : std::nullopt;
      if (!v || *v < 0) {
        if (d.kind == Tok::Int)
          error("parse", d.col,
                "dimension " + describeToken(d) + " must be a non-negative " + "64-bit integer");
        else
          unexpected("a dimension (a non-negative integer)");
        return std::nullopt;
      }
      take();
      type.shape.push_back(*v);
      if (*v != 0 && (bytes > kMaxTypeBytes / *v)) tooLarge = true;
      if (*v != 0 && !tooLarge) bytes *= *v;
      if (accept(Tok::RBracket)) break;
      if (!accept(Tok::Comma)) {
        unexpected("',' or ']' in the shape");
        return std::nullopt;
      }
    }
  }
  if (tooLarge) {
    error("shape", t.col, "type " + type.str() + " is too large (more than 2^53 bytes)");
    return std::nullopt;
  }
  if (std::string why = typeLimitError(type.dtype, type.shape); !why.empty()) {
    error("shape", t.col, "type " + type.str() + " " + why);
    return std::nullopt;
  }
  return type;
}

std::optional<Device> Parser::device() {
  const Token &name = peek();
  if (name.kind != Tok::Ident) {
    unexpected("a device (cpu, cpu:N or cuda:N)");
    return std::nullopt;
  }
  take();
  std::string spelled(name.text);
  if (accept(Tok::Colon)) {
    if (!at(Tok::Int)) {
      unexpected("a device index after '" + spelled + ":'");
      return std::nullopt;
    }
    spelled += ":" + std::string(take().text);
  }
  Expected<Device> d = parseDevice(spelled);
  if (!d) {
    error("device", name.col, d.status().diagnostics().front().message);
    return std::nullopt;
  }
  return *d;
}

bool Parser::pins(Pins &p, bool allowDType) {
  while (accept(Tok::At)) {
    const Token &t = peek();
    if (t.kind != Tok::Ident)
      return unexpected(allowDType ? "a device or a dtype after '@'" : "a device after '@'");
    if (std::optional<DType> dtype = parseDType(t.text)) {
      if (!allowDType) {
        error("parse", t.col,
              "a dtype pin (@" + std::string(t.text) +
                  ") is only allowed on nodes; a type is written ': " + std::string(t.text) +
                  "[...]'");
        return false;
      }
      if (p.dtype) {
        error("parse", t.col, "more than one dtype pin");
        return false;
      }
      take();
      p.dtype = dtype;
      continue;
    }
    if (t.text != "cpu" && t.text != "cuda") {
      std::vector<std::string_view> names{"cpu", "cuda"};
      if (allowDType)
        for (DType d : kAllDTypes) names.push_back(dtypeName(d));
      error("parse", t.col,
            "expected " +
                std::string(allowDType ? "a device (cpu, cpu:N, cuda:N) or a dtype"
                                       : "a device (cpu, cpu:N, cuda:N)") +
                " after '@', found " + describeToken(t) + didYouMean(t.text, names));
      return false;
    }
    if (p.device) {
      error("parse", t.col, "more than one device pin");
      return false;
    }
    p.device = device();
    if (!p.device) return false;
  }
  return true;
}

std::optional<AttrValue> Parser::attrValue() {
  const Token &t = peek();
  switch (t.kind) {
    case Tok::Int: {
      std::optional<int64_t> v = intValue(t.text);
      if (!v) {
        error("parse", t.col, "integer " + describeToken(t) + " does not fit in 64 bits");
        return std::nullopt;
      }
      take();
      return AttrValue(*v);
    }
    case Tok::Float: {
      std::optional<double> v = floatValue(t.text);
      if (!v) {
        error("parse", t.col, "number " + describeToken(t) + " is out of the range of a double");
        return std::nullopt;
      }
      take();
      return AttrValue(*v);
    }
    case Tok::String: return AttrValue(take().str);
    case Tok::LBracket: {
      take();
      std::vector<int64_t> xs;
      if (accept(Tok::RBracket)) return AttrValue(xs);
      while (true) {
        const Token &x = peek();
        std::optional<int64_t> v = x.kind == Tok::Int ? intValue(x.text) : std::nullopt;
        if (!v) {
          if (x.kind == Tok::Int)
            error("parse", x.col, "integer " + describeToken(x) + " does not fit in 64 bits");
          else
            unexpected("an integer in the list");
          return std::nullopt;
        }
        take();
        xs.push_back(*v);
        if (accept(Tok::RBracket)) return AttrValue(std::move(xs));
        if (!accept(Tok::Comma)) {
          unexpected("',' or ']' in the list");
          return std::nullopt;
        }
      }
    }
    case Tok::Ident: break;
    default: unexpected("an attribute value"); return std::nullopt;
  }
  if (t.text == "true" || t.text == "false") return AttrValue(take().text == "true");
  if (t.text == "inf" || t.text == "nan") return AttrValue(*floatValue(take().text));
  if (t.text == "cpu" || t.text == "cuda") {
    std::optional<Device> d = device();
    if (!d) return std::nullopt;
    return AttrValue(*d);
  }
  if (std::optional<DType> dtype = parseDType(t.text)) {
    if (peek(1).kind != Tok::LBracket) {
      take();
      return AttrValue(*dtype);
    }
    std::optional<TensorType> ty = type();
    if (!ty) return std::nullopt;
    int col = peek().col;
    std::vector<const Token *> elems;
    if (!expect(Tok::LBrace, "'{' and the values of the tensor, e.g. f32[2]{1.0, 2.0}") ||
        !elements(Tok::RBrace, elems))
      return std::nullopt;
    std::optional<TensorData> data = tensor(*ty, elems, col, "the tensor");
    if (!data) return std::nullopt;
    return AttrValue(std::move(*data));
  }
  error("parse", t.col,
        "unknown attribute value " + describeToken(t) + " (strings are quoted: \"" +
            std::string(t.text) + "\")" + didYouMean(t.text, dtypeNames()));
  return std::nullopt;
}

bool Parser::elements(Tok close, std::vector<const Token *> &out) {
  if (accept(close)) return true;
  while (true) {
    const Token &t = peek();
    bool word = t.kind == Tok::Ident &&
                (t.text == "true" || t.text == "false" || t.text == "inf" || t.text == "nan");
    if (t.kind != Tok::Int && t.kind != Tok::Float && !word) return unexpected("a number");
    out.push_back(&take());
    if (accept(close)) return true;
    if (!accept(Tok::Comma)) return unexpected(close == Tok::RBrace ? "',' or '}'" : "',' or ']'");
  }
}

std::optional<Scalar> Parser::scalar(DType dtype, const Token &t) {
  std::string name(dtypeName(dtype));
  if (dtype == DType::Bool) {
    if (t.text == "true" || t.text == "false") return Scalar{true, t.text == "true" ? 1 : 0, 0};
    error("parse", t.col,
          "expected true or false for an element of bool, found " + describeToken(t));
    return std::nullopt;
  }
  if (t.kind == Tok::Ident && (t.text == "true" || t.text == "false")) {
    error("parse", t.col,
          "expected a number for an element of " + name + ", found " + describeToken(t));
    return std::nullopt;
  }
  if (isInteger(dtype)) {
    if (t.kind != Tok::Int) {
      error("parse", t.col,
            "expected an integer for an element of " + name + ", found " + describeToken(t));
      return std::nullopt;
    }
    std::optional<int64_t> v = intValue(t.text);
    int64_t lo = dtype == DType::U8    ? 0
                 : dtype == DType::I8  ? -128
                 : dtype == DType::I32 ? INT32_MIN
                                       : INT64_MIN;
    int64_t hi = dtype == DType::U8    ? 255
                 : dtype == DType::I8  ? 127
                 : dtype == DType::I32 ? INT32_MAX
                                       : INT64_MAX;
    if (!v || *v < lo || *v > hi) {
      error("parse", t.col,
            describeToken(t) + " is out of range for " + name + " (" + std::to_string(lo) + " to " +
                std::to_string(hi) + ")");
      return std::nullopt;
    }
    return Scalar{true, *v, 0};
  }
  std::optional<double> v = floatValue(t.text);
  if (v && std::isfinite(*v)) {
    std::byte buf[8];
    storeDouble(dtype, buf, *v);
    if (std::isinf(loadDouble(dtype, buf))) v.reset();
  }
  if (!v) {
    error("parse", t.col, describeToken(t) + " is out of range for " + name);
    return std::nullopt;
  }
  return Scalar{false, 0, *v};
}

std::optional<Literal> Parser::literal(const Token &t) {
  if (t.kind == Tok::Ident) {
    if (t.text == "true" || t.text == "false")
      return Literal{DTypeCategory::Bool, t.text == "true" ? 1 : 0, 0};
    return Literal{DTypeCategory::Floating, 0, *floatValue(t.text)};  // inf, nan
  }
  if (t.kind == Tok::Int) {
    if (std::optional<int64_t> v = intValue(t.text)) return Literal{DTypeCategory::Integer, *v, 0};
    error("literal", t.col, "integer literal " + describeToken(t) + " does not fit in 64 bits");
    return std::nullopt;
  }
  if (std::optional<double> v = floatValue(t.text)) return Literal{DTypeCategory::Floating, 0, *v};
  error("literal", t.col, "number " + describeToken(t) + " is out of the range of a double");
  return std::nullopt;
}

std::string Parser::literalValueName(std::string_view reader, const OpInfo &op, size_t i) const {
  const std::string base = literalName(reader, op, i);
  std::string name = base;
  for (int k = 1; graph_.hasValue(name) || firstDef_.count(name); ++k)
    name = base + "." + std::to_string(k);
  return name;
}

bool Parser::withinLimit(const TensorType &type, int col, const std::string &what) {
  if (static_cast<int64_t>(type.byteSize()) <= options_.maxParamBytes) return true;
  error("limit", col,
        what + " " + type.str() + " needs " + std::to_string(type.byteSize()) +
            " bytes, more than the parser's limit of " + std::to_string(options_.maxParamBytes) +
            " (ParseOptions::maxParamBytes)");
  return false;
}

std::optional<TensorData> Parser::tensor(const TensorType &type,
                                         const std::vector<const Token *> &elems, int col,
                                         const std::string &what) {
  if (!withinLimit(type, col, what)) return std::nullopt;
  auto n = static_cast<size_t>(type.numel());
  if (elems.size() != n && !(elems.size() == 1 && n > 0)) {
    error("parse", col,
          what + " " + type.str() + " needs " + std::to_string(n) +
              (n == 1 ? " value" : " values") + (n > 1 ? " (or one for all)" : "") + ", found " +
              std::to_string(elems.size()));
    return std::nullopt;
  }
  TensorData data(type.dtype, type.shape);
  for (size_t i = 0; i < elems.size(); ++i) {
    std::optional<Scalar> s = scalar(type.dtype, *elems[i]);
    if (!s) return std::nullopt;
    for (size_t j = elems.size() == n ? i : 0; j < (elems.size() == n ? i + 1 : n); ++j) {
      if (s->isInt)
        data.setInt(static_cast<int64_t>(j), s->i);
      else
        data.set(static_cast<int64_t>(j), s->d);
    }
  }
  return data;
}

std::optional<TensorData> Parser::loadNpy(const Token &pathTok, const TensorType &type,
                                          const std::string &what) {
  namespace fs = std::filesystem;
  fs::path path(pathTok.str);
  if (path.is_relative() && !options_.baseDir.empty()) path = fs::path(options_.baseDir) / path;
  Expected<TensorData> data = readNpy(path.string());
  if (!data) {
    for (const Diagnostic &d : data.status().diagnostics())
      error(d.code, pathTok.col, d.message).detail("while loading " + what, loc(pathTok.col));
    return std::nullopt;
  }
  if (data->type() != type) {
    error("npy", pathTok.col,
          "'" + path.string() + "' holds " + data->type().str() + " but " + what + " is declared " +
              type.str());
    return std::nullopt;
  }
  return std::move(*data);
}

}  // namespace ferry::fy
