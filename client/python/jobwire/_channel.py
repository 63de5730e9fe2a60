"""One place for the address default and the channel options."""
from __future__ import annotations

import os
from typing import Optional, Sequence, Tuple

import grpc

DEFAULT_ADDR = "localhost:50051"
DEFAULT_TIMEOUT = 10.0

# - unlimited message sizes: the broker enforces its own payload limit
#   (--max_payload_bytes, up to 64 MiB) and names it in INVALID_ARGUMENT;
# - quick channel reconnects (gRPC's default backoff grows to 120 s, which
#   would keep a worker away from a restarted broker);
# - keepalive above the gRPC server's default minimum ping interval (5 min),
#   so a silently dead connection is eventually noticed without the broker
#   answering GOAWAY "too_many_pings".
CHANNEL_OPTIONS: Tuple[Tuple[str, int], ...] = (
    ("grpc.max_receive_message_length", -1),
    ("grpc.max_send_message_length", -1),
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 5000),
    ("grpc.keepalive_time_ms", 360000),
    ("grpc.keepalive_timeout_ms", 20000),
)


def resolve_addr(addr: Optional[str]) -> str:
    return addr or os.environ.get("JOBWIRE_ADDR") or DEFAULT_ADDR


def open_channel(addr: str, extra: Optional[Sequence[Tuple[str, object]]] = None) -> grpc.Channel:
    options = dict(CHANNEL_OPTIONS)
    options.update(dict(extra or ()))
    return grpc.insecure_channel(addr, options=list(options.items()))
