// The CUDA backend: one GPU per rank, NCCL bootstrapped through the Control (MPI or threads),
// communicators split per all-to-all group with ncclCommSplit, and the single-process launcher.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <thread>

#include "comm_command.hpp"
#include "compute_command.hpp"
#include "control_threads.hpp"
#include "cuda_ops.hpp"
#include "hardware.hpp"
#include "input_error.hpp"
#include "json_output.hpp"
#include "layer_command.hpp"
#include "runners.hpp"

namespace basp::validate {

bool cuda_backend_built(std::string*) {
  return true;
}

namespace {
ncclComm_t init_world(Control& ctl, int device) {
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  ncclUniqueId id{};
  if (ctl.rank() == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  ctl.broadcast(&id, sizeof id);
  ncclComm_t world = nullptr;
  nccl_check(ncclCommInitRank(&world, ctl.size(), id, ctl.rank()), "ncclCommInitRank");
  return world;
}

ncclComm_t split(ncclComm_t world, int color, int key) {
  ncclComm_t c = nullptr;
  nccl_check(ncclCommSplit(world, color, key, &c, nullptr), "ncclCommSplit");
  return c;
}

std::string version_string(int v, int major_div, int minor_div) {
  return std::to_string(v / major_div) + "." + std::to_string((v % major_div) / minor_div);
}

Hardware cuda_hardware(Control& ctl, int device) {
  Hardware hw;
  hw.backend = "cuda";
  hw.launcher = ctl.launcher();
  hw.hosts = gather_strings(this_host(), ctl);
  fill_cpu(hw);
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  char bus[32] = {};
  cudaDeviceGetPCIBusId(bus, sizeof bus, device);
  char line[512];
  std::snprintf(line, sizeof line, "GPU %d: %s (sm_%d%d, %.0f GiB, %d SMs, PCI %s)", device, prop.name,
                prop.major, prop.minor, double(prop.totalGlobalMem) / 1073741824.0, prop.multiProcessorCount,
                bus);
  hw.devices = gather_strings(line, ctl);
  int driver = 0, runtime = 0, nccl = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  ncclGetVersion(&nccl);
  hw.cuda_driver = version_string(driver, 1000, 10);
  hw.cuda_runtime = version_string(runtime, 1000, 10);
  hw.nccl = std::to_string(nccl / 10000) + "." + std::to_string((nccl % 10000) / 100) + "." +
            std::to_string(nccl % 100);
  int blas = 0;
  cublasGetProperty(MAJOR_VERSION, &blas);
  int minor = 0;
  cublasGetProperty(MINOR_VERSION, &minor);
  hw.cublas = std::to_string(blas) + "." + std::to_string(minor);
  return hw;
}

// The communication benchmark's exchange over one NCCL communicator, in fp32 (exact check values).
struct NcclExchange final : Exchange {
  ncclComm_t comm;
  int rank = 0, size = 1, world_rank;
  double timeout_s;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  DeviceBuffer send, recv;
  NcclExchange(ncclComm_t c, int world_rank_, double timeout, long max_count)
      : comm(c), world_rank(world_rank_), timeout_s(timeout) {
    nccl_check(ncclCommUserRank(comm, &rank), "ncclCommUserRank");
    nccl_check(ncclCommCount(comm, &size), "ncclCommCount");
    // Blocking: the check's cudaMemcpy / cudaMemset on the default stream order before the exchange.
    cuda_check(cudaStreamCreate(&stream), "cudaStreamCreate");
    cuda_check(cudaEventCreate(&start), "cudaEventCreate");
    cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
    send = DeviceBuffer(std::size_t(max_count) * std::size_t(size) * 4);
    recv = DeviceBuffer(std::size_t(max_count) * std::size_t(size) * 4);
  }
  ~NcclExchange() override {
    cudaStreamSynchronize(stream);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaStreamDestroy(stream);
    ncclCommDestroy(comm);
  }
  int group_size() const override { return size; }
  int group_rank() const override { return rank; }
  void run(long count) {
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    for (int j = 0; j < size; ++j) {
      nccl_check(ncclSend(send.fp32() + long(j) * count, std::size_t(count), ncclFloat, j, comm, stream),
                 "ncclSend");
      nccl_check(ncclRecv(recv.fp32() + long(j) * count, std::size_t(count), ncclFloat, j, comm, stream),
                 "ncclRecv");
    }
    nccl_check(ncclGroupEnd(), "ncclGroupEnd");
  }
  double timed_exchange(long count) override {
    cuda_check(cudaEventRecord(start, stream), "cudaEventRecord");
    run(count);
    cuda_check(cudaEventRecord(stop, stream), "cudaEventRecord");
    wait_for_exchange(stream, comm, timeout_s, world_rank,
                      "NCCL all-to-all of " + std::to_string(count * 4) + " B per peer");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    return double(ms) * 1e-3;
  }
  long exchange_and_check(long count) override {
    std::vector<float> host(std::size_t(count) * std::size_t(size));
    for (int j = 0; j < size; ++j)
      for (long e = 0; e < count; ++e) host[std::size_t(j * count + e)] = check_value(rank, j, e);
    cuda_check(cudaMemcpy(send.ptr, host.data(), host.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    cuda_check(cudaMemset(recv.ptr, 0xff, host.size() * 4), "cudaMemset");
    run(count);
    wait_for_exchange(stream, comm, timeout_s, world_rank, "NCCL all-to-all check");
    cuda_check(cudaMemcpy(host.data(), recv.ptr, host.size() * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
    long wrong = 0;
    for (int p = 0; p < size; ++p)
      for (long e = 0; e < count; ++e) wrong += host[std::size_t(p * count + e)] != check_value(p, rank, e);
    return wrong;
  }
};
}  // namespace

int run_cuda(const ValidateOptions& o, Control& ctl, int local_rank) {
  const auto& tiles = kernels::cuda::kAttentionTiles;
  if (std::find(tiles.begin(), tiles.end(), o.attention_tile) == tiles.end())
    throw InputError("", 0, "--attention-tile",
                     "the CUDA kernels take 32, 64 or 128, got " + std::to_string(o.attention_tile));
  if (o.command != Command::comm && (o.shape.head_dim > kernels::cuda::kMaxHeadDim))
    throw InputError("", 0, "--head-dim",
                     "the CUDA kernels take head_dim up to " + std::to_string(kernels::cuda::kMaxHeadDim));
  if (o.command != Command::comm)  // refuse impossible splits before touching any GPU
    for (LayerStrategy s : o.strategies)
      check_layer_problem(
          s, o.shape, o.command == Command::compute && o.compute_ranks > 0 ? o.compute_ranks : ctl.size());
  int visible = 0;
  const cudaError_t e = cudaGetDeviceCount(&visible);
  if (e != cudaSuccess || visible == 0)
    throw std::runtime_error(
        "no CUDA device is usable on " + this_host() + " (" +
        (e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount found 0 devices") + ")");
  const int device = local_rank % visible;
  const Hardware hw = cuda_hardware(ctl, device);
  ncclComm_t world = init_world(ctl, device);
  struct WorldGuard {
    ncclComm_t c;
    ~WorldGuard() { ncclCommDestroy(c); }
  } guard{world};
  const int tile = int(o.attention_tile);
  switch (o.command) {
    case Command::layer:
      return layer_command(o, ctl, hw, "bf16", [&](LayerStrategy, int group) {
        return std::make_unique<CudaOps>(device, ctl.rank(), split(world, group, ctl.rank()), o.timeout_s,
                                         tile);
      });
    case Command::comm:
      return comm_command(o, ctl, hw, [&](int color, long max_count) -> std::unique_ptr<Exchange> {
        return std::make_unique<NcclExchange>(split(world, color, ctl.rank()), ctl.rank(), o.timeout_s,
                                              max_count);
      });
    case Command::compute: {
      CudaOps ops(device, ctl.rank(), nullptr, o.timeout_s, tile);
      return compute_command(o, ctl, hw, "bf16", ops);
    }
  }
  return 2;
}

int run_cuda_threads(const ValidateOptions& o) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::cerr << "basp-validate: no CUDA device is usable here ("
              << (e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount found 0 devices") << ")\n";
    return 1;
  }
  if (o.gpus > count)
    throw InputError("", 0, "--gpus",
                     std::to_string(o.gpus) + " GPUs asked, " + std::to_string(count) + " visible");
  const int n = o.gpus > 0 ? o.gpus : count;
  ThreadTeam team(n);
  std::vector<int> codes(std::size_t(n), 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      ThreadControl ctl(team, r);
      try {
        codes[std::size_t(r)] = run_cuda(o, ctl, r);
      } catch (const InputError& err) {  // every rank refuses the same input, before any collective
        if (r == 0) std::cerr << "basp-validate: error: " << err.what() << "\n";
        codes[std::size_t(r)] = 2;
      } catch (const std::exception& err) {  // the other ranks may be waiting on this one: stop all
        std::cerr << "basp-validate: rank " << r << ": " << err.what() << "\n";
        std::cerr.flush();
        std::_Exit(1);
      }
    });
  for (auto& t : threads) t.join();
  return codes[0];
}

}  // namespace basp::validate
