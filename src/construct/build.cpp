// `pwab build`: the passes over the raw files, the per-user cleaning and split, profiles, instructions, output.
// build_dataset is the list of steps, in order: check_options, choose_inputs, count_users (pass 1),
// sample_candidates, collect_reviews (pass 2), clean_reviews, join_products (meta), accept_users, add_catalogue,
// add_users, add_profiles, add_tasks, write_outputs. The state the steps share (the report, the line parser, the
// candidates, the dataset) is passed to each explicitly.
#include "construct/build.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "construct/instructions.h"
#include "construct/profile.h"
#include "construct/raw_reader.h"
#include "construct/raw_records.h"
#include "construct/user_sampler.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/rng.h"
#include "core/sys.h"
#include "data/dataset.h"
#include "data/writer.h"

namespace pwab::construct {
namespace fs = std::filesystem;

SplitSizes split_sizes(std::size_t n) {
  SplitSizes s;
  if (n == 0) return s;
  std::size_t r = (n + 5) / 10;  // round half up of n / 10
  s.test = std::max<std::size_t>(1, r);
  s.train = std::min(r, n - s.test);
  s.history = n - s.test - s.train;
  return s;
}

std::string normalize_category(std::string_view name) {
  std::string out;
  bool sep = false;
  for (char ch : name) {
    auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c >= 0x80) {
      if (sep && !out.empty()) out.push_back('_');
      sep = false;
      out.push_back(static_cast<char>(std::tolower(c)));
    } else {
      sep = true;
    }
  }
  return out;
}

namespace {

constexpr std::size_t kMaxExamples = 12;
constexpr uint64_t kProgressEvery = 1u << 15;  // lines between progress callbacks

// Counts rejected lines and dropped fields, keeping the first few as examples.
struct ProblemLog {
  BuildReport& r;
  void malformed(std::string_view kind, const LineReader& in, const LineProblem& p) {
    ++r.malformed_by_reason[std::string(kind) + ": " + p.reason];
    example(in, p);
  }
  void field(std::string_view kind, const LineReader& in, const std::vector<LineProblem>& ps) {
    for (const auto& p : ps) {
      ++r.field_problems[std::string(kind) + ": " + p.reason];
      example(in, p);
    }
  }
  void example(const LineReader& in, const LineProblem& p) {
    if (r.examples.size() >= kMaxExamples) return;
    r.examples.push_back(fmt::format("{}:{}: {}{}", in.path().string(), in.line_number(), p.reason,
                                     p.detail.empty() ? "" : " (" + p.detail + ")"));
  }
};

// A review of a candidate user, waiting for the join with its product.
struct Pending {
  std::string parent_asin;
  py::Scalar rating;
  std::string title, text;
  int64_t timestamp = 0;
  uint32_t file = 0;
  uint64_t line = 0;
};

struct Candidate {
  uint64_t key = 0;
  std::string user_id;
  bool collided = false;
  std::vector<Pending> reviews;
};

// Streams one file, calling `on_line(line, reader)` for each non-blank line and reporting progress.
template <class F>
uint64_t stream_file(const fs::path& file, const std::string& phase, uint64_t bytes_before, uint64_t bytes_total,
                     uint64_t& lines_in_phase, const Stopwatch& clock, const BuildOptions& o, ProblemLog* log,
                     std::string_view kind, F&& on_line) {
  LineReader in(file);
  std::string_view line;
  bool overlong = false;
  uint64_t lines = 0;
  while (in.next(line, overlong)) {
    ++lines;
    ++lines_in_phase;
    if (overlong) {
      if (log) log->malformed(kind, in, {"line longer than 16 MiB", ""});
      on_line(std::string_view(), in, true);
    } else {
      on_line(line, in, false);
    }
    if (o.on_progress && lines_in_phase % kProgressEvery == 0)
      o.on_progress({phase, bytes_before + in.file_offset(), bytes_total, lines_in_phase, clock.seconds()});
  }
  if (o.on_progress) o.on_progress({phase, bytes_before + in.file_offset(), bytes_total, lines_in_phase, clock.seconds()});
  return lines;
}

uint64_t file_size_or_zero(const fs::path& p) {
  std::error_code ec;
  auto n = fs::file_size(p, ec);
  return ec ? 0 : static_cast<uint64_t>(n);
}

// Runs f(i) for i in [0, n) on up to `workers` threads; the first exception is rethrown after all stop.
template <class F>
void parallel_for(std::size_t n, int workers, F&& f) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex mu;
  auto work = [&] {
    for (std::size_t i; !failed && (i = next.fetch_add(1)) < n;) {
      try {
        f(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  std::size_t nt = std::min<std::size_t>(static_cast<std::size_t>(std::max(workers, 1)), n);
  std::vector<std::thread> threads;
  for (std::size_t t = 1; t < nt; ++t) threads.emplace_back(work);
  if (nt > 0) work();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

// Exact type counts for a split by largest remainder of the mix, in a seeded random order.
std::vector<data::TaskType> assign_types(std::size_t n, const std::array<double, 3>& mix, uint64_t seed) {
  double total = mix[0] + mix[1] + mix[2];
  std::array<std::size_t, 3> count{};
  std::array<double, 3> rem{};
  std::size_t used = 0;
  for (int t = 0; t < 3; ++t) {
    double exact = total > 0 ? static_cast<double>(n) * mix[t] / total : 0;
    count[t] = static_cast<std::size_t>(std::floor(exact));
    rem[t] = exact - std::floor(exact);
    used += count[t];
  }
  while (used < n) {
    int best = 0;
    for (int t = 1; t < 3; ++t)
      if (rem[t] > rem[best]) best = t;
    ++count[best];
    rem[best] = -1;
    ++used;
  }
  std::vector<data::TaskType> types;
  for (int t = 0; t < 3; ++t) types.insert(types.end(), count[t], data::kAllTaskTypes[t]);
  Rng rng(seed);
  rng.shuffle(types);
  return types;
}

struct Slot {
  data::UserId user = 0;
  std::size_t behaviour = 0;
  data::Split split = data::Split::kTrain;
  data::TaskType type = data::TaskType::kSearch;
  uint64_t user_key = 0;
  std::string text;
};

// The line parser and its scratch records, shared by the passes so that each line reuses their buffers.
struct LineParser {
  RawParser parser;
  RawReview review;
  LineProblem problem;
  std::vector<LineProblem> field_problems;
};

// The review files chosen by category, and which categories supply catalogue filler.
struct ChosenInputs {
  bool all = false;                  // --categories all
  std::vector<std::string> chosen;   // normalised names (empty when all)
  std::vector<fs::path> reviews;     // the review files to read, in the order given
  std::size_t first_meta_report = 0; // where the meta files' reports start in BuildReport::files
  uint64_t review_bytes = 0;         // of `reviews`, for progress
  bool is_chosen(const std::string& category) const {
    return all || std::find(chosen.begin(), chosen.end(), normalize_category(category)) != chosen.end();
  }
};

// The products the meta pass kept.
struct JoinedProducts {
  std::unordered_map<std::string, data::Product> found;  // the candidates' products by ASIN
  std::map<uint64_t, data::Product> fillers;             // priority → product: the lowest priorities are kept
};

void check_options(const BuildOptions& o) {
  if (o.review_files.empty()) throw UsageError("pwab build needs at least one --reviews file");
  if (o.meta_files.empty()) throw UsageError("pwab build needs at least one --meta file");
  if (o.n_users == 0) throw UsageError("--users must be at least 1");
  if (o.max_behaviours > 0 && o.max_behaviours < o.min_behaviours)
    throw UsageError("--max-behaviours must be 0 (no limit) or at least --min-behaviours");
  if (o.type_mix[0] < 0 || o.type_mix[1] < 0 || o.type_mix[2] < 0 || o.type_mix[0] + o.type_mix[1] + o.type_mix[2] <= 0)
    throw UsageError("--type-mix needs three non-negative shares with a positive sum");
  for (const auto& f : o.review_files)
    if (!fs::is_regular_file(f)) throw UsageError("--reviews " + f.string() + ": no such file");
  for (const auto& f : o.meta_files)
    if (!fs::is_regular_file(f)) throw UsageError("--meta " + f.string() + ": no such file");
}

// The categories asked for: --categories, or the paper's five when it is not given.
std::vector<std::string> requested_categories(const BuildOptions& o) {
  if (!o.categories.empty()) return o.categories;
  return {std::begin(kPaperCategories), std::end(kPaperCategories)};
}

// Picks the review files by category (their file names) and gives every input file its report entry, review
// files first. No review file of a chosen category is a usage error; a chosen category without one, a warning.
ChosenInputs choose_inputs(const BuildOptions& o, BuildReport& r) {
  ChosenInputs in;
  in.all = o.categories.size() == 1 && normalize_category(o.categories[0]) == "all";
  if (!in.all)
    for (const auto& c : requested_categories(o)) in.chosen.push_back(normalize_category(c));
  std::vector<std::string> present;
  for (const auto& f : o.review_files) {
    FileReport fr{f.string(), "reviews", file_category(f), in.is_chosen(file_category(f)), file_size_or_zero(f), 0, 0};
    if (fr.used) {
      in.reviews.push_back(f);
      if (std::find(r.categories.begin(), r.categories.end(), fr.category) == r.categories.end())
        r.categories.push_back(fr.category);
    }
    present.push_back(fr.category);
    r.files.push_back(fr);
  }
  if (in.reviews.empty())
    throw UsageError(fmt::format("no --reviews file belongs to the chosen categories ({}); the category of a file is "
                                 "its name (e.g. Electronics.jsonl.gz), here: {}; use --categories all to take every file",
                                 fmt::join(requested_categories(o), ", "), fmt::join(present, ", ")));
  if (!in.all)
    for (const auto& c : in.chosen) {
      bool found = false;
      for (const auto& p : present) found = found || normalize_category(p) == c;
      if (!found) r.missing_categories.push_back(c);
    }
  in.first_meta_report = r.files.size();
  for (const auto& f : o.meta_files)
    r.files.push_back({f.string(), "meta", file_category(f), true, file_size_or_zero(f), 0, 0});
  for (const auto& f : in.reviews) in.review_bytes += file_size_or_zero(f);
  return in;
}

// The report entry of a review file (the first one when a file is given twice).
FileReport& review_file_report(BuildReport& r, const fs::path& f) {
  for (auto& fr : r.files)
    if (fr.path == f.string() && fr.kind == "reviews") return fr;
  return r.files.front();
}

// Pass 1: counts the valid reviews of every tracked user. A file none of whose lines is a usable review stops
// the build (usually a meta file given as --reviews).
UserSampler count_users(const BuildOptions& o, const ChosenInputs& in, LineParser& lp, ProblemLog& log,
                        BuildReport& r) {
  Stopwatch clock;
  UserSampler sampler(o.seed, o.track_users);
  uint64_t before = 0, lines = 0;
  for (const auto& f : in.reviews) {
    FileReport& fr = review_file_report(r, f);
    uint64_t valid = 0;
    fr.lines = stream_file(f, "pass 1/2: counting users", before, in.review_bytes, lines, clock, o, &log, "reviews",
                           [&](std::string_view line, const LineReader& reader, bool overlong) {
                             if (overlong) {
                               ++fr.malformed;
                               return;
                             }
                             lp.field_problems.clear();
                             if (!lp.parser.review(line, false, lp.review, lp.problem, lp.field_problems)) {
                               ++fr.malformed;
                               log.malformed("reviews", reader, lp.problem);
                               return;
                             }
                             ++valid;
                             sampler.add(user_key(lp.review.user_id));
                           });
    if (fr.lines > 0 && valid == 0)
      throw DataError(fmt::format("{}: none of its {} lines is a usable review (the first problems are listed "
                                  "below); is it a meta file given as --reviews?{}",
                                  f.string(), fr.lines, r.examples.empty() ? "" : "\n  " + fmt::format("{}", fmt::join(r.examples, "\n  "))));
    r.review_lines += fr.lines;
    r.reviews_malformed += fr.malformed;
    r.reviews_valid += valid;
    before += file_size_or_zero(f);
  }
  r.seconds_pass1 = clock.seconds();
  r.peak_rss_pass1 = peak_rss_bytes();
  r.reviews_per_second_pass1 = r.seconds_pass1 > 0 ? static_cast<double>(r.review_lines) / r.seconds_pass1 : 0;
  return sampler;
}

// The users pass 2 collects: the qualifying ones lowest in priority, --users plus a margin for those that
// cleaning leaves below the minimum. No qualifying user is an error.
std::vector<UserSampler::Candidate> sample_candidates(const BuildOptions& o, const UserSampler& sampler,
                                                      BuildReport& r) {
  r.users_tracked = sampler.tracked();
  r.sampler_halvings = sampler.n_halvings();
  auto qualifying = sampler.candidates(o.min_behaviours, o.max_behaviours, SIZE_MAX);
  r.users_qualifying = qualifying.size();
  std::size_t limit = o.n_users + std::max<std::size_t>(16, o.n_users / 4);
  if (qualifying.size() > limit) qualifying.resize(limit);
  r.users_candidates = qualifying.size();
  if (qualifying.empty())
    throw Error(fmt::format("no user has between {} and {} valid reviews in the chosen categories ({} valid reviews "
                            "read); lower --min-behaviours",
                            o.min_behaviours, o.max_behaviours ? std::to_string(o.max_behaviours) : "any",
                            r.reviews_valid));
  return qualifying;
}

// Pass 2: every review of the candidates, in input order (file, line). Two ids with the same 64-bit key: the
// first one seen keeps the candidate, the other's reviews are left out and the collision counted.
std::vector<Candidate> collect_reviews(const BuildOptions& o, const ChosenInputs& in,
                                       const std::vector<UserSampler::Candidate>& qualifying, LineParser& lp,
                                       ProblemLog& log, BuildReport& r) {
  std::vector<Candidate> cands(qualifying.size());
  std::unordered_map<uint64_t, std::size_t> cand_of;
  for (std::size_t i = 0; i < qualifying.size(); ++i) {
    cands[i].key = qualifying[i].key;
    cand_of.emplace(qualifying[i].key, i);
  }
  Stopwatch clock;
  uint64_t before = 0, lines = 0;
  for (uint32_t fi = 0; fi < in.reviews.size(); ++fi) {
    stream_file(in.reviews[fi], "pass 2/2: collecting reviews", before, in.review_bytes, lines, clock, o, nullptr,
                "reviews", [&](std::string_view line, const LineReader& reader, bool overlong) {
                  if (overlong) return;
                  lp.field_problems.clear();
                  if (!lp.parser.review(line, false, lp.review, lp.problem, lp.field_problems)) return;  // counted in pass 1
                  auto it = cand_of.find(user_key(lp.review.user_id));
                  if (it == cand_of.end()) return;
                  Candidate& c = cands[it->second];
                  if (c.user_id.empty()) {
                    c.user_id = lp.review.user_id;
                  } else if (c.user_id != lp.review.user_id) {
                    c.collided = true;  // another id with the same 64-bit key: keep the first one
                    return;
                  }
                  lp.field_problems.clear();
                  lp.parser.review(line, true, lp.review, lp.problem, lp.field_problems);
                  log.field("reviews", reader, lp.field_problems);
                  RawReview& rv = lp.review;
                  c.reviews.push_back({std::move(rv.parent_asin), std::move(rv.rating), std::move(rv.title),
                                       std::move(rv.text), rv.timestamp, fi, reader.line_number()});
                  ++r.behaviours_collected;
                });
    before += file_size_or_zero(in.reviews[fi]);
  }
  r.seconds_pass2 = clock.seconds();
  r.peak_rss_pass2 = peak_rss_bytes();
  for (const auto& c : cands) r.users_key_collisions += c.collided;
  return cands;
}

// A user's reviews in time order (ties: input order), without duplicates: the same product at the same timestamp
// as an earlier review (the same product at another time is a separate behaviour).
void order_and_drop_duplicates(Candidate& c, BuildReport& r) {
  std::stable_sort(c.reviews.begin(), c.reviews.end(), [](const Pending& a, const Pending& b) {
    return std::tie(a.timestamp, a.file, a.line) < std::tie(b.timestamp, b.file, b.line);
  });
  std::vector<Pending> kept;
  kept.reserve(c.reviews.size());
  std::size_t group = 0;  // start of the current equal-timestamp run in `kept`
  for (auto& p : c.reviews) {
    if (!kept.empty() && kept.back().timestamp != p.timestamp) group = kept.size();
    bool dup = false;
    for (std::size_t k = group; k < kept.size() && !dup; ++k) dup = kept[k].parent_asin == p.parent_asin;
    if (dup) {
      ++r.duplicates_dropped;
      continue;
    }
    kept.push_back(std::move(p));
  }
  c.reviews = std::move(kept);
}

// Cleans every candidate's reviews; returns the products the meta pass must find.
std::unordered_set<std::string> clean_reviews(std::vector<Candidate>& cands, BuildReport& r) {
  std::unordered_set<std::string> needed;
  for (auto& c : cands) {
    order_and_drop_duplicates(c, r);
    for (const auto& p : c.reviews) needed.insert(p.parent_asin);
  }
  return needed;
}

// Decides, line by line of the meta files, which product records the dataset keeps: the first record of each
// needed product, and as filler the other products of the chosen categories with the lowest seeded priority (a
// uniform sample held in a bounded map while streaming).
class ProductJoin {
 public:
  ProductJoin(const BuildOptions& o, const std::unordered_set<std::string>& needed, LineParser& lp, ProblemLog& log,
              BuildReport& r)
      : needed_(needed), filler_cap_(o.catalogue_size), filler_seed_(derive_seed(o.seed, 0xF111E5)), lp_(lp),
        log_(log), r_(r) {}

  // A meta line whose key `asin` was read; `filler_file`: its file is of a chosen category.
  void offer(std::string_view line, const std::string& asin, bool filler_file, const LineReader& reader) {
    bool is_needed = needed_.contains(asin);
    uint64_t prio = 0;
    if (is_needed) {
      if (out_.found.contains(asin)) {
        ++r_.meta_duplicates;
        return;
      }
    } else {
      if (!filler_file || filler_cap_ == 0) return;
      uint64_t s = hash_bytes(asin) ^ filler_seed_;
      prio = splitmix64(s);
      if (out_.fillers.contains(prio)) {
        ++r_.meta_duplicates;
        return;
      }
      if (out_.fillers.size() >= filler_cap_ && prio >= out_.fillers.rbegin()->first) return;
    }
    data::Product p;
    lp_.field_problems.clear();
    if (!lp_.parser.meta(line, p, lp_.problem, lp_.field_problems)) return;
    log_.field("meta", reader, lp_.field_problems);
    if (is_needed) {
      out_.found.emplace(asin, std::move(p));
    } else {
      out_.fillers.emplace(prio, std::move(p));
      if (out_.fillers.size() > filler_cap_) out_.fillers.erase(std::prev(out_.fillers.end()));
    }
  }

  JoinedProducts take() { return std::move(out_); }

 private:
  const std::unordered_set<std::string>& needed_;
  // Not knowing yet how many needed products have a record, keep up to the whole cap; add_catalogue trims it.
  std::size_t filler_cap_;
  uint64_t filler_seed_;
  LineParser& lp_;
  ProblemLog& log_;
  BuildReport& r_;
  JoinedProducts out_;
};

// The meta pass: every meta file through the ProductJoin. A file none of whose lines is a usable product stops
// the build (usually a review file given as --meta).
JoinedProducts join_products(const BuildOptions& o, const ChosenInputs& in, const std::unordered_set<std::string>& needed,
                             LineParser& lp, ProblemLog& log, BuildReport& r) {
  Stopwatch clock;
  ProductJoin join(o, needed, lp, log, r);
  uint64_t meta_bytes = 0, before = 0, lines = 0;
  for (const auto& f : o.meta_files) meta_bytes += file_size_or_zero(f);
  std::string asin;
  for (std::size_t mi = 0; mi < o.meta_files.size(); ++mi) {
    const auto& f = o.meta_files[mi];
    FileReport& fr = r.files[in.first_meta_report + mi];
    bool filler_file = in.is_chosen(fr.category);
    uint64_t valid = 0;
    fr.lines = stream_file(f, "meta: joining products", before, meta_bytes, lines, clock, o, &log, "meta",
                           [&](std::string_view line, const LineReader& reader, bool overlong) {
                             if (overlong) {
                               ++fr.malformed;
                               return;
                             }
                             if (!lp.parser.meta_key(line, asin, lp.problem)) {
                               ++fr.malformed;
                               log.malformed("meta", reader, lp.problem);
                               return;
                             }
                             ++valid;
                             join.offer(line, asin, filler_file, reader);
                           });
    if (fr.lines > 0 && valid == 0)
      throw DataError(fmt::format("{}: none of its {} lines is a usable product record; is it a review file given "
                                  "as --meta?",
                                  f.string(), fr.lines));
    r.meta_lines += fr.lines;
    r.meta_malformed += fr.malformed;
    before += file_size_or_zero(f);
  }
  r.seconds_meta = clock.seconds();
  r.peak_rss_meta = peak_rss_bytes();
  return join.take();
}

// The users of the dataset: the first candidates (by priority) that keep --min-behaviours once the reviews of
// products without a meta record are dropped, up to --users; sorted by user id. None is an error.
std::vector<std::size_t> accept_users(const BuildOptions& o, std::vector<Candidate>& cands,
                                      const std::unordered_map<std::string, data::Product>& found, BuildReport& r) {
  std::vector<std::size_t> accepted;
  for (std::size_t i = 0; i < cands.size() && accepted.size() < o.n_users; ++i) {
    Candidate& c = cands[i];
    std::vector<Pending> kept;
    for (auto& p : c.reviews) {
      if (found.contains(p.parent_asin)) kept.push_back(std::move(p));
      else ++r.no_metadata_dropped;
    }
    c.reviews = std::move(kept);
    if (c.reviews.size() < std::max<uint32_t>(o.min_behaviours, 1)) {
      ++r.users_below_minimum;
      continue;
    }
    accepted.push_back(i);
  }
  if (accepted.empty())
    throw Error("no sampled user keeps " + std::to_string(o.min_behaviours) +
                " behaviours once reviews without product metadata and duplicates are dropped; check that the --meta "
                "files match the --reviews files");
  std::sort(accepted.begin(), accepted.end(), [&](std::size_t a, std::size_t b) { return cands[a].user_id < cands[b].user_id; });
  return accepted;
}

// The catalogue: the accepted users' behaviour products (by ASIN), then fillers (lowest priority first, up to
// --catalogue-size in all, listed by ASIN); item ids 1..N in that order. Returns the behaviour products' ids.
std::unordered_map<std::string, data::ProductId> add_catalogue(const BuildOptions& o, const std::vector<Candidate>& cands,
                                                               const std::vector<std::size_t>& accepted,
                                                               JoinedProducts products, data::Dataset& ds,
                                                               BuildReport& r) {
  std::vector<std::string> behaviour_asins;
  {
    std::unordered_set<std::string> seen;
    for (std::size_t i : accepted)
      for (const auto& p : cands[i].reviews)
        if (seen.insert(p.parent_asin).second) behaviour_asins.push_back(p.parent_asin);
  }
  std::sort(behaviour_asins.begin(), behaviour_asins.end());
  std::vector<data::Product> filler_products;
  std::size_t filler_room = o.catalogue_size > behaviour_asins.size() ? o.catalogue_size - behaviour_asins.size() : 0;
  for (auto& [prio, p] : products.fillers) {
    if (filler_products.size() >= filler_room) break;
    filler_products.push_back(std::move(p));
  }
  std::sort(filler_products.begin(), filler_products.end(),
            [](const data::Product& a, const data::Product& b) { return a.parent_asin < b.parent_asin; });
  std::unordered_map<std::string, data::ProductId> pid;
  std::vector<std::pair<std::string, int64_t>> item_ids;
  for (const auto& asin : behaviour_asins) {
    pid[asin] = *ds.add_product(std::move(products.found.at(asin)));
    item_ids.emplace_back(asin, static_cast<int64_t>(item_ids.size() + 1));
  }
  for (auto& p : filler_products) {
    std::string asin = p.parent_asin;
    auto id = ds.add_product(std::move(p));
    if (!id) continue;
    item_ids.emplace_back(asin, static_cast<int64_t>(item_ids.size() + 1));
  }
  r.products_behaviour = behaviour_asins.size();
  r.products_filler = ds.products().size() - behaviour_asins.size();
  ds.set_item_ids(std::move(item_ids));
  return pid;
}

// The accepted users with their behaviours split chronologically (split_sizes). Returns each user's key, which
// seeds the user's instruction draws.
std::vector<uint64_t> add_users(std::vector<Candidate>& cands, const std::vector<std::size_t>& accepted,
                                const std::unordered_map<std::string, data::ProductId>& pid, data::Dataset& ds,
                                BuildReport& r) {
  std::vector<uint64_t> user_keys;
  for (std::size_t i : accepted) {
    Candidate& c = cands[i];
    data::User u;
    u.id = c.user_id;
    SplitSizes sz = split_sizes(c.reviews.size());
    for (std::size_t k = 0; k < c.reviews.size(); ++k) {
      Pending& p = c.reviews[k];
      data::Behaviour b;
      b.product = pid.at(p.parent_asin);
      b.review = {std::move(p.rating), std::move(p.title), std::move(p.text), p.parent_asin, p.timestamp};
      b.split = k < sz.history ? data::Split::kHistory : k < sz.history + sz.train ? data::Split::kTrain : data::Split::kTest;
      ++r.behaviours_by_split[static_cast<int>(b.split)];
      u.behaviours.push_back(std::move(b));
    }
    r.behaviours += u.behaviours.size();
    c.reviews.clear();
    c.reviews.shrink_to_fit();
    ds.add_user(std::move(u));
    user_keys.push_back(c.key);
  }
  r.users = ds.users().size();
  return user_keys;
}

// Progress of an LLM phase, one tick per finished request. The workers tick from several threads and the
// callback need not be thread-safe, so calls are serialized.
class LlmProgress {
 public:
  LlmProgress(const BuildOptions& o, std::string phase, std::size_t total)
      : o_(o), phase_(std::move(phase)), total_(total) {}
  void tick() {
    std::size_t d = ++done_;
    if (!o_.on_progress) return;
    std::lock_guard<std::mutex> lock(mu_);
    o_.on_progress({phase_, d, total_, d, clock_.seconds()});
  }

 private:
  const BuildOptions& o_;
  std::string phase_;
  std::size_t total_;
  std::atomic<std::size_t> done_{0};
  Stopwatch clock_;
  std::mutex mu_;
};

// A user's behaviours with their products, oldest first: what a profile is made from.
std::vector<HistoryItem> history_of(const data::Dataset& ds, data::UserId uid) {
  std::vector<HistoryItem> h;
  for (const auto& b : ds.user(uid).behaviours) h.push_back({&ds.product(b.product), &b.review});
  return h;
}

// Every user's profile: the offline rules, or (LLM mode) the model's reply with the offline value for each field
// it lacks.
void add_profiles(const BuildOptions& o, data::Dataset& ds, BuildReport& r) {
  PriceReference prices = PriceReference::from_catalogue(ds.products());
  std::vector<data::Profile> profiles(ds.users().size());
  for (data::UserId u = 0; u < ds.users().size(); ++u) profiles[u] = offline_profile(history_of(ds, u), prices);
  if (o.model) {
    std::atomic<std::size_t> calls{0}, failures{0}, filled{0};
    LlmProgress progress(o, "profiles (llm)", profiles.size());
    std::vector<data::Profile> llm_profiles(profiles.size());
    parallel_for(profiles.size(), o.llm_workers, [&](std::size_t u) {
      auto req = profile_prompt(history_of(ds, static_cast<data::UserId>(u)), o.model_name, o.temperature);
      req.seed = o.llm_seed;
      auto resp = o.model->chat(req);
      ++calls;
      int n_filled = 0;
      llm_profiles[u] = parse_profile_reply(resp.message.content, profiles[u], n_filled);
      filled += static_cast<std::size_t>(n_filled);
      if (n_filled == static_cast<int>(std::size(data::kProfileFields))) ++failures;
      progress.tick();
    });
    profiles = std::move(llm_profiles);
    r.llm_calls += calls;
    r.llm_failures += failures;
    r.profile_fields_filled += filled;
  }
  for (data::UserId u = 0; u < ds.users().size(); ++u) {
    ds.mutable_user(u).profile = profiles[u];
    ds.mutable_user(u).has_profile = true;
  }
}

// One slot per train and test behaviour (train first, users by id, behaviours in time order); the types follow
// the mix exactly within each split, in a seeded random order.
std::vector<Slot> task_slots(const BuildOptions& o, const data::Dataset& ds, const std::vector<uint64_t>& user_keys) {
  std::vector<Slot> slots;
  for (data::Split split : {data::Split::kTrain, data::Split::kTest}) {
    std::size_t first = slots.size();
    for (data::UserId u = 0; u < ds.users().size(); ++u) {
      const auto& bs = ds.user(u).behaviours;
      for (std::size_t k = 0; k < bs.size(); ++k)
        if (bs[k].split == split) slots.push_back({u, k, split, data::TaskType::kSearch, user_keys[u], {}});
    }
    auto types = assign_types(slots.size() - first, o.type_mix, derive_seed(o.seed, 7, static_cast<uint64_t>(split)));
    for (std::size_t i = first; i < slots.size(); ++i) slots[i].type = types[i - first];
  }
  return slots;
}

InstructionInput instruction_input(const data::Dataset& ds, const Slot& s) {
  const auto& b = ds.user(s.user).behaviours[s.behaviour];
  return InstructionInput{s.type, &ds.user(s.user).profile, &ds.product(b.product), &b.review};
}

// The seed of an offline template draw: per user, behaviour, type and attempt.
uint64_t slot_seed(uint64_t seed, const Slot& s, uint64_t attempt) {
  return derive_seed(seed ^ s.user_key, (static_cast<uint64_t>(s.behaviour) << 2) | static_cast<uint64_t>(s.type), attempt);
}

// LLM mode: a first instruction for every slot, requests in parallel (an empty text when the reply is unusable).
void draft_llm_instructions(const BuildOptions& o, const data::Dataset& ds, std::vector<Slot>& slots, BuildReport& r) {
  std::atomic<std::size_t> calls{0};
  LlmProgress progress(o, "instructions (llm)", slots.size());
  parallel_for(slots.size(), o.llm_workers, [&](std::size_t i) {
    auto req = instruction_prompt(instruction_input(ds, slots[i]), o.model_name, o.temperature);
    req.seed = o.llm_seed;
    auto resp = o.model->chat(req);
    ++calls;
    slots[i].text = clean_instruction_reply(resp.message.content);
    progress.tick();
  });
  r.llm_calls += calls;
}

// Makes the slot's text one not in `used`. LLM mode: the draft, else the model asked again as a new sample up to
// 3 times; then, and offline, the next template draw, and after 20 draws a numbered suffix.
void make_instruction_unique(const BuildOptions& o, const data::Dataset& ds, Slot& s,
                             const std::unordered_set<std::string>& used, BuildReport& r) {
  if (o.model) {
    for (int sample = 1; sample <= 3 && (s.text.empty() || used.contains(s.text)); ++sample) {
      if (!s.text.empty()) ++r.instruction_collisions;
      auto req = instruction_prompt(instruction_input(ds, s), o.model_name, o.temperature);
      req.sample = sample;
      req.seed = o.llm_seed;
      s.text = clean_instruction_reply(o.model->chat(req).message.content);
      ++r.llm_calls;
    }
    if (s.text.empty() || used.contains(s.text)) {
      ++r.instruction_fallbacks;
      if (s.text.empty()) ++r.llm_failures;
      s.text.clear();
    }
  }
  if (s.text.empty()) {
    for (uint64_t attempt = 0;; ++attempt) {
      s.text = offline_instruction(instruction_input(ds, s), slot_seed(o.seed, s, attempt));
      if (attempt >= 20) s.text += " (request " + std::to_string(attempt - 19) + ")";
      if (!used.contains(s.text)) break;
      ++r.instruction_collisions;
    }
  }
}

// The tasks: one per train and test behaviour, its instruction unique across both splits (PUMA keys files on
// instructions), checked in slot order.
void add_tasks(const BuildOptions& o, const std::vector<uint64_t>& user_keys, data::Dataset& ds, BuildReport& r) {
  std::vector<Slot> slots = task_slots(o, ds, user_keys);
  if (o.model) draft_llm_instructions(o, ds, slots, r);
  std::unordered_set<std::string> used;
  for (Slot& s : slots) {
    make_instruction_unique(o, ds, s, used, r);
    used.insert(s.text);
    const auto& b = ds.user(s.user).behaviours[s.behaviour];
    data::Task t;
    t.split = s.split;
    t.user = s.user;
    t.instruction = s.text;
    t.type = s.type;
    t.timestamp = b.review.timestamp;
    t.target_product = b.product;
    t.target_review = b.review;
    ds.add_task(std::move(t));
    (s.split == data::Split::kTrain ? r.train_by_type : r.test_by_type)[static_cast<int>(s.type)]++;
  }
}

// The dataset in the original layout, then build_report.json beside it.
void write_outputs(const data::Dataset& ds, const fs::path& out_dir, BuildReport& r) {
  Stopwatch clock;
  data::WriteOptions wo;
  wo.product_parts = 1;
  wo.history_parts = 1;
  data::write_dataset(ds, out_dir, wo);
  r.seconds_write = clock.seconds();
  r.peak_rss_bytes = peak_rss_bytes();
  write_file_atomic(out_dir / "build_report.json", build_report_json(r) + "\n");
}

}  // namespace

BuildReport build_dataset(const BuildOptions& o, const fs::path& out_dir) {
  check_options(o);
  BuildReport r;
  r.mode = o.model ? "llm:" + o.model_name : "offline";
  r.users_requested = o.n_users;
  ProblemLog log{r};
  LineParser parser;
  ChosenInputs inputs = choose_inputs(o, r);
  std::vector<UserSampler::Candidate> qualifying = sample_candidates(o, count_users(o, inputs, parser, log, r), r);
  std::vector<Candidate> cands = collect_reviews(o, inputs, qualifying, parser, log, r);
  std::unordered_set<std::string> needed = clean_reviews(cands, r);
  JoinedProducts products = join_products(o, inputs, needed, parser, log, r);

  Stopwatch generate_clock;
  std::vector<std::size_t> accepted = accept_users(o, cands, products.found, r);
  data::Dataset ds;
  auto product_ids = add_catalogue(o, cands, accepted, std::move(products), ds, r);
  std::vector<uint64_t> user_keys = add_users(cands, accepted, product_ids, ds, r);
  add_profiles(o, ds, r);
  add_tasks(o, user_keys, ds, r);
  r.seconds_generate = generate_clock.seconds();

  write_outputs(ds, out_dir, r);
  return r;
}

std::string build_report_json(const BuildReport& r) {
  nlohmann::ordered_json j;
  j["mode"] = r.mode;
  j["categories"] = r.categories;
  j["missing_categories"] = r.missing_categories;
  auto& files = j["files"] = nlohmann::ordered_json::array();
  for (const auto& f : r.files)
    files.push_back({{"path", f.path}, {"kind", f.kind}, {"category", f.category}, {"used", f.used},
                     {"bytes", f.bytes}, {"lines", f.lines}, {"malformed", f.malformed}});
  j["lines"] = {{"review_lines", r.review_lines}, {"reviews_valid", r.reviews_valid},
                {"reviews_malformed", r.reviews_malformed}, {"meta_lines", r.meta_lines},
                {"meta_malformed", r.meta_malformed}, {"malformed_by_reason", r.malformed_by_reason},
                {"field_problems", r.field_problems}, {"examples", r.examples}};
  j["users"] = {{"tracked", r.users_tracked}, {"sampler_halvings", r.sampler_halvings},
                {"qualifying", r.users_qualifying}, {"candidates", r.users_candidates},
                {"below_minimum_after_cleaning", r.users_below_minimum}, {"key_collisions", r.users_key_collisions},
                {"sampled", r.users}, {"requested", r.users_requested}};
  j["behaviours"] = {{"collected", r.behaviours_collected}, {"duplicates_dropped", r.duplicates_dropped},
                     {"no_metadata_dropped", r.no_metadata_dropped}, {"kept", r.behaviours},
                     {"history", r.behaviours_by_split[0]}, {"train", r.behaviours_by_split[1]},
                     {"test", r.behaviours_by_split[2]}};
  j["products"] = {{"behaviour", r.products_behaviour}, {"filler", r.products_filler},
                   {"meta_duplicates", r.meta_duplicates}};
  auto types = [](const std::array<std::size_t, 3>& a) {
    return nlohmann::ordered_json{{"search", a[0]}, {"recommend", a[1]}, {"review", a[2]}};
  };
  j["tasks"] = {{"train", types(r.train_by_type)}, {"test", types(r.test_by_type)},
                {"instruction_collisions", r.instruction_collisions}};
  j["llm"] = {{"calls", r.llm_calls}, {"failures", r.llm_failures}, {"profile_fields_filled", r.profile_fields_filled},
              {"instruction_fallbacks", r.instruction_fallbacks}};
  j["seconds"] = {{"pass1", r.seconds_pass1}, {"pass2", r.seconds_pass2}, {"meta", r.seconds_meta},
                  {"generate", r.seconds_generate}, {"write", r.seconds_write}};
  j["reviews_per_second_pass1"] = r.reviews_per_second_pass1;
  j["peak_rss_bytes"] = {{"pass1", r.peak_rss_pass1}, {"pass2", r.peak_rss_pass2}, {"meta", r.peak_rss_meta},
                         {"build", r.peak_rss_bytes}};
  return j.dump(2);
}

std::string format_build_report(const BuildReport& r) {
  std::string out;
  auto sum3 = [](const std::array<std::size_t, 3>& a) { return a[0] + a[1] + a[2]; };
  out += fmt::format("Mode: {}; categories: {}\n", r.mode, fmt::join(r.categories, ", "));
  if (!r.missing_categories.empty())
    out += fmt::format("warning: no review file for the chosen categories: {}\n", fmt::join(r.missing_categories, ", "));
  for (const auto& f : r.files)
    out += fmt::format("  {:<7} {:<24} {:>12} lines {:>9} malformed  {}{}\n", f.kind, f.category, f.lines, f.malformed,
                       f.path, f.used ? "" : "  (category not chosen: not read)");
  out += fmt::format("Reviews: {} lines, {} valid, {} malformed; meta: {} lines, {} malformed\n", r.review_lines,
                     r.reviews_valid, r.reviews_malformed, r.meta_lines, r.meta_malformed);
  for (const auto& [reason, n] : r.malformed_by_reason) out += fmt::format("  skipped {:>9}  {}\n", n, reason);
  for (const auto& [reason, n] : r.field_problems) out += fmt::format("  field dropped {:>5}  {}\n", n, reason);
  for (const auto& e : r.examples) out += "  e.g. " + e + "\n";
  out += fmt::format("Users: {} tracked exactly in pass 1 ({} halvings), {} qualifying, {} candidates, {} dropped "
                     "below the minimum after cleaning, {} sampled{}\n",
                     r.users_tracked, r.sampler_halvings, r.users_qualifying, r.users_candidates, r.users_below_minimum,
                     r.users, r.users_key_collisions ? fmt::format(" ({} key collisions)", r.users_key_collisions) : "");
  if (r.users < r.users_requested)
    out += fmt::format("note: {} users requested, {} qualify (lower --min-behaviours or add review files for more)\n",
                       r.users_requested, r.users);
  out += fmt::format("Behaviours: {} kept (history {}, train {}, test {}); dropped {} duplicates and {} without "
                     "product metadata\n",
                     r.behaviours, r.behaviours_by_split[0], r.behaviours_by_split[1], r.behaviours_by_split[2],
                     r.duplicates_dropped, r.no_metadata_dropped);
  out += fmt::format("Products: {} ({} from behaviours, {} other items of the categories); {} repeated meta records "
                     "ignored\n",
                     r.products_behaviour + r.products_filler, r.products_behaviour, r.products_filler, r.meta_duplicates);
  out += fmt::format("Tasks: train {} (search {}, recommend {}, review {}), test {} (search {}, recommend {}, review "
                     "{})\n",
                     sum3(r.train_by_type), r.train_by_type[0], r.train_by_type[1], r.train_by_type[2],
                     sum3(r.test_by_type), r.test_by_type[0], r.test_by_type[1], r.test_by_type[2]);
  if (r.mode != "offline")
    out += fmt::format("LLM: {} calls, {} unusable replies, {} profile fields filled by the offline rules, {} "
                       "instructions from the offline templates\n",
                       r.llm_calls, r.llm_failures, r.profile_fields_filled, r.instruction_fallbacks);
  auto mb = [](std::size_t b) { return static_cast<double>(b) / 1e6; };
  out += fmt::format("Time: pass 1 {:.2f} s ({:.0f} reviews/s), pass 2 {:.2f} s, meta {:.2f} s, generate {:.2f} s, "
                     "write {:.2f} s; peak RSS {:.1f} MB (after pass 1 {:.1f}, pass 2 {:.1f}, meta {:.1f})\n",
                     r.seconds_pass1, r.reviews_per_second_pass1, r.seconds_pass2, r.seconds_meta, r.seconds_generate,
                     r.seconds_write, mb(r.peak_rss_bytes), mb(r.peak_rss_pass1), mb(r.peak_rss_pass2),
                     mb(r.peak_rss_meta));
  return out;
}

}  // namespace pwab::construct
