// Colour refinement over ranks, flows and links: each round gives every element the colour of its
// signature (its colour and the sorted colours it touches), compared exactly, until no cell splits;
// after the first round only elements touching one that changed colour are looked at again.
#include "flow_cells.hpp"

#include <algorithm>
#include <bit>
#include <numeric>
#include <ranges>
#include <utility>

namespace basp {
namespace {

std::uint64_t bits(double v) { return std::bit_cast<std::uint64_t>(v); }
std::uint64_t bits(float v) { return std::bit_cast<std::uint32_t>(v); }

// Signatures of n elements, one after the other: element i's is words[begin[i] .. begin[i+1]).
struct Signatures {
  std::vector<std::uint64_t> words;
  std::vector<std::size_t> begin{0};
  void clear() {
    words.clear();
    begin.assign(1, 0);
  }
  void close() { begin.push_back(words.size()); }
  std::span<const std::uint64_t> of(std::size_t i) const { return {words.data() + begin[i], begin[i + 1] - begin[i]}; }
};

std::uint64_t mix(std::uint64_t h, std::uint64_t w) {
  h ^= w + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 31;
  return h * 0xbf58476d1ce4e5b9ULL;
}

// Cells of equal signatures, numbered by their first element (so the numbering, and everything
// built from it, depends on nothing but the elements' order). A hash table finds equal signatures;
// signatures are compared word for word, so a hash collision cannot merge two cells.
Cells cells_of(const Signatures& sig, std::size_t n) {
  std::size_t size = 16;
  while (size < 2 * n) size *= 2;
  std::vector<int> slot(size, -1);  // a cell, by its representative's signature
  Cells c;
  c.of.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto words = sig.of(i);
    std::uint64_t h = words.size();
    for (std::uint64_t w : words) h = mix(h, w);
    for (std::size_t k = h & (size - 1);; k = (k + 1) & (size - 1)) {
      if (slot[k] < 0) {
        slot[k] = c.count();
        c.representative.push_back(static_cast<int>(i));
        c.members.push_back(0);
      } else if (!std::ranges::equal(sig.of(c.representative[slot[k]]), words)) {
        continue;
      }
      c.of[i] = slot[k];
      ++c.members[slot[k]];
      break;
    }
  }
  return c;
}

// Incidence lists: for each element of one kind, the (index, share) it touches of another.
struct Incidence {
  std::vector<std::size_t> begin;
  std::vector<std::uint32_t> other;
  std::vector<float> share;
};

Incidence links_to_flows(const CallTraffic& t, std::size_t links) {
  Incidence in;
  in.begin.assign(links + 1, 0);
  for (const Hop& h : t.hops) ++in.begin[h.link + 1];
  std::partial_sum(in.begin.begin(), in.begin.end(), in.begin.begin());
  in.other.resize(t.hops.size());
  in.share.resize(t.hops.size());
  std::vector<std::size_t> next(in.begin.begin(), in.begin.end() - 1);
  for (std::uint32_t f = 0; f < t.flows.size(); ++f)
    for (std::uint32_t h = t.flows[f].hop_begin; h < t.flows[f].hop_begin + t.flows[f].hop_count; ++h) {
      const std::size_t k = next[t.hops[h].link]++;
      in.other[k] = f;
      in.share[k] = t.hops[h].share;
    }
  return in;
}

// Per rank, the flows it sends and then, after `sent[r]` of them, the flows it receives.
Incidence ranks_to_flows(const CallTraffic& t, int ranks, std::vector<std::size_t>& sent) {
  Incidence in;
  in.begin.assign(ranks + 1, 0);
  for (const CallFlow& f : t.flows) {
    ++in.begin[f.from + 1];
    ++in.begin[f.to + 1];
  }
  std::partial_sum(in.begin.begin(), in.begin.end(), in.begin.begin());
  in.other.resize(2 * t.flows.size());
  std::vector<std::size_t> next(in.begin.begin(), in.begin.end() - 1);
  for (std::uint32_t f = 0; f < t.flows.size(); ++f) in.other[next[t.flows[f].from]++] = f;
  sent.resize(ranks);
  for (int r = 0; r < ranks; ++r) sent[r] = next[r] - in.begin[r];
  for (std::uint32_t f = 0; f < t.flows.size(); ++f) in.other[next[t.flows[f].to]++] = f;
  return in;
}

// Cells under refinement, by id: an element's cell and each cell's size. A pass computes the
// signatures of the dirty elements only: an element none of whose touched elements moved to a new
// id has the signature of its cell's other such members (they were alike and what they touch kept
// its ids), while a dirty one touches a new id none of those touch. So a cell's clean members keep
// its id, each distinct dirty signature becomes a new cell, and where every member is dirty the
// largest part keeps the id: the partition is the one signatures of every element would give.
struct Refinement {
  std::vector<std::uint32_t> cell;  // by element
  std::vector<std::uint32_t> size;  // by cell id
  std::vector<char> listed;         // by element: already in the pass's dirty list

  // touches(e, add): add(element touched, label) for everything e's signature lists.
  template <class Touches>
  void split(std::span<const std::uint32_t> elements, Touches&& touches, Signatures& sig,
             std::vector<std::uint32_t>& moved) {
    moved.clear();
    sig.clear();
    std::vector<std::uint64_t>& pairs = pairs_;
    for (std::uint32_t e : elements) {
      listed[e] = 0;
      pairs.clear();
      touches(e, [&](std::size_t y, std::uint64_t label) { pairs.push_back(std::uint64_t(cell[y]) << 32 | label); });
      std::sort(pairs.begin(), pairs.end());
      sig.words.push_back(cell[e]);
      sig.words.insert(sig.words.end(), pairs.begin(), pairs.end());
      sig.close();
    }
    const Cells parts = cells_of(sig, elements.size());  // the dirty elements' parts, each in one cell
    // Parts by cell, then by first member: each cell's parts side by side.
    std::vector<std::uint32_t> order(parts.count());
    std::iota(order.begin(), order.end(), 0u);
    auto cell_of_part = [&](std::uint32_t p) { return cell[elements[parts.representative[p]]]; };
    std::ranges::sort(order, [&](std::uint32_t a, std::uint32_t b) {
      return std::pair{cell_of_part(a), a} < std::pair{cell_of_part(b), b};
    });
    std::vector<std::uint32_t> id(parts.count());
    for (std::size_t i = 0; i < order.size();) {
      const std::uint32_t home = cell_of_part(order[i]);
      std::size_t j = i, dirty_members = 0, largest = i;
      for (; j < order.size() && cell_of_part(order[j]) == home; ++j) {
        dirty_members += parts.members[order[j]];
        if (parts.members[order[j]] > parts.members[order[largest]]) largest = j;
      }
      const bool all_dirty = dirty_members == size[home];
      for (std::size_t k = i; k < j; ++k) {
        const std::uint32_t p = order[k];
        if (all_dirty && k == largest) {
          id[p] = home;
        } else {
          id[p] = static_cast<std::uint32_t>(size.size());
          size.push_back(parts.members[p]);
          size[home] -= parts.members[p];
        }
      }
      i = j;
    }
    for (std::size_t i = 0; i < elements.size(); ++i)
      if (const std::uint32_t to = id[parts.of[i]]; to != cell[elements[i]]) {
        cell[elements[i]] = to;
        moved.push_back(elements[i]);
      }
  }

  // The cells of elements first .. first+n-1, numbered by their first element.
  Cells numbered(std::size_t first, std::size_t n) const {
    Cells c;
    c.of.resize(n);
    std::vector<int> number(size.size(), -1);  // by cell id
    for (std::size_t i = 0; i < n; ++i) {
      int& k = number[cell[first + i]];
      if (k < 0) {
        k = c.count();
        c.representative.push_back(static_cast<int>(i));
        c.members.push_back(0);
      }
      c.of[i] = k;
      ++c.members[k];
    }
    return c;
  }

 private:
  std::vector<std::uint64_t> pairs_;
};

}  // namespace

QuotientLinks quotient_links(const Topology& topo, const FlowCells& cells, const CallTraffic& traffic) {
  QuotientLinks q;
  const int n = topo.link_count();
  q.engine_link.resize(n);
  for (int l = 0; l < n; ++l) q.engine_link[l] = cells.links.of[l];
  for (int c = 0; c < cells.links.count(); ++c)
    q.capacity_Bps.push_back(topo.link(cells.links.representative[c]).capacity_Bps * cells.links.members[c]);
  if (cells.relaxed.empty()) return q;
  q.never_binding.assign(q.capacity_Bps.size(), 0);
  std::vector<char> crossed(n, 0);
  for (const Hop& h : traffic.hops) crossed[h.link] = 1;
  for (int l = 0; l < n; ++l)
    if (cells.relaxed[l] && crossed[l]) {
      q.engine_link[l] = static_cast<int>(q.capacity_Bps.size());
      q.capacity_Bps.push_back(topo.link(l).capacity_Bps);
      q.never_binding.push_back(1);
      q.relaxed_link.push_back(l);
    }
  return q;
}

std::vector<char> fabric_trunks(const Topology& topo) {
  std::vector<char> trunk(topo.link_count(), 0);
  for (int l = 0; l < topo.link_count(); ++l)
    trunk[l] = topo.vertex(topo.link(l).from).kind == VertexKind::fabric_switch &&
               topo.vertex(topo.link(l).to).kind == VertexKind::fabric_switch;
  return trunk;
}

FlowCells equitable_cells(const Topology& topo, int ranks, const CallTraffic& t,
                          std::span<const std::uint64_t> rank_colour, std::vector<char> relaxed,
                          std::span<const std::uint64_t> flow_colour) {
  const std::size_t links = topo.link_count(), flows = t.flows.size();
  const Incidence on_link = links_to_flows(t, links);
  std::vector<std::size_t> sent;
  const Incidence of_rank = ranks_to_flows(t, ranks, sent);

  FlowCells c;
  c.relaxed = std::move(relaxed);
  auto kept = [&](std::size_t link) { return c.relaxed.empty() || !c.relaxed[link]; };
  Signatures sig;  // reused by every pass: room for the largest of the three kinds' signatures
  sig.words.reserve(std::max({3 * links + t.hops.size(), 5 * flows + t.hops.size(), std::size_t(3 * ranks) + 2 * flows}));
  sig.begin.reserve(std::max({links, flows, std::size_t(ranks)}) + 1);
  for (std::size_t l = 0; l < links; ++l) {
    const Link& link = topo.link(static_cast<int>(l));
    sig.words.insert(sig.words.end(), {bits(link.capacity_Bps), static_cast<std::uint64_t>(link.cls),
                                       std::uint64_t(!kept(l))});
    sig.close();
  }
  const Cells link_start = cells_of(sig, links);
  sig.clear();
  for (std::size_t i = 0; i < flows; ++i) {
    const CallFlow& f = t.flows[i];
    sig.words.insert(sig.words.end(), {bits(f.factor), bits(f.divisor), bits(f.wait_s), f.count,
                                       flow_colour.empty() ? 0 : flow_colour[i]});
    sig.close();
  }
  const Cells flow_start = cells_of(sig, flows);
  sig.clear();
  for (int r = 0; r < ranks; ++r) {
    sig.words.push_back(rank_colour.empty() ? 0 : rank_colour[r]);
    sig.close();
  }
  const Cells rank_start = cells_of(sig, ranks);

  // Every element in one numbering (links, then flows, then ranks), each kind's cells with ids of
  // their own; a split keeps its cell's id for one part and gives the others new ids, so that an
  // element's signature can change only where something it touches moved to a new id.
  const std::size_t flow0 = links, rank0 = links + flows, elements = rank0 + ranks;
  Refinement r;
  r.cell.resize(elements);
  for (auto [start, first] : {std::pair{&link_start, std::size_t(0)}, {&flow_start, flow0}, {&rank_start, rank0}}) {
    const auto base = static_cast<std::uint32_t>(r.size.size());
    for (std::size_t i = 0; i < start->of.size(); ++i) r.cell[first + i] = base + start->of[i];
    r.size.insert(r.size.end(), start->members.begin(), start->members.end());
  }
  r.listed.assign(elements, 0);

  // What an element's signature lists: (element touched, label). A flow sees its kept links with
  // its share on them and its source and destination ranks (labels 0, 1); a link its flows with
  // their shares; a rank the flows it sends (0) and receives (1).
  auto link_touches = [&](std::size_t l, auto&& add) {
    if (!kept(l)) return;
    for (std::size_t k = on_link.begin[l]; k < on_link.begin[l + 1]; ++k)
      add(flow0 + on_link.other[k], bits(on_link.share[k]));
  };
  auto flow_touches = [&](std::size_t i, auto&& add) {
    const CallFlow& f = t.flows[i];
    for (std::uint32_t h = f.hop_begin; h < f.hop_begin + f.hop_count; ++h)
      if (kept(t.hops[h].link)) add(std::size_t(t.hops[h].link), bits(t.hops[h].share));
    add(rank0 + f.from, 0);
    add(rank0 + f.to, 1);
  };
  auto rank_touches = [&](std::size_t k, auto&& add) {
    const std::size_t b = of_rank.begin[k], m = b + sent[k], e = of_rank.begin[k + 1];
    for (std::size_t j = b; j < e; ++j) add(flow0 + of_rank.other[j], j < m ? 0 : 1);
  };

  // The first round gives every element its signature; later ones only those touching an element
  // that moved since their kind's last pass (moved_*: as element numbers).
  std::vector<std::uint32_t> dirty, moved_links, moved_flows, moved_ranks;
  auto every = [&](std::size_t first, std::size_t n) {
    dirty.resize(n);
    std::iota(dirty.begin(), dirty.end(), static_cast<std::uint32_t>(first));
  };
  // Marks the elements from `lo` to `hi` (one kind) that the moved elements (numbered from `first`) touch.
  auto mark_touched = [&](std::span<const std::uint32_t> moved, auto&& touches, std::size_t first, std::size_t lo,
                          std::size_t hi) {
    for (std::uint32_t x : moved)
      touches(x - first, [&](std::size_t y, std::uint64_t) {
        if (y >= lo && y < hi && !r.listed[y]) {
          r.listed[y] = 1;
          dirty.push_back(static_cast<std::uint32_t>(y));
        }
      });
  };
  for (bool first_round = true;; first_round = false) {
    ++c.rounds;
    const std::size_t before = r.size.size();
    // Links, by the flows that moved in the last round.
    dirty.clear();
    if (first_round) every(0, links);
    else mark_touched(moved_flows, flow_touches, flow0, 0, links);
    r.split(dirty, [&](std::size_t l, auto&& add) { link_touches(l, add); }, sig, moved_links);
    // Flows, by the links that moved just now and the ranks that moved in the last round.
    dirty.clear();
    if (first_round) {
      every(flow0, flows);
    } else {
      mark_touched(moved_links, link_touches, 0, flow0, rank0);
      mark_touched(moved_ranks, rank_touches, rank0, flow0, rank0);
    }
    r.split(dirty, [&](std::size_t e, auto&& add) { flow_touches(e - flow0, add); }, sig, moved_flows);
    // Ranks, by the flows that moved just now.
    dirty.clear();
    if (first_round) every(rank0, ranks);
    else mark_touched(moved_flows, flow_touches, flow0, rank0, elements);
    r.split(dirty, [&](std::size_t e, auto&& add) { rank_touches(e - rank0, add); }, sig, moved_ranks);
    if (r.size.size() == before) break;
  }
  c.links = r.numbered(0, links);
  c.flows = r.numbered(flow0, flows);
  c.ranks = r.numbered(rank0, ranks);
  return c;
}

}  // namespace basp
