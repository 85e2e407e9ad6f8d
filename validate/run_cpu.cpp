// The CPU backend under MPI: CpuOps over communicators from MPI_Comm_split, MPI_Alltoall for the
// communication benchmark, steady-clock timing.
#include <chrono>
#include <climits>
#include <memory>
#include <stdexcept>

#include "comm_command.hpp"
#include "compute_command.hpp"
#include "control_mpi.hpp"
#include "cpu_ops.hpp"
#include "hardware.hpp"
#include "json_output.hpp"
#include "layer_command.hpp"
#include "runners.hpp"

namespace basp::validate {

namespace {
struct MpiExchange final : Exchange {
  MPI_Comm comm;
  Watchdog* watchdog;
  int size = 1, rank = 0;
  std::vector<float> send, recv;
  MpiExchange(MPI_Comm c, Watchdog* w, long max_count) : comm(c), watchdog(w) {
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    send.resize(std::size_t(max_count) * size);
    recv.resize(std::size_t(max_count) * size);
  }
  ~MpiExchange() override { MPI_Comm_free(&comm); }
  int group_size() const override { return size; }
  int group_rank() const override { return rank; }
  void run(long count) {
    if (count > INT_MAX) throw std::runtime_error("all-to-all count exceeds MPI's int");
    if (watchdog) watchdog->arm("MPI_Alltoall of " + std::to_string(count * 4) + " B per peer");
    MPI_Alltoall(send.data(), int(count), MPI_FLOAT, recv.data(), int(count), MPI_FLOAT, comm);
    if (watchdog) watchdog->disarm();
  }
  double timed_exchange(long count) override {
    const auto t0 = std::chrono::steady_clock::now();
    run(count);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  long exchange_and_check(long count) override {
    for (int j = 0; j < size; ++j)
      for (long e = 0; e < count; ++e) send[std::size_t(j * count + e)] = check_value(rank, j, e);
    std::fill(recv.begin(), recv.end(), -1.0f);
    run(count);
    long wrong = 0;
    for (int p = 0; p < size; ++p)
      for (long e = 0; e < count; ++e) wrong += recv[std::size_t(p * count + e)] != check_value(p, rank, e);
    return wrong;
  }
};

Hardware cpu_hardware(MpiControl& ctl) {
  Hardware hw;
  hw.backend = "cpu";
  hw.launcher = "mpi";
  hw.hosts = gather_strings(this_host(), ctl);
  fill_cpu(hw);
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string v(version, std::size_t(len));
  if (auto nl = v.find_first_of("\n,"); nl != std::string::npos) v.resize(nl);
  hw.mpi_library = v;
  return hw;
}
}  // namespace

int run_cpu(const ValidateOptions& o, MpiControl& ctl) {
  Watchdog watchdog(o.timeout_s, ctl.rank());
  const Hardware hw = cpu_hardware(ctl);
  switch (o.command) {
    case Command::layer:
      return layer_command(o, ctl, hw, "fp32", [&](LayerStrategy, int group) {
        auto ops = std::make_unique<CpuOps>();
        ops->group = ctl.split(group);
        ops->watchdog = &watchdog;
        ops->world_rank = ctl.rank();
        ops->attention_tile = o.attention_tile;
        return ops;
      });
    case Command::comm:
      return comm_command(o, ctl, hw, [&](int color, long max_count) -> std::unique_ptr<Exchange> {
        return std::make_unique<MpiExchange>(ctl.split(color), &watchdog, max_count);
      });
    case Command::compute: {
      CpuOps ops;
      ops.attention_tile = o.attention_tile;
      return compute_command(o, ctl, hw, "fp32", ops);
    }
  }
  return 2;
}

}  // namespace basp::validate
