"""One place for the address default, the channel options and the
connection security (TLS / mutual TLS credentials, bearer token)."""
from __future__ import annotations

import json
import os
from typing import Dict, List, Optional, Sequence, Tuple, Union

import grpc

from ._errors import JobwireError

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
    # gRPC core's minimum connect timeout (not a backoff), 5 s as the Go
    # client's MinConnectTimeout.
    ("grpc.min_reconnect_backoff_ms", 5000),
    # After a failed connect the channel re-resolves the address; gRPC
    # core's DNS resolver waits 30 s between resolutions by default, and
    # every call fails at once until then: at most one a second, so a
    # restarted broker is reached within seconds (behaviour W8).
    ("grpc.dns_min_time_between_resolutions_ms", 250),
    ("grpc.max_reconnect_backoff_ms", 5000),
    ("grpc.keepalive_time_ms", 360000),
    ("grpc.keepalive_timeout_ms", 20000),
)

# The default service config of every channel (Client and Worker, sync and
# asyncio, plaintext and TLS): round_robin, so that a target resolving to
# several brokers (``dns:///`` of a Kubernetes headless Service) gets its
# calls spread over all of them instead of pick_first's one. A Worker's
# Acks, Fails and renewals may then reach another broker than its Claim
# stream's; that broker tells the stream's (broker.proto, Claim), which frees
# the stream's slot at once. With one address nothing changes. A default
# only: a service config the resolver supplies wins, and so do the caller's
# ``channel_options``: their own ``grpc.service_config`` replaces it, and
# ``grpc.lb_policy_name`` drops it (gRPC core would otherwise let the
# service config win over that option).
SERVICE_CONFIG = json.dumps({"loadBalancingConfig": [{"round_robin": {}}]})

TOKEN_ENV = "JOBWIRE_TOKEN"

PemSource = Union[str, bytes, "os.PathLike[str]", None]


def resolve_addr(addr: Optional[str]) -> str:
    return addr or os.environ.get("JOBWIRE_ADDR") or DEFAULT_ADDR


def _load_pem(what: str, value: PemSource) -> Optional[bytes]:
    """``value`` itself when it is PEM text (contains "-----BEGIN") or bytes,
    else the content of the file it names. Raises JobwireError
    (INVALID_ARGUMENT) naming the option and the path when it cannot be read."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value) or None
    if isinstance(value, str):
        if not value:
            return None
        if "-----BEGIN" in value:
            return value.encode("utf-8")
    try:
        path = os.fspath(value)
    except TypeError:
        raise TypeError("%s must be PEM text (str / bytes) or the path of a PEM file, got %s"
                        % (what, type(value).__name__)) from None
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise JobwireError(grpc.StatusCode.INVALID_ARGUMENT, "%s: cannot read PEM file %s: %s"
                           % (what, path, e.strerror or e)) from None


class _Authorization(tuple):
    """The per-call metadata ``(("authorization", "Bearer <token>"),)``; its
    repr never shows the token."""

    def __repr__(self) -> str:
        return "(('authorization', 'Bearer <redacted>'),)"

    __str__ = __repr__


class Security:
    """TLS credentials and bearer token of one client or worker (same rules
    as the C++ client's ClientOptions):

    - ``token``: sent as ``authorization: Bearer <token>`` on every call;
      ``None`` / empty means ``$JOBWIRE_TOKEN``, else no token.
    - TLS is on when ``tls`` is true or any ``tls_*`` option is set. Each
      ``tls_*`` option is PEM text (a str containing ``-----BEGIN``, or bytes)
      or the path of a PEM file. ``tls_root_ca`` empty: the system roots.
      ``tls_client_cert`` + ``tls_client_key``: a certificate for mutual TLS.
    - A problem with these options (unreadable file, only one of client cert
      and key, a token with characters a gRPC header cannot carry) never
      raises here: ``error`` holds a JobwireError(INVALID_ARGUMENT) that every
      call raises instead. No message names the token.
    """

    __slots__ = ("tls", "metadata", "credentials", "error")

    def __init__(self, token: Optional[str] = None, tls: bool = False,
                 tls_root_ca: PemSource = None, tls_client_cert: PemSource = None,
                 tls_client_key: PemSource = None):
        self.error: Optional[JobwireError] = None
        self.metadata: Optional[Tuple[Tuple[str, str], ...]] = None
        self.credentials: Optional[grpc.ChannelCredentials] = None

        source = "token"
        if not token:
            token, source = os.environ.get(TOKEN_ENV) or None, "$" + TOKEN_ENV
        if token is not None:
            if not isinstance(token, str):
                raise TypeError("token must be a str, got %s" % type(token).__name__)
            if all(0x20 <= ord(c) <= 0x7E for c in token):
                self.metadata = _Authorization((("authorization", "Bearer " + token),))
            else:
                self.error = JobwireError(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    "%s: a bearer token may hold only printable ASCII characters "
                    "(no line breaks)" % source)

        self.tls = bool(tls) or any(v not in (None, "", b"")
                                    for v in (tls_root_ca, tls_client_cert, tls_client_key))
        if not self.tls:
            return
        pems = {}
        for what, value in (("tls_root_ca", tls_root_ca), ("tls_client_cert", tls_client_cert),
                            ("tls_client_key", tls_client_key)):
            try:
                pems[what] = _load_pem(what, value)
            except JobwireError as e:
                pems[what] = None
                self.error = self.error or e
        if self.error is None and (pems["tls_client_cert"] is None) != (pems["tls_client_key"] is None):
            self.error = JobwireError(
                grpc.StatusCode.INVALID_ARGUMENT,
                "tls_client_cert and tls_client_key: give both (mutual TLS) or neither")
        if self.error is None:
            self.credentials = grpc.ssl_channel_credentials(
                root_certificates=pems["tls_root_ca"], private_key=pems["tls_client_key"],
                certificate_chain=pems["tls_client_cert"])

    def check(self) -> None:
        """Raise the configuration error, if any."""
        if self.error is not None:
            raise self.error

    def __repr__(self) -> str:
        return "Security(tls=%s, token=%s%s)" % (
            self.tls, "set" if self.metadata else "none",
            ", error=%r" % str(self.error) if self.error else "")


def channel_options(extra: Optional[Sequence[Tuple[str, object]]] = None
                    ) -> List[Tuple[str, object]]:
    """The options of a channel: CHANNEL_OPTIONS and SERVICE_CONFIG, then
    the caller's ``extra``, which win (see SERVICE_CONFIG)."""
    extra = dict(extra or ())
    options: Dict[str, object] = dict(CHANNEL_OPTIONS)
    if "grpc.lb_policy_name" not in extra:
        options["grpc.service_config"] = SERVICE_CONFIG
    options.update(extra)
    return list(options.items())


def _credentials(security: Security) -> grpc.ChannelCredentials:
    # With a configuration error every call raises it before using the
    # channel; it still never falls back to plaintext.
    return security.credentials or grpc.ssl_channel_credentials()


def open_channel(addr: str, extra: Optional[Sequence[Tuple[str, object]]] = None,
                 security: Optional[Security] = None) -> grpc.Channel:
    options = channel_options(extra)
    if security is not None and security.tls:
        return grpc.secure_channel(addr, _credentials(security), options=options)
    return grpc.insecure_channel(addr, options=options)


def open_aio_channel(addr: str, extra: Optional[Sequence[Tuple[str, object]]] = None,
                     security: Optional[Security] = None):
    import grpc.aio

    options = channel_options(extra)
    if security is not None and security.tls:
        return grpc.aio.secure_channel(addr, _credentials(security), options=options)
    return grpc.aio.insecure_channel(addr, options=options)
