// The load generator of ws_load.h: asio + Beast WebSocket clients on one thread, replies read with simdjson.
#include "serve/ws_load.h"

#include <pthread.h>
#include <simdjson.h>

#include <utility>  // before asio: Boost 1.74's awaitable.hpp uses std::exchange without including it

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <cmath>
#include <memory>
#include <random>

namespace pwab::bench {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = boost::beast::websocket;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

struct Shared {
  const std::vector<ScriptedEpisode>& episodes;
  LoadOptions options;
  LoadResult result;
  std::size_t next = 0;  // the next episode to hand out
  int connected = 0, finished = 0;
  Clock::time_point start;
  std::function<void()> all_connected;
  std::mt19937_64 rng{12345};
  simdjson::ondemand::parser parser;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(net::io_context& ioc, Shared& shared) : ws_(ioc), timer_(ioc), shared_(shared) {}

  void connect() {
    tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(shared_.options.port));
    beast::get_lowest_layer(ws_).async_connect(endpoint, [self = shared_from_this()](beast::error_code ec) {
      if (ec) return self->fail("connect: " + ec.message());
      beast::get_lowest_layer(self->ws_).set_option(tcp::no_delay(true));
      self->ws_.read_message_max(64 << 20);
      self->in_.reserve(1 << 16);  // a whole answer per read, not a few KiB at a time
      self->ws_.async_handshake("127.0.0.1", "/ws", [self](beast::error_code ec2) {
        if (ec2) return self->fail("handshake: " + ec2.message());
        self->settled();
      });
    });
  }

  void begin() {
    if (!finished_) next_episode();
  }

 private:
  void next_episode() {
    if (shared_.next >= shared_.episodes.size()) return done();
    episode_ = &shared_.episodes[shared_.next++];
    step_ = 0;
    send(episode_->reset);
  }

  void send(const std::string& text) {
    sent_ = Clock::now();
    ws_.text(true);
    ws_.async_write(net::buffer(text), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->fail("write: " + ec.message());
      self->ws_.async_read(self->in_, [self](beast::error_code ec2, std::size_t) {
        if (ec2) return self->fail("read: " + ec2.message());
        self->answered();
      });
    });
  }

  void answered() {
    const double latency = std::chrono::duration<double>(Clock::now() - sent_).count();
    const bool was_reset = step_ == 0;
    (was_reset ? shared_.result.reset_latency_s : shared_.result.step_latency_s).push_back(latency);
    if (!was_reset) shared_.result.step_done_at_s.push_back(std::chrono::duration<double>(Clock::now() - shared_.start).count());
    (was_reset ? shared_.result.resets : shared_.result.steps)++;
    // Read in place: simdjson wants padding after the text, which the buffer makes room for (no copy of the
    // ~12 KB observations), and the fields in the order the server writes them (keys sorted).
    const std::size_t size = in_.size();
    in_.prepare(simdjson::SIMDJSON_PADDING);
    const char* bytes = static_cast<const char*>(in_.data().data());
    simdjson::padded_string_view text(bytes, size, size + simdjson::SIMDJSON_PADDING);
    bool done = false;
    double reward = 0;
    try {
      auto doc = shared_.parser.iterate(text);
      auto d = doc["data"];
      done = d["done"].get_bool().value();
      auto r = d["reward"];
      if (!r.is_null()) reward = r.get_double().value();
      if (doc["type"].get_string().value() != "observation") throw simdjson::simdjson_error(simdjson::INCORRECT_TYPE);
    } catch (const simdjson::simdjson_error& e) {
      std::string shown(bytes, std::min<std::size_t>(300, size));
      in_.consume(in_.size());
      return fail(std::string("unreadable or error answer (") + e.what() + "): " + shown);
    }
    in_.consume(in_.size());
    const std::size_t index = step_++;
    if (index == episode_->steps.size()) {  // the last step's answer
      if (!done || std::abs(reward - episode_->expected_reward) > 1e-6) ++shared_.result.wrong_rewards;
      ++shared_.result.episodes;
      return next_episode();
    }
    if (done) {  // ended before its script did
      ++shared_.result.wrong_rewards;
      ++shared_.result.episodes;
      return next_episode();
    }
    think_then([self = shared_from_this(), index] { self->send(self->episode_->steps[index]); });
  }

  template <class F>
  void think_then(F f) {
    const double mean = shared_.options.think_mean_s;
    if (mean <= 0) return f();
    std::uniform_real_distribution<double> wait(0, 2 * mean);
    timer_.expires_after(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait(shared_.rng))));
    timer_.async_wait([f = std::move(f)](beast::error_code) { f(); });
  }

  //! Connected, or failed to: once every session is one or the other, the sessions begin.
  void settled() {
    if (connecting_ && ++shared_.connected == shared_.options.sessions) shared_.all_connected();
    connecting_ = false;
  }

  void fail(std::string what) {
    if (shared_.result.failures++ == 0) shared_.result.first_failure = std::move(what);
    done();
    settled();
  }

  void done() {
    if (finished_) return;
    finished_ = true;
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).close(ignored);
    ++shared_.finished;
  }

  websocket::stream<tcp::socket> ws_;
  net::steady_timer timer_;
  Shared& shared_;
  beast::flat_buffer in_;
  const ScriptedEpisode* episode_ = nullptr;
  std::size_t step_ = 0;
  Clock::time_point sent_;
  bool finished_ = false;
  bool connecting_ = true;
};

}  // namespace

LoadResult run_ws_load(const std::vector<ScriptedEpisode>& episodes, const LoadOptions& options) {
  net::io_context ioc(1);
  Shared shared{episodes, options, {}};
  std::vector<std::shared_ptr<Session>> sessions;
  sessions.reserve(static_cast<std::size_t>(options.sessions));
  shared.all_connected = [&] {
    shared.start = Clock::now();
    for (auto& s : sessions) s->begin();
  };
  for (int i = 0; i < options.sessions; ++i) {
    sessions.push_back(std::make_shared<Session>(ioc, shared));
    sessions.back()->connect();
  }
  ::pthread_setname_np(::pthread_self(), "bench-client");
  ioc.run();
  ::pthread_setname_np(::pthread_self(), "pwab-bench");
  shared.result.seconds = std::chrono::duration<double>(Clock::now() - shared.start).count();
  return std::move(shared.result);
}

double steady_steps_per_s(const LoadResult& r) {
  const auto& t = r.step_done_at_s;  // answered in order on the one client thread: sorted
  if (t.size() < 10) return 0;
  const std::size_t lo = t.size() / 10, hi = t.size() * 9 / 10;
  return t[hi] > t[lo] ? static_cast<double>(hi - lo) / (t[hi] - t[lo]) : 0;
}

std::vector<double> steady_step_latencies(const LoadResult& r) {
  const auto& t = r.step_done_at_s;
  if (t.size() < 10) return r.step_latency_s;
  return {r.step_latency_s.begin() + static_cast<std::ptrdiff_t>(t.size() / 10),
          r.step_latency_s.begin() + static_cast<std::ptrdiff_t>(t.size() * 9 / 10)};
}

}  // namespace pwab::bench
