// `pwab data validate` on the full synthetic dataset (issue 31), the whole command in a fresh process, timed
// side by side with its anchor, /usr/bin/python3's json.load of the same files, in the same run: each timed run
// runs both, one after the other, so a busy machine slows both. data/parse_limit measures what this machine
// allows: reading the files, simdjson parsing them (one thread) and memcpy of the same bytes.
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "bench.h"
#include "core/sys.h"

namespace fs = std::filesystem;
using namespace pwab;
using namespace pwab::bench;

namespace {

fs::path pwab_binary(const Context& ctx) { return ctx.self.parent_path().parent_path() / "pwab"; }
fs::path out_file(const Context& ctx) { return ctx.out_dir / "data" / "validate_full.txt"; }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::vector<fs::path> json_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

const int kValidate = add({
    "data/validate_full_vs_python",
    "pwab data validate FULL (whole command: load, checks, Table 2 statistics) vs python3 json.load of the files",
    5,
    [](const Context& ctx) { full_dataset_dir(ctx); },
    [](const Context& ctx, std::vector<Extra>& extras) {
      static std::vector<double> pwab_times, python_times;
      const std::string dir = full_dataset_dir(ctx).string();
      double s = time_command(pwab_binary(ctx).string() + " data validate " + dir + " > " + out_file(ctx).string());
      double py = time_command(
          "/usr/bin/python3 -c 'import json,glob,sys; d=[json.load(open(f)) for f in "
          "sorted(glob.glob(sys.argv[1]+\"/*.json\"))]' " + dir);
      pwab_times.push_back(s);
      python_times.push_back(py);
      extras.push_back({"python json.load (median)", median(python_times), "s"});
      extras.push_back({"pwab validate (median)", median(pwab_times), "s"});
      extras.push_back({"python / pwab", median(python_times) / median(pwab_times), "x"});
      return s;
    },
    [](const Context& ctx) -> std::string {
      std::string out = run_capture("cat " + out_file(ctx).string());
      for (const char* needle : {"# Products                     35,772", "Checks: 0 errors, 0 warnings"})
        if (out.find(needle) == std::string::npos) return std::string("validate output lacks '") + needle + "'";
      return "";
    },
});

const int kLimit = add({
    "data/parse_limit",
    "the machine's limit for the full dataset's bytes: read (page cache), simdjson DOM parse (1 thread), memcpy",
    3,
    [](const Context& ctx) { full_dataset_dir(ctx); },
    [](const Context& ctx, std::vector<Extra>& extras) {
      std::vector<fs::path> files = json_files(full_dataset_dir(ctx));
      Stopwatch clock;
      std::vector<simdjson::padded_string> texts;
      std::size_t bytes = 0;
      for (const auto& f : files) {
        texts.push_back(simdjson::padded_string::load(f.string()).value());
        bytes += texts.back().size();
      }
      double read_s = clock.seconds();
      simdjson::dom::parser parser;
      for (const auto& t : texts)  // warm: the parser's buffers allocated and touched once
        if (parser.parse(t).error()) throw std::runtime_error("simdjson cannot parse the dataset");
      clock = Stopwatch();
      for (const auto& t : texts)
        if (parser.parse(t).error()) throw std::runtime_error("simdjson cannot parse the dataset");
      double parse_s = clock.seconds();
      std::vector<char> dst(bytes);
      std::memset(dst.data(), 1, dst.size());
      clock = Stopwatch();
      std::size_t off = 0;
      for (const auto& t : texts) {
        std::memcpy(dst.data() + off, t.data(), t.size());
        off += t.size();
      }
      double copy_s = clock.seconds();
      extras.push_back({"bytes", static_cast<double>(bytes) / 1e6, "MB"});
      extras.push_back({"read into buffers", static_cast<double>(bytes) / read_s / 1e9, "GB/s"});
      extras.push_back({"simdjson parse", static_cast<double>(bytes) / parse_s / 1e9, "GB/s"});
      extras.push_back({"simdjson parse time", parse_s, "s"});
      extras.push_back({"memcpy", static_cast<double>(bytes) / copy_s / 1e9, "GB/s"});
      return read_s + parse_s;
    },
    nullptr,
});

}  // namespace
