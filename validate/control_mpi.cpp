// MPI-backed coordination. Messages above 2 GiB are refused with a clear error instead of
// overflowing MPI's int counts (the checked problems are far smaller).
#include "control_mpi.hpp"

#include <climits>
#include <stdexcept>

namespace basp::validate {

namespace {
int count_of(std::size_t bytes) {
  if (bytes > std::size_t(INT_MAX))
    throw std::runtime_error("message over 2 GiB: use a smaller --seq or --batch for checking");
  return int(bytes);
}
}  // namespace

MpiControl::MpiControl(int* argc, char*** argv) {
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiControl::~MpiControl() {
  MPI_Finalize();
}

void MpiControl::barrier() {
  MPI_Barrier(MPI_COMM_WORLD);
}

void MpiControl::gather(const void* mine, std::size_t bytes, void* all) {
  const int n = count_of(bytes);
  MPI_Gather(mine, n, MPI_BYTE, all, n, MPI_BYTE, 0, MPI_COMM_WORLD);
}

void MpiControl::broadcast(void* data, std::size_t bytes) {
  MPI_Bcast(data, count_of(bytes), MPI_BYTE, 0, MPI_COMM_WORLD);
}

MPI_Comm MpiControl::split(int color) {
  MPI_Comm c;
  MPI_Comm_split(MPI_COMM_WORLD, color, rank_, &c);
  return c;
}

int MpiControl::local_rank() const {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
  int r = 0;
  MPI_Comm_rank(node, &r);
  MPI_Comm_free(&node);
  return r;
}

}  // namespace basp::validate
