// What the validator ran on, as it saw it: hosts per rank, CPU model, MPI library, GPUs, CUDA and
// NCCL versions. Written into every measurements file and printed in the table header.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace basp::validate {

struct Hardware {
  std::string backend;             // cpu | cuda
  std::string launcher;            // mpi | threads
  std::vector<std::string> hosts;  // per rank
  std::string cpu_model;
  int cpu_threads = 0;
  std::string mpi_library;           // empty without MPI
  std::vector<std::string> devices;  // per rank: "GPU 0: NVIDIA H200 (sm_90, 139 GiB)"
  std::string cuda_driver, cuda_runtime, nccl, cublas;
};

std::string this_host();
void fill_cpu(Hardware& h);  // cpu_model and cpu_threads of this machine
nlohmann::json to_json(const Hardware& h);
std::vector<std::string> header_lines(const Hardware& h);

}  // namespace basp::validate
