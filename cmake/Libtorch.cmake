# Which libtorch pwab builds on (docs/dependencies.md, "Another libtorch: PyTorch 2.x"):
#   PWAB_TORCH_DIR unset: Debian's libtorch 1.13 (libtorch-dev), found with its CMake package.
#   PWAB_TORCH_DIR=DIR:   a PyTorch 2.x libtorch: the `torch` folder of a pip-installed PyTorch, or an unpacked
#                         libtorch archive (both hold include/, lib/ and share/cmake/Torch/).
# For DIR, the libraries are named directly instead of through find_package(Torch): the CMake package of a CUDA
# PyTorch (PyPI's Linux wheel carries CUDA 13) insists on nvcc and a CUDA toolkit, although pwab compiles no CUDA
# code; the CUDA runtime libraries come with the wheel (nvidia-* packages), found at run time through libtorch's
# own RPATH. Defines the interface target pwab_torch, PWAB_TORCH_FLAVOUR ("debian" or "pytorch") and
# PWAB_TORCH_VERSION (as its CMake package gives it: 1.13.0, 2.15.0).
set(PWAB_TORCH_DIR "" CACHE PATH "A PyTorch 2.x libtorch to build on instead of Debian's (its torch/ folder)")

if(NOT PWAB_TORCH_DIR)
  find_package(Torch REQUIRED)
  add_library(pwab_torch INTERFACE)
  target_include_directories(pwab_torch INTERFACE ${TORCH_INCLUDE_DIRS})
  target_link_libraries(pwab_torch INTERFACE ${TORCH_LIBRARIES})
  set(PWAB_TORCH_FLAVOUR debian)
  set(PWAB_TORCH_VERSION "${Torch_VERSION}")
  # c10d's Gloo process group (data-parallel training, src/llama/distributed.cpp): its headers come from
  # libgloo-dev, and Debian's libtorch does not carry libgloo's symbols, so the runtime library is linked.
  find_path(PWAB_GLOO_INCLUDE_DIR gloo/allreduce.h)
  find_library(PWAB_GLOO_LIBRARY gloo PATHS /usr/lib /usr/lib/x86_64-linux-gnu)
  if(NOT PWAB_GLOO_INCLUDE_DIR OR NOT PWAB_GLOO_LIBRARY)
    message(FATAL_ERROR "Gloo not found (data-parallel training needs it): run scripts/install-deps.sh "
            "(apt packages libgloo-dev and libgloo0)")
  endif()
  return()
endif()

set(_dir "${PWAB_TORCH_DIR}")
foreach(_need share/cmake/Torch/TorchConfigVersion.cmake include/torch/csrc/api/include/torch/torch.h lib/libtorch_cpu.so lib/libc10.so)
  if(NOT EXISTS "${_dir}/${_need}")
    message(FATAL_ERROR "PWAB_TORCH_DIR='${_dir}' is not a libtorch: ${_need} is missing. Give the folder of a "
            "pip-installed PyTorch (python -c 'import torch, os; print(os.path.dirname(torch.__file__))') or of "
            "an unpacked libtorch archive.")
  endif()
endforeach()
file(STRINGS "${_dir}/share/cmake/Torch/TorchConfigVersion.cmake" _version REGEX "set\\(PACKAGE_VERSION ")
string(REGEX REPLACE ".*PACKAGE_VERSION \"([^\"]*)\".*" "\\1" PWAB_TORCH_VERSION "${_version}")
if(PWAB_TORCH_VERSION VERSION_LESS 2.0)
  message(FATAL_ERROR "PWAB_TORCH_DIR='${_dir}' holds libtorch ${PWAB_TORCH_VERSION}; this configuration is for "
          "2.x (Debian's 1.13 is the default, without PWAB_TORCH_DIR)")
endif()

# The ABI of std::string in libtorch's interface must match ours. PyPI's wheels since 2.7 use the C++11 ABI, as
# GCC 12 does by default; older wheels and the "pre-cxx11" archives do not, and linking them fails at run time.
set(_abi 1)
if(EXISTS "${_dir}/share/cmake/Caffe2/Caffe2Config.cmake")
  file(STRINGS "${_dir}/share/cmake/Caffe2/Caffe2Config.cmake" _abi_line REGEX "_GLIBCXX_USE_CXX11_ABI=[01]")
  if(_abi_line MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
    set(_abi 0)
  endif()
endif()
if(NOT _abi)
  message(FATAL_ERROR "PWAB_TORCH_DIR='${_dir}' was built with the pre-C++11 string ABI; use a cxx11-ABI libtorch")
endif()

# libtorch's include/ also holds the headers of what PyTorch bundles (fmt 12, pybind11, protobuf, oneDNN, ...).
# Searched before /usr/include, its fmt/ would replace Debian's fmt 9 in every file that includes libtorch, while
# pwab links Debian's libfmt: a mismatch of headers and library. So the compiler sees a folder of links to
# libtorch's own entries only (torch/, ATen/, c10/, caffe2/, ...), and <fmt/...> stays Debian's.
set(_include "${CMAKE_BINARY_DIR}/libtorch-include")
file(REMOVE_RECURSE "${_include}")
file(MAKE_DIRECTORY "${_include}")
file(GLOB _entries RELATIVE "${_dir}/include" "${_dir}/include/*")
foreach(_entry ${_entries})
  if(NOT _entry MATCHES "^(fmt|pybind11|google)$")
    file(CREATE_LINK "${_dir}/include/${_entry}" "${_include}/${_entry}" SYMBOLIC)
  endif()
endforeach()
add_library(pwab_torch INTERFACE)
# SYSTEM: libtorch's headers are third-party code, kept out of our warnings.
target_include_directories(pwab_torch SYSTEM INTERFACE "${_include}" "${_dir}/include/torch/csrc/api/include")
# libtorch.so is a stub that pulls libtorch_cpu (and libtorch_cuda); --no-as-needed keeps the CUDA libraries linked
# although no symbol of ours names them, because loading them is what registers the CUDA kernels and NCCL.
set(_libs "${_dir}/lib/libtorch.so" "${_dir}/lib/libtorch_cpu.so" "${_dir}/lib/libc10.so")
set(PWAB_TORCH_CUDA OFF)
if(EXISTS "${_dir}/lib/libtorch_cuda.so" AND EXISTS "${_dir}/lib/libc10_cuda.so")
  set(PWAB_TORCH_CUDA ON)
  list(APPEND _libs "${_dir}/lib/libtorch_cuda.so" "${_dir}/lib/libc10_cuda.so")
endif()
target_link_libraries(pwab_torch INTERFACE "-Wl,--no-as-needed" ${_libs} "-Wl,--as-needed")
target_link_options(pwab_torch INTERFACE "-Wl,-rpath,${_dir}/lib")
target_compile_definitions(pwab_torch INTERFACE _GLIBCXX_USE_CXX11_ABI=1)

# Gloo: libtorch_cpu.so of PyTorch 2.x carries Gloo itself (Debian's libgloo must not be linked beside it: the two
# would interpose each other's symbols), but the wheel ships no Gloo headers; c10d's ProcessGroupGloo.hpp needs
# only the declarations of gloo's context and device classes, which libgloo-dev's headers provide.
find_path(PWAB_GLOO_INCLUDE_DIR gloo/allreduce.h)
if(NOT PWAB_GLOO_INCLUDE_DIR)
  message(FATAL_ERROR "Gloo's headers not found (c10d's Gloo process group needs them): run scripts/install-deps.sh "
          "(apt package libgloo-dev)")
endif()
set(PWAB_GLOO_LIBRARY "")
# c10d's headers declare ProcessGroupGloo only when told that libtorch has it (every PyTorch 2.x on Linux does).
target_compile_definitions(pwab_torch INTERFACE USE_C10D_GLOO)

# NCCL: with a CUDA libtorch, ProcessGroupNCCL.hpp needs the CUDA runtime's and NCCL's headers, which the wheel's
# nvidia-* packages hold beside torch/ (site-packages/nvidia/...); a CUDA toolkit's work as well.
if(PWAB_TORCH_CUDA)
  get_filename_component(_site "${_dir}" DIRECTORY)
  file(GLOB _cuda_include_dirs LIST_DIRECTORIES true "${_site}/nvidia/cu*/include" "${_site}/nvidia/cuda_runtime/include")
  find_path(PWAB_CUDA_RUNTIME_INCLUDE_DIR cuda_runtime_api.h HINTS ${_cuda_include_dirs} /usr/local/cuda/include)
  find_path(PWAB_NCCL_INCLUDE_DIR nccl.h HINTS "${_site}/nvidia/nccl/include" /usr/local/cuda/include)
  # cuda_runtime.h includes crt/host_config.h, which the runtime's wheel leaves to nvcc's; Triton (a dependency of
  # the CUDA wheel) carries a copy of CUDA's crt/ headers.
  find_path(PWAB_CUDA_CRT_INCLUDE_DIR crt/host_config.h
    HINTS ${_cuda_include_dirs} "${_site}/triton/backends/nvidia/include" /usr/local/cuda/include)
  if(PWAB_CUDA_RUNTIME_INCLUDE_DIR AND PWAB_NCCL_INCLUDE_DIR AND PWAB_CUDA_CRT_INCLUDE_DIR)
    add_library(pwab_torch_nccl INTERFACE)
    target_include_directories(pwab_torch_nccl SYSTEM INTERFACE
      "${PWAB_CUDA_RUNTIME_INCLUDE_DIR}" "${PWAB_NCCL_INCLUDE_DIR}" "${PWAB_CUDA_CRT_INCLUDE_DIR}")
    target_compile_definitions(pwab_torch_nccl INTERFACE USE_C10D_NCCL USE_CUDA)
  else()
    message(WARNING "CUDA libtorch without the CUDA runtime's, its crt/ or NCCL's headers: multi-GPU training "
            "(NCCL) is off")
  endif()
endif()
set(PWAB_TORCH_FLAVOUR pytorch)
message(STATUS "libtorch: PyTorch ${PWAB_TORCH_VERSION} in ${_dir} (CUDA ${PWAB_TORCH_CUDA})")
