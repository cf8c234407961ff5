// ir/lexer.h — splits one line of `.fy` text into tokens (the parser works line by line).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/diagnostics.h"

namespace ferry::fy {

enum class Tok : uint8_t {
  Ident,   ///< [A-Za-z_][A-Za-z0-9_.]*: keywords, op names, dtypes, devices, true/false/inf/nan
  Value,   ///< %name or %"any name"; `str` is the name (unquoted, unescaped), `text` its source
  Int,     ///< [+-]?[0-9]+ (range-checked where it is used)
  Float,   ///< a decimal with '.' or an exponent, or [+-](inf|nan)
  String,  ///< "..." with escapes \" \\ \n \t \r \xHH; `str` holds the decoded contents
  LBrace,
  RBrace,
  LParen,
  RParen,
  LBracket,
  RBracket,
  Comma,
  Colon,
  Equal,
  At,
  Comment,  ///< '#' to the end of the line; `text` is what follows the '#'
  End,      ///< end of the line
  Error,    ///< a malformed lexeme; `str` says why. Always the last token.
};

struct Token {
  Tok kind = Tok::End;
  std::string_view text;  ///< the source text (see Tok for Value and Comment)
  std::string str;        ///< String: decoded contents; Error: the message
  int col = 1;            ///< 1-based byte column
};

/// The tokens of `line` (no newline in it), ending with End, or with Error at the first
/// malformed lexeme (unknown or non-UTF-8 bytes, bad numbers, unterminated strings). Linear
/// in the line's length; tokens view `line`, which must outlive them.
std::vector<Token> tokenizeLine(std::string_view line);

/// How a token is shown in a message: `'linear'`, `'%x'`, `end of line`, `"str"`.
std::string describeToken(const Token &t);

/// `c` for a message: 'x' when printable ASCII, else e.g. byte 0x93.
std::string describeChar(char c);

/// The value of an Int token's text; nullopt when it does not fit in int64.
std::optional<int64_t> intValue(std::string_view text);
/// The value of an Int or Float token's text (inf, nan included); nullopt when a finite literal
/// is out of the range of double.
std::optional<double> floatValue(std::string_view text);
/// `s` as a `.fy` string literal that the lexer reads back as `s`: quotes, with \" \\ \n \t \r
/// escaped, and \xHH for other control bytes and bytes that are not UTF-8.
std::string quoteString(std::string_view s);
/// Whether `name` is written %name (letters, digits, '_' and '.'); any other name is quoted.
bool isPlainValueName(std::string_view name);
/// `%name`, or `%"onnx::MatMul_84"` for a name that is not plain: what the lexer reads back as a
/// Value token of that name.
std::string valueRefText(std::string_view name);
/// A comment that is exactly a location `PATH:LINE[:COL]` (no spaces, LINE > 0) or an imported
/// node's `PATH: node 'NAME' (#N, Op)` (Location::str()), else nullopt.
std::optional<Location> locationComment(std::string_view text);

/// What a comment marking a compiler-inserted node holds: the node's origin, when written.
struct InsertedComment {
  std::optional<Location> origin;
};
/// A comment that is exactly `inserted`, or `inserted` and a location as locationComment reads
/// it (`inserted mlp.fy:5:3`), else nullopt.
std::optional<InsertedComment> insertedComment(std::string_view text);
/// `text` without a leading fusion mark `fused N` (what a compiled graph's dump writes before an
/// `inserted` mark or a location): groups are the fusion pass's to make again, never read back.
std::string_view withoutFusedMark(std::string_view text);

}  // namespace ferry::fy
