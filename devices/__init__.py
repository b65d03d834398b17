"""Device drivers behind one interface: serial, HID, keyboard/mouse, scripted, replay (issue 3).

``open_device(spec)`` builds one from a spec string; every driver is a ``Device`` with a
``Capability`` (units, safe limits) -- see ``devices/base.py``.  Drivers are imported lazily
by the factory, so ``import devices`` needs neither pyserial nor hidapi.
"""
from devices.base import Capability, Device, DeviceFault, DeviceSample, open_device

__all__ = ["Capability", "Device", "DeviceFault", "DeviceSample", "open_device"]
