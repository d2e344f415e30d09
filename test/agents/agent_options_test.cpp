// OptionReader, the parser behind every agent's options: defaults when a key is absent, integer and number
// ranges, booleans, one-of choices, paths, the memory flags, and the final check that names an unknown key with
// the agent's keys in the order they were declared. Then the agents' own parsers through it: the run's step cap
// as max_steps' default, function_file winning over function_model, and each agent's list of keys.
#include "agents/agent_options.h"

#include <gtest/gtest.h>

#include <functional>

#include "agents/fc_agent.h"
#include "agents/heuristic_agent.h"
#include "agents/interec_agent.h"
#include "agents/puma_agent.h"
#include "agents/react_agent.h"
#include "agents/recmind_agent.h"
#include "agents/remote_agent.h"
#include "core/error.h"

namespace pwab::agents {
namespace {

AgentOptions with(std::map<std::string, std::string> extra) {
  AgentOptions o;
  o.extra = std::move(extra);
  return o;
}

//! The message of the UsageError `f` throws; a test failure when it throws none.
std::string usage_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UsageError";
  return {};
}

TEST(OptionReader, AbsentKeysGiveTheDefaults) {
  AgentOptions none;
  OptionReader r("test", none);
  EXPECT_EQ(r.integer("n", 7, 1, 10), 7);
  EXPECT_EQ(r.number("x", 2.5, 0, 10), 2.5);
  EXPECT_TRUE(r.flag("b", true));
  EXPECT_FALSE(r.flag("c", false));
  EXPECT_EQ(r.choice("colour", 2, {{"red", 0}, {"green", 1}}), 2);
  EXPECT_EQ(r.relevance(RelevanceText::kCompact), RelevanceText::kCompact);
  EXPECT_EQ(r.function_model(FunctionModel::kPuma), FunctionModel::kPuma);
  EXPECT_EQ(r.path("file"), std::nullopt);
  EXPECT_EQ(r.text("name"), std::nullopt);
  EXPECT_EQ(r.memory({"taskspec", "none"}), "taskspec");  // "" is the agent's default, the first name
  EXPECT_EQ(r.memory_strategy(), MemoryStrategy::kNone);
  EXPECT_EQ(r.memory_length(100), 100);
  EXPECT_NO_THROW(r.no_memory("why"));
  EXPECT_NO_THROW(r.finish());
  EXPECT_EQ(r.who(), "test agent");
}

TEST(OptionReader, Integers) {
  auto read = [](std::string value, int lo, int hi) {
    AgentOptions o = with({{"n", value}});
    return OptionReader("test", o).integer("n", -1, lo, hi);
  };
  EXPECT_EQ(read("1", 1, 10), 1);
  EXPECT_EQ(read("10", 1, 10), 10);
  EXPECT_EQ(read("0", 0, 10), 0);
  EXPECT_EQ(read("1000000", 1, kMaxOptionCount), 1000000);
  EXPECT_EQ(usage_error([&] { read("0", 1, kMaxOptionCount); }), "test agent: n takes an integer ≥ 1, not '0'");
  EXPECT_EQ(usage_error([&] { read("0", 1, 10); }), "test agent: n takes an integer in [1, 10], not '0'");
  EXPECT_EQ(usage_error([&] { read("11", 1, 10); }), "test agent: n takes an integer in [1, 10], not '11'");
  for (std::string bad : {"", "3x", "2.5", "ten", "99999999999999999999"})
    EXPECT_NE(usage_error([&] { read(bad, 0, 10); }).find("takes an integer"), std::string::npos) << bad;
}

TEST(OptionReader, Numbers) {
  auto read = [](std::string value) {
    AgentOptions o = with({{"timeout", value}});
    return OptionReader("remote", o).number("timeout", 300, 0.001, 86400);
  };
  EXPECT_EQ(read("2.5"), 2.5);
  EXPECT_EQ(read("0.001"), 0.001);
  EXPECT_EQ(read("86400"), 86400);
  EXPECT_EQ(usage_error([&] { read("0"); }), "remote agent: timeout takes a number in [0.001, 86400], not '0'");
  for (std::string bad : {"", "soon", "1s", "inf", "nan", "86401"})
    EXPECT_NE(usage_error([&] { read(bad); }).find("takes a number"), std::string::npos) << bad;
}

TEST(OptionReader, Booleans) {
  for (auto [value, expected] : std::vector<std::pair<std::string, bool>>{
           {"true", true}, {"1", true}, {"false", false}, {"0", false}}) {
    AgentOptions o = with({{"b", value}});
    EXPECT_EQ(OptionReader("test", o).flag("b", !expected), expected) << value;
  }
  for (std::string bad : {"", "yes", "TRUE", "2"}) {
    AgentOptions o = with({{"b", bad}});
    EXPECT_EQ(usage_error([&] { OptionReader("test", o).flag("b", false); }),
              "test agent: b takes true or false, not '" + bad + "'");
  }
}

TEST(OptionReader, ChoicesListTheirValuesInOrder) {
  auto read = [](std::string value) {
    AgentOptions o = with({{"colour", value}});
    return OptionReader("test", o).choice("colour", 0, {{"red", 1}, {"green", 2}, {"blue", 3}});
  };
  EXPECT_EQ(read("red"), 1);
  EXPECT_EQ(read("blue"), 3);
  EXPECT_EQ(usage_error([&] { read("Red"); }), "test agent: colour takes red, green or blue, not 'Red'");

  AgentOptions o = with({{"relevance", "partial"}});
  EXPECT_EQ(usage_error([&] { OptionReader("fc", o).relevance(RelevanceText::kFull); }),
            "fc agent: relevance takes full or compact, not 'partial'");
  o = with({{"relevance", "compact"}});
  EXPECT_EQ(OptionReader("fc", o).relevance(RelevanceText::kFull), RelevanceText::kCompact);
}

TEST(OptionReader, PathsAndText) {
  AgentOptions o = with({{"file", "a/b.json"}, {"empty", ""}, {"name", ""}});
  OptionReader r("test", o);
  EXPECT_EQ(r.path("file"), "a/b.json");
  EXPECT_EQ(usage_error([&] { r.path("empty"); }), "test agent: empty needs a path");
  EXPECT_EQ(r.text("name"), "");  // text may be empty
}

TEST(OptionReader, FunctionFileWinsOverFunctionModel) {
  AgentOptions o = with({{"function_model", "keywords"}, {"function_file", "fn.json"}});
  OptionReader r("fc", o);
  FunctionModel model = FunctionModel::kFastText;
  std::filesystem::path file;
  r.function_model_or_file(model, file);
  EXPECT_EQ(model, FunctionModel::kFile);
  EXPECT_EQ(file, "fn.json");

  o = with({{"function_model", "gpt"}});
  EXPECT_NE(usage_error([&] { OptionReader("puma", o).function_model(FunctionModel::kPuma); })
                .find("puma agent: function_model takes fasttext, keywords, llm or puma"),
            std::string::npos);
  o = with({{"function_file", ""}});
  EXPECT_EQ(usage_error([&] { OptionReader("fc", o).function_model_or_file(model, file); }),
            "fc agent: function_file needs a path");
}

TEST(OptionReader, MemoryFlags) {
  AgentOptions o;
  o.memory = "none";
  EXPECT_EQ(OptionReader("heuristic", o).memory({"taskspec", "none"}), "none");
  o.memory = "relevant";
  EXPECT_EQ(OptionReader("fc", o).memory_strategy(), MemoryStrategy::kRelevant);
  EXPECT_EQ(usage_error([&] { OptionReader("heuristic", o).memory({"taskspec", "none"}); }),
            "heuristic agent: unknown memory 'relevant' (available: taskspec, none)");
  o.memory = "recmind";
  EXPECT_EQ(usage_error([&] { OptionReader("fc", o).memory_strategy(); }),
            "fc agent: unknown memory 'recmind' (available: none, random, last, relevant, taskspec)");
  EXPECT_EQ(usage_error([&] { OptionReader("remote", o).no_memory("it reads everything"); }),
            "remote agent: takes no --memory or --memory-length (it reads everything)");

  AgentOptions k;
  k.memory_length = 5;
  EXPECT_EQ(OptionReader("fc", k).memory_length(10), 5);
  EXPECT_THROW(OptionReader("remote", k).no_memory("x"), UsageError);
  k.memory_length = 0;
  EXPECT_EQ(usage_error([&] { OptionReader("puma", k).memory_length(100); }),
            "puma agent: memory length must be at least 1");
}

TEST(OptionReader, UnknownKeysNameTheDeclaredOnes) {
  AgentOptions o = with({{"zeta", "1"}, {"alpha", "2"}, {"colour", "red"}});
  OptionReader r("test", o);
  EXPECT_EQ(r.integer("zeta", 0, 0, 9), 1);
  r.flag("verbose", false);
  r.integer("zeta", 0, 0, 9);  // asked twice, listed once
  r.text("alpha");
  EXPECT_EQ(usage_error([&] { r.finish(); }), "test agent: unknown option 'colour' (available: zeta, verbose, alpha)");
  r.choice("colour", 0, {{"red", 1}});
  EXPECT_NO_THROW(r.finish());

  AgentOptions stray = with({{"x", "1"}});
  EXPECT_EQ(usage_error([&] { OptionReader("test", stray).finish(); }),
            "test agent: unknown option 'x' (available: none)");
}

// ---- the agents' parsers, built on the reader ----

TEST(AgentOptionParsers, MaxStepsDefaultsToTheRunsCap) {
  AgentOptions none;
  EXPECT_EQ(parse_fc_options(none).max_steps, 10);
  EXPECT_EQ(parse_fc_options(none, 25).max_steps, 25);
  EXPECT_EQ(parse_heuristic_options(none, 25).max_steps, 25);
  EXPECT_EQ(parse_react_options(none, true, 25).max_steps, 25);
  EXPECT_EQ(parse_recmind_options(none, 25).max_steps, 25);
  EXPECT_EQ(parse_interec_options(none, 25).max_steps, 25);
  EXPECT_EQ(parse_remote_options(with({{"url", "http://h/"}}), 25).max_steps, 25);
  // An explicit max_steps wins over the run's cap.
  AgentOptions three = with({{"max_steps", "3"}});
  EXPECT_EQ(parse_fc_options(three, 25).max_steps, 3);
  EXPECT_EQ(parse_heuristic_options(three, 25).max_steps, 3);
  EXPECT_EQ(parse_react_options(three, false, 25).max_steps, 3);
  EXPECT_EQ(parse_recmind_options(three, 25).max_steps, 3);
  EXPECT_EQ(parse_interec_options(three, 25).max_steps, 3);
}

TEST(AgentOptionParsers, FunctionFileWinsInFcAndPuma) {
  AgentOptions o = with({{"function_file", "fn.json"}, {"function_model", "keywords"}});
  o.memory = "taskspec";
  FcOptions fc = parse_fc_options(o);
  EXPECT_EQ(fc.function_model, FunctionModel::kFile);
  EXPECT_EQ(fc.function_file, "fn.json");
  PumaOptions puma = parse_puma_options(o);
  EXPECT_EQ(puma.function_model, FunctionModel::kFile);
  EXPECT_EQ(puma.function_file, "fn.json");
}

TEST(AgentOptionParsers, EachAgentListsItsKeys) {
  AgentOptions bad = with({{"url", "http://h/"}, {"nope", "1"}});
  auto available = [](const std::string& message) { return message.substr(message.find("(available: ")); };
  EXPECT_EQ(available(usage_error([&] { parse_fc_options(bad); })),
            "(available: relevance, function_model, function_file, max_steps)");
  EXPECT_EQ(available(usage_error([&] { parse_react_options(bad, false); })),
            "(available: relevance, function_model, max_steps, parse_retries)");
  EXPECT_EQ(available(usage_error([&] { parse_recmind_options(bad); })), "(available: max_steps)");
  EXPECT_EQ(available(usage_error([&] { parse_interec_options(bad); })),
            "(available: interec_init, interec_memory, max_steps)");
  EXPECT_EQ(available(usage_error([&] { parse_puma_options(bad); })),
            "(available: memory_tokens, recommend_memory, recommend_memory_tokens, relevance, function_model, "
            "function_file, max_new_tokens, tokenizer, rollouts, copy_search)");
  EXPECT_EQ(available(usage_error([&] { parse_remote_options(bad); })),
            "(available: url, name, token, product_details, timeout, retries, retry_delay, max_in_flight, max_steps)");
  EXPECT_EQ(available(usage_error([&] { parse_heuristic_options(bad); })),
            "(available: relevance, max_steps, review_from_memory, recommend_questions, search_memory_brand, "
            "search_brand_votes, search_brand_min_overlap, search_brand_min_count, recommend_same_category, "
            "recommend_max_items, review_own_phrasing, review_habits, review_verdict)");
  EXPECT_EQ(usage_error([&] { parse_react_options(with({{"parse_retries", "11"}}), true); }),
            "reflection agent: parse_retries takes an integer in [0, 10], not '11'");
}

}  // namespace
}  // namespace pwab::agents
