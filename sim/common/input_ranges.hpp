// The physical range of every quantity basp reads from people (files and flags), each defined once,
// here, with why. A reader checks a value against its range where the value enters, once, and
// refuses one outside with an InputError naming the file, the line where there is one, the field,
// and what is allowed. The ranges are wide: they keep out what no machine can be (a negative
// bandwidth, a 1e308 s time, a 2^64-byte buffer, a denormal efficiency), never a real cluster.
#pragma once

#include "units.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace basp {

enum class RangeUnit { bytes, bandwidth, time, flops, count, number };

struct PhysicalRange {
  std::string_view what;  // "a bandwidth": the subject of allowed()
  RangeUnit unit;
  double min, max;        // both ends allowed
  constexpr bool contains(double v) const { return v >= min && v <= max; }  // false for NaN
  // "a bandwidth must be at least 1 B/s and at most 1e15 B/s"
  std::string allowed() const;
  // "[1 B/s, 1e15 B/s]"
  std::string bounds() const;
};

// How a value of this range is written with its unit (bytes, bandwidth, time); none for plain numbers.
std::optional<Quantity> written_as(RangeUnit unit);

// "'TEXT' is out of range: ALLOWED"; TEXT is what the user wrote, or the value when `text` is empty.
std::string out_of_range(double value, const PhysicalRange& range, std::string_view text = {});
// The value when the range contains it; otherwise InputError(file, line, field, out_of_range(...)).
double require_in_range(double value, const PhysicalRange& range, const std::string& file, int line,
                        const std::string& field, std::string_view text = {});

namespace ranges {

// Bandwidth of a link or a measured rate: above 0 and finite, from 1 B/s (nothing slower is a link)
// to 1e15 B/s (1 PB/s: 500 times NVLink 5's 1.8 TB/s per GPU, beyond any link that exists).
inline constexpr PhysicalRange bandwidth{"a bandwidth", RangeUnit::bandwidth, 1.0, 1e15};
// A per-hop link latency or a software overhead (launch, per peer): 0 (not modelled) to 1 s. Real
// ones are microseconds; a second is a million times more and would dwarf any step.
inline constexpr PhysicalRange latency{"a latency or overhead", RangeUnit::time, 0.0, 1.0};
// A measured time (a collective, a kernel, a phase, a step): from 1 ns (below any timer's
// resolution and any kernel launch) to 1e6 s (11.6 days, longer than any timed run).
inline constexpr PhysicalRange duration{"a measured time", RangeUnit::time, 1e-9, 1e6};
// A rank's buffer (nccl-tests' size of a collective, a measured message): 1 B to 1 TiB; no GPU
// holds more, and beyond it figures mean nothing.
inline constexpr double max_buffer_bytes = 1099511627776.0;  // 2^40
inline constexpr PhysicalRange buffer_bytes{"a rank's buffer", RangeUnit::bytes, 1.0, max_buffer_bytes};
// A measured phase's send buffer: the same, or 0 for a phase that sends nothing.
inline constexpr PhysicalRange send_bytes{"a phase's send buffer (0: none)", RangeUnit::bytes, 0.0,
                                          max_buffer_bytes};
// The bytes one memory-bound kernel reads and writes: 0 (a math kernel) to 1 PiB (2^50), days of
// any GPU's HBM bandwidth.
inline constexpr PhysicalRange kernel_bytes{"a kernel's bytes read and written", RangeUnit::bytes, 0.0,
                                            1125899906842624.0};
// The FLOPs of one operation (a measured kernel, a calibration's F½): 0 to 1e24, which is 1e6 s
// (the longest time) at 1e18 FLOP/s, a thousand times any GPU's peak.
inline constexpr PhysicalRange flops{"an operation's FLOPs", RangeUnit::flops, 0.0, 1e24};
// An efficiency (effective over nominal rate): in (0, 1], at least 1e-6: below a millionth of the
// datasheet nothing runs, and denormals (1e-320) would make rates infinite when divided by.
inline constexpr PhysicalRange efficiency{"an efficiency", RangeUnit::number, 1e-6, 1.0};
// A ratio of two strategies' times on the same job (a speedup, an all-to-all reduction): 1e-3 to
// 1e3; changing only how attention is parallelised cannot make a step a thousand times faster.
inline constexpr PhysicalRange time_ratio{"a ratio of two strategies' times", RangeUnit::number, 1e-3, 1e3};
// A share of a step (the all-to-all's): a fraction, at least 1e-6 (not a denormal), at most 1.
inline constexpr PhysicalRange step_share{"a share of the step", RangeUnit::number, 1e-6, 1.0};
// A sequence length: 1 to 2^24 tokens (16M), above the longest contexts trained (10M).
inline constexpr PhysicalRange sequence_tokens{"a sequence length (tokens)", RangeUnit::count, 1.0, 16777216.0};
// A GPU's memory (a plan's --memory-limit): 1 B to 4 TiB, 14 times the largest GPU's HBM (288 GB).
inline constexpr PhysicalRange gpu_memory{"a GPU's memory", RangeUnit::bytes, 1.0, 4398046511104.0};
// A host's memory (the simulations' budget, --sim-memory): 1 B to 1 PiB, 20 times the largest
// single machine's.
inline constexpr PhysicalRange host_memory{"a host's memory", RangeUnit::bytes, 1.0, 1125899906842624.0};
// GPUs or ranks of a job, and groups of them: 1 to 2^24 (16.7M), a hundred times the largest cluster.
inline constexpr PhysicalRange gpu_count{"a number of GPUs, ranks or groups", RangeUnit::count, 1.0, 16777216.0};
// Sequences of a micro-batch: 1 to 2^20.
inline constexpr PhysicalRange micro_batch{"a micro-batch (sequences)", RangeUnit::count, 1.0, 1048576.0};
// A model's shape: attention heads and a head's dimension 1 to 4096, the hidden size 1 to 2^20
// (the largest models have 128 heads of 128 and a hidden size of 16K-25K).
inline constexpr PhysicalRange attention_heads{"a number of attention heads", RangeUnit::count, 1.0, 4096.0};
inline constexpr PhysicalRange head_dim{"a head dimension", RangeUnit::count, 1.0, 4096.0};
inline constexpr PhysicalRange hidden_size{"a hidden size", RangeUnit::count, 1.0, 1048576.0};

}  // namespace ranges
}  // namespace basp
