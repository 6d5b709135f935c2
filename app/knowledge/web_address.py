"""Which addresses a web import may reach, and an httpx transport that connects only to the address it checked.

A URL given to an import is typed by a person, but the pages and sitemaps it leads to are not: a page on the open
web could redirect to ``http://169.254.169.254/`` or a host whose name resolves to ``10.0.0.5``, and the import would
then read the desk's own network for whoever wrote the page. So every request, redirects included, resolves its
host once, refuses internal addresses (unless the team allows them, for its intranet), and connects to the very
address it checked: a host whose DNS answer changes between the check and the connection (DNS rebinding) cannot
slip past, because the connection never asks DNS again.

- ``refusal(address)``: why an address is internal (a short phrase), or None for a public one.
- ``PinnedTransport``: an ``httpx.BaseTransport`` that resolves, checks and pins each request; TLS still checks the
  certificate against the host name (``sni_hostname``), and each host name keeps its own connection pool.
- ``RefusedAddress`` (an ``httpx.TransportError``): the request was not sent; its message names the host and address.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# host, port -> the addresses to try, in order (socket.getaddrinfo's answer by default; tests pass their own).
Resolver = Callable[[str, int], list[str]]
NAT64_PREFIX = ipaddress.IPv6Network("64:ff9b::/96")


class RefusedAddress(httpx.TransportError):
    """The request's host is, or resolves to, an address the import may not reach; nothing was sent."""


def refusal(address: IPAddress) -> str | None:
    """Why ``address`` is not a public internet address, or None when it is."""
    if isinstance(address, ipaddress.IPv6Address):
        # ::ffff:10.0.0.5 reaches 10.0.0.5; NAT64 and 6to4 addresses are judged by the IPv4 address they carry.
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in NAT64_PREFIX:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            return refusal(embedded)
    checks = (
        (address.is_loopback, "a loopback address"),
        (address.is_unspecified, "the unspecified address"),
        (address.is_link_local, "a link-local address"),
        (address.is_multicast, "a multicast address"),
        (address.is_private, "a private network address"),
        (address.is_reserved, "a reserved address"),
        (not address.is_global, "not a public internet address"),
    )
    return next((phrase for refused, phrase in checks if refused), None)


def resolve_host(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to, in the order the system resolver gives them."""
    try:
        answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise httpx.ConnectError(f"{host} could not be resolved ({error})") from error
    return list(dict.fromkeys(str(answer[4][0]) for answer in answers))


class PinnedTransport(httpx.BaseTransport):
    """Resolves each request's host, refuses internal addresses unless ``allow_private``, and connects to the first
    address of the answer, sending the host name in ``Host`` and in TLS."""

    def __init__(self, *, allow_private: bool, resolve: Resolver = resolve_host, verify: bool = True) -> None:
        self._allow_private = allow_private
        self._resolve = resolve
        self._verify = verify
        self._transports: dict[str, httpx.HTTPTransport] = {}
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        address = self._checked_address(host, request.url.port or _default_port(request.url.scheme))
        pinned = httpx.Request(
            request.method,
            request.url.copy_with(host=address),
            headers=request.headers,  # keeps the Host header of the name, not of the address
            stream=request.stream,
            extensions={**request.extensions, "sni_hostname": host},
        )
        return self._transport_for(host).handle_request(pinned)

    def close(self) -> None:
        with self._lock:
            transports, self._transports = list(self._transports.values()), {}
        for transport in transports:
            transport.close()

    def _checked_address(self, host: str, port: int) -> str:
        addresses = [host] if _is_ip_literal(host) else self._resolve(host, port)
        if not addresses:
            raise httpx.ConnectError(f"{host} has no address")
        if not self._allow_private:
            # Every answer is checked, not only the first: a resolver may rotate them between requests.
            for text in addresses:
                reason = refusal(ipaddress.ip_address(text))
                if reason is not None:
                    shown = host if text == host else f"{host} ({text})"
                    raise RefusedAddress(
                        f"{shown} is {reason}; internal addresses are refused unless "
                        "MEMDESK_KNOWLEDGE_ALLOW_PRIVATE_URLS is true"
                    )
        return addresses[0]

    def _transport_for(self, host: str) -> httpx.HTTPTransport:
        # One pool per host name: a kept-alive connection verified for one name never carries another's request.
        with self._lock:
            transport = self._transports.get(host)
            if transport is None:
                transport = self._transports[host] = httpx.HTTPTransport(verify=self._verify)
            return transport


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80
