// src/agents/agent_options.h: the one reader of AgentOptions (`--memory`, `--memory-length`, `--agent-opt K=V`)
// that every agent factory parses its options with, so all agents accept values and word errors alike.
//
// An agent asks for each option it takes, in the order it documents them, passing its default; the reader
// returns the value given or that default, and throws a UsageError "<agent> agent: <what>" for a malformed one.
// It remembers every key it was asked about: finish() then rejects any other `--agent-opt` key, listing the
// agent's keys in the order they were asked for.
#pragma once
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agents/agent.h"
#include "agents/function_predictor.h"
#include "agents/memory.h"
#include "agents/task_memory.h"
#include "core/error.h"

namespace pwab::agents {

//! The upper bound of a count option that has no natural one (steps, questions, tokens).
inline constexpr int kMaxOptionCount = 1000000;

class OptionReader {
 public:
  //! `agent` names the agent in messages ("fc" gives "fc agent: ..."); `options` must outlive the reader.
  OptionReader(std::string_view agent, const AgentOptions& options);

  //! "<agent> agent", the prefix of every message.
  const std::string& who() const { return who_; }
  //! A UsageError whose message is "<agent> agent: " + `message`.
  UsageError error(std::string_view message) const;

  // ---- the memory flags ----

  //! `--memory`: one of `names`, the first being the agent's default (also what "" means). Returns the name.
  std::string_view memory(std::initializer_list<std::string_view> names) const;
  //! `--memory` as one of the baseline strategies (none, the default, random, last, relevant, taskspec).
  MemoryStrategy memory_strategy() const;
  //! `--memory-length`: at least 1; `fallback` when unset.
  int memory_length(int fallback) const;
  //! For an agent that takes neither flag: a UsageError when either is set, saying `why` in parentheses.
  void no_memory(std::string_view why) const;

  // ---- `--agent-opt` keys: each returns `fallback` when the key is absent ----

  //! A decimal integer in [lo, hi] (hi = kMaxOptionCount: messages say "≥ lo").
  int integer(std::string_view key, int fallback, int lo, int hi);
  //! A finite number in [lo, hi].
  double number(std::string_view key, double fallback, double lo, double hi);
  //! true / 1 or false / 0.
  bool flag(std::string_view key, bool fallback);
  //! One of the named values, listed in messages in the order given.
  template <class T>
  T choice(std::string_view key, T fallback, std::initializer_list<std::pair<std::string_view, T>> values);
  //! `relevance`: full or compact (what relevant memory compares the instruction with).
  RelevanceText relevance(RelevanceText fallback);
  //! `function_model` (the names parse_function_model takes).
  FunctionModel function_model(FunctionModel fallback);
  //! `function_model`, then `function_file=PATH`, which wins over it whatever the order they came in: `model`
  //! becomes kFile and `file` the path.
  void function_model_or_file(FunctionModel& model, std::filesystem::path& file);
  //! A non-empty path; nullopt when absent.
  std::optional<std::string> path(std::string_view key);
  //! Any text, the empty text included; nullopt when absent.
  std::optional<std::string> text(std::string_view key);

  //! A UsageError for the first key no getter asked about: "unknown option 'k' (available: a, b, ...)".
  void finish() const;

 private:
  //! The value of `key`, or null; records the key either way.
  const std::string* find(std::string_view key);
  //! Index into `names` of the value of `key`; nullopt when absent; a UsageError "key takes a, b or c".
  std::optional<std::size_t> choice_index(std::string_view key, const std::vector<std::string_view>& names);

  std::string who_;
  const AgentOptions& options_;
  std::vector<std::string> asked_;  // in the order asked, each once
};

template <class T>
T OptionReader::choice(std::string_view key, T fallback,
                       std::initializer_list<std::pair<std::string_view, T>> values) {
  std::vector<std::string_view> names;
  for (const auto& v : values) names.push_back(v.first);
  std::optional<std::size_t> i = choice_index(key, names);
  return i ? (values.begin() + *i)->second : fallback;
}

}  // namespace pwab::agents
