// src/core/diagnostics.h: errors and warnings collected while reading or checking user data.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace pwab {

enum class Severity { kWarning, kError };

//! One problem in user data: where it is (file, record, JSON path) and what is wrong.
struct Diagnostic {
  Severity severity = Severity::kError;
  std::string file;     //!< file name relative to the dataset directory ("" for dataset-wide checks)
  std::string record;   //!< record key or index, e.g. `user AGMQ…` or `test[12]`
  std::string path;     //!< JSON path inside the file, e.g. `$["AGMQ…"][3].review.timestamp`
  std::string message;  //!< what is wrong
  std::string check;    //!< short name of the check, used to count problems by class

  //! "file: record (path): message" — the one line users see.
  std::string to_string() const;
};

//! Collects diagnostics; counts all of them but keeps only the first few of each check's messages.
class Diagnostics {
 public:
  explicit Diagnostics(std::size_t keep_per_check = 20) : keep_per_check_(keep_per_check) {}

  void add(Diagnostic d);
  void error(std::string check, std::string file, std::string record, std::string path, std::string message);
  void warning(std::string check, std::string file, std::string record, std::string path, std::string message);

  std::size_t n_errors() const { return n_errors_; }
  std::size_t n_warnings() const { return n_warnings_; }
  bool has_errors() const { return n_errors_ > 0; }
  //! The kept diagnostics, in the order they were added.
  const std::vector<Diagnostic>& kept() const { return kept_; }
  //! Number of problems per check name, errors and warnings, sorted by check name.
  std::vector<std::pair<std::string, std::size_t>> counts(Severity s) const;
  //! The first error, for exceptions; empty if none.
  std::string first_error() const;
  //! Moves every diagnostic of `other` into this one.
  void merge(Diagnostics&& other);

 private:
  void keep(Diagnostic d);  // stores d unless its check already has keep_per_check_ stored
  std::size_t keep_per_check_;
  std::size_t n_errors_ = 0, n_warnings_ = 0;
  std::vector<Diagnostic> kept_;
  std::vector<std::pair<std::string, std::size_t>> error_counts_, warning_counts_;
  std::vector<std::pair<std::string, std::size_t>> kept_counts_;
};

}  // namespace pwab
