// The subcommand runner of the qcoll program. Each subcommand lives in its own file and
// registers itself here; main() builds the app from them. A command's work is an action:
// it returns an exit status or throws CliError, which is reported once, in the format of
// cli_error.hpp, and becomes the exit status.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace qcoll::cli {

using CommandAdder = std::function<void(CLI::App&)>;
std::vector<CommandAdder>& command_adders();

// In a tools/*.cpp file: const CommandRegistrar reg([](CLI::App& app) { ... });
struct CommandRegistrar {
  explicit CommandRegistrar(CommandAdder add) { command_adders().push_back(std::move(add)); }
};

// Makes `action` the work of subcommand `sub`: its result, or the exit code of the CliError
// it throws (printed on stderr), is the program's exit status.
void set_action(CLI::App* sub, std::function<int()> action);

}  // namespace qcoll::cli
