#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace fraud::cli {

// The name in `known` closest to `given` (edit distance with transpositions, at most 2 and less
// than the given name's length), or "" when none is that close.
[[nodiscard]] std::string closestName(std::string_view given,
                                      const std::vector<std::string>& known);

// After CLI11 refused `argv` for `app`: "did you mean ...?" for the first word that names no
// subcommand (`fraud-detector rnu`: "fraud-detector: unknown command 'rnu'; did you mean
// 'run'?") or no option of its command (`run --broker`: "fraud-detector run: unknown option
// --broker; did you mean --brokers?"), or "" when no known name is close. One line, without a
// newline.
[[nodiscard]] std::string suggestionFor(const CLI::App& app, int argc, const char* const* argv);

// --help and --version as CLI11 answers them (stdout, 0). Otherwise the suggestion alone when
// there is one (CLI11's message about the same word would only precede it), else CLI11's own
// message, on stderr; returns 2.
[[nodiscard]] int exitOnParseError(CLI::App& app, const CLI::ParseError& error, int argc,
                                   const char* const* argv);

}  // namespace fraud::cli
