// The human user (`--user-sim human`) on string streams: the banner, prompts, empty lines asked again, /stop and
// the end of input as the ###STOP### sentinel, and the sentinel for every later reply. The terminal itself is
// tested through tmux (test/cli/human_user_test.sh).
#include "sim/human_user.h"

#include <gtest/gtest.h>

#include <sstream>

#include "data/synth.h"

namespace pwab::sim {
namespace {

const data::Dataset& mini() {
  static const data::Dataset ds = data::synthesize(data::SynthOptions{});
  return ds;
}

TEST(HumanUser, ShowsTheTaskAsksAndRepliesWithWhatIsTyped) {
  const data::Task& task = mini().tasks(data::Split::kTest).at(2);
  std::istringstream in("\n   \nA red one, please.  \n/stop\nnever read\n");
  std::ostringstream out;
  HumanUser user(mini(), task, in, out);
  EXPECT_NE(out.str().find("test/2"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find(task.instruction), std::string::npos) << out.str();
  EXPECT_EQ(user.reply("Which colour?"), "A red one, please.");  // blank lines are asked again
  EXPECT_NE(out.str().find("agent: Which colour?"), std::string::npos);
  EXPECT_EQ(out.str().find("you> ") != std::string::npos, true);
  user.note_attempt("search_product_by_query", {1, 0.5});
  EXPECT_NE(out.str().find("[the agent called search_product_by_query]"), std::string::npos);
  EXPECT_EQ(user.reply("Anything else?"), "###STOP###");
  EXPECT_EQ(user.reply("Still there?"), "###STOP###");  // no more prompts once stopped
  EXPECT_EQ(out.str().find("Still there?"), std::string::npos);
}

TEST(HumanUser, TheEndOfInputIsTheStopSentinel) {
  std::istringstream in("");
  std::ostringstream out;
  HumanUser user(mini(), mini().tasks(data::Split::kTest).at(0), in, out);
  EXPECT_EQ(user.reply("Hello?"), "###STOP###");
  EXPECT_EQ(user.reply("Hello again?"), "###STOP###");
}

}  // namespace
}  // namespace pwab::sim
