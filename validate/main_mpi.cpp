// basp-validate: the measurement runner, launched by mpirun / srun (or run alone as one rank).
// Every rank parses the same options; rank 0 speaks; bad input exits 2 on every rank together.
#include <cstdio>
#include <exception>
#include <iostream>

#include "control_mpi.hpp"
#include "input_error.hpp"
#include "options.hpp"
#include "runners.hpp"

int main(int argc, char** argv) {
  using namespace basp::validate;
  MpiControl ctl(&argc, &argv);
  ValidateOptions o;
  if (int code = parse_options(argc, argv, o, ctl.rank() == 0, true); code >= 0) return code;
  try {
    if (o.backend == Backend::cpu) return run_cpu(o, ctl);
    std::string why;
    if (!cuda_backend_built(&why))
      throw basp::InputError("", 0, "--backend", "cuda is not available: " + why);
    return run_cuda(o, ctl, ctl.local_rank());
  } catch (const basp::InputError& e) {
    if (ctl.rank() == 0) std::cerr << "basp-validate: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "basp-validate: rank " << ctl.rank() << ": " << e.what() << "\n";
    std::cerr.flush();
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
}
