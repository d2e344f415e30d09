# check_layers.cmake: fails when an area of src/ includes a header of an area listed after it.
#   cmake -DSRC=<src dir> -DAREAS="core;data;...;cli" -P check_layers.cmake
# AREAS is the dependency order (the top-level CMakeLists.txt's PWAB_AREAS between data and cli): an area may
# include only itself and the areas before it, so the folder graph has no cycle and no arrow pointing up
# (docs/decisions.md, code practices §5). A folder of src/ missing from the list fails too, so a new area cannot
# slip past the check.
cmake_minimum_required(VERSION 3.20)
if(NOT SRC OR NOT AREAS)
  message(FATAL_ERROR "usage: cmake -DSRC=<src dir> -DAREAS=<areas in order> -P check_layers.cmake")
endif()
get_filename_component(SRC "${SRC}" ABSOLUTE)

set(position 0)
foreach(area IN LISTS AREAS)
  set(position_of_${area} ${position})
  math(EXPR position "${position} + 1")
endforeach()

set(problems "")
file(GLOB folders LIST_DIRECTORIES true RELATIVE "${SRC}" "${SRC}/*")
foreach(folder IN LISTS folders)
  if(IS_DIRECTORY "${SRC}/${folder}" AND NOT DEFINED position_of_${folder})
    list(APPEND problems "src/${folder} is not in the list of areas")
  endif()
endforeach()

set(checked 0)
foreach(area IN LISTS AREAS)
  file(GLOB_RECURSE files "${SRC}/${area}/*.h" "${SRC}/${area}/*.cpp" "${SRC}/${area}/*.in")
  foreach(file IN LISTS files)
    file(STRINGS "${file}" includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"[a-z_0-9]+/")
    file(RELATIVE_PATH name "${SRC}" "${file}")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([a-z_0-9]+)/.*" "\\1" target "${line}")
      if(target STREQUAL area OR NOT IS_DIRECTORY "${SRC}/${target}")
        continue()  # the area's own headers, or a library's ("CLI/CLI.hpp")
      endif()
      math(EXPR checked "${checked} + 1")
      if(NOT DEFINED position_of_${target})
        list(APPEND problems "src/${name} includes ${target}/, which is not in the list of areas")
      elseif(position_of_${target} GREATER position_of_${area})
        string(STRIP "${line}" line)
        list(APPEND problems "up: src/${name} (area ${area}) includes a higher area: ${line}")
      endif()
    endforeach()
  endforeach()
endforeach()

if(problems)
  list(JOIN problems "\n  " text)
  message(FATAL_ERROR "the areas' includes break their order (${AREAS}):\n  ${text}")
endif()
message(STATUS "layering: ${checked} includes across areas, every one pointing down")
