"""The ``protobuf`` format: each record is one serialized message of a known type.

As Flink's ``protobuf`` format, with the message's definition taken from a descriptor set
(``protobuf.descriptor-file``, see :mod:`..options.protobuf_descriptors`) instead of a generated
Java class. Columns map to fields by name with Flink's type mapping, checked when the table is
declared: ROW ↔ message, ARRAY ↔ repeated, MAP ↔ map, an enum ↔ its name (CHAR/VARCHAR/STRING)
or number (TINYINT..BIGINT), ``uint32``/``fixed32`` ↔ INT and ``uint64``/``fixed64`` ↔ BIGINT
(the same bits, as Java reads them: values above the signed range read negative).

Reading: bytes that are not a message of the type, or lack a proto2 ``required`` field, are
dirty, with the reason. With ``protobuf.read-default-values`` false (the default) an unset field
that tracks presence and an empty repeated or map field read as NULL; an unknown enum number
reads as ``UNRECOGNIZED`` into a text column (as Java names it) and as the number into an
integer column.

Writing (what Flink writes): a NULL column leaves its field unset; a NULL element of an ARRAY or
MAP becomes the field type's default (``protobuf.write-null-string-literal`` for strings, the
first value of an enum, an empty message); an enum name or number the enum lacks writes its
first value; columns of one oneof are set in column order, so the last non-null one wins.
Records are decoded and encoded with the ``protobuf`` package in the executors' Python workers
(see :mod:`._python`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..options import Column, FlinkType, row_type
from ..options.protobuf_descriptors import (
    SCALAR_TYPES,
    check_columns,
    is_map_field,
    message_descriptor,
)
from .base import NativeDecoder, Options, PythonFormat, RecordDecoder, RecordEncoder, values_only

if TYPE_CHECKING:  # pragma: no cover
    pass

NAME = "protobuf"
Read = Callable[[Any], Any]
Write = Callable[[Any], Any]
_UNSIGNED = {4: 64, 6: 64, 7: 32, 13: 32}  # uint64, fixed64, fixed32, uint32 → bits
_TEXT = SCALAR_TYPES["string"]
_DEFAULTS = {1: 0.0, 2: 0.0, 8: False, 12: b""}  # double, float, bool, bytes; integers: 0


# --------------------------------------------------------------------------------------------
# protobuf → row


def _scalar_reader(field: Any, t: FlinkType) -> Read | None:
    """How a scalar value reads into ``t`` (None: as it is)."""
    if field.enum_type is not None and t.name in _TEXT:
        names = {v.number: v.name for v in field.enum_type.values}
        return lambda v: names.get(v, "UNRECOGNIZED")
    bits = _UNSIGNED.get(field.type)
    if bits is not None:
        top, span = 2 ** (bits - 1), 2**bits
        return lambda v: v - span if v >= top else v
    return None


def _element_reader(field: Any, t: FlinkType, defaults: bool) -> Read | None:
    if field.message_type is not None:
        return message_reader(field.message_type, t, defaults)
    return _scalar_reader(field, t)


def _field_reader(field: Any, t: FlinkType, defaults: bool) -> Read | None:
    """How the field's Python value reads into ``t`` (None: as it is)."""
    if is_map_field(field):
        entry = field.message_type.fields_by_name
        key = _scalar_reader(entry["key"], t.children[0]) or (lambda k: k)
        value = _element_reader(entry["value"], t.children[1], defaults) or (lambda x: x)
        return lambda m: {key(k): value(x) for k, x in m.items()}
    if field.is_repeated:
        item = _element_reader(field, t.children[0], defaults)
        return (lambda v: list(v)) if item is None else (lambda v: [item(x) for x in v])
    return _element_reader(field, t, defaults)


def message_reader(message: Any, t: FlinkType, defaults: bool) -> Read:
    """A function reading a message of descriptor ``message`` into a dict of ROW ``t``'s fields.

    ``defaults`` is ``protobuf.read-default-values``.

    Example:
        >>> read = message_reader(Order.DESCRIPTOR, row_type(columns), False)  # doctest: +SKIP
        >>> read(Order(id=7))  # doctest: +SKIP
        {'id': 7, 'note': None}
    """
    fields = []
    for name, child in zip(t.field_names, t.children, strict=True):
        field = message.fields_by_name[name]
        present: Callable[[Any], bool] | None = None
        if not defaults and field.is_repeated:
            present = lambda m, n=name: len(getattr(m, n)) > 0  # noqa: E731
        elif not defaults and field.has_presence:
            present = lambda m, n=name: m.HasField(n)  # noqa: E731
        fields.append((name, present, _field_reader(field, child, defaults)))

    def read(msg: Any) -> dict[str, Any]:
        row: dict[str, Any] = {}
        for name, present, convert in fields:
            if present is not None and not present(msg):
                row[name] = None
            else:
                value = getattr(msg, name)
                row[name] = value if convert is None else convert(value)
        return row

    return read


# --------------------------------------------------------------------------------------------
# row → protobuf


def _scalar_writer(field: Any, t: FlinkType) -> Write | None:
    """How a value of ``t`` becomes the field's Python value (None: as it is)."""
    if field.enum_type is not None:
        first = field.enum_type.values[0].number
        if t.name in _TEXT:
            numbers = {v.name: v.number for v in field.enum_type.values}
            return lambda v: numbers.get(v, first)
        known = {v.number for v in field.enum_type.values}
        return lambda v: v if v in known else first
    bits = _UNSIGNED.get(field.type)
    if bits is not None:
        mask = 2**bits - 1
        return lambda v: v & mask
    return None


def _default(field: Any, literal: str) -> Any:
    """What Flink writes for a null element of a repeated or map field of this type."""
    if field.enum_type is not None:
        return field.enum_type.values[0].number
    if field.type == 9:  # string
        return literal
    return _DEFAULTS.get(field.type, 0)


def _setter(field: Any, t: FlinkType, literal: str) -> Callable[[Any, Any], None]:
    """A function setting field ``field`` of a message to a non-null value of ``t``."""
    name = field.name
    if is_map_field(field):
        entry = field.message_type.fields_by_name
        key_field, value_field = entry["key"], entry["value"]
        key = _scalar_writer(key_field, t.children[0]) or (lambda k: k)
        null_key = _default(key_field, literal)
        if value_field.message_type is not None:
            fill = message_writer(value_field.message_type, t.children[1], literal)

            def set_message_map(msg: Any, value: Any) -> None:
                entries = getattr(msg, name)
                for k, x in value.items():
                    item = entries[null_key if k is None else key(k)]
                    if x is not None:
                        fill(item, x)

            return set_message_map
        convert = _scalar_writer(value_field, t.children[1]) or (lambda x: x)
        null_value = _default(value_field, literal)

        def set_map(msg: Any, value: Any) -> None:
            entries = getattr(msg, name)
            for k, x in value.items():
                entries[null_key if k is None else key(k)] = null_value if x is None else convert(x)

        return set_map
    if field.is_repeated and field.message_type is not None:
        fill = message_writer(field.message_type, t.children[0], literal)

        def set_messages(msg: Any, value: Any) -> None:
            items = getattr(msg, name)
            for x in value:
                item = items.add()
                if x is not None:
                    fill(item, x)

        return set_messages
    if field.is_repeated:
        convert = _scalar_writer(field, t.children[0]) or (lambda x: x)
        null_item = _default(field, literal)
        return lambda msg, v: getattr(msg, name).extend(
            [null_item if x is None else convert(x) for x in v]
        )
    if field.message_type is not None:
        fill = message_writer(field.message_type, t, literal)

        def set_message(msg: Any, value: Any) -> None:
            sub = getattr(msg, name)
            sub.SetInParent()
            fill(sub, value)

        return set_message
    convert = _scalar_writer(field, t) or (lambda x: x)
    return lambda msg, v: setattr(msg, name, convert(v))


def message_writer(message: Any, t: FlinkType, literal: str) -> Callable[[Any, dict], None]:
    """A function filling a message of descriptor ``message`` from a dict of ROW ``t``.

    ``literal`` is ``protobuf.write-null-string-literal``. Null values leave their field unset.

    Example:
        >>> fill = message_writer(Order.DESCRIPTOR, row_type(columns), "")  # doctest: +SKIP
        >>> order = Order(); fill(order, {"id": 7, "note": None})  # doctest: +SKIP
    """
    setters = [
        (name, _setter(message.fields_by_name[name], child, literal))
        for name, child in zip(t.field_names, t.children, strict=True)
    ]

    def fill(msg: Any, row: dict[str, Any]) -> None:
        for name, set_value in setters:
            value = row.get(name)
            if value is not None:
                set_value(msg, value)

    return fill


def _message_class(settings: Mapping[str, Any]) -> Any:
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(
        message_descriptor(settings["descriptor-set"], settings["message"])
    )


def record_reader(columns: Sequence[Column], settings: Mapping[str, Any]) -> Read:
    """A function parsing one record's bytes into a dict of ``columns``.

    Example:
        >>> settings = spec.value_format.settings  # doctest: +SKIP
        >>> read = record_reader([Column("id", "BIGINT")], settings)  # doctest: +SKIP
        >>> read(Order(id=7).SerializeToString())  # doctest: +SKIP
        {'id': 7}

    Raises:
        ValueError: (from the function) the bytes are not a message of the type.
    """
    from google.protobuf.message import DecodeError

    cls = _message_class(settings)
    read = message_reader(cls.DESCRIPTOR, row_type(columns), settings["read-default-values"])

    def parse(data: bytes) -> dict[str, Any]:
        try:
            msg = cls.FromString(data)
        except DecodeError as exc:
            raise ValueError(f"not a serialized {settings['message']} message: {exc}") from None
        if not msg.IsInitialized():  # Java's parseFrom, Flink's parser, refuses it too
            missing = ", ".join(msg.FindInitializationErrors())
            raise ValueError(f"{settings['message']} message is missing required fields: {missing}")
        return read(msg)

    return parse


def record_writer(columns: Sequence[Column], settings: Mapping[str, Any]) -> Write:
    """A function serializing a dict of ``columns`` as one message.

    Example:
        >>> settings = spec.value_format.settings  # doctest: +SKIP
        >>> write = record_writer([Column("id", "BIGINT")], settings)  # doctest: +SKIP
        >>> write({"id": 7})  # doctest: +SKIP
        b'\\x08\\x07'
    """
    cls = _message_class(settings)
    fill = message_writer(cls.DESCRIPTOR, row_type(columns), settings["write-null-string-literal"])

    def serialize(row: dict[str, Any]) -> bytes:
        msg = cls()
        fill(msg, row)
        return bytes(msg.SerializeToString())

    return serialize


class Protobuf(PythonFormat):
    """The ``protobuf`` format (see the module's docstring)."""

    name = NAME
    stage = "protobuf"

    def check(self, columns: Sequence[Column], settings: Mapping[str, Any]) -> None:
        """Every column is a field of the message, of a type that holds it.

        Raises:
            KafkaOptionsError: a column is no field of the message, or cannot hold it.
        """
        check_columns(settings, columns, "format", fmt=self.name)

    def native_decoder(self, columns: Sequence[Column], options: Options) -> NativeDecoder | None:
        """A decoder of whole Arrow batches of messages (the record scanner, C) that the reader's
        tasks run where the bytes are, for a flat table of scalar, string, bytes and enum fields;
        None otherwise (see :mod:`._scanners`). A record it leaves null is decoded per record."""
        from ._scanners import protobuf_decoder

        return protobuf_decoder(columns, self.checked_settings(columns, options))

    def record_decoder(
        self, columns: Sequence[Column], settings: Mapping[str, Any], side: str
    ) -> RecordDecoder:
        """Per worker: the message parsed from the record's bytes (:func:`record_reader`)."""
        conf = dict(settings)
        return values_only(lambda: record_reader(columns, conf))

    def record_encoder(
        self, columns: Sequence[Column], settings: Mapping[str, Any]
    ) -> RecordEncoder:
        """Per worker: each row serialized as one message (:func:`record_writer`)."""
        conf = dict(settings)
        return lambda: record_writer(columns, conf)


FORMAT = Protobuf()

__all__ = [
    "FORMAT",
    "Protobuf",
    "message_reader",
    "message_writer",
    "record_reader",
    "record_writer",
]
