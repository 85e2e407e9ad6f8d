// What every fuzz target shares: its input written to a file (the loaders read files, as users
// give them) and the properties accepted and refused input must have.
#pragma once

#include "input_error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>
#include <unistd.h>

namespace basp::fuzz {

// The files as_file wrote, removed when the process exits normally (an abort, a finding, keeps
// the last input's file beside the crash report).
struct RemovedAtExit {
  std::vector<std::string> paths;
  ~RemovedAtExit() {
    for (const std::string& p : paths) std::remove(p.c_str());
  }
};

// One file per process and target: libFuzzer runs one input at a time.
inline std::string as_file(const std::uint8_t* data, std::size_t size, const std::string& suffix) {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    return std::string(tmp && *tmp ? tmp : "/tmp");
  }();
  const std::string path = dir + "/basp-fuzz-" + std::to_string(::getpid()) + suffix;
  static RemovedAtExit written;
  if (std::find(written.paths.begin(), written.paths.end(), path) == written.paths.end()) written.paths.push_back(path);
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), long(size));
  return path;
}

inline std::string as_text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A property broken: report it and abort, which libFuzzer (and the replay) count as a finding.
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "basp fuzz finding: %s\n", what.c_str());
  std::abort();
}

inline void require(bool ok, const std::string& what) {
  if (!ok) finding(what);
}

// Finite and above 0 (capacities, sizes, sizes of models); finite and at least 0 (latencies, costs).
inline void positive(double v, const std::string& what) { require(std::isfinite(v) && v > 0.0, what + " not > 0"); }
inline void non_negative(double v, const std::string& what) {
  require(std::isfinite(v) && v >= 0.0, what + " not >= 0");
}

// A refusal of a file names the file, and the field or (a syntax error) the line.
inline void check_file_refusal(const InputError& e) {
  require(!std::string(e.what()).empty(), "an input error without a message");
  require(!e.file.empty(), std::string("a file's input error without the file: ") + e.what());
  require(!e.field.empty() || e.line > 0, std::string("an input error naming neither field nor line: ") + e.what());
}

}  // namespace basp::fuzz
