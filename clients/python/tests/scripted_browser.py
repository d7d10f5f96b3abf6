"""The browser side of the built-in issuer's sign-in pages, scripted with plain HTTP (spec/testkit.md):
keep cookies, follow redirects by hand, post each page's form back with the fields a user fills."""

from __future__ import annotations

import html
import re
from urllib import parse

import requests

_FORM = re.compile(r"<form\b([^>]*)>(.*?)</form>", re.S | re.I)
_INPUT = re.compile(r"<input\b([^>]*)>", re.I)
_ATTR = re.compile(r'([\w-]+)\s*=\s*"([^"]*)"')


def _attrs(text: str) -> dict[str, str]:
    return {k.lower(): html.unescape(v) for k, v in _ATTR.findall(text)}


class Browser:
    def __init__(self, ca: str | bool) -> None:
        self.session = requests.Session()
        self.verify = ca

    def _follow(self, response: requests.Response, stop_at: str | None) -> requests.Response | str:
        """Follow redirects; a Location starting with ``stop_at`` is returned (the callback URL)."""
        for _ in range(20):
            if response.status_code not in (301, 302, 303, 307, 308):
                return response
            location = parse.urljoin(response.url, response.headers["Location"])
            if stop_at is not None and location.startswith(stop_at):
                return location
            response = self.session.get(location, verify=self.verify, allow_redirects=False, timeout=30)
        raise AssertionError("too many redirects")

    def get(self, url: str, stop_at: str | None = None) -> requests.Response | str:
        return self._follow(self.session.get(url, verify=self.verify, allow_redirects=False, timeout=30), stop_at)

    def submit(
        self, page: requests.Response, action_suffix: str, fields: dict[str, str], stop_at: str | None = None
    ) -> requests.Response | str:
        """Post the form whose action ends with ``action_suffix``: its hidden inputs plus ``fields``."""
        for form_attrs, body in _FORM.findall(page.text):
            action = _attrs(form_attrs).get("action", "")
            if not action.rstrip("/").endswith(action_suffix):
                continue
            data = {}
            for input_attrs in _INPUT.findall(body):
                attrs = _attrs(input_attrs)
                if attrs.get("type", "").lower() == "hidden" and "name" in attrs:
                    data[attrs["name"]] = attrs.get("value", "")
            data.update(fields)
            response = self.session.post(
                parse.urljoin(page.url, action), data=data, verify=self.verify, allow_redirects=False, timeout=30
            )
            return self._follow(response, stop_at)
        raise AssertionError(f"no form with an action ending in {action_suffix} on {page.url}:\n{page.text[:2000]}")

    def sign_in(
        self, page: requests.Response, username: str, password: str, stop_at: str | None
    ) -> str | requests.Response:
        """Login page, then consent page; the callback URL when ``stop_at`` is reached."""
        after_login = self.submit(page, "/login", {"username": username, "password": password}, stop_at)
        if isinstance(after_login, str):
            return after_login
        if after_login.status_code == 401:
            return after_login
        return self.submit(after_login, "/confirm", {}, stop_at)
