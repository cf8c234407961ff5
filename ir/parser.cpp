// ir/parser.cpp — reads `.fy` text into a verified graph, one statement per line.
//
//   1. split    the text into lines (CRLF and a UTF-8 BOM accepted) and tokenize each
//               (ir/lexer.h); a prescan notes where each value is defined, for messages
//   2. header   `graph NAME {`
//   3. body     each line is one statement: parsed, then built into the Graph (names checked,
//               attributes through makeAttrs, types through inferType, params materialised).
//               An error is reported and parsing resumes at the next line; the value the line
//               defined is poisoned, so that its uses are silent instead of cascading.
//   4. close    `}`; outputs (which may name values defined below them) are resolved; the
//               graph is verified.
// Nothing recurses and every step is linear in the line, so no input can hang the parser.
#include "ir/parser.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <new>

#include "ir/literal.h"
#include "ir/parser_impl.h"
#include "ir/verifier.h"

namespace ferry {

namespace fy {

namespace {

constexpr std::string_view kStatements[] = {"input", "param", "output"};

// Lines and columns are ints in Location; beyond that (a 2 GiB line) they saturate.
int lineNumberOf(size_t index) { return static_cast<int>(std::min<size_t>(index + 1, INT32_MAX)); }
int columnOf(size_t offset) { return static_cast<int>(std::min<size_t>(offset + 1, INT32_MAX)); }

}  // namespace

// The value a line defines (`%v = ...`, `input %v ...`, `param %v ...`), found without
// tokenizing the whole line: the prescan only needs the first two words.
std::optional<std::pair<std::string, size_t>> definedBy(std::string_view line) {
  auto isName = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.';
  };
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos) return std::nullopt;
  for (std::string_view keyword : {"input", "param"}) {
    if (line.substr(i).starts_with(keyword) &&
        (i + keyword.size() == line.size() || !isName(line[i + keyword.size()]))) {
      i = line.find_first_not_of(" \t", i + keyword.size());
      break;
    }
  }
  if (i == std::string_view::npos || line[i] != '%') return std::nullopt;
  if (i + 1 < line.size() && line[i + 1] == '"') {
    // A quoted name: the lexer decodes it (only this line's first token is needed).
    std::vector<Token> tokens = tokenizeLine(line.substr(i));
    if (tokens.empty() || tokens.front().kind != Tok::Value) return std::nullopt;
    return std::pair{std::move(tokens.front().str), i};
  }
  size_t end = i + 1;
  while (end < line.size() && isName(line[end])) ++end;
  if (end == i + 1) return std::nullopt;
  return std::pair{std::string(line.substr(i + 1, end - i - 1)), i};
}

void Parser::split(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    size_t end = nl == std::string_view::npos ? text.size() : nl;
    std::string_view line = text.substr(start, end - start);
    if (line.ends_with('\r')) line.remove_suffix(1);
    lines_.push_back(line);
    int number = lineNumberOf(lines_.size() - 1);
    if (auto def = definedBy(line))
      firstDef_.emplace(std::move(def->first), Location{fileName_, number, columnOf(def->second)});
    if (nl == std::string_view::npos) {
      eof_ = Location{fileName_, number, columnOf(line.size())};
      break;
    }
    start = nl + 1;
  }
}

Expected<Graph> Parser::run() {
  if (!paramsWithinTotal()) return Status(diags_.take());
  for (size_t i = 0; i < lines_.size(); ++i) {
    setLine(i);
    commentLoc_.reset();
    insertedComment_.reset();
    if (blank()) continue;
    switch (state_) {
      case State::Header: header(); break;
      case State::Body: statement(); break;
      case State::Closed:
        if (!reportedTrailing_)
          error("parse", peek().col,
                at(Tok::Error) ? peek().str
                               : "unexpected " + describeToken(peek()) +
                                     " after the closing '}' of graph '" + graph_.name() + "'");
        reportedTrailing_ = true;
        break;
    }
  }
  finish();
  if (diags_.hasErrors()) return Status(diags_.take());
  if (!options_.deferTypeErrors) {
    FERRY_TRY(verify(graph_));
  } else if (Verification v = verifyGraph(graph_); v.structural) {
    return Status(std::move(v.diagnostics));
  }
  return std::move(graph_);
}

bool Parser::endOfStatement() {
  if (at(Tok::Comment)) {
    std::string_view text = withoutFusedMark(take().text);
    insertedComment_ = insertedComment(text);
    if (!insertedComment_) commentLoc_ = locationComment(text);
  }
  if (at(Tok::End)) return true;
  if (at(Tok::Error)) return unexpected("");
  error("parse", peek().col,
        "unexpected " + describeToken(peek()) + " after the end of the statement" +
            (at(Tok::Value) ? " (one statement per line)" : ""));
  return false;
}

void Parser::header() {
  headerLoc_ = loc(peek().col);
  if (!isIdent(peek(), "graph")) {
    unexpected("'graph NAME {' at the start of the file");
    state_ = State::Body;
    // A file that starts straight with statements: read them anyway, to report their errors.
    if (at(Tok::Value) ||
        (at(Tok::Ident) && std::ranges::find(kStatements, peek().text) != std::end(kStatements)))
      statement();
    return;
  }
  take();
  state_ = State::Body;
  if (at(Tok::Ident) || at(Tok::String)) {
    const Token &name = take();
    graph_.setName(name.kind == Tok::String ? name.str : std::string(name.text));
  } else {
    unexpected("a graph name after 'graph'");
    return;
  }
  if (!expect(Tok::LBrace, "'{' after the graph name")) return;
  if (at(Tok::RBrace)) {
    closeLoc_ = loc(take().col);
    state_ = State::Closed;
  }
  endOfStatement();
}

void Parser::statement() {
  // What the line defines, read from its text: even a line the lexer rejects poisons its name.
  std::optional<std::string> defined;
  if (auto def = definedBy(lines_[line_])) defined = std::string(def->first);

  const Token &first = peek();
  bool ok = false;
  if (first.kind == Tok::RBrace) {
    closeLoc_ = loc(take().col);
    state_ = State::Closed;
    endOfStatement();
    return;
  }
  ++statements_;
  if (isIdent(first, "input")) {
    ok = input();
  } else if (isIdent(first, "param")) {
    ok = param();
  } else if (isIdent(first, "output")) {
    sawOutput_ = true;
    ok = output();
  } else if (first.kind == Tok::Value) {
    ok = node();
  } else if (isIdent(first, "graph")) {
    error("parse", first.col,
          "a file holds one graph: expected '}' to close graph '" + graph_.name() +
              "' before another 'graph'");
  } else {
    std::string hint = first.kind == Tok::Ident ? didYouMean(first.text, kStatements) : "";
    if (first.kind == Tok::Error)
      unexpected("");
    else
      error("parse", first.col,
            "expected a statement (input, param, output or %name = op(...)), found " +
                describeToken(first) + hint);
  }
  if (!ok && defined && !graph_.hasValue(*defined)) poisoned_.insert(*defined);
}

std::optional<ValueId> Parser::use(const Token &t, bool &poisoned) {
  const std::string &name = t.str;
  // A literal's value has a name, but none the text gave it: it is not there to be used.
  if (std::optional<ValueId> v = graph_.findValue(name); v && !isLiteral(graph_, *v)) return v;
  if (poisoned_.count(name)) {
    poisoned = true;
    return std::nullopt;
  }
  error("name", t.col, undefinedMessage(name, lineNumber()));
  return std::nullopt;
}

std::string Parser::undefinedMessage(const std::string &name, int atLine) {
  auto later = firstDef_.find(name);
  if (later != firstDef_.end() && later->second.line >= atLine)
    return valueRefText(name) + " is used before its definition at line " +
           std::to_string(later->second.line);
  std::string hint;
  if (graph_.valueCount() <= 4096) {
    std::vector<std::string_view> names;
    for (ValueId v = 0; v < static_cast<ValueId>(graph_.valueCount()); ++v)
      if (!isLiteral(graph_, v)) names.push_back(graph_.value(v).name);
    hint = didYouMean(name, names, "%");
  }
  return "use of undefined value " + valueRefText(name) + hint;
}

bool Parser::define(const Token &name) {
  const std::string &n = name.str;
  if (!graph_.hasValue(n)) return true;
  Diagnostic &d = error("name", name.col, "redefinition of " + valueRefText(n));
  if (auto it = defLoc_.find(n); it != defLoc_.end()) d.note("previous definition", it->second);
  return false;
}

// ---- statements -----------------------------------------------------------------------------

bool Parser::input() {
  take();
  const Token *name = expect(Tok::Value, "a value name such as %x after 'input'");
  if (!name) return false;
  if (!accept(Tok::Colon))
    return unexpected("':' and a type (an input needs one: input " + valueRefText(name->str) +
                      " : f32[2,3])");
  std::optional<TensorType> t = type();
  Pins p;
  if (!t || !pins(p, false) || !endOfStatement() || !define(*name)) return false;
  graph_.addInput(name->str, *t, p.device.value_or(Device::cpu()), statementLoc(*name));
  defLoc_[name->str] = loc(name->col);
  return true;
}

// Before anything is built: the bytes every `param %w : TYPE` line declares, added up. A param
// that takes the total past options_.maxTotalParamBytes is an error, and the parse stops there,
// nothing allocated. A line whose type does not read is skipped here (the parse reports it).
bool Parser::paramsWithinTotal() {
  int64_t total = 0;
  std::optional<Location> past;
  for (size_t i = 0; i < lines_.size(); ++i) {
    if (!definedBy(lines_[i])) continue;  // no `param %w` on this line
    setLine(i);
    if (!isIdent(peek(), "param")) continue;
    take();
    if (!at(Tok::Value) || peek(1).kind != Tok::Colon) continue;
    const int col = peek().col;
    take();
    take();
    std::optional<TensorType> t = type();
    if (!t) continue;
    // Saturated: each type is within the parser's bound of 2^53 bytes.
    total = std::min(total + static_cast<int64_t>(t->byteSize()), int64_t{1} << 62);
    if (!past && total > options_.maxTotalParamBytes) past = loc(col);
  }
  diags_ = DiagnosticEngine();  // a type's errors are the parse's to report, once
  if (!past) return true;
  diags_.error("limit", *past,
               "the graph's params declare " + std::to_string(total) +
                   " bytes together, more than the limit of " +
                   std::to_string(options_.maxTotalParamBytes) +
                   " bytes (ParseOptions::maxTotalParamBytes)");
  return false;
}

bool Parser::param() {
  take();
  const Token *name = expect(Tok::Value, "a value name such as %w after 'param'");
  if (!name) return false;
  if (!accept(Tok::Colon))
    return unexpected("':' and a type (a param needs one: param " + valueRefText(name->str) +
                      " : f32[2,3] = zeros)");
  std::optional<TensorType> t = type();
  Pins p;
  if (!t || !pins(p, false)) return false;
  if (!accept(Tok::Equal))
    return unexpected("'=' and an initializer: zeros, ones, randn(seed=N), npy(\"file\") or [...]");

  const Token &init = peek();
  Initializer initializer;
  const Token *pathTok = nullptr;
  std::vector<const Token *> elems;
  if (isIdent(init, "zeros") || isIdent(init, "ones")) {
    take();
    initializer.kind = init.text == "zeros" ? Initializer::Kind::Zeros : Initializer::Kind::Ones;
  } else if (isIdent(init, "randn")) {
    take();
    initializer.kind = Initializer::Kind::Randn;
    if (!expect(Tok::LParen, "'(' after randn: randn(seed=N)")) return false;
    const Token &key = peek();
    if (!isIdent(key, "seed")) return unexpected("'seed=N' in randn(seed=N)");
    take();
    if (!expect(Tok::Equal, "'=' after seed")) return false;
    const Token &seed = peek();
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(seed.text.data(), seed.text.data() + seed.text.size(), v);
    if (seed.kind != Tok::Int || ec != std::errc() || end != seed.text.data() + seed.text.size()) {
      if (seed.kind == Tok::Int) {
        error("parse", seed.col,
              "seed " + describeToken(seed) + " must be an integer from 0 to 18446744073709551615");
        return false;
      }
      return unexpected("an integer seed");
    }
    take();
    initializer.seed = v;
    if (!expect(Tok::RParen, "')' closing randn(seed=N)")) return false;
  } else if (isIdent(init, "npy")) {
    take();
    initializer.kind = Initializer::Kind::Npy;
    if (!expect(Tok::LParen, "'(' after npy: npy(\"file.npy\")")) return false;
    pathTok = expect(Tok::String, "a quoted file name: npy(\"file.npy\")");
    if (!pathTok || !expect(Tok::RParen, "')' closing npy(\"file.npy\")")) return false;
    initializer.path = pathTok->str;
  } else if (at(Tok::LBracket)) {
    take();
    initializer.kind = Initializer::Kind::Data;
    if (!elements(Tok::RBracket, elems)) return false;
  } else {
    std::string hint = init.kind == Tok::Ident
                           ? didYouMean(init.text, std::array<std::string_view, 4>{"zeros", "ones",
                                                                                   "randn", "npy"})
                           : "";
    if (init.kind == Tok::Error) return unexpected("");
    error("parse", init.col,
          "expected an initializer (zeros, ones, randn(seed=N), npy(\"file\") or [values]), "
          "found " +
              describeToken(init) + hint);
    return false;
  }
  if (!endOfStatement() || !define(*name)) return false;

  std::string what = "param " + valueRefText(name->str);
  std::optional<TensorData> data;
  if (!withinLimit(*t, init.col, what)) return false;
  try {
    switch (initializer.kind) {
      case Initializer::Kind::Zeros: data = TensorData::zeros(t->dtype, t->shape); break;
      case Initializer::Kind::Ones: data = TensorData::full(t->dtype, t->shape, 1.0); break;
      case Initializer::Kind::Randn:
        data = TensorData::randn(t->dtype, t->shape, initializer.seed);
        break;
      case Initializer::Kind::Npy: data = loadNpy(*pathTok, *t, what); break;
      case Initializer::Kind::Data: data = tensor(*t, elems, init.col, what); break;
    }
  } catch (const std::bad_alloc &) {
    // Within maxParamBytes, but more than the host has: an error, never an abort.
    error("memory", init.col,
          "out of memory: " + what + " (" + t->str() + ") needs " +
              std::to_string(t->byteSize()) + " bytes, which the host could not allocate");
    return false;
  }
  if (!data) return false;
  graph_.addParam(name->str, std::move(*data), std::move(initializer), p.device,
                  statementLoc(*name));
  defLoc_[name->str] = loc(name->col);
  return true;
}

bool Parser::node() {
  const Token &result = take();
  std::optional<TensorType> declared;
  int typeCol = 0;
  if (accept(Tok::Colon)) {
    typeCol = peek().col;
    declared = type();
    if (!declared) return false;
  }
  Pins p;
  if (!pins(p, true)) return false;
  if (!accept(Tok::Equal)) return unexpected("'=' and an op after " + valueRefText(result.str));
  const Token *opTok = expect(Tok::Ident, "an op name, as in %y = relu(%x)");
  if (!opTok || !expect(Tok::LParen, "'(' after the op name")) return false;
  std::vector<const Token *> operands;
  std::vector<ParsedAttr> given;
  if (!accept(Tok::RParen)) {
    while (true) {
      if (at(Tok::Value) || atLiteral()) {
        if (!given.empty()) {
          error("parse", peek().col, "operands must come before attributes");
          return false;
        }
        operands.push_back(&take());
      } else if (at(Tok::Ident) && peek(1).kind == Tok::Equal) {
        const Token &key = take();
        take();
        int valueCol = peek().col;
        std::optional<AttrValue> v = attrValue();
        if (!v) return false;
        given.push_back({std::string(key.text), std::move(*v), key.col, valueCol});
      } else {
        return unexpected("an operand (%name, or a literal such as 1.0, 2 or true) or an attribute "
                          "(name=value)");
      }
      if (accept(Tok::RParen)) break;
      if (!accept(Tok::Comma)) return unexpected("',' or ')'");
    }
  }
  if (!endOfStatement()) return false;

  // Build: every check of this line is reported before giving up on it.
  const OpInfo *op = findOp(opTok->text);
  if (!op) {
    error("parse", opTok->col,
          "unknown op " + describeToken(*opTok) + didYouMean(opTok->text, opNames()));
    return false;
  }
  const std::string opName(op->name);
  bool ok = true, poisoned = false;
  std::vector<ValueId> ids;  // -1 for a literal until its node is made
  std::vector<std::optional<Literal>> literals;
  for (const Token *o : operands) {
    if (o->kind != Tok::Value) {
      std::optional<Literal> lit = literal(*o);
      ok = lit.has_value() && ok;
      literals.push_back(lit);
      ids.push_back(-1);
      continue;
    }
    std::optional<ValueId> v = use(*o, poisoned);
    literals.emplace_back();
    ids.push_back(v.value_or(-1));
    ok = v.has_value() && ok;
  }
  ok = define(result) && ok;
  // Attribute names and kinds are checked here, at their own columns; makeAttrs then completes
  // the defaults and reports what is missing, at the op.
  std::vector<NamedAttr> named;
  std::vector<bool> seen(op->attrs.size(), false);
  for (ParsedAttr &a : given) {
    int i = op->attrIndex(a.name);
    if (i < 0) {
      std::vector<std::string_view> names;
      std::string known;
      for (const AttrSpec &s : op->attrs) {
        names.push_back(s.name);
        known += (known.empty() ? "" : ", ") + s.name;
      }
      error("attr", a.nameCol,
            "'" + opName + "' has no attribute '" + a.name + "'" + didYouMean(a.name, names))
          .detail(known.empty() ? "it takes no attributes" : "its attributes are: " + known,
                  loc(opTok->col));
      ok = false;
      continue;
    }
    const AttrSpec &spec = op->attrs[i];
    if (seen[i]) {
      error("attr", a.nameCol, "attribute '" + a.name + "' of '" + opName + "' is given twice");
      ok = false;
      continue;
    }
    seen[i] = true;
    AttrKind kind = attrKind(a.value);
    if (kind != spec.kind && !(spec.kind == AttrKind::Float && kind == AttrKind::Int)) {
      error("attr", a.valueCol,
            "attribute '" + a.name + "' of '" + opName + "' must be of kind " +
                std::string(attrKindName(spec.kind)) + ", got " + std::string(attrKindName(kind)) +
                " " + attrValueStr(a.value));
      ok = false;
      continue;
    }
    named.push_back({std::move(a.name), std::move(a.value)});
  }
  Expected<Attrs> attrs = makeAttrs(*op, named, loc(opTok->col));
  if (!attrs) {
    diags_.append(attrs.status().diagnostics());
    ok = false;
  }
  if (!ok) return false;

  std::vector<TensorType> types(ids.size());
  std::vector<Location> at;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= 0) types[i] = graph_.value(ids[i]).type;
    at.push_back(loc(operands[i]->col));
  }
  Expected<std::vector<std::optional<TensorData>>> literalValues =
      typeLiterals(*op, types, literals, at, loc(opTok->col));
  if (!literalValues) {
    diags_.append(literalValues.status().diagnostics());
    return false;
  }
  InferResult inferred = inferType(*op, types, *attrs);
  std::optional<TensorType> type;
  if (const auto *e = std::get_if<InferError>(&inferred)) {
    // Deferred: typed as written, else as the node gives once its operands' kinds are fixed.
    if (options_.deferTypeErrors && e->code != "arity")
      type = declared ? declared : inferTypeWithKindsFixed(*op, types, *attrs);
    if (!type) {
      error(e->code, opTok->col, e->message);
      return false;
    }
  } else {
    type = std::get<TensorType>(std::move(inferred));
    // A written type is a check; the node keeps the inferred one so later lines do not cascade
    // (deferred: the written one, which verify() then finds wrong).
    if (declared && *declared != *type) {
      if (options_.deferTypeErrors)
        type = declared;
      else
        error("type", typeCol,
              "declared " + declared->str() + " but '" + opName + "' gives " + type->str());
    }
  }
  // An inserted node has no line of its own in the user's source: it keeps the origin its
  // comment gives, or none (not its line in this dump), so that dumps read back unchanged.
  Location origin =
      insertedComment_ ? insertedComment_->origin.value_or(Location{}) : statementLoc(result);
  // Each literal is a node of its own right before its reader, with the reader's origin.
  for (size_t i = 0; i < ids.size(); ++i)
    if (std::optional<TensorData> &value = (*literalValues)[i])
      ids[i] = addLiteral(graph_, literals[i]->kind, std::move(*value),
                          literalValueName(result.str, *op, i), origin);
  NodeSpec spec{op->kind, std::move(ids), std::move(*attrs), p.device, p.dtype, std::move(origin)};
  NodeId id = graph_.addNode(std::move(spec), result.str, std::move(*type));
  graph_.node(id).inserted = insertedComment_.has_value();
  defLoc_[result.str] = loc(result.col);
  return true;
}

bool Parser::output() {
  take();
  std::vector<PendingOutput> items;
  do {
    const Token *v = expect(Tok::Value, "a value name such as %y after 'output'");
    if (!v) return false;
    Pins p;
    if (!pins(p, false)) return false;
    items.push_back({v->str, loc(v->col), p.device, {}});
  } while (accept(Tok::Comma));
  if (!endOfStatement()) return false;
  for (PendingOutput &o : items) {
    o.loc = commentLoc_ ? *commentLoc_ : o.at;
    pending_.push_back(std::move(o));
  }
  return true;
}

void Parser::finish() {
  if (state_ == State::Header) {
    diags_.error("parse", Location{fileName_, 1, 1},
                 "expected 'graph NAME {', found the end of the file (the input holds no graph)");
    return;
  }
  Location end = closeLoc_;
  if (state_ == State::Body) {
    diags_
        .error("parse", eof_,
               "expected '}' to close graph '" + graph_.name() + "', found the end of the file")
        .note("graph '" + graph_.name() + "' opened here", headerLoc_);
    end = eof_;
  }
  for (const PendingOutput &o : pending_) {
    if (std::optional<ValueId> v = graph_.findValue(o.name); v && !isLiteral(graph_, *v)) {
      graph_.addOutput(*v, o.pin, o.loc);
    } else if (!poisoned_.count(o.name)) {
      diags_.error("name", o.at, undefinedMessage(o.name, INT32_MAX));
    }
  }
  if (!sawOutput_) {
    std::string what =
        statements_ == 0 ? "is empty: it has no statements and no outputs" : "has no outputs";
    diags_.error("parse", end, "graph '" + graph_.name() + "' " + what)
        .fix("add a line 'output %name' for each value the graph returns");
  }
}

}  // namespace fy

Expected<Graph> parseGraph(std::string_view text, std::string_view fileName,
                           const ParseOptions &options) {
  return catchOutOfMemory([&] { return "parsing " + std::string(fileName); },
                          [&] { return fy::Parser(text, fileName, options).run(); });
}

namespace {

Expected<Graph> readAndParse(const std::string &path, const ParseOptions &given) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return makeError("io", path + ": is a directory, not a .fy file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError("io", path + ": cannot open file for reading: " + std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return makeError("io", path + ": read error");
  ParseOptions options = given;
  options.baseDir = std::filesystem::path(path).parent_path().string();
  return parseGraph(text, path, options);
}

}  // namespace

Expected<Graph> parseFile(const std::string &path, const ParseOptions &given) {
  return catchOutOfMemory([&] { return "reading " + path; },
                          [&] { return readAndParse(path, given); });
}

}  // namespace ferry
