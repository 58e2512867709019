"""httpx's one-request functions for the suite's calls to a real server, with one TLS context
for the whole run: httpx makes one for each call otherwise, reading every CA certificate it
knows (18 ms, about 2,300 times a run). A call that gives ``verify`` itself keeps it."""

from __future__ import annotations

import functools
import ssl
from typing import Any

import certifi
import httpx


@functools.cache
def _context() -> ssl.SSLContext:
    return ssl.create_default_context(cafile=certifi.where())


def request(method: str, url: str, **options: Any) -> httpx.Response:
    options.setdefault("verify", _context())
    return httpx.request(method, url, **options)


def get(url: str, **options: Any) -> httpx.Response:
    return request("GET", url, **options)


def post(url: str, **options: Any) -> httpx.Response:
    return request("POST", url, **options)


def put(url: str, **options: Any) -> httpx.Response:
    return request("PUT", url, **options)


def delete(url: str, **options: Any) -> httpx.Response:
    return request("DELETE", url, **options)


def patch(url: str, **options: Any) -> httpx.Response:
    return request("PATCH", url, **options)
