// src/llm/wire.h (internal to src/llm): the OpenAI JSON wire format of messages and replies, and the text
// scrubbing every error message goes through. Not part of the area's API.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "llm/chat.h"

namespace pwab::llm {

//! `text` with every occurrence of `secret` replaced by "[redacted]" (unchanged when `secret` is empty).
std::string redact_secret(std::string_view text, std::string_view secret);

//! What an error reply says, for messages: the API's error.message when the body is an OpenAI error object,
//! else the body's first 300 bytes; control characters flattened, `secret` redacted.
std::string body_excerpt(std::string_view body, std::string_view secret);

nlohmann::json message_to_json(const Message& m);
//! Throws DataError when `j` is not a message object.
Message message_from_json(const nlohmann::json& j);

//! Parses a chat completions reply body into `out` (message, finish_reason, usage). Returns "" on success or
//! the problem (not JSON, no choices, no message, ...).
std::string parse_chat_reply(const std::string& body, ChatResponse& out);

//! Parses a (raw-text) completions reply body: choices[0].text becomes the assistant message's content.
std::string parse_completion_reply(const std::string& body, ChatResponse& out);

//! A ChatResponse as stored in the cache, and back (DataError on a malformed record).
std::string response_to_json(const ChatResponse& r);
ChatResponse response_from_json(std::string_view text);

}  // namespace pwab::llm
