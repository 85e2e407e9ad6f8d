// Entry points of the backends, one per (backend, launcher): each sets up its Ops and
// communicators and runs the command the options name. Returns the process exit code.
#pragma once

#include "control.hpp"
#include "options.hpp"

namespace basp::validate {

class MpiControl;
int run_cpu(const ValidateOptions& o, MpiControl& ctl);  // cpu backend under MPI
// cuda backend, one GPU per rank: GPU local_rank mod the GPUs visible (srun --gpus-per-task=1
// shows each rank one GPU; mpirun on a node shows them all).
int run_cuda(const ValidateOptions& o, Control& ctl, int local_rank);
// Single-process launcher: one thread and one GPU per rank, no MPI (o.gpus GPUs, 0: all).
int run_cuda_threads(const ValidateOptions& o);
// Whether this build has the CUDA backend; when not, why.
bool cuda_backend_built(std::string* why);

}  // namespace basp::validate
