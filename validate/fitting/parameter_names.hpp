// Naming the parameters a fit may move: `--fit` takes names or prefixes (links.nic, software),
// shared by the link fit and the step-level fit.
#pragma once

#include <string>
#include <vector>

namespace basp::fitting {

// Whether `name` is one of `fit` or under one of its prefixes (empty `fit`: every name).
bool selected_parameter(const std::string& name, const std::vector<std::string>& fit);

// Throws InputError (field --fit) for an entry of `fit` that selects none of `names`, listing them.
void check_parameter_names(const std::vector<std::string>& fit, const std::vector<std::string>& names);

}  // namespace basp::fitting
