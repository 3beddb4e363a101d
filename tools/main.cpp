// The qcoll command-line program. Each subcommand lives in its own file (see command.hpp).
#include <cstdio>

#include "command.hpp"

namespace qcoll::cli {
std::vector<CommandAdder>& command_adders() {
  static std::vector<CommandAdder> adders;
  return adders;
}
}  // namespace qcoll::cli

int main(int argc, char** argv) {
  CLI::App app{"qcoll: quantized reduce-scatter and all-reduce, exact to the bit"};
  app.require_subcommand(1);
  for (auto& add : qcoll::cli::command_adders()) add(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return 0;
}
