"""A push service on loopback for counting, not checking (bench/push.py): it answers each POST
201 at once and keeps when the first and last of them came. It stands for the browsers' push
services, which run elsewhere: at a few microseconds a push it takes little of the CPU the
server's senders are measured with (tests/push_support.Receiver, which decrypts, would take more
than they do).

Prints its port, then for each line on its input ``count first last`` (monotonic seconds); after
a line ``reset`` it starts counting again."""

from __future__ import annotations

import asyncio
import sys
import time


class Counted:
    def __init__(self) -> None:
        self.count = 0
        self.first = 0.0
        self.last = 0.0


class Taker(asyncio.Protocol):
    def __init__(self, counted: Counted) -> None:
        self.counted = counted
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (head_end := self.buffer.find(b"\r\n\r\n")) >= 0:
            length = 0
            for line in self.buffer[:head_end].split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            whole = head_end + 4 + length
            if len(self.buffer) < whole:
                return
            self.buffer = self.buffer[whole:]
            now = time.monotonic()
            counted = self.counted
            counted.first = counted.first or now
            counted.last = now
            counted.count += 1
            assert self.transport is not None
            self.transport.write(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")


async def main() -> None:
    loop = asyncio.get_running_loop()
    counted = Counted()
    server = await loop.create_server(lambda: Taker(counted), "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        print(counted.count, counted.first, counted.last, flush=True)
        if line.strip() == "reset":
            counted.count, counted.first, counted.last = 0, 0.0, 0.0


if __name__ == "__main__":
    asyncio.run(main())
