"""Zeroconf (mDNS) advertisement, so Home Assistant finds the server without anyone typing an address.

Home Assistant's Wyoming integration browses ``_wyoming._tcp.local.``, connects to the address of each
service it finds and keys the config entry on the service's instance name. Two things follow: the name
must stay the same across restarts (else every restart is a "new device"), and the address must be one
Home Assistant can reach. A server bound to 0.0.0.0 is therefore advertised under the address of the
interface that carries this host's outgoing traffic: never the wildcard, and loopback only when the host
has nothing else. Exactly one address is advertised, because Home Assistant uses the first one it sees and
a GPU box usually also has container-bridge addresses that no other machine can reach.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

import ifaddr
from zeroconf import InterfaceChoice
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

_LOGGER = logging.getLogger(__name__)

SERVICE_TYPE = "_wyoming._tcp.local."
_MDNS_GROUP = ("224.0.0.251", 5353)
_WILDCARDS = ("", "0.0.0.0", "::")
_MAX_LABEL = 63  # DNS label limit; the instance name is one label


def default_name() -> str:
    """``fasttts-<short hostname>``: stable across restarts and distinct per machine, as HA needs."""
    host = socket.gethostname().split(".")[0].lower()
    label = re.sub(r"[^a-z0-9-]+", "-", host).strip("-") or "host"
    return f"fasttts-{label}"[:_MAX_LABEL]


def _usable(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    return not (ip.is_unspecified or ip.is_loopback or ip.is_link_local)


def choose_address(outgoing: str | None, local: Iterable[str]) -> str:
    """The address to advertise for a wildcard bind.

    ``outgoing`` is the source address the kernel picks for mDNS traffic (the default-route interface);
    ``local`` lists every IPv4 address of this host. Loopback comes back only when nothing else exists,
    so a lone machine still finds itself.
    """
    for candidate in (outgoing, *local):
        if candidate and _usable(candidate):
            return candidate
    return "127.0.0.1"


def _outgoing_ipv4() -> str | None:
    """Source address for the mDNS group; a UDP connect only consults the routing table, it sends nothing."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(_MDNS_GROUP)
        except OSError:
            return None
        return str(sock.getsockname()[0])


def _local_ipv4() -> list[str]:
    return [ip.ip for adapter in ifaddr.get_adapters() for ip in adapter.ips if isinstance(ip.ip, str)]


def _split_uri(uri: str) -> tuple[str, int]:
    parts = urlsplit(uri)
    if parts.scheme != "tcp" or parts.port is None:
        raise ValueError(f"zeroconf needs the server on tcp://HOST:PORT, not {uri!r}")
    return parts.hostname or "", parts.port


def advertised_address(host: str) -> str:
    """The address clients should use for a server bound to ``host`` (an IP literal or a name)."""
    if host in _WILDCARDS:
        return choose_address(_outgoing_ipv4(), _local_ipv4())
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return str(socket.getaddrinfo(host, None, socket.AF_INET, socket.SOCK_STREAM)[0][4][0])


class Advertiser:
    """Registers the Wyoming service while the server runs and withdraws it (goodbye packets) on stop."""

    def __init__(self, name: str, uri: str, interfaces: InterfaceChoice | list[str] = InterfaceChoice.All) -> None:
        """``name`` empty means :func:`default_name`; ``interfaces`` narrows where mDNS is answered
        (tests keep it on loopback)."""
        self.name = name or default_name()
        self._host, self.port = _split_uri(uri)
        self._interfaces = interfaces
        self._zeroconf: AsyncZeroconf | None = None
        self._info: AsyncServiceInfo | None = None

    async def start(self) -> None:
        address = await asyncio.to_thread(advertised_address, self._host)  # may resolve a name
        info = AsyncServiceInfo(
            SERVICE_TYPE,
            f"{self.name}.{SERVICE_TYPE}",
            port=self.port,
            parsed_addresses=[address],
        )
        zc = AsyncZeroconf(interfaces=self._interfaces)
        try:
            # Another host may already use this name; mDNS then renames ours ("name (2)") instead of failing.
            await zc.async_register_service(info, allow_name_change=True)
        except BaseException:
            await zc.async_close()
            raise
        self._zeroconf, self._info = zc, info
        _LOGGER.info("Advertising %s at %s:%d over zeroconf", info.name, address, self.port)

    async def stop(self) -> None:
        if self._zeroconf is None:
            return
        zc, info = self._zeroconf, self._info
        self._zeroconf = self._info = None
        try:
            if info is not None:
                await zc.async_unregister_service(info)
        finally:
            await zc.async_close()
