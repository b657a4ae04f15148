#pragma once

#include <string_view>

namespace fraud::service {

// Set by CMake from project(VERSION).
inline constexpr std::string_view kVersion = FRAUD_VERSION;

}  // namespace fraud::service
