// tools/common/cli_errors.h — command-line errors as one line that names the option and what it
// expects, instead of CLI11's wording ("The following argument was not expected: nosuch", an option
// name taken as another option's value).
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
class ParseError;
}  // namespace CLI

namespace ferry {

/// Checks `args` (in command-line order) before CLI11 parses them: every option of `app` that
/// takes a value is given one, not another option (`--devices --emit dot` would make CLI11 take
/// `--emit` as the device list) and not an empty `--opt=`; a flag is given none (CLI11 would read
/// `--stats=2` as a count). Returns "" when all is well, else one line such as
/// "--devices: expected LIST (devices the model may use, e.g. cpu,cpu:1,cuda:0), got nothing".
/// `-` alone is a value (standard output), not an option. A flag whose type name starts with
/// "[=" (`--random-inputs[=SEED]`) takes an optional value attached with '=', not an empty one.
std::string optionValueError(const CLI::App &app, const std::vector<std::string> &args);

/// CLI11's parse error `e` for `args` (in command-line order), as one line that names the option
/// and what it expects: an argument nothing takes is attributed to the option before it ("--stats
/// takes no value", "-o takes one value") or said to be a second positional; a flag given a value
/// says it takes none. Other errors keep CLI11's text, which names the option.
std::string parseErrorLine(const CLI::App &app, const CLI::ParseError &e,
                           const std::vector<std::string> &args);

/// What `option` of `app` expects, for messages: "LIST (devices the model may use, ...)".
std::string expectedValue(const CLI::App &app, const std::string &option);

}  // namespace ferry
