"""Message definitions of the protobuf formats, loaded and checked when a table is declared.

Flink finds the message through a generated Java class (``protobuf.message-class-name``); here
the definitions come from a FileDescriptorSet (``protobuf.descriptor-file``, written by
``protoc --include_imports --descriptor_set_out=orders.desc orders.proto``) and the message is
looked up in it by :func:`find_message`. The file is read once, when the table is declared; its
bytes travel with the table, so Spark's executors need no copy of it.

:func:`check_columns` applies Flink's type mapping (``PbSchemaValidationUtils``): each declared
column must be a field of the message, of a type that can hold it, recursively through ROW,
ARRAY and MAP.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..errors import KafkaOptionsError
from ._departures import PROTO_SOURCE_REASON
from ._types import Column, FlinkType

_TYPE_NAMES = {1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64",
               7: "fixed32", 8: "bool", 9: "string", 10: "group", 11: "message", 12: "bytes",
               13: "uint32", 14: "enum", 15: "sfixed32", 16: "sfixed64", 17: "sint32",
               18: "sint64"}  # fmt: skip
_TEXT = ("CHAR", "VARCHAR", "STRING")
_ENUM = (*_TEXT, "TINYINT", "SMALLINT", "INT", "BIGINT")
#: Protobuf scalar type → the Flink types that hold it (Flink's TYPE_MATCH_MAP).
SCALAR_TYPES: dict[str, tuple[str, ...]] = {
    "double": ("DOUBLE",), "float": ("FLOAT",), "bool": ("BOOLEAN",), "string": _TEXT,
    "bytes": ("BINARY", "VARBINARY", "BYTES"), "enum": _ENUM,
    **{t: ("INT",) for t in ("int32", "uint32", "sint32", "fixed32", "sfixed32")},
    **{t: ("BIGINT",) for t in ("int64", "uint64", "sint64", "fixed64", "sfixed64")},
}  # fmt: skip
_POOLS: dict[str, Any] = {}
_LOCK = threading.Lock()


def descriptor_file(key: str, text: str) -> str:
    """Parse ``protobuf.descriptor-file``: a path, refusing ``.proto`` sources with the reason.

    Example:
        >>> descriptor_file("protobuf.descriptor-file", " defs/shop.desc ")
        'defs/shop.desc'
    """
    path = text.strip()
    if not path:
        raise KafkaOptionsError(f"Option '{key}' must name a file.", keys=(key,))
    if path.lower().endswith(".proto"):
        raise KafkaOptionsError(
            f"Option '{key}' = {path[:80]!r} is not supported: {PROTO_SOURCE_REASON}.", keys=(key,)
        )
    return path


def read_descriptor_set(key: str, path: str) -> bytes:
    """The bytes of the FileDescriptorSet at ``path``, checked to build (imports included).

    Example:
        >>> data = read_descriptor_set("protobuf.descriptor-file", "shop.desc")  # doctest: +SKIP

    Raises:
        KafkaOptionsError: naming ``key``, when the file is missing, not a descriptor set, or
            lacks the files it imports.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise KafkaOptionsError(
            f"Option '{key}': cannot read {path!r} ({exc.strerror or exc}).", keys=(key,)
        ) from None
    try:
        pool(data)
    except (ValueError, TypeError, LookupError) as exc:
        raise KafkaOptionsError(f"Option '{key}': {path!r} {exc}.", keys=(key,)) from None
    return data


def file_protos(data: bytes) -> list[Any]:
    """The ``FileDescriptorProto`` of each file of the FileDescriptorSet ``data``.

    Example:
        >>> [f.name for f in file_protos(data)]  # doctest: +SKIP
        ['google/protobuf/timestamp.proto', 'shop/orders.proto']

    Raises:
        ValueError: ``data`` is not a FileDescriptorSet (or holds no file).
    """
    from google.protobuf import descriptor_pb2
    from google.protobuf.message import DecodeError

    try:
        files = list(descriptor_pb2.FileDescriptorSet.FromString(data).file)
    except DecodeError:
        files = []
    if not files:
        raise ValueError(
            "is not a FileDescriptorSet (write one with `protoc --include_imports "
            "--descriptor_set_out=<file>.desc <file>.proto`)"
        )
    return files


def pool(data: bytes) -> Any:
    """A ``DescriptorPool`` of the FileDescriptorSet ``data`` (built once per process).

    Example:
        >>> pool(data).FindMessageTypeByName("shop.Order").name  # doctest: +SKIP
        'Order'

    Raises:
        ValueError: ``data`` is not a descriptor set, or a definition is invalid.
        LookupError: a file's import is missing from it.
    """
    from google.protobuf import descriptor_pool

    digest = hashlib.sha256(data).hexdigest()
    with _LOCK:
        found = _POOLS.get(digest)
    if found is not None:
        return found
    files = {f.name: f for f in file_protos(data)}
    built = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(name: str, importer: str) -> None:
        if name in added:
            return
        if name not in files:
            raise LookupError(
                f"lacks {name!r}, which {importer!r} imports (run protoc with --include_imports)"
            )
        added.add(name)
        for dependency in files[name].dependency:
            add(dependency, name)
        try:
            built.Add(files[name])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"has an invalid definition in {name!r}: {exc}") from None

    for name in files:
        add(name, name)
    with _LOCK:
        return _POOLS.setdefault(digest, built)


def message_descriptor(data: bytes, full_name: str) -> Any:
    """The ``Descriptor`` of message ``full_name`` in the FileDescriptorSet ``data``.

    Example:
        >>> message_descriptor(data, "shop.Order").fields[0].name  # doctest: +SKIP
        'id'
    """
    return pool(data).FindMessageTypeByName(full_name)


def _camel(name: str) -> str:
    """protoc's outer class name of a file: ``order_events.proto`` → ``OrderEvents``."""
    out, upper = [], True
    for ch in name:
        if ch.isalpha():
            out.append(ch.upper() if upper else ch)
            upper = False
        elif ch.isdigit():
            out.append(ch)
            upper = True
        else:
            upper = True
    return "".join(out)


def _messages(file: Any) -> Iterator[tuple[str, str]]:
    """(proto full name, Java class name) of every message of ``file`` (map entries left out)."""
    options = file.options
    java_package = options.java_package or file.package
    stem = file.name.rsplit("/", 1)[-1].removesuffix(".proto")
    outer = options.java_outer_classname or _camel(stem)
    top = {m.name for m in file.message_type} | {e.name for e in file.enum_type}
    top |= {s.name for s in file.service}
    if not options.java_outer_classname and outer in top:
        outer += "OuterClass"
    first = [] if options.java_multiple_files else [outer]

    def walk(messages: Any, path: list[str]) -> Iterator[tuple[str, str]]:
        for message in messages:
            if message.options.map_entry:
                continue
            inner = [*path, message.name]
            full = ".".join([file.package, *inner] if file.package else inner)
            java = "$".join([*first, *inner])
            yield full, f"{java_package}.{java}" if java_package else java
            yield from walk(message.nested_type, inner)

    yield from walk(file.message_type, [])


def find_message(data: bytes, name: str, key: str, file_key: str, path: str = "") -> str:
    """The full name of the message ``protobuf.message-class-name`` = ``name`` designates.

    In order: the message whose proto full name is ``name`` (``shop.Order``); the message
    whose generated Java class is ``name`` (``com.shop.OrderProtos$Order``, nested classes
    written with ``$`` or ``.``); the one message whose simple name is the last segment of
    ``name`` (after its last ``.`` or ``$``: ``com.example.Order`` → ``Order``).

    Example:
        >>> find_message(data, "com.example.Order", "protobuf.message-class-name",
        ...              "protobuf.descriptor-file", "shop.desc")  # doctest: +SKIP
        'shop.Order'

    Raises:
        KafkaOptionsError: no message, or several, match; the message lists the file's messages.
    """
    wanted = name.strip().lstrip(".")
    where = f"{path!r} ('{file_key}')" if path else f"'{file_key}'"
    messages = [m for f in file_protos(data) for m in _messages(f)]
    for candidates in (
        [full for full, _ in messages if full == wanted],
        [full for full, java in messages if java.replace("$", ".") == wanted.replace("$", ".")],
        [full for full, _ in messages if full.rsplit(".", 1)[-1] == _last_segment(wanted)],
    ):
        if len(candidates) == 1:
            return candidates[0]
        if len(candidates) > 1:
            raise KafkaOptionsError(
                f"Option '{key}' = {name[:120]!r} matches several messages of {where}: "
                f"{', '.join(candidates)}; give the message's full name.",
                keys=(key,),
            )
    listed = sorted(full for full, _ in messages)
    more = f" and {len(listed) - 40} more" if len(listed) > 40 else ""
    raise KafkaOptionsError(
        f"Option '{key}' = {name[:120]!r} names no message of {where}; its messages: "
        f"{', '.join(listed[:40]) or '(none)'}{more}.",
        keys=(key,),
    )


def _last_segment(name: str) -> str:
    return name.replace("$", ".").rsplit(".", 1)[-1]


def load_message(fmt: str, settings: dict[str, Any], written: Mapping[str, str], side: str) -> None:
    """Read the descriptor file of protobuf format ``fmt`` and find the message: ``settings``
    gains ``descriptor-set`` (the file's bytes) and ``message`` (the message's full name).

    ``written`` maps each option to its key as written; ``side`` is the prefix of the keys of
    options left unwritten (``""`` or ``"key."``).

    Example:
        >>> load_message("protobuf", settings, {}, "")  # doctest: +SKIP
        >>> settings["message"]  # doctest: +SKIP
        'shop.Order'

    Raises:
        KafkaOptionsError: an option is missing, the file is unusable or names no such message.
    """
    names = ("message-class-name", "descriptor-file")
    keys = {o: written.get(o, f"{side}{fmt}.{o}") for o in names}
    for option, what in (
        ("message-class-name", "the message to read and write (e.g. 'shop.Order')"),
        ("descriptor-file", "the FileDescriptorSet that defines it (protoc --descriptor_set_out)"),
    ):
        if option not in settings:
            raise KafkaOptionsError(
                f"Format '{fmt}' requires '{keys[option]}': {what}.", keys=(keys[option],)
            )
    data = read_descriptor_set(keys["descriptor-file"], settings["descriptor-file"])
    settings["descriptor-set"] = data
    settings["message"] = find_message(
        data,
        settings["message-class-name"],
        keys["message-class-name"],
        keys["descriptor-file"],
        settings["descriptor-file"],
    )


def field_type(field: Any) -> str:
    """A protobuf field's type as its ``.proto`` writes it: ``uint32``, ``repeated string``,
    ``map<string, int64>``, ``shop.Item`` (a message), ``enum shop.Status``.

    Example:
        >>> tags = message_descriptor(data, "shop.Order").fields_by_name["tags"]  # doctest: +SKIP
        >>> field_type(tags)  # doctest: +SKIP
        'repeated string'
    """
    if is_map_field(field):
        key, value = (field.message_type.fields_by_name[n] for n in ("key", "value"))
        return f"map<{field_type(key)}, {field_type(value)}>"
    kind = _TYPE_NAMES.get(field.type, str(field.type))
    if field.message_type is not None:
        kind = field.message_type.full_name
    elif field.enum_type is not None:
        kind = f"enum {field.enum_type.full_name}"
    return f"repeated {kind}" if field.is_repeated else kind


def is_map_field(field: Any) -> bool:
    """Whether protobuf field ``field`` is a ``map<..>`` (a repeated map-entry message)."""
    message = field.message_type
    return bool(field.is_repeated and message is not None and message.GetOptions().map_entry)


def _mismatch(path: str, t: FlinkType, field: Any, expected: str) -> KafkaOptionsError:
    return KafkaOptionsError(
        f"column '{path}' ({t}) cannot hold protobuf field '{field.full_name}' "
        f"({field_type(field)}): {expected}."
    )


def _check_scalar(field: Any, t: FlinkType, path: str) -> None:
    kind = _TYPE_NAMES.get(field.type, "")
    allowed = SCALAR_TYPES.get(kind, ())
    if t.name not in allowed:
        what = (
            "an enum"
            if kind == "enum"
            else f"{'an' if kind.startswith('int') else 'a'} {kind} field"
        )
        raise _mismatch(path, t, field, f"{what} maps to {' / '.join(allowed)}")


def _check_field(field: Any, t: FlinkType, path: str) -> None:
    if is_map_field(field):
        if t.name != "MAP":
            raise _mismatch(path, t, field, "a map field maps to MAP")
        entry = field.message_type.fields_by_name
        _check_scalar(entry["key"], t.children[0], f"{path}{{key}}")
        _check_field(entry["value"], t.children[1], f"{path}{{value}}")
    elif field.is_repeated:
        if t.name != "ARRAY":
            raise _mismatch(path, t, field, "a repeated field maps to ARRAY")
        _check_element(field, t.children[0], f"{path}[]")
    else:
        _check_element(field, t, path)


def _check_element(field: Any, t: FlinkType, path: str) -> None:
    if field.message_type is None:
        _check_scalar(field, t, path)
    elif t.name != "ROW":
        raise _mismatch(path, t, field, "a message maps to ROW")
    else:
        _check_row(field.message_type, t.field_names, t.children, path + ".")


def _check_row(
    message: Any, names: Sequence[str], types: Sequence[FlinkType], prefix: str = ""
) -> None:
    for name, t in zip(names, types, strict=True):
        field = message.fields_by_name.get(name)
        if field is None:
            fields = ", ".join(f.name for f in message.fields)
            raise KafkaOptionsError(
                f"column '{prefix}{name}' does not exist in protobuf message "
                f"'{message.full_name}' (its fields: {fields or '(none)'})."
            )
        _check_field(field, t, prefix + name)


def check_columns(
    settings: Mapping[str, Any],
    columns: Sequence[Column],
    option_key: str,
    prefix: str = "",
    fmt: str = "protobuf",
) -> None:
    """Check ``columns`` against the format's message with Flink's type mapping.

    ``prefix`` (``key.fields-prefix`` / ``value.fields-prefix``) is removed from the column
    names first, as the record's fields are named without it.

    Example:
        >>> check_columns(spec.value_format.settings, [Column("id", "BIGINT")],
        ...               "format")  # doctest: +SKIP

    Raises:
        KafkaOptionsError: naming ``option_key``, the column and the field, when a column is
            no field of the message or its type cannot hold the field.
    """
    message = message_descriptor(settings["descriptor-set"], settings["message"])
    names = [c.name[len(prefix) :] if prefix and c.name.startswith(prefix) else c.name
             for c in columns]  # fmt: skip
    try:
        _check_row(message, names, [c.flink_type for c in columns])
    except KafkaOptionsError as exc:
        raise KafkaOptionsError(
            f"Format '{fmt}' ('{option_key}'): {exc}", keys=(option_key,)
        ) from None


__all__ = [
    "SCALAR_TYPES",
    "check_columns",
    "descriptor_file",
    "field_type",
    "file_protos",
    "find_message",
    "is_map_field",
    "load_message",
    "message_descriptor",
    "pool",
    "read_descriptor_set",
]
