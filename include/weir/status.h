// Status and Result<T>: how every Weir module reports failure across its boundary.
//
// A Status is OK or carries a code and a message. The code says what the caller can do:
//   - bad input (kInvalidArgument, kNotFound, kAlreadyExists, kOutOfRange): the request or the
//     data is wrong; retrying the same thing fails the same way;
//   - retryable (kUnavailable, kAborted): try again later;
//   - fatal for the operation (kIOError, kCorruption, kResourceExhausted, kFailedPrecondition,
//     kInternal): the resource cannot serve; stop and report;
//   - kCancelled: the caller (or another thread on its behalf) asked the operation to stop.
// Messages say what was wrong and where (a YAML path, a file and line, a topic/partition/offset).
// Thread safety: values; copy freely.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace weir {

enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kOutOfRange,
  kUnavailable,
  kAborted,
  kIOError,
  kCorruption,
  kResourceExhausted,
  kFailedPrecondition,
  kInternal,
  kCancelled,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message);
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status Aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
  static Status IOError(std::string m) { return {StatusCode::kIOError, std::move(m)}; }
  static Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
  static Status ResourceExhausted(std::string m) {
    return {StatusCode::kResourceExhausted, std::move(m)};
  }
  static Status FailedPrecondition(std::string m) {
    return {StatusCode::kFailedPrecondition, std::move(m)};
  }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
  // An I/O failure from errno: ENOSPC/EDQUOT become kResourceExhausted ("disk full"), the rest
  // kIOError. `what` names the operation and the path.
  static Status FromErrno(int err, std::string_view what);

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  const std::string& message() const;
  bool IsBadInput() const;
  bool IsRetryable() const;

  // "Code: message", or "OK".
  std::string ToString() const;
  // Prefixes the message with context ("reading topic clicks: ..."); OK stays OK.
  Status WithContext(std::string_view context) const;

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  std::unique_ptr<Rep> rep_;
};

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  // A value of another type that converts to T (a pointer to a derived class for a base one).
  template <typename U, typename = std::enable_if_t<std::is_convertible_v<U&&, T> &&
                                                    !std::is_same_v<std::decay_t<U>, T> &&
                                                    !std::is_same_v<std::decay_t<U>, Status>>>
  Result(U&& value)  // NOLINT(google-explicit-constructor)
      : v_(std::in_place_type<T>, std::forward<U>(value)) {}
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(v_).ok()) v_ = Status::Internal("Result constructed from OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const& {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  Status status() && { return ok() ? Status::OK() : std::get<Status>(std::move(v_)); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<Status, T> v_;
};

namespace internal {
inline Status ToStatus(Status s) { return s; }
template <typename T>
Status ToStatus(Result<T>&& r) {
  return std::move(r).status();
}
template <typename T>
const Status& ToStatus(const Result<T>& r) {
  return r.status();
}
[[noreturn]] void CheckFailed(const char* file, int line, const char* condition,
                              const std::string& message);
}  // namespace internal

}  // namespace weir

#define WEIR_CONCAT_IMPL(a, b) a##b
#define WEIR_CONCAT(a, b) WEIR_CONCAT_IMPL(a, b)

#define WEIR_RETURN_IF_ERROR(expr)                                  \
  do {                                                              \
    ::weir::Status _weir_status = ::weir::internal::ToStatus(expr); \
    if (!_weir_status.ok()) return _weir_status;                    \
  } while (0)

#define WEIR_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return std::move(tmp).status();   \
  lhs = std::move(tmp).value()

#define WEIR_ASSIGN_OR_RETURN(lhs, expr) \
  WEIR_ASSIGN_OR_RETURN_IMPL(WEIR_CONCAT(_weir_result_, __LINE__), lhs, expr)

// Stops the process with a message when an invariant that guards data does not hold. Unlike
// assert, it is never compiled out.
#define WEIR_CHECK(condition, message)                                          \
  do {                                                                          \
    if (!(condition)) [[unlikely]]                                              \
      ::weir::internal::CheckFailed(__FILE__, __LINE__, #condition, (message)); \
  } while (0)
