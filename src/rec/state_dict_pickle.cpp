#include "rec/state_dict_pickle.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "core/error.h"

namespace pwab::rec {

int dtype_size(StorageDtype dtype) {
  switch (dtype) {
    case StorageDtype::kFloat64:
    case StorageDtype::kInt64: return 8;
    case StorageDtype::kFloat32:
    case StorageDtype::kInt32: return 4;
    case StorageDtype::kFloat16:
    case StorageDtype::kBFloat16:
    case StorageDtype::kInt16: return 2;
    default: return 1;
  }
}

namespace {

struct Value;
using ValuePtr = std::shared_ptr<Value>;

//! The pickle values a state_dict needs; anything else becomes an opaque kObject.
struct Value {
  enum Kind { kNone, kBool, kInt, kFloat, kString, kTuple, kList, kDict, kGlobal, kStorage, kTensor, kObject, kMark };
  Kind kind = kNone;
  int64_t number = 0;
  std::string text;               //!< string value, or "module.name" of a global
  std::vector<ValuePtr> items;    //!< tuple/list items; dict as key, value, key, value...
  PickledTensor tensor;           //!< storage (key, dtype, numel) or tensor view
};

ValuePtr make(Value::Kind kind) {
  auto v = std::make_shared<Value>();
  v->kind = kind;
  return v;
}

const std::unordered_map<std::string, StorageDtype>& storage_types() {
  static const std::unordered_map<std::string, StorageDtype> types = {
      {"torch.FloatStorage", StorageDtype::kFloat32},   {"torch.DoubleStorage", StorageDtype::kFloat64},
      {"torch.HalfStorage", StorageDtype::kFloat16},    {"torch.BFloat16Storage", StorageDtype::kBFloat16},
      {"torch.LongStorage", StorageDtype::kInt64},      {"torch.IntStorage", StorageDtype::kInt32},
      {"torch.ShortStorage", StorageDtype::kInt16},     {"torch.CharStorage", StorageDtype::kInt8},
      {"torch.ByteStorage", StorageDtype::kUInt8},      {"torch.BoolStorage", StorageDtype::kBool}};
  return types;
}

class Unpickler {
 public:
  Unpickler(std::string_view bytes, std::string_view what) : bytes_(bytes), what_(what) {}

  ValuePtr run() {
    while (true) {
      uint8_t op = read_u8();
      if (op == '.') break;
      step(op);
    }
    if (stack_.size() != 1) fail("the pickle ended with " + std::to_string(stack_.size()) + " values on its stack");
    return stack_.back();
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw Error(std::string(what_) + ": " + problem + " (at byte " + std::to_string(pos_) + " of the pickle)");
  }

  const char* take(std::size_t n) {
    if (n > bytes_.size() - pos_) fail("truncated pickle");
    const char* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }
  uint8_t read_u8() { return static_cast<uint8_t>(*take(1)); }
  uint64_t read_le(int n) {
    const char* p = take(n);
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
    return v;
  }
  std::string read_line() {
    std::size_t end = bytes_.find('\n', pos_);
    if (end == std::string_view::npos) fail("truncated pickle");
    std::string line(bytes_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return line;
  }
  std::string read_string(uint64_t n) {
    const char* p = take(n);
    return std::string(p, n);
  }

  void push(ValuePtr v) {
    if (stack_.size() > 100000) fail("pickle stack too deep");
    stack_.push_back(std::move(v));
  }
  ValuePtr pop() {
    if (stack_.empty() || stack_.back()->kind == Value::kMark) fail("pickle stack underflow");
    ValuePtr v = stack_.back();
    stack_.pop_back();
    return v;
  }
  ValuePtr& top() {
    if (stack_.empty()) fail("pickle stack underflow");
    return stack_.back();
  }
  //! Pops everything above the topmost MARK (and the mark), in push order.
  std::vector<ValuePtr> pop_to_mark() {
    std::size_t i = stack_.size();
    while (i > 0 && stack_[i - 1]->kind != Value::kMark) --i;
    if (i == 0) fail("no MARK on the pickle stack");
    std::vector<ValuePtr> items(stack_.begin() + static_cast<std::ptrdiff_t>(i), stack_.end());
    stack_.resize(i - 1);
    return items;
  }
  ValuePtr make_int(int64_t n) {
    auto v = make(Value::kInt);
    v->number = n;
    return v;
  }
  ValuePtr make_string(std::string s) {
    auto v = make(Value::kString);
    v->text = std::move(s);
    return v;
  }
  ValuePtr make_tuple(std::vector<ValuePtr> items) {
    auto v = make(Value::kTuple);
    v->items = std::move(items);
    return v;
  }
  ValuePtr make_global(const std::string& module, const std::string& name) {
    auto v = make(Value::kGlobal);
    v->text = module + "." + name;
    return v;
  }

  void memo_put(uint64_t index) {
    if (index > 10'000'000) fail("memo index out of range");
    memo_[index] = top();
  }
  void memo_get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) fail("memo entry " + std::to_string(index) + " was never stored");
    push(it->second);
  }

  void set_items(ValuePtr& dict, std::vector<ValuePtr> items) {
    if (items.size() % 2) fail("odd number of items for a dict");
    if (dict->kind == Value::kObject) return;  // setting items of an unknown object: irrelevant here
    if (dict->kind != Value::kDict) fail("SETITEMS on a value that is not a dict");
    for (auto& item : items) dict->items.push_back(std::move(item));
  }
  void append_items(ValuePtr& list, std::vector<ValuePtr> items) {
    if (list->kind == Value::kObject) return;
    if (list->kind != Value::kList) fail("APPEND on a value that is not a list");
    for (auto& item : items) list->items.push_back(std::move(item));
  }

  void step(uint8_t op) {
    switch (op) {
      case 0x80: read_u8(); break;                 // PROTO
      case 0x95: read_le(8); break;                // FRAME: a length hint only
      case '(': push(make(Value::kMark)); break;   // MARK
      case ')': push(make(Value::kTuple)); break;  // EMPTY_TUPLE
      case ']': push(make(Value::kList)); break;   // EMPTY_LIST
      case '}': push(make(Value::kDict)); break;   // EMPTY_DICT
      case 'N': push(make(Value::kNone)); break;
      case 0x88:
      case 0x89: {  // NEWTRUE, NEWFALSE
        auto v = make(Value::kBool);
        v->number = op == 0x88;
        push(v);
        break;
      }
      case 'K': push(make_int(read_u8())); break;                                      // BININT1
      case 'M': push(make_int(static_cast<int64_t>(read_le(2)))); break;               // BININT2
      case 'J': push(make_int(static_cast<int32_t>(read_le(4)))); break;               // BININT
      case 0x8a: push_long(read_u8()); break;                                          // LONG1
      case 'G':  // BINFLOAT: no float matters in a state_dict, only its presence
        take(8);
        push(make(Value::kFloat));
        break;
      case 'X': push(make_string(read_string(read_le(4)))); break;     // BINUNICODE
      case 0x8c: push(make_string(read_string(read_u8()))); break;     // SHORT_BINUNICODE
      case 0x8d: push(make_string(read_string(read_le(8)))); break;    // BINUNICODE8
      case 'T': push(make_string(read_string(read_le(4)))); break;     // BINSTRING
      case 'U': push(make_string(read_string(read_u8()))); break;      // SHORT_BINSTRING
      case 'B': push(make_string(read_string(read_le(4)))); break;     // BINBYTES
      case 'C': push(make_string(read_string(read_u8()))); break;      // SHORT_BINBYTES
      case 'c': {                                                       // GLOBAL
        std::string module = read_line();
        push(make_global(module, read_line()));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        ValuePtr name = pop(), module = pop();
        if (name->kind != Value::kString || module->kind != Value::kString) fail("STACK_GLOBAL needs two strings");
        push(make_global(module->text, name->text));
        break;
      }
      case 'q': memo_put(read_u8()); break;       // BINPUT
      case 'r': memo_put(read_le(4)); break;      // LONG_BINPUT
      case 0x94: memo_put(memo_.size()); break;   // MEMOIZE
      case 'h': memo_get(read_u8()); break;       // BINGET
      case 'j': memo_get(read_le(4)); break;      // LONG_BINGET
      case 't': push(make_tuple(pop_to_mark())); break;  // TUPLE
      case 0x85: {                                        // TUPLE1
        auto a = pop();
        push(make_tuple({a}));
        break;
      }
      case 0x86: {  // TUPLE2
        auto b = pop(), a = pop();
        push(make_tuple({a, b}));
        break;
      }
      case 0x87: {  // TUPLE3
        auto c = pop(), b = pop(), a = pop();
        push(make_tuple({a, b, c}));
        break;
      }
      case 'l': {  // LIST
        auto v = make(Value::kList);
        v->items = pop_to_mark();
        push(v);
        break;
      }
      case 'd': {  // DICT
        auto v = make(Value::kDict);
        auto items = pop_to_mark();
        set_items(v, std::move(items));
        push(v);
        break;
      }
      case 'a': {  // APPEND
        auto item = pop();
        append_items(top(), {item});
        break;
      }
      case 'e': {  // APPENDS
        auto items = pop_to_mark();
        append_items(top(), std::move(items));
        break;
      }
      case 's': {  // SETITEM
        auto value = pop(), key = pop();
        set_items(top(), {key, value});
        break;
      }
      case 'u': {  // SETITEMS
        auto items = pop_to_mark();
        set_items(top(), std::move(items));
        break;
      }
      case 'Q': push(persistent_load(pop())); break;  // BINPERSID
      case 'R': {                                      // REDUCE
        auto args = pop(), callable = pop();
        push(reduce(callable, args));
        break;
      }
      case 0x81: {  // NEWOBJ: cls.__new__(cls, *args), opaque here
        pop();
        pop();
        push(make(Value::kObject));
        break;
      }
      case 'b': pop(); break;  // BUILD: sets state (the state_dict's _metadata), ignored
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        fail(std::string("unsupported pickle opcode ") + hex);
      }
    }
  }

  void push_long(uint8_t n) {
    if (n > 8) fail("integer too large");
    uint64_t v = n ? read_le(n) : 0;
    if (n && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);  // sign-extend
    push(make_int(static_cast<int64_t>(v)));
  }

  ValuePtr persistent_load(const ValuePtr& pid) {
    // ('storage', <storage class>, key, location, numel)
    if (pid->kind != Value::kTuple || pid->items.size() < 5 || pid->items[0]->text != "storage")
      fail("unsupported persistent id (expected a ('storage', ...) tuple)");
    const auto& type = pid->items[1];
    const auto& key = pid->items[2];
    const auto& numel = pid->items[4];
    auto it = storage_types().find(type->text);
    if (type->kind != Value::kGlobal || it == storage_types().end())
      fail("unsupported storage type '" + type->text + "'");
    if (key->kind != Value::kString || numel->kind != Value::kInt || numel->number < 0)
      fail("malformed storage reference");
    auto v = make(Value::kStorage);
    v->tensor.storage_key = key->text;
    v->tensor.dtype = it->second;
    v->tensor.storage_numel = numel->number;
    return v;
  }

  std::vector<int64_t> int_tuple(const ValuePtr& v, const char* what) {
    if (v->kind != Value::kTuple) fail(std::string("tensor ") + what + " is not a tuple");
    if (v->items.size() > 8) fail(std::string("tensor ") + what + " has more than 8 dimensions");
    std::vector<int64_t> out;
    for (const auto& item : v->items) {
      if (item->kind != Value::kInt || item->number < 0) fail(std::string("tensor ") + what + " holds a non-integer");
      out.push_back(item->number);
    }
    return out;
  }

  ValuePtr reduce(const ValuePtr& callable, const ValuePtr& args) {
    if (callable->kind != Value::kGlobal || args->kind != Value::kTuple) return make(Value::kObject);
    if (callable->text == "collections.OrderedDict") return make(Value::kDict);
    if (callable->text == "torch._utils._rebuild_parameter" && !args->items.empty()) return args->items[0];
    if (callable->text != "torch._utils._rebuild_tensor_v2" && callable->text != "torch._utils._rebuild_tensor")
      return make(Value::kObject);
    // (storage, storage_offset, size, stride, ...)
    if (args->items.size() < 4 || args->items[0]->kind != Value::kStorage || args->items[1]->kind != Value::kInt)
      fail("malformed _rebuild_tensor_v2 arguments");
    auto v = make(Value::kTensor);
    v->tensor = args->items[0]->tensor;
    v->tensor.storage_offset = args->items[1]->number;
    v->tensor.shape = int_tuple(args->items[2], "size");
    v->tensor.stride = int_tuple(args->items[3], "stride");
    if (v->tensor.shape.size() != v->tensor.stride.size()) fail("tensor size and stride differ in length");
    return v;
  }

  std::string_view bytes_;
  std::string_view what_;
  std::size_t pos_ = 0;
  std::vector<ValuePtr> stack_;
  std::unordered_map<uint64_t, ValuePtr> memo_;
};

}  // namespace

std::vector<PickledTensor> parse_state_dict_pickle(std::string_view bytes, std::string_view what) {
  ValuePtr root = Unpickler(bytes, what).run();
  if (root->kind != Value::kDict) throw Error(std::string(what) + ": the pickle is not a state_dict (no dict at its top)");
  std::vector<PickledTensor> tensors;
  for (std::size_t i = 0; i + 1 < root->items.size(); i += 2) {
    const auto& key = root->items[i];
    const auto& value = root->items[i + 1];
    if (key->kind != Value::kString) throw Error(std::string(what) + ": a state_dict key is not a string");
    if (value->kind != Value::kTensor)
      throw Error(std::string(what) + ": state_dict entry '" + key->text + "' is not a tensor");
    tensors.push_back(value->tensor);
    tensors.back().name = key->text;
  }
  return tensors;
}

}  // namespace pwab::rec
