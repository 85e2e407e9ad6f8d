// The --json FILE of every subcommand: opened on rank 0 before measuring (so a bad path is a
// usage error, exit 2, not a lost run), written once at the end.
#pragma once

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "control.hpp"

namespace basp::validate {

// Rank 0 opens `path` (empty: no file); every rank learns whether that worked. Throws InputError
// on every rank when it did not.
std::unique_ptr<std::ofstream> open_json_output(const std::string& path, Control& ctl);
void write_json_output(std::ofstream* file, const nlohmann::json& j);

// The basp-measurements v1 envelope every subcommand writes (read back by validate/fitting).
nlohmann::json measurements_document(const std::string& command, nlohmann::json config,
                                     nlohmann::json hardware, nlohmann::json results, bool ok);

// Every rank's host name, on rank 0 (others get an empty list).
std::vector<std::string> gather_strings(const std::string& mine, Control& ctl);

}  // namespace basp::validate
