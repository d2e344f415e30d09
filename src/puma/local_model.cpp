// The local completions backend of `pwab run --agent puma --local-model` (model.h local_chat_model): raw-text
// requests answered by a PumaModel in this process.
#include <mutex>

#include "core/error.h"
#include "puma/model.h"

namespace pwab::puma {

namespace {

class LocalChatModel final : public llm::ChatModel {
 public:
  LocalChatModel(std::shared_ptr<PumaModel> model, std::string name) : model_(std::move(model)), name_(std::move(name)) {}

  llm::ChatResponse chat(const llm::ChatRequest& request) override {
    if (!request.prompt)
      throw UsageError("the local PUMA model answers raw-text completions only (the puma agent's requests), not "
                       "chat messages");
    GenerateConfig g;
    g.max_new_tokens = request.max_tokens.value_or(256);
    double temperature = request.temperature.value_or(0.0);
    g.sample = temperature > 0;
    g.temperature = g.sample ? temperature : 1.0;
    g.seed = static_cast<uint64_t>(request.seed.value_or(0)) + static_cast<uint64_t>(request.sample);
    g.batch_size = 1;
    g.top_logprobs = request.return_tokens ? request.top_logprobs : 0;
    std::lock_guard<std::mutex> lock(mu_);
    llm::ChatResponse r;
    r.finish_reason = "stop";
    r.model = request.model;
    r.attempts = 1;
    if (request.return_tokens) {
      // The ids the model read and drew, with the log-probability of each draw (the RL engine's view).
      llm::TokenTrace trace;
      trace.prompt_ids = model_->encode_prompt(*request.prompt);
      SampledCompletion c = model_->complete_ids({trace.prompt_ids}, g).at(0);
      trace.completion_ids = std::move(c.ids);
      trace.logprobs = std::move(c.logprobs);
      trace.top_logprobs = std::move(c.top_logprobs);
      r.message = llm::Message::assistant(std::move(c.text));
      r.finish_reason = c.eos ? "stop" : "length";
      r.prompt_tokens = static_cast<int64_t>(trace.prompt_ids.size());
      r.completion_tokens = static_cast<int64_t>(trace.completion_ids.size());
      r.tokens = std::move(trace);
      return r;
    }
    r.message = llm::Message::assistant(model_->generate({*request.prompt}, g).at(0).at(0));
    r.prompt_tokens = model_->last_prompt_tokens();
    r.completion_tokens = model_->last_generated_tokens();
    return r;
  }
  std::string describe() const override { return "local " + name_ + " (" + model_->describe() + ")"; }

 private:
  std::shared_ptr<PumaModel> model_;
  std::string name_;
  std::mutex mu_;
};

}  // namespace

std::unique_ptr<llm::ChatModel> local_chat_model(std::shared_ptr<PumaModel> model, std::string name) {
  if (!model) throw UsageError("local_chat_model: no model");
  return std::make_unique<LocalChatModel>(std::move(model), std::move(name));
}

}  // namespace pwab::puma
