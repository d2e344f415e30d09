"""Reading what a model wrote as a pwab action, by the rules `POST /v1/reward` reads a completion with.

The reward endpoint scores raw text; the episode routes (/step) take a structured action. The adapters that play
episodes from text (OpenRLHF's agent, the verifiers multi-turn environment) turn the text into an action here, so
that the same text gets the same reading on both routes (src/puma/completion_parse.cpp and
agents::puma_action are the server's side):

1. A Hermes tool call, `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (or that JSON object alone,
   "parameters" accepted for "arguments"), is the action as written: its arguments go to the server unchanged.
2. Otherwise the function is the first line of the text (after the last "### Tool:\\n" when there is one) and the
   parameter is the text after the last "### Tool Parameter:\\n" (or, without one, everything after the
   function's line), both trimmed. The parameter becomes the tool's argument as the PUMA agent maps it: a query,
   a review, or product ASINs split on commas. A parameter starting with "Say:" is a message to the user
   (respond), one starting with "stop" is stop. Beyond the reward endpoint's reading, a function line of
   "respond" takes the parameter as the message, and "get_product_details_by_asin" as the ASIN.
3. A function that names no action is passed on as it is (the server answers "Unknown action ..."), or, with
   fallback="respond", the whole text becomes a message to the user (what a chat model's plain reply means in
   the multi-turn track).

>>> from pwab.rl import parse_action_text
>>> parse_action_text('<tool_call>{"name": "search_product_by_query", "arguments": {"query": "usb cable"}}</tool_call>')
('search_product_by_query', {'query': 'usb cable'})
>>> parse_action_text("### Tool:\\nget_recommendations_by_history\\n### Tool Parameter:\\nB01, B02 ,B03")
('get_recommendations_by_history', {'product_sequence': ['B01', 'B02', 'B03']})
>>> parse_action_text("add_product_review\\nSturdy and quiet. Five stars.")
('add_product_review', {'review': 'Sturdy and quiet. Five stars.'})
>>> parse_action_text("Which brand do you prefer?", fallback="respond")
('respond', {'content': 'Which brand do you prefer?'})
>>> completion_text([{"role": "assistant", "content": "", "tool_calls": [
...     {"type": "function", "function": {"name": "stop", "arguments": {}}}]}])
'<tool_call>{"name": "stop", "arguments": {}}</tool_call>'
"""

import json

TASK_TOOLS = ("search_product_by_query", "get_recommendations_by_history", "add_product_review")
ACTIONS = TASK_TOOLS + ("get_product_details_by_asin", "respond", "stop")

_TOOL_MARK = "### Tool:\n"
_PARAMETER_MARK = "### Tool Parameter:\n"
_SPACE = " \t\r\n"


def parse_action_text(text, fallback=None):
    """(name, arguments) of the action `text` holds (see the module's rules). `fallback`: None, or "respond" to
    read a text naming no action as a message to the user."""
    if not isinstance(text, str):
        raise TypeError(f"parse_action_text takes the model's text, not {type(text).__name__}")
    call = _tool_call_in(text)
    if call is not None:
        return call
    function, parameter = _function_and_parameter(text)
    if parameter.startswith("Say:"):
        return "respond", {"content": parameter[4:].strip(_SPACE)}
    if parameter.startswith("stop"):
        return "stop", {}
    if function == "search_product_by_query":
        return function, {"query": parameter}
    if function == "add_product_review":
        return function, {"review": parameter}
    if function == "get_recommendations_by_history":
        return function, {"product_sequence": [p.strip(_SPACE) for p in parameter.split(",") if p.strip(_SPACE)]}
    if function == "get_product_details_by_asin":
        return function, {"product_asin": parameter}
    if function == "respond":
        return function, {"content": parameter}
    if function == "stop":
        return function, {}
    if fallback == "respond":
        return "respond", {"content": text.strip(_SPACE)}
    if fallback is not None:
        raise ValueError(f"fallback is None or 'respond', not {fallback!r}")
    return function or "(no function)", {}


def completion_text(completion):
    """The text of a completion as RL engines hand it over: a string; a list of chat messages (TRL's
    conversational format, verifiers' messages), read from its first assistant message; or one message. An
    assistant message that holds structured tool calls gives its first call as a Hermes tool call."""
    if completion is None:
        return ""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, (list, tuple)):
        messages = list(completion)
        for message in messages:
            if _field(message, "role") == "assistant":
                return completion_text(message)
        return completion_text(messages[0]) if messages else ""
    calls = _field(completion, "tool_calls") or []
    if calls:
        call = calls[0]
        function = _field(call, "function") or call
        arguments = _field(function, "arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                pass
        return "<tool_call>" + json.dumps({"name": _field(function, "name"), "arguments": arguments if
                                           arguments is not None else {}}) + "</tool_call>"
    return content_text(_field(completion, "content"))


def content_text(content):
    """A message's content as text: a string, or the text parts of a list of content blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif _field(block, "type") in (None, "text"):
            parts.append(_field(block, "text") or "")
    return "".join(parts)


def _field(item, name):
    """item[name] for dicts, item.name for objects (verifiers' messages are pydantic models)."""
    if isinstance(item, dict):
        return item.get(name)
    return getattr(item, name, None)


def _tool_call_in(text):
    body = text.strip(_SPACE)
    opening = body.find("<tool_call>")
    if opening >= 0:
        body = body[opening + len("<tool_call>"):]
        closing = body.find("</tool_call>")
        body = (body if closing < 0 else body[:closing]).strip(_SPACE)
    if not body.startswith("{"):
        return None
    try:
        call = json.loads(body)
    except ValueError:
        return None
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return None
    arguments = call["arguments"] if "arguments" in call else call.get("parameters")
    return call["name"], {} if arguments is None else arguments


def _function_and_parameter(completion):
    text = completion
    at = text.rfind(_TOOL_MARK)
    if at >= 0:
        text = text[at + len(_TOOL_MARK):]
    text = text.lstrip(_SPACE)
    line, newline, rest = text.partition("\n")
    function = line.strip(_SPACE)
    if not newline:
        rest = ""
    at = completion.rfind(_PARAMETER_MARK)
    if at >= 0:
        rest = completion[at + len(_PARAMETER_MARK):]
    return function, rest.strip(_SPACE)
