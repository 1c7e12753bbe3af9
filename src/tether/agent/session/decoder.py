"""The session file's configuration of the one protocol decoder (``protocol._decoder``:
``tether.from_json``'s mapping, stricter about fields the writer always writes, with the
file's error code and messages), and the snapshot of a caller's message before it is
appended."""

# The package's modules share their underscore helpers with one another.
# pyright: reportPrivateUsage=false, reportUnusedFunction=false

from __future__ import annotations

import dataclasses
from typing import Final, assert_never, cast, get_args

from tether.agent.session.blobs import _ImageLoader, _unavailable_note, decode_image_ref
from tether.agent.session.format import _describe, _message_body
from tether.agent.session.records import SessionStoreError, _fail, _short
from tether.jsonvalue import JsonValueError, freeze_json, thaw_json
from tether.protocol import (
    AssistantMessage,
    ImageBlock,
    Message,
    ToolResultMessage,
    UserMessage,
)
from tether.protocol._decoder import Decode, Layer, Problem, decoder, limit_text
from tether.protocol._fields import discriminant_of

__all__: list[str] = []


def _problem_text(problem: Problem) -> str:
    """The session file's words for a problem (``SESSION_INVALID_MESSAGE``'s messages)."""
    name = problem.cls.__name__ if problem.cls is not None else ""
    match problem.kind:
        case "not_array":
            return "must be an array"
        case "not_object":
            return f"{name} must be a JSON object" if name else "must be a JSON object"
        case "unknown_tag":
            return f"has an unknown {problem.key} {_describe(problem.value)}"
        case "missing":
            return f"{name} is missing {sorted(map(str, problem.keys))!r}"
        case "unexpected":
            return f"{name} has unexpected keys {sorted(map(str, problem.keys))!r}"
        case "invalid":
            return problem.text
        case "too_many_items" | "too_long" | "too_deep":
            return limit_text(problem)
        case "unsupported":
            return f"cannot be decoded as {problem.text}"
        case _:  # pragma: no cover - exhaustive
            assert_never(problem.kind)


def _invalid_message(path: str, problem: Problem) -> SessionStoreError:
    if problem.kind == "too_deep":
        return _fail("SESSION_INVALID_MESSAGE", "Session message nests too deeply")
    return _fail(
        "SESSION_INVALID_MESSAGE", f"Session message is invalid: {_short(_problem_text(problem))}"
    )


_LAYER: Final = Layer(name="session", fail=_invalid_message, written_required=True, keys_first=True)
"""The file format's layer: every key ``to_json`` always writes must be present (where
``from_json`` would fill in a default: a generated message ``id``, ``isError=False``); a
key mismatch names every unexpected key, else every missing one."""


def _decoder_for(hint: object) -> Decode:
    """The session layer's decoder of values annotated ``hint``."""
    return decoder(hint, _LAYER)


_MESSAGE_TYPES: Final = frozenset({UserMessage, AssistantMessage, ToolResultMessage})
_MESSAGE_DECODER: list[Decode] = []  # compiled on first use


def _message_decoder() -> Decode:
    """The session layer's compiled decoder of a ``Message`` (compiled on first use)."""
    if not _MESSAGE_DECODER:
        _MESSAGE_DECODER.append(decoder(Message, _LAYER))
    return _MESSAGE_DECODER[0]


_ROLE_DECODERS: dict[str, Decode] = {}  # compiled on first use


def _role_decoders() -> dict[str, Decode]:
    """The session layer's decoder of each message class by its ``role`` (the union's
    members, by their discriminant): what the ``Message`` decoder calls once it has read
    the role, for a caller that has read it already (``parse._quick_entry``)."""
    if not _ROLE_DECODERS:
        for cls in get_args(Message):
            found = discriminant_of(cls)
            if found is None:  # pragma: no cover - every message class has its role
                raise TypeError(f"{cls.__name__} has no discriminant")
            _ROLE_DECODERS[found[1]] = decoder(cls, _LAYER)
    return _ROLE_DECODERS


def _message_from_json(data: object) -> Message:
    """A message from its JSON form (exact ``dict``/``list``/``str``... as ``json`` builds)."""
    message: Message = _message_decoder()(data)
    return message


def _is_ref(item: object) -> bool:
    return type(item) is dict and cast("dict[str, object]", item).get("type") == "imageRef"


def _entry_message(entry_id: str, data: object, images: _ImageLoader) -> Message:
    """A session line's message: as ``_message_from_json``, its image references (see
    ``blobs``) resolved by ``images``; an image that cannot be loaded leaves a marker in
    the message's text instead."""
    if type(data) is not dict:
        return _message_from_json(data)
    record = cast("dict[str, object]", data)
    items: object = record.get("images")
    if type(items) is not list:
        return _message_from_json(record)
    listed = cast("list[object]", items)
    if not any(_is_ref(item) for item in listed):
        return _message_from_json(record)
    inline: list[object] = [item for item in listed if not _is_ref(item)]
    message = _message_from_json({**record, "images": inline})
    if type(message) is AssistantMessage:  # pragma: no cover - the decoder refused it
        raise _fail("SESSION_INVALID_MESSAGE", "Session message is invalid")
    carrier = cast("UserMessage | ToolResultMessage", message)
    decoded = iter(carrier.images)
    loaded: list[ImageBlock] = []
    notes: list[str] = []
    for item in listed:
        if not _is_ref(item):
            loaded.append(next(decoded))
            continue
        ref = decode_image_ref(item)
        image = images.load(entry_id, ref)
        if image is None:
            notes.append(_unavailable_note(ref, images.unavailable[-1].reason))
        else:
            loaded.append(image)
    text: str = carrier.content
    content = "\n".join([text, *notes] if text else notes)
    return dataclasses.replace(carrier, content=content, images=tuple(loaded))


def _snapshot_message(value: object) -> tuple[Message, bytes, list[tuple[str, bytes]]]:
    """A caller's message, its canonical JSON bytes and the blobs of its images, or
    ``SESSION_INVALID_MESSAGE``.

    Accepted: a protocol message (exact class), or its JSON form as an exact ``dict`` whose
    containers are exact ``dict``/``list`` with ``str`` keys (snapshotted through
    ``freeze_json``, which runs no caller code). Lone surrogates are refused here, since
    the line could never be written.
    """
    if type(value) in _MESSAGE_TYPES:
        message = cast(Message, value)
    elif type(value) is dict:
        try:
            plain = thaw_json(freeze_json(cast(object, value), path="message"))
        except JsonValueError as error:
            raise _fail("SESSION_INVALID_MESSAGE", f"Session message is invalid: {error}") from None
        message = _message_from_json(plain)
    else:
        raise _fail(
            "SESSION_INVALID_MESSAGE",
            "Session message must be a protocol message or its JSON object "
            f"(got {type(value).__name__})",
        )
    body, blobs = _message_body(message)
    return message, body, blobs
