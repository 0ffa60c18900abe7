"""Storage options: how they are matched, converted and kept secret.

Guarantees: :func:`filesystem_kwargs` matches option keys to an fsspec filesystem's
parameters ignoring case, ``_`` and ``-`` (Spark lowercases option keys) and converts
string values to the parameter's type; :func:`redact` replaces the value of every option
whose key names a credential (:func:`is_secret_key`), the parts of connection strings, and
``user:password@`` in any URL, by ``***``; the ``parse_*`` helpers raise ``ValueError``
naming the option.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Mapping
from typing import Any

from delta_pyds.errors import OptionValueError

# option keys whose values are secrets (compared as squash_key gives them)
SECRET_KEY_PARTS = (
    "secret",
    "key",
    "token",
    "password",
    "passwd",
    "credential",
    "connectionstring",
    "sas",
    "signature",
    "auth",
)


# connection string parts that are not secrets (compared as squash_key gives them)
PUBLIC_CONNECTION_STRING_PARTS = frozenset(
    {
        "defaultendpointsprotocol",
        "accountname",
        "blobendpoint",
        "queueendpoint",
        "tableendpoint",
        "fileendpoint",
        "dfsendpoint",
        "endpointsuffix",
    }
)


def squash_key(key: str) -> str:
    """An option key lowercased without ``_`` and ``-`` (how keys are compared)."""
    return key.lower().replace("_", "").replace("-", "")


def parse_bool(value: Any, name: str) -> bool:
    """A boolean storage option (``true``/``false``, ``1``/``0``, ``yes``/``no``)."""
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no", ""):
        return False
    raise OptionValueError(f"storage option {name}: expected true or false, got {value!r}")


def parse_positive_int(value: Any, name: str) -> int:
    """A positive whole number of bytes."""
    try:
        number = int(str(value).strip())
    except ValueError:
        number = 0
    if number <= 0:
        raise OptionValueError(f"storage option {name}: expected a positive number of bytes, got {value!r}")
    return number


def is_secret_key(key: str) -> bool:
    """Whether a storage option's value must never be shown (credentials)."""
    squashed = squash_key(key)
    return any(part in squashed for part in SECRET_KEY_PARTS)


_USERINFO_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://([^/@\s\"']+)@")


def _secret_values(options: Mapping[str, Any]) -> list[str]:
    values = []
    for k, v in options.items():
        if v is None:
            continue
        # credentials in URLs (endpoint_url='http://user:pass@host'), in any option
        text = v if isinstance(v, str) else json.dumps(v, default=str) if isinstance(v, (dict, list)) else str(v)
        for userinfo in _USERINFO_RE.findall(text):
            values.append(userinfo)
            _, _, password = userinfo.partition(":")
            if password:
                values.append(password)
        if not is_secret_key(k):
            continue
        if len(text) >= 4:
            values.append(text)
        # parts of connection strings: AccountKey=...;SharedAccessSignature=... (not the
        # endpoints and the account name: errors name the store by them)
        for part in re.split(r"[;&\s]", text):
            if "=" in part:
                name, _, secret = part.partition("=")
                if len(secret) >= 6 and squash_key(name) not in PUBLIC_CONNECTION_STRING_PARTS:
                    values.append(secret)
    return sorted(set(values), key=len, reverse=True)


def redact(text: str, options: Mapping[str, Any]) -> str:
    """``text`` with every secret storage option value replaced by ``***``."""
    for secret in _secret_values(options):
        text = text.replace(secret, "***")
    return text


def _init_parameters(cls: type) -> dict[str, inspect.Parameter]:
    params: dict[str, inspect.Parameter] = {}
    for klass in reversed(cls.__mro__):
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        try:
            sig = inspect.signature(init)
        except (TypeError, ValueError):  # pragma: no cover - builtins
            continue
        for name, p in sig.parameters.items():
            if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                params[name] = p
    return params


def _coerce(value: Any, param: inspect.Parameter | None, name: str) -> Any:
    if not isinstance(value, str):
        return value
    text = value.strip()
    default = param.default if param is not None else inspect.Parameter.empty
    if isinstance(default, bool) or (default is inspect.Parameter.empty and text.lower() in ("true", "false")):
        if text.lower() in ("true", "1", "yes"):
            return True
        if text.lower() in ("false", "0", "no"):
            return False
        return value
    if isinstance(default, int) and not isinstance(default, bool) and re.fullmatch(r"-?\d+", text):
        return int(text)
    if isinstance(default, float) and re.fullmatch(r"-?\d+(\.\d*)?([eE]-?\d+)?", text):
        return float(text)
    if (isinstance(default, dict) or name.endswith(("_kwargs", "kwargs"))) and text.startswith("{"):
        try:
            return json.loads(text)
        except ValueError:
            raise OptionValueError(f"storage option {name}: expected a JSON object") from None
    return value


def filesystem_kwargs(cls: type, options: Mapping[str, Any]) -> dict[str, Any]:
    """Storage options as keyword arguments of the fsspec filesystem class ``cls``:
    keys matched to its parameters ignoring case and underscores, string values
    converted to the parameter's type."""
    params = _init_parameters(cls)
    by_squashed = {squash_key(n): n for n in params}
    out = {}
    for key, value in options.items():
        name = by_squashed.get(squash_key(key), key)
        out[name] = _coerce(value, params.get(name), name)
    return out
