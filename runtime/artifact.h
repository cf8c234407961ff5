// runtime/artifact.h — telling a saved executable (docs/artifact.md) from any other file by its
// first bytes, the way ferry-compile and ferry-run decide what they were given. Saving and
// loading are Executable::save() and Executable::load() (runtime/executable.h).
#pragma once

#include <string>
#include <string_view>

namespace ferry {

/// Whether `head`, the first bytes of a file (at least 8 of them for a true answer), starts with
/// the executable's magic `FERRYEXE`. Only the magic is checked: a file that has it and is
/// broken after it is still an executable, one Executable::load() refuses with the reason.
bool startsWithExecutableMagic(std::string_view head);

/// Whether the file `path` starts with the executable's magic (startsWithExecutableMagic on its
/// first bytes); false when it cannot be read. A tool gives such a file to Executable::load()
/// and any other to the .fy parser, whatever the file's name.
bool isExecutableFile(const std::string &path);

}  // namespace ferry
