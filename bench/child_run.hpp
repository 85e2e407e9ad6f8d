// Runs one bench case in a child process of its own, so that its peak resident memory is its own:
// the child writes one line of figures to a pipe; the parent collects it with wall and peak.
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace basp::bench {

struct ChildResult {
  bool ok = false;
  double wall_s = 0.0;   // measured in the child, around the case itself
  double peak_MiB = 0.0; // the child's max RSS
  std::string figures;   // what the case wrote
};

// `run` returns the case's figures as one line; it runs in the child only.
template <class Run>
ChildResult run_in_child(Run run) {
  ChildResult out;
  int fds[2];
  if (pipe(fds) != 0) return out;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string figures = run();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string line = std::to_string(wall) + " " + figures;
    if (write(fds[1], line.data(), line.size()) != static_cast<ssize_t>(line.size())) _exit(3);
    _exit(0);
  }
  close(fds[1]);
  std::string got;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, n);
  close(fds[0]);
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  if (got.empty() || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return out;
  out.ok = true;
  std::size_t used = 0;
  out.wall_s = std::stod(got, &used);
  out.figures = got.substr(used + 1 < got.size() ? used + 1 : got.size());
  out.peak_MiB = usage.ru_maxrss / 1024.0;
  return out;
}

}  // namespace basp::bench
