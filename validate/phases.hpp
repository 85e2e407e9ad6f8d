// The timed phases of one forward + backward pass of the measured layer, in execution order, and
// which of them are all-to-alls (whose bytes the report turns into bandwidths).
#pragma once

#include <array>
#include <string_view>

namespace basp::validate {

enum class Phase {
  qkv_proj,
  rotary,
  pack_qkv,
  a2a_q,
  a2a_k,
  a2a_v,
  unpack_qkv,
  attn_fwd,
  pack_o,
  a2a_o,
  unpack_o,
  out_proj,
  out_proj_bwd,
  pack_do,
  a2a_do,
  unpack_do,
  attn_bwd,
  pack_dqkv,
  a2a_dq,
  a2a_dk,
  a2a_dv,
  unpack_dqkv,
  rotary_bwd,
  qkv_proj_bwd,
  count
};
constexpr int kPhases = int(Phase::count);

constexpr std::array<std::string_view, kPhases> kPhaseNames = {
    "qkv_proj",     "rotary",   "pack_qkv", "a2a_q",       "a2a_k",      "a2a_v",
    "unpack_qkv",   "attn_fwd", "pack_o",   "a2a_o",       "unpack_o",   "out_proj",
    "out_proj_bwd", "pack_do",  "a2a_do",   "unpack_do",   "attn_bwd",   "pack_dqkv",
    "a2a_dq",       "a2a_dk",   "a2a_dv",   "unpack_dqkv", "rotary_bwd", "qkv_proj_bwd"};

constexpr bool is_all_to_all(Phase p) {
  switch (p) {
    case Phase::a2a_q:
    case Phase::a2a_k:
    case Phase::a2a_v:
    case Phase::a2a_o:
    case Phase::a2a_do:
    case Phase::a2a_dq:
    case Phase::a2a_dk:
    case Phase::a2a_dv:
      return true;
    default:
      return false;
  }
}
constexpr bool is_backward(Phase p) {
  return int(p) >= int(Phase::out_proj_bwd);
}

using PhaseTimes = std::array<double, kPhases>;  // seconds of one iteration

}  // namespace basp::validate
