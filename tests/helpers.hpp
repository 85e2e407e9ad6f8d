// Small helpers shared by the tests: test data paths, temporary YAML files (removed by their guard),
// running a command line. cli_helpers.hpp adds running the `basp` binary.
#pragma once

#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>
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

// `text` with the first `from` replaced by `to` (a variant of a test file); `from` must occur.
inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

struct Run {
  int code = -1;
  std::string out;  // stdout and stderr together
};

// Runs a shell command line and collects its output (stdout, plus stderr unless redirected) and exit code.
inline Run run_command(const std::string& cmd) {
  Run r;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  REQUIRE(pipe);
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) r.out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace basp::test
