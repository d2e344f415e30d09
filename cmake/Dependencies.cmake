# Every third-party library pwab uses, found once here. All come from Debian packages that
# scripts/install-deps.sh installs; see docs/dependencies.md for why each one and the pitfalls.
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(simdjson REQUIRED)
find_package(fmt CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)

find_package(xapian REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(CURL REQUIRED)
pkg_check_modules(FASTTEXT REQUIRED IMPORTED_TARGET fasttext)
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)   # the split header needs its .so + cflags
# Boost.Beast and Asio (header-only): `pwab serve`'s HTTP and WebSocket layer (src/serve/net_server.cpp only).
find_package(Boost 1.74 REQUIRED)

add_library(pwab_xapian INTERFACE)
target_include_directories(pwab_xapian INTERFACE ${XAPIAN_INCLUDE_DIR})
target_link_libraries(pwab_xapian INTERFACE ${XAPIAN_LIBRARIES})

if(PWAB_WITH_TORCH)
  include(cmake/Libtorch.cmake)   # Debian's 1.13, or a PyTorch 2.x one (PWAB_TORCH_DIR)
endif()

if(PWAB_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()

# sentencepiece, built here from Debian's source (scripts/install-deps.sh unpacks it with `apt-get source`).
# Debian's libsentencepiece.so bundles protobuf-lite 3.14 and exports its symbols, which crash any process that
# also loads libtorch (system protobuf 3.21) during static initialisation; built from source against the system
# protobuf, static, the two coexist (docs/dependencies.md, docs/tokenizer.md). Third-party code: built without our
# warnings, its headers included as SYSTEM, only the two static libraries built (EXCLUDE_FROM_ALL).
set(PWAB_SENTENCEPIECE_SOURCE_DIR "/usr/local/src/pwab/sentencepiece-0.1.97" CACHE PATH
    "Debian's sentencepiece 0.1.97 source tree (unpacked by scripts/install-deps.sh)")
if(NOT EXISTS "${PWAB_SENTENCEPIECE_SOURCE_DIR}/src/sentencepiece_processor.h")
  message(FATAL_ERROR "sentencepiece source not found in PWAB_SENTENCEPIECE_SOURCE_DIR="
          "'${PWAB_SENTENCEPIECE_SOURCE_DIR}'. Run scripts/install-deps.sh (as root, or with sudo) to fetch Debian's "
          "sentencepiece source, or point -DPWAB_SENTENCEPIECE_SOURCE_DIR=... at an unpacked copy.")
endif()
find_package(Protobuf REQUIRED)
if(NOT Protobuf_PROTOC_EXECUTABLE)
  message(FATAL_ERROR "protoc not found (needed to build sentencepiece). Run scripts/install-deps.sh "
          "(apt package protobuf-compiler).")
endif()
set(SPM_USE_BUILTIN_PROTOBUF OFF CACHE BOOL "" FORCE)
set(SPM_ENABLE_SHARED OFF CACHE BOOL "" FORCE)
set(SPM_ENABLE_TCMALLOC OFF CACHE BOOL "" FORCE)
set(SPM_BUILD_TEST OFF CACHE BOOL "" FORCE)
add_subdirectory(${PWAB_SENTENCEPIECE_SOURCE_DIR} ${CMAKE_BINARY_DIR}/_deps/sentencepiece EXCLUDE_FROM_ALL)
foreach(t sentencepiece-static sentencepiece_train-static)
  set_target_properties(${t} PROPERTIES COMPILE_OPTIONS "-w")
endforeach()
add_library(pwab_sentencepiece INTERFACE)
target_include_directories(pwab_sentencepiece SYSTEM INTERFACE
  ${PWAB_SENTENCEPIECE_SOURCE_DIR}/src                        # sentencepiece_processor.h, sentencepiece_trainer.h
  ${CMAKE_BINARY_DIR}/_deps/sentencepiece/src                 # sentencepiece_model.pb.h (generated)
  ${PWAB_SENTENCEPIECE_SOURCE_DIR}/third_party                # absl/strings/string_view.h, used by those headers
  ${Protobuf_INCLUDE_DIRS})
target_link_libraries(pwab_sentencepiece INTERFACE sentencepiece_train-static sentencepiece-static
  ${Protobuf_LITE_LIBRARIES} Threads::Threads)

if(PWAB_FUZZ)
  return()   # the fuzz targets need no libtorch or tests (sentencepiece, above, is fuzzed through pwab's loader)
endif()
