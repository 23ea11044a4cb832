"""Bounds on what a decoded document may cost: nesting depth and YAML alias expansion.

Hostile input is normal input. A 461-byte YAML alias bomb expands to millions of values in
whatever walks the result, and JSON nested a few thousand deep exhausts the recursion limit
of every recursive decoder or walker. Each loader (config files, cluster files, the
extender's bodies) checks these bounds before the data goes anywhere else.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import numpy as np
import yaml

from .errors import KschedError

__all__ = [
    "MAX_ALIAS_EXPANSION",
    "MAX_DEPTH",
    "SHAPE_LEVELS",
    "BoundedLoaderMixin",
    "BoundedSafeLoader",
    "DecodeLimitError",
    "check_depth",
    "clip",
    "decode_json",
    "json_depth",
    "json_length",
    "json_shape",
    "loads_json",
    "utf8_error_offset",
]

#: Deepest nesting accepted. Kubernetes objects nest about 15 deep (a pod's affinity
#: terms); well under Python's recursion limit even for recursive walkers.
MAX_DEPTH = 100
#: Nodes that YAML aliases may add to a document beyond those written out. go-yaml (which
#: kube-scheduler uses) rejects "excessive aliasing" on a similar ratio rule.
MAX_ALIAS_EXPANSION = 100_000
#: Longest excerpt of a value an error message quotes.
MAX_EXCERPT = 200


class DecodeLimitError(KschedError, ValueError):
    """A document beyond the nesting or alias bound; the message says which."""


def clip(text: str, limit: int = MAX_EXCERPT) -> str:
    """``text`` cut to ``limit`` characters (an ellipsis marks the cut)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_depth(obj: Any, limit: int = MAX_DEPTH) -> None:
    """DecodeLimitError if ``obj`` (decoded JSON/YAML) nests deeper than ``limit``.

    Iterative, so it cannot itself run out of stack; shared containers (YAML aliases) are
    walked once."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    seen: set[int] = set()
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            raise DecodeLimitError(f"nesting deeper than {limit} levels")
        if id(item) in seen:
            continue
        seen.add(id(item))
        stack.extend((c, depth + 1) for c in children)


def loads_json(text: str | bytes, **kw: Any) -> Any:
    """``json.loads`` within the depth bound (DecodeLimitError beyond it)."""
    try:
        out = json.loads(text, **kw)
    except RecursionError:
        raise DecodeLimitError(f"nesting deeper than {MAX_DEPTH} levels") from None
    check_depth(out)
    return out


_OPEN, _CLOSE, _QUOTE, _BACKSLASH, _COMMA = 1, 2, 3, 4, 5
# bytes.translate table: the bytes that matter to nesting get a class, all others 0.
_JSON_CLASS = bytes(
    {
        ord("{"): _OPEN,
        ord("["): _OPEN,
        ord("}"): _CLOSE,
        ord("]"): _CLOSE,
        ord('"'): _QUOTE,
        ord("\\"): _BACKSLASH,
        ord(","): _COMMA,
    }.get(b, 0)
    for b in range(256)
)
#: Bytes scanned at a time: the index arrays of a chunk cost up to 8 bytes per input byte,
#: so a 60 MiB body scanned whole would take half a gigabyte.
_SCAN_CHUNK = 1 << 20


#: Nesting levels ``json_shape`` counts commas at (0 to this, exclusive).
SHAPE_LEVELS = 8


def json_shape(data: bytes | memoryview | msgspec.Raw) -> tuple[int, int, list[int]]:
    """(deepest nesting, values, commas at each nesting below ``SHAPE_LEVELS``) of JSON
    text, from its bytes alone, one chunk at a time (a string, an escape or a run of
    backslashes may span two chunks: the state carries over). ``values`` counts the
    elements of arrays, the members of objects (a key with its value) and the top value,
    which bounds the objects a decoder makes: commas and open brackets outside strings,
    plus one. The commas at a nesting bound how many elements or members the containers
    there hold (each holds its commas plus one).

    Exact for valid JSON: brackets inside strings do not count, and a quote is a string's
    end unless an odd run of backslashes precedes it. For malformed text it is an
    estimate, and the decoder rejects that text anyway."""
    view = memoryview(data).cast("B")  # msgspec.Raw is a buffer
    depth = deepest = values = 0
    commas = np.zeros(SHAPE_LEVELS, dtype=np.int64)
    in_string = escaped = False  # at the chunk's start: inside a string; its byte escaped
    for start in range(0, len(view), _SCAN_CHUNK):
        chunk = bytes(view[start : start + _SCAN_CHUNK])
        cls = np.frombuffer(chunk.translate(_JSON_CLASS), dtype=np.uint8)
        pos = np.flatnonzero(cls)
        if escaped and pos.size and pos[0] == 0:
            pos = pos[1:]  # escaped by the previous chunk's last backslash: a literal
        escaped = False
        kind = cls[pos]
        backslashes = pos[kind == _BACKSLASH]
        quotes = pos[kind == _QUOTE]
        if backslashes.size:
            # In each run of consecutive backslashes the 1st, 3rd, ... escape the next byte.
            starts = np.empty(backslashes.size, dtype=bool)
            starts[0] = True
            np.not_equal(np.diff(backslashes), 1, out=starts[1:])
            first = np.flatnonzero(starts)
            lengths = np.diff(np.append(first, backslashes.size))
            offset = np.arange(backslashes.size) - np.repeat(first, lengths)
            escapes = backslashes[offset % 2 == 0] + 1  # sorted
            escaped = bool(escapes[-1] == len(chunk))
            hit = np.searchsorted(escapes, quotes)
            is_escaped = escapes[np.minimum(hit, escapes.size - 1)] == quotes
            quotes = quotes[~is_escaped]
        structural = (kind == _OPEN) | (kind == _CLOSE) | (kind == _COMMA)
        where, what = pos[structural], kind[structural]
        # Outside a string when an even number of real quotes (with the carried-over
        # string) precede it.
        outside = (np.searchsorted(quotes, where) + in_string) % 2 == 0
        in_string = bool((quotes.size + in_string) % 2)
        what = what[outside]
        values += what.size - int(np.count_nonzero(what == _CLOSE))
        steps = (what == _OPEN).astype(np.int64) - (what == _CLOSE)
        levels = depth + np.cumsum(steps)  # the nesting after each byte
        if levels.size:
            deepest = max(deepest, int(levels.max()))
            at = levels[(what == _COMMA) & (levels >= 0) & (levels < SHAPE_LEVELS)]
            commas += np.bincount(at, minlength=SHAPE_LEVELS)
            depth = int(levels[-1])
    return deepest, values + 1, commas.tolist()


def json_depth(data: bytes | memoryview | msgspec.Raw) -> int:
    """How deep the JSON text ``data`` nests (0 for a scalar), from its bytes alone.

    Walking the decoded value costs seconds for a 60 MiB NodeList; this scans the bytes with
    numpy in a fraction of that, in bounded memory, and runs before any recursive decoder
    sees the text."""
    return json_shape(data)[0]


def json_length(data: bytes | memoryview | msgspec.Raw) -> int:
    """How many elements (or members) the JSON array (or object) ``data`` holds, from its
    bytes alone: a bound checked before a decoder makes an object for each. ``data`` is
    one valid JSON array or object (a ``msgspec.Raw`` of one, say)."""
    view = memoryview(data).cast("B")
    i = 0
    while i < len(view) and view[i] in b" \t\r\n":
        i += 1
    if i == len(view) or view[i] not in b"[{":
        raise ValueError("not a JSON array or object")
    i += 1
    while i < len(view) and view[i] in b" \t\r\n":
        i += 1
    if i == len(view) or view[i] in b"]}":
        return 0
    return json_shape(view)[2][1] + 1


def decode_json(data: bytes | str | msgspec.Raw) -> Any:
    """``msgspec.json.decode`` within the depth bound (DecodeLimitError beyond it); a string
    that is not UTF-8 is a ``msgspec.DecodeError`` like any other malformed JSON."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if json_depth(raw) > MAX_DEPTH:
        raise DecodeLimitError(f"nesting deeper than {MAX_DEPTH} levels")
    try:
        return msgspec.json.decode(data)
    except RecursionError:
        raise DecodeLimitError(f"nesting deeper than {MAX_DEPTH} levels") from None
    except UnicodeDecodeError as e:  # msgspec up to 0.22
        where = utf8_error_offset(raw)
        raise msgspec.DecodeError(f"invalid UTF-8 at byte {where}: {e.reason}") from None
    except msgspec.DecodeError as e:  # 0.23 on: "Invalid UTF-8 encoded string"
        where = utf8_error_offset(raw)
        if where is None:
            raise
        raise msgspec.DecodeError(f"invalid UTF-8 at byte {where}: {e}") from None


def utf8_error_offset(data: bytes | memoryview | msgspec.Raw) -> int | None:
    """The byte offset of the first invalid UTF-8 sequence in ``data`` (None: there is
    none). msgspec reports an offset within the string it was decoding, which points the
    reader nowhere."""
    try:
        bytes(memoryview(data)).decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start
    return None


class BoundedLoaderMixin:
    """For a PyYAML ``Loader`` (put it first in the bases): nesting is bounded while
    composing, with the line and column of the offending node, and a document whose
    aliases would add more than ``MAX_ALIAS_EXPANSION`` nodes is refused before anything
    is constructed from it."""

    _depth = 0
    # Whether the document being composed has an alias: only then can it expand, so only
    # then is it walked (the walk costs as much as composing a big alias-free dump).
    _aliased = False

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                event = self.peek_event()  # type: ignore[attr-defined]
                raise yaml.composer.ComposerError(
                    None, None, f"nesting deeper than {MAX_DEPTH} levels", event.start_mark
                )
            if self.check_event(yaml.events.AliasEvent):  # type: ignore[attr-defined]
                self._aliased = True
            return super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self._depth -= 1

    # The composer's entry points: checked before any constructor (or a subclass's own
    # walk of the nodes) sees the document.
    def get_single_node(self) -> Any:
        self._aliased = False
        node = super().get_single_node()  # type: ignore[misc]
        if node is not None and self._aliased:
            _check_aliasing(node)
        return node

    def get_node(self) -> Any:
        self._aliased = False
        node = super().get_node()  # type: ignore[misc]
        if node is not None and self._aliased:
            _check_aliasing(node)
        return node


def _check_aliasing(root: yaml.Node) -> None:
    """Count the nodes the document expands to (every alias re-counts its target's
    subtree), iteratively and with each subtree's size computed once. An alias inside its
    own anchor's value is refused as go-yaml refuses it."""
    size: dict[int, int] = {}
    open_: set[int] = set()
    unique = 0
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if key in size:
            continue
        children = _children(node)
        if not done:
            if key in open_:
                continue  # already expanding further down the stack
            open_.add(key)
            stack.append((node, True))
            for c in children:
                if id(c) in open_:
                    raise _aliasing_error(c, "an anchor's value contains an alias to itself")
                if id(c) not in size:
                    stack.append((c, False))
            continue
        open_.discard(key)
        unique += 1
        size[key] = 1 + sum(size[id(c)] for c in children)
        if size[key] - unique > MAX_ALIAS_EXPANSION:
            raise _aliasing_error(
                root,
                f"document contains excessive aliasing (expands by more than "
                f"{MAX_ALIAS_EXPANSION} nodes)",
            )


def _aliasing_error(node: yaml.Node, problem: str) -> yaml.composer.ComposerError:
    return yaml.composer.ComposerError(None, None, problem, node.start_mark)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


try:  # libyaml's parser, when PyYAML was built with it
    from yaml.cyaml import CParser as _LibyamlParser  # type: ignore[attr-defined]

    _Parser: Any = _LibyamlParser
except ImportError:  # pragma: no cover - PyYAML's wheels ship libyaml

    class _PyParser(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):
        def __init__(self, stream: Any) -> None:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)

    _Parser = _PyParser


class BoundedSafeLoader(
    BoundedLoaderMixin,
    yaml.composer.Composer,
    _Parser,  # type: ignore[misc]
    yaml.constructor.SafeConstructor,
    yaml.resolver.Resolver,
):
    """Safe YAML, bounded, parsed by libyaml when present: the C scanner and parser (most
    of the work; several times the pure-Python loader's speed) feed the Python composer,
    whose nesting is bounded here. Not ``CSafeLoader``: its C composer recurses once per
    level and overflows the C stack (a segfault, no exception) on input nested ~100k
    deep, before any bound could be checked."""

    def __init__(self, stream: Any) -> None:
        _Parser.__init__(self, stream)
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)
