// A fold's bookkeeping: where a generator moves a rank, hops moved to their link classes, and the
// quotient's capacities, bytes and counts carried back to the whole cluster (rank_fold.hpp).
#include "rank_fold.hpp"

#include "cell_fold.hpp"

namespace basp {

std::optional<EngineMode> parse_engine_mode(std::string_view name) {
  if (name == "auto") return EngineMode::automatic;
  if (name == "classes") return EngineMode::classes;
  if (name == "full") return EngineMode::full;
  return std::nullopt;
}

std::string_view to_string(EngineMode mode) {
  switch (mode) {
    case EngineMode::automatic: return "auto";
    case EngineMode::classes: return "classes";
    case EngineMode::full: return "full";
  }
  return "?";
}

namespace {
// The topology links an engine link of a fold of cells stands for: its cell's, or a relaxed link alone.
double engine_link_members(const CellFold& f, int engine_link) {
  return engine_link < f.cells.links.count() ? f.cells.links.members[engine_link] : 1.0;
}
}  // namespace

double RankFold::member_load_factor(int engine_link) const {
  if (cells) return 1.0 / engine_link_members(*cells, engine_link);
  return link_load.empty() ? 1.0 : link_load[topology_link(engine_link)];
}

int RankFold::moved(int rank, int generator) const {
  if (!folded() || cells) return rank;
  const int node = rank / gpus_per_node, nodes = ranks / gpus_per_node;
  int to;
  if (generator == 0) {
    to = (node + block_nodes) % nodes;
  } else {
    const int base = node - node % block_nodes;
    to = base + (node - base + step_nodes) % block_nodes;
  }
  return to * gpus_per_node + rank % gpus_per_node;
}

RankFold RankFold::identity(int ranks) {
  RankFold f;
  f.ranks = f.period = ranks;
  return f;
}

std::span<const Hop> RankFold::fold_hops(std::span<const Hop> hops, std::vector<Hop>& out) const {
  if (link_class.empty()) return hops;
  out.assign(hops.begin(), hops.end());
  for (Hop& h : out) h.link = link_class[h.link];
  return out;
}

std::vector<double> RankFold::expand_links(const std::vector<double>& per_class) const {
  if (link_class.empty()) return per_class;
  std::vector<double> out(link_class.size());
  if (cells) {
    for (std::size_t l = 0; l < out.size(); ++l) out[l] = per_class[link_class[l]] / engine_link_members(*cells, link_class[l]);
    return out;
  }
  for (std::size_t l = 0; l < out.size(); ++l) out[l] = per_class[link_class[l]] * link_load[l];
  return out;
}

std::vector<double> RankFold::quotient_capacities(const std::vector<double>& capacity_Bps) const {
  if (link_class.empty()) return capacity_Bps;
  std::vector<double> out(class_link.size());
  for (std::size_t c = 0; c < out.size(); ++c)
    out[c] = cells ? capacity_Bps[class_link[c]] * engine_link_members(*cells, static_cast<int>(c))
                   : capacity_Bps[class_link[c]] / link_load[class_link[c]];
  return out;
}

Engine RankFold::quotient_engine(const std::vector<double>& capacity_Bps) const {
  Engine engine(quotient_capacities(capacity_Bps));
  if (cells && !cells->links.never_binding.empty()) engine.never_binding(cells->links.never_binding);
  return engine;
}

PerLinkClass<double> RankFold::bytes_by_class(const Topology& topo, const std::vector<double>& per_class) const {
  PerLinkClass<double> out;
  for (std::size_t c = 0; c < per_class.size(); ++c)
    out[topo.link(topology_link(static_cast<int>(c))).cls] +=
        link_class.empty() || cells ? per_class[c] : per_class[c] * members();
  return out;
}

RunStats RankFold::expand_stats(RunStats s) const {
  if (cells) return s;  // the engine weighed each task as the tasks it stands for
  s.flows *= members();
  s.events *= members();
  s.refilled *= members();
  return s;
}

}  // namespace basp
