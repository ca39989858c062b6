"""GitHub's REST description: which operation a request is, and whether a body fits it.

The description (``descriptions/rest-subset.openapi.json``) is OpenAPI 3.0; its
schemas are translated to JSON Schema (2020-12) once per process and checked
with ``jsonschema``.  The stand-in checks every response it gives and every
JSON request body it receives.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import jsonschema  # type: ignore[import-untyped]

# GitHub's published descriptions, vendored with their licences (see its README).
DESCRIPTIONS = Path(__file__).resolve().parent / "descriptions"

# Where GitHub's error bodies send the reader (their ``documentation_url``).
DOCS = "https://docs.github.com/rest"


def openapi_to_json_schema(node: Any) -> Any:
    """Translate OpenAPI 3.0 schema dialect into JSON Schema (2020-12)."""
    if isinstance(node, list):
        return [openapi_to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {
        key: (value if key in ("example", "examples", "enum") else openapi_to_json_schema(value))
        for key, value in node.items()
        if key not in ("nullable", "discriminator", "xml", "externalDocs", "deprecated")
    }
    if node.get("nullable"):
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        if isinstance(out.get("type"), str) and "$ref" not in out and "oneOf" not in out:
            out["type"] = [out["type"], "null"]
        else:
            return {"anyOf": [{"type": "null"}, out]}
    return out


@cache
def _openapi() -> dict[str, Any]:
    with open(DESCRIPTIONS / "rest-subset.openapi.json", encoding="utf-8") as f:
        description: dict[str, Any] = json.load(f)
    return description


@cache
def _converted_components() -> dict[str, Any]:
    components = _openapi()["components"]
    return {"schemas": openapi_to_json_schema(components["schemas"])}


@dataclass(frozen=True)
class Operation:
    """One documented REST operation: a method on a path template."""

    method: str
    template: str
    regex: re.Pattern[str]
    spec: dict[str, Any]


def _template_regex(template: str) -> re.Pattern[str]:
    pattern = re.escape(template)
    for name in re.findall(r"\{(\w+)\}", template):
        # Refs ("heads/main") and base...head pairs may contain slashes.
        part = r"(?P<%s>.+)" if name in ("ref", "basehead") else r"(?P<%s>[^/]+)"
        pattern = pattern.replace(re.escape("{" + name + "}"), part % name)
    return re.compile("^" + pattern + "$")


@cache
def operations() -> tuple[Operation, ...]:
    """Every operation of the description, in the order a path is matched against them."""
    ops = []
    for template, item in _openapi()["paths"].items():
        for method, spec in item.items():
            ops.append(Operation(method.upper(), template, _template_regex(template), spec))
    # Literal segments beat parameters: "/commits/{sha}/pulls" before "/commits/{ref}".
    ops.sort(key=lambda op: (-op.template.count("/"), op.template.count("{")))
    return tuple(ops)


def find_operation(method: str, path: str) -> tuple[Operation, dict[str, str]] | None:
    """The operation ``method path`` is, with its path parameters; None if undocumented."""
    for op in operations():
        if op.method != method:
            continue
        match = op.regex.match(path)
        if match:
            return op, {k: unquote(v) for k, v in match.groupdict().items()}
    return None


_validators: dict[str, jsonschema.protocols.Validator] = {}


def _schema_validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    key = json.dumps(schema, sort_keys=True)
    if key not in _validators:
        _validators[key] = _build_validator(schema)
    return _validators[key]


def _build_validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    root = {"components": _converted_components(), "allOf": [openapi_to_json_schema(schema)]}
    return jsonschema.Draft202012Validator(root, format_checker=jsonschema.FormatChecker())


def _resolve(obj: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in obj:
        node: Any = _openapi()
        for part in obj["$ref"].lstrip("#/").split("/"):
            node = node[part]
        obj = node
    return obj


def _errors(validator: jsonschema.protocols.Validator, body: Any) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message[:300]}"
        for e in validator.iter_errors(body)
    ]


def validate_response(method: str, path: str, status: int, body: Any) -> list[str]:
    """Check a response against the operation's documented schema; return the problems.

    Statuses an operation does not document (injected faults, 401) must still
    carry GitHub's generic ``basic-error`` shape; an undocumented success
    status is itself a violation.
    """
    found = find_operation(method, path)
    if found is None:
        return [f"{method} {path}: not an operation of the REST description"]
    op, _ = found
    response = op.spec["responses"].get(str(status))
    if response is None:
        if status < 400:
            return [f"{method} {op.template}: status {status} is not documented"]
        schema: dict[str, Any] = {"$ref": "#/components/schemas/basic-error"}
    else:
        content = _resolve(response).get("content")
        if content is None:
            return [] if body is None else [f"{method} {op.template}: {status} has no body"]
        schema = content["application/json"]["schema"]
    return [
        f"{method} {op.template} {status}: {e}" for e in _errors(_schema_validator(schema), body)
    ]


def validate_request(method: str, path: str, body: Any) -> list[str]:
    """Check a JSON request body against the operation's documented request schema."""
    found = find_operation(method, path)
    if found is None or "requestBody" not in found[0].spec:
        return []
    op = found[0]
    schema = _resolve(op.spec["requestBody"])["content"]["application/json"]["schema"]
    errors = _errors(_schema_validator(schema), body)
    return [f"request {method} {op.template}: {e}" for e in errors]
