// Where shipped data lives: a NAME given on the command line (`--topology dgx-h100`, `--model
// llama-3.1-8b`, `--calibration paper-a100-2x4`) is FOLDER/NAME.yaml under the data directory.
#pragma once

#include <string>

namespace basp {

// NAME resolves to FOLDER/NAME.yaml under $BASP_DATA_DIR, else the source tree the build came from;
// anything with a '/' or ending in .yaml is a path and is returned as it is. An unknown NAME is an
// InputError listing the shipped names.
std::string resolve_data_file(const std::string& folder, const std::string& name_or_path);

}  // namespace basp
