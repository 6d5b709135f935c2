"""Settings refuse a shop timezone that is no IANA zone when they load, naming the variable to fix."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from app.settings import Settings


@pytest.mark.parametrize("value", ["Mars/Olympus", "CEST", "europe/paris", "", "../etc/passwd", "/etc/localtime"])
def test_an_unknown_timezone_is_refused_with_the_variable_named(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("MEMDESK_TIMEZONE", value)
    with pytest.raises(ValidationError, match=r"MEMDESK_TIMEZONE .* is not an IANA time zone name"):
        Settings(_env_file=None)


@pytest.mark.parametrize("value", ["UTC", "Europe/Paris", "America/New_York"])
def test_an_iana_timezone_is_accepted(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("MEMDESK_TIMEZONE", value)
    assert Settings(_env_file=None, environment="development").timezone == value
