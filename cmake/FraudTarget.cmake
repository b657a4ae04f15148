# Compile settings shared by every target of ours (not by third-party code).
add_library(fraud_compile_options INTERFACE)
target_compile_options(fraud_compile_options INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                       -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Wunused
                       -Woverloaded-virtual -Wimplicit-fallthrough)
if(FRAUD_WERROR)
  target_compile_options(fraud_compile_options INTERFACE -Werror)
endif()

if(FRAUD_SANITIZE STREQUAL "asan-ubsan")
  set(_fraud_san -fsanitize=address,undefined -fno-sanitize-recover=undefined
                 -fno-omit-frame-pointer)
elseif(FRAUD_SANITIZE STREQUAL "tsan")
  set(_fraud_san -fsanitize=thread -fno-omit-frame-pointer)
elseif(NOT FRAUD_SANITIZE STREQUAL "")
  message(FATAL_ERROR "FRAUD_SANITIZE must be '', 'asan-ubsan' or 'tsan', not '${FRAUD_SANITIZE}'")
endif()
if(_fraud_san)
  add_compile_options(${_fraud_san})
  add_link_options(${_fraud_san})
endif()

# fraud_library(NAME fraud_x ALIAS fraud::x SRCS a.cc b.cc PUBLIC_DEPS ... PRIVATE_DEPS ...)
# One library per folder; sources listed explicitly; includes rooted at the repository.
function(fraud_library)
  cmake_parse_arguments(ARG "" "NAME;ALIAS" "SRCS;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${ARG_NAME} STATIC ${ARG_SRCS})
  add_library(${ARG_ALIAS} ALIAS ${ARG_NAME})
  target_include_directories(${ARG_NAME} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${ARG_NAME} PUBLIC ${ARG_PUBLIC_DEPS}
                        PRIVATE fraud_compile_options ${ARG_PRIVATE_DEPS})
endfunction()
