// User-input errors: what was wrong, where (file, line, field) and what is allowed.
// The CLI maps InputError to exit code 2 in one place; programmer errors stay assertions.
#pragma once

#include <stdexcept>
#include <string>

namespace basp {

struct InputError : std::runtime_error {
  std::string file;   // empty when the input came from the command line
  int line = 0;       // 1-based; 0 when unknown
  std::string field;  // dotted path of the offending field or the CLI flag
  InputError(std::string file_, int line_, std::string field_, const std::string& what_wrong)
      : std::runtime_error(format(file_, line_, field_, what_wrong)),
        file(std::move(file_)), line(line_), field(std::move(field_)) {}

  static std::string format(const std::string& file, int line, const std::string& field,
                            const std::string& what_wrong) {
    std::string where;
    if (!file.empty()) where = file + (line > 0 ? ":" + std::to_string(line) : "") + ": ";
    if (!field.empty()) where += "field '" + field + "': ";
    return where + what_wrong;
  }
};

}  // namespace basp
