// Resolves data-file names against $BASP_DATA_DIR or the build's source tree; the error for an
// unknown name lists what is shipped, sorted, so the message does not depend on directory order.
#include "data_files.hpp"

#include "input_error.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <vector>

#ifndef BASP_DEFAULT_DATA_DIR
#define BASP_DEFAULT_DATA_DIR "."
#endif

namespace basp {

std::string resolve_data_file(const std::string& folder, const std::string& name) {
  namespace fs = std::filesystem;
  if (name.find('/') != std::string::npos || (name.size() > 5 && name.ends_with(".yaml"))) return name;
  const char* env = std::getenv("BASP_DATA_DIR");
  const fs::path base = env && *env ? fs::path(env) : fs::path(BASP_DEFAULT_DATA_DIR);
  const fs::path file = base / folder / (name + ".yaml");
  if (!fs::exists(file)) {
    std::vector<std::string> names;  // sorted: the message must not depend on directory order
    if (fs::is_directory(base / folder))
      for (const auto& entry : fs::directory_iterator(base / folder))
        if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
    std::sort(names.begin(), names.end());
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
    // Names come from the flag of that folder (--topology, --model, --calibration), or from a
    // topology file's calibration field, whose file the caller adds.
    const std::string flag = folder == "topologies" ? "--topology" : folder == "models" ? "--model" : "--calibration";
    throw InputError("", 0, flag, "no " + folder + " named '" + name + "' in " + (base / folder).string() +
                                      (known.empty() ? "" : " (shipped: " + known + ")"));
  }
  return file.string();
}

}  // namespace basp
