// Strict reading of YAML mappings with file:line:field errors.
// yaml-cpp marks are 0-based; people count lines from 1.
#include "yaml_fields.hpp"

#include "input_error.hpp"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <algorithm>
#include <type_traits>
#include <fstream>
#include <sstream>

namespace basp {

YamlFields::YamlFields(YAML::Node node, std::string file, std::string path)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)) {
  // An empty document has no position (line -1): point at its first line.
  if (!node_.IsMap())
    throw InputError(file_, std::max(1, node_.Mark().line + 1), path_,
                     node_.IsNull() ? "is empty: fields expected (name: value, one per line)"
                                    : "must be a mapping of fields");
  // yaml-cpp keeps the first of two equal keys; a second one is a mistake, not an override.
  std::set<std::string> seen;
  for (auto it = node_.begin(); it != node_.end(); ++it)
    if (!seen.insert(it->first.Scalar()).second)
      throw InputError(file_, it->first.Mark().line + 1, field(it->first.Scalar()), "is given twice");
}

bool YamlFields::has(const std::string& key) const { return bool(node_[key]); }

void YamlFields::fail(const std::string& key, const std::string& what) const {
  YAML::Node v = node_[key];
  const int line = (v ? v.Mark().line : node_.Mark().line) + 1;
  throw InputError(file_, line, field(key), what);
}

YAML::Node YamlFields::required(const std::string& key) {
  read_.insert(key);
  YAML::Node v = node_[key];
  if (!v) fail(key, "is required");
  return v;
}

std::string YamlFields::text(const std::string& key, std::optional<std::string> fallback) {
  read_.insert(key);
  if (!has(key)) {
    if (fallback) return *fallback;
    fail(key, "is required");
  }
  YAML::Node v = node_[key];
  if (!v.IsScalar()) fail(key, "must be a text value");
  return v.Scalar();
}

std::string YamlFields::choice(const std::string& key, std::initializer_list<const char*> allowed,
                               std::optional<std::string> fallback) {
  std::string value = text(key, fallback);
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return value;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  fail(key, "'" + value + "' is not allowed; use one of: " + list);
}

namespace {
// The whole text as one number of type T, or nothing (no partial parses, no infinities).
template <class T>
std::optional<T> parse_whole(const std::string& s) {
  T value{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  if constexpr (std::is_floating_point_v<T>)
    if (!std::isfinite(value)) return std::nullopt;
  return value;
}

template <class T>
std::string range_text(T value, T min, T max) {
  std::ostringstream msg;
  msg << value << " is out of range [" << min << ", " << max << "]";
  return msg.str();
}
}  // namespace

long YamlFields::integer(const std::string& key, long min, long max, std::optional<long> fallback) {
  read_.insert(key);
  if (!has(key)) {
    if (fallback) return *fallback;
    fail(key, "is required");
  }
  const std::string s = text(key);
  const auto value = parse_whole<long>(s);
  if (!value) fail(key, "'" + s + "' is not a whole number");
  if (*value < min || *value > max) fail(key, range_text(*value, min, max));
  return *value;
}

double YamlFields::number(const std::string& key, double min, double max, std::optional<double> fallback) {
  read_.insert(key);
  if (!has(key)) {
    if (fallback) return *fallback;
    fail(key, "is required");
  }
  const std::string s = text(key);
  const auto value = parse_whole<double>(s);
  if (!value) fail(key, "'" + s + "' is not a number");
  if (*value < min || *value > max) fail(key, range_text(*value, min, max));
  return *value;
}

long YamlFields::integer(const std::string& key, const PhysicalRange& range, std::optional<long> fallback) {
  read_.insert(key);
  if (!has(key)) {
    if (fallback) return *fallback;
    fail(key, "is required (" + range.allowed() + ")");
  }
  const std::string s = text(key);
  const auto value = parse_whole<long>(s);
  if (!value) fail(key, "'" + s + "' is not a whole number (" + range.allowed() + ")");
  if (!range.contains(double(*value))) fail(key, out_of_range(double(*value), range, s));
  return *value;
}

double YamlFields::number(const std::string& key, const PhysicalRange& range, std::optional<double> fallback) {
  read_.insert(key);
  if (!has(key)) {
    if (fallback) return *fallback;
    fail(key, "is required (" + range.allowed() + ")");
  }
  const std::string s = text(key);
  const auto value = parse_whole<double>(s);
  if (!value) fail(key, "'" + s + "' is not a number (" + range.allowed() + ")");
  if (!range.contains(*value)) fail(key, out_of_range(*value, range, s));
  return *value;
}

double YamlFields::quantity(const std::string& key, const PhysicalRange& range, std::optional<double> fallback) {
  const Quantity kind = *written_as(range.unit);  // a range of bytes, bandwidth or time
  read_.insert(key);
  if (!has(key)) {
    if (fallback) return *fallback;
    fail(key, "is required (" + quantity_examples(kind) + ")");
  }
  const std::string s = text(key);
  auto value = parse_quantity(s, kind);
  if (!value) fail(key, "'" + s + "' is not " + quantity_examples(kind) + " (" + range.allowed() + ")");
  if (!range.contains(*value)) fail(key, out_of_range(*value, range, s));
  return *value;
}

bool YamlFields::boolean(const std::string& key, std::optional<bool> fallback) {
  const std::string s = text(key, fallback ? std::optional<std::string>(*fallback ? "true" : "false")
                                           : std::nullopt);
  if (s == "true") return true;
  if (s == "false") return false;
  fail(key, "'" + s + "' is not true or false");
}

std::vector<long> YamlFields::integers(const std::string& key, long min, long max) {
  YAML::Node v = required(key);
  if (!v.IsSequence()) fail(key, "must be a list of whole numbers");
  std::vector<long> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string s = v[i].IsScalar() ? v[i].Scalar() : "";
    const auto value = parse_whole<long>(s);
    if (!value || *value < min || *value > max)
      throw InputError(file_, v[i].Mark().line + 1, field(key) + "[" + std::to_string(i) + "]",
                       "'" + s + "' is not a whole number in [" + std::to_string(min) + ", " +
                           std::to_string(max) + "]");
    out.push_back(*value);
  }
  return out;
}

YamlFields YamlFields::map(const std::string& key) { return YamlFields(required(key), file_, field(key)); }

std::vector<YamlFields> YamlFields::maps(const std::string& key) {
  YAML::Node v = required(key);
  if (!v.IsSequence()) fail(key, "must be a list of mappings");
  std::vector<YamlFields> out;
  for (std::size_t i = 0; i < v.size(); ++i)
    out.emplace_back(v[i], file_, field(key) + "[" + std::to_string(i) + "]");
  return out;
}

void YamlFields::reject_unknown() const {
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (read_.count(key)) continue;
    std::string known;
    for (const auto& k : read_) known += (known.empty() ? "" : ", ") + k;
    throw InputError(file_, it->first.Mark().line + 1, field(key),
                     "unknown field (known here: " + known + ")");
  }
}

YAML::Node load_yaml_file(const std::string& file) {
  if (std::filesystem::is_directory(file)) throw InputError(file, 0, "", "is a folder, not a YAML file");
  std::ifstream in(file);
  if (!in) throw InputError(file, 0, "", "cannot open the file");
  try {
    return YAML::Load(in);
  } catch (const YAML::Exception& e) {
    throw InputError(file, e.mark.line + 1, "", "not valid YAML: " + e.msg);
  }
}

}  // namespace basp
