"""The SSRF guard: every connection fetch makes goes to an address that was checked.

Checking a host name and then letting the HTTP library resolve it again is a race (DNS
rebinding: public at check time, 127.0.0.1 at connect time), and checking only the first URL
misses redirects. So fetch follows redirects itself, checking every hop's URL, and connects
through :class:`CheckedBackend`: one resolution per connection, every address it returned
checked, the socket opened to one of those very addresses. TLS still verifies the host name
(httpcore passes the URL's host as the server name), so pinning the address costs nothing.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from ..errors import ToolError

Resolver = Callable[[str, int], Awaitable[list[str]]]


async def resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (IPv4 and IPv6), in the resolver's order."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ToolError(f"Cannot resolve {host}: {exc.strerror or exc}.", code="fetch_failed") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def non_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return bool(
        ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_reserved or ip.is_multicast or ip.is_unspecified
    )


def check_addresses(host: str, addresses: Iterable[str], allowed_hosts: frozenset[str]) -> None:
    """Refuse ``host`` when any address it resolves to is loopback, private, link-local or
    reserved — unless the host is explicitly allowed."""
    if host.lower() in allowed_hosts:
        return
    for address in addresses:
        if non_public(address):
            raise ToolError(
                f"Refusing to fetch from {host}: it resolves to the non-public address {address} "
                "(the SSRF guard is on: Config.block_private_networks).", code="private_address")


def make_backend(allowed_hosts: frozenset[str], resolver: Resolver = resolve) -> Any:
    """An httpcore network backend that resolves once, checks, and connects to what it checked."""
    import httpcore  # lazy: only fetch needs it

    class CheckedBackend(httpcore.AsyncNetworkBackend):
        def __init__(self) -> None:
            self._inner = httpcore.AnyIOBackend()

        async def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Iterable[Any] | None = None,
        ) -> Any:
            addresses = await resolver(host, port)
            check_addresses(host, addresses, allowed_hosts)
            failure: Exception | None = None
            for address in addresses:
                try:
                    return await self._inner.connect_tcp(address, port, timeout, local_address, socket_options)
                except (OSError, httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                    failure = exc
            raise failure or httpcore.ConnectError(f"{host} has no address")

        async def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Any:
            raise httpcore.ConnectError("unix sockets are not fetched")

        async def sleep(self, seconds: float) -> None:
            await self._inner.sleep(seconds)

    return CheckedBackend()


def guarded_transport(allowed_hosts: frozenset[str], resolver: Resolver = resolve) -> Any:
    """An httpx transport whose connections go through :func:`make_backend`."""
    import httpcore
    import httpx

    transport = httpx.AsyncHTTPTransport()
    # httpx builds its pool without a way to pass a network backend; this replaces the pool with
    # the same one, given ours (covered by the SSRF tests, so an httpx change cannot go unseen).
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=httpx.create_ssl_context(), network_backend=make_backend(allowed_hosts, resolver)
    )
    return transport
