"""Who can reach a server (loopback hosts, and the rule that any other host needs a token), and a
failed connection said in a few words."""
from __future__ import annotations

import ipaddress
import re
import socket
from typing import Optional

# Where the servers read their tokens: an environment variable, not the command
# line, which every user of the machine can read in ``ps``.
RM_TOKEN_ENV = "REWARDSMITH_RM_TOKEN"
SANDBOX_TOKEN_ENV = "REWARDSMITH_SANDBOX_TOKEN"


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) only accepts connections from this machine."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        try:
            return all(ipaddress.ip_address(info[4][0]).is_loopback for info in socket.getaddrinfo(host, None))
        except OSError:
            return False


def check_exposure(host: str, token: Optional[str], token_env: str) -> None:
    """Raise ValueError if a server on ``host`` would be reachable from other machines without a token.

    Called before anything slow (loading weights, probing isolation), so the refusal comes at once.
    """
    if not is_loopback(host) and not token:
        raise ValueError(f"refusing to serve on non-loopback host {host!r} without a token (anyone who can reach it "
                         f"could use it): set ${token_env} (or --token), or bind to 127.0.0.1")


def network_error_summary(exc: BaseException) -> str:
    """``ExceptionType: reason`` for a failed network call, the reason being the operating system's
    (``Connection refused``, ``Name or service not known``) when the message carries one."""
    reason = re.search(r"\[Errno -?\d+\] ([^'\")\]]+)", str(exc))
    return f"{type(exc).__name__}: {reason.group(1).strip()}" if reason else type(exc).__name__
