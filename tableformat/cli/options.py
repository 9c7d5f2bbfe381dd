"""Storage options, and keeping credentials out of everything the command prints.

Every command takes --storage-option KEY=VALUE (repeatable) and
--storage-options-json FILE, before or after the command name. Storage
options are, in increasing precedence: the JSON object in the environment
variable TABLEFORMAT_STORAGE_OPTIONS, the file, the flags. For s3:// an unset
`endpoint_url` is taken from AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, and
the usual AWS variables (AWS_ACCESS_KEY_ID, AWS_PROFILE, ...) work as in any
AWS client. Prefer the file or the environment for secrets: command lines are
visible to other users. Credentials are never printed, even in a traceback.
"""
from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Sequence
from typing import Any

from ..format.errors import InvalidOptionError

_CREDENTIAL_WORDS = ("key", "secret", "token", "password", "credential")


def _is_credential(key: str) -> bool:
    return any(w in key.lower() for w in _CREDENTIAL_WORDS)


def secrets(opts: Any) -> list[str]:
    """Every credential value in the storage options (nested too) and the AWS environment."""
    out: list[str] = []

    def walk(x: Any) -> None:
        items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()
        for k, v in items:
            if isinstance(v, (dict, list)):
                walk(v)
            elif v is not None and _is_credential(str(k)):
                out.append(str(v))
    walk(opts)
    out += [os.environ[k] for k in ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN") if os.environ.get(k)]
    return [s for s in out if len(s) >= 4]


def safe_uri(text: str) -> str:
    """Drop the user:password of URIs, which fsspec accepts and error messages repeat."""
    return re.sub(r"://[^/@\s]+@", "://***@", text)


def redact(text: str, secrets: Sequence[str]) -> str:
    for s in sorted(secrets, key=len, reverse=True):     # longest first: one secret may contain another
        text = text.replace(s, "***")
    return safe_uri(text)


def error_line(e: BaseException, secrets: Sequence[str]) -> str:
    """`error: <ErrorClass>: <message>` on one line, so that scripts can read it."""
    msg = " ".join(str(e).split())
    return redact(f"error: {type(e).__name__}: {msg}" if msg else f"error: {type(e).__name__}", secrets)


def _json_object(text: str, where: str) -> dict:
    try:
        d = json.loads(text)
    except ValueError as e:
        raise InvalidOptionError(f"{where} is not valid JSON: {e}") from None
    if not isinstance(d, dict):
        raise InvalidOptionError(f"{where} must hold a JSON object of storage options")
    return d


def storage_options(args: argparse.Namespace) -> dict:
    """Merge the environment, --storage-options-json and --storage-option flags (later wins)."""
    opts: dict = {}
    env = os.environ.get("TABLEFORMAT_STORAGE_OPTIONS")
    if env:
        opts.update(_json_object(env, "TABLEFORMAT_STORAGE_OPTIONS"))
    path = getattr(args, "storage_options_json", None)
    if path:
        with open(path, encoding="utf-8") as f:
            opts.update(_json_object(f.read(), f"--storage-options-json {path}"))
    for item in (getattr(args, "storage_option", None) or []) + getattr(args, "storage_option_sub", []):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InvalidOptionError(f"--storage-option {key!r}: expected KEY=VALUE")
        if _is_credential(key):
            opts[key] = value               # never reinterpret a secret (an all-digit one stays text)
            continue
        try:
            opts[key] = json.loads(value)   # true, 5, {"region_name": "x"} ...
        except ValueError:
            opts[key] = value
    return opts


def options_for(uri: str, opts: dict) -> dict | None:
    """The options for one URI: s3 takes its endpoint from the AWS environment, as AWS clients do."""
    out = dict(opts)
    if uri.startswith(("s3://", "s3a://")) and "endpoint_url" not in out and \
            "endpoint_url" not in (out.get("client_kwargs") or {}):
        env = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        if env:
            out["endpoint_url"] = env
    return out or None
