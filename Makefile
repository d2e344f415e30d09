# pwab: a thin wrapper over CMake (DuckDB-style). Every target installs missing Debian packages first.
#   make            release build in build/release
#   make test       build + run every test (T=regex filters, e.g. make test T=data)
#   make demo       the main job on the embedded synthetic data
#   make bench      benchmarks (B=regex filters); results in build/bench/
#   make fuzz       libFuzzer on the data loader for FUZZ_SECONDS (default 60) with clang
#   make debug | deps | format | clean
.PHONY: all release debug test demo bench fuzz deps format clean

GENERATOR := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 60
BUILD_RELEASE := build/release

all: release

deps:
	@scripts/install-deps.sh

# Configure once per build directory; later runs only build.
define cmake_build
	@scripts/install-deps.sh
	@if [ ! -f $(1)/CMakeCache.txt ]; then cmake -S . -B $(1) $(GENERATOR) -DCMAKE_BUILD_TYPE=$(2) $(3); fi
	@cmake --build $(1) -j $(JOBS)
endef

release:
	$(call cmake_build,$(BUILD_RELEASE),Release,)

debug:
	$(call cmake_build,build/debug,Debug,)

test: release
	@cd $(BUILD_RELEASE) && OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-passive} ctest --output-on-failure -j $(JOBS) $(if $(T),-R '$(T)',)

demo: release
	@scripts/demo.sh $(BUILD_RELEASE)/pwab

bench: release
	@mkdir -p build/bench
	@OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-passive} $(BUILD_RELEASE)/bench/pwab-bench --out build/bench $(if $(B),--filter '$(B)',)

fuzz:
	@scripts/install-deps.sh
	@if [ ! -f build/fuzz/CMakeCache.txt ]; then CC=clang CXX=clang++ cmake -S . -B build/fuzz $(GENERATOR) \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo -DPWAB_FUZZ=ON; fi
	@cmake --build build/fuzz -j $(JOBS)
	@scripts/fuzz.sh build/fuzz $(FUZZ_SECONDS)

format:
	@find src test bench fuzz -name '*.cpp' -o -name '*.h' | xargs clang-format -i

clean:
	rm -rf build
