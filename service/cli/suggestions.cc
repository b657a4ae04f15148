#include "service/cli/suggestions.h"

#include <algorithm>
#include <cstdio>

namespace fraud::cli {
namespace {

// Optimal string alignment distance: insertions, deletions, substitutions and transpositions of
// neighbours each cost 1.
size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::vector<std::string> subcommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

const CLI::App* subcommandNamed(const CLI::App& app, std::string_view name) {
  for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == name) return sub;
  }
  return nullptr;
}

// The long option names (without "--") of `app` and of the commands it belongs to.
std::vector<std::string> longOptionNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* at = &app; at != nullptr; at = at->get_parent()) {
    for (const auto* option : at->get_options()) {
      for (const auto& name : option->get_lnames()) names.push_back(name);
    }
  }
  return names;
}

// "fraud-detector run": the program's file name, then the subcommands.
std::string commandPath(const CLI::App& app, std::string_view program) {
  const CLI::App* parent = app.get_parent();
  if (parent == nullptr) return std::string(program.substr(program.rfind('/') + 1));
  return commandPath(*parent, program) + " " + app.get_name();
}

}  // namespace

std::string closestName(std::string_view given, const std::vector<std::string>& known) {
  std::string best;
  size_t best_distance = std::min<size_t>(3, given.size());
  for (const auto& name : known) {
    const size_t distance = editDistance(given, name);
    if (distance < best_distance) {
      best = name;
      best_distance = distance;
    }
  }
  return best;
}

std::string suggestionFor(const CLI::App& app, int argc, const char* const* argv) {
  if (argc < 1) return "";
  const CLI::App* command = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word == "--") break;
    if (word.size() > 2 && word.substr(0, 2) == "--") {
      const std::string_view name = word.substr(2, word.find('=') - 2);
      const auto known = longOptionNames(*command);
      if (std::find(known.begin(), known.end(), name) != known.end()) continue;
      const std::string closest = closestName(name, known);
      if (closest.empty()) return "";
      return commandPath(*command, argv[0]) + ": unknown option --" + std::string(name) +
             "; did you mean --" + closest + "?";
    }
    if (word.empty() || word[0] == '-') continue;
    if (const CLI::App* sub = subcommandNamed(*command, word)) {
      command = sub;
      continue;
    }
    // A word that is neither: a subcommand misspelt where one is expected, or an option's value.
    if (command->get_subcommands([](const CLI::App*) { return true; }).empty()) continue;
    const std::string closest = closestName(word, subcommandNames(*command));
    if (closest.empty()) continue;
    return commandPath(*command, argv[0]) + ": unknown command '" + std::string(word) +
           "'; did you mean '" + closest + "'?";
  }
  return "";
}

int exitOnParseError(CLI::App& app, const CLI::ParseError& error, int argc,
                     const char* const* argv) {
  if (error.get_exit_code() == 0) return app.exit(error);  // --help, --version
  // The suggestion alone: CLI11's complaint about the same word ("A subcommand is required",
  // "The following arguments were not expected") would only come before it.
  if (const std::string suggestion = suggestionFor(app, argc, argv); !suggestion.empty()) {
    std::fprintf(stderr, "%s\n", suggestion.c_str());
    return 2;
  }
  (void)app.exit(error);
  return 2;
}

}  // namespace fraud::cli
