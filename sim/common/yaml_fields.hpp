// Strict reading of one YAML mapping: every key must be known, every value well-typed and in
// range, and every error names file, line and dotted field. Shared by all YAML inputs.
#pragma once

#include "input_ranges.hpp"
#include "units.hpp"

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace basp {

class YamlFields {
 public:
  YamlFields(YAML::Node node, std::string file, std::string path);

  bool has(const std::string& key) const;
  std::string text(const std::string& key, std::optional<std::string> fallback = std::nullopt);
  std::string choice(const std::string& key, std::initializer_list<const char*> allowed,
                     std::optional<std::string> fallback = std::nullopt);
  long integer(const std::string& key, long min, long max, std::optional<long> fallback = std::nullopt);
  // A whole number within a physical range (input_ranges.hpp).
  long integer(const std::string& key, const PhysicalRange& range, std::optional<long> fallback = std::nullopt);
  double number(const std::string& key, double min, double max,
                std::optional<double> fallback = std::nullopt);
  double number(const std::string& key, const PhysicalRange& range, std::optional<double> fallback = std::nullopt);
  // A quantity with its unit ("2 us", "400 Gb/s") within a physical range of bytes, bandwidth or time;
  // the fallback, when the key is absent, is not checked (it may mean "derive it").
  double quantity(const std::string& key, const PhysicalRange& range, std::optional<double> fallback = std::nullopt);
  bool boolean(const std::string& key, std::optional<bool> fallback = std::nullopt);
  std::vector<long> integers(const std::string& key, long min, long max);
  YamlFields map(const std::string& key);            // a nested mapping (required)
  std::vector<YamlFields> maps(const std::string& key);  // a sequence of mappings (required)

  // Fails on any key that no accessor asked for; call once all fields are read.
  void reject_unknown() const;
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;

  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  int line() const { return node_.Mark().line + 1; }

 private:
  YAML::Node required(const std::string& key);
  std::string field(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  YAML::Node node_;
  std::string file_;
  std::string path_;
  std::set<std::string> read_;
};

// Loads a YAML file, turning parse errors into InputError with the file and line.
YAML::Node load_yaml_file(const std::string& file);

}  // namespace basp
