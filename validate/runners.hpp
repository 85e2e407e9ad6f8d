// Entry points of the backends, one per (backend, launcher): each sets up its Ops and
// communicators and runs the command the options name. Returns the process exit code.
#pragma once

#include "control.hpp"
#include "options.hpp"

namespace basp::validate {

class MpiControl;
int run_cpu(const ValidateOptions& o, MpiControl& ctl);          // cpu backend under MPI
int run_cuda(const ValidateOptions& o, Control& ctl, int device);  // cuda backend, one GPU per rank
// Single-process launcher: one thread and one GPU per rank, no MPI (o.gpus GPUs, 0: all).
int run_cuda_threads(const ValidateOptions& o);
// Whether this build has the CUDA backend; when not, why.
bool cuda_backend_built(std::string* why);

}  // namespace basp::validate
