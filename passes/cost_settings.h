// passes/cost_settings.h — the cost model (passes/options.h, CostModel) as `key=value` settings:
// what `--cost` and `--cost-file` read and what `--explain` prints. Keys name a device kind or a
// link and one of its numbers:
//
//   cpu.flops, cuda.flops          floating-point operations per second
//   cpu.bandwidth, cuda.bandwidth  bytes per second of device memory
//   cpu.launch, cuda.launch        seconds of fixed cost per op
//   h2d.bandwidth, d2h.bandwidth, d2d.bandwidth, h2h.bandwidth   bytes per second of a copy
//   h2d.latency, d2h.latency, d2d.latency, h2h.latency           seconds of fixed cost per copy
//
// Rates are positive and finite, fixed costs zero or positive and finite. A file holds one
// setting per line; `#` starts a comment; blank lines are skipped.
#pragma once

#include <string>
#include <string_view>

#include "passes/options.h"

namespace ferry {

/// Sets one number of `cost`: an error that lists the keys for an unknown key, and says what
/// was expected for a value that is not a number or out of range.
Status setCost(CostModel &cost, std::string_view key, std::string_view value);
/// "key=value,key=value": each set in order (a later one wins).
Status applyCostSettings(CostModel &cost, std::string_view settings);
/// The lines of a cost file; errors carry `file`:line:col, every bad line reported.
Status applyCostFile(CostModel &cost, std::string_view text, const std::string &file);
/// Every setting of `cost`, one `key=value` per line in the order above, as a file holds them.
std::string costSettingsText(const CostModel &cost);

}  // namespace ferry
