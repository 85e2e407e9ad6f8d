// Runs the CUDA kernel tests when a GPU is usable; otherwise says why and exits 77, which CTest
// reports as skipped (SKIP_RETURN_CODE), so a machine without a GPU never shows them as passed.
#define CATCH_CONFIG_RUNNER
#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>
#include <iostream>

int main(int argc, char** argv) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::cout << "SKIPPED: no CUDA device is usable here ("
              << (e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount found 0 devices")
              << "): the CUDA kernels are compiled but not run\n";
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
