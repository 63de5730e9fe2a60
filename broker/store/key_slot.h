// KeySlot: the Redis Cluster hash slot of a key, as `CLUSTER KEYSLOT`
// computes it (https://redis.io/docs/reference/cluster-spec/#key-distribution-model):
// CRC16 (XMODEM: polynomial 0x1021, initial value 0) of the key modulo 16384,
// where a key holding a hash tag (the bytes between its first '{' and the
// first '}' after it, when there is at least one byte between them) is
// hashed on that tag alone. Every key of one queue carries the queue's tag
// (broker/store/keys.h), so all of them map to one slot.
#ifndef JOBWIRE_BROKER_STORE_KEY_SLOT_H_
#define JOBWIRE_BROKER_STORE_KEY_SLOT_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace jobwire::store {

inline constexpr int kClusterSlots = 16384;

// The CRC16 (XMODEM) of `data`.
uint16_t Crc16(absl::string_view data);

// The hash tag of `key` if it has one, else the whole key.
absl::string_view HashTagOf(absl::string_view key);

// The cluster slot of `key`, in [0, kClusterSlots).
int KeySlot(absl::string_view key);

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_KEY_SLOT_H_
