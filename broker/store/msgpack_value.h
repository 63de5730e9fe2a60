// Values of the cmsgpack tables the scripts write (job records, queue
// events), read leniently: Lua gives numbers and text interchangeably, so a
// number may arrive as text and text as a number.
#ifndef JOBWIRE_BROKER_STORE_MSGPACK_VALUE_H_
#define JOBWIRE_BROKER_STORE_MSGPACK_VALUE_H_

#include <msgpack.h>

#include <cstdint>
#include <string>

namespace jobwire::store {

// A value as a number: msgpack integers and floats (truncated), and decimal
// text; 0 otherwise.
int64_t MsgpackInt(const msgpack_object& o);
// A value as text: strings as they are, numbers in decimal, true / false;
// "" otherwise.
std::string MsgpackText(const msgpack_object& o);

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_MSGPACK_VALUE_H_
