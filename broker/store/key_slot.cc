#include "broker/store/key_slot.h"

#include <array>

namespace jobwire::store {
namespace {

// The CRC16 table for polynomial 0x1021, built at compile time.
constexpr std::array<uint16_t, 256> MakeCrc16Table() {
  std::array<uint16_t, 256> table{};
  for (int i = 0; i < 256; ++i) {
    uint16_t crc = static_cast<uint16_t>(i << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021) : static_cast<uint16_t>(crc << 1);
    }
    table[i] = crc;
  }
  return table;
}

constexpr std::array<uint16_t, 256> kCrc16Table = MakeCrc16Table();

}  // namespace

uint16_t Crc16(absl::string_view data) {
  uint16_t crc = 0;
  for (unsigned char c : data) {
    crc = static_cast<uint16_t>((crc << 8) ^ kCrc16Table[((crc >> 8) ^ c) & 0xff]);
  }
  return crc;
}

absl::string_view HashTagOf(absl::string_view key) {
  const size_t open = key.find('{');
  if (open == absl::string_view::npos) return key;
  const size_t close = key.find('}', open + 1);
  if (close == absl::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

int KeySlot(absl::string_view key) { return Crc16(HashTagOf(key)) % kClusterSlots; }

}  // namespace jobwire::store
