"""An example external agent for `pwab run --agent remote` (protocol pwab-agent/1, docs/agents/remote.md).

Python 3 standard library only. It listens on HTTP; pwab POSTs one JSON request per step (the task, the tools,
the user's visible history, the conversation so far) and this server answers the next action:
{"name": <tool, "respond" or "stop">, "arguments": {...}}.

The policy is deliberately simple and keeps no state between requests (everything it needs is in each request):

* the function comes from keywords of the instruction (review / recommend / search);
* search: a query made of the instruction's request, its must-have feature and, in the multi-turn track, what
  the user said when asked;
* recommend: the ASINs of the user's history, most recent last;
* review: the user's own review habits (the opening and closing of their past review with the closest rating,
  their usual length) around the sentiment and aspects the instruction asks for;
* multi-turn: one clarifying question first (search and review), then the call, then stop.

Run:  python3 -m pwab.examples.remote_agent --port 0   # prints the bound URL on the first line of stdout
"""

import argparse
import re

from ..agent_server import serve_agent

SEARCH = "search_product_by_query"
RECOMMEND = "get_recommendations_by_history"
REVIEW = "add_product_review"

RECOMMEND_WORDS = ("recommend", "suggest", "ideas", "what should i get", "might like", "go well with my recent")
REQUEST_LEADS = (
    "i'm looking for", "i am looking for", "can you find me", "could you find me", "please search for",
    "help me find", "search for", "find me", "i need", "i want", "looking for",
)
FILLER = {"a", "an", "the", "some", "please", "me", "for", "i", "hi", "hey", "hello", "there"}
RECOMMEND_HISTORY = 50  # how many recent ASINs go into a recommendation request

SEARCH_QUESTION = "Happy to help. Is there a brand, feature or detail you need?"
REVIEW_QUESTION = "Sure. Overall, how did you find it, and what should the review mention?"


# --- reading the request ---------------------------------------------------------------------------------------

def instruction_of(first_observation):
    """The user's instruction: the first line of the first observation without its "USER <id>: " prefix."""
    line = first_observation.split("\n", 1)[0]
    return re.sub(r"^USER [^:]*:\s*", "", line)


def predict_function(instruction):
    text = instruction.lower()
    if "review" in text:
        return REVIEW
    if any(word in text for word in RECOMMEND_WORDS):
        return RECOMMEND
    return SEARCH


def user_replies(conversation):
    """What the user said: the observations of our respond actions."""
    return [turn["observation"] for turn in conversation if turn["action"]["name"] == "respond"]


def called(conversation, name):
    return any(turn["action"]["name"] == name for turn in conversation)


# --- search --------------------------------------------------------------------------------------------------

def sentences(text):
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


def request_phrase(instruction):
    """The words of the sentence that asks for the product, without the lead-in ("Can you find me ...")."""
    for sentence in sentences(instruction):
        low = sentence.lower()
        for lead in REQUEST_LEADS:
            at = low.find(lead)
            if at >= 0:
                return sentence[at + len(lead):]
    return sentences(instruction)[0] if instruction else ""


def feature_phrase(instruction):
    match = re.search(r"(?:must have|what i care about most|key feature for me):\s*([^.!?]+)", instruction, re.I)
    return match.group(1) if match else ""


def keywords(text):
    words = re.findall(r"[A-Za-z0-9][A-Za-z0-9'-]*", text)
    return [w for w in words if w.lower() not in FILLER]


def search_query(instruction, replies):
    parts = [request_phrase(instruction), feature_phrase(instruction)] + list(replies)
    return " ".join(keywords(" ".join(parts)))


# --- recommendation ------------------------------------------------------------------------------------------

def recent_asins(history):
    """History ASINs, most recent last (the request lists history oldest first)."""
    return [item["asin"] for item in history][-RECOMMEND_HISTORY:]


# --- review --------------------------------------------------------------------------------------------------

STAR_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
SENTIMENT_STARS = [
    ("absolutely love", 5), ("loved", 5), ("love", 5), ("liked", 4), ("like", 4), ("okay", 3), ("mixed", 3),
    ("not happy", 2), ("disappointed", 2), ("didn't like", 1), ("did not like", 1),
]
CLOSINGS = {5: "Highly recommend it.", 4: "I would buy it again.", 3: "It does the job.",
            2: "I expected more.", 1: "I would not recommend it."}


def stars_in(text):
    low = text.lower()
    match = re.search(r"\b([1-5]|one|two|three|four|five) stars?\b", low)
    if match:
        word = match.group(1)
        return STAR_WORDS.get(word) or int(word)
    # The most specific phrase first: "didn't like" before "like".
    for phrase, stars in sorted(SENTIMENT_STARS, key=lambda p: -len(p[0])):
        if phrase in low:
            return stars
    return None


def product_title(first_observation):
    match = re.search(r"^- Title: (.*)$", first_observation, re.M)
    return match.group(1).strip() if match else "product"


def aspect_sentences(instruction):
    """The aspects the user wants mentioned, as sentences of the review."""
    out = []
    good = re.search(r"mention that the (.+?) (?:was|were) great", instruction, re.I)
    if good:
        out.append("The " + good.group(1) + (" were" if " and " in good.group(1) else " was") + " great.")
    bad = re.search(r"(?:say that|but) the (.+?) (?:was|were) a letdown", instruction, re.I)
    if bad:
        out.append("The " + bad.group(1) + (" were" if " and " in bad.group(1) else " was") + " a letdown.")
    return out


def closest_review(history, stars):
    """The user's past review whose rating is closest to `stars` (the most recent among equals)."""
    rated = [item for item in history if item.get("review")]
    if not rated:
        return None
    return min(reversed(rated), key=lambda item: abs((item.get("rating") or 3) - stars))


def write_review(first_observation, instruction, history, replies):
    stars = stars_in(instruction) or next((s for s in map(stars_in, replies) if s), None) or 4
    body = aspect_sentences(instruction)
    if not body:
        body = ["The " + product_title(first_observation) + (" is great." if stars >= 4 else
                                                              " is just okay." if stars == 3 else " disappointed me.")]
    past = closest_review(history, stars)
    if past is None:
        return " ".join(body + [CLOSINGS[stars]])
    # The user's own voice: the opening and closing of their review with a similar rating, at their usual length.
    past_sentences = sentences(past["review"])
    usual_words = sorted(len(item["review"].split()) for item in history if item.get("review"))
    target = usual_words[len(usual_words) // 2]
    opening = past_sentences[0]
    closing = past_sentences[-1] if len(past_sentences) > 1 else CLOSINGS[stars]
    text = [opening] + body
    for sentence in past_sentences[1:-1]:
        if len(" ".join(text + [closing]).split()) >= target:
            break
        text.append(sentence)
    return " ".join(text + [closing])


# --- the policy ----------------------------------------------------------------------------------------------

def next_action(request):
    """The whole policy: the next action for one request (a pure function of it)."""
    instruction = instruction_of(request["first_observation"])
    function = predict_function(instruction)
    conversation = request["conversation"]
    history = request["history"]
    multi = request["track"] == "multi"

    if called(conversation, function):
        return {"name": "stop", "arguments": {}}  # multi-turn: the task is done (single-turn never gets here)
    asks = function in (SEARCH, REVIEW)
    if multi and asks and not called(conversation, "respond") and request["step"] < request["max_steps"]:
        question = SEARCH_QUESTION if function == SEARCH else REVIEW_QUESTION
        return {"name": "respond", "arguments": {"content": question}}

    replies = user_replies(conversation)
    if function == SEARCH:
        return {"name": SEARCH, "arguments": {"query": search_query(instruction, replies)}}
    if function == RECOMMEND:
        return {"name": RECOMMEND, "arguments": {"product_sequence": recent_asins(history)}}
    return {"name": REVIEW, "arguments": {"review": write_review(request["first_observation"], instruction,
                                                                   history, replies)}}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765, help="0 = any free port")
    parser.add_argument("--token", help="require `Authorization: Bearer TOKEN` (pwab's --agent-token)")
    parser.add_argument("--verbose", action="store_true", help="log every request on stderr")
    args = parser.parse_args(argv)
    # serve_agent prints the bound URL as the first line of stdout (scripts read it there), then serves until
    # interrupted.
    try:
        serve_agent(next_action, port=args.port, host=args.host, token=args.token, block=True,
                    name="pwab example agent", verbose=args.verbose)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
