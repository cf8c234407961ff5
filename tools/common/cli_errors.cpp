// tools/common/cli_errors.cpp — command-line errors that name the option and what it expects.
#include "tools/common/cli_errors.h"

#include <CLI/CLI.hpp>
#include <cctype>
#include <optional>

#include "tools/common/report.h"

namespace ferry {

namespace {

// The option `arg` names ("--devices", "--devices=cpu", "-o"), or null for a value, a positional or
// an unknown option.
const CLI::Option *optionOf(const CLI::App &app, const std::string &arg) {
  if (arg.size() < 2 || arg[0] != '-') return nullptr;
  const std::string name = arg.substr(0, arg.find('='));
  const CLI::Option *o = app.get_option_no_throw(name);
  return o != nullptr && o->nonpositional() ? o : nullptr;
}

bool takesValue(const CLI::Option *o) { return o != nullptr && o->get_expected_min() > 0; }

// A flag that takes an optional value attached with '=' (`--random-inputs[=SEED]`): its type name,
// which --help shows, starts with "[=".
bool takesAttachedValue(const CLI::Option *o) {
  return o != nullptr && !takesValue(o) && o->get_type_name().starts_with("[=");
}

// `arg` is an option written alone, its value (if any) in the next argument.
bool valueFollows(const CLI::App &app, const std::string &arg) {
  return takesValue(optionOf(app, arg)) && arg.find('=') == std::string::npos;
}

// Whether `arg` reads as an option rather than a value: `--anything`, or a known short option.
bool looksLikeOption(const CLI::App &app, const std::string &arg) {
  return arg.starts_with("--") || optionOf(app, arg) != nullptr;
}

std::string quoted(const std::string &s) { return "'" + s + "'"; }

}  // namespace

std::string expectedValue(const CLI::App &app, const std::string &option) {
  const CLI::Option *o = app.get_option_no_throw(option);
  if (o == nullptr) return "a value";
  std::string what = o->get_type_name().empty() ? std::string("a value") : o->get_type_name();
  std::string about = o->get_description();
  if (!about.empty()) {
    // "Devices the model may use" reads "devices the model may use" inside the message.
    if (about.size() > 1 && std::islower(static_cast<unsigned char>(about[1])))
      about[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(about[0])));
    what += " (" + about + ")";
  }
  return what;
}

std::string optionValueError(const CLI::App &app, const std::vector<std::string> &args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") return "";  // the rest are positionals
    const CLI::Option *o = optionOf(app, args[i]);
    if (o == nullptr) continue;
    const size_t eq = args[i].find('=');
    const std::string name = args[i].substr(0, eq);
    if (eq != std::string::npos) {
      const std::string value = args[i].substr(eq + 1);
      if (takesAttachedValue(o) && value.empty()) {
        std::string form = o->get_type_name().substr(1);  // "=SEED]"
        if (form.ends_with(']')) form.pop_back();
        return name + ": expected " + name + form + ", got nothing after '='";
      }
      if (takesAttachedValue(o)) continue;
      if (!takesValue(o)) return name + " takes no value, got " + quoted(value);
      if (value.empty()) return name + ": expected " + expectedValue(app, name) + ", got nothing";
      continue;
    }
    if (!takesValue(o)) continue;
    if (i + 1 == args.size())
      return name + ": expected " + expectedValue(app, name) + ", got nothing";
    if (looksLikeOption(app, args[i + 1]))
      return name + ": expected " + expectedValue(app, name) + ", got the option " +
             quoted(args[i + 1]);
    ++i;  // its value
  }
  return "";
}

std::string parseErrorLine(const CLI::App &app, const CLI::ParseError &e,
                           const std::vector<std::string> &args) {
  // By type: CLI11 2.1 leaves get_name() empty for some errors.
  if (dynamic_cast<const CLI::ExtrasError *>(&e) != nullptr) {
    const std::vector<std::string> extras = app.remaining();
    if (extras.empty()) return e.what();
    const std::string &extra = extras.front();
    // Where it stands: the first place it is not the value of the option before it.
    std::optional<size_t> at;
    for (size_t i = 0; i < args.size() && !at; ++i)
      if (args[i] == extra && (i == 0 || !valueFollows(app, args[i - 1]))) at = i;
    if (at && *at > 0) {
      const std::string &before = args[*at - 1];
      const CLI::Option *flag = optionOf(app, before);
      if (flag != nullptr && !takesValue(flag))
        return before + " takes no value; unexpected argument " + quoted(extra);
      if (*at > 1 && valueFollows(app, args[*at - 2])) {
        const CLI::Option *o = optionOf(app, args[*at - 2]);
        return args[*at - 2] + " takes one value, got a second one: " + quoted(extra) + " after " +
               quoted(before) +
               (o->get_delimiter() != '\0'
                    ? " (several: " + before + std::string(1, o->get_delimiter()) + extra + ")"
                    : "");
      }
    }
    return "unexpected argument " + quoted(extra) +
           ": the model is given once, and options start with -";
  }
  if (dynamic_cast<const CLI::ConversionError *>(&e) != nullptr) {
    // "Could not convert: --stats = maybe": a flag given a value.
    const std::string what = e.what();
    const std::string prefix = "Could not convert: ";
    const size_t eq = what.find(" = ");
    if (what.starts_with(prefix) && eq != std::string::npos) {
      const std::string name = what.substr(prefix.size(), eq - prefix.size());
      const CLI::Option *o = app.get_option_no_throw(name);
      if (o != nullptr && !takesValue(o))
        return name + " takes no value, got " + quoted(what.substr(eq + 3));
    }
  }
  return e.what();
}

std::optional<int> parseArgs(CLI::App &app, const std::vector<std::string> &args, Report &report,
                             const std::function<std::string(const CLI::ParseError &)> &reword) {
  if (std::string bad = optionValueError(app, args); !bad.empty())
    return report.usage(bad + " (see --help)");
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them in reverse
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError &e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::string line = reword ? reword(e) : "";
    if (line.empty()) line = parseErrorLine(app, e, args) + " (see --help)";
    return report.usage(line);
  }
  return std::nullopt;
}

}  // namespace ferry
