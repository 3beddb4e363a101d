// Subcommands of the qcoll program register themselves here; main() builds the app from them.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace qcoll::cli {

using CommandAdder = std::function<void(CLI::App&)>;
std::vector<CommandAdder>& command_adders();

// In a tools/*.cpp file: static const CommandRegistrar reg([](CLI::App& app) { ... });
struct CommandRegistrar {
  explicit CommandRegistrar(CommandAdder add) { command_adders().push_back(std::move(add)); }
};

}  // namespace qcoll::cli
