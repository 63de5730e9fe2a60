// The lua/*.lua files, embedded at build time by cmake/EmbedLua.cmake.
#ifndef JOBWIRE_BROKER_STORE_SCRIPT_SOURCES_H_
#define JOBWIRE_BROKER_STORE_SCRIPT_SOURCES_H_

#include "absl/strings/string_view.h"
#include <vector>

namespace jobwire::store {

struct LuaSource {
  absl::string_view name;  // file stem: "claim" for lua/claim.lua
  absl::string_view text;
};

// Every embedded script, sorted by name.
const std::vector<LuaSource>& LuaSources();

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_SCRIPT_SOURCES_H_
