# pwab: a thin wrapper over CMake (DuckDB-style). Every target installs the Debian packages it needs first: the
# build's for every target, the tests' (Chromium, Slurm, Node.js, ...) only for `make test`, clang for `make fuzz`.
#   make            release build in build/release
#   make test       build + run every test (T=regex filters, e.g. make test T=data)
#   make demo       the main job on the embedded synthetic data
#   make bench      benchmarks (B=regex filters); results in build/bench/
#   make fuzz       libFuzzer on the parsers of outside input for FUZZ_SECONDS (default 60) with clang
#   make TORCH=DIR  (and make test TORCH=DIR, ...) on another libtorch, a PyTorch 2.x's torch/ folder, in
#                   build/pytorch (docs/dependencies.md); make test-pytorch: the torch tests on the pinned PyTorch
#   make debug | deps | clean
.PHONY: all release debug test test-pytorch demo bench fuzz deps clean

GENERATOR := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
JOBS ?= $(shell nproc)
# ccache, when installed, makes rebuilds in fresh build directories (clones, worktrees) cheap; optional.
LAUNCHER := $(shell command -v ccache >/dev/null 2>&1 && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
export CCACHE_BASEDIR ?= $(CURDIR)
FUZZ_SECONDS ?= 60
# TORCH=DIR: build on the libtorch of a PyTorch 2.x (its torch/ folder) instead of Debian's 1.13, in a folder of
# its own; a different DIR than the folder was configured with configures it again (cmake/Libtorch.cmake).
TORCH ?=
BUILD_RELEASE := $(if $(TORCH),build/pytorch,build/release)
# Environment for libtorch-heavy processes, read by libgomp and OpenBLAS when they load (before main, so pwab
# cannot set it itself): idle OpenMP threads sleep instead of spinning, and OpenBLAS uses the kernels of the
# CPU it runs on (on some VMs it misdetects the CPU and falls back to SSE3 kernels, 3-8x slower).
# docs/dependencies.md explains both; values already in the environment win.
BLAS_CORE := $(shell grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo SkylakeX || (grep -qw avx2 /proc/cpuinfo 2>/dev/null && echo Haswell))
BLAS_ENV := $(if $(BLAS_CORE),OPENBLAS_CORETYPE=$${OPENBLAS_CORETYPE:-$(BLAS_CORE)},)
RUN_ENV := OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-passive} $(BLAS_ENV)
# Benchmarks run one at a time on a quiet machine, where libgomp's default (spin a little, then sleep) is ~25%
# faster for small-model training than passive; a value already in the environment still wins.
BENCH_ENV := $(BLAS_ENV)

all: release

deps:
	@scripts/install-deps.sh

# Configure once per build directory; later runs only build.
define cmake_build
	@scripts/install-deps.sh
	@if [ ! -f $(1)/CMakeCache.txt ] || [ "$$(sed -n 's/^PWAB_TORCH_DIR:PATH=//p' $(1)/CMakeCache.txt)" != "$(if $(TORCH),$(abspath $(TORCH)),)" ]; then \
		cmake -S . -B $(1) $(GENERATOR) -DCMAKE_BUILD_TYPE=$(2) $(LAUNCHER) -DPWAB_TORCH_DIR=$(if $(TORCH),$(abspath $(TORCH)),) $(3); fi
	@cmake --build $(1) -j $(JOBS)
endef

release:
	$(call cmake_build,$(BUILD_RELEASE),Release,)

debug:
	$(call cmake_build,build/debug,Debug,)

test: release
	@scripts/install-deps.sh --with-test
	@cd $(BUILD_RELEASE) && $(RUN_ENV) ctest --output-on-failure -j $(JOBS) $(if $(T),-R '$(T)',) $(if $(L),-L '$(L)',)

# The tests that load libtorch (ctest label `torch`), built on the pinned PyTorch 2.x (scripts/ecosystem/torch.in)
# in build/pytorch; CI runs them beside the Debian build.
test-pytorch:
	@scripts/install-deps.sh --with-test --with-ecosystem
	@$(MAKE) --no-print-directory test TORCH=$$(scripts/ecosystem/install.sh --torch-dir) L=torch

demo: release
	@$(RUN_ENV) scripts/demo.sh $(BUILD_RELEASE)/pwab

bench: release
	@scripts/install-deps.sh --with-bench
	@mkdir -p build/bench
	@$(BENCH_ENV) $(BUILD_RELEASE)/bench/pwab-bench --out build/bench $(if $(B),--filter '$(B)',)

fuzz:
	@scripts/install-deps.sh --with-fuzz
	@if [ ! -f build/fuzz/CMakeCache.txt ]; then CC=clang CXX=clang++ cmake -S . -B build/fuzz $(GENERATOR) \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo -DPWAB_FUZZ=ON -DPWAB_WITH_TORCH=OFF $(LAUNCHER); fi
	@cmake --build build/fuzz -j $(JOBS) --target fuzz_all
	@scripts/fuzz.sh build/fuzz $(FUZZ_SECONDS)

clean:
	rm -rf build
