"""Zeroconf: the address chosen for a wildcard bind, and a real register/browse/withdraw round trip on loopback."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import uuid

import ifaddr
import pytest
from zeroconf import ServiceStateChange
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from wyoming_fasttts.server.discovery import (
    SERVICE_TYPE,
    Advertiser,
    advertised_address,
    choose_address,
    default_name,
)

LOOPBACK = ["127.0.0.1"]


def test_default_name_is_a_stable_dns_label() -> None:
    name = default_name()
    assert name == default_name()
    assert name.startswith("fasttts-")
    assert len(name.encode()) <= 63
    assert all(c.isalnum() or c == "-" for c in name)


def test_wildcard_prefers_the_outgoing_interface() -> None:
    local = ["127.0.0.1", "172.17.0.1", "192.168.1.20"]
    assert choose_address("192.168.1.20", local) == "192.168.1.20"


def test_wildcard_skips_loopback_and_link_local() -> None:
    assert choose_address("127.0.0.1", ["127.0.0.1", "169.254.7.7", "10.0.0.5"]) == "10.0.0.5"
    assert choose_address(None, ["127.0.0.1", "10.0.0.5"]) == "10.0.0.5"
    assert choose_address("0.0.0.0", ["10.0.0.5"]) == "10.0.0.5"


def test_loopback_only_when_nothing_else_exists() -> None:
    assert choose_address(None, ["127.0.0.1"]) == "127.0.0.1"
    assert choose_address(None, []) == "127.0.0.1"


def test_specific_bind_is_advertised_as_given() -> None:
    assert advertised_address("192.168.3.4") == "192.168.3.4"
    assert advertised_address("localhost").startswith("127.")


def test_wildcard_on_this_machine_is_reachable() -> None:
    """On the real host: never 0.0.0.0, and loopback only if this host has no other IPv4 address."""
    address = advertised_address("0.0.0.0")
    ip = ipaddress.ip_address(address)
    assert not ip.is_unspecified
    others = [
        a.ip
        for adapter in ifaddr.get_adapters()
        for a in adapter.ips
        if isinstance(a.ip, str) and not ipaddress.ip_address(a.ip).is_loopback
    ]
    if others:
        assert not ip.is_loopback
        assert address in others


def test_non_tcp_uri_is_refused() -> None:
    with pytest.raises(ValueError, match="tcp://"):
        Advertiser("x", "unix:///run/fasttts.sock")


async def _wait_for(changes: asyncio.Queue, name: str, state: ServiceStateChange) -> None:
    while True:
        got_name, got_state = await changes.get()
        if got_name == name and got_state is state:
            return


async def _round_trip() -> None:
    """Browse and resolve by unicast queries to 127.0.0.1:5353.

    Multicast needs an interface with the MULTICAST flag, and a container's loopback usually lacks it;
    a query sent straight to the responder's port is answered the same way (RFC 6762 legacy unicast),
    so this stays on loopback on every machine.
    """
    with socket.socket() as sock:  # a free port number; nothing needs to listen there for mDNS to work
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    name = f"fasttts-test-{uuid.uuid4().hex[:8]}"
    full = f"{name}.{SERVICE_TYPE}"
    changes: asyncio.Queue = asyncio.Queue()
    loop = asyncio.get_running_loop()

    def on_change(zeroconf, service_type, name, state_change) -> None:  # signature fixed by zeroconf
        loop.call_soon_threadsafe(changes.put_nowait, (name, state_change))

    advertiser = Advertiser(name, f"tcp://127.0.0.1:{port}", interfaces=LOOPBACK)
    browser_zc = AsyncZeroconf(interfaces=LOOPBACK, unicast=True)
    browser = None
    try:
        await advertiser.start()
        browser = AsyncServiceBrowser(
            browser_zc.zeroconf, SERVICE_TYPE, handlers=[on_change], addr="127.0.0.1", delay=200
        )
        await asyncio.wait_for(_wait_for(changes, full, ServiceStateChange.Added), 10)

        info = AsyncServiceInfo(SERVICE_TYPE, full)
        assert await info.async_request(browser_zc.zeroconf, 3000, addr="127.0.0.1")
        assert info.port == port
        assert info.parsed_addresses() == ["127.0.0.1"]

        await advertiser.stop()
        fresh = AsyncZeroconf(interfaces=LOOPBACK, unicast=True)  # an empty cache: only live answers count
        try:
            gone = AsyncServiceInfo(SERVICE_TYPE, full)
            assert not await gone.async_request(fresh.zeroconf, 1500, addr="127.0.0.1")
        finally:
            await fresh.async_close()
    finally:
        await advertiser.stop()
        if browser is not None:
            await browser.async_cancel()
        await browser_zc.async_close()


def test_register_then_browse_then_withdraw_on_loopback() -> None:
    asyncio.run(asyncio.wait_for(_round_trip(), 30))
