#include "core/dtype.h"

#include <array>
#include <string>

#include "core/error.h"

namespace lazyscope {
namespace {

enum class Category : uint8_t { kBool, kInteger, kFloating };

struct DTypeInfo {
  std::string_view name;
  size_t size;
  Category category;
  int rank;  // order within the category, for promotion
};

// Indexed by DType.
constexpr std::array<DTypeInfo, kNumDTypes> kTable = {{
    {"bool", 1, Category::kBool, 0},
    {"uint8", 1, Category::kInteger, 0},
    {"int32", 4, Category::kInteger, 1},
    {"int64", 8, Category::kInteger, 2},
    {"float16", 2, Category::kFloating, 0},
    {"bfloat16", 2, Category::kFloating, 0},
    {"float32", 4, Category::kFloating, 1},
    {"float64", 8, Category::kFloating, 2},
}};

const DTypeInfo& info(DType t) { return kTable[static_cast<size_t>(t)]; }

}  // namespace

std::string_view dtype_name(DType t) { return info(t).name; }
size_t dtype_size(DType t) { return info(t).size; }
// is_floating (dtype.h) reads the enum's order; the table must agree.
static_assert([] {
  for (int i = 0; i < kNumDTypes; ++i) {
    if ((kTable[i].category == Category::kFloating) != (static_cast<DType>(i) >= DType::kFloat16)) return false;
  }
  return true;
}());

DType parse_dtype(std::string_view name) {
  if (name.starts_with("torch.")) name.remove_prefix(6);
  if (name == "float") return DType::kFloat32;
  if (name == "double") return DType::kFloat64;
  if (name == "half") return DType::kFloat16;
  if (name == "long") return DType::kInt64;
  if (name == "int") return DType::kInt32;
  for (int i = 0; i < kNumDTypes; ++i) {
    if (kTable[i].name == name) return static_cast<DType>(i);
  }
  throw EngineError("unknown dtype '" + std::string(name) + "'");
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  const DTypeInfo& ia = info(a);
  const DTypeInfo& ib = info(b);
  if (ia.category != ib.category) return ia.category > ib.category ? a : b;
  // float16 and bfloat16 share a rank; PyTorch promotes the pair to float32.
  if (ia.rank == ib.rank) return DType::kFloat32;
  return ia.rank > ib.rank ? a : b;
}

namespace {

// c10's combine_categories: the higher tier's type wins unless the lower
// tier brings a higher category (then the two are promoted together).
// `has_*` stands in for c10's Undefined.
struct Partial {
  bool set = false;
  DType dtype = DType::kBool;
  void add(DType t) {
    dtype = set ? promote_types(dtype, t) : t;
    set = true;
  }
};

Partial combine(Partial higher, Partial lower) {
  if (!higher.set) return lower;
  if (!lower.set || is_floating(higher.dtype)) return higher;
  if (higher.dtype == DType::kBool || is_floating(lower.dtype)) {
    higher.dtype = promote_types(higher.dtype, lower.dtype);
  }
  return higher;
}

}  // namespace

DType result_type(const PromotionOperand* operands, size_t count) {
  Partial dim, zero, wrapped;
  for (size_t i = 0; i < count; ++i) {
    const PromotionOperand& op = operands[i];
    switch (op.tier) {
      case PromotionTier::kDimensioned: dim.add(op.dtype); break;
      case PromotionTier::kZeroDim: zero.add(op.dtype); break;
      case PromotionTier::kWrappedNumber:
        if (is_floating(op.dtype)) {
          wrapped.add(DType::kFloat32);
        } else {
          wrapped.add(op.dtype == DType::kBool ? DType::kBool : DType::kInt64);
        }
        break;
    }
  }
  const Partial r = combine(dim, combine(zero, wrapped));
  if (!r.set) throw EngineError("result_type: no operands");
  return r.dtype;
}

DType result_type(std::initializer_list<PromotionOperand> operands) {
  return result_type(operands.begin(), operands.size());
}

}  // namespace lazyscope
