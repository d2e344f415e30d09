// bench/bench.h: the benchmark registry. A benchmark names its setup, one timed run and a result check.
#pragma once
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace pwab::bench {

struct Context {
  std::filesystem::path out_dir;   //!< build/bench: results and cached inputs
  std::filesystem::path self;      //!< this executable, for measuring in a child process
};

//! One measured quantity of a run besides wall time (e.g. peak RSS), reported in the summary.
struct Extra {
  std::string name;
  double value;
  std::string unit;
};

struct Benchmark {
  std::string name;
  std::string description;
  int runs = 5;
  std::function<void(const Context&)> setup;
  //! One timed run: returns its wall seconds and may add extras (the summary shows the last run's).
  std::function<double(const Context&, std::vector<Extra>&)> run;
  //! Empty if the last run's result is right, else what is wrong.
  std::function<std::string(const Context&)> check;
  //! An untimed run before the timed ones; off for runs so long that a cold start is lost in them.
  bool warm_up = true;
};

//! Registers a benchmark at static-initialisation time.
int add(Benchmark b);
std::vector<Benchmark>& registry();

//! <out>/data/full: the full synthetic dataset (seed 1), generated once (per generator version) and shared
//! by every benchmark that needs it.
std::filesystem::path full_dataset_dir(const Context& ctx);

//! The p-quantile (0..1) of `values` (the value at rank floor(p * n)); 0 for none.
double percentile(std::vector<double> values, double p);

//! Runs a shell command and returns its standard output; throws if it cannot be started.
std::string run_capture(const std::string& cmd);

//! Runs a shell command, returns its wall seconds; throws if it fails.
double time_command(const std::string& cmd);

}  // namespace pwab::bench
