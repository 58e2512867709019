"""Issue 44 point 5: pushes leave from one process per core. A notice to many devices is
shared among the processes, each device pushed once; one to a few devices starts one process
alone. Each push is encrypted to its own device and carries the store's VAPID signature, its
header signed once per push service (tests/push_support decrypts and verifies)."""

from __future__ import annotations

from typing import Any

from roundtable_console.api.notify.push_processes import SHARED_FROM, PushSender
from roundtable_console.store.push.keys import vapid_keys
from roundtable_console.store.push.telling import Recipient
from tests.push_support import Device, Receiver, verify_vapid
from tests.test_push import CONTACT, hook, service, told  # noqa: F401 - fixtures


def recipient(device: Device) -> Recipient:
    subscription = device.subscription()
    keys = subscription["keys"]
    return Recipient(device.name, subscription["endpoint"], keys["p256dh"], keys["auth"])


def test_a_notice_to_many_devices_is_shared_among_the_processes_each_device_once(
    told: dict[str, Any],  # noqa: F811
    service: Receiver,  # noqa: F811
) -> None:
    sender = PushSender(told["ctx"].notifier, processes=2)
    try:
        few = [Device(service) for _ in range(3)]
        sender.send_text([recipient(device) for device in few], '{"kind":"x","n":1}', "high")
        assert {service.next().path for _ in few} == {device.path for device in few}
        assert sender.running() == 1  # a few devices: one process, not every core's

        many = [Device(service) for _ in range(SHARED_FROM + 36)]
        sender.send_text([recipient(device) for device in many], '{"kind":"x","n":2}', "high")
        by_path = {device.path: device for device in many}
        public = vapid_keys(store=told["store"]).public_key
        arrived = []
        for _ in many:
            delivery = service.next()
            arrived.append(delivery.path)
            assert by_path[delivery.path].decrypt(delivery) == {"kind": "x", "n": 2}
            verify_vapid(delivery, public, subject=CONTACT)
        assert sorted(arrived) == sorted(by_path)  # each device once
        assert service.none_within(0.5)
        assert sender.running() == 2
    finally:
        sender.close()
    assert sender.running() == 0
