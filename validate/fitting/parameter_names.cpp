// A prefix selects what lies under it after a dot: "links.nic" selects "links.nic.efficiency",
// never "links.nicer".
#include "parameter_names.hpp"

#include <algorithm>

#include "input_error.hpp"

namespace basp::fitting {

bool selected_parameter(const std::string& name, const std::vector<std::string>& fit) {
  if (fit.empty()) return true;
  for (const std::string& f : fit)
    if (name == f || (name.size() > f.size() && name.compare(0, f.size(), f) == 0 && name[f.size()] == '.'))
      return true;
  return false;
}

void check_parameter_names(const std::vector<std::string>& fit, const std::vector<std::string>& names) {
  for (const std::string& f : fit) {
    if (std::any_of(names.begin(), names.end(), [&](const std::string& n) { return selected_parameter(n, {f}); }))
      continue;
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    throw InputError("", 0, "--fit", "'" + f + "' names no parameter of this fit; they are " + list);
  }
}

}  // namespace basp::fitting
