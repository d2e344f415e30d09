// Construction benchmarks: `pwab build` (offline) on a generated multi-GB Amazon Reviews 2023-style dump, plain and
// gzip. Each run is a fresh child process (fork), so its peak RSS is the build's own; the throughput is review
// lines per second over the whole build (two passes over the reviews, the meta pass, generation and writing).
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench.h"
#include "construct/build.h"
#include "core/rng.h"
#include "core/sys.h"
#include "data/validate.h"

namespace fs = std::filesystem;
using namespace pwab;
using namespace pwab::bench;

namespace {

constexpr uint64_t kReviews = 4'500'000;  // ~2.2 GB of JSONL
constexpr uint64_t kUsers = 3'000'000;    // user index space: heavy-tailed activity, ~2M distinct users
constexpr uint64_t kProducts = 300'000;
constexpr int kVersion = 1;               // bump when the generator changes

const char* kWords[] = {"great", "quality", "price", "works", "battery", "sound", "easy", "use", "love", "product",
                        "bought", "after", "month", "would", "recommend", "cheap", "broke", "perfect", "size", "fit",
                        "color", "nice", "good", "bad", "value", "fast", "shipping", "arrived", "box", "cable",
                        "charger", "phone", "kitchen", "coffee", "pan", "set", "light", "bright", "small", "large",
                        "daughter", "son", "gift", "again", "really", "very", "well", "made", "sturdy", "soft"};

fs::path input_dir(const Context& ctx) { return ctx.out_dir / "construct" / fmt::format("raw-v{}", kVersion); }

std::string user_id(uint64_t u) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  uint64_t s = u * 0x9E3779B97F4A7C15ull + 7;
  std::string id = "A";
  for (int i = 0; i < 27; ++i) {
    if (i % 12 == 0) s = splitmix64(s);
    id.push_back(kAlphabet[(s >> ((i % 12) * 5)) & 31]);
  }
  return id;
}

std::string asin(uint64_t p) { return fmt::format("B0{:08X}", p * 2654435761u % 0xFFFFFFFFu); }

void append_words(std::string& out, Rng& rng, int n) {
  for (int i = 0; i < n; ++i) {
    if (i) out.push_back(' ');
    out += kWords[rng.below(std::size(kWords))];
  }
}

// Reviews (plain and a gzip copy) and meta, written once and reused.
void ensure_inputs(const Context& ctx) {
  fs::path dir = input_dir(ctx);
  if (fs::exists(dir / "done")) return;
  fs::create_directories(dir);
  std::fprintf(stderr, "[bench] construct: generating %llu reviews (~2 GB) once into %s\n",
               static_cast<unsigned long long>(kReviews), dir.c_str());
  Rng rng(2024);
  {
    fs::create_directories(dir / "gz");
    std::FILE* f = std::fopen((dir / "Electronics.jsonl").c_str(), "wb");
    gzFile gz = gzopen((dir / "gz" / "Electronics.jsonl.gz").c_str(), "wb1");
    if (!f || !gz) throw std::runtime_error("cannot write the benchmark input in " + dir.string());
    std::string line;
    for (uint64_t i = 0; i < kReviews; ++i) {
      double x = rng.uniform();
      uint64_t u = static_cast<uint64_t>(static_cast<double>(kUsers) * x * x * x);
      double y = rng.uniform();
      uint64_t p = static_cast<uint64_t>(static_cast<double>(kProducts) * y * y);
      line.clear();
      line += fmt::format("{{\"rating\": {}.0, \"title\": \"", 1 + rng.below(5));
      append_words(line, rng, 2 + static_cast<int>(rng.below(5)));
      line += "\", \"text\": \"";
      append_words(line, rng, 20 + static_cast<int>(rng.below(60)));
      line += fmt::format("\", \"images\": [], \"asin\": \"{0}\", \"parent_asin\": \"{0}\", \"user_id\": \"{1}\", "
                          "\"timestamp\": {2}, \"helpful_vote\": {3}, \"verified_purchase\": true}}\n",
                          asin(p), user_id(u), 1300000000000 + static_cast<int64_t>(rng.below(400000000000ull)),
                          rng.below(5));
      std::fwrite(line.data(), 1, line.size(), f);
      gzwrite(gz, line.data(), static_cast<unsigned>(line.size()));
    }
    std::fclose(f);
    gzclose(gz);
  }
  {
    std::FILE* f = std::fopen((dir / "meta_Electronics.jsonl").c_str(), "wb");
    std::string line;
    for (uint64_t p = 0; p < kProducts; ++p) {
      line.clear();
      line += "{\"main_category\": \"All Electronics\", \"title\": \"";
      append_words(line, rng, 6 + static_cast<int>(rng.below(10)));
      line += fmt::format("\", \"average_rating\": 4.{}, \"rating_number\": {}, \"features\": [\"", rng.below(10), rng.below(5000));
      append_words(line, rng, 12);
      line += "\", \"";
      append_words(line, rng, 12);
      line += "\"], \"description\": [\"";
      append_words(line, rng, 30);
      line += fmt::format("\"], \"price\": {}.99, \"images\": [], \"videos\": [], \"store\": \"Brand{}\", "
                          "\"categories\": [\"Electronics\", \"Cat{}\"], \"details\": {{\"Color\": \"Black\"}}, "
                          "\"parent_asin\": \"{}\", \"bought_together\": null}}\n",
                          5 + rng.below(300), rng.below(2000), rng.below(40), asin(p));
      std::fwrite(line.data(), 1, line.size(), f);
    }
    std::fclose(f);
  }
  fs::copy_file(dir / "meta_Electronics.jsonl", dir / "gz" / "meta_Electronics.jsonl", fs::copy_options::overwrite_existing);
  std::ofstream(dir / "done") << kReviews << "\n";
}

struct Measured {
  double seconds = 0, rss_mb = 0, rss_start_mb = 0, rss_pass1_mb = 0, pass1_rate = 0, input_gb = 0;
  uint64_t review_lines = 0;
  std::size_t users = 0;
  fs::path out;
};
Measured last;

// Forks a child that runs the build; the parent reads the child's peak RSS from wait4 and the figures from
// build_report.json.
std::size_t current_rss_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return static_cast<std::size_t>(std::stoull(line.substr(6))) * 1024;
  return 0;
}

Measured measure(const Context& ctx, bool gzip) {
  fs::path in = gzip ? input_dir(ctx) / "gz" : input_dir(ctx);
  fs::path out = ctx.out_dir / "construct" / (gzip ? "out-gz" : "out-plain");
  construct::BuildOptions o;
  o.review_files = {in / (gzip ? "Electronics.jsonl.gz" : "Electronics.jsonl")};
  o.meta_files = {in / "meta_Electronics.jsonl"};
  o.n_users = 1000;
  Stopwatch clock;
  pid_t pid = fork();
  if (pid == 0) {
    try {
      // The child starts as a copy of this process (libraries, earlier benchmarks' heap): its resident size now
      // is the baseline the build's own memory adds to.
      std::ofstream(out.string() + ".rss-start") << current_rss_bytes() << "\n";
      construct::build_dataset(o, out);
      _exit(0);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "build failed: %s\n", e.what());
      _exit(1);
    }
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  Measured m;
  m.seconds = clock.seconds();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("the build child failed");
  m.rss_mb = static_cast<double>(usage.ru_maxrss) * 1024.0 / 1e6;  // ru_maxrss is in KiB
  m.rss_start_mb = std::stod(read_file(out.string() + ".rss-start")) / 1e6;
  auto report = nlohmann::json::parse(read_file(out / "build_report.json"));
  m.review_lines = report["lines"]["review_lines"];
  m.users = report["users"]["sampled"];
  m.pass1_rate = report["reviews_per_second_pass1"];
  m.rss_pass1_mb = report["peak_rss_bytes"]["pass1"].get<double>() / 1e6;
  m.input_gb = static_cast<double>(fs::file_size(o.review_files[0]) + fs::file_size(o.meta_files[0])) / 1e9;
  m.out = out;
  return m;
}

std::string check_last() {
  if (last.review_lines != kReviews) return fmt::format("read {} review lines, expected {}", last.review_lines, kReviews);
  if (last.users != 1000) return fmt::format("sampled {} users, expected 1000", last.users);
  auto v = data::validate_dataset(last.out);
  if (v.diag.has_errors()) return "the dataset does not validate: " + v.diag.first_error();
  return "";
}

double run_one(const Context& ctx, std::vector<Extra>& extras, bool gzip) {
  last = measure(ctx, gzip);
  extras.push_back({"reviews/s", static_cast<double>(last.review_lines) / last.seconds, "end to end"});
  extras.push_back({"pass-1 reviews/s", last.pass1_rate, ""});
  extras.push_back({"peak RSS", last.rss_mb, "MB"});
  extras.push_back({"of which the build", last.rss_mb - last.rss_start_mb, "MB"});
  extras.push_back({"peak RSS after pass 1", last.rss_pass1_mb, "MB"});
  extras.push_back({"input", last.input_gb, "GB on disk"});
  return last.seconds;
}

const int kPlain = add({
    "construct/build_plain",
    "pwab build --offline, 1000 users from 4.5M reviews (2.2 GB JSONL) + 300k products; fresh process, peak RSS",
    2,
    ensure_inputs,
    [](const Context& ctx, std::vector<Extra>& extras) { return run_one(ctx, extras, false); },
    [](const Context&) { return check_last(); },
});

const int kGzip = add({
    "construct/build_gzip",
    "the same build from the gzip-compressed reviews",
    2,
    ensure_inputs,
    [](const Context& ctx, std::vector<Extra>& extras) { return run_one(ctx, extras, true); },
    [](const Context&) { return check_last(); },
});

}  // namespace
