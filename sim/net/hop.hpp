// A flow's path as the solver and the engine see it: links and the share of the flow's bytes each
// carries. Routing produces hops; the max-min solver and the engine consume them, knowing no routes.
#pragma once

namespace basp {

// A link on a flow's path and the fraction of the flow's bytes it carries (1 on a single path,
// 1/k on each of k equal-cost paths when ECMP splits evenly).
struct Hop {
  int link;
  float share;
};

}  // namespace basp
