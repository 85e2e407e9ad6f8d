// Physical quantities written by people parsed into SI base units, and formatted back.
// Units are case-sensitive where it matters: "Gb/s" is bits, "GB/s" is bytes.
#include "units.hpp"

#include "input_error.hpp"
#include "input_ranges.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>

namespace basp {
namespace {

struct Unit { std::string_view name; double factor; };

constexpr std::array bytes_units{
    Unit{"B", 1.0},     Unit{"kB", 1e3},          Unit{"KB", 1e3},          Unit{"MB", 1e6},
    Unit{"GB", 1e9},    Unit{"TB", 1e12},         Unit{"KiB", 1024.0},      Unit{"MiB", 1048576.0},
    Unit{"GiB", 1073741824.0}, Unit{"TiB", 1099511627776.0}};
constexpr std::array bandwidth_units{
    Unit{"B/s", 1.0},   Unit{"kB/s", 1e3},  Unit{"MB/s", 1e6},  Unit{"GB/s", 1e9}, Unit{"TB/s", 1e12},
    Unit{"KiB/s", 1024.0}, Unit{"MiB/s", 1048576.0}, Unit{"GiB/s", 1073741824.0},
    Unit{"bit/s", 0.125}, Unit{"b/s", 0.125}, Unit{"kb/s", 125.0}, Unit{"Kb/s", 125.0},
    Unit{"Mb/s", 125e3}, Unit{"Gb/s", 125e6}, Unit{"Tb/s", 125e9}, Unit{"Gbit/s", 125e6}};
constexpr std::array time_units{Unit{"s", 1.0},   Unit{"ms", 1e-3}, Unit{"us", 1e-6},
                                Unit{"µs", 1e-6}, Unit{"ns", 1e-9}};
constexpr std::array rate_units{Unit{"FLOP/s", 1.0}, Unit{"GFLOP/s", 1e9}, Unit{"TFLOP/s", 1e12},
                                Unit{"PFLOP/s", 1e15}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

template <std::size_t N>
std::optional<double> lookup(const std::array<Unit, N>& units, std::string_view name) {
  for (const Unit& u : units)
    if (u.name == name) return u.factor;
  return std::nullopt;
}

}  // namespace

std::optional<double> parse_quantity(std::string_view text, Quantity kind) {
  text = trim(text);
  double value = 0.0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || !std::isfinite(value) || value < 0.0) return std::nullopt;
  std::string_view unit = trim(std::string_view(end, text.data() + text.size() - end));
  std::optional<double> factor;
  switch (kind) {
    case Quantity::bytes:
      factor = unit.empty() ? std::optional<double>(1.0) : lookup(bytes_units, unit);
      break;
    case Quantity::bandwidth: factor = lookup(bandwidth_units, unit); break;
    case Quantity::time: factor = lookup(time_units, unit); break;
    case Quantity::rate: factor = lookup(rate_units, unit); break;
  }
  if (!factor || !std::isfinite(value * *factor)) return std::nullopt;
  return value * *factor;
}

std::string quantity_examples(Quantity kind) {
  switch (kind) {
    case Quantity::bytes: return "a size such as 1048576, 64 MiB or 1.5 GB";
    case Quantity::bandwidth: return "a bandwidth such as 400 Gb/s or 50 GB/s";
    case Quantity::time: return "a time such as 2 us, 0.5 ms or 1e-6 s";
    case Quantity::rate: return "a rate such as 312 TFLOP/s";
  }
  return {};
}

namespace {
std::string with_unit(double v, const char* unit, const char* format = "%.4g %s") {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v, unit);
  return buf;
}
}  // namespace

std::string format_exact(double value, const char* unit) { return with_unit(value, unit, "%.17g %s"); }

std::string format_bytes(double b) {
  if (b >= 1073741824.0) return with_unit(b / 1073741824.0, "GiB");
  if (b >= 1048576.0) return with_unit(b / 1048576.0, "MiB");
  if (b >= 1024.0) return with_unit(b / 1024.0, "KiB");
  return with_unit(b, "B");
}

std::string format_bandwidth(double bps) {
  if (bps >= 1e12) return with_unit(bps / 1e12, "TB/s");
  if (bps >= 1e9) return with_unit(bps / 1e9, "GB/s");
  if (bps >= 1e6) return with_unit(bps / 1e6, "MB/s");
  return with_unit(bps, "B/s");
}

std::string format_time(double s) {
  if (s >= 1.0) return with_unit(s, "s");
  if (s >= 1e-3) return with_unit(s * 1e3, "ms");
  if (s >= 1e-6) return with_unit(s * 1e6, "us");
  return with_unit(s * 1e9, "ns");
}

std::optional<double> parse_binary_multiple(const std::string& text, bool allow_fraction) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const std::string suffix = text.substr(used);
  double scale = 0;
  if (suffix.empty()) scale = 1;
  else if (suffix == "K" || suffix == "k") scale = 1024.0;
  else if (suffix == "M" || suffix == "m") scale = 1048576.0;
  else if (suffix == "G" || suffix == "g") scale = 1073741824.0;
  if (scale == 0 || !(value > 0) || !std::isfinite(value) || (!allow_fraction && value != std::floor(value)))
    return std::nullopt;
  if (!std::isfinite(value * scale)) return std::nullopt;  // 1e301G
  return value * scale;
}

long parse_tokens(const std::string& text, const std::string& flag) {
  const bool giga = !text.empty() && (text.back() == 'G' || text.back() == 'g');  // tokens stop at M
  const auto tokens = giga ? std::nullopt : parse_binary_multiple(text, false);
  if (!tokens)
    throw InputError("", 0, flag, "'" + text + "' is not a sequence length (tokens, e.g. 16384, 16K, 128K)");
  return long(require_in_range(*tokens, ranges::sequence_tokens, "", 0, flag, text));
}

}  // namespace basp
