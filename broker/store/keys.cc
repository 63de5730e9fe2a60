#include "broker/store/keys.h"

#include "absl/strings/str_cat.h"

namespace jobwire::store {

Keys::Keys(absl::string_view prefix, absl::string_view queue)
    : base_(absl::StrCat(prefix, ":{", queue, "}:")) {}

std::string Keys::Registry(absl::string_view prefix) { return absl::StrCat(prefix, ":queues"); }

std::string Keys::Layout(absl::string_view prefix) { return absl::StrCat(prefix, ":layout"); }

}  // namespace jobwire::store
