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

# pwab's executables (the `pwab` binary, the benchmark runner and the test binaries) allocate through gperftools'
# tcmalloc (Debian's libtcmalloc-minimal4; the runtime library alone, found by its file name, so no -dev package with
# its libunwind is needed). libtorch's CPU tensors are plain malloc/free, and glibc serves blocks of over 32 MB with a
# fresh mmap each time: a 100 M model's SFT step page-faulted and zeroed ~1 GB of its own activations again every
# step, a sixth of its time in the kernel. tcmalloc keeps freed blocks for reuse (docs/dependencies.md). Linked
# into executables only: a library loaded later into a process whose memory glibc already handed out must not
# replace malloc. -DPWAB_TCMALLOC=OFF (sanitizer builds, other allocators) keeps glibc.
option(PWAB_TCMALLOC "Link pwab's executables against tcmalloc (libtcmalloc-minimal4)" ON)
if(PWAB_TCMALLOC)
  find_library(PWAB_TCMALLOC_LIBRARY NAMES tcmalloc_minimal libtcmalloc_minimal.so.4)
  if(NOT PWAB_TCMALLOC_LIBRARY)
    message(FATAL_ERROR "tcmalloc not found: run scripts/install-deps.sh (Debian package libtcmalloc-minimal4), "
            "or configure with -DPWAB_TCMALLOC=OFF to keep glibc's malloc")
  endif()
endif()
# pwab_use_tcmalloc(target): the executable allocates through tcmalloc (when PWAB_TCMALLOC is on). --no-as-needed:
# nothing in pwab calls tcmalloc by name, and the library must still be loaded to replace malloc.
function(pwab_use_tcmalloc target)
  if(PWAB_TCMALLOC)
    target_link_libraries(${target} PRIVATE
                          "-Wl,--push-state,--no-as-needed" ${PWAB_TCMALLOC_LIBRARY} "-Wl,--pop-state")
  endif()
endfunction()
