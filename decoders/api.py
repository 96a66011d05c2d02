"""Decode one Kafka frame (the bytes after the 4-byte length prefix) into a message.

Stateless: a request decodes from its own bytes; a response needs only the api key and version of
its request. Bad input never raises: the result carries a ``status`` ("ok" or a reason naming the
field path and byte offset) and whatever could be decoded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from decoders import _runtime as rt
from decoders.element_budget import ElementBudget
from decoders.embedded import EMBEDDED_LIMIT_NOTE, embedded_limit_hit, postprocessors
from decoders.generated import registry
from decoders.generated_modules import reader_module
from decoders.redaction import with_redaction
from decoders.status import StatusKind

__all__ = ["ELEMENTS_LIMIT", "EMBEDDED_LIMIT_NOTE", "OK", "DecodedMessage", "api_name",
           "be16", "be32", "decode_request", "decode_request_bytes", "decode_response", "decode_response_bytes",
           "decode_response_exact", "embedded_limit_hit", "hit_elements_limit"]


OK = "ok"


def api_name(api_key: int | None) -> str | None:
    if api_key is None:
        return None
    return registry.API_NAMES.get(api_key)


@dataclass  # compiled, an extension type (api.pxd): its fields live in the object, read from C
class DecodedMessage:
    """One decoded request or response (treat as immutable; not frozen only for speed)."""

    kind: str  # "request" | "response"
    api_key: int | None
    api_version: int | None
    correlation_id: int | None
    status: str  # "ok" or the reason decoding stopped (text, as the events keep it)
    body: dict[str, Any] | None
    size: int  # frame size in bytes (without the length prefix)
    client_id: str | None = None
    header_version: int | None = None
    header: dict[str, Any] | None = None  # decoded header (tagged fields included)
    body_version: int | None = None  # version the body was decoded at, when it differs
    error_path: str | None = None
    error_offset: int | None = None
    notes: tuple[str, ...] = ()
    inner: DecodedMessage | None = None  # the request/response an Envelope carried
    status_kind: StatusKind = StatusKind.OK  # how the decode ended (decoders.status): what code tests
    # The body's JSON text (UTF-8), when the decoder wrote it straight from the frame (``text`` mode of
    # decode_request_bytes / decode_response_bytes, for the events' body column). ``body`` then holds only the
    # body's top-level integer fields, and ``codes`` the non-zero ErrorCode values of the text, in order.
    text: bytes | None = None
    codes: list[int] | None = None
    # With ``text``: the topics it names, as the writer collected them (decoders/topics.py's references).
    topics: list[Any] | str | None = None
    # The name of a message that is not an api's: "SaslToken", a legacy SASL token (decoders.sasl_tokens).
    name: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def api_name(self) -> str | None:
        return api_name(self.api_key) if self.api_key is not None else self.name


_KIND_OK = StatusKind.OK


def _new_message(kind: str, api_key: int | None, api_version: int | None, correlation_id: int | None,
                 status: str, body: dict[str, Any] | None, size: int, client_id: str | None,
                 header_version: int | None, header: dict[str, Any] | None, body_version: int | None,
                 error_path: str | None, error_offset: int | None, notes: tuple[str, ...],
                 inner: DecodedMessage | None) -> DecodedMessage:
    """DecodedMessage(...) for the fast paths, every field positionally: compiled, the fields are stored
    from C (no ``__init__`` call)."""
    m = DecodedMessage.__new__(DecodedMessage)
    m.kind = kind
    m.api_key = api_key
    m.api_version = api_version
    m.correlation_id = correlation_id
    m.status = status
    m.body = body
    m.size = size
    m.client_id = client_id
    m.header_version = header_version
    m.header = header
    m.body_version = body_version
    m.error_path = error_path
    m.error_offset = error_offset
    m.notes = notes
    m.inner = inner
    m.status_kind = _KIND_OK
    return m


class _Failure(Exception):
    def __init__(self, kind: StatusKind, status: str, path: str | None, offset: int | None) -> None:
        super().__init__(status)
        self.kind, self.status, self.path, self.offset = kind, status, path, offset


def _failure(err: BaseException, p: int) -> _Failure:
    """What a reader's DecodeError (or a RecursionError, reading at ``p``) says of where the decode stopped."""
    if isinstance(err, rt.DecodeError):
        return _Failure(err.kind, err.describe(), ".".join(err.path) or None, err.offset)
    return _Failure(StatusKind.INVALID, "invalid: nesting too deep", None, p)


class _Readers:
    """What decodes one api key and version of one kind (request or response): compiled, an extension type
    (api.pxd) whose fields are read from C. The readers are the one reader of each layout (compiled, or plain
    for the rare APIs: ``generated_modules``), which names the field path and offset where it fails: a frame is
    decoded once."""

    __slots__ = ("body", "header", "header_version", "post", "text")

    def __init__(self, header: rt.Reader, body: rt.Reader, header_version: int, post: Any, text: Any) -> None:
        self.header = header
        self.body = body
        self.header_version = header_version
        self.post = post  # the postprocessor (decoders.embedded, redaction) of the message, or None
        self.text = text  # the body's compiled JSON text writer (Produce, Fetch), or None


#: By kind, then ``api_key << 16 | version`` (an int key: no tuple per lookup; one per pair, as only versions
#: 0..0xFFFF are kept); None for an unknown pair.
_request_readers: dict[int, _Readers | None] = {}
_response_readers: dict[int, _Readers | None] = {}
_UNSEEN: Any = object()


def _readers(api_key: int, version: int, kind: str) -> _Readers | None:
    """The readers (see ``_Readers``) of a known api key and version, else None. (Compiled, the key and
    version are C integers and the table a typed dict: a C lookup per message.)"""
    if not 0 <= version <= 0xFFFF:
        return None  # no such version (the caller's status says so)
    table = _request_readers if kind == "request" else _response_readers
    key = (api_key << 16) | version
    entry: _Readers | None = table.get(key, _UNSEEN)
    if entry is not _UNSEEN:
        return entry
    versions = registry.REQUEST_HEADER_VERSION if kind == "request" else registry.RESPONSE_HEADER_VERSION
    header_version = versions.get((api_key, version))
    entry = None
    if header_version is not None:
        header_name = registry.DATA_MODULES["RequestHeader" if kind == "request" else "ResponseHeader"]
        header = reader_module(header_name).VERSIONS[header_version]
        module = reader_module(registry.API_MODULES[api_key])
        body = (module.REQUEST if kind == "request" else module.RESPONSE)[version]
        post = (_POST or _postprocessors()).get((kind, api_key))
        text = None
        if post is None:  # a postprocessor reads the whole body; only compiled modules have text writers
            text = getattr(module, "REQUEST_TEXT" if kind == "request" else "RESPONSE_TEXT", {}).get(version)
        entry = _Readers(header, body, header_version, post, text)
    table[key] = entry
    return entry


#: What :func:`_exact` returns when the decode stopped at the message's array element budget.
_OVER_BUDGET = rt.OVER_BUDGET


def _exact(entry: _Readers, b: bytes, budget: ElementBudget) -> tuple[dict[str, Any], dict[str, Any]] | str | None:
    """(header, body) when ``b`` decodes exactly with these readers (spending ``budget``), :data:`_OVER_BUDGET`
    when the decode stopped at the element budget, else None (the cheap test behind guessing)."""
    try:
        header, p = entry.header(b, 0, budget)
        body, end = entry.body(b, p, budget)
    except rt.DecodeError as err:
        return _OVER_BUDGET if rt.spent_budget(err) else None
    except RecursionError:
        return None
    return (header, body) if end == len(b) else None


def _text(entry: _Readers, b: bytes, budget: ElementBudget) -> tuple[dict[str, Any], tuple[Any, ...]] | None:
    """(header, (text, codes, partial body, topics)) when the compiled JSON writer of ``entry`` writes the whole
    body of ``b`` (spending ``budget``), else None (the readers decode it, and say why where it fails)."""
    try:
        header, p = entry.header(b, 0, budget)
    except rt.DecodeError:
        return None
    written = entry.text(b, p, budget)
    return (header, written) if written is not None else None


#: How a message's status starts when its decode stopped at the array element budget (``--max-elements``).
ELEMENTS_LIMIT = rt.ELEMENTS_LIMIT


def hit_elements_limit(msg: DecodedMessage) -> bool:
    """Whether decoding ``msg`` stopped at the array element budget (``--max-elements``)."""
    return msg.status_kind == StatusKind.LIMIT


def decode_request(frame: bytes | bytearray | memoryview, *, postprocess: bool = True,
                   max_elements: int = rt.MAX_ELEMENTS) -> DecodedMessage:
    """Decode a request frame: header (v0/v1/v2 by api key and version) and body.

    ``max_elements`` bounds the array elements decoded (all arrays of the message and its embedded
    structures together); past it the status says so (``limit: ...``)."""
    return decode_request_bytes(frame if type(frame) is bytes else bytes(frame), postprocess, max_elements)


def be16(b: bytes, p: int) -> int:
    """The signed big-endian 16-bit integer at ``b[p:p + 2]`` (compiled: two C byte reads, no struct call)."""
    hi = b[p]
    lo = b[p + 1]
    return ((hi ^ 0x80) - 0x80) * 256 + lo  # the high byte sign-extended (small constants: C arithmetic)


def be32(b: bytes, p: int) -> int:
    """The signed big-endian 32-bit integer at ``b[p:p + 4]`` (compiled: four C byte reads, no struct call)."""
    b0 = b[p]
    b1 = b[p + 1]
    b2 = b[p + 2]
    b3 = b[p + 3]
    return ((b0 ^ 0x80) - 0x80) * 16777216 + b1 * 65536 + b2 * 256 + b3  # the high byte sign-extended


def decode_request_bytes(b: bytes, postprocess: bool, max_elements: int, text: bool = False) -> DecodedMessage:
    """:func:`decode_request` of a ``bytes`` frame, every argument positional (a C call from compiled code).
    With ``text``, a body the compiled decoders can write as JSON straight from the frame (Produce, Fetch) comes
    as ``text`` with a partial ``body`` (see :class:`DecodedMessage`)."""
    return decode_request_within(b, postprocess, ElementBudget(max_elements), text)


def decode_request_within(b: bytes, postprocess: bool, budget: ElementBudget, text: bool = False) -> DecodedMessage:
    """:func:`decode_request_bytes` spending ``budget``, the element budget of the message this one belongs to
    (an Envelope's inner request spends its Envelope's). The JSON writer, when it gives up, leaves ``budget`` as
    it found it; what the decode that counts left stays in it."""
    size = len(b)
    if size < 8:
        return DecodedMessage("request", None, None, None,
                              f"truncated: request header needs 8 bytes, frame has {size}", None, size,
                              status_kind=StatusKind.TRUNCATED)
    api_key = be16(b, 0)
    version = be16(b, 2)
    corr = be32(b, 4)
    entry = _readers(api_key, version, "request")
    if entry is None:
        return _unknown_request(b, api_key, version, corr)
    if text and entry.text is not None:
        start = budget.left
        written = _text(entry, b, budget)
        if written is not None:
            header, out = written
            written_msg = _new_message("request", api_key, version, corr, OK, out[2], size, header.get("ClientId"),
                                       entry.header_version, header, None, None, None, (), None)
            written_msg.text = out[0]
            written_msg.codes = out[1]
            written_msg.topics = out[3]
            return written_msg
        budget.left = start
    try:
        header, p = entry.header(b, 0, budget)
    except (rt.DecodeError, RecursionError) as err:
        fail = _failure(err, 0)
        return DecodedMessage("request", api_key, version, corr, f"header {fail.status}", None, size,
                              header_version=entry.header_version, error_path=fail.path, error_offset=fail.offset,
                              status_kind=fail.kind)
    client_id = header.get("ClientId")
    try:
        body, end = entry.body(b, p, budget)
    except (rt.DecodeError, RecursionError) as err:
        return _finish("request", api_key, version, corr, b, None, p, _failure(err, p), entry.header_version,
                       header, client_id)
    if end == size:
        msg = _new_message("request", api_key, version, corr, OK, body, size, client_id, entry.header_version,
                           header, None, None, None, (), None)
    else:
        msg = _finish("request", api_key, version, corr, b, body, end, None, entry.header_version, header, client_id)
    if postprocess and entry.post is not None:
        msg = entry.post(msg, None, budget)
    return msg


def _unknown_request(b: bytes, api_key: int, version: int, corr: int) -> DecodedMessage:
    """A request of an api key, or a version of it, that no reader knows."""
    size = len(b)
    name = registry.API_NAMES.get(api_key)
    if name is None:
        return DecodedMessage("request", api_key, version, corr, f"unknown api key {api_key}", None, size,
                              client_id=_best_effort_client_id(b), status_kind=StatusKind.UNKNOWN_API)
    lo, hi = registry.VERSION_RANGES[api_key]
    return DecodedMessage("request", api_key, version, corr,
                          f"unknown version {version} of {name} (known {lo}-{hi})", None, size,
                          client_id=_best_effort_client_id(b), status_kind=StatusKind.UNKNOWN_VERSION)


def decode_response(
    frame: bytes | bytearray | memoryview,
    api_key: int,
    api_version: int,
    *,
    inner: tuple[int, int] | None = None,
    postprocess: bool = True,
    max_elements: int = rt.MAX_ELEMENTS,
) -> DecodedMessage:
    """Decode a response frame given its request's api key and version.

    ``inner`` is the (api key, version) of the request an Envelope carried, when known, so that
    the EnvelopeResponse's ResponseData can be decoded as that response. ``max_elements`` as for
    :func:`decode_request`.
    """
    return decode_response_bytes(frame if type(frame) is bytes else bytes(frame), api_key, api_version, inner,
                                 postprocess, max_elements)


def decode_response_bytes(b: bytes, api_key: int, api_version: int, inner: tuple[int, int] | None,
                          postprocess: bool, max_elements: int, text: bool = False) -> DecodedMessage:
    """:func:`decode_response` of a ``bytes`` frame, every argument positional (a C call from compiled code);
    ``text`` as for :func:`decode_request_bytes`."""
    return decode_response_within(b, api_key, api_version, inner, postprocess, ElementBudget(max_elements), text)


def decode_response_within(b: bytes, api_key: int, api_version: int, inner: tuple[int, int] | None,
                           postprocess: bool, budget: ElementBudget, text: bool = False) -> DecodedMessage:
    """:func:`decode_response_bytes` spending ``budget``, as :func:`decode_request_within` does."""
    size = len(b)
    start = budget.left
    entry = _readers(api_key, api_version, "response")
    if size < 4:
        return DecodedMessage("response", api_key, api_version, None,
                              f"truncated: response header needs 4 bytes, frame has {size}", None, size,
                              status_kind=StatusKind.TRUNCATED)
    if entry is None:
        return _unknown_response(b, api_key, api_version)
    if text and entry.text is not None:
        written = _text(entry, b, budget)
        if written is not None:
            text_header, out = written
            written_msg = _new_message("response", api_key, api_version, text_header["CorrelationId"], OK,
                                       out[2], size, None, entry.header_version, text_header, None, None, None,
                                       (), None)
            written_msg.text = out[0]
            written_msg.codes = out[1]
            written_msg.topics = out[3]
            return written_msg
        budget.left = start
    try:
        header, p = entry.header(b, 0, budget)
    except (rt.DecodeError, RecursionError) as err:
        fail = _failure(err, 0)
        return DecodedMessage("response", api_key, api_version, be32(b, 0), f"header {fail.status}", None, size,
                              header_version=entry.header_version, error_path=fail.path, error_offset=fail.offset,
                              status_kind=fail.kind)
    corr = header["CorrelationId"]
    try:
        body, end = entry.body(b, p, budget)
    except (rt.DecodeError, RecursionError) as err:
        msg = _finish("response", api_key, api_version, corr, b, None, p, _failure(err, p), entry.header_version,
                      header, None)
    else:
        if end == size:
            msg = _new_message("response", api_key, api_version, corr, OK, body, size, None, entry.header_version,
                               header, None, None, None, (), None)
        else:
            msg = _finish("response", api_key, api_version, corr, b, body, end, None, entry.header_version, header,
                          None)
    if api_key == 18 and api_version > 0 and not msg.ok:
        msg = _api_versions_v0(msg, api_version, corr, b, p, budget, start, entry.header_version, header)
    if postprocess and msg.body is not None and entry.post is not None:
        msg = entry.post(msg, inner, budget)
    return msg


def _api_versions_v0(msg: DecodedMessage, api_version: int, corr: int, b: bytes, p: int, budget: ElementBudget,
                     start: int, header_version: int, header: dict[str, Any]) -> DecodedMessage:
    """An ApiVersions response ``msg`` that did not decode at its request's version, decoded at v0 when it
    does: a broker that does not support the requested version answers at v0 (the Java client retries the
    parse at v0 the same way). ``budget`` is given back what the failed decode spent (to ``start``)."""
    budget.left = start
    v0 = reader_module(registry.API_MODULES[18]).RESPONSE[0]
    try:
        body0, end0 = v0(b, p, budget)
    except (rt.DecodeError, RecursionError):
        return msg
    if end0 != len(b):
        return msg
    return _finish("response", 18, api_version, corr, b, body0, end0, None, header_version, header, None,
                   body_version=0, notes=(f"body did not parse at v{api_version} ({msg.status}); decoded at v0",))


def _unknown_response(b: bytes, api_key: int, api_version: int) -> DecodedMessage:
    """A response to a request of an api key, or a version of it, that no reader knows."""
    size = len(b)
    corr = be32(b, 0)
    name = registry.API_NAMES.get(api_key)
    if name is None:
        return DecodedMessage("response", api_key, api_version, corr, f"unknown api key {api_key}", None, size,
                              status_kind=StatusKind.UNKNOWN_API)
    lo, hi = registry.VERSION_RANGES[api_key]
    return DecodedMessage("response", api_key, api_version, corr,
                          f"unknown version {api_version} of {name} (known {lo}-{hi})", None, size,
                          status_kind=StatusKind.UNKNOWN_VERSION)


def decode_response_exact(frame: bytes | bytearray | memoryview, api_key: int, api_version: int,
                          max_elements: int = rt.MAX_ELEMENTS,
                          over_budget: list[tuple[int, int]] | None = None) -> DecodedMessage | None:
    """The response (not postprocessed) when the frame decodes exactly (header and body, no trailing
    bytes) at this api key and version, else None without the error detail a failed decode builds:
    the cheap test behind guessing. A decode that stopped at the element budget appends (api_key,
    api_version) to ``over_budget`` when given."""
    return _response_exact(frame if type(frame) is bytes else bytes(frame), api_key, api_version,
                           ElementBudget(max_elements), over_budget)


def _response_exact(b: bytes, api_key: int, api_version: int, budget: ElementBudget,
                    over_budget: list[tuple[int, int]] | None) -> DecodedMessage | None:
    entry = _readers(api_key, api_version, "response")
    decoded = _exact(entry, b, budget) if entry is not None and len(b) >= 4 else None
    if type(decoded) is not tuple:
        if decoded is _OVER_BUDGET and over_budget is not None:
            over_budget.append((api_key, api_version))
        return None
    assert entry is not None
    header, body = decoded
    return _new_message("response", api_key, api_version, header["CorrelationId"], OK, body, len(b), None,
                        entry.header_version, header, None, None, None, (), None)


def _finish(
    kind: str,
    api_key: int,
    version: int,
    corr: int,
    b: bytes,
    body: dict[str, Any] | None,
    end: int,
    fail: _Failure | None,
    header_version: int,
    header: dict[str, Any],
    client_id: str | None,
    body_version: int | None = None,
    notes: tuple[str, ...] = (),
) -> DecodedMessage:
    if fail is not None:
        return DecodedMessage(kind, api_key, version, corr, fail.status, None, len(b), client_id,
                              header_version, header, body_version, fail.path, fail.offset, notes,
                              status_kind=fail.kind)
    status = OK
    status_kind = StatusKind.OK
    err_offset = None
    if end != len(b):
        status = f"trailing bytes: {len(b) - end} after the body (offset {end})"
        status_kind = StatusKind.TRAILING_BYTES
        err_offset = end
    return DecodedMessage(kind, api_key, version, corr, status, body, len(b), client_id,
                          header_version, header, body_version, None, err_offset, notes, status_kind=status_kind)


def _best_effort_client_id(b: bytes) -> str | None:
    """The v1 header's client id, when the bytes look like one (unknown key or version)."""
    if len(b) < 10:
        return None
    n = be16(b, 8)
    if n < 0 or 10 + n > len(b):
        return None
    return b[10 : 10 + n].decode("utf-8", "backslashreplace")


_POST: dict[tuple[str, int], Any] = {}


def _postprocessors() -> dict[tuple[str, int], Any]:
    """decoders.embedded's postprocessors, made on first use: an Envelope's inner message is decoded by this
    module's decoders."""
    if not _POST:  # the embedded protocols decoded, then the secrets of every message redacted
        _POST.update(with_redaction(postprocessors(decode_request_within, decode_response_within)))
    return _POST


def _postprocess(msg: DecodedMessage, inner: tuple[int, int] | None, budget: ElementBudget) -> DecodedMessage:
    if msg.api_key is None:
        return msg
    handler = (_POST or _postprocessors()).get((msg.kind, msg.api_key))
    return handler(msg, inner, budget) if handler is not None else msg
