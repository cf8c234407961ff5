// tools/common/cli_errors.h — command-line errors as one line that names the option and what it
// expects, instead of CLI11's wording ("The following argument was not expected: nosuch", an option
// name taken as another option's value).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
class ParseError;
}  // namespace CLI

namespace ferry {

class Report;

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

/// Parses `args` (the command line after the program name, in order) into `app` the way both
/// tools do: optionValueError() first, then CLI11, every error one line through
/// `report.usage()` with " (see --help)". `reword`, when given, may word a CLI11 error better
/// (it returns "" to keep parseErrorLine()'s). Returns the exit status when the tool is done
/// (--help: 0, a usage error: 2), else nullopt.
std::optional<int>
parseArgs(CLI::App &app, const std::vector<std::string> &args, Report &report,
          const std::function<std::string(const CLI::ParseError &)> &reword = {});

/// What `option` of `app` expects, for messages: "LIST (devices the model may use, ...)".
std::string expectedValue(const CLI::App &app, const std::string &option);

}  // namespace ferry
