#include "env/environment.h"

#include <atomic>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/json_depth.h"
#include "core/py_format.h"
#include "data/render.h"
#include "env/tools.h"

namespace pwab::env {

std::string ToolOutput::observation() const {
  switch (kind) {
    case Kind::kResults: return py::list_repr(results);
    case Kind::kReview: return "{'review': " + py::str_repr(text) + "}";
    case Kind::kText:
    case Kind::kError: return text;
  }
  return text;
}

double rank_score(const std::vector<std::string>& results, std::string_view target_asin) {
  if (target_asin.empty()) return 0;
  for (std::size_t i = 0; i < results.size(); ++i)
    if (results[i].find(target_asin) != std::string::npos)
      return 1.0 - static_cast<double>(i) / static_cast<double>(results.size());
  return 0;
}

Reward score_attempt(const data::Dataset& ds, const data::Task& task, std::string_view function,
                     const ToolOutput& output, const embed::Embedder& embedder) {
  Reward r;
  if (output.kind == ToolOutput::Kind::kError) return r;
  r.function_acc = function == task_function(task.type) ? 1.0 : 0.0;
  // Like the original, result accuracy is computed whatever the function; aggregation ignores wrong-function
  // attempts (docs/decisions.md §3.1, §3.2).
  if (output.kind == ToolOutput::Kind::kResults) {
    r.result_acc = rank_score(output.results, ds.product(task.target_product).parent_asin);
  } else if (output.kind == ToolOutput::Kind::kReview && task.type == data::TaskType::kReview) {
    r.result_acc = embedder.similarity(task.target_review.text, output.text);
  }
  return r;
}

namespace {

using Json = nlohmann::json;

ToolOutput error(std::string message) { return {ToolOutput::Kind::kError, "Error: " + std::move(message), {}}; }

const char* json_type_name(const Json& j) {
  switch (j.type()) {
    case Json::value_t::string: return "a string";
    case Json::value_t::array: return "a list";
    case Json::value_t::object: return "an object";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::null: return "null";
    case Json::value_t::number_float: return "a float";
    default: return "an integer";
  }
}

// Checks the arguments against the tool's schema; returns an error message, or "" if they are valid.
std::string validate_arguments(const ToolSpec& tool, const Json& args) {
  std::string fn = std::string(tool.name) + "()";
  if (!args.is_object()) return fn + " takes its arguments as a JSON object, got " + json_type_name(args);
  for (const auto& [key, value] : args.items()) {
    bool known = false;
    for (const auto& p : tool.params) known |= p.name == key;
    if (!known) return fn + " got an unexpected argument '" + key + "'";
  }
  for (const auto& p : tool.params) {
    auto it = args.find(std::string(p.name));
    if (it == args.end()) return fn + " is missing the required argument '" + std::string(p.name) + "'";
    if (p.type == ParamType::kString && !it->is_string())
      return fn + " argument '" + std::string(p.name) + "' must be a string, got " + json_type_name(*it);
    if (p.type == ParamType::kStringArray) {
      if (!it->is_array())
        return fn + " argument '" + std::string(p.name) + "' must be a list of strings, got " + json_type_name(*it);
      for (std::size_t i = 0; i < it->size(); ++i)
        if (!(*it)[i].is_string())
          return fn + " argument '" + std::string(p.name) + "' must be a list of strings; element " +
                 std::to_string(i) + " is " + json_type_name((*it)[i]);
    }
  }
  return "";
}

}  // namespace

struct Environment::ProductBlocks {
  explicit ProductBlocks(std::size_t n) : made(n) {}
  ~ProductBlocks() {
    for (auto& block : made) delete block.load();
  }
  std::vector<std::atomic<const std::string*>> made;  // null until first rendered; then never changed
};

Environment::Environment(const data::Dataset& ds, const SearchBackend* search, const RecommendBackend* recommend,
                         const embed::Embedder& embedder, EnvironmentOptions options)
    : ds_(ds),
      search_(search),
      recommend_(recommend),
      embedder_(embedder),
      options_(options),
      blocks_(std::make_shared<ProductBlocks>(ds.products().size())) {}

const std::string& Environment::product_block(data::ProductId id) const {
  if (id >= blocks_->made.size()) {  // a product added to the dataset after the environment was made
    thread_local std::string block;
    block = data::product_fields_block(ds_.product(id));
    return block;
  }
  std::atomic<const std::string*>& slot = blocks_->made[id];
  if (const std::string* block = slot.load(std::memory_order_acquire)) return *block;
  auto* fresh = new std::string(data::product_fields_block(ds_.product(id)));
  const std::string* expected = nullptr;
  if (slot.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) return *fresh;
  delete fresh;  // another thread rendered it first: the same text
  return *expected;
}

ToolOutput Environment::call_tool(std::string_view name, std::string_view arguments_json) const {
  const ToolSpec* tool = find_tool(name);
  if (!tool) return {ToolOutput::Kind::kText, "Unknown action " + std::string(name), {}};
  Json args = parse_json_or_discarded(arguments_json);
  if (args.is_discarded()) return error(std::string(name) + "() arguments are not valid JSON");
  if (std::string problem = validate_arguments(*tool, args); !problem.empty()) return error(problem);

  if (name == kSearch) return run_search(args["query"].get<std::string>());
  if (name == kRecommend) return run_recommend(args["product_sequence"].get<std::vector<std::string>>());
  if (name == kAddReview) {
    std::string review = args["review"].get<std::string>();
    return {ToolOutput::Kind::kReview, review.empty() ? "No review provided." : review, {}};
  }
  if (name == kProductDetails) return run_details(args["product_asin"].get<std::string>());
  return {ToolOutput::Kind::kText, "###STOP###", {}};  // stop
}

ToolOutput Environment::run_search(const std::string& query) const {
  if (!search_) return error("product search is not configured in this environment");
  return render_ranked(search_->search(query, options_.top_k), "Product {}: \n");
}

ToolOutput Environment::run_recommend(const std::vector<std::string>& sequence) const {
  if (!recommend_) return error("the recommender is not configured in this environment");
  return render_ranked(recommend_->recommend(sequence, options_.top_k), "\nProduct {}:\n");
}

ToolOutput Environment::render_ranked(const std::vector<std::string>& asins, std::string_view header) const {
  // The two tools lay results out slightly differently (docs/decisions.md §2.3.1, §2.3.2): `header` holds the layout,
  // with {} standing for the 0-based rank.
  auto brace = header.find("{}");
  ToolOutput out{ToolOutput::Kind::kResults, {}, {}};
  for (std::size_t i = 0; i < asins.size(); ++i) {
    auto id = ds_.find_product(asins[i]);
    if (!id) return error("product '" + asins[i] + "' is not in the catalogue (is the index or checkpoint out of date?)");
    const std::string& block = product_block(*id);
    std::string result;
    result.reserve(header.size() + block.size() + 8);
    result.append(header.substr(0, brace)).append(std::to_string(i)).append(header.substr(brace + 2));
    result.append(block).append("\n");
    out.results.push_back(std::move(result));
  }
  return out;
}

ToolOutput Environment::run_details(const std::string& asin) const {
  auto id = ds_.find_product(asin);
  if (!id) return {ToolOutput::Kind::kText, "Product not found.", {}};
  return {ToolOutput::Kind::kText, "\nProduct Details:\n" + product_block(*id) + "\n", {}};
}

std::string initial_observation(const data::Dataset& ds, const data::Task& task) {
  std::string obs = "USER " + ds.user(task.user).id + ": " + task.instruction;
  if (task.type == data::TaskType::kReview)
    obs += "\nThe product details follow: \n" + data::product_fields_block(ds.product(task.target_product)) + "\n";
  return obs;
}

Session::Session(const Environment& env, const data::Task& task, UserChannel* user)
    : env_(env), task_(task), user_(user) {}

std::string Session::reset() {
  actions_.clear();
  return initial_observation(env_.dataset(), task_);
}

StepResult Session::step(const Action& action) {
  StepResult r;
  if (action.name == kRespond) {
    Json args = parse_json_or_discarded(action.arguments_json);
    if (args.is_discarded() || !args.is_object() || !args.contains("content") || !args["content"].is_string()) {
      r.observation = "Error: respond takes {\"content\": <message to the user>}";
    } else if (!user_) {
      r.observation = "Error: ###STOP###";  // single-turn: nobody to talk to, the episode ends unscored
      r.done = true;
    } else {
      r.observation = user_->reply(args["content"].get<std::string>());
      r.done = r.observation == "Error: ###STOP###";
    }
  } else {
    ToolOutput out = env_.call_tool(action.name, action.arguments_json);
    r.observation = out.observation();
    const ToolSpec* tool = find_tool(action.name);
    r.done = tool && tool->terminal;
    if (r.done && out.kind != ToolOutput::Kind::kError) {
      r.reward = score_attempt(env_.dataset(), task_, action.name, out, env_.embedder());
      r.scored = true;
    }
  }
  actions_.push_back({action, r.observation, r.reward, r.done, r.scored});
  return r;
}

}  // namespace pwab::env
