"""A type-directed codec between the core's objects and JSON-able data.

The shells keep the core's state (the tracker's memory, held verdicts) as
data, never as pickles: each class the format may hold is registered here
by a stable name with its fields and their declared types, and a value is
encoded and decoded by the type its field declares.  Decoding builds only
registered classes, field by field, and checks every value's type on the
way: anything else (an unknown field, a string where a number belongs, a
reference to nothing) raises :class:`FormatError`, so the worst a crafted
document can do is fail to decode.

Encodings, by declared type: ``int``, ``float``, ``str``, ``bool`` and
``None`` as themselves (``float('inf')`` as JSON's ``Infinity``);
``X | None`` as ``null`` or ``X``; tuples, lists, deques, sets, frozensets
and ``array('d')`` as lists; ``dict[str, V]`` as an object (its order
kept) and other dicts as a list of ``[key, value]`` pairs; enums as their
value; a registered immutable class (a NamedTuple) as the list of its
fields in order; a registered *shared* class (mutable objects several
others hold: the same object must come back as one object) as its index
in the document's table of shared objects, each listed once, after those it
refers to.

The codec is pure: it knows no file, database or JSON library; the
caller turns the data into bytes.
"""

from __future__ import annotations

import hashlib
import types
import typing
from array import array
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

Encoder = Callable[[Any, "_Encoding"], Any]
Decoder = Callable[[Any, "_Decoding"], Any]


class FormatError(ValueError):
    """A document, or a value in it, that the format does not allow."""


@dataclass(frozen=True)
class Schema:
    """One registered class: its name in the format, its fields and how it is made.

    ``fields`` maps each field to its declared type, in the order encoded.
    ``shared`` classes keep their identity (encoded once, referred to by
    index).  ``make`` builds an instance from the decoded fields (by
    keyword); None: an empty instance whose attributes are set one by one
    (slotted and plain classes, whose constructors compute more).
    ``derived`` are a slotted class's attributes that are not saved (a
    cache, a bound worked out again), each with what makes it anew on
    restore; they are no part of the format.
    """

    name: str
    cls: type
    fields: tuple[tuple[str, Any], ...]
    shared: bool = False
    make: Callable[..., Any] | None = None
    derived: tuple[tuple[str, Callable[[], Any]], ...] = ()


class Codec:
    """Registered classes, and the encoders and decoders compiled for their types."""

    def __init__(self, schemas: typing.Iterable[Schema]) -> None:
        self._by_class: dict[type, Schema] = {}
        for schema in schemas:
            self._by_class[schema.cls] = schema
        self._encoders: dict[Any, Encoder] = {}
        self._decoders: dict[Any, Decoder] = {}

    def digest(self) -> str:
        """A digest of every registered class's name, fields and field types.

        It changes when a field is added, renamed or retyped, not when a
        comment or a method does: what a saved document depends on.
        """
        text = "\n".join(
            f"{s.name} shared={s.shared}: "
            + ", ".join(f"{n}: {self.type_name(t)}" for n, t in s.fields)
            for s in sorted(self._by_class.values(), key=lambda s: s.name)
        )
        return hashlib.sha256(text.encode()).hexdigest()

    def encode(self, value: Any, declared: Any) -> dict[str, Any]:
        """``value`` (of type ``declared``) as a document: its shared objects and itself."""
        encoding = _Encoding()
        root = self.encoder(declared)(value, encoding)
        return {"shared": encoding.table, "root": root}

    def decode(self, document: Any, declared: Any) -> Any:
        """The value of type ``declared`` that ``document`` holds (FormatError if none)."""
        if not isinstance(document, dict) or set(document) != {"shared", "root"}:
            raise FormatError("a document is an object of 'shared' and 'root'")
        table = document["shared"]
        if not isinstance(table, list):
            raise FormatError("'shared' is a list")
        decoding = _Decoding()
        for entry in table:
            decoding.objects.append(self._decode_shared(entry, decoding))
        return self.decoder(declared)(document["root"], decoding)

    # -- compiling ------------------------------------------------------------

    def encoder(self, declared: Any) -> Encoder:
        """The encoder of values of the declared type (compiled once)."""
        found = self._encoders.get(declared)
        if found is None:
            found = self._encoders[declared] = _compile_encoder(self, declared)
        return found

    def decoder(self, declared: Any) -> Decoder:
        """The decoder of data encoded from the declared type (compiled once)."""
        found = self._decoders.get(declared)
        if found is None:
            found = self._decoders[declared] = _compile_decoder(self, declared)
        return found

    def type_name(self, declared: Any) -> str:
        """A declared type's text by the format's own names (not the classes' modules)."""
        schema = self.schema(declared)
        if schema is not None:
            return schema.name
        args = _args(declared)
        if args:
            origin = typing.get_origin(declared)
            inner = ", ".join("..." if a is Ellipsis else self.type_name(a) for a in args)
            return f"{_type_name(origin)}[{inner}]"
        return _type_name(declared)

    def schema(self, cls: Any) -> Schema | None:
        """The registered schema of ``cls``, if it is a registered class."""
        return self._by_class.get(cls) if isinstance(cls, type) else None

    def encode_fields(self, schema: Schema, obj: Any, encoding: _Encoding) -> list[Any]:
        """The list of an object's encoded fields, in the schema's order."""
        return [self.encoder(t)(getattr(obj, n), encoding) for n, t in schema.fields]

    def decode_fields(self, schema: Schema, data: Any, decoding: _Decoding) -> Any:
        """The object a list of encoded fields makes (FormatError if it makes none)."""
        if not isinstance(data, list) or len(data) != len(schema.fields):
            raise FormatError(f"{schema.name} is a list of {len(schema.fields)} fields")
        pairs = zip(schema.fields, data, strict=True)
        values = {n: self.decoder(t)(v, decoding) for (n, t), v in pairs}
        if schema.make is not None:
            return schema.make(**values)
        obj: Any = object.__new__(schema.cls)
        for name, value in values.items():
            object.__setattr__(obj, name, value)
        for name, anew in schema.derived:
            object.__setattr__(obj, name, anew())
        return obj

    def _decode_shared(self, entry: Any, decoding: _Decoding) -> Any:
        """One entry of a document's table of shared objects."""
        if not isinstance(entry, list) or len(entry) != 2 or not isinstance(entry[0], str):
            raise FormatError("a shared object is [class name, fields]")
        schema = next((s for s in self._by_class.values() if s.shared and s.name == entry[0]), None)
        if schema is None:
            raise FormatError(f"no shared class is named {entry[0]!r}")
        return self.decode_fields(schema, entry[1], decoding)


class _Encoding:
    """The shared objects met so far while encoding: their table and indices."""

    def __init__(self) -> None:
        self.table: list[Any] = []
        self.index: dict[int, int] = {}
        # The objects themselves, so that no id is reused while encoding.
        self.kept: list[Any] = []


class _Decoding:
    """The shared objects decoded so far, by index."""

    def __init__(self) -> None:
        self.objects: list[Any] = []


def _type_name(declared: Any) -> str:
    """The name of a type that is not a registered class (a builtin, an enum, a union)."""
    if declared is None or declared is type(None):
        return "None"
    if isinstance(declared, type):
        return declared.__name__
    return str(declared).replace("typing.", "")


def _args(declared: Any) -> tuple[Any, ...]:
    """The arguments of a generic type (``dict[str, int]``: ``(str, int)``)."""
    return typing.get_args(declared)


def _optional(declared: Any) -> Any | None:
    """``X`` of a declared ``X | None``; None for other types (FormatError for other unions)."""
    origin = typing.get_origin(declared)
    if origin is not typing.Union and origin is not types.UnionType:
        return None
    rest = [a for a in _args(declared) if a is not type(None)]
    if len(rest) != 1 or len(_args(declared)) != 2:
        raise FormatError(f"the format holds no union but X | None: {declared}")
    return rest[0]


_SCALARS: dict[Any, Callable[[Any], bool]] = {
    int: lambda v: isinstance(v, int) and not isinstance(v, bool),
    float: lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    str: lambda v: isinstance(v, str),
    bool: lambda v: isinstance(v, bool),
    type(None): lambda v: v is None,
    None: lambda v: v is None,
}


def _compile_encoder(codec: Codec, declared: Any) -> Encoder:
    """The encoder of a declared type (see the module's docstring)."""
    if declared in _SCALARS:
        if declared is float:
            return lambda v, e: float(v)
        return lambda v, e: v
    inner = _optional(declared)
    if inner is not None:
        enc = codec.encoder(inner)
        return lambda v, e: None if v is None else enc(v, e)
    if declared is array:
        return lambda v, e: v.tolist()
    if isinstance(declared, type) and issubclass(declared, Enum):
        return lambda v, e: v.value
    schema = codec.schema(declared)
    if schema is not None:
        return _schema_encoder(codec, schema)
    return _container_encoder(codec, declared)


def _schema_encoder(codec: Codec, schema: Schema) -> Encoder:
    """The encoder of a registered class: its fields, or its index if shared."""
    if not schema.shared:
        return lambda v, e: codec.encode_fields(schema, v, e)

    def shared(value: Any, encoding: _Encoding) -> int:
        found = encoding.index.get(id(value))
        if found is None:
            fields = codec.encode_fields(schema, value, encoding)
            found = encoding.index[id(value)] = len(encoding.table)
            encoding.table.append([schema.name, fields])
            encoding.kept.append(value)
        return found

    return shared


def _container_encoder(codec: Codec, declared: Any) -> Encoder:
    """The encoder of a tuple, list, deque, set or dict of declared items."""
    origin, args = typing.get_origin(declared), _args(declared)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = codec.encoder(args[0])
        return lambda v, e: [item(x, e) for x in v]
    if origin is tuple:
        items = [codec.encoder(a) for a in args]
        return lambda v, e: [enc(x, e) for enc, x in zip(items, v, strict=True)]
    if origin in (list, deque, set, frozenset):
        item = codec.encoder(args[0])
        return lambda v, e: [item(x, e) for x in v]
    if origin is dict:
        key, val = codec.encoder(args[0]), codec.encoder(args[1])
        if args[0] is str:
            return lambda v, e: {k: val(x, e) for k, x in v.items()}
        return lambda v, e: [[key(k, e), val(x, e)] for k, x in v.items()]
    raise FormatError(f"the format cannot hold {declared}")


def _compile_decoder(codec: Codec, declared: Any) -> Decoder:
    """The decoder of a declared type: checks every value (see the module's docstring)."""
    check = _SCALARS.get(declared)
    if check is not None:
        return _scalar_decoder(declared, check)
    inner = _optional(declared)
    if inner is not None:
        dec = codec.decoder(inner)
        return lambda v, d: None if v is None else dec(v, d)
    if declared is array:
        floats = codec.decoder(tuple[float, ...])
        return lambda v, d: array("d", floats(v, d))
    if isinstance(declared, type) and issubclass(declared, Enum):
        return _enum_decoder(declared)
    schema = codec.schema(declared)
    if schema is not None:
        return _schema_decoder(codec, schema)
    return _container_decoder(codec, declared)


def _scalar_decoder(declared: Any, check: Callable[[Any], bool]) -> Decoder:
    """The decoder of a plain value: checks its JSON type."""
    name = _type_name(declared)

    def scalar(value: Any, decoding: _Decoding) -> Any:
        if not check(value):
            raise FormatError(f"expected {name}, found {type(value).__name__}")
        return float(value) if declared is float else value

    return scalar


def _enum_decoder(declared: type[Enum]) -> Decoder:
    """The decoder of an enum's member, from its value."""

    def member(value: Any, decoding: _Decoding) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise FormatError(f"{declared.__name__} is a string or an integer")
        try:
            return declared(value)
        except ValueError:
            raise FormatError(f"{value!r} is no {declared.__name__}") from None

    return member


def _schema_decoder(codec: Codec, schema: Schema) -> Decoder:
    """The decoder of a registered class: from its fields, or a checked index if shared."""
    if not schema.shared:
        return lambda v, d: codec.decode_fields(schema, v, d)

    def shared(value: Any, decoding: _Decoding) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise FormatError(f"a {schema.name} is an index of the shared objects")
        if not 0 <= value < len(decoding.objects):
            raise FormatError(f"no shared object {value} before this one")
        obj = decoding.objects[value]
        if type(obj) is not schema.cls:
            raise FormatError(f"shared object {value} is no {schema.name}")
        return obj

    return shared


def _listed(value: Any, what: Any) -> list[Any]:
    """``value`` if it is a JSON list (FormatError if not)."""
    if not isinstance(value, list):
        raise FormatError(f"{_type_name(what)} is a list")
    return value


def _container_decoder(codec: Codec, declared: Any) -> Decoder:
    """The decoder of a tuple, list, deque, set or dict of declared items."""
    origin, args = typing.get_origin(declared), _args(declared)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = codec.decoder(args[0])
        return lambda v, d: tuple(item(x, d) for x in _listed(v, declared))
    if origin is tuple:
        items = [codec.decoder(a) for a in args]
        return lambda v, d: _fixed(items, _listed(v, declared), d)
    if origin in (list, deque, set, frozenset):
        item, make = codec.decoder(args[0]), origin
        return lambda v, d: make(item(x, d) for x in _listed(v, declared))
    if origin is dict:
        return _dict_decoder(codec, declared, args)
    raise FormatError(f"the format cannot hold {declared}")


def _fixed(items: list[Decoder], values: list[Any], decoding: _Decoding) -> tuple[Any, ...]:
    """A fixed-length tuple, each item by its own decoder."""
    if len(values) != len(items):
        raise FormatError(f"expected a list of {len(items)}, found {len(values)}")
    return tuple(dec(x, decoding) for dec, x in zip(items, values, strict=True))


def _dict_decoder(codec: Codec, declared: Any, args: tuple[Any, ...]) -> Decoder:
    """The decoder of a dict: an object by name, or a list of [key, value] pairs."""
    key, val = codec.decoder(args[0]), codec.decoder(args[1])
    if args[0] is str:

        def by_name(value: Any, decoding: _Decoding) -> dict[str, Any]:
            if not isinstance(value, dict):
                raise FormatError(f"{_type_name(declared)} is an object")
            return {k: val(x, decoding) for k, x in value.items()}

        return by_name

    def pairs(value: Any, decoding: _Decoding) -> dict[Any, Any]:
        out = {}
        for pair in _listed(value, declared):
            if not isinstance(pair, list) or len(pair) != 2:
                raise FormatError(f"{_type_name(declared)} is a list of [key, value]")
            out[key(pair[0], decoding)] = val(pair[1], decoding)
        return out

    return pairs
