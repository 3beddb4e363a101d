// The qcoll program: the subcommand runner (command.hpp) and main().
#include "cli_error.hpp"
#include "command.hpp"
#include "qcoll/qcoll.h"

namespace qcoll::cli {

std::vector<CommandAdder>& command_adders() {
  static std::vector<CommandAdder> adders;
  return adders;
}

void set_action(CLI::App* sub, std::function<int()> action) {
  sub->callback([action = std::move(action)] {
    int rc = 0;
    try {
      rc = action();
    } catch (const CliError& e) {
      rc = report(e);
    }
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace qcoll::cli

int main(int argc, char** argv) {
  CLI::App app{"qcoll: quantized reduce-scatter and all-reduce, exact to the bit"};
  app.set_version_flag("--version", std::string("qcoll ") + qcollGetVersion());
  app.require_subcommand(1);
  for (auto& add : qcoll::cli::command_adders()) add(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return 0;
}
