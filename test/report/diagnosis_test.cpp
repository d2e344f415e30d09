// The diagnosis of report/diagnosis.h on hand-made records over a hand-made dataset: every primary category and
// every flag, the leak checks and rates (with the scores with and without leaked episodes), personalization
// attribution, the JSON / Markdown renderings and the paired movement between two runs.
#include "report/diagnosis.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "env/tools.h"
#include "runner/results.h"
#include "sim/leaks.h"
#include "support/test_support.h"

namespace pwab::report {
namespace {

using runner::read_run;

using data::TaskType;
using Json = nlohmann::json;

constexpr const char* kSearchTarget = "B0TARGET01";
constexpr const char* kRecTarget = "B0TARGET02";
constexpr const char* kReviewProduct = "B0GRINDER1";
constexpr const char* kHistoryAsin = "B0TOASTER1";
constexpr const char* kForeignAsin = "B0NOTMINE1";
constexpr const char* kTrueReview =
    "The grinder is loud but it makes a wonderfully even espresso grind every single morning";

data::Product product(const std::string& asin, const std::string& title, const std::string& store) {
  data::Product p;
  p.parent_asin = asin;
  p.title = title;
  p.store = store;
  p.main_category = "Home";
  p.features = {"stainless steel body"};
  return p;
}

//! One user (profile: prefers Hamilton) whose visible history is a toaster she reviewed, and three test tasks:
//! test/0 search (a kettle), test/1 recommend, test/2 review (a grinder).
const data::Dataset& world() {
  static const data::Dataset ds = [] {
    data::Dataset d;
    auto target = *d.add_product(product(kSearchTarget, "Zephyr Ultra Quiet Electric Kettle", "Zephyr"));
    auto rec = *d.add_product(product(kRecTarget, "Breville Milk Frother Deluxe", "Breville"));
    auto grinder = *d.add_product(product(kReviewProduct, "Burr Coffee Grinder", "Baratza"));
    auto toaster = *d.add_product(product(kHistoryAsin, "Hamilton Stainless Toaster", "Hamilton"));
    d.add_product(product(kForeignAsin, "Someone Else's Blender", "Other"));
    data::User u;
    u.id = "U1";
    u.has_profile = true;
    u.profile.fields = {{"Brand Preference", "Hamilton"}, {"Tone and Style", "Playful"}};
    data::Review past;
    past.text = "Crumb tray slides out and the browning dial is precise";
    past.title = "Toasts evenly";
    past.parent_asin = kHistoryAsin;
    past.timestamp = 100;
    u.behaviours.push_back({toaster, past, data::Split::kHistory});
    auto user = *d.add_user(u);
    auto task = [&](TaskType type, data::ProductId p, std::string instruction) {
      data::Task t;
      t.split = data::Split::kTest;
      t.user = user;
      t.type = type;
      t.timestamp = 1000;
      t.target_product = p;
      t.instruction = std::move(instruction);
      t.target_review.text = kTrueReview;
      t.target_review.title = "Loud but worth it";
      return t;
    };
    d.add_task(task(TaskType::kSearch, target, "I want a quiet kettle"));
    d.add_task(task(TaskType::kRecommend, rec, "Recommend something for my kitchen"));
    d.add_task(task(TaskType::kReview, grinder, "Write a review of the grinder I bought"));
    return d;
  }();
  return ds;
}

std::string results(std::initializer_list<std::string> asins) {
  std::string out = "[";
  int i = 0;
  for (const auto& a : asins) out += fmt::format("'Product {}: \\n- Title: x\\n- Parent Asin: {}\\n', ", i++, a);
  return out + "]";
}

//! A record of test/<index> with the task's type.
runner::TaskRecord base(int index) {
  runner::TaskRecord r;
  r.task_key = "test/" + std::to_string(index);
  r.type = static_cast<TaskType>(index);
  r.instruction = world().tasks(data::Split::kTest)[index].instruction;
  r.ending = "task_function";
  return r;
}

//! Appends a call: its reward is scored (a task function whose tool ran) unless the observation is an error.
void call(runner::TaskRecord& r, std::string_view name, const std::string& args, const std::string& observation,
          double f = 0, double res = 0) {
  const bool error = observation.rfind("Error:", 0) == 0;
  const bool task_fn = env::task_type_of_function(name).has_value();
  r.actions.push_back({{std::string(name), args}, observation, {error ? 0 : f, error ? 0 : res}, task_fn, task_fn && !error});
  if (task_fn) r.attempts.push_back({error ? 0 : f, error ? 0 : res});
  ++r.steps;
}

void respond(runner::TaskRecord& r, const std::string& message, const std::string& reply) {
  r.actions.push_back({{"respond", Json{{"content", message}}.dump()}, reply, {}, false, false});
  ++r.steps;
}

std::string query(const std::string& q) { return Json{{"query", q}}.dump(); }
std::string sequence(std::vector<std::string> asins) { return Json{{"product_sequence", asins}}.dump(); }
std::string review(const std::string& text) { return Json{{"review", text}}.dump(); }

RecordDiagnosis diag(const runner::TaskRecord& r, const metrics::PassRule& rule = {}) {
  DiagnosisOptions o;
  o.rule = rule;
  return diagnose_record(r, world(), o);
}

TEST(Diagnosis, EveryPrimaryCategory) {
  metrics::PassRule strict = metrics::PassRule::parse("search=0.5,recommend=0.5,review=0.5");
  auto expect = [&](const runner::TaskRecord& r, Failure f, const metrics::PassRule& rule = {}) {
    RecordDiagnosis d = diag(r, rule);
    EXPECT_EQ(to_string(d.primary), to_string(f)) << r.task_key << " " << d.detail;
    return d;
  };
  {  // solved
    auto r = base(0);
    call(r, env::kSearch, query("quiet kettle"), results({kSearchTarget}), 1, 1);
    expect(r, Failure::kSolved);
  }
  {  // infrastructure error wins over everything
    auto r = base(0);
    r.error = "HTTP 503 after 3 tries";
    EXPECT_EQ(expect(r, Failure::kInfraError).detail, "HTTP 503 after 3 tries");
  }
  {  // wrong function, named
    auto r = base(0);
    call(r, env::kRecommend, sequence({kHistoryAsin}), results({"B0X"}), 0, 0);
    EXPECT_EQ(expect(r, Failure::kWrongFunction).detail,
              "called get_recommendations_by_history, needed search_product_by_query");
  }
  {  // tool error: the right function, refused arguments
    auto r = base(0);
    call(r, env::kSearch, R"({"q": "kettle"})", "Error: missing required argument 'query'");
    EXPECT_EQ(expect(r, Failure::kToolError).detail, "Error: missing required argument 'query'");
  }
  {  // search: absent, then low (under a stricter rule)
    auto r = base(0);
    call(r, env::kSearch, query("kettle"), results({"B0A", "B0B"}), 1, 0);
    EXPECT_EQ(expect(r, Failure::kSearchTargetAbsent).detail, "2 results");
    auto low = base(0);
    call(low, env::kSearch, query("kettle"), results({"B0A", "B0B", kSearchTarget, "B0C"}), 1, 0.5 - 1e-9);
    EXPECT_EQ(expect(low, Failure::kSearchTargetLow, strict).detail, "target at rank 3 of 4");
    expect(low, Failure::kSolved);  // the default rule: found at all
  }
  {  // recommend: empty, unseen history, absent, low
    auto r = base(1);
    call(r, env::kRecommend, sequence({}), results({"B0A"}), 1, 0);
    expect(r, Failure::kRecommendEmpty);
    auto unseen = base(1);
    call(unseen, env::kRecommend, sequence({kHistoryAsin, kForeignAsin}), results({"B0A"}), 1, 0);
    EXPECT_EQ(expect(unseen, Failure::kRecommendUnseen).detail, "1 of 2 ASINs not in the visible history");
    auto absent = base(1);
    call(absent, env::kRecommend, sequence({kHistoryAsin}), results({"B0A"}), 1, 0);
    expect(absent, Failure::kRecommendTargetAbsent);
    auto low = base(1);
    call(low, env::kRecommend, sequence({kHistoryAsin}), results({"B0A", kRecTarget}), 1, 0.2);
    EXPECT_EQ(expect(low, Failure::kRecommendTargetLow, strict).detail, "target at rank 2 of 2");
  }
  {  // review below the threshold
    auto r = base(2);
    call(r, env::kAddReview, review("nice"), "{'review': 'nice'}", 1, 0.3);
    expect(r, Failure::kReviewLow);
    auto good = base(2);
    call(good, env::kAddReview, review("nice"), "{'review': 'nice'}", 1, 0.7);
    expect(good, Failure::kSolved);
  }
  {  // no task function: step cap, stop, text reply
    auto r = base(0);
    for (int i = 0; i < 3; ++i) call(r, env::kProductDetails, R"({"product_asin": "B0A"})", "{'title': 'x'}");
    r.ending = "step_cap";
    expect(r, Failure::kStepCap);
    auto stop = base(0);
    call(stop, env::kStop, "{}", "");
    stop.ending = "stop";
    expect(stop, Failure::kStoppedNoAttempt);
    auto text = base(0);
    respond(text, "Here is a kettle", "Error: ###STOP###");
    text.attempts.push_back({0, 0});
    text.ending = "respond";
    expect(text, Failure::kTextReply);
  }
}

TEST(Diagnosis, EveryFlag) {
  auto flags_of = [](const runner::TaskRecord& r) { return diag(r).flags; };
  {
    auto r = base(0);
    call(r, env::kSearch, query("kettle"), results({"B0A"}), 1, 0);
    r.ending = "step_cap";
    EXPECT_EQ(flags_of(r), kFlagStepCap);
  }
  {
    auto r = base(0);
    call(r, env::kProductDetails, R"({"asin": 1})", "Error: bad argument");
    call(r, env::kSearch, query("kettle"), results({kSearchTarget}), 1, 1);
    EXPECT_EQ(flags_of(r), kFlagToolError);
  }
  {
    auto r = base(0);
    call(r, env::kRecommend, sequence({kHistoryAsin}), results({"B0A"}), 0, 0);
    call(r, env::kSearch, query("kettle"), results({kSearchTarget}), 1, 1);
    EXPECT_EQ(flags_of(r), kFlagWrongFunction);
  }
  {  // the same arguments spelled differently are the same call
    auto r = base(0);
    call(r, env::kSearch, R"({"query":"kettle"})", results({"B0A"}), 1, 0);
    call(r, env::kSearch, R"({ "query" : "kettle" })", results({"B0A"}), 1, 0);
    EXPECT_EQ(flags_of(r), kFlagRepeatedCall);
  }
  {  // asked, got an answer, attempted the same thing again
    auto r = base(0);
    call(r, env::kSearch, query("kettle"), results({"B0A"}), 1, 0);
    respond(r, "Any brand?", "Something quiet please.");
    call(r, env::kSearch, query("kettle"), results({"B0A"}), 1, 0);
    EXPECT_EQ(flags_of(r), kFlagIgnoredAnswer | kFlagRepeatedCall);
    auto used = base(0);
    call(used, env::kSearch, query("kettle"), results({"B0A"}), 1, 0);
    respond(used, "Any brand?", "Something quiet please.");
    call(used, env::kSearch, query("quiet kettle"), results({kSearchTarget}), 1, 1);
    EXPECT_EQ(flags_of(used), 0u);
  }
  {
    auto r = base(0);
    call(r, env::kSearch, query("quiet kettle"), results({kSearchTarget}), 1, 1);
    call(r, env::kSearch, query("kettle"), results({"B0A", kSearchTarget}), 1, 0.5);
    RecordDiagnosis d = diag(r);
    EXPECT_EQ(d.flags, kFlagBetterEarlier);
    EXPECT_EQ(d.primary, Failure::kSolved);
  }
  {
    auto r = base(1);
    call(r, env::kRecommend, sequence({kForeignAsin}), results({kRecTarget}), 1, 1);
    EXPECT_EQ(flags_of(r), kFlagUnseenHistory);
  }
  {
    auto r = base(0);
    respond(r, "What exactly?", std::string("It is ") + kSearchTarget + ", I think.");
    call(r, env::kSearch, query(kSearchTarget), results({kSearchTarget}), 1, 1);
    RecordDiagnosis d = diag(r);
    EXPECT_EQ(d.flags, kFlagUserLeaked);
    EXPECT_EQ(d.user_replies, 1);
    EXPECT_EQ(d.leaked_replies, 1);
    EXPECT_EQ(d.leak_kinds[0], 1);
    EXPECT_EQ(d.leak_evidence, kSearchTarget);
  }
  EXPECT_EQ(flag_names(kFlagStepCap | kFlagUserLeaked), (std::vector<std::string>{"step_cap", "user_leaked"}));
}

TEST(Diagnosis, LeakChecks) {
  const auto& ds = world();
  const data::Task& search = ds.tasks(data::Split::kTest)[0];
  const data::Task& rev = ds.tasks(data::Split::kTest)[2];
  EXPECT_TRUE(sim::find_leak("it's b0target01!", ds, search).asin);
  sim::Leak title = sim::find_leak("The ZEPHYR ultra-quiet, electric kettle.", ds, search);
  EXPECT_TRUE(title.title);
  EXPECT_EQ(title.evidence, "zephyr ultra quiet electric");
  EXPECT_FALSE(sim::find_leak("a quiet electric kettle", ds, search).any());  // 3 title words
  EXPECT_FALSE(sim::find_leak("###STOP###", ds, search).any());
  EXPECT_TRUE(sim::find_leak("Say it makes a wonderfully even espresso grind, ok?", ds, rev).review);
  EXPECT_FALSE(sim::find_leak("it makes a wonderfully even grind", ds, rev).any());  // 5 words
  EXPECT_FALSE(sim::find_leak("Burr Coffee Grinder is the product", ds, rev).any());  // a review task's title is known
}

TEST(Diagnosis, Attribution) {
  {  // search: "hamilton" only the history and profile explain; "quiet", "kettle" are the instruction's
    auto r = base(0);
    call(r, env::kSearch, query("Hamilton quiet kettle"), results({"B0A"}), 1, 0);
    RecordDiagnosis d = diag(r);
    ASSERT_EQ(d.attribution.size(), 1u);
    EXPECT_EQ(d.attribution[0].units, 3u);
    EXPECT_EQ(d.attribution[0].personal_units, std::vector<std::string>{"hamilton"});
    EXPECT_DOUBLE_EQ(d.attribution[0].share(), 1.0 / 3);
  }
  {  // a word the user said in the dialogue is not memory's
    auto r = base(0);
    respond(r, "Any brand?", "Hamilton, please.");
    call(r, env::kSearch, query("Hamilton quiet kettle"), results({"B0A"}), 1, 0);
    EXPECT_EQ(diag(r).attribution[0].personal, 0u);
  }
  {  // recommend: ASINs from the visible history
    auto r = base(1);
    call(r, env::kRecommend, sequence({kHistoryAsin, kForeignAsin, kHistoryAsin}), results({"B0A"}), 1, 0);
    RecordDiagnosis d = diag(r);
    EXPECT_EQ(d.attribution[0].units, 2u);
    EXPECT_EQ(d.attribution[0].personal_units, std::vector<std::string>{kHistoryAsin});
  }
  {  // review: words of the user's past reviews beyond the instruction and the product
    auto r = base(2);
    call(r, env::kAddReview, review("Precise dial, slides out easily; grinder stainless"), "{'review': ''}", 1, 0.6);
    RecordDiagnosis d = diag(r);
    // precise, dial, slides, out(stop word: no), easily, grinder (instruction), stainless (product feature)
    EXPECT_EQ(d.attribution[0].units, 6u);
    EXPECT_EQ(d.attribution[0].personal_units, (std::vector<std::string>{"precise", "dial", "slides"}));
  }
}

runner::RunManifest manifest(const std::string& track) {
  runner::RunManifest m;
  m.config_json = Json{{"agent", "heuristic"}, {"track", track}, {"user_sim", "llm"}}.dump();
  m.dataset_fingerprint = "0011223344556677";
  m.pwab_version = "0.1.0";
  return m;
}

runner::Run make_run(const test::TempDir& dir, const std::string& name, const std::vector<runner::TaskRecord>& records) {
  auto path = dir / name;
  auto run = runner::RunDirectory::open(path, manifest("multi"), false);
  for (const auto& r : records) run.append(r);
  return read_run(path);
}

TEST(Diagnosis, LeakRatesAndScoresWithoutLeakedEpisodes) {
  // Three search episodes with two replies each: one reply of one episode leaks (1 of 6 replies, 1 of 3 episodes);
  // the leaked episode is the only solved one, so without it F stays 1 and R falls from 1/3 to 0.
  std::vector<runner::TaskRecord> records;
  for (int trial = 0; trial < 3; ++trial) {
    auto r = base(0);
    r.trial = trial;
    respond(r, "Which one?", trial == 0 ? "the Zephyr Ultra Quiet Electric one" : "a quiet one");
    respond(r, "Anything else?", "no");
    call(r, env::kSearch, query("kettle"), results({trial == 0 ? kSearchTarget : "B0A"}), 1, trial == 0 ? 1 : 0);
    records.push_back(r);
  }
  test::TempDir dir;
  runner::Run run = make_run(dir, "leaky", records);
  DiagnosisOptions o;
  o.bootstrap.resamples = 200;
  Diagnosis d = diagnose(run, world(), o);
  const DiagnosisGroup& g = d.groups[0];
  EXPECT_EQ(g.replies, 6u);
  EXPECT_EQ(g.leaked_replies, 1u);
  EXPECT_EQ(g.leaked_episodes, 1u);
  EXPECT_EQ(g.episodes_with_replies, 3u);
  EXPECT_EQ(g.leak_kinds[1], 1u);
  EXPECT_DOUBLE_EQ(g.r_all.value, 1.0 / 3);
  EXPECT_DOUBLE_EQ(g.r_clean.value, 0.0);
  EXPECT_DOUBLE_EQ(g.r_diff.value, 1.0 / 3);
  EXPECT_DOUBLE_EQ(g.f_diff.value, 0.0);
  EXPECT_EQ(g.clean_outcomes, 2u);
  EXPECT_EQ(g.primary[static_cast<std::size_t>(Failure::kSolved)], 1u);
  EXPECT_EQ(g.primary[static_cast<std::size_t>(Failure::kSearchTargetAbsent)], 2u);
  // One task, so every draw is the same task: a point interval.
  EXPECT_DOUBLE_EQ(g.r_diff.ci_low, 1.0 / 3);

  Json j = Json::parse(diagnosis_json(d));
  EXPECT_DOUBLE_EQ(j["leaks"]["search"]["reply_rate"].get<double>(), 1.0 / 6);
  EXPECT_EQ(j["leaks"]["overall"]["leaked_episodes"], 1);
  EXPECT_EQ(j["categories"]["search"]["primary"]["solved"], 1);
  EXPECT_EQ(j["categories"]["search"]["flags"]["user_leaked"], 1);
  EXPECT_EQ(j["categories"]["recommend"]["records"], 0);
  EXPECT_EQ(j["user_sim"], "llm");
  std::string md = diagnosis_markdown(d);
  EXPECT_NE(md.find("| search_target_absent | 2 (67%) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Leaked replies | 1 (17%) of 6 |"), std::string::npos) << md;
  std::string lines = diagnosis_records_jsonl(d);
  EXPECT_NE(lines.find(R"("category":"solved","flags":["user_leaked"])"), std::string::npos) << lines;
}

TEST(Diagnosis, PairedMovementBetweenRuns) {
  auto search = [](double r, const char* asin, int index_shift = 0) {
    auto rec = base(0);
    rec.trial = index_shift;
    call(rec, env::kSearch, query(r > 0 ? "Hamilton kettle" : "kettle"), results({asin}), 1, r);
    return rec;
  };
  test::TempDir dir;
  runner::Run a = make_run(dir, "a", {search(0, "B0A", 0), search(0, "B0A", 1), search(1, kSearchTarget, 2)});
  runner::Run b = make_run(dir, "b", {search(1, kSearchTarget, 0), search(1, kSearchTarget, 1), search(1, kSearchTarget, 2)});
  DiagnosisOptions o;
  o.bootstrap.resamples = 100;
  DiagnosisComparison c = compare_diagnoses(diagnose(a, world(), o), diagnose(b, world(), o), o.bootstrap);
  EXPECT_EQ(c.paired, 3u);
  EXPECT_EQ(c.moves[static_cast<std::size_t>(Failure::kSearchTargetAbsent)][static_cast<std::size_t>(Failure::kSolved)], 2u);
  EXPECT_EQ(c.moves[0][0], 1u);
  EXPECT_NEAR(c.personal_share[0].a, 1.0 / 6, 1e-12);  // "kettle" 0 of 1, 0 of 1, "hamilton kettle" 1 of 2
  EXPECT_NEAR(c.personal_share[0].b, 0.5, 1e-12);
  std::string text = format_diagnosis_comparison(c, "A", "B");
  EXPECT_NE(text.find("2  search_target_absent → solved"), std::string::npos) << text;
  Json j = Json::parse(diagnosis_comparison_json(c));
  EXPECT_EQ(j["moves"][0]["count"], 2);
  EXPECT_EQ(j["unchanged"], 1);
}

TEST(Diagnosis, UnknownTaskIsADataError) {
  auto r = base(0);
  r.task_key = "test/99";
  EXPECT_THROW(diag(r), DataError);
  r.task_key = "nonsense";
  EXPECT_THROW(diag(r), DataError);
}

}  // namespace
}  // namespace pwab::report
