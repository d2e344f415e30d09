// src/core/error.h: the exception types that end an operation.
//
// Policy (after DuckDB's): exceptions only for errors that end the operation, return values or
// Diagnostics for expected problems in user data, asserts for programmer mistakes.
#pragma once
#include <stdexcept>
#include <string>

namespace pwab {

//! Base of every error pwab reports to the user; what() is a complete, user-readable message.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

//! Bad input data: a malformed file, record or field. The message names the file, the record and the problem.
class DataError : public Error {
 public:
  using Error::Error;
};

//! Bad usage: an invalid option value or a missing argument.
class UsageError : public Error {
 public:
  using Error::Error;
};

//! A failure inside one task that must stop the whole run rather than be recorded as that task's error (e.g. a
//! replay that misses its cache: continuing would silently mix recorded and live answers).
class RunAbortError : public Error {
 public:
  using Error::Error;
};

}  // namespace pwab
