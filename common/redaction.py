"""Credentials out of everything written or printed: configs, URLs and error text.

A URL keeps its scheme, host, port and path; its userinfo (``user:pass@``)
and the values of query parameters that carry secrets (``token``, ``key``,
``password``, ``secret``, ``signature``, ``auth`` ...) become ``***``. The real
URL is kept only where the request is made.
"""
from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

MASK = "***"
# Query parameter names that carry credentials (matched anywhere in the name:
# access_token, api_key, X-Amz-Signature, sig ...).
SECRET_NAME = re.compile(r"token|key|secret|passw|pwd|auth|sig|credential|session", re.IGNORECASE)
URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]+")
# ``user:pass@host`` without a scheme (a URL given without one).
USERINFO = re.compile(r"(?<![\w/@])[^\s/@:'\"]+:[^\s/@'\"]+@(?=[\w\[])")
# A secret query parameter outside a full URL, e.g. requests' "Max retries exceeded with url: /run_code?token=...".
QUERY_SECRET = re.compile(r"(?<=[?&;])([^=&;\s'\"]+)=([^&;#\s'\")]*)")


def _mask_params(text: str) -> str:
    """``text`` with the value of every secret-named ``?name=value`` / ``&name=value`` masked."""
    return QUERY_SECRET.sub(lambda m: f"{m.group(1)}={MASK}" if SECRET_NAME.search(m.group(1)) else m.group(0), text)


def redact_url(url: str) -> str:
    """``url`` with its userinfo and secret query values replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. a malformed IPv6 host: mask every query secret in the text instead
        return _mask_params(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rpartition('@')[2]}"
    return urlunsplit((parts.scheme, netloc, parts.path, _mask_params("?" + parts.query)[1:], parts.fragment))


def redact_text(text: str) -> str:
    """``text`` (an error message, a log line) with every URL in it redacted, and any
    ``user:pass@`` or secret query parameter that appears without a scheme."""
    text = USERINFO.sub(f"{MASK}@", URL.sub(lambda m: redact_url(m.group(0)), text))
    return _mask_params(text)


def redact_config(value: Any) -> Any:
    """A copy of a config (nested dicts and lists, as written to ``config.yaml``) whose strings are redacted."""
    if isinstance(value, dict):
        return {k: redact_config(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_config(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


def without_userinfo(netloc: str) -> str:
    """``host:port`` of a URL's ``user:pass@host:port``."""
    return netloc.rpartition("@")[2]
