// basp-validate-local: the runner without MPI. One process drives every local GPU, one thread and
// one rank per GPU (like nccl-tests -g), so it starts on GPU nodes where no MPI is installed.
#include <iostream>

#include "input_error.hpp"
#include "options.hpp"
#include "runners.hpp"

int main(int argc, char** argv) {
  using namespace basp::validate;
  ValidateOptions o;
  if (int code = parse_options(argc, argv, o, true, false); code >= 0) return code;
  try {
    return run_cuda_threads(o);
  } catch (const basp::InputError& e) {
    std::cerr << "basp-validate: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "basp-validate: " << e.what() << "\n";
    return 1;
  }
}
