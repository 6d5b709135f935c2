"""The running server's administration API as the command line uses it: export and erase one customer.

Every answer other than success becomes a ``CommandError`` that says what to do, above all for the token: the
server's admin API is off unless it runs with ``MEMDESK_ADMIN_TOKEN``, and the command must send the same value.
"""

from __future__ import annotations

from typing import Any

import httpx

from app.cli.common import CommandError
from app.cli.running_server import RunningServer

# An export reads every row and memory of one customer: allow it time; connecting to this machine is immediate.
ADMIN_REQUEST_TIMEOUT_S = 120.0
ADMIN_CONNECT_TIMEOUT_S = 5.0


class AdminClient:
    def __init__(self, server: RunningServer, token: str) -> None:
        self.server = server
        self._token = token

    def export_customer(self, public_id: str) -> dict[str, Any]:
        return self._request("GET", f"/api/admin/customers/{public_id}/export")

    def erase_customer(self, public_id: str) -> dict[str, int]:
        erased: dict[str, int] = self._request("DELETE", f"/api/admin/customers/{public_id}")["erased"]
        return erased

    def _request(self, method: str, path: str) -> dict[str, Any]:
        timeout = httpx.Timeout(ADMIN_REQUEST_TIMEOUT_S, connect=ADMIN_CONNECT_TIMEOUT_S)
        where = f"memdesk serve (pid {self.server.pid}) at {self.server.url}"
        try:
            # trust_env off: the server is on this machine, so no proxy from the environment may stand in between.
            with httpx.Client(base_url=self.server.url, timeout=timeout, trust_env=False) as client:
                response = client.request(method, path, headers={"Authorization": f"Bearer {self._token}"})
        except httpx.ConnectError as error:
            raise CommandError(
                f"{where} does not answer ({error}). If it is still starting, wait a moment and try again; if it "
                "hangs, stop it and run the command again."
            ) from error
        except httpx.TimeoutException as error:
            raise CommandError(
                f"{where} did not answer within {ADMIN_REQUEST_TIMEOUT_S:.0f} s. Check its log; run `memdesk "
                "customer export` to see whether an erasure went through before trying it again."
            ) from error
        except httpx.HTTPError as error:
            raise CommandError(f"the request to {where} failed: {error}") from error
        if response.status_code != httpx.codes.OK:
            raise CommandError(_explain(response, where))
        body: dict[str, Any] = response.json()
        return body


def _detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        detail = None
    return str(detail) if detail else response.reason_phrase


def _explain(response: httpx.Response, where: str) -> str:
    status = response.status_code
    if status == httpx.codes.UNAUTHORIZED:
        return (
            f"{where} refused the admin token: MEMDESK_ADMIN_TOKEN here must be the value the server was started with."
        )
    if status == httpx.codes.FORBIDDEN:
        return (
            f"{where} has its admin API switched off: it was started without MEMDESK_ADMIN_TOKEN. Restart it with "
            "MEMDESK_ADMIN_TOKEN set, and run this command with the same value (or stop the server and run the "
            "command while it is stopped)."
        )
    if status == httpx.codes.NOT_FOUND:
        return _detail(response)
    if status == httpx.codes.SERVICE_UNAVAILABLE:
        return f"{_detail(response)} (answered by {where})"
    return f"{where} answered {status}: {_detail(response)}"
