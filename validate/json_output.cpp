// Rank 0 decides and broadcasts, so that every rank throws the same InputError and exits 2
// together instead of leaving the others waiting in a collective.
#include "json_output.hpp"

#include <cstring>

#include "input_error.hpp"

namespace basp::validate {

std::unique_ptr<std::ofstream> open_json_output(const std::string& path, Control& ctl) {
  if (path.empty()) return nullptr;
  std::unique_ptr<std::ofstream> f;
  int ok = 1;
  if (ctl.rank() == 0) {
    f = std::make_unique<std::ofstream>(path);
    ok = f->good() ? 1 : 0;
  }
  ctl.broadcast(&ok, sizeof ok);
  if (!ok) throw InputError(path, 0, "--json", std::string("cannot open this file for writing"));
  return f;
}

void write_json_output(std::ofstream* file, const nlohmann::json& j) {
  if (file) *file << j.dump(1) << "\n";
}

nlohmann::json measurements_document(const std::string& command, nlohmann::json config,
                                     nlohmann::json hardware, nlohmann::json results, bool ok) {
  return {{"schema", "basp-measurements"},
          {"schema_version", 1},
          {"command", command},
          {"config", std::move(config)},
          {"hardware", std::move(hardware)},
          {"results", std::move(results)},
          {"ok", ok}};
}

std::vector<std::string> gather_strings(const std::string& mine, Control& ctl) {
  constexpr std::size_t width = 256;
  std::vector<char> buf(width, '\0');
  std::memcpy(buf.data(), mine.data(), std::min(mine.size(), width - 1));
  const std::vector<char> all = ctl.gather_vector(buf);
  std::vector<std::string> out;
  for (std::size_t i = 0; i + width <= all.size(); i += width) out.emplace_back(all.data() + i);
  return out;
}

}  // namespace basp::validate
