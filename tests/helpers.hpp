// Small helpers shared by the tests: shipped/test topology paths and temporary YAML files.
// Temporary files live under the system temp folder and are removed by their guard.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace basp::test {

inline std::string data(const std::string& name) { return std::string(BASP_TEST_DATA) + "/" + name; }

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text, const std::string& suffix = ".yaml") {
    static int counter = 0;
    path = (std::filesystem::temp_directory_path() /
            ("basp-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + suffix))
               .string();
    std::ofstream(path) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};

}  // namespace basp::test
