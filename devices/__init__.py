"""Device drivers behind one interface: serial, HID, keyboard/mouse, scripted, replay (issue 3)."""
