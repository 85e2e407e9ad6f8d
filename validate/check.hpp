// Compares a distributed run's gathered outputs and gradients with the reference, tensor by
// tensor, by relative L2 error against a stated tolerance per tensor and backend precision.
#pragma once

#include <string>
#include <vector>

#include "reference.hpp"

namespace basp::validate {

struct TensorCheck {
  std::string name;   // y, dx, dwq, dwk, dwv, dwo
  double rel_l2 = 0;  // ‖got − ref‖₂ / ‖ref‖₂
  double max_abs = 0;
  double tolerance = 0;
  // y and dx: the rank whose rows differ most from the reference (a failed check names it); -1 for
  // the weight gradients, which are sums over ranks, and when rows are not attributed.
  int worst_rank = -1;
  bool ok() const { return rel_l2 <= tolerance; }  // NaN fails
};

double relative_l2(const std::vector<double>& got, const std::vector<double>& ref);
// fp32 (CPU) or bf16 (CUDA) tolerances; gradients accumulate over more terms, so they get more.
std::vector<TensorCheck> check_against(const LayerResult& got, const LayerResult& ref, bool bf16);
double max_abs_difference(const LayerResult& a, const LayerResult& b);

}  // namespace basp::validate
