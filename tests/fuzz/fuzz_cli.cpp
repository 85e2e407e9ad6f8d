// Fuzz target: `basp`'s command line, one word per input line, parsed by the same app as main()
// with every subcommand, then the chosen one's flags converted and checked (nothing built or run).
#include <CLI/CLI.hpp>
#include <vector>

#include "commands.hpp"
#include "fuzz_input.hpp"

using namespace basp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = fuzz::as_text(data, size);
  std::vector<std::string> words;
  // Words end at a newline or a NUL byte: a real argv word cannot hold a NUL.
  for (std::size_t start = 0; start <= text.size() && words.size() < 64;) {
    const std::size_t end = std::min(text.find_first_of(std::string("\n\0", 2), start), text.size());
    words.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  // Device and kernel files (/dev/stdin, a FIFO) block a reader as they would block `cat`: they name
  // no input a fuzzer can give, so they are left out rather than waited on.
  for (const std::string& w : words)
    for (const char* blocking : {"/dev", "/proc", "/sys"})
      if (w.find(blocking) != std::string::npos) return 0;
  std::vector<std::string> reversed(words.rbegin(), words.rend());  // CLI11 parses a reversed vector

  CLI::App app{"basp"};
  app.require_subcommand(1);
  cli::Chosen chosen;
  cli::add_commands(app, chosen);
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError&) {  // CLI11's own refusal (exit 2 in main), help included
    return 0;
  }
  fuzz::require(bool(chosen.check) && bool(chosen.run), "a subcommand parsed without check and run");
  try {
    chosen.check();
  } catch (const InputError& e) {
    fuzz::require(!std::string(e.what()).empty(), "an input error without a message");
    fuzz::require(!e.field.empty() || !e.file.empty(),
                  std::string("a flag's input error naming neither flag nor file: ") + e.what());
  }
  return 0;
}
