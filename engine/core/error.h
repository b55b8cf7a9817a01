// Errors the engine raises. Messages name the op, the shapes or devices
// involved and, when known, the user's source line; the Python bindings turn
// them into Python exceptions (EngineError and its subclasses are RuntimeErrors).
#pragma once

#include <stdexcept>
#include <string>

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

}  // namespace lazyscope
