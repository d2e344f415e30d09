# Every third-party library pwab uses, found once here. All come from Debian packages that
# scripts/install-deps.sh installs; see docs/dependencies.md for why each one and the pitfalls.
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(simdjson REQUIRED)
find_package(fmt CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)

if(PWAB_FUZZ)
  return()   # the fuzz build only needs the light data stack
endif()

find_package(xapian REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(CURL REQUIRED)
pkg_check_modules(FASTTEXT REQUIRED IMPORTED_TARGET fasttext)
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)   # the split header needs its .so + cflags

add_library(pwab_xapian INTERFACE)
target_include_directories(pwab_xapian INTERFACE ${XAPIAN_INCLUDE_DIR})
target_link_libraries(pwab_xapian INTERFACE ${XAPIAN_LIBRARIES})

if(PWAB_WITH_TORCH)
  find_package(Torch REQUIRED)
  add_library(pwab_torch INTERFACE)
  target_include_directories(pwab_torch INTERFACE ${TORCH_INCLUDE_DIRS})
  target_link_libraries(pwab_torch INTERFACE ${TORCH_LIBRARIES})
endif()

if(PWAB_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
