// Errors the engine raises. Messages name the op, the shapes or devices
// involved and, when known, the user's source line; the Python bindings turn
// them into Python exceptions (EngineError and its subclasses are RuntimeErrors).
#pragma once

#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

namespace lazyscope {

class EngineError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ShapeError : public EngineError {
 public:
  using EngineError::EngineError;
};

// An index or class value out of range for the data (in Python also an IndexError).
class IndexError : public EngineError {
 public:
  using EngineError::EngineError;
};

class DeviceMismatchError : public EngineError {
 public:
  using EngineError::EngineError;
};

// A buffer larger than the machine can hold (in Python also a MemoryError).
class OutOfMemoryError : public EngineError {
 public:
  using EngineError::EngineError;
};

// Rethrows the engine error `error` as its own class with `message`, so a
// caller that adds context (the op, the user's line) keeps `except IndexError`
// and `except MemoryError` working. Errors of other kinds pass unchanged.
[[noreturn]] inline void rethrow_with_message(const std::exception_ptr& error, const std::string& message) {
  try {
    std::rethrow_exception(error);
  } catch (const IndexError&) {
    throw IndexError(message);
  } catch (const OutOfMemoryError&) {
    throw OutOfMemoryError(message);
  } catch (const ShapeError&) {
    throw ShapeError(message);
  } catch (const DeviceMismatchError&) {
    throw DeviceMismatchError(message);
  } catch (const EngineError&) {
    throw EngineError(message);
  }
}

// What a compiled program throws when one of its kernels fails at run time:
// the failing node's index in the graph, so the executor can name the user's
// line that traced it, and the kernel's own error.
class KernelFailure : public EngineError {
 public:
  KernelFailure(int node, std::exception_ptr error, const std::string& message)
      : EngineError(message), node_(node), error_(std::move(error)) {}
  int node() const { return node_; }
  const std::exception_ptr& error() const { return error_; }

 private:
  int node_;
  std::exception_ptr error_;
};

}  // namespace lazyscope
