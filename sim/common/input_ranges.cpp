// The physical ranges' messages: each end written with its unit as people write it (1 TiB, 1e15 B/s,
// 1e-9 s, 16777216 (2^24)), so that a refusal says what is allowed.
#include "input_ranges.hpp"

#include "input_error.hpp"

#include <cmath>
#include <cstdio>

namespace basp {
namespace {

// "%g" without its padding: 1e-09 -> 1e-9, 1e+15 -> 1e15.
std::string plain(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  std::string s = buf;
  const auto e = s.find('e');
  if (e == std::string::npos) return s;
  std::string exponent = s.substr(e + 1);
  std::string sign;
  if (!exponent.empty() && (exponent[0] == '+' || exponent[0] == '-')) {
    if (exponent[0] == '-') sign = "-";
    exponent.erase(0, 1);
  }
  while (exponent.size() > 1 && exponent[0] == '0') exponent.erase(0, 1);
  return s.substr(0, e) + "e" + sign + exponent;
}

bool power_of_two(double v) {
  int exp = 0;
  return v > 0 && std::frexp(v, &exp) == 0.5;
}

std::string with_unit(double v, RangeUnit unit) {
  switch (unit) {
    case RangeUnit::bytes: {
      // Binary multiples from KiB up, where the bound is one (1 TiB, 4 TiB, 1 PiB).
      static const char* names[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
      if (power_of_two(v) && v >= 1024.0) {
        double scaled = v;
        int i = -1;
        while (scaled >= 1024.0 && i < 4) scaled /= 1024.0, ++i;
        return plain(scaled) + " " + names[i];
      }
      return plain(v) + " B";
    }
    case RangeUnit::bandwidth: return plain(v) + " B/s";
    case RangeUnit::time: return plain(v) + " s";
    case RangeUnit::flops: return plain(v) + " FLOPs";
    case RangeUnit::count: {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.0f", v);
      std::string s = buf;
      if (power_of_two(v) && v > 1024.0) s += " (2^" + std::to_string(std::ilogb(v)) + ")";
      return s;
    }
    case RangeUnit::number: return plain(v);
  }
  return plain(v);
}

}  // namespace

std::optional<Quantity> written_as(RangeUnit unit) {
  switch (unit) {
    case RangeUnit::bytes: return Quantity::bytes;
    case RangeUnit::bandwidth: return Quantity::bandwidth;
    case RangeUnit::time: return Quantity::time;
    default: return std::nullopt;
  }
}

std::string PhysicalRange::bounds() const { return "[" + with_unit(min, unit) + ", " + with_unit(max, unit) + "]"; }

std::string PhysicalRange::allowed() const {
  return std::string(what) + " must be at least " + with_unit(min, unit) + " and at most " + with_unit(max, unit);
}

std::string out_of_range(double value, const PhysicalRange& range, std::string_view text) {
  const std::string shown = text.empty() ? with_unit(value, range.unit) : std::string(text);
  return "'" + shown + "' is out of range: " + range.allowed();
}

double require_in_range(double value, const PhysicalRange& range, const std::string& file, int line,
                        const std::string& field, std::string_view text) {
  if (!range.contains(value)) throw InputError(file, line, field, out_of_range(value, range, text));
  return value;
}

}  // namespace basp
