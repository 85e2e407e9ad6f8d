// Physical quantities written by people ("400 Gb/s", "64MiB", "2us") parsed into SI base units,
// and SI values formatted back with their unit for reports.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace basp {

enum class Quantity { bytes, bandwidth, time, rate };  // B, B/s, s, FLOP/s

// Parses "<number>[ ]<unit>"; returns nullopt when the text is not a quantity of that kind.
// Bytes: B, kB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB; a bare number means bytes.
// Bandwidth: B/s, kB/s, MB/s, GB/s, TB/s, bit/s, kb/s, Mb/s, Gb/s, Tb/s (bits are /8), GiB/s.
// Time: s, ms, us (or µs), ns. Rate: FLOP/s, GFLOP/s, TFLOP/s, PFLOP/s.
std::optional<double> parse_quantity(std::string_view text, Quantity kind);

// "e.g. 400 Gb/s, 50 GB/s": what the parser accepts, for error messages.
std::string quantity_examples(Quantity kind);

std::string format_bytes(double bytes);          // "64 MiB", "1.5 GB"
std::string format_bandwidth(double bytes_per_s);  // "50 GB/s"
std::string format_time(double seconds);         // "12.3 us"
// Every digit, for files read back by programs: "5.0000000000000001e-07 s".
std::string format_exact(double value, const char* unit);
// A positive number with an optional K, M or G suffix (×1024, ×1024², ×1024³), as people and
// nccl-tests write counts and sizes ("16K", "128M"); nullopt otherwise. Whole numbers only unless
// allow_fraction.
std::optional<double> parse_binary_multiple(const std::string& text, bool allow_fraction);
// A token count with an optional K (×1024) or M (×1024²) suffix ("16384", "16K", "128K"), within
// ranges::sequence_tokens (1 to 2^24); throws InputError naming `flag` otherwise.
long parse_tokens(const std::string& text, const std::string& flag);

}  // namespace basp
