"""Asking a running scheduler's plugin server (``plugin_server``) what it sees and did, for the CLI commands.

The server listens on the scheduler's loopback: on the same machine, or through ``kubectl port-forward``.
"""

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

TIMEOUT_S = 10.0


class Unreachable(RuntimeError):
    """No answer from the plugin server; the message says where it was asked and why it failed."""


def fetch(address: str, path: str, query: dict[str, str] | None = None) -> bytes:
    url = f"http://{address}{path}"
    if query:
        url += "?" + urllib.parse.urlencode(query)
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            return bytes(response.read())
    except urllib.error.HTTPError as error:
        detail = error.read().decode(errors="replace").strip()
        raise Unreachable(f"{url} answered {error.code}: {detail}") from error
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise Unreachable(f"no scheduler plugin server at {address} ({reason})") from error


def fetch_json(address: str, path: str, query: dict[str, str] | None = None) -> Any:
    body = fetch(address, path, query)
    try:
        return json.loads(body)
    except json.JSONDecodeError as error:
        raise Unreachable(f"http://{address}{path} did not answer JSON ({error})") from error
