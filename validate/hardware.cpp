// Reads the CPU model from /proc/cpuinfo and the host name from the OS; the GPU fields are filled
// by the CUDA runner, the MPI field by the MPI runner.
#include "hardware.hpp"

#include <unistd.h>

#include <fstream>
#include <thread>

namespace basp::validate {

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

void fill_cpu(Hardware& h) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) h.cpu_model = line.substr(line.find_first_not_of(' ', colon + 1));
      break;
    }
  if (h.cpu_model.empty()) h.cpu_model = "unknown";
  h.cpu_threads = int(std::thread::hardware_concurrency());
}

nlohmann::json to_json(const Hardware& h) {
  nlohmann::json j = {{"backend", h.backend},
                      {"launcher", h.launcher},
                      {"hosts", h.hosts},
                      {"cpu_model", h.cpu_model},
                      {"cpu_threads", h.cpu_threads}};
  if (!h.mpi_library.empty()) j["mpi_library"] = h.mpi_library;
  if (!h.devices.empty()) {
    j["devices"] = h.devices;
    j["cuda_driver"] = h.cuda_driver;
    j["cuda_runtime"] = h.cuda_runtime;
    j["nccl"] = h.nccl;
    j["cublas"] = h.cublas;
  }
  return j;
}

std::vector<std::string> header_lines(const Hardware& h) {
  std::vector<std::string> out;
  std::string hosts;
  for (std::size_t r = 0; r < h.hosts.size(); ++r) {
    if (r == 0 || h.hosts[r] != h.hosts[r - 1]) hosts += (hosts.empty() ? "" : ", ") + h.hosts[r];
  }
  out.push_back("backend " + h.backend + ", launcher " + h.launcher + ", " + std::to_string(h.hosts.size()) +
                " ranks on " + hosts);
  out.push_back("CPU: " + h.cpu_model + " (" + std::to_string(h.cpu_threads) + " threads)");
  if (!h.mpi_library.empty()) out.push_back("MPI: " + h.mpi_library);
  if (!h.devices.empty()) {
    out.push_back("CUDA driver " + h.cuda_driver + ", runtime " + h.cuda_runtime + ", NCCL " + h.nccl +
                  ", cuBLAS " + h.cublas);
    for (std::size_t r = 0; r < h.devices.size(); ++r)
      out.push_back("rank " + std::to_string(r) + ": " + h.devices[r]);
  }
  return out;
}

}  // namespace basp::validate
