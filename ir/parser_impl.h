// ir/parser_impl.h — the `.fy` parser's state, shared by ir/parser.cpp (lines, statements) and
// ir/parse_values.cpp (types, pins, attribute values, literals). Private to ferry_ir.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "ir/lexer.h"
#include "ir/literal.h"
#include "ir/parser.h"

namespace ferry::fy {

/// "; did you mean 'linear'?" for the candidate closest to `word` within two edits, else "".
std::string didYouMean(std::string_view word, std::span<const std::string_view> candidates,
                       std::string_view prefix = "");
std::vector<std::string_view> opNames();
std::vector<std::string_view> dtypeNames();

inline bool isIdent(const Token &t, std::string_view text) {
  return t.kind == Tok::Ident && t.text == text;
}

struct Pins {
  std::optional<Device> device;
  std::optional<DType> dtype;
};

struct PendingOutput {
  std::string name;
  Location at;  // the name in the .fy text
  std::optional<Device> pin;
  Location loc;  // the statement's location (a location comment wins)
};

struct ParsedAttr {
  std::string name;
  AttrValue value;
  int nameCol = 0;
  int valueCol = 0;
};

// One scalar of a tensor literal or inline param, before it is stored.
struct Scalar {
  bool isInt = false;
  int64_t i = 0;
  double d = 0;
};

class Parser {
 public:
  Parser(std::string_view text, std::string_view file, const ParseOptions &options)
      : file_(file), options_(options) {
    split(text);
  }

  Expected<Graph> run();

 private:
  enum class State { Header, Body, Closed };

  // ---- lines and tokens -----------------------------------------------------------------
  void split(std::string_view text);
  void setLine(size_t i) {
    line_ = i;
    pos_ = 0;
    toks_ = tokenizeLine(lines_[i]);
  }
  int lineNumber() const { return static_cast<int>(std::min<size_t>(line_ + 1, INT32_MAX)); }
  const std::vector<Token> &toks() const { return toks_; }
  const Token &peek(size_t k = 0) const { return toks()[std::min(pos_ + k, toks().size() - 1)]; }
  const Token &take() {
    const Token &t = peek();
    if (pos_ + 1 < toks().size()) ++pos_;
    return t;
  }
  bool at(Tok k) const { return peek().kind == k; }
  bool accept(Tok k) {
    if (!at(k)) return false;
    take();
    return true;
  }
  Location loc(int col) const { return Location{fileName_, lineNumber(), col}; }
  Diagnostic &error(std::string code, int col, std::string message) {
    return diags_.error(std::move(code), loc(col), std::move(message));
  }
  // Reports what was expected at the current token (or the lexer's complaint about it).
  bool unexpected(std::string_view what) {
    const Token &t = peek();
    if (t.kind == Tok::Error)
      error("parse", t.col, t.str);
    else
      error("parse", t.col, "expected " + std::string(what) + ", found " + describeToken(t));
    return false;
  }
  const Token *expect(Tok k, std::string_view what) {
    if (at(k)) return &take();
    unexpected(what);
    return nullptr;
  }
  bool blank() const { return at(Tok::End) || at(Tok::Comment); }
  bool endOfStatement();

  // ---- statements -----------------------------------------------------------------------
  void header();
  void statement();
  bool input();
  bool param();
  bool paramsWithinTotal();
  bool node();
  bool output();
  void finish();

  // ---- pieces ---------------------------------------------------------------------------
  std::optional<TensorType> type();
  bool pins(Pins &p, bool allowDType);
  std::optional<Device> device();
  std::optional<AttrValue> attrValue();
  bool elements(Tok close, std::vector<const Token *> &out);
  std::optional<Scalar> scalar(DType dtype, const Token &t);
  std::optional<TensorData> tensor(const TensorType &type, const std::vector<const Token *> &elems,
                                   int col, const std::string &what);
  bool withinLimit(const TensorType &type, int col, const std::string &what);
  std::optional<TensorData> loadNpy(const Token &pathTok, const TensorType &type,
                                    const std::string &what);
  std::optional<ValueId> use(const Token &t, bool &poisoned);
  // A scalar literal operand: a number, true, false, inf or nan (not `name=`).
  bool atLiteral() const {
    const Token &t = peek();
    if (t.kind == Tok::Int || t.kind == Tok::Float) return true;
    return t.kind == Tok::Ident && peek(1).kind != Tok::Equal &&
           (t.text == "true" || t.text == "false" || t.text == "inf" || t.text == "nan");
  }
  std::optional<Literal> literal(const Token &t);
  // The name of the literal that is operand `i` of the node defining `%reader`: free now and not
  // defined further down the text.
  std::string literalValueName(std::string_view reader, const OpInfo &op, size_t i) const;
  bool define(const Token &name);
  Location statementLoc(const Token &name) const {
    return commentLoc_ ? *commentLoc_ : loc(name.col);
  }
  std::string undefinedMessage(const std::string &name, int atLine);

  std::string_view file_;
  FileName fileName_{file_};  // shared by every Location the parser makes
  const ParseOptions &options_;
  std::vector<std::string_view> lines_;
  std::vector<Token> toks_;  // of the current line only: memory stays bounded by one line
  Location eof_;
  size_t line_ = 0;
  size_t pos_ = 0;

  State state_ = State::Header;
  Location headerLoc_, closeLoc_;
  int statements_ = 0;
  bool sawOutput_ = false;
  bool reportedTrailing_ = false;
  std::optional<Location> commentLoc_;  // a location comment ending the current statement
  std::optional<InsertedComment> insertedComment_;  // an `# inserted` comment ending it

  DiagnosticEngine diags_;
  Graph graph_;
  std::unordered_map<std::string, Location> firstDef_;  // from the prescan; lookup only
  std::unordered_map<std::string, Location> defLoc_;    // where each built value was defined
  std::unordered_set<std::string> poisoned_;
  std::vector<PendingOutput> pending_;
};

}  // namespace ferry::fy
